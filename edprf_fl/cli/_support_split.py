"""``edprf evaluate``'s figures split by row support: how the model does where its released counts stand behind a
row and where they are noise (analyst review F4).

A row has low support when the tree leaves or a marginals bin it reaches hold released counts within noise
(:func:`edprf_core.prediction.row_support`): the model knows nothing there, and its probability there is not a risk
estimate.  Mixed into every figure, such rows can hide (or cause) a poor performance exactly where patients are
misclassified; the split shows both parts.

Privacy: exact statistics of the caller's own rows (as every figure of ``evaluate``), not DP; the support labels
are post-processing of the model's releases, no ε.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from edprf_core.count_text import count_text

__all__ = ["MOST_LOW_SHARE", "support_split"]

MOST_LOW_SHARE = 0.5
"""From this share of low-support rows on, the text says the report is mostly about where the model knows nothing."""


def support_split(
    y: NDArray[np.int64],
    proba: NDArray[np.float64],
    low: NDArray[np.bool_],
    classes: tuple,
    positive: int | None,
    threshold: float,
) -> tuple[list[str], dict[str, Any]]:
    """Text lines and a JSON dict of the headline figures (accuracy; ROC AUC of the positive class, or macro with
    more classes) on the rows of ``ok`` and of ``low`` support separately.

    Parameters
    ----------
    y : ndarray of int
        The evaluated rows' class indices.
    proba : ndarray of float, shape (n_rows, n_classes)
        Their predicted probabilities.
    low : ndarray of bool
        Per row, whether its support is low.
    classes : tuple
        The declared classes.
    positive : int or None
        The positive class index (decisions at ``threshold``), or None (the most probable class).
    threshold : float
        The decision threshold of ``positive``.

    Returns
    -------
    lines : list of str
        Nothing when no row has low support.
    summary : dict
        ``{"low": n, "ok": n, "ok_rows": {"n", "accuracy", "roc_auc"}, "low_rows": {...}}`` (None for an empty
        part).
    """
    n_low = int(low.sum())
    summary: dict[str, Any] = {"low": n_low, "ok": int(low.size - n_low)}
    parts = {"ok_rows": ~low, "low_rows": low}
    figures = {name: _figures(y[mask], proba[mask], classes, positive, threshold) for name, mask in parts.items()}
    summary |= {
        name: ({"n": f.n, "accuracy": f.accuracy.as_dict(), "roc_auc": f.roc_auc.as_dict()} if f else None)
        for name, f in figures.items()
    }
    if n_low == 0:
        return [], summary
    auc_name = f"ROC AUC ({classes[positive]})" if len(classes) == 2 else "ROC AUC (macro, one-vs-rest)"
    rows = [
        f"| {label} | {int(mask.sum())} | {_text(figures[name], 'accuracy')} | {_text(figures[name], 'roc_auc')} |"
        for label, name, mask in (("support ok", "ok_rows", ~low), ("low support", "low_rows", low))
    ]
    lines = [
        "",
        (
            f"{n_low} of {count_text(low.size, 'evaluated row')} have low support (the model's released counts "
            "behind them are within noise: their probability is not a risk estimate; see docs/using-a-model.md):"
        ),
        f"| rows | n | accuracy (95% CI) | {auc_name} (95% CI) |",
        "|---|---|---|---|",
        *rows,
    ]
    if n_low >= MOST_LOW_SHARE * low.size:
        where = (
            "read the 'support ok' row for where it has evidence"
            if n_low < low.size
            else "no row here has evidence behind its probability"
        )
        lines.append(
            f"WARNING: {n_low / low.size:.0%} of the rows have low support: the report below describes the model "
            f"mostly where it knows nothing; {where}"
        )
    return lines, summary


def _figures(y, proba, classes, positive, threshold):
    """The part's clinical report, or None when it holds no row."""
    if len(y) == 0:
        return None
    from edprf_core.metrics import clinical_report

    return clinical_report(y, proba, classes, positive=positive, indices=True, threshold=threshold)


def _text(report, key: str) -> str:
    return getattr(report, key).text(3) if report is not None else "n/a"
