"""Clinical metrics of a classifier's probabilities on labelled rows, each with an (approximate) 95 % interval.

What a hospital asks of a risk model before it uses one: the confusion matrix
at the decision threshold, sensitivity, specificity, PPV, NPV, accuracy and
balanced accuracy, the ROC AUC, the Brier score, a calibration table and a
threshold table, plus a loud warning when the model predicts one class for
(nearly) every row.  ``edprf evaluate`` prints them; ``edprf simulate`` and the
coordinator score their central test set with the same code.

Intervals (all two-sided, 95 %)
-------------------------------
- proportions (sensitivity, specificity, PPV, NPV, accuracy, a calibration
  bin's observed share): the Wilson score interval of ``successes / trials``;
- balanced accuracy: the mean of the classes' recalls, which are computed on
  disjoint rows (independent); the interval is MOVER's (Zou and Donner, 2008)
  from each recall's Wilson interval, so it holds the mean itself and stays
  asymmetric near 0 and 1;
- ROC AUC: DeLong's variance (structural components from mid-ranks, Sun and
  Xu's O(n log n) form), the interval on the logit scale,
  ``logit(AUC) +/- t * SE / (AUC * (1 - AUC))`` mapped back, with Student's t
  at (rows of the smaller class - 1) degrees of freedom; at an AUC of exactly
  1 the lower limit is the exact bound ``0.025 ** (1 / smaller)`` (that many
  disjoint positive/negative pairs all concordant).  The macro AUC of several
  classes (the mean of one-vs-rest AUCs) uses the mean of the per-class
  standard errors, an upper bound on the standard error of the mean whatever
  the correlation between classes (conservative);
- Brier score: the mean of per-row squared errors, its interval on the log
  scale, ``mean * exp(+/- t * SE / mean)`` (squared errors are right-skewed);
- macro F1 (kept for the simulation's table): a percentile bootstrap of 200
  row resamples with a fixed seed.

The AUC and Brier intervals are asymptotic, not exact.  Their measured coverage
(1000-2000 subsamples of a 20,000-row diabetes test set scored by a trained
model, AUC 0.968, 8.5 % positive): AUC 0.95-0.99 at 8-25 positives, 0.93-0.95
from 50 on; Brier 0.92 at n = 100, 0.95 from n = 150.  The symmetric Wald
interval these replaced (clipped to [0, 1]) covered 0.70-0.87 at 8-30
positives (Brier: 0.90 at n = 100).  With fewer than :data:`FEW_EVENTS` rows in
the smaller class the report says the intervals are approximate.  Wilson and
MOVER-Wilson intervals covered 0.94-0.97 in the same check.

Every interval covers sampling variation of the rows only: it says how much
the figure would move on another sample of the same population, not how the
model would do elsewhere.

Privacy: none of this is differentially private.  The figures are exact
statistics of the labelled rows; computed on the caller's own data they spend
no ε of anyone (using the model is post-processing of its releases), and they must
not be published when those rows are private.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, NoReturn

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from .count_text import count_text

__all__ = [
    "BRIER_MULTICLASS_SCALE",
    "DEFAULT_THRESHOLDS",
    "FEW_EVENTS",
    "MAX_CALIBRATION_BINS",
    "NOT_DP_NOTE",
    "ONE_CLASS_SHARE",
    "CalibrationBin",
    "ClinicalReport",
    "Estimate",
    "OneVsRest",
    "ThresholdRow",
    "brier_estimate",
    "calibration_slope_intercept",
    "clinical_report",
    "delong_auc",
    "few_events_note",
    "interval_text",
    "macro_f1_estimate",
    "one_class_warning",
    "unpredicted_class_warning",
    "wilson_interval",
]

Z95 = 1.959963984540054
"""Standard normal quantile for a two-sided 95 % interval."""

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

_BOOTSTRAP_REPLICATES = 200

BRIER_MULTICLASS_SCALE = "sum over classes, 0-2"
"""How the multiclass Brier score is labelled wherever it is shown (text, and the key ``brier_multiclass``)."""

FEW_EVENTS = 30
"""Below this many rows in the smaller class, the report notes that its AUC and Brier intervals are approximate."""


def few_events_note(smaller: int) -> str:
    """The report's note when the smaller class has fewer than :data:`FEW_EVENTS` rows (else ``""``).

    Privacy cost: none (text about a count of the caller's own rows).
    """
    if smaller >= FEW_EVENTS:
        return ""
    return (
        f"interval approximate: few events (the smaller class has {count_text(smaller, 'row')}, fewer than "
        f"{FEW_EVENTS}): the ROC AUC and Brier intervals are asymptotic; measured coverage of their 95% "
        "intervals at 10-30 events was about 0.90-0.95 (module edprf_core._clinical_metrics)"
    )


@dataclass(frozen=True)
class Estimate:
    """A point estimate with its two-sided 95 % interval and how the interval was computed.

    ``value`` is NaN (and the interval too) when the figure is not defined on
    the rows (e.g. sensitivity without any positive row).
    """

    value: float
    low: float
    high: float
    method: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "value": _finite_or_none(self.value),
            "ci95": [_finite_or_none(self.low), _finite_or_none(self.high)],
            "method": self.method,
        }

    def text(self, digits: int = 3) -> str:
        """``0.912 (95% CI 0.887-0.933)``, or ``n/a`` when undefined."""
        if not math.isfinite(self.value):
            return "n/a"
        dash = " to " if self.low < 0 else "-"  # -0.089 to 0.056, not -0.089-0.056
        return f"{self.value:.{digits}f} (95% CI {self.low:.{digits}f}{dash}{self.high:.{digits}f})"


def interval_text(value: object, ci: Sequence[object] | None, digits: int = 4, brackets: bool = False) -> str:
    """``0.9123 (95% CI 0.8912-0.9310)`` (or ``0.9123 [0.891, 0.931]`` with ``brackets``) from stored values.

    ``n/a`` when ``value`` is not a finite float; the value alone when the interval is missing or undefined
    (JSON reports store NaN as None).
    """
    if not isinstance(value, float) or not math.isfinite(value):
        return "n/a"
    if not ci or any(not isinstance(v, float) or not math.isfinite(v) for v in ci):
        return f"{value:.{digits}f}"
    if brackets:
        return f"{value:.{digits}f} [{ci[0]:.{digits - 1}f}, {ci[1]:.{digits - 1}f}]"
    return f"{value:.{digits}f} (95% CI {ci[0]:.{digits}f}-{ci[1]:.{digits}f})"


def _finite_or_none(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None


_UNDEFINED = float("nan")


def wilson_interval(successes: int, trials: int, z: float = Z95) -> Estimate:
    """``successes / trials`` with the Wilson score interval (NaN when ``trials`` is 0)."""
    if trials <= 0:
        return Estimate(_UNDEFINED, _UNDEFINED, _UNDEFINED, "wilson")
    p = successes / trials
    z2 = z * z
    denominator = 1.0 + z2 / trials
    centre = (p + z2 / (2.0 * trials)) / denominator
    half = z * math.sqrt(p * (1.0 - p) / trials + z2 / (4.0 * trials * trials)) / denominator
    return Estimate(p, max(0.0, centre - half), min(1.0, centre + half), "wilson")


def _midranks(x: NDArray[np.float64]) -> NDArray[np.float64]:
    """1-based ranks, ties sharing the mean of their ranks."""
    order = np.argsort(x, kind="mergesort")
    sorted_x = x[order]
    starts = np.flatnonzero(np.r_[True, sorted_x[1:] != sorted_x[:-1]])
    ends = np.r_[starts[1:], x.size]
    mean_rank = (starts + ends + 1) / 2.0  # ranks starts+1 .. ends, averaged
    ranks = np.empty(x.size)
    ranks[order] = np.repeat(mean_rank, ends - starts)
    return ranks


def _auc_and_se(positive: NDArray[np.bool_], score: NDArray[np.float64]) -> tuple[float, float]:
    m, n = int(positive.sum()), int((~positive).sum())
    if m == 0 or n == 0:
        return _UNDEFINED, _UNDEFINED
    pos, neg = score[positive], score[~positive]
    all_ranks = _midranks(np.concatenate([pos, neg]))
    v10 = (all_ranks[:m] - _midranks(pos)) / n  # per positive: share of negatives ranked below (ties 1/2)
    v01 = 1.0 - (all_ranks[m:] - _midranks(neg)) / m  # per negative: share of positives ranked above
    auc = float(v10.mean())
    if m < 2 or n < 2:
        return auc, _UNDEFINED
    return auc, math.sqrt(float(v10.var(ddof=1)) / m + float(v01.var(ddof=1)) / n)


def _t95(df: float) -> float:
    """Two-sided 95 % quantile of Student's t with ``df`` degrees of freedom (the normal's for huge ``df``)."""
    from scipy.stats import t

    return float(t.ppf(0.975, df)) if df < 1e7 else Z95


def _logit_auc(auc: float, se: float, smaller: int, method: str) -> Estimate:
    """The AUC's interval on the logit scale: ``logit(auc) +/- t * se / (auc * (1 - auc))``, mapped back.

    ``t`` is Student's 97.5 % quantile with ``smaller - 1`` degrees of freedom (``smaller``: rows of the smaller
    class).  At an AUC of 1 (or 0), where the logit is infinite and DeLong's SE is 0, the open side is the exact
    Clopper-Pearson bound of ``smaller`` concordant pairs out of ``smaller``: ``smaller`` disjoint
    (positive, negative) pairs are independent draws, each concordant with probability AUC, so
    ``0.025 ** (1 / smaller)`` is a valid 97.5 % lower bound (conservative: it uses fewer pairs than the rows hold).
    """
    if not math.isfinite(auc):
        return Estimate(_UNDEFINED, _UNDEFINED, _UNDEFINED, method)
    if not math.isfinite(se) or smaller < 2:
        return Estimate(auc, 0.0, 1.0, method + " (too few rows for a variance: widest interval)")
    if 0.0 < auc < 1.0 and se <= 0.0:  # e.g. every score the same (AUC 1/2): no spread to build an interval on
        return Estimate(auc, 0.0, 1.0, method + " (no spread in the scores: widest interval)")
    if auc >= 1.0 or auc <= 0.0:
        bound = 0.025 ** (1.0 / smaller)
        if auc >= 0.5:
            return Estimate(auc, min(auc, bound), 1.0, method + " (AUC at 1: exact bound of concordant pairs)")
        return Estimate(auc, 0.0, max(auc, 1.0 - bound), method + " (AUC at 0: exact bound of concordant pairs)")
    logit = math.log(auc / (1.0 - auc))
    half = _t95(smaller - 1) * se / (auc * (1.0 - auc))
    return Estimate(auc, 1.0 / (1.0 + math.exp(-(logit - half))), 1.0 / (1.0 + math.exp(-(logit + half))), method)


AUC_METHOD = "logit delong, t"
"""How the AUC's interval is computed (the ``method`` of its :class:`Estimate`)."""

BRIER_METHOD = "log-scale normal, t"
"""How the Brier score's interval is computed (the ``method`` of its :class:`Estimate`)."""


def delong_auc(positive: ArrayLike, score: ArrayLike) -> Estimate:
    """ROC AUC of ``score`` for the rows where ``positive`` is true, with a 95 % interval on the logit scale.

    The interval is ``logit(AUC) +/- t * SE / (AUC * (1 - AUC))`` mapped back to [0, 1], with DeLong's standard
    error and Student's t quantile at (rows of the smaller class - 1) degrees of freedom; at an AUC of 1 its lower
    limit is the exact bound ``0.025 ** (1 / smaller)``.  It is asymptotic: with fewer than
    :data:`FEW_EVENTS` rows in the smaller class, read it as approximate (see the module docstring for its
    measured coverage).
    """
    positive = np.asarray(positive, dtype=bool)
    auc, se = _auc_and_se(positive, np.asarray(score, dtype=np.float64))
    smaller = min(int(positive.sum()), int((~positive).sum()))
    return _logit_auc(auc, se, smaller, AUC_METHOD)


def brier_estimate(squared_errors: ArrayLike, maximum: float = 2.0) -> Estimate:
    """Mean of per-row squared errors with a 95 % interval on the log scale, capped at ``maximum`` (the scale's
    largest value: 1 for a binary Brier score, 2 for the sum over classes).

    ``mean * exp(+/- t * SE / mean)`` with ``SE = sd / sqrt(n)`` and Student's t at ``n - 1`` degrees of freedom:
    squared errors are strongly right-skewed (most rows near 0, a few near 1), and a symmetric interval around the
    mean fell short on the right (coverage 0.90 at n = 100 against 0.93 for this one, module docstring).

    Privacy cost: none, and not DP: exact statistics of the caller's own rows (as every figure of :func:`clinical_report`).
    """
    e = np.asarray(squared_errors, dtype=np.float64)
    if e.size == 0:
        return Estimate(_UNDEFINED, _UNDEFINED, _UNDEFINED, BRIER_METHOD)
    mean = float(e.mean())
    if e.size < 2:
        return Estimate(mean, 0.0, maximum, BRIER_METHOD + " (too few rows for a variance: widest interval)")
    se = float(e.std(ddof=1)) / math.sqrt(e.size)
    if mean <= 0.0 or se <= 0.0:
        return Estimate(mean, mean, mean, BRIER_METHOD)
    factor = math.exp(_t95(e.size - 1) * se / mean)
    return Estimate(mean, mean / factor, min(maximum, mean * factor), BRIER_METHOD)


LOGIT_CLIP = 1e-6
"""Probabilities are clipped to [LOGIT_CLIP, 1 - LOGIT_CLIP] before their logit (a 0 or 1 has none)."""


def _sigmoid(z: NDArray[np.float64]) -> NDArray[np.float64]:
    return 0.5 * (1.0 + np.tanh(0.5 * z))  # = 1 / (1 + exp(-z)), without overflow


def _logistic_fit(
    y: NDArray[np.float64], x: NDArray[np.float64], slope_free: bool
) -> tuple[NDArray[np.float64], NDArray[np.float64]] | None:
    """Maximum-likelihood logistic regression of ``y`` on ``a + b * x`` (``slope_free``) or ``a + x`` (offset, slope
    fixed at 1), by Newton's method with step halving; (coefficients, covariance = inverse information), or None
    when it does not converge (e.g. the classes are separated by ``x``)."""
    design = np.c_[np.ones_like(x), x] if slope_free else np.ones((x.size, 1))
    offset = np.zeros_like(x) if slope_free else x
    beta = np.array([0.0, 1.0]) if slope_free else np.zeros(1)

    def loglik(b: NDArray[np.float64]) -> float:
        eta = design @ b + offset
        return float(np.sum(y * eta - np.logaddexp(0.0, eta)))

    current = loglik(beta)
    for _ in range(100):
        mu = _sigmoid(design @ beta + offset)
        info = design.T @ (design * (mu * (1.0 - mu))[:, None])
        try:
            step = np.linalg.solve(info, design.T @ (y - mu))
        except np.linalg.LinAlgError:
            return None
        for _ in range(30):  # halve until the likelihood does not fall
            trial = loglik(beta + step)
            if trial >= current - 1e-12:
                break
            step = step / 2.0
        beta, current = beta + step, trial
        if np.max(np.abs(step)) < 1e-10:
            mu = _sigmoid(design @ beta + offset)
            info = design.T @ (design * (mu * (1.0 - mu))[:, None])
            try:
                return beta, np.linalg.inv(info)
            except np.linalg.LinAlgError:
                return None
    return None


CALIBRATION_METHOD = "logistic recalibration on logit(p), Wald"
"""How the calibration slope and intercept are computed (the ``method`` of their :class:`Estimate`)."""


def calibration_slope_intercept(positive: ArrayLike, probability: ArrayLike) -> tuple[Estimate, Estimate]:
    """Calibration slope and intercept of ``probability`` for the rows where ``positive`` is true, each with a
    95 % Wald interval.

    Slope: ``b`` of the logistic regression ``logit P(y) = a + b * logit(p)`` (1 when calibrated; above 1, the
    probabilities are too moderate, underconfident: the model's spread should be wider; below 1, too extreme).
    Intercept: calibration-in-the-large, ``a`` of ``logit P(y) = a + logit(p)`` with the slope fixed at 1 (0 when
    the mean risk is right; above 0, the risks are too low on average).  ``p`` is clipped to
    ``[LOGIT_CLIP, 1 - LOGIT_CLIP]``.  NaN when undefined (a class absent, fewer than 3 rows, or no convergence).

    Privacy cost: none, and not DP: exact statistics of the caller's own rows (as every figure of :func:`clinical_report`).
    """
    y = np.asarray(positive, dtype=bool).astype(np.float64)
    p = np.clip(np.asarray(probability, dtype=np.float64), LOGIT_CLIP, 1.0 - LOGIT_CLIP)
    undefined = Estimate(_UNDEFINED, _UNDEFINED, _UNDEFINED, CALIBRATION_METHOD)
    if y.size < 3 or y.min() == y.max():
        return undefined, undefined
    x = np.log(p) - np.log1p(-p)
    out = []
    for slope_free, which in ((True, 1), (False, 0)):
        fit = _logistic_fit(y, x, slope_free)
        if fit is None:
            out.append(Estimate(_UNDEFINED, _UNDEFINED, _UNDEFINED, CALIBRATION_METHOD + " (did not converge)"))
            continue
        beta, cov = fit
        value, se = float(beta[which]), math.sqrt(max(float(cov[which, which]), 0.0))
        out.append(Estimate(value, value - Z95 * se, value + Z95 * se, CALIBRATION_METHOD))
    return out[0], out[1]


def _balanced_accuracy(correct: NDArray[np.int64], totals: NDArray[np.int64]) -> Estimate:
    """Mean recall over the classes present, with the MOVER interval built from the recalls' Wilson intervals.

    The recalls are computed on disjoint rows (independent).  MOVER (Zou and Donner, 2008) recovers the
    variance of the sum on each side from the Wilson limits of its terms: the lower limit is
    ``mean - sqrt(sum((r_i - l_i) ** 2)) / K``, the upper ``mean + sqrt(sum((u_i - r_i) ** 2)) / K``.  The
    interval holds the mean recall itself, also when a class has a handful of rows or a recall of 0 or 1
    (a normal interval around Agresti-Coull-adjusted recalls did not: 0.200 [0.242, 0.443] for a constant
    model of five classes, four of them small).
    """
    present = totals > 0
    if not present.any():
        return Estimate(_UNDEFINED, _UNDEFINED, _UNDEFINED, "mover-wilson mean")
    recalls = [wilson_interval(int(x), int(n)) for x, n in zip(correct[present], totals[present])]
    k = len(recalls)
    mean = sum(r.value for r in recalls) / k
    below = math.sqrt(sum((r.value - r.low) ** 2 for r in recalls)) / k
    above = math.sqrt(sum((r.high - r.value) ** 2 for r in recalls)) / k
    return Estimate(mean, max(0.0, mean - below), min(1.0, mean + above), "mover-wilson mean")


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
        what ``predict`` returns), or class indices 0..K-1 (the declared order);
        see ``indices`` for which reading is taken.
    proba : array, shape (n, K)
        Predicted class probabilities (each row sums to 1), columns in the
        order of ``classes`` (``predict_proba``'s).
    classes : sequence
        The declared classes (the model's ``classes_``).
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
        slope, intercept = calibration_slope_intercept(y == event, p[:, event])
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
        warning=(constant := one_class_warning(predicted, classes)),
        unpredicted="" if constant else unpredicted_class_warning(y, predicted, classes),
        interval_note=few_events_note(_smaller_class(y, k, positive)),
        calibration_slope=slope,
        calibration_intercept=intercept,
    )


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


def _macro_auc(y: NDArray[np.int64], proba: NDArray[np.float64]) -> Estimate:
    """Mean of one-vs-rest AUCs; its standard error bounded by the mean of theirs (whatever the correlation),
    the interval on the logit scale as :func:`delong_auc`'s with the smallest class's rows."""
    pairs = [_auc_and_se(y == c, proba[:, c]) for c in range(proba.shape[1])]
    values = np.array([a for a, _ in pairs])
    if not np.isfinite(values).all():
        return Estimate(_UNDEFINED, _UNDEFINED, _UNDEFINED, "macro " + AUC_METHOD)
    counts = np.bincount(y, minlength=proba.shape[1])
    smaller = int(min(counts.min(), (y.size - counts).min()))
    se = float(np.mean([se for _, se in pairs]))
    return _logit_auc(float(values.mean()), se, smaller, "macro " + AUC_METHOD + " (conservative)")


def macro_f1_estimate(y: ArrayLike, predicted: ArrayLike, n_classes: int, seed: int = 0) -> Estimate:
    """Macro F1 over the declared classes, with a percentile bootstrap interval (200 resamples, fixed seed)."""
    y = np.asarray(y, dtype=np.int64)
    pred = np.asarray(predicted, dtype=np.int64)
    if y.size == 0:
        return Estimate(_UNDEFINED, _UNDEFINED, _UNDEFINED, "bootstrap")

    def f1(rows: NDArray[np.int64] | slice) -> float:
        cm = np.bincount(y[rows] * n_classes + pred[rows], minlength=n_classes * n_classes).reshape(
            n_classes, n_classes
        )
        tp = np.diag(cm).astype(float)
        denominator = cm.sum(axis=0) + cm.sum(axis=1)
        return float(np.where(denominator > 0, 2 * tp / np.maximum(denominator, 1), 0.0).mean())

    rng = np.random.default_rng(seed)
    draws = np.array([f1(rng.integers(0, y.size, y.size)) for _ in range(_BOOTSTRAP_REPLICATES)])
    low, high = np.quantile(draws, [0.025, 0.975])
    return Estimate(f1(slice(None)), float(low), float(high), "bootstrap (200 resamples)")
