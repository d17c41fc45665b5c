"""The marginals part across parties: summed histograms, their noise scale, one grid, and bounded influence.

``merge_forests`` sums the parties' histograms after bounding each (edprf_core/_marginals_merge.py): the
tests check the sum and its noise scale by hand, the refusals, how parts without marginals combine, that
one forged release (any attack of ``tests/forged_releases.MARGINALS_ATTACKS``) does not take over the
global model's predictions on honest rows, and that an honest federation is unchanged by the bound.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from edprf_core import EDPRFClassifier, SchemaError, load_embedded, merge_forests
from edprf_core.encoding import encode_labels
from edprf_core.marginals import (
    NOISE_MARGIN_SCALES,
    RELEASE_RANGE,
    NoisyMarginals,
    bounded_marginals_sum,
    cell_floor,
    column_floor,
    effective_epsilon,
)
from tests.forged_releases import MARGINALS_ATTACKS, forge_marginals
from tests.synthetic import make_data, make_schema

N_HONEST = 4


def _fit(schema, X, y, seed, **kw):
    params = {"epsilon": 1.0, "n_trees": 2, "max_depth": 4, "n_bins": 10, "marginals_share": 0.5}
    params |= {"marginals_bins": 5} | kw
    return EDPRFClassifier(schema, random_state=seed, **params).fit(X, y).forest_


def test_the_sum_is_cell_by_cell_at_the_effective_epsilon():
    schema = make_schema()
    forests = [_fit(schema, *make_data(schema, 600, i), i, epsilon=e) for i, e in enumerate((0.5, 1.0))]
    merged = merge_forests(forests, labels=["a", "b"])
    for j in range(schema.n_features):
        np.testing.assert_array_equal(
            merged.marginals.counts[j], forests[0].marginals.counts[j] + forests[1].marginals.counts[j]
        )
    # variance of the sum = sum of the variances: t_sum**2 = t_a**2 + t_b**2 (what marginal_evidence reads)
    t = [f.marginals.noise_scale for f in forests]
    assert math.isclose(merged.marginals.noise_scale, math.hypot(*t))
    assert math.isclose(merged.marginals.epsilon, 1 / math.sqrt(1 / 0.5**2 + 1 / 1.0**2))
    assert math.isclose(effective_epsilon([1.0] * 4), 0.5)
    assert merged.marginals_share == 0.5


def test_differing_grids_are_refused_and_parts_without_marginals_add_trees_only():
    schema = make_schema()
    a = _fit(schema, *make_data(schema, 500, 0), 0)
    b = _fit(schema, *make_data(schema, 500, 1), 1, marginals_bins=7)
    with pytest.raises(SchemaError, match="marginals grids expected one"):
        merge_forests([a, b], labels=["a", "b"])
    trees_only = _fit(schema, *make_data(schema, 500, 2), 2, marginals_share=0.0)
    merged = merge_forests([a, trees_only], labels=["a", "t"])
    assert merged.n_trees == 4 and merged.marginals_share == 0.25  # the mean of 0.5 and 0
    for j in range(schema.n_features):
        np.testing.assert_array_equal(merged.marginals.counts[j], a.marginals.counts[j])
    assert merged.marginals.epsilon == a.marginals.epsilon
    assert merge_forests([trees_only, trees_only], labels=["x", "y"]).marginals is None


def test_the_floor_and_the_cap_by_hand():
    d, k = 2, 2

    def part(value: int, eps: float = 1.0) -> NoisyMarginals:
        return NoisyMarginals(tuple(np.full((3, k), value, dtype=np.int64) for _ in range(d)), eps, "add-remove", k)

    honest = [part(10), part(12), part(14)]
    assert cell_floor(honest[0]) == -NOISE_MARGIN_SCALES * d  # t = 1 * d / 1
    low, high = RELEASE_RANGE
    erased = NoisyMarginals(tuple(np.array([[low, 10]] * 3, dtype=np.int64) for _ in range(d)), 1.0, "add-remove", k)
    got = bounded_marginals_sum([*honest, erased])
    # class 0: the forged -2**31 cells count as the cell floor, -24 each, then the column (sum -72) is raised to
    # its floor -12 * 2 * sqrt(2 * 3) = -58.8 (each cell x 0.817: -19.6, rounded -20); class 1 as sent
    assert column_floor(honest[0], 3) == pytest.approx(-12 * 2 * np.sqrt(6))
    np.testing.assert_array_equal(got.counts[0], np.array([[36 - 20, 36 + 10]] * 3))
    flooded = NoisyMarginals(tuple(np.full((3, k), high, dtype=np.int64) for _ in range(d)), 1.0, "add-remove", k)
    got = bounded_marginals_sum([*honest, flooded])
    # implausible size: each class mass capped at the 2nd largest, the largest honest one (42: 14 per cell)
    np.testing.assert_array_equal(got.counts[0], np.full((3, k), 36 + 14))
    # two parts: nothing tells the forged one from the honest one; only the floor applies
    assert bounded_marginals_sum([honest[0], flooded]).counts[0].min() == high
    with pytest.raises(ValueError, match="one grid for every party"):
        bounded_marginals_sum([part(1), NoisyMarginals((np.zeros((4, k), dtype=np.int64),) * d, 1.0, "add-remove", k)])


@pytest.fixture(scope="module")
def bank():
    """Bank marketing (two classes), 4 honest IID parties and a hostile party's own forest, seeded."""
    X, y, schema = load_embedded("bank_marketing")
    order = np.random.default_rng(0).permutation(len(X))[:20000]
    test, train = order[:4000], order[4000:]
    shares = np.array_split(train, N_HONEST + 1)
    forests = [_fit(schema, X.iloc[rows], y.iloc[rows], 200 + i, marginals_share=0.75) for i, rows in enumerate(shares)]
    return forests[:N_HONEST], forests[N_HONEST], X.iloc[test], encode_labels(y.iloc[test], schema)


def _accuracy(forest, X, truth) -> float:
    return float(np.mean(np.argmax(forest.predict_proba(X), axis=1) == truth))


@pytest.mark.parametrize("attack", MARGINALS_ATTACKS)
def test_one_forged_marginals_release_does_not_take_over_the_model(bank, attack):
    honest, own, X_test, truth = bank
    labels = [f"p{i}" for i in range(N_HONEST)]
    forged = forge_marginals(attack, own)
    assert forged.parts == own.parts and forged.trees is own.trees  # conforms: only the histograms lie
    merged = merge_forests([*honest, forged], labels=[*labels, "mallory"])
    honest_model = merge_forests(honest, labels=labels)
    # the goal of the trees' bound (tests/core/test_bounded_influence.py): no worse than losing one honest party
    acc_honest = _accuracy(honest_model, X_test, truth)
    acc_drop = _accuracy(merge_forests(honest[1:], labels=labels[1:]), X_test, truth)
    goal = acc_honest - max(0.0, acc_honest - acc_drop) - 0.02
    assert _accuracy(merged, X_test, truth) >= goal, attack
    # the marginals' own predictions too (the part the attack aims at), against the same goal
    m_honest = np.mean(np.argmax(honest_model.marginals_proba(X_test), axis=1) == truth)
    m_forged = np.mean(np.argmax(merged.marginals_proba(X_test), axis=1) == truth)
    assert m_forged >= m_honest - 0.02, attack
    # the bound's own statement: the forged party holds at most 2/3 of any class's summed mass
    sums = [h.sum(axis=0) for h in merged.marginals.counts]
    honest_sums = [h.sum(axis=0) for h in honest_model.marginals.counts]
    assert all(np.all(s <= 3 * hs + 1) for s, hs in zip(sums, honest_sums))


def test_without_the_bound_the_forged_release_takes_the_model(bank):
    honest, own, X_test, truth = bank
    forged = forge_marginals("marginals-rarest-max", own)
    unbounded = bounded_marginals_sum([f.marginals for f in [*honest, forged]], tolerated=0)
    merged = merge_forests([*honest, forged], labels=["a", "b", "c", "d", "mallory"])
    taken = replace(merged, marginals=unbounded)
    rarest = int(np.argmin(np.bincount(truth, minlength=2)))
    assert np.mean(np.argmax(taken.marginals_proba(X_test), axis=1) == rarest) > 0.95
    assert np.mean(np.argmax(merged.marginals_proba(X_test), axis=1) == rarest) < 0.3


def test_an_honest_federation_is_unchanged_by_the_bound(bank):
    honest, own, _, _ = bank
    parts = [f.marginals for f in [*honest, own]]
    bounded = bounded_marginals_sum(parts)
    plain = bounded_marginals_sum(parts, tolerated=0)
    # IID parties of equal sizes: no cap binds and no honest cell lies 12 noise scales below 0
    for b, p in zip(bounded.counts, plain.counts):
        np.testing.assert_array_equal(b, p)
    for j, p in enumerate(plain.counts):
        np.testing.assert_array_equal(p, sum(m.counts[j] for m in parts))


def test_an_honest_label_skewed_federation_keeps_its_predictions():
    """Dirichlet 0.5 label skew over 5 parties: the cap may bind on a party holding most of a class, but the
    marginals' predictions stay those of the plain sum (the price the trees' rule documents, measured here)."""
    from edprf_fl.simulation import Partitioning, partition_rows

    X, y, schema = load_embedded("bank_marketing")
    order = np.random.default_rng(1).permutation(len(X))[:20000]
    test, train = order[:4000], order[4000:]
    Xtr, ytr = X.iloc[train], y.iloc[train]
    parts = partition_rows(Xtr, ytr, 5, Partitioning("dirichlet", 0.5, ""), np.random.default_rng(1))
    forests = [_fit(schema, Xtr.iloc[rows], ytr.iloc[rows], 300 + i) for i, rows in enumerate(parts)]
    merged = merge_forests(forests, labels=[f"p{i}" for i in range(5)])
    plain = replace(merged, marginals=bounded_marginals_sum([f.marginals for f in forests], tolerated=0))
    bounded_pred = np.argmax(merged.marginals_proba(X.iloc[test]), axis=1)
    plain_pred = np.argmax(plain.marginals_proba(X.iloc[test]), axis=1)
    assert np.mean(bounded_pred == plain_pred) > 0.97
