"""Evaluation of a global forest on data the coordinator may use (a central test split)."""

from __future__ import annotations

import numpy as np
import pandas as pd
from sklearn.metrics import accuracy_score, balanced_accuracy_score, f1_score, roc_auc_score

from edprf_core import DPForest, encode_labels

__all__ = ["classification_metrics", "forest_metrics"]


def classification_metrics(y_true: np.ndarray, proba: np.ndarray, classes: np.ndarray) -> dict[str, float]:
    """Accuracy, balanced accuracy, macro F1 and ROC AUC (from the forest's probabilities)."""
    y_true = np.asarray(y_true)
    pred = classes[np.argmax(proba, axis=1)]
    out = {
        "accuracy": float(accuracy_score(y_true, pred)),
        "balanced_accuracy": float(balanced_accuracy_score(y_true, pred)),
        "f1_macro": float(f1_score(y_true, pred, average="macro", labels=classes, zero_division=0)),
    }
    present = np.isin(classes, y_true)
    try:
        if len(classes) == 2:
            out["roc_auc"] = float(roc_auc_score(y_true == classes[1], proba[:, 1]))
        elif present.all():
            out["roc_auc"] = float(roc_auc_score(y_true, proba, multi_class="ovr", labels=classes))
        else:
            out["roc_auc"] = float("nan")
    except ValueError:
        out["roc_auc"] = float("nan")
    return out


def forest_metrics(forest: DPForest, X: pd.DataFrame, y: pd.Series) -> dict[str, float]:
    """Metrics of ``forest`` on ``(X, y)``; labels are read by the schema, cell by cell."""
    classes = np.asarray(forest.schema.classes)
    truth = classes[encode_labels(y, forest.schema)]
    return classification_metrics(truth, forest.predict_proba(X), classes)
