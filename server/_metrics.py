"""Evaluation of a global forest on data the coordinator may use (a central test split).

The figures come from :func:`edprf_core.metrics.clinical_report`, the code ``edprf evaluate`` uses: each metric
with its 95 % interval (``<metric>_ci95``), and the warning when the forest predicts one class for
(nearly) every row.  Exact statistics of the coordinator's own rows: not DP, no party's ε spent.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from edprf_core import DPForest
from edprf_core.encoding import encode_labels
from edprf_core.metrics import clinical_report, macro_f1_estimate
from edprf_core.metrics import interval_text as format_interval

__all__ = ["classification_metrics", "forest_metrics", "interval_text"]


def classification_metrics(y_true: np.ndarray, proba: np.ndarray, classes: np.ndarray) -> dict[str, Any]:
    """Accuracy, balanced accuracy, macro F1, ROC AUC (macro one-vs-rest) and Brier score, each with its interval.

    ``y_true`` holds declared classes; every row gets its most probable class.  Keys: ``accuracy``,
    ``balanced_accuracy``, ``f1_macro``, ``roc_auc``, ``brier`` (NaN when undefined, e.g. an AUC
    without rows of some class), each ``<key>_ci95`` as ``[low, high]``, ``n`` and ``warning``.
    """
    classes = np.asarray(classes)
    truth = np.asarray(y_true)
    index = {c.item() if isinstance(c, np.generic) else c: k for k, c in enumerate(classes)}
    y = np.array([index[v.item() if isinstance(v, np.generic) else v] for v in truth], dtype=np.int64)
    report = clinical_report(y, proba, tuple(classes), indices=True)
    estimates = {
        "accuracy": report.accuracy,
        "balanced_accuracy": report.balanced_accuracy,
        "f1_macro": macro_f1_estimate(y, report.predicted, len(classes)),
        "roc_auc": report.roc_auc,
        "brier": report.brier,
    }
    out: dict[str, Any] = {key: float(e.value) for key, e in estimates.items()}
    out |= {f"{key}_ci95": [float(e.low), float(e.high)] for key, e in estimates.items()}
    out |= {"n": report.n, "warning": report.warning}
    return out


def forest_metrics(forest: DPForest, X: pd.DataFrame, y: pd.Series) -> dict[str, Any]:
    """Metrics of ``forest`` on ``(X, y)``; labels are read by the schema, cell by cell."""
    classes = np.asarray(forest.schema.classes)
    truth = classes[encode_labels(y, forest.schema)]
    return classification_metrics(truth, forest.predict_proba(X), classes)


def interval_text(metrics: dict[str, Any], key: str, digits: int = 4) -> str:
    """``0.9123 (95% CI 0.8912-0.9310)`` from ``metrics[key]`` and ``metrics[key + "_ci95"]``; ``n/a`` if absent."""
    return format_interval(metrics.get(key), metrics.get(f"{key}_ci95"), digits)
