"""How DPForest.predict_proba pools trees: log-linear pooling (the default) against the mean."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from edprf_core import EDPRFClassifier, merge_forests
from edprf_core._leaf_distribution import (
    POOLING_EXPONENT,
    POOLINGS,
    _discrete_laplace_positive_part,
    class_share_weights,
    consortium_prior,
    corrected_class_totals,
    log_linear_pool,
)
from edprf_core.encoding import encode_labels
from edprf_core.forest import ForestArrays
from tests.synthetic import make_data, make_schema


def _two_stumps() -> ForestArrays:
    # tree A: root -> leaves (10, 0), (5, 1); tree B: root -> leaves (0, 0), (1, 20)
    feature = np.array([0, -1, -1, 0, -1, -1], dtype=np.int32)
    counts = np.array([[-1, -1], [10, 0], [5, 1], [-1, -1], [0, 0], [1, 20]], dtype=np.int64)
    return ForestArrays(
        tree_offsets=np.array([0, 3, 6]),
        feature=feature,
        split=np.array([1, -1, -1, 1, -1, -1], dtype=np.int32),
        first_child=np.array([1, -1, -1, 1, -1, -1], dtype=np.int32),
        leaf_class=np.array([-1, 0, 0, -1, 1, 1], dtype=np.int32),
        leaf_counts=counts,
    )


def test_positive_part_of_discrete_laplace_matches_the_series():
    for scale in (0.5, 1.0, 4.0, 20.0):
        z = np.arange(1, 20000)
        t = math.exp(-1.0 / scale)
        series = float(np.sum(z * t**z) * (1 - t) / (1 + t))  # sum z P(Z = z), P(z) = (1-t)/(1+t) t^|z|
        assert _discrete_laplace_positive_part(np.array([scale]))[0] == pytest.approx(series, rel=1e-9)
    assert _discrete_laplace_positive_part(np.array([20.0]))[0] == pytest.approx(10.0, rel=0.01)  # ~ scale / 2


def test_class_shares_by_hand():
    trees = _two_stumps()
    e = math.exp(-1.0) / (1 - math.exp(-2.0))  # E[max(0, Z)] at scale 1: 0.4255
    # totals A (15, 1), B (1, 20); each tree has 2 leaves: subtract 2e, floor at 0, add 1
    rows = np.array([[15 - 2 * e + 1, max(1 - 2 * e, 0) + 1], [max(1 - 2 * e, 0) + 1, 20 - 2 * e + 1]])
    expected = rows / rows.sum(axis=0)
    got = class_share_weights(trees, 2, np.array([1.0, 1.0]))
    totals = corrected_class_totals(trees, 2, np.array([1.0, 1.0]))  # what clamping added, removed
    assert np.allclose(totals, [[15 - 2 * e, max(1 - 2 * e, 0)], [max(1 - 2 * e, 0), 20 - 2 * e]])
    assert np.allclose(got, expected)
    assert np.allclose(got.sum(axis=0), 1.0)
    assert got[0, 0] == pytest.approx(15.149 / 16.298, abs=1e-3)
    assert np.allclose(consortium_prior(trees, 2), np.array([16 + 1, 21 + 1]) / 39.0)


def test_log_linear_pool_by_hand():
    prior = np.array([0.5, 0.5])
    ratios = np.array([[math.log(2.0), 0.0]])
    assert np.allclose(log_linear_pool(ratios, prior, 1), [[2 / 3, 1 / 3]])  # 0.5*2 : 0.5*1
    assert np.allclose(log_linear_pool(ratios, prior, 16, exponent=0.25), [[0.8, 0.2]])  # 16^0.25 = 2: 4 : 1
    assert np.allclose(log_linear_pool(ratios, prior, 16, exponent=0.0), [[2 / 3, 1 / 3]])  # geometric mean
    skewed = log_linear_pool(np.zeros((1, 2)), np.array([0.2, 0.8]), 5)
    assert np.allclose(skewed, [[0.2, 0.8]])  # no evidence: the consortium's mix
    big = log_linear_pool(np.array([[800.0, 0.0]]), prior, 1)  # no overflow
    assert np.allclose(big, [[1.0, 0.0]])


def _party(n_k0: int, n_k1: int) -> tuple[pd.DataFrame, pd.Series, object]:
    """x0 in {1, 9}; P(x0 = 1 | k0) = 0.8, P(x0 = 1 | k1) = 0.3 at every party (label skew only)."""
    schema = make_schema(n_continuous=1, n_categorical=0)
    x = np.r_[
        np.full(int(0.8 * n_k0), 1.0),
        np.full(n_k0 - int(0.8 * n_k0), 9.0),
        np.full(int(0.3 * n_k1), 1.0),
        np.full(n_k1 - int(0.3 * n_k1), 9.0),
    ]
    y = np.r_[np.full(n_k0, "k0"), np.full(n_k1, "k1")]
    return pd.DataFrame({"x0": x}), pd.Series(y), schema


def test_merged_stumps_with_opposite_priors_by_hand():
    """Two parties, 1000/200 and 200/1000 rows of k0/k1, noise negligible (epsilon = 1e4): the formula of item 4."""
    forests = []
    for n_k0, n_k1 in ((1000, 200), (200, 1000)):
        X, y, schema = _party(n_k0, n_k1)
        forests.append(
            EDPRFClassifier(schema, epsilon=1e4, n_trees=1, max_depth=1, n_bins=2, random_state=0, marginals_share=0.0)
            .fit(X, y)
            .forest_
        )
    merged = merge_forests(forests, labels=["a", "b"])
    leaf_counts = {"a": np.array([[800, 60], [200, 140]]), "b": np.array([[160, 300], [40, 700]])}
    for f, key in zip(forests, "ab"):
        assert np.array_equal(f.trees.leaf_counts[1:], leaf_counts[key])
    test = pd.DataFrame({"x0": [1.0, 9.0]})
    got = merged.predict_proba(test)
    shares = np.array([[1001, 201], [201, 1001]]) / 1202.0  # (+1 per class; clamping mass ~0 at this epsilon)
    c = 2.0**POOLING_EXPONENT
    for row, leaf in enumerate((0, 1)):
        log_ratio = np.zeros(2)
        for t, key in enumerate("ab"):
            counts = leaf_counts[key]
            p_leaf = counts[leaf] / counts[leaf].sum()
            p_root = counts.sum(axis=0) / counts.sum()
            log_ratio += shares[t] * np.log(p_leaf / p_root)
        score = np.log([0.5, 0.5]) + c * log_ratio  # consortium: 1200 / 1200
        expected = np.exp(score) / np.exp(score).sum()
        assert np.allclose(got[row], expected, atol=2e-3)
    # the parties' opposite mixes cancel: k0 wins at x0 = 1 (true P = 0.73) and loses at x0 = 9 (true P = 0.22)
    assert got[0, 0] > 0.6 and got[1, 0] < 0.3
    # the mean without correction follows the parties' priors instead of the evidence at x0 = 9 ... and is flatter
    mean = merged.predict_proba(test, pooling="mean", label_shift=False)
    assert abs(mean[0, 0] - 0.5) < abs(got[0, 0] - 0.5)


def test_single_tree_without_correction_equals_its_distribution():
    """One tree, ratios against the consortium's mix: pi * (p_t / pi)^1 = p_t, the mean's answer."""
    schema = make_schema()
    X, y = make_data(schema, 2000, seed=5)
    forest = (
        EDPRFClassifier(schema, epsilon=1.0, n_trees=1, max_depth=3, random_state=2, marginals_share=0.0)
        .fit(X, y)
        .forest_
    )
    assert np.allclose(forest.predict_proba(X, label_shift=False), forest.predict_proba(X, pooling="mean"))
    p = forest.predict_proba(X)
    assert np.allclose(p.sum(axis=1), 1.0) and np.all(p > 0)


def test_pooling_is_validated_and_mixed_forests_use_the_mean():
    schema = make_schema()
    X, y = make_data(schema, 2000, seed=3)
    counts = (
        EDPRFClassifier(schema, n_trees=3, max_depth=3, leaf="counts", random_state=1, marginals_share=0.0)
        .fit(X, y)
        .forest_
    )
    label = (
        EDPRFClassifier(schema, n_trees=3, max_depth=3, leaf="label", random_state=1, marginals_share=0.0)
        .fit(X, y)
        .forest_
    )
    with pytest.raises(ValueError, match="pooling"):
        counts.predict_proba(X, pooling="median")
    mixed = merge_forests([label, counts], labels=["a", "b"])
    assert np.allclose(mixed.predict_proba(X), mixed.predict_proba(X, pooling="mean"))
    assert np.allclose(label.predict_proba(X, pooling="log-linear"), label.votes(X) / 3.0)
    assert not np.allclose(counts.predict_proba(X), counts.predict_proba(X, pooling="mean"))


def test_a_party_without_a_class_has_no_say_on_it():
    """A party that saw only k0 gets a near-zero share of k1 (its k1 counts are clamped noise)."""
    schema = make_schema()
    X, y = make_data(schema, 6000, seed=13)
    k0 = np.flatnonzero((y == "k0").to_numpy())
    only_k0 = (
        EDPRFClassifier(schema, epsilon=1.0, n_trees=1, max_depth=4, random_state=0, marginals_share=0.0)
        .fit(X.iloc[k0[:1500]], y.iloc[k0[:1500]])
        .forest_
    )
    both = (
        EDPRFClassifier(schema, epsilon=1.0, n_trees=1, max_depth=4, random_state=1, marginals_share=0.0)
        .fit(X.iloc[1500:4500], y.iloc[1500:4500])
        .forest_
    )
    merged = merge_forests([only_k0, both], labels=["a", "b"])
    shares = merged._class_shares()
    n_k1_b = int((y.iloc[1500:4500] == "k1").sum())
    # clamped noise of 16 leaves at scale ~5 adds ~40 rows of k1 to party a; the correction removes most of it
    assert shares[0, 1] < 20.0 / n_k1_b
    assert shares[0, 0] > 0.4


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_mirrored_parties_with_opposite_priors_cancel(seed):
    """Two equal parties, 90/10 and 10/90 (20 % label noise), balanced test rows: neither prior wins.

    Under label skew only, each tree's ratio to its own root does not depend
    on its party's mix, and with mirrored parties the class shares are
    symmetric, so on balanced rows about half the predictions are k1 and the
    accuracy approaches the Bayes rate 0.8.
    """
    schema = make_schema()
    X, y = make_data(schema, 12000, seed=100 + seed)
    rng = np.random.default_rng(seed)
    truth_all = encode_labels(y, schema)
    truth_all = np.where(rng.random(truth_all.size) < 0.2, 1 - truth_all, truth_all)
    y = pd.Series(np.asarray(schema.classes, dtype=object)[truth_all])
    k0, k1 = (rng.permutation(np.flatnonzero(truth_all[:9000] == k)) for k in (0, 1))
    party_a = np.r_[k0[:2700], k1[:300]]  # 3,000 rows, 90 % k0
    party_b = np.r_[k0[2700:3000], k1[300:3000]]  # 3,000 rows, 90 % k1
    forests = [
        EDPRFClassifier(schema, epsilon=1.0, n_trees=1, max_depth=4, random_state=10 * seed + i, marginals_share=0.0)
        .fit(X.iloc[rows], y.iloc[rows])
        .forest_
        for i, rows in enumerate((party_a, party_b))
    ]
    merged = merge_forests(forests, labels=["a", "b"])
    test = 9000 + np.r_[np.flatnonzero(truth_all[9000:] == 0)[:1000], np.flatnonzero(truth_all[9000:] == 1)[:1000]]
    pooled = merged.predict_proba(X.iloc[test])
    assert abs(np.mean(np.argmax(pooled, axis=1) == 1) - 0.5) < 0.1
    assert np.mean(np.argmax(pooled, axis=1) == truth_all[test]) > 0.72


def test_log_linear_pooling_beats_the_mean_under_dirichlet_label_skew():
    """Wall robot, 5 parties, Dirichlet(0.5) label skew, 4 seeds: higher accuracy than the corrected mean.

    The benchmark (``bench_federation_cost.py``, 10 seeds) measures +6 points;
    the bound here is +2 points on the mean over 4 fixed seeds.
    """
    from tests.synthetic import skewed_wall_federation

    gains = []
    for seed in range(4):
        merged, Xte, truth = skewed_wall_federation(0.5, seed, max_depth="auto", max_depth_cap=8)
        acc = [np.mean(np.argmax(merged.predict_proba(Xte, pooling=p), axis=1) == truth) for p in POOLINGS]
        gains.append(acc[0] - acc[1])
    assert np.mean(gains) > 0.02


def test_part_pooling_pools_any_subset_of_parts_as_the_merged_forest_of_that_subset():
    """Selective aggregation scores candidate sets with PartPooling: it must be the model that set would make."""
    schema = make_schema()
    X, y = make_data(schema, 1600, seed=4)
    parts = []
    by_label = np.argsort(encode_labels(y, schema), kind="stable")
    for j in range(4):  # label-skewed parties: rows sorted by class, cut into 4 chunks
        rows = by_label[j * 400 : (j + 1) * 400]
        fit = EDPRFClassifier(
            schema, epsilon=1.0, n_trees=1 + j % 2, max_depth=3, n_bins=8, random_state=10 + j, marginals_share=0.0
        ).fit(X.iloc[rows], y.iloc[rows])
        parts.append(fit.forest_)
    X_val, _ = make_data(schema, 300, seed=5)
    merged = merge_forests(parts, labels=[f"p{j}" for j in range(4)])
    terms = merged.part_pooling(X_val)
    assert terms.n_parts == 4 and list(terms.n_trees) == [1, 2, 1, 2]
    np.testing.assert_allclose(terms.pool(range(4)), merged.predict_proba(X_val), rtol=1e-9, atol=1e-12)
    for subset in ([0], [1, 3], [0, 2, 3]):
        alone = merge_forests([parts[j] for j in subset], labels=[f"p{j}" for j in subset])
        np.testing.assert_allclose(
            terms.pool(subset), alone.predict_proba(X_val), rtol=1e-9, atol=1e-12, err_msg=str(subset)
        )
    with pytest.raises(ValueError, match="at least one part"):
        terms.pool([])
    label_fit = EDPRFClassifier(
        schema, epsilon=1.0, n_trees=1, max_depth=2, n_bins=8, leaf="label", random_state=0, marginals_share=0.0
    ).fit(X, y)
    with pytest.raises(ValueError, match="needs leaf counts in every tree"):
        label_fit.forest_.part_pooling(X_val)


def test_the_leaf_bitmask_path_pools_exactly_as_the_routing_table():
    """Predict gathers one precomputed vector per tree and row; both routing paths must gather the same leaves."""
    from dataclasses import replace

    schema = make_schema()
    X, y = make_data(schema, 1200, seed=8)
    parts = [
        EDPRFClassifier(schema, epsilon=1.0, n_trees=2, max_depth=4, n_bins=8, random_state=20 + j, marginals_share=0.0)
        .fit(X.iloc[j * 300 : (j + 1) * 300], y.iloc[j * 300 : (j + 1) * 300])
        .forest_
        for j in range(4)
    ]
    merged = merge_forests(parts, labels=list("abcd"))
    assert merged._leafmask() is not None
    routed = replace(merged, _routing={"leafmask": None})  # forces the level-by-level routing table
    for kw in ({}, {"pooling": "mean"}, {"label_shift": False}, {"tolerated_parties": 0}):
        np.testing.assert_allclose(
            merged.predict_proba(X, **kw), routed.predict_proba(X, **kw), rtol=1e-12, atol=1e-15, err_msg=str(kw)
        )
