"""Two hostile parties acting together against the merge (item 5 with ``f = 2``; review rev-eval, stop 59).

With the default ``tolerated_parties = 1`` the merge compares each party with the second largest, so two colluding
parties, each the other's reference, are not held: on the wall robot they take the model to a few percent accuracy.
A merge asked to tolerate two (``merge_forests(..., tolerated_parties=2)``, a coordinator's ``tolerated-parties``)
reads the third largest instead and holds them to the goal of issue 20; a forest with too few parts bounds as many
as it can (``tolerated_among``).  Fixed seeds; the goal's tolerance is that of ``test_bounded_influence.py``.
"""

from __future__ import annotations

import numpy as np
import pytest

from edprf_core import merge_forests
from edprf_core._leaf_distribution import bounded_influence_parts, bounded_part_mean, tolerated_among
from tests.forged_releases import forge, seeded_parties

pytestmark = pytest.mark.privacy  # invariant 7 against a coalition: in the gate

SEEDS = range(8)
HONEST = 5
ATTACKS = ("rarest-class", "majority-class", "copied-release", "inverted", "one-class-per-tree", "counts-scaled")
TAKEN_BY_TWO = ("rarest-class", "copied-release", "inverted")
"""The attacks that two colluders win against the one-party bound on every seed (accuracy 0.05-0.08 against about
0.7; the majority class's, 0.40 on five seeds of eight)."""


def _accuracy(forest, X, truth, **kw) -> float:
    return float(np.mean(np.argmax(forest.predict_proba(X, **kw), axis=1) == truth))


def _federation(seed: int):
    """Wall robot, 1000 test rows, the rest in 7 IID shares: 5 honest parties and 2 colluders' own forests."""
    return seeded_parties(seed, HONEST + 2, first_state=500)


@pytest.fixture(scope="module")
def shortfalls():
    """Per attack and per ``f`` in (1, 2): the goal of issue 20 less the accuracy with two colluders, per seed.

    Goal: acc(5 honest) - max(0, acc(5 honest) - acc(3 honest)) - 0.02, all pooled with ``f = 2`` (what the
    consortium that asks for it would have without the colluders, less what losing two honest parties costs).
    """
    out = {(attack, f): [] for attack in ATTACKS for f in (1, 2)}
    honest_cost = []
    for seed in SEEDS:
        forests, rows, X_test, truth = _federation(seed)
        honest, labels = forests[:HONEST], [f"p{i}" for i in range(HONEST)]
        all_honest = merge_forests(honest, labels=labels, tolerated_parties=2)
        acc = _accuracy(all_honest, X_test, truth)
        drop = _accuracy(merge_forests(honest[2:], labels=labels[2:], tolerated_parties=2), X_test, truth)
        goal = acc - max(0.0, acc - drop) - 0.02
        honest_cost.append(_accuracy(merge_forests(honest, labels=labels), X_test, truth) - acc)
        for attack in ATTACKS:
            forged = [
                forge(
                    attack,
                    forests[HONEST + k],
                    honest_model=all_honest.predict_proba,
                    own_rows=rows[HONEST + k],
                    other=honest[k],
                )
                for k in range(2)
            ]
            for f in (1, 2):
                merged = merge_forests([*honest, *forged], labels=[*labels, "m0", "m1"], tolerated_parties=f)
                out[(attack, f)].append(goal - _accuracy(merged, X_test, truth))
    return {key: np.array(v) for key, v in out.items()}, np.array(honest_cost)


@pytest.mark.parametrize("attack", ATTACKS)
def test_two_colluders_meet_the_goal_when_the_merge_tolerates_two(shortfalls, attack):
    shortfall = shortfalls[0][(attack, 2)]
    assert shortfall.mean() <= 0.019, (attack, np.round(shortfall, 3))  # GOAL_TOLERANCE of test_bounded_influence


@pytest.mark.parametrize("attack", TAKEN_BY_TWO)
def test_two_colluders_take_the_model_when_the_merge_tolerates_one(shortfalls, attack):
    """What the default does not hold, and why the setting exists (the docs say so)."""
    assert shortfalls[0][(attack, 1)].mean() > 0.25, attack


def test_tolerating_two_costs_iid_federations_little(shortfalls):
    """5 honest IID parties: f = 2 against f = 1 (docs/federation.md: at most 0.3 points with IID parties in
    benchmarks/results/colluding_parties.md, more under label skew)."""
    cost = shortfalls[1]
    assert -0.01 < cost.mean() < 0.03, np.round(cost, 3)


def test_a_merge_records_its_f_and_predicts_with_it():
    forests, _, X_test, _ = _federation(0)
    merged = merge_forests(forests, tolerated_parties=2)
    assert merged.tolerated_parties == 2 and merge_forests(forests).tolerated_parties == 1
    np.testing.assert_array_equal(merged.predict_proba(X_test), merged.predict_proba(X_test, tolerated_parties=2))
    assert not np.array_equal(merged.predict_proba(X_test), merged.predict_proba(X_test, tolerated_parties=1))
    # selective aggregation's per-part pooling of any subset is the merged forest of that subset, with its f
    pooling = merged.part_pooling(X_test)
    for subset in ([0, 1, 2], [0, 2, 3, 5], [1, 2, 3, 4, 6], list(range(7))):
        alone = merge_forests([forests[i] for i in subset], tolerated_parties=2).predict_proba(X_test)
        np.testing.assert_allclose(pooling.pool(subset), alone, rtol=1e-9, atol=1e-12)
    with pytest.raises(ValueError, match="tolerated_parties: expected an integer >= 0"):
        merge_forests(forests, tolerated_parties=-1)


def test_too_few_parts_bound_as_many_parties_as_they_can():
    assert [tolerated_among(n, 2) for n in range(1, 8)] == [0, 0, 1, 1, 2, 2, 2]
    assert [tolerated_among(n, 1) for n in range(1, 5)] == [0, 0, 1, 1]  # the rule from 3 parts on, as before
    assert bounded_influence_parts(1) == 3 and bounded_influence_parts(2) == 5
    # 4 parts asked to tolerate 2: bounded against one (not left unbounded)
    values = np.array([[0.0], [1.0], [2.0], [1e6]])
    weights = np.ones((4, 1))
    assert bounded_part_mean(values, weights, 2)[0] == bounded_part_mean(values, weights, 1)[0] < 10
