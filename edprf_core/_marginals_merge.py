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
   noises (items 1, 5 and 2 only raise cells, so they only raise ``w_pk``; item 6, applied before item 3, lowers
   cells only when an honest column lies more than ``B_j`` from its count, with item 6's probability, which the
   union bound adds to this item's). Lemma (Chernoff): for ``u = lambda t_p <=
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
   <= 2 f`` parts nothing tells a forged party from an honest one, and only items 1-3, 5 and 6 apply (as for
   the trees).
5. *Negative mass* (review rev-eval E5/E6).  Party ``p``'s class-``k`` negative mass, the sum over all ``N``
   cells of the class of ``max(0, -h)``, is brought down to at most :func:`negative_mass_ceiling` ``x-`` by
   scaling the class's negative cells, in every feature, by one factor in [0, 1).  An honest cell ``n + Z``,
   ``n >= 0``, has negative part at most ``max(0, -Z)``; the Chernoff bound on the sum of ``N`` of those (the
   function's docstring) puts an honest class above ``x-`` with probability below ``exp(-12)``
   (``tests/core/test_marginals_federation.py`` checks it by exact convolution).  The wall robot below: ``x- =
   2,782`` rows, an empty class's mean ``N a / (1 - a**2) = 1,440``; item 1 alone allowed ``N m_p = 34,560``.  It
   only raises cells.
6. *Column ceiling* (review rev-eval E5).  Every row is counted once in every feature, so party ``p``'s ``d``
   class-``k`` column sums are ``c_pk + S_j``, ``S_j`` the sum of ``n_codes[j]`` noises, which lies within
   ``B_j = 12 t_p sqrt(2 n_codes[j])`` of 0 on either side except with the probability of item 2.  When every
   ``|S_j| <= B_j``, the median column is at least ``c_pk - max B`` and each column at most ``c_pk + B_j``: so a
   column above ``median + B_j + max_i B_i`` is brought down to it by scaling its positive cells by one factor
   in (0, 1).  An honest release's column exceeds it with probability below ``2 d`` times item 2's bound per
   column (a loose bound: the exact tail of ``|S_j| > B_j``, both sides, is 4.8e-10 at ``n_codes = 2`` and 2.6e-13
   at 5 for ``t_p = 24``, reviews rev-proof P3 and rev-s60b F5).

The items apply in the order 1, 5, 2, 6, 3, 4: items 1, 5, 2 and 3 only raise cells and item 6 only lowers
positive cells, so each item's statement holds after the ones before it, item 6's up to what item 3 raises
afterwards (at most the class's negative mass, ``x-``).

What this bounds, and what it does not. The summed class totals (the estimator's prior): one forged release holds
at most 2/3 of a class's summed mass (item 4, ``P >= 3``; 1/2 at an implausible size) and removes at most ``x_p /
d`` of it (item 3, any ``P``), both up to the rounding of the scaled cells (half a row per cell). One feature's
class column: at most the release's median column plus ``B_j + max B`` (item 6) plus what item 3 raises afterwards
(at most ``x-``), and at least ``-B_j`` (item 2). One cell: its column plus the column's other cells' negative
mass, at most ``(n_codes[j] - 1) m_p`` (items 1 and 5), so at most ``median + B_j + max B + (n_codes[j] - 1) m_p``,
with the median the forger's to choose within item 4's mass cap. Before item 6 a forged party could put into one
cell ``d`` times its capped mass plus what it took from the other ``d - 1`` columns down to their floors, about
21,700 rows on the wall robot (review rev-eval E5); now about 3,000 plus the median column there (``2 B = 1,821``,
``4 m_p = 1,152``): a release built against items 1-6 adds 3,640-3,770 rows to one cell with its median column at
the class's mass cap, 700-800 rows (reviews rev-proof P1 and rev-s60b F1; the simpler ``marginals-one-cell``
forgery of the tests adds about 1,700). Over every class and a median of 0-800 rows it costs the marginals part
alone up to 15 points (0.576, 0.529, 0.539 against 0.691, 0.620, 0.683) and leaves the merged model at most 1.3
points below the trees' goal (0.629, 0.672, 0.650 against 0.642, 0.660, 0.659;
``tests/core/test_marginals_federation.py``). One bin's class counts are bounded only by items 1 and 5 below (``-m_p`` per cell, ``x-`` over
the class) and by the column above: within a feature a forged party may move its class's mass from the bins where
the class is common to those where it is rare. No rule read from the releases can tell a few such cells from an
honest release when ``m_p`` is larger than the parties' per-bin counts, since an honest cell's own noise reaches
it: the wall robot above has ``m_p = 288`` against about 40 rows per bin and class at a party. There (seeds 0-2;
``tests/core/test_marginals_federation.py``), a release that keeps its class totals and sets the majority class's
two densest bins of every feature to ``-m_p`` cost the model 15-20 points before item 5 (accuracy 0.52, 0.45,
0.53 against 0.69-0.72 honest, goals 0.64-0.66) and now at most 3.2 points below the goal (0.709, 0.628, 0.735);
spending the whole of ``x-`` on the class's densest cells over all features at most 2.7 points (0.681, 0.633,
0.764); a release whose cells alternate between ``2**31 - 1`` and ``-(2**31 - 1)``, which needs no knowledge of the
data, stays within 0.3 points of the goal (0.643, 0.657, 0.717; review rev-eval E6, 2.7-4.5 points in its own
setting). The bound states the class totals, the negative mass and the columns, not every bin's class shares.

The price, as for the trees: a party that alone (or nearly alone) holds a class under strong label skew has its
class-``k`` mass capped at twice the next party's; so may a party whose ε is much smaller than the others', whose
class masses carry more noise (five parties, one at ε = 0.1 and the others at 0.3-5: the cap changed the sum in 16
of 150 federations with ``f = 1``, 22 with ``f = 2``; review rev-s60 O1).  When no cap binds (honest parts of similar sizes) and no floor
or ceiling read from one release binds the bounded sum is the plain sum. By the union bound that fails for an
honest release with probability below ``exp(-12) / (1 + a)`` per cell (item 1: about 3.7e-4 over the 120 cells of
one class on the wall robot's shapes, the dominant term), ``exp(-12)`` per class (items 3 and 5) and the columns'
bounds of items 2 and 6; item 1 then moves only the cell below its floor, up to it: the skewed and IID federations of
``benchmarks/bench_colluding_parties.py`` (diabetes, wall robot, bank; 10 seeds) give the same figures with items 5-6
as without.
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
    "negative_mass_ceiling",
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
    return _negative_cells_scaled(hs, keep)


def _negative_cells_scaled(hs: list[np.ndarray], keep: np.ndarray) -> list[np.ndarray]:
    """``hs`` with class ``k``'s negative cells, in every histogram, multiplied by ``keep[k]`` in [0, 1] and
    rounded to integers."""
    return [np.where(h < 0, np.rint(h * keep), h).astype(np.int64) for h in hs]


def negative_mass_ceiling(marginals: NoisyMarginals) -> float:
    """``x-``: the largest negative mass (the sum over all features of one class's negative parts ``max(0, -h)``)
    an honest release plausibly holds (module docstring, item 5); ``t`` and the grid from public parameters only.

    An honest cell is ``n + Z``, ``n >= 0`` a count and ``Z`` discrete Laplace of scale ``t``, so its negative part
    is at most ``max(0, -Z)``: 0 with probability ``1 / (1 + a)`` and ``j >= 1`` with probability ``(1 - a) a**j /
    (1 + a)``, ``a = exp(-1 / t)``, whose moment generating function is ``M(lam) = 1 / (1 + a) + (1 - a) a e**lam
    / ((1 + a) (1 - a e**lam))`` for ``lam < 1 / t``.  For the ``N = sum_j n_codes[j]`` cells of one class,
    Chernoff gives ``P(sum >= x) <= exp(N log M(lam) - lam x)`` for every such ``lam``: ``x-`` is the smallest
    ``(N log M(lam) + L) / lam`` on a fixed grid of ``lam``, ``L = NOISE_MARGIN_SCALES``, so an honest class
    exceeds it with probability below ``exp(-L)`` (any ``lam`` gives a valid bound; the grid only decides how
    tight).
    """
    t, n = marginals.noise_scale, sum(marginals.n_codes)
    a = math.exp(-1.0 / t)
    lam = np.linspace(0.005, 0.995, 199) / t  # a e**lam < 1 on the whole grid
    grow = a * np.exp(lam)
    log_m = np.log(1.0 / (1.0 + a) + (1.0 - a) * grow / ((1.0 + a) * (1.0 - grow)))
    return float(np.min((n * log_m + NOISE_MARGIN_SCALES) / lam))


def _negative_mass_bounded(hs: list[np.ndarray], marginals: NoisyMarginals) -> list[np.ndarray]:
    """``hs`` with every class whose negative mass exceeds :func:`negative_mass_ceiling` brought down to it by
    scaling that class's negative cells, in every feature, by one factor in [0, 1) (item 5)."""
    negative = -np.sum([np.minimum(h, 0).sum(axis=0) for h in hs], axis=0)  # (K,), >= 0
    ceiling = negative_mass_ceiling(marginals)
    if not (negative > ceiling).any():
        return hs
    return _negative_cells_scaled(hs, np.where(negative > ceiling, ceiling / np.maximum(negative, 1.0), 1.0))


def _columns_consistent(hs: list[np.ndarray], marginals: NoisyMarginals) -> list[np.ndarray]:
    """``hs`` with every class column above its plausible ceiling (item 6) brought down to it by scaling the
    column's positive cells by one factor in (0, 1): the ceiling of feature ``j``'s class-``k`` column is the
    median over features of the class's column sums plus ``B_j + max_i B_i``, ``B_j = -column_floor(n_codes[j])``
    (the column noise's 12 standard deviations, either side)."""
    sums = np.array([h.sum(axis=0) for h in hs], dtype=np.float64)  # (d, K)
    margin = np.array([-column_floor(marginals, h.shape[0]) for h in hs])  # (d,)
    ceiling = np.median(sums, axis=0)[None, :] + margin[:, None] + margin.max()
    over = sums > ceiling
    if not over.any():
        return hs
    out = []
    for j, h in enumerate(hs):
        if not over[j].any():
            out.append(h)
            continue
        positive, negative = np.maximum(h, 0).sum(axis=0), np.minimum(h, 0).sum(axis=0)
        keep = np.where(over[j], (ceiling[j] - negative) / np.where(over[j], positive, 1.0), 1.0)
        out.append(np.where(h > 0, np.rint(h * keep), h).astype(np.int64))
    return out


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


def _floors_below(marginals: NoisyMarginals) -> list[np.ndarray]:
    """``marginals``' histograms after items 1, 5 and 2: every cell at least :func:`cell_floor`, every class's
    negative mass at most :func:`negative_mass_ceiling`, every class column at least :func:`column_floor`."""
    cells = [np.maximum(h, cell_floor(marginals)) for h in marginals.counts]
    cells = _negative_mass_bounded(cells, marginals)
    return [_negative_cells_raised([h], column_floor(marginals, h.shape[0]))[0] for h in cells]


def floored_masses(parts: Sequence[NoisyMarginals]) -> tuple[list[list[np.ndarray]], np.ndarray]:
    """Each part's histograms bounded by its noise margins (items 1, 5, 2, 6, 3), a ``(P, d)`` list of int64 arrays,
    and each part's class masses floored at 0, shape ``(P, K)``: the weights the mass cap (item 4) reads.

    Privacy cost: none (post-processing of released histograms and public parameters).
    """
    floored = [_mass_floored(_columns_consistent(_floors_below(m), m), m) for m in parts]
    masses = np.array([np.maximum(np.mean([h.sum(axis=0) for h in hs], axis=0), 0.0) for hs in floored])
    return floored, masses


def bounded_marginals_sum(parts: Sequence[NoisyMarginals], tolerated: int | None = None) -> NoisyMarginals:
    """The parties' histograms, each bounded (module docstring, items 1-6), summed cell by cell.

    Parameters
    ----------
    parts : sequence of NoisyMarginals
        One per party, on one grid (equal ``n_codes``), one class set and one relation.
    tolerated : int >= 0, default :data:`TOLERATED_PARTIES`
        ``f``: the mass cap (item 4) applies with ``len(parts) >= 2 f + 1``, against as many hostile parties as
        the parts can bound below that (:func:`~edprf_core._leaf_distribution.tolerated_among`); the floors and
        ceilings read from each release alone (items 1-3, 5, 6) always.

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
