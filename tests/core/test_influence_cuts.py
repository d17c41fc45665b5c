"""Where the merge's bounded influence cuts a party's say (edprf_core.forest.influence_cuts).

Bank marketing ("yes" about 12 % of rows) split among five parties as under strong label skew: one holds every
"yes" row used here, four hold only "no" rows.  The holder's weight on "yes" is more than twice the next party's
(the others' "yes" weights are their noise), so the merge counts at most twice that, in the trees and in the
marginals alike; the report gives the merge's own weights.  Split IID, no cap binds that far.
"""

from __future__ import annotations

import numpy as np
import pytest

from edprf_core import EDPRFClassifier, load_embedded, merge_forests
from edprf_core._leaf_distribution import capped_part_weights
from edprf_core.forest import CUT_REPORT_SHARE, influence_cuts


def _forests(parts, X, y, schema, **kw):
    return [
        EDPRFClassifier(schema, epsilon=1.0, random_state=i, **kw).fit(X.iloc[rows], y.iloc[rows]).forest_
        for i, rows in enumerate(parts)
    ]


@pytest.fixture(scope="module")
def bank():
    return load_embedded("bank_marketing")


def _skewed(bank, **kw):
    X, y, schema = bank
    rng = np.random.default_rng(0)
    no, yes = rng.permutation(np.flatnonzero(y == "no")), rng.permutation(np.flatnonzero(y == "yes"))
    parts = [np.r_[yes[:4000], no[:2000]], *np.array_split(no[2000:10000], 4)]
    names = ["holder", "a", "b", "c", "d"]
    forests = _forests(parts, X, y, schema, n_trees=5, max_depth=8, n_bins=10, residual_pass=False, **kw)
    return forests, names, merge_forests(forests, labels=names)


def test_the_trees_cut_is_the_merge_s_own(bank):
    """Trees only: the holder's "yes" weight is cut to twice the next party's, exactly the pooling's cap."""
    forests, names, merged = _skewed(bank, marginals_share=0.0)
    cuts = influence_cuts(forests, names)
    assert [(c.party, c.part, c.label) for c in cuts] == [("holder", "trees", "yes")]
    _, weights = merged._pooling_terms("log-linear", True)
    yes = merged.schema.classes.index("yes")
    assert cuts[0].claimed == pytest.approx(weights[0, yes])  # about its 4,000 "yes" rows
    assert cuts[0].claimed == pytest.approx(4000, rel=0.1)
    assert cuts[0].counted == pytest.approx(capped_part_weights(weights, 1)[0, yes])
    assert cuts[0].counted < CUT_REPORT_SHARE * cuts[0].claimed


def test_the_marginals_cut_is_the_merge_s_own(bank):
    """With the marginals part (90 % of the rows): the others' "yes" masses are their noise, floored at 0, so the
    holder's "yes" mass is counted at twice that, next to nothing; the summed histograms carry what was counted.
    The trees, on 10 % of the rows, see the others' clamped noise as "yes" weight: not cut below half."""
    forests, names, merged = _skewed(bank, marginals_bins=10)
    cuts = influence_cuts(forests, names)
    assert [(c.party, c.part, c.label) for c in cuts] == [("holder", "marginals", "yes")]
    assert cuts[0].claimed == pytest.approx(0.9 * 4000, rel=0.1)
    assert cuts[0].counted < CUT_REPORT_SHARE * cuts[0].claimed
    yes = merged.schema.classes.index("yes")
    summed = np.mean([h.sum(axis=0) for h in merged.marginals.counts], axis=0)[yes]
    assert summed < 2 * cuts[0].counted + 0.05 * cuts[0].claimed  # the holder's counted mass and the others' noise


def test_iid_parties_and_small_federations_report_nothing(bank):
    X, y, schema = bank
    parts = np.array_split(np.random.default_rng(1).permutation(len(X)), 5)
    forests = _forests(parts, X, y, schema, n_trees=1, max_depth=4)
    assert influence_cuts(forests, list("abcde")) == []
    assert influence_cuts(forests[:2], list("ab")) == []  # two parts: nothing tells a forged one apart, no cap
    assert influence_cuts(forests, list("abcde"), tolerated=0) == []
    with pytest.raises(ValueError, match="expected one name per forest"):
        influence_cuts(forests, list("abc"))


def test_label_trees_pool_by_votes_and_report_no_trees_cut(bank):
    X, y, schema = bank
    rng = np.random.default_rng(2)
    no, yes = rng.permutation(np.flatnonzero(y == "no")), rng.permutation(np.flatnonzero(y == "yes"))
    parts = [np.r_[yes[:4000], no[:2000]], *np.array_split(no[2000:10000], 4)]
    forests = _forests(parts, X, y, schema, n_trees=2, max_depth=4, leaf="label", marginals_share=0.0)
    assert influence_cuts(forests, ["holder", "a", "b", "c", "d"]) == []
