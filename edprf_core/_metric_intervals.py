"""Point estimates with two-sided 95 % intervals, for the clinical report (:mod:`edprf_core._clinical_metrics`).

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

Privacy cost of every function here: none, and not DP.  The figures are exact statistics of the rows they are
given (the caller's own); they spend no ε of anyone and must not be published when those rows are private.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .count_text import count_text

__all__ = [
    "AUC_METHOD",
    "BRIER_METHOD",
    "FEW_EVENTS",
    "TOO_FEW_EVENTS",
    "Z95",
    "Estimate",
    "brier_estimate",
    "delong_auc",
    "few_events_note",
    "interval_text",
    "macro_f1_estimate",
    "wilson_interval",
]

Z95 = 1.959963984540054
"""Standard normal quantile for a two-sided 95 % interval."""

FEW_EVENTS = 30
"""Below this many rows in the smaller class, the report notes that its AUC and Brier intervals are approximate."""

TOO_FEW_EVENTS = 10
"""Below this many rows in the smaller class, the report says "too few events to estimate": the calibration slope
and intercept are not fitted (one event gives a number, not an estimate) and the intervals' coverage was not
measured there (analyst review F11)."""

_BOOTSTRAP_REPLICATES = 200


def few_events_note(smaller: int) -> str:
    """The report's note when the smaller class has fewer than :data:`FEW_EVENTS` rows (else ``""``).

    Privacy cost: none (text about a count of the caller's own rows).
    """
    if smaller >= FEW_EVENTS:
        return ""
    if smaller < TOO_FEW_EVENTS:
        return (
            f"too few events to estimate: the smaller class has {count_text(smaller, 'row')}, fewer than "
            f"{TOO_FEW_EVENTS}: the calibration slope and intercept are not given (n/a), and the ROC AUC and Brier "
            "intervals are asymptotic, their coverage unmeasured this low; read the figures as a description of "
            "these rows, not as the model's performance"
        )
    return (
        f"interval approximate: few events (the smaller class has {count_text(smaller, 'row')}, fewer than "
        f"{FEW_EVENTS}): the ROC AUC and Brier intervals are asymptotic; measured coverage of their 95% "
        "intervals at 10-30 events was about 0.90-0.95 (module edprf_core._metric_intervals)"
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
    method = "mover-wilson mean"
    if k < len(totals):  # a class without rows has no recall: the mean is over the others (one class: its recall)
        method += f" over the {k} of {len(totals)} classes present among the rows"
    return Estimate(mean, max(0.0, mean - below), min(1.0, mean + above), method)


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
