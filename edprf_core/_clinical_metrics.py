"""Clinical metrics of a classifier's probabilities on labelled rows, each with an (approximate) 95 % interval.

What a hospital asks of a risk model before it uses one: the confusion matrix
at the decision threshold, sensitivity, specificity, PPV, NPV, accuracy and
balanced accuracy, the ROC AUC, the Brier score, a calibration table and a
threshold table, plus a loud warning when the model predicts one class for
(nearly) every row.  ``edprf evaluate`` prints them; ``edprf simulate`` and the
coordinator score their central test set with the same code.

Each figure's 95 % interval is computed in :mod:`edprf_core._metric_intervals` (the methods and
their measured coverage are there), the calibration slope and intercept in :mod:`edprf_core._calibration_fit`.

Privacy: none of this is differentially private.  The figures are exact
statistics of the labelled rows; computed on the caller's own data they spend
no ε of anyone (using the model is post-processing of its releases), and they must
not be published when those rows are private.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, NoReturn

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from ._calibration_fit import calibration_slope_intercept
from ._metric_intervals import (
    _UNDEFINED,
    TOO_FEW_EVENTS,
    Estimate,
    _balanced_accuracy,
    _finite_or_none,
    _macro_auc,
    brier_estimate,
    delong_auc,
    few_events_note,
    wilson_interval,
)
from .count_text import count_text

__all__ = [
    "BRIER_MULTICLASS_SCALE",
    "DEFAULT_THRESHOLDS",
    "MAX_CALIBRATION_BINS",
    "NOT_DP_NOTE",
    "ONE_CLASS_SHARE",
    "CalibrationBin",
    "ClinicalReport",
    "OneVsRest",
    "ThresholdRow",
    "clinical_report",
    "one_class_present_warning",
    "one_class_warning",
    "unpredicted_class_warning",
]

ONE_CLASS_SHARE = 0.99
"""Warn when one class is predicted for at least this share of the rows."""

DEFAULT_THRESHOLDS = (0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95)
"""Thresholds of the threshold table (probability of the positive class)."""

MAX_CALIBRATION_BINS = 1000
"""Most calibration bins: finer bins hold too few rows for their observed share to mean anything (a 95 %
interval on fewer than ~10 rows spans most of [0, 1]), and each bin costs memory whatever the rows."""

NOT_DP_NOTE = (
    "These figures are exact statistics of the labelled rows, NOT differentially private; computing "
    "them on your own data spends no epsilon of anyone (using the model is post-processing of its releases). "
    "Do not publish them if those rows are private."
)

BRIER_MULTICLASS_SCALE = "sum over classes, 0-2"
"""How the multiclass Brier score is labelled wherever it is shown (text, and the key ``brier_multiclass``)."""


def one_class_warning(predicted: ArrayLike, classes: Sequence[object], share: float = ONE_CLASS_SHARE) -> str:
    """A loud warning when one class is predicted for at least ``share`` of the rows, else ``""``.

    Such a model is no better than a constant: its accuracy is the class mix,
    its balanced accuracy about 0.5.  (At small ε a forest's noise can swamp
    every split, so check before trusting an accuracy figure.)
    """
    idx = np.asarray(predicted, dtype=np.int64)
    if idx.size == 0:
        return ""
    counts = np.bincount(idx, minlength=len(classes))
    top = int(np.argmax(counts))
    if counts[top] < share * idx.size:
        return ""
    shown = classes[top].item() if isinstance(classes[top], np.generic) else classes[top]  # 0, not np.int64(0)
    return (
        f"WARNING: the model predicts class {shown!r} for {counts[top]} of {idx.size} rows "
        f"({counts[top] / idx.size:.1%}): it is (nearly) a constant, whatever its accuracy; look at the "
        "balanced accuracy and the sensitivity of every class"
    )


def one_class_present_warning(truth: ArrayLike, predicted: ArrayLike, classes: Sequence[object]) -> str:
    """A loud warning when only one class occurs among the rows (an extract without events), else ``""``.

    Then nothing tells the model's classes apart on these rows: a "constant model" warning would blame the model
    for the extract (analyst review F11), and the balanced accuracy is the present class's recall alone.
    """
    y = np.asarray(truth, dtype=np.int64)
    counts = np.bincount(y, minlength=len(classes)) if y.size else np.zeros(len(classes), dtype=np.int64)
    if y.size == 0 or np.count_nonzero(counts) != 1:
        return ""
    k = int(np.argmax(counts))
    shown = classes[k].item() if isinstance(classes[k], np.generic) else classes[k]
    agree = int(np.sum(np.asarray(predicted, dtype=np.int64) == k))
    return (
        f"WARNING: only class {shown!r} occurs among these {count_text(y.size, 'row')} (no row of another class): "
        "sensitivity, ROC AUC, calibration and the other classes' figures cannot be estimated, and the balanced "
        f"accuracy is the recall of {shown!r} alone (the model decides {shown!r} for {agree} of them); evaluate on "
        "rows holding every outcome"
    )


def unpredicted_class_warning(truth: ArrayLike, predicted: ArrayLike, classes: Sequence[object]) -> str:
    """A warning naming the classes that occur among the rows but that the model predicts for none, else ``""``.

    Their sensitivity is 0, which a good accuracy can hide (with several classes, or under label skew a
    federation's pooling can lose a class: ``influence_cuts`` in the coordinator's report says where).
    """
    y, idx = np.asarray(truth, dtype=np.int64), np.asarray(predicted, dtype=np.int64)
    present = np.bincount(y, minlength=len(classes)) if y.size else np.zeros(len(classes), dtype=np.int64)
    never = [k for k in np.flatnonzero(present) if not np.any(idx == k)]
    if not never:
        return ""
    shown = ", ".join(
        f"{(classes[k].item() if isinstance(classes[k], np.generic) else classes[k])!r} "
        f"({count_text(int(present[k]), 'row')})"
        for k in never
    )
    return (
        f"WARNING: the model predicts none of these rows' class {shown}: its sensitivity for "
        f"{'it' if len(never) == 1 else 'them'} is 0, whatever the accuracy"
    )


@dataclass(frozen=True)
class CalibrationBin:
    """Rows whose predicted probability lies in ``[low, high)`` (the last bin includes 1)."""

    low: float
    high: float
    n: int
    mean_predicted: float
    observed: Estimate

    def as_dict(self) -> dict[str, Any]:
        return {
            "low": self.low,
            "high": self.high,
            "n": self.n,
            "mean_predicted": _finite_or_none(self.mean_predicted),
            "observed": self.observed.as_dict(),
        }


@dataclass(frozen=True)
class ThresholdRow:
    """Decisions "positive when p >= threshold" and what they give."""

    threshold: float
    flagged: int
    sensitivity: Estimate
    specificity: Estimate
    ppv: Estimate
    npv: Estimate

    def as_dict(self) -> dict[str, Any]:
        return {
            "threshold": self.threshold,
            "flagged": self.flagged,
            **{k: getattr(self, k).as_dict() for k in ("sensitivity", "specificity", "ppv", "npv")},
        }


def _decision_counts(positive: NDArray[np.bool_], flagged: NDArray[np.bool_]) -> tuple[int, int, int, int]:
    tp = int((positive & flagged).sum())
    fp = int((~positive & flagged).sum())
    fn = int((positive & ~flagged).sum())
    return tp, fp, fn, int(positive.size - tp - fp - fn)


def _threshold_row(positive: NDArray[np.bool_], score: NDArray[np.float64], threshold: float) -> ThresholdRow:
    tp, fp, fn, tn = _decision_counts(positive, score >= threshold)
    return ThresholdRow(
        float(threshold),
        tp + fp,
        wilson_interval(tp, tp + fn),
        wilson_interval(tn, tn + fp),
        wilson_interval(tp, tp + fp),
        wilson_interval(tn, tn + fn),
    )


def _calibration(positive: NDArray[np.bool_], score: NDArray[np.float64], n_bins: int) -> tuple[CalibrationBin, ...]:
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    which = np.clip(np.searchsorted(edges, score, side="right") - 1, 0, n_bins - 1)
    n = np.bincount(which, minlength=n_bins)
    hits = np.bincount(which, weights=positive.astype(float), minlength=n_bins)
    sums = np.bincount(which, weights=score, minlength=n_bins)
    return tuple(
        CalibrationBin(
            float(edges[b]),
            float(edges[b + 1]),
            int(n[b]),
            float(sums[b] / n[b]) if n[b] else _UNDEFINED,
            wilson_interval(int(hits[b]), int(n[b])),
        )
        for b in range(n_bins)
    )


@dataclass(frozen=True)
class OneVsRest:
    """One class against the others: its decisions, its score's discrimination and calibration."""

    label: object
    threshold: float | None
    tp: int
    fp: int
    fn: int
    tn: int
    sensitivity: Estimate
    specificity: Estimate
    ppv: Estimate
    npv: Estimate
    roc_auc: Estimate
    brier: Estimate
    calibration: tuple[CalibrationBin, ...]
    thresholds: tuple[ThresholdRow, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "class": _plain(self.label),
            "threshold": self.threshold,
            "confusion": {"tp": self.tp, "fp": self.fp, "fn": self.fn, "tn": self.tn},
        }
        for key in ("sensitivity", "specificity", "ppv", "npv", "roc_auc", "brier"):
            out[key] = getattr(self, key).as_dict()
        out["calibration"] = [b.as_dict() for b in self.calibration]
        out["thresholds"] = [t.as_dict() for t in self.thresholds]
        return out


def _plain(value: object) -> object:
    return value.item() if isinstance(value, np.generic) else value


def _one_vs_rest(
    label: object,
    positive: NDArray[np.bool_],
    score: NDArray[np.float64],
    flagged: NDArray[np.bool_],
    threshold: float | None,
    thresholds: Sequence[float],
    n_bins: int,
) -> OneVsRest:
    tp, fp, fn, tn = _decision_counts(positive, flagged)
    return OneVsRest(
        label=label,
        threshold=threshold,
        tp=tp,
        fp=fp,
        fn=fn,
        tn=tn,
        sensitivity=wilson_interval(tp, tp + fn),
        specificity=wilson_interval(tn, tn + fp),
        ppv=wilson_interval(tp, tp + fp),
        npv=wilson_interval(tn, tn + fn),
        roc_auc=delong_auc(positive, score),
        brier=brier_estimate((score - positive) ** 2, maximum=1.0),
        calibration=_calibration(positive, score, n_bins),
        thresholds=tuple(_threshold_row(positive, score, t) for t in thresholds),
    )


@dataclass(frozen=True)
class ClinicalReport:
    """Everything :func:`clinical_report` computes; ``as_dict`` gives it as JSON-ready values.

    Attributes
    ----------
    classes : tuple
        The declared classes, in order.
    n : int
        Rows scored.
    predicted : ndarray of int
        Class index decided for each row (threshold rule for a positive class, else the most probable class).
    confusion : ndarray, shape (K, K)
        ``confusion[i, j]``: rows of true class ``i`` decided as class ``j``.
    accuracy, balanced_accuracy, roc_auc, brier : Estimate
        ``roc_auc``: with two classes, of the positive class (the last declared class when ``positive`` is None),
        else the macro mean of the one-vs-rest AUCs; ``brier``: with two classes, the binary Brier score of that
        class's probability (0..1, ``mean((p - y) ** 2)``), else the multiclass form (sum over classes, 0..2;
        :attr:`brier_scale` says which).  ``as_dict`` writes the binary one as ``brier`` (with ``brier_class``)
        and the multiclass one as ``brier_multiclass``, never under the same key.
    per_class : tuple of OneVsRest
        One per declared class; with a positive class, its entry also holds the threshold table.
    positive : int or None
        Index of the positive class.
    warning : str
        :func:`one_class_warning`'s text, or ``""``.
    unpredicted : str
        :func:`unpredicted_class_warning`'s text when there is no one-class warning, or ``""``.
    calibration_slope, calibration_intercept : Estimate or None
        Two classes: :func:`calibration_slope_intercept` of the positive class's probability (the last declared
        class when ``positive`` is None); more classes: None.
    interval_note : str
        :func:`few_events_note`'s text when the smaller class (of the positive class against the rest, or the
        smallest class) has fewer than :data:`FEW_EVENTS` rows, else ``""``.

    ``str(report)`` (or :meth:`text_lines`) gives it as Markdown tables with the intervals, as ``edprf evaluate``
    prints it.
    """

    classes: tuple[object, ...]
    n: int
    predicted: NDArray[np.int64] = field(repr=False)
    confusion: NDArray[np.int64]
    accuracy: Estimate
    balanced_accuracy: Estimate
    roc_auc: Estimate
    brier: Estimate
    per_class: tuple[OneVsRest, ...]
    positive: int | None
    threshold: float | None
    warning: str
    unpredicted: str = ""
    interval_note: str = ""
    calibration_slope: Estimate | None = None
    calibration_intercept: Estimate | None = None

    @property
    def brier_class(self) -> object | None:
        """The class whose binary Brier score :attr:`brier` is (two classes), or None (multiclass form)."""
        if len(self.classes) != 2:
            return None
        return _plain(self.classes[self.positive if self.positive is not None else 1])

    @property
    def brier_scale(self) -> str:
        """What :attr:`brier` is: ``"binary, class '1' (0-1)"`` or ``"sum over classes, 0-2"``."""
        if len(self.classes) != 2:
            return BRIER_MULTICLASS_SCALE
        return f"binary, class {str(self.brier_class)!r} (0-1)"

    def text_lines(self, intervals_in: str = "as_dict()") -> list[str]:
        """The report as text lines (Markdown tables, as ``edprf evaluate`` prints it); ``intervals_in`` names
        where the threshold table's intervals are (the table gives point values)."""
        from ._clinical_text import clinical_report_lines

        return clinical_report_lines(self, intervals_in)

    def __str__(self) -> str:
        return "\n".join(self.text_lines()).strip("\n")

    def as_dict(self) -> dict[str, Any]:
        return {
            "classes": [_plain(c) for c in self.classes],
            "n": self.n,
            "positive_class": None if self.positive is None else _plain(self.classes[self.positive]),
            "threshold": self.threshold,
            "confusion": self.confusion.tolist(),
            **{k: getattr(self, k).as_dict() for k in ("accuracy", "balanced_accuracy", "roc_auc")},
            **(
                {"brier": self.brier.as_dict(), "brier_class": self.brier_class}
                if len(self.classes) == 2
                else {"brier_multiclass": self.brier.as_dict()}
            ),
            "brier_scale": self.brier_scale,
            **{
                k: getattr(self, k).as_dict()
                for k in ("calibration_slope", "calibration_intercept")
                if getattr(self, k) is not None
            },
            "per_class": [c.as_dict() for c in self.per_class],
            "warning": self.warning,
            "unpredicted": self.unpredicted,
            "interval_note": self.interval_note,
            "note": NOT_DP_NOTE,
        }


def clinical_report(
    y: ArrayLike,
    proba: ArrayLike,
    classes: Sequence[object],
    *,
    positive: object | None = None,
    threshold: float = 0.5,
    thresholds: Sequence[float] = DEFAULT_THRESHOLDS,
    n_calibration_bins: int = 10,
    indices: bool | None = None,
) -> ClinicalReport:
    """Confusion matrix and clinical metrics of probabilities ``proba`` against the true classes ``y``.

    Parameters
    ----------
    y : array, shape (n,)
        True class of each row: labels among ``classes`` (``'no'``/``'yes'``,
        what ``predict`` returns), or class indices 0..K-1, positions in
        ``classes`` (the order of ``proba``'s columns: with an estimator's
        sorted ``classes_``, not the schema's declared order that
        :func:`~edprf_core.encoding.encode_labels` gives; pass labels then);
        see ``indices`` for which reading is taken.
    proba : array, shape (n, K)
        Predicted class probabilities (each row sums to 1), columns in the
        order of ``classes`` (``predict_proba``'s).
    classes : sequence
        The classes, in the order of ``proba``'s columns (an estimator's ``classes_``, sorted; a
        :class:`~edprf_core.forest.DPForest`'s ``classes``, declared).
    positive : label, int or None
        The positive class: a label among ``classes``, or its index (an
        index when ``y`` is read as indices, with ``indices``).  Given, a row is decided positive when
        its probability of that class is at least ``threshold`` (with two
        classes, the other class otherwise; with more, the most probable of
        the others); the summary AUC, Brier score and threshold table are
        the positive class's.  ``None``: every row gets its most probable class.
    threshold : float in [0, 1], default 0.5
    thresholds : sequence of float in [0, 1]
        Rows of the threshold table (positive class only).
    n_calibration_bins : int in [1, MAX_CALIBRATION_BINS], default 10
        Equal-width bins of predicted probability in the calibration tables.
    indices : bool or None, default None
        How ``y`` and ``positive`` are read.  ``None``: as labels when every
        value is among ``classes``, else as class indices (integers in
        0..K-1).  So when the classes are integers other than 0..K-1 (grades
        ``(1, 2, 3)``), values among them are read as **labels**: ``y = [1,
        2]`` means the classes 1 and 2 (indices 0 and 1), and ``positive=2``
        the class 2; when the classes are exactly ``0..K-1`` the two readings
        agree.  ``True``: class indices only (for callers holding
        :func:`edprf_core.encoding.encode_labels`' output); ``False``: labels
        only.

    Returns
    -------
    ClinicalReport
        ``predicted``, ``confusion`` and ``positive`` are in class indices
        (the order of ``classes``).

    Raises
    ------
    ValueError
        A value of ``y`` or ``positive`` that is neither among ``classes`` nor
        a class index (the error names it and the classes), or inconsistent
        shapes, a threshold outside [0, 1] or ``n_calibration_bins`` outside
        [1, :data:`MAX_CALIBRATION_BINS`] (refused before anything is allocated).

    Notes
    -----
    Privacy cost: none is accounted, and none of the outputs is DP: they are
    exact statistics of ``(y, proba)`` (see :data:`NOT_DP_NOTE`).  The
    intervals are described in the module docstring.
    """
    _check_bins(n_calibration_bins)
    values = np.asarray(y)
    values = values.ravel() if values.ndim else values.reshape(1)
    p = np.asarray(proba, dtype=np.float64)
    k = len(classes)
    if p.ndim != 2 or p.shape != (values.size, k):
        raise ValueError(f"proba: expected shape ({values.size}, {k}), got {p.shape}")
    y, as_labels = _class_indices(values, classes, "y", indices)
    if positive is not None:
        # y read as indices: positive too (positive=1 read as the label 1 while y held indices was the wrong
        # class); y read as labels: positive is a label, or else its index
        reading = indices if indices is not None or as_labels else True
        positive = int(_class_indices(np.array([positive], dtype=object), classes, "positive", reading)[0][0])
    if not 0.0 <= threshold <= 1.0:
        raise ValueError(f"threshold: expected a probability in [0, 1], got {threshold}")
    if positive is None:
        predicted = np.argmax(p, axis=1) if y.size else np.zeros(0, dtype=np.int64)
    else:
        others = p.copy()
        others[:, positive] = -np.inf
        fallback = np.argmax(others, axis=1) if y.size else np.zeros(0, dtype=np.int64)
        predicted = np.where(p[:, positive] >= threshold, positive, fallback)
    confusion = np.bincount(y * k + predicted, minlength=k * k).reshape(k, k)
    correct = np.diag(confusion)
    per_class = tuple(
        _one_vs_rest(
            classes[c],
            y == c,
            p[:, c],
            predicted == c,
            threshold if c == positive else None,
            thresholds if c == positive else (),
            n_calibration_bins,
        )
        for c in range(k)
    )
    slope = intercept = None
    if k == 2:  # binary: the positive class's AUC and binary Brier score (the last declared class by default)
        event = positive if positive is not None else 1
        focus = per_class[event]
        roc_auc, brier = focus.roc_auc, focus.brier
        slope, intercept = _slope_intercept(y == event, p[:, event], _smaller_class(y, k, positive))
    else:
        roc_auc = _macro_auc(y, p)
        onehot = np.eye(k)[y] if y.size else np.zeros((0, k))
        brier = brier_estimate(((p - onehot) ** 2).sum(axis=1))
    return ClinicalReport(
        classes=tuple(classes),
        n=int(y.size),
        predicted=predicted,
        confusion=confusion,
        accuracy=wilson_interval(int(correct.sum()), int(y.size)),
        balanced_accuracy=_balanced_accuracy(correct, confusion.sum(axis=1)),
        roc_auc=roc_auc,
        brier=brier,
        per_class=per_class,
        positive=positive,
        threshold=threshold if positive is not None else None,
        warning=(constant := one_class_present_warning(y, predicted, classes) or one_class_warning(predicted, classes)),
        unpredicted="" if constant else unpredicted_class_warning(y, predicted, classes),
        interval_note=few_events_note(_smaller_class(y, k, positive)),
        calibration_slope=slope,
        calibration_intercept=intercept,
    )


def _slope_intercept(event: NDArray[np.bool_], score: NDArray[np.float64], smaller: int) -> tuple[Estimate, Estimate]:
    """:func:`calibration_slope_intercept`, or both n/a ("too few events to estimate") below
    :data:`TOO_FEW_EVENTS` rows in the smaller class: an intercept fitted on one event is a number, not an
    estimate (analyst review F11)."""
    if smaller < TOO_FEW_EVENTS:
        nan = float("nan")
        undefined = Estimate(nan, nan, nan, f"too few events to estimate (fewer than {TOO_FEW_EVENTS})")
        return undefined, undefined
    return calibration_slope_intercept(event, score)


def _smaller_class(y: NDArray[np.int64], k: int, positive: int | None) -> int:
    """Rows of the smaller side: the positive class or the rest (binary summary), else the smallest class."""
    counts = np.bincount(y, minlength=k) if y.size else np.zeros(k, dtype=np.int64)
    if positive is not None and k == 2:
        return int(min(counts[positive], y.size - counts[positive]))
    return int(counts.min())


def _check_bins(n_bins: object) -> None:
    """Refuse a bin count that is not an integer in [1, MAX_CALIBRATION_BINS] (a bool is not a count)."""
    if isinstance(n_bins, bool) or not isinstance(n_bins, (int, np.integer)) or not 1 <= n_bins <= MAX_CALIBRATION_BINS:
        raise ValueError(f"n_calibration_bins: expected an integer in [1, {MAX_CALIBRATION_BINS}], got {n_bins!r}")


def _class_indices(
    values: ArrayLike, classes: Sequence[object], name: str, indices: bool | None = None
) -> tuple[NDArray[np.int64], bool]:
    """The class index of each of ``values``, read as labels among ``classes`` or as class indices 0..K-1.

    Parameters
    ----------
    values : array, shape (n,)
    classes : sequence
        The declared classes, in order.
    name : str
        What the values are, for errors (``"y"``, ``"positive"``).
    indices : bool or None
        ``None``: labels when every value is among ``classes`` (so labels win when the classes are integers
        other than 0..K-1; with classes exactly 0..K-1 the readings agree), else indices; ``True``: indices
        only; ``False``: labels only.

    Returns
    -------
    (ndarray of int64, bool)
        The class indices, and whether the values were read as labels.

    Raises
    ------
    ValueError
        Naming (at most three of) the values that are neither, and the classes.
    """
    cells = np.asarray(values)
    cells = cells.ravel() if cells.ndim else cells.reshape(1)
    k = len(classes)
    found = None
    if indices is not True and not (_are_positions(classes) and cells.dtype.kind in "iu"):
        # each value looked up among the classes by hash (1 == 1.0, 'no' == np.str_('no')); -1 where absent
        found = pd.Index(list(classes), dtype=object).get_indexer(pd.Index(cells.astype(object), dtype=object))
        if (found >= 0).all():
            return found.astype(np.int64), True
    index = _index_reading(cells) if indices is not False else None
    if index is not None and (index.size == 0 or (index.min() >= 0 and index.max() < k)):
        return index, False
    _refuse_classes(cells, found, index, classes, name, indices)


def _are_positions(classes: Sequence[object]) -> bool:
    """Whether the classes are exactly the integers 0..K-1 (then a value's label and index readings agree)."""
    return all(
        isinstance(c, numbers.Integral) and not isinstance(c, (bool, np.bool_)) and c == j
        for j, c in enumerate(classes)
    )


def _index_reading(cells: NDArray) -> NDArray[np.int64] | None:
    """The values as integers (integers, integral floats), whatever their range; None when some value is no integer."""
    kind = cells.dtype.kind
    if kind == "O" and pd.api.types.infer_dtype(cells, skipna=False) == "integer":  # Python ints (a `positive`)
        kind = "i"
    if kind in "iu":
        return cells.astype(np.int64)
    if kind == "f" and np.isfinite(cells).all() and (cells == np.round(cells)).all():
        return cells.astype(np.int64)
    return None


def _refuse_classes(
    cells: NDArray,
    found: NDArray[np.intp] | None,
    index: NDArray[np.int64] | None,
    classes: Sequence[object],
    name: str,
    indices: bool | None,
) -> NoReturn:
    """Raise the error naming the values that are neither among ``classes`` nor (as allowed) class indices."""
    k = len(classes)
    listed = [_plain(c) for c in list(classes)[:10]]
    more = f" and {k - 10} more" if k > 10 else ""
    is_index = np.zeros(cells.size, dtype=bool)
    if index is not None:
        is_index = (index >= 0) & (index < k)
    bad = ~is_index if found is None else (found < 0) & ~is_index
    shown = list(dict.fromkeys(repr(_plain(v)) for v in cells[np.flatnonzero(bad)[:50]]))[:3]
    labels, positions = f"among the classes {listed!r}{more}", f"in [0, {k - 1}]"
    if cells.size == 1:
        labels, positions = f"a label {labels}", f"a class index {positions}"
    else:
        labels, positions = f"labels {labels}", f"class indices {positions}"
    wanted = {
        None: f"{labels} or {positions}",
        True: f"{positions} (indices=True)",
        False: f"{labels} (indices=False)",
    }[indices]
    if not shown:  # each value is one or the other, but not all the same one
        raise ValueError(f"{name}: expected {wanted}, all read one way; got some of each")
    hint = ""
    if name == "y":
        hint = (
            " (labels a schema reads, such as text cells or aliases, become its declared classes with "
            "schema.read_labels(y), as fit reads them)"
        )
    raise ValueError(f"{name}: expected {wanted}; got {', '.join(shown)}{hint}")
