"""Where bounded influence cuts a party's say: the coordinator's account of item 5's price on its own run.

Bounded influence (:mod:`edprf_core._leaf_distribution`, item 5; :mod:`edprf_core._marginals_merge`) caps each
party's class-``k`` weight at twice the ``(f+1)``-th largest party's (once when its claimed size is implausible):
one forged release cannot take the model.  The price falls on an honest party that alone, or nearly alone, holds
a class (strong label skew): its weight on that class is cut to twice the next party's, and when every party but
one sees almost none of a class, the model can no longer learn that class from the one that does.  Measured
(``benchmarks/results/bounded_influence_cap.md``): bank marketing, 5 parties under Dirichlet 0.1 label skew, 5 of
30 federations predicted the minority class for every row.  A model's evaluation then shows the collapse;
:func:`influence_cuts` says why, party by party and class by class.

The weights are the merge's own, part by part, each capped by its own rule (:func:`capped_part_weights`):

- the trees' (log-linear pooling, item 4): a party's class-``k`` weight is the sum over its trees of their
  released class totals less the mass that clamping the noise at 0 adds, plus 1 (:func:`class_share_rows`), about
  the number of its tree rows of class ``k``.  A model with a tree that released labels only pools by votes and
  caps no class: no trees' cut is reported then;
- the marginals' (:mod:`edprf_core._marginals_merge`, item 4): a party's class-``k`` mass, the mean over features
  of its floored histograms' class-``k`` columns (items 1-3), about the number of its marginals rows of class ``k``.

Privacy: post-processing of released counts and public parameters; no ε.  Nothing here changes a model.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ._forest import DPForest
from ._leaf_distribution import TOLERATED_PARTIES, capped_part_weights, tolerated_among
from ._marginals_merge import floored_masses

__all__ = ["CUT_REPORT_SHARE", "InfluenceCut", "influence_cuts"]

CUT_REPORT_SHARE = 0.5
"""A cut is reported when the rule counts less than this share of what a party's release claims for a class."""

_SMALLEST_REPORTED_MASS = 10.0
"""Weights below this (about that many rows) are not reported (the noise of one release is of that order)."""


@dataclass(frozen=True)
class InfluenceCut:
    """In ``part`` ("trees" or "marginals"), ``party``'s weight on class ``label`` (about its rows of that class
    there) is ``claimed``, of which the merge counts ``counted``."""

    party: str
    part: str
    label: object
    claimed: float
    counted: float


def _tree_weights(forest: DPForest) -> NDArray[np.float64] | None:
    """One party's class weights in the log-linear pooling, or None when a tree released labels only."""
    if not forest.has_counts or not forest.trees.tree_has_counts().all():
        return None
    return forest.part_class_weights().sum(axis=0)


def _cuts(
    part: str, parties: Sequence[str], weights: NDArray[np.float64], tolerated: int, classes: Sequence[object]
) -> list[InfluenceCut]:
    f = tolerated_among(len(parties), tolerated)
    if f == 0:
        return []
    counted = capped_part_weights(weights, f)
    cut = (weights >= _SMALLEST_REPORTED_MASS) & (counted < CUT_REPORT_SHARE * weights)
    return [
        InfluenceCut(parties[j], part, classes[k], float(weights[j, k]), float(counted[j, k]))
        for j, k in np.argwhere(cut)
    ]


def influence_cuts(
    forests: Sequence[DPForest], parties: Sequence[str], tolerated: int | None = None
) -> list[InfluenceCut]:
    """The (party, part, class) weights that the merge's bounded influence counts at less than
    :data:`CUT_REPORT_SHARE`.

    Parameters
    ----------
    forests : sequence of DPForest
        The parties' released forests, as merged (one per party).
    parties : sequence of str
        Their names, in the same order.
    tolerated : int >= 0, default :data:`TOLERATED_PARTIES`
        ``f`` of item 5, lowered to what the parties can bound (:func:`~edprf_core._leaf_distribution.tolerated_among`:
        from ``2 f + 1`` parts on; with fewer than 3, nothing is cut).

    Returns
    -------
    list of InfluenceCut
        Largest claim first; empty when no cap binds that far (parties of similar sizes and class mixes).

    Notes
    -----
    Privacy cost: none (post-processing of released counts).
    """
    if len(forests) != len(parties):
        raise ValueError(f"parties: expected one name per forest ({len(forests)}), got {len(parties)}")
    f = TOLERATED_PARTIES if tolerated is None else int(tolerated)
    if f <= 0 or not forests:
        return []
    classes = forests[0].schema.classes
    found = []
    trees = [_tree_weights(forest) for forest in forests]
    if all(w is not None for w in trees):  # every tree released counts: log-linear pooling, per-class caps
        found += _cuts("trees", parties, np.array(trees), f, classes)
    with_marginals = [(name, forest) for name, forest in zip(parties, forests) if forest.marginals is not None]
    if with_marginals:
        names = [name for name, _ in with_marginals]
        _, masses = floored_masses([forest.marginals for _, forest in with_marginals])
        found += _cuts("marginals", names, masses, f, classes)
    return sorted(found, key=lambda c: -c.claimed)
