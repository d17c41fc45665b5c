"""The federation's marginals part: the parties' noisy histograms summed, each bounded first (invariant 7).

Why a sum
---------
A party's marginals part is one noisy ``(n_codes_j x K)`` class-count histogram per feature of the rows it gave
to the marginals (:func:`edprf_core._marginals.release_marginals`).  Summing the parties' histograms cell by cell
gives the histogram of all their marginals rows, whatever the partition (label skew does not enter), plus the sum
of their noises: independent discrete Laplace noises of scales ``t_p = Delta * d / eps_p`` (``eps_p`` the budget
of party ``p``'s marginals, its ``epsilon - count_epsilon``), of variance about ``2 t_p**2`` each.  The sum's
variance is ``2 (Delta d)**2 sum_p 1 / eps_p**2``: the variance of one release at the *effective* budget
``eps_eff = 1 / sqrt(sum_p 1 / eps_p**2)`` (``eps / sqrt(P)`` for ``P`` equal budgets).  The summed
:class:`NoisyMarginals` carries ``eps_eff`` as its ``epsilon`` so that :func:`edprf_core._marginals.marginal_evidence`,
which reads every noise scale from ``sensitivity * d / epsilon`` (the shrinkage pseudo-counts and the class
totals' noise), sees the noise of the sum.  ``eps_eff`` is a description of the noise for post-processing, not a
guarantee: each record sits at one party, whose release is ``eps_p``-DP (see ``FEDERATION_NOTE``).

Bounded influence (what one forged release can do)
--------------------------------------------------
Every released cell is signed and may be anything in ``RELEASE_RANGE`` (+-2**31 - 1): a signed, conforming release
with ``2**31 - 1`` in every cell of one class would own the sum.  Before summing, :func:`bounded_marginals_sum`
bounds each party's histograms by what its public parameters and the other parties' releases make plausible,
with the plausibility source the trees use (:mod:`edprf_core._leaf_distribution`, item 5):

1. *Floor.*  Every cell of party ``p`` is raised to at least ``-m_p``, ``m_p = NOISE_MARGIN_SCALES * t_p`` (12
   noise scales, from the party's public ``eps_p``, ``d`` and relation).  An honest cell is a count ``>= 0`` plus
   discrete Laplace noise, below ``-m_p`` with probability ``a**m_p / (1 + a) < exp(-12) ~ 6e-6`` (``a =
   exp(-1 / t_p)``), so the floor leaves honest releases unchanged except with that probability per cell.  A
   forged ``-2**31`` (to erase a class) weighs at most ``m_p`` per cell: the size of an honest party's own noise.
   The decoder bounds ``t_p``: a release's ``count_epsilon <= epsilon / 2`` and the coordinator accepts only the
   requested ``epsilon``.
2. *Column floor.*  Party ``p``'s class-``k`` column of feature ``j`` sums ``n = n_codes[j]`` cells: a count
   ``>= 0`` plus ``n`` independent noises of standard deviation ``t_p sqrt(2)`` each.  It is raised to at least
   ``-NOISE_MARGIN_SCALES * t_p * sqrt(2 n)`` (12 standard deviations of the column's noise) by scaling the
   column's negative cells down by one factor.  An honest column is below that with probability about
   ``2e-8`` for ``n = 1`` (about ``exp(-12 sqrt 2) / 2``) and below ``1.1e-5`` for ``n >= 2``: below
   ``(4/3)**n exp(-6 sqrt(2 n))`` (Chernoff, ``lambda = 1 / (2 t_p)``) up to ``n = 161``, below ``exp(-54)``
   from ``n = 162`` (the lemma of item 3 at ``x = 12 t_p sqrt(2 n)``).  Without it a forged party could floor every cell
   of a class at ``-m_p``, ``n`` times its own noise in every column, and empty the class's rare bins.
3. *Mass floor.* Party ``p``'s class-``k`` mass ``w_pk``, the mean over the ``d`` features of its class-``k``
   column sums (the estimator's class totals, :func:`edprf_core._marginals.naive_bayes_tables`), is raised to at
   least :func:`mass_floor` ``= -x_p / d`` by scaling the class's negative cells, in every feature, down by one
   factor; ``x_p = t_p sqrt(16 L N / 3) = 8 t_p sqrt(N)`` when ``N >= 3 L = 36``, else ``2 t_p (L + N / 3) = t_p
   (24 + 2 N / 3)``, with ``N = sum_j n_codes[j]`` the cells of one class over all features and ``L =
   NOISE_MARGIN_SCALES = 12``. Every row is counted once per feature, so the ``d`` column sums are ``d`` noisy
   copies of one count ``c_pk >= 0``: ``d w_pk = d c_pk + S``, ``S`` the sum of ``N`` independent discrete Laplace
   noises (items 1-2 only raise cells, so they only raise ``w_pk``). Lemma (Chernoff): for ``u = lambda t_p <=
   1/2`` one noise has ``E exp(-lambda X) = (1 - a)**2 / ((1 - a e**lambda)(1 - a e**-lambda)) <= 1 / (1 - u**2) <=
   exp(4 u**2 / 3)`` (the first inequality is ``sinh(u s) <= u sinh(s)``, ``s = 1 / (2 t_p)``), so ``P(S <= -x) <=
   exp(4 N u**2 / 3 - u x / t_p)``: at ``u = 3 x / (8 N t_p)`` (``<= 1/2`` when ``N >= 36``) that is ``exp(-3 x**2
   / (16 N t_p**2)) = exp(-12)`` at ``x = 8 t_p sqrt(N)``, at ``u = 1/2`` it is ``exp(N / 3 - x / (2 t_p)) =
   exp(-12)`` at ``x = t_p (24 + 2 N / 3)``. So an honest class mass is below the floor with probability below
   ``exp(-12) ~ 6e-6`` (exact tails, by convolution, stay below ``1e-7`` for ``N <= 120`` and ``t_p`` from 0.5 to
   5; ``tests/core/test_marginals_federation.py`` checks ``exp(-12)``). The mass's noise has standard deviation
   ``t_p sqrt(2 N) / d``: the floor sits 5.7 of them below 0. A forged release therefore removes at most ``x_p /
   d`` from each class's summed mass (the summed class totals), whatever it sends: the wall robot at ``epsilon =
   1``, ``marginals_bins = 5`` (``d = 24``, ``N = 120``, ``t_p = 24``) gives 88 rows, against about 220 rows of the
   majority class and 27 of the rarest in each party's marginals (5 parties of 900 rows, half to the marginals).
   Items 1-2 alone let it remove ``12 t_p sqrt(2 n)`` (911 rows there) from every feature's column.
4. *Mass cap.*  Party ``p``'s class-``k`` mass ``w_pk`` (item 3's, floored at 0) is capped, with ``P >= 2 f + 1``
   parts carrying marginals (``f = TOLERATED_PARTIES``), by :func:`capped_part_weights`, the trees' rule: at
   ``c_p`` times the ``(f+1)``-th largest mass of class ``k``, ``c_p = WEIGHT_CAP_FACTOR`` (2) when the part's
   size ``sum_k w_pk`` is plausible (at most ``PLAUSIBLE_SIZE_FACTOR`` times the ``(f+1)``-th largest size) and
   1 otherwise; the party's class-``k`` cells are scaled by ``capped / w_pk`` (rounded to integers).  At least
   one of the ``f + 1`` largest masses is honest, so a forged party's class-``k`` mass is at most ``c`` times the
   largest honest party's (once when its size is implausible, e.g. ``2**31 - 1`` in every cell): with ``f = 1``
   at most ``c / (c + 1) = 2/3`` of the summed class-``k`` mass comes from it (1/2 when implausible).  With ``P
   <= 2 f`` parts nothing tells a forged party from an honest one, and only items 1-3 apply (as for the trees).

What this bounds, and what it does not. The summed class totals (the estimator's prior): one forged release holds
at most 2/3 of a class's summed mass (item 4, ``P >= 3``; 1/2 at an implausible size) and removes at most ``x_p /
d`` of it (item 3, any ``P``), both up to the rounding of the scaled cells (half a row per cell). One bin's class
counts are bounded only by items 1-2 below (``-m_p`` per cell) and, above, by the class's mass: the mass is a mean
over features, so a forged party may put into one feature's class column ``d`` times its capped mass plus what it
takes from the other ``d - 1`` columns down to their floors (item 2, ``12 t_p sqrt(2 n)`` each): the wall robot
above, one cell of about 21,000 rows against a few tens of the class's summed rows (review rev-eval E5; the
evidence is centred per feature, and accuracy did not move there).  Within a feature it may
move its class's mass from the bins where the class is common to those where it is rare (each cell at most ``m_p``
below 0); a release whose cells alternate between the largest count and the floor, which needs no knowledge of the
data, cost the wall robot 2.7-4.5 points (rev-eval E6). No rule read from the releases can tell such a histogram from an honest one when ``m_p`` is larger than
the parties' per-bin counts, since an honest cell's own noise reaches it: the wall robot above has ``m_p = 288``
against about 40 rows per bin and class at a party. There, a release that keeps its class totals and sets the
majority class's two densest bins of every feature to ``-m_p`` (their mass moved to the other bins) still costs the
model (accuracy 0.52, 0.45, 0.53 on seeds 0-2 against 0.69-0.72 for the honest parties;
``tests/core/test_marginals_federation.py``, ``test_a_reshaped_release_keeps_the_class_totals``): the bound states
the class totals, not every bin's class shares.

The price, as for the trees: a party that alone (or nearly alone) holds a class under strong label skew has its
class-``k`` mass capped at twice the next party's.  When no cap binds (honest parts of similar sizes) and no floor
binds (with probability below ``exp(-12)`` per cell and per class, ``1.1e-5`` per column) the bounded sum is the plain sum.
Post-processing of released histograms and public parameters: no ε.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ._leaf_distribution import TOLERATED_PARTIES, capped_part_weights, tolerated_among
from ._marginals import RELEASE_RANGE, NoisyMarginals

__all__ = [
    "NOISE_MARGIN_SCALES",
    "bounded_marginals_sum",
    "cell_floor",
    "column_floor",
    "effective_epsilon",
    "floored_masses",
    "marginals_release_epsilons",
    "mass_floor",
]

NOISE_MARGIN_SCALES = 12
"""An honest released cell lies below ``-NOISE_MARGIN_SCALES`` noise scales with probability below ``exp(-12)``."""


def effective_epsilon(epsilons: Sequence[float]) -> float:
    """``1 / sqrt(sum_p 1 / eps_p**2)``: the budget of one release whose noise has the variance of the sum's.

    Parameters
    ----------
    epsilons : sequence of float in (0, inf)
        Each summed release's budget.

    Notes
    -----
    Privacy cost: none (a description of the summed noise for post-processing, not a guarantee).
    """
    return 1.0 / math.sqrt(sum(1.0 / float(e) ** 2 for e in epsilons))


def marginals_release_epsilons(parts: Sequence[tuple[str, Any, int]]) -> list[float]:
    """The distinct ε at which the parts of a merged forest that hold a marginals part released their histograms
    (``epsilon - count_epsilon`` each, split over the ``d`` features; a party's release carries no residual
    pass), in increasing order.  ``parts``: :attr:`DPForest.parts` (label, parameters, trees).

    Privacy cost: none (public parameters of the releases).  What a party spent, unlike
    :func:`effective_epsilon`, which describes the noise of their sum.
    """
    return sorted({float(f"{p.epsilon - p.count_epsilon:.12g}") for _, p, _ in parts if p.marginals_share > 0})


def column_floor(marginals: NoisyMarginals, n_codes: int) -> float:
    """``-NOISE_MARGIN_SCALES * t * sqrt(2 n_codes)``: the lowest sum an honest class column of ``n_codes`` cells
    plausibly takes (module docstring, item 2); ``t`` from the release's public parameters only."""
    return -NOISE_MARGIN_SCALES * marginals.noise_scale * math.sqrt(2 * n_codes)


def _bounded_histogram(h: np.ndarray, marginals: NoisyMarginals) -> np.ndarray:
    """``h``, one of ``marginals``' histograms, bounded below (module docstring, items 1-2): every cell raised to
    :func:`cell_floor`, then every class column whose sum is below :func:`column_floor` brought up to it by
    scaling the column's negative cells by one factor in (0, 1)."""
    h = np.maximum(h, cell_floor(marginals))
    [h] = _negative_cells_raised([h], column_floor(marginals, h.shape[0]))
    return h


def _negative_cells_raised(hs: list[np.ndarray], floor: float) -> list[np.ndarray]:
    """``hs`` (histograms of one release, ``(n_codes_j, K)`` each) with every class whose cells sum, over all of
    them, below ``floor`` brought up to it by scaling that class's negative cells, in every histogram, by one
    factor in [0, 1) (the rounding to integers aside); ``hs`` itself when no class is that low."""
    sums = np.sum([h.sum(axis=0) for h in hs], axis=0)  # (K,)
    low = sums < floor
    if not low.any():
        return hs
    negative = np.sum([np.minimum(h, 0).sum(axis=0) for h in hs], axis=0)  # < 0 in every low class, <= its sum
    keep = np.ones(len(sums))
    keep[low] = 1.0 - (floor - sums[low]) / -negative[low]
    return [np.where(h < 0, np.rint(h * keep), h).astype(np.int64) for h in hs]


def mass_floor(marginals: NoisyMarginals) -> float:
    """``-x / d``: the lowest class mass (the mean over features of a class's column sums) an honest release
    plausibly takes (module docstring, item 3); ``t`` and the grid from the release's public parameters only.

    ``x = t sqrt(16 L N / 3)`` (``8 t sqrt(N)``) when ``N >= 3 L``, else ``2 t (L + N / 3)``, with ``N = sum_j
    n_codes[j]`` and ``L = NOISE_MARGIN_SCALES``: the sum of ``N`` honest cell noises is below ``-x`` with
    probability below ``exp(-L)``.
    """
    n, L, t = sum(marginals.n_codes), NOISE_MARGIN_SCALES, marginals.noise_scale
    x = t * math.sqrt(16 * L * n / 3) if n >= 3 * L else 2 * t * (L + n / 3)
    return -x / marginals.n_features


def _mass_floored(hs: list[np.ndarray], marginals: NoisyMarginals) -> list[np.ndarray]:
    """``hs``, ``marginals``' histograms after items 1-2, with every class mass below :func:`mass_floor` brought
    up to it by scaling the class's negative cells, in every feature, by one factor in [0, 1) (item 3)."""
    return _negative_cells_raised(hs, len(hs) * mass_floor(marginals))  # the sums are d times the class masses


def cell_floor(marginals: NoisyMarginals) -> int:
    """``-ceil(NOISE_MARGIN_SCALES * t)``: the lowest value an honest cell of ``marginals`` plausibly takes.

    ``t = sensitivity * d / epsilon``, from the release's public parameters only.
    """
    return -math.ceil(NOISE_MARGIN_SCALES * marginals.noise_scale)


def floored_masses(parts: Sequence[NoisyMarginals]) -> tuple[list[list[np.ndarray]], np.ndarray]:
    """Each part's histograms bounded below by its noise margins (items 1-3), a ``(P, d)`` list of int64 arrays,
    and each part's class masses floored at 0, shape ``(P, K)``: the weights the mass cap (item 4) reads.

    Privacy cost: none (post-processing of released histograms and public parameters).
    """
    floored = [_mass_floored([_bounded_histogram(h, m) for h in m.counts], m) for m in parts]
    masses = np.array([np.maximum(np.mean([h.sum(axis=0) for h in hs], axis=0), 0.0) for hs in floored])
    return floored, masses


def bounded_marginals_sum(parts: Sequence[NoisyMarginals], tolerated: int | None = None) -> NoisyMarginals:
    """The parties' histograms, each bounded (module docstring, items 1-4), summed cell by cell.

    Parameters
    ----------
    parts : sequence of NoisyMarginals
        One per party, on one grid (equal ``n_codes``), one class set and one relation.
    tolerated : int >= 0, default :data:`TOLERATED_PARTIES`
        ``f``: the mass cap (item 4) applies with ``len(parts) >= 2 f + 1``, against as many hostile parties as
        the parts can bound below that (:func:`~edprf_core._leaf_distribution.tolerated_among`); the floors
        (items 1-3) always.

    Returns
    -------
    NoisyMarginals
        The sum, clamped to :data:`RELEASE_RANGE`, with ``epsilon`` :func:`effective_epsilon` of the parts'.

    Raises
    ------
    ValueError
        No parts, parts on different grids, class sets or relations, or a part with a residual pass (fitted to
        one holder's rows: it cannot be summed, and dropping it silently would waste its budget).

    Privacy cost: none (post-processing of released histograms and public parameters).
    """
    parts = list(parts)
    if not parts:
        raise ValueError("marginals: expected at least one part to sum, got none")
    first = parts[0]
    passes = [i for i, m in enumerate(parts) if m.residual_pass is not None]
    if passes:
        raise ValueError(f"marginals part {passes[0]}: carries a residual pass; only histograms can be summed")
    for i, m in enumerate(parts[1:], start=1):
        if m.n_codes != first.n_codes or m.n_classes != first.n_classes:
            raise ValueError(
                f"marginals part {i}: expected histograms of {first.n_codes} codes x {first.n_classes} classes "
                f"(one grid for every party), got {m.n_codes} x {m.n_classes}"
            )
        if m.relation != first.relation:
            raise ValueError(f"marginals part {i}: expected the relation {first.relation!r}, got {m.relation!r}")
    f = TOLERATED_PARTIES if tolerated is None else int(tolerated)
    if f < 0:
        raise ValueError(f"tolerated: expected an integer >= 0, got {tolerated!r}")
    d, k = first.n_features, first.n_classes
    floored, masses = floored_masses(parts)
    if (f := tolerated_among(len(parts), f)) > 0:
        capped = capped_part_weights(masses, f)
        scale = np.where(masses > 0, capped / np.where(masses > 0, masses, 1.0), 1.0)  # (P, K), each <= 1
        floored = [
            [np.rint(h * scale[p][None, :]).astype(np.int64) if (scale[p] < 1).any() else h for h in hs]
            for p, hs in enumerate(floored)
        ]
    low, high = RELEASE_RANGE
    summed = tuple(np.clip(np.sum([hs[j] for hs in floored], axis=0), low, high).astype(np.int64) for j in range(d))
    return NoisyMarginals(summed, effective_epsilon([m.epsilon for m in parts]), first.relation, k)
