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
    """Accuracy, balanced accuracy, macro F1, ROC AUC and Brier score, each with its interval.

    ``y_true`` holds declared classes; every row gets its most probable class.  Keys: ``accuracy``,
    ``balanced_accuracy``, ``f1_macro``, ``roc_auc`` (NaN when undefined, e.g. an AUC without rows of some
    class), and the Brier score on one scale, named by its key: two classes, ``brier``, the binary Brier score
    ``mean((p - y) ** 2)`` (0..1) of the last declared class (named in ``brier_class``); more classes,
    ``brier_multiclass``, the sum over classes (0..2); ``brier_scale`` says which in words.  Each figure has
    ``<key>_ci95`` as ``[low, high]``; then ``n``, ``warning`` (one class for (nearly) every row),
    ``unpredicted`` (classes among the rows it never predicts), and with rows ``majority_class`` and
    ``majority_class_accuracy``: these rows' most common class and the accuracy of always answering it (the
    baseline accuracy must beat; chosen on the rows themselves).  (Before, ``brier`` held the sum over classes
    for two classes too, twice the binary score.)
    """
    classes = np.asarray(classes)
    return _index_metrics(_class_indices(np.asarray(y_true), classes), proba, classes)


def _class_indices(truth: np.ndarray, classes: np.ndarray) -> np.ndarray:
    """Each cell's position in ``classes``: the distinct cells are looked up once, the rows gathered by them."""
    index = {c.item() if isinstance(c, np.generic) else c: k for k, c in enumerate(classes)}
    inverse, distinct = pd.factorize(truth.reshape(-1), use_na_sentinel=False)  # no sort: mixed types are fine
    values = [v.item() if isinstance(v, np.generic) else v for v in distinct]
    found = [index.get(v, -1) for v in values]
    missing = [v for v, k in zip(values, found) if k < 0]
    if missing:
        raise ValueError(f"y_true: expected classes among {classes.tolist()!r}, got {missing[0]!r}")
    return np.asarray(found, dtype=np.int64)[inverse]


def _index_metrics(y: np.ndarray, proba: np.ndarray, classes: np.ndarray) -> dict[str, Any]:
    """:func:`classification_metrics` on class indices ``y`` (positions in ``classes``)."""
    report = clinical_report(y, proba, tuple(classes), indices=True)
    estimates = {
        "accuracy": report.accuracy,
        "balanced_accuracy": report.balanced_accuracy,
        "f1_macro": macro_f1_estimate(y, report.predicted, len(classes)),
        "roc_auc": report.roc_auc,  # two classes: the last declared class's AUC (equal to the macro AUC)
        ("brier" if len(classes) == 2 else "brier_multiclass"): report.brier,
    }
    out: dict[str, Any] = {key: float(e.value) for key, e in estimates.items()}
    out |= {f"{key}_ci95": [float(e.low), float(e.high)] for key, e in estimates.items()}
    if len(classes) == 2:
        out["brier_class"] = report.brier_class
    out |= {"brier_scale": report.brier_scale}
    out |= {"n": report.n, "warning": report.warning, "unpredicted": report.unpredicted}
    if report.n:  # the accuracy of always answering these rows' most common class: what accuracy must beat
        counts = report.confusion.sum(axis=1)
        top = int(np.argmax(counts))
        out["majority_class"] = classes[top].item() if isinstance(classes[top], np.generic) else classes[top]
        out["majority_class_accuracy"] = float(counts[top] / report.n)
    return out


def forest_metrics(forest: DPForest, X: pd.DataFrame, y: pd.Series) -> dict[str, Any]:
    """Metrics of ``forest`` on ``(X, y)``; labels are read by the schema, cell by cell."""
    classes = np.asarray(forest.schema.classes)
    return _index_metrics(encode_labels(y, forest.schema).astype(np.int64), forest.predict_proba(X), classes)


def interval_text(metrics: dict[str, Any], key: str, digits: int = 4) -> str:
    """``0.9123 (95% CI 0.8912-0.9310)`` from ``metrics[key]`` and ``metrics[key + "_ci95"]``; ``n/a`` if absent."""
    return format_interval(metrics.get(key), metrics.get(f"{key}_ci95"), digits)
