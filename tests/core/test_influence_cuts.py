"""Where the merge's bounded influence cuts a party's say (edprf_core.forest.influence_cuts).

Bank marketing ("yes" about 12 % of rows) split among five parties: one holds only "no" rows, two only "yes"
rows, as under strong label skew.  The "no" party's claim on its class is more than twice the next party's, so
the rule counts at most twice that; the coordinator reports it.  Split IID, no cap binds that far.
"""

from __future__ import annotations

import numpy as np
import pytest

from edprf_core import EDPRFClassifier, load_embedded
from edprf_core.forest import CUT_REPORT_SHARE, influence_cuts


def _forests(parts, X, y, schema):
    return [
        EDPRFClassifier(schema, epsilon=1.0, n_trees=1, max_depth=4, random_state=i)
        .fit(X.iloc[rows], y.iloc[rows])
        .forest_
        for i, rows in enumerate(parts)
    ]


@pytest.fixture(scope="module")
def bank():
    return load_embedded("bank_marketing")


def test_a_party_alone_holding_a_class_is_reported(bank):
    X, y, schema = bank
    rng = np.random.default_rng(0)
    no, yes = rng.permutation(np.flatnonzero(y == "no")), rng.permutation(np.flatnonzero(y == "yes"))
    parts = [no[:20000], yes[:2000], yes[2000:4000], np.r_[no[20000:20300], yes[4000:4050]], no[20300:20600]]
    cuts = influence_cuts(_forests(parts, X, y, schema), ["big", "yes-a", "yes-b", "mixed", "small"])
    assert [(c.party, c.label) for c in cuts] == [("big", "no")]
    # the claim is about its 20,000 rows (noisy counts); counted: at most twice the next party's "no" mass, 300
    # rows plus the noise of its released counts (within 20 %)
    assert cuts[0].claimed == pytest.approx(20000, rel=0.05)
    assert cuts[0].counted < CUT_REPORT_SHARE * cuts[0].claimed and cuts[0].counted < 2 * 360


def test_iid_parties_and_small_federations_report_nothing(bank):
    X, y, schema = bank
    parts = np.array_split(np.random.default_rng(1).permutation(len(X)), 5)
    forests = _forests(parts, X, y, schema)
    assert influence_cuts(forests, list("abcde")) == []
    assert influence_cuts(forests[:2], list("ab")) == []  # two parts: nothing tells a forged one apart, no cap
    assert influence_cuts(forests, list("abcde"), tolerated=0) == []
    with pytest.raises(ValueError, match="expected one name per forest"):
        influence_cuts(forests, list("abc"))
