"""Where bounded influence cuts a party's say: the coordinator's account of item 5's price on its own run.

Bounded influence (:mod:`edprf_core._leaf_distribution`, item 5; :mod:`edprf_core._marginals_merge`) caps each
party's class-``k`` weight at twice the ``(f+1)``-th largest party's (once when its claimed size is implausible):
one forged release cannot take the model.  The price falls on an honest party that alone, or nearly alone, holds
a class (strong label skew): its weight on that class is cut to twice the next party's, and when every party but
one sees almost none of a class, the model can no longer learn that class from the one that does.  Measured
(``benchmarks/results/bounded_influence_cap.md``): bank marketing, 5 parties under Dirichlet 0.1 label skew, 5 of
30 federations predicted the minority class for every row.  A model's evaluation then shows the collapse;
:func:`influence_cuts` says why, party by party and class by class.

Each party's class mass is what its release claims: its trees' released leaf counts summed, plus its marginals
part's class totals (the mean over features of its histograms' class columns, at least 0).  The cap is the rule's
own (:func:`capped_part_weights`) applied to those masses; the trees and the marginals apply it to their parts of
the mass separately, so the figures are those of the release as a whole, to be read as "about".

Privacy: post-processing of released counts and public parameters; no ε.  Nothing here changes a model.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ._forest import DPForest
from ._leaf_distribution import TOLERATED_PARTIES, capped_part_weights, released_class_totals

__all__ = ["CUT_REPORT_SHARE", "InfluenceCut", "influence_cuts"]

CUT_REPORT_SHARE = 0.5
"""A cut is reported when the rule counts less than this share of what a party's release claims for a class."""

_SMALLEST_REPORTED_MASS = 10.0
"""Claims below this many rows are not reported (the noise of one release is of that order)."""


@dataclass(frozen=True)
class InfluenceCut:
    """A party whose release claims ``claimed`` rows of class ``label``, of which the rule counts ``counted``."""

    party: str
    label: object
    claimed: float
    counted: float


def _class_masses(forest: DPForest) -> NDArray[np.float64]:
    """What one party's release claims per class: its trees' leaf counts plus its marginals' class totals."""
    n_classes = forest.schema.n_classes
    mass = released_class_totals(forest.trees, n_classes).sum(axis=0)
    if forest.marginals is not None:
        columns = [np.asarray(h, dtype=np.float64).sum(axis=0) for h in forest.marginals.counts]
        mass = mass + np.maximum(np.mean(columns, axis=0), 0.0)
    return np.maximum(mass, 0.0)


def influence_cuts(
    forests: Sequence[DPForest], parties: Sequence[str], tolerated: int | None = None
) -> list[InfluenceCut]:
    """The (party, class) pairs whose claimed mass bounded influence counts at less than :data:`CUT_REPORT_SHARE`.

    Parameters
    ----------
    forests : sequence of DPForest
        The parties' released forests, as merged (one per party).
    parties : sequence of str
        Their names, in the same order.
    tolerated : int >= 0, default :data:`TOLERATED_PARTIES`
        ``f`` of item 5; the cap applies from ``2 f + 1`` parties on (fewer: nothing is cut).

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
    if f <= 0 or len(forests) < 2 * f + 1:
        return []
    masses = np.array([_class_masses(forest) for forest in forests])
    counted = capped_part_weights(masses, f)
    classes = forests[0].schema.classes
    cut = (masses >= _SMALLEST_REPORTED_MASS) & (counted < CUT_REPORT_SHARE * masses)
    found = [
        InfluenceCut(parties[j], classes[k], float(masses[j, k]), float(counted[j, k])) for j, k in np.argwhere(cut)
    ]
    return sorted(found, key=lambda c: -c.claimed)
