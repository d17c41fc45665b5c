"""The consortium's held-out accuracy from the parties' noised counts: estimate, interval, one party's reach.

Every party ``i`` answers ``(c_i + z_i, t_i + w_i)``: its correct and total
held-out counts, each with independent discrete Laplace noise of scale
``b = 2/ε`` (``a = exp(-1/b)``, variance ``v = 2a / (1 - a)^2`` per count).
Everything here is post-processing of those DP outputs and of public
parameters (ε, the number of parties, ``max-party-rows``): no ε.

Estimate (no per-party clipping before pooling)
    ``C = Σ (c_i + z_i)`` and ``T = Σ (t_i + w_i)`` are unbiased for the pooled
    counts.  Their ratio is not (``E[1/T] > 1/E[T]``): to second order
    ``E[C/T] = (c/t)(1 + k v / t^2)`` for ``k`` parties, so the estimate is
    ``(C/T) / (1 + k v / T^2)``; the residual bias is of order ``(k v / t^2)^2``
    (under 1e-4 at the sizes where an interval narrower than 0.2 is possible;
    ``benchmarks/results/consortium_estimate.md`` measures it).  Clipping each
    party's counts to ``0 <= c <= t`` first, as before, biased the estimate
    low by 10 points with 20 small parties; only the final value is clipped to
    [0, 1] (the unclipped value stays in the report).  The weights are the
    noisy totals themselves (data-dependent, as any pooled accuracy's are); no
    public per-party size is trustworthy enough to weigh by, and the box below
    bounds what a wrong total can do.

Interval (a score interval for a ratio, Fieller's construction)
    With ``p`` the model's accuracy on the population the held-out rows come
    from, ``D(p) = C - p T`` has mean 0 and variance
    ``p (1 - p) t + k v (1 + p^2)`` (binomial sampling plus the noise of both
    sums; with per-party accuracies ``p_i`` the sampling part is at most this).
    The 95 % interval is ``{p in [0, 1] : D(p)^2 <= z^2 Var(p)}`` with ``t``
    replaced by ``max(T, 0)``: a quadratic inequality in ``p``.  Without noise
    it is the Wilson interval; it needs no division by a noisy total, so it
    keeps its level with small parties where the delta method does not.  When
    the noise swamps the totals the set is unbounded and the interval is
    [0, 1].  The noise is Laplace, not normal: for one party the level is
    about 94 % (``1 - exp(-1.96 * sqrt 2)`` for the noise alone), for several
    parties the sum is close to normal.

What one party can move, at most (the share its public parameters allow)
    ``max-party-rows`` (``B``) is the consortium's public bound on any
    party's held-out rows.  An honest reply lies, except with probability
    below ``2 exp(-12)`` per count, in the box
    ``-m <= t <= B + m, -m <= c <= t + 2m`` with ``m = 12 b`` the noise margin
    (``P(Z > j) = a^j / (1 + a)`` for discrete Laplace ``Z``).  A reply outside
    it is refused (``implausible_metrics``); a reply inside it is pooled as is.
    With the other parties' pooled counts ``(C', T')``, ``T' > m``, party
    ``j``'s reply ``(c, t)`` moves the raw ratio from ``C'/T'`` to
    ``(C' + c)/(T' + t)``: a linear-fractional function, extreme at the box's
    corners, so the move is at most
    ``max((max(R, 1-R) (B + m) + 2m) / (T' + B + m), (1 + R) m / (T' - m))``
    with ``R = C'/T'``: party ``j``'s share ``B / (T' + B)`` of the pooled rows,
    plus a noise term.  A forged (0 of 1,000,000) or (10^6 of 10^6) is refused;
    (0 of B + m) moves the estimate by ``R (B + m) / (T' + B + m)``.
    :func:`one_party_shift` computes the bound on the estimator actually
    reported (bias correction included) and the report states it, and
    :func:`one_party_robust_interval` widens the interval to cover the truth of
    the honest parties when any one party may have lied: the hull of the
    interval of all parties and of every leave-one-out interval (if party
    ``j`` lied, the interval without ``j`` covers at its level).

What ``f`` parties acting together can move, at most
    The threat model lets parties collude.  ``f`` parties' summed reply lies in
    the sum of their boxes, which is the same box scaled by ``f`` (a convex set
    added to itself ``f`` times is its ``f``-fold dilation): ``B -> f B``,
    ``m -> f m``; the estimate depends on their replies only through that sum.
    :func:`coalition_shift` therefore runs the one-party argument on the scaled
    box for every set of ``f`` parties, and :func:`coalition_robust_interval`
    takes the hull over every leave-``f``-out interval (if at most ``f``
    parties lied, one of those intervals holds honest parties only).  Both
    cost ``C(k, f)`` evaluations; the report gives ``f = 1`` and ``f = 2``.
    Two parties' reach is about twice one party's: each coalition of ``f``
    moves the estimate by about its share of the pooled rows.
"""

from __future__ import annotations

import math
from itertools import combinations

import numpy as np

__all__ = [
    "NOISE_MARGIN_SCALES",
    "bias_corrected_ratio",
    "coalition_robust_interval",
    "coalition_shift",
    "noise_margin",
    "noise_variance",
    "one_party_robust_interval",
    "one_party_shift",
    "planned_width",
    "plausible",
    "score_interval",
    "smallest_informative_epsilon",
]

Z95 = 1.959963984540054
NOISE_MARGIN_SCALES = 12
"""An honest noised count leaves its plausible range with probability below ``exp(-12) ≈ 6e-6``."""
_SHIFT_GRID = 129  # points along each edge of the box where the bias-corrected estimator is evaluated


def noise_variance(epsilon: float) -> float:
    """Variance of one count's discrete Laplace noise of scale ``2/ε`` (0 for exact metrics, ``ε = 0``).

    ``a = exp(-ε/2)``; variance ``2a / (1 - a)^2`` (about ``8/ε^2`` for small ε).
    """
    if epsilon <= 0:
        return 0.0
    a = math.exp(-epsilon / 2.0)
    return 2.0 * a / (1.0 - a) ** 2


def noise_margin(epsilon: float) -> float:
    """How far an honest noised count may lie outside its range: ``12`` noise scales (0 without noise)."""
    return NOISE_MARGIN_SCALES * 2.0 / epsilon if epsilon > 0 else 0.0


def plausible(correct: float, total: float, bound: float, margin: float) -> bool:
    """Whether ``(correct, total)`` lies in the box ``-m <= total <= B + m, -m <= correct <= total + 2m``."""
    return -margin <= total <= bound + margin and -margin <= correct <= total + 2.0 * margin


def bias_corrected_ratio(correct: float, total: float, n_parties: int, variance: float) -> float:
    """``(C/T) / (1 + k v / T^2)``, unclipped; NaN when the noisy total ``T`` is not positive."""
    if not total > 0:
        return float("nan")
    return correct / total / (1.0 + n_parties * variance / total**2)


def score_interval(correct: float, total: float, n_parties: int, variance: float) -> list[float] | None:
    """The 95 % score interval ``{p in [0, 1] : (C - pT)^2 <= z^2 (p(1-p) T+ + k v (1 + p^2))}``.

    ``None`` without parties; ``[0, 1]`` when the noise leaves the set unbounded.
    """
    if n_parties <= 0:
        return None
    z2, noise = Z95 * Z95, n_parties * variance
    t_plus = max(total, 0.0)
    a = total * total - z2 * noise + z2 * t_plus
    b = -(2.0 * correct * total + z2 * t_plus)
    c = correct * correct - z2 * noise
    if a <= 0:
        return [0.0, 1.0]
    disc = b * b - 4.0 * a * c
    if disc < 0:  # no p satisfies it: the counts are far from any accuracy; the nearest bound
        p = min(1.0, max(0.0, -b / (2.0 * a)))
        return [p, p]
    root = math.sqrt(disc)
    lo, hi = (-b - root) / (2.0 * a), (-b + root) / (2.0 * a)
    return [min(1.0, max(0.0, lo)), min(1.0, max(0.0, hi))]


def one_party_robust_interval(correct: np.ndarray, total: np.ndarray, variance: float) -> list[float] | None:
    """Hull of the all-party interval and every leave-one-out interval (covers if any one party lied)."""
    return coalition_robust_interval(correct, total, variance, 1)


def coalition_robust_interval(
    correct: np.ndarray, total: np.ndarray, variance: float, liars: int
) -> list[float] | None:
    """Hull of the all-party interval and every interval without ``liars`` of the parties: it covers the honest
    parties' accuracy at the intervals' level if at most ``liars`` parties lied (one of the leave-out intervals
    then holds honest parties only).  With fewer liars than ``liars``, that interval holds a subset of the honest
    parties: it covers their accuracy under the module's model (every party's held-out rows from one population),
    and under label skew across parties a subset's accuracy can differ from all honest parties' (review
    rev-proof P7).  ``None`` without parties; ``[0, 1]`` when every party may have lied."""
    correct, total = np.asarray(correct, dtype=float), np.asarray(total, dtype=float)
    k = len(total)
    full = score_interval(float(correct.sum()), float(total.sum()), k, variance)
    if full is None:
        return None
    if k <= liars:
        return [0.0, 1.0]  # every party may be a liar: nothing is known
    lo, hi = full
    c_all, t_all = correct.sum(), total.sum()
    for left_out in combinations(range(k), liars):
        out = list(left_out)
        part = score_interval(float(c_all - correct[out].sum()), float(t_all - total[out].sum()), k - liars, variance)
        lo, hi = min(lo, part[0]), max(hi, part[1])
    return [lo, hi]


def one_party_shift(correct: np.ndarray, total: np.ndarray, variance: float, bound: float, margin: float) -> float:
    """Largest move of the reported estimate one party can cause with any reply in its plausible box, to the
    precision of a 129-point grid per edge (a dense search found at most 0.09 % more, review rev-proof P6).

    For each party ``j``: the estimate with ``j``'s reply anywhere on the box's
    boundary (where a linear-fractional function and its bias correction
    reach their extremes; evaluated on a fine grid of each edge, the corners
    included) against the estimate without ``j``.  ``inf`` when the others'
    noisy rows do not outweigh the margin (``T' <= m``: one party could then
    take the estimate anywhere).
    """
    return coalition_shift(correct, total, variance, bound, margin, 1)


def coalition_shift(
    correct: np.ndarray, total: np.ndarray, variance: float, bound: float, margin: float, parties: int
) -> float:
    """Largest move of the reported estimate ``parties`` parties acting together can cause with any replies in
    their plausible boxes: :func:`one_party_shift`'s argument on their summed box (``B`` and ``m`` times
    ``parties``), for every set of ``parties`` parties, to the same grid precision.  ``inf`` with no other party, or when the others' noisy
    rows do not outweigh the summed margin."""
    correct, total = np.asarray(correct, dtype=float), np.asarray(total, dtype=float)
    k = len(total)
    if k <= parties:
        return math.inf
    bound, margin = parties * bound, parties * margin  # the sum of ``parties`` boxes: the box scaled
    t_edge = np.linspace(-margin, bound + margin, _SHIFT_GRID)
    c_edge = np.linspace(-margin, bound + 3.0 * margin, _SHIFT_GRID)
    # box boundary: c = -m and c = t + 2m along t; t = -m and t = B + m along c
    ts = np.concatenate([t_edge, t_edge, np.full(_SHIFT_GRID, -margin), np.full(_SHIFT_GRID, bound + margin)])
    cs = np.concatenate(
        [np.full(_SHIFT_GRID, -margin), t_edge + 2.0 * margin, np.clip(c_edge, -margin, margin), c_edge]
    )
    worst = 0.0
    c_all, t_all = correct.sum(), total.sum()
    for chosen in combinations(range(k), parties):
        them = list(chosen)
        c_rest, t_rest = c_all - correct[them].sum(), t_all - total[them].sum()
        if t_rest <= margin:
            return math.inf
        without = bias_corrected_ratio(c_rest, t_rest, k - parties, variance)
        t_with = t_rest + ts
        with_them = (c_rest + cs) / t_with / (1.0 + k * variance / t_with**2)
        worst = max(worst, float(np.max(np.abs(with_them - without))))
    return worst


def planned_width(n_parties: int, rows: float, epsilon: float) -> float:
    """Width of the 95 % interval if each of ``n_parties`` holds ``rows`` held-out rows, at the worst accuracy.

    Delta method on ``D(p)``: ``2 z sqrt(max_p [k v (1 + p^2) + k n p (1 - p)]) / (k n)``, the
    maximum over a grid of accuracies ``p``.  Public inputs only: no ε.
    """
    if n_parties <= 0 or rows <= 0:
        return math.inf
    p = np.linspace(0.0, 1.0, 101)
    k, v = n_parties, noise_variance(epsilon)
    var = np.max(k * v * (1.0 + p * p) + k * rows * p * (1.0 - p))
    return 2.0 * Z95 * math.sqrt(var) / (k * rows)


def smallest_informative_epsilon(n_parties: int, rows: float, width: float) -> float | None:
    """Smallest evaluation ε (to 1e-3) whose :func:`planned_width` is at most ``width``; ``None`` if none is.

    Without noise the width is that of the sampling alone; if even that exceeds ``width``, no ε can help.
    """
    if planned_width(n_parties, rows, math.inf) > width:
        return None
    lo, hi = 1e-6, 1.0
    while planned_width(n_parties, rows, hi) > width:
        hi *= 2.0
        if hi > 1e6:
            return None
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if planned_width(n_parties, rows, mid) <= width else (mid, hi)
    return math.ceil(hi * 1000.0) / 1000.0
