"""Leaves that release DP class counts, the probabilities built from them, and the automatic shape."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from edprf_core import EDPRFClassifier
from edprf_core._depth_rule import AUTO_TREE_CAP, MIN_COUNT_TREE_DEPTH, ROWS_PER_COUNT_TREE
from edprf_core.forest import ForestArrays, TreeStructureError
from edprf_core.prediction import leaf_distributions
from edprf_core.shape import public_bins, public_shape
from tests.synthetic import make_data, make_schema


def _stump_data(n_per_leaf: int) -> tuple[pd.DataFrame, pd.Series, object]:
    """x0 in {1, 9} decides the class: a depth-1 tree on it has two leaves of known counts."""
    schema = make_schema(n_continuous=1, n_categorical=0)
    x = np.r_[np.full(n_per_leaf, 1.0), np.full(n_per_leaf, 9.0)]
    y = np.r_[
        np.where(np.arange(n_per_leaf) < 0.8 * n_per_leaf, "k0", "k1"),
        np.where(np.arange(n_per_leaf) < 0.3 * n_per_leaf, "k0", "k1"),
    ]
    return pd.DataFrame({"x0": x}), pd.Series(y), schema


def _fit_stump(seed: int, epsilon: float, n_per_leaf: int = 1000):
    X, y, schema = _stump_data(n_per_leaf)
    return EDPRFClassifier(
        schema, epsilon=epsilon, n_trees=1, max_depth=1, n_bins=2, leaf="counts", random_state=seed, marginals_share=0.0
    ).fit(X, y)


def test_leaves_carry_counts_and_split_nodes_none():
    clf = _fit_stump(0, epsilon=1e4)  # noise scale 1e-4: the counts are the true ones
    t = clf.forest_.trees
    assert t.leaf_counts.shape == (3, 2)
    assert t.leaf_counts[0].tolist() == [-1, -1]
    assert sorted(map(tuple, t.leaf_counts[1:].tolist())) == [(300, 700), (800, 200)]
    assert t.has_counts().tolist() == [False, True, True]
    assert np.array_equal(t.leaf_class[1:], np.argmax(t.leaf_counts[1:], axis=1))
    assert clf.privacy_.leaf == "counts" and "leaf class counts with discrete Laplace noise" in clf.forest_.guarantee()


@pytest.mark.slow
def test_leaf_noise_has_the_discrete_laplace_variance_of_the_leaf_budget():
    """Over 300 seeds, count - truth has variance 2 e^-a / (1 - e^-a)^2 with a = eps_leaf (sensitivity 1)."""
    eps = 1.0
    diffs = []
    for seed in range(300):
        clf = _fit_stump(seed, eps)
        t = clf.forest_.trees
        truth = np.array([[800, 200], [300, 700]]) if t.split[0] == 1 else None
        assert truth is not None  # with 2 bins the only split is edge 1
        diffs.append(t.leaf_counts[1:] - truth)
    eps_leaf = clf.privacy_.layer_epsilons()[-1]
    expected = 2 * math.exp(-eps_leaf) / (1 - math.exp(-eps_leaf)) ** 2
    d = np.concatenate(diffs).ravel()
    assert abs(d.mean()) < 4 * math.sqrt(expected / d.size)
    # sample variance of 1200 draws: relative standard error about sqrt(2 / n) * sqrt(kurtosis factor) < 10 %
    assert 0.75 * expected < d.var() < 1.25 * expected


def test_distributions_are_consistent_and_shrink_small_leaves():
    # one tree: root -> 2 leaves with counts (90, 10) and (0, 2)
    trees = ForestArrays(
        tree_offsets=np.array([0, 3]),
        feature=np.array([0, -1, -1], dtype=np.int32),
        split=np.array([1, -1, -1], dtype=np.int32),
        first_child=np.array([1, -1, -1], dtype=np.int32),
        leaf_class=np.array([-1, 0, 1], dtype=np.int32),
        leaf_counts=np.array([[-1, -1], [90, 10], [0, 2]], dtype=np.int64),
    )
    raw = leaf_distributions(trees, 2, np.array([0.0]))
    assert np.allclose(raw[1], [0.9, 0.1]) and np.allclose(raw[2], [0.0, 1.0])
    assert np.allclose(raw[0], [90 / 102, 12 / 102])  # the root is the sum of its leaves
    shrunk = leaf_distributions(trees, 2, np.array([10.0]))
    root = (np.array([90, 12]) + 10 * 0.5) / 112
    assert np.allclose(shrunk[0], root)
    assert np.allclose(shrunk[2], (np.array([0, 2]) + 10 * root) / 12)  # a 2-row leaf moves most of the way
    assert abs(shrunk[1][0] - 0.9) < abs(shrunk[2][1] - 1.0)  # the big leaf keeps its own distribution
    assert np.allclose(shrunk.sum(axis=1), 1.0)


def test_label_trees_give_one_hot_votes_and_mixed_forests_average():
    schema = make_schema()
    X, y = make_data(schema, 2000, seed=3)
    label = EDPRFClassifier(schema, n_trees=3, max_depth=3, leaf="label", random_state=1, marginals_share=0.0).fit(X, y)
    counts = EDPRFClassifier(schema, n_trees=3, max_depth=3, leaf="counts", random_state=1, marginals_share=0.0).fit(
        X, y
    )
    votes = label.forest_.votes(X) / 3.0
    assert np.allclose(label.predict_proba(X), votes)
    p = counts.predict_proba(X)
    assert np.allclose(p.sum(axis=1), 1.0) and np.all(p >= 0)
    assert np.array_equal(counts.predict(X), counts.classes_[np.argmax(p, axis=1)])
    from edprf_core import merge_forests

    mixed = merge_forests([label.forest_, counts.forest_], labels=["a", "b"])
    mean = counts.forest_.predict_proba(
        X, pooling="mean"
    )  # label trees have no likelihood ratio: mixed forests average
    assert np.allclose(mixed.predict_proba(X), (votes * 3 + mean * 3) / 6)


def test_probabilities_rank_better_than_votes():
    """The point of counts: one tree's votes are 0/1, counts give a usable ranking (AUC).

    On a random split of bank marketing (its file is in time order: the first 16,000 rows put both near chance,
    and the test passed on its three seeds by 0.001, failing on 10 of 15 others: flaky-test audit, stop 44).
    Here 10 seeds at ε = 1 gave a gain of 0.032 on average, every seed above 0 (lowest 0.004)."""
    from sklearn.metrics import roc_auc_score

    from edprf_core import load_embedded
    from edprf_core.encoding import encode_labels

    data, labels, schema = load_embedded("bank_marketing")
    rows = np.random.default_rng(0).permutation(len(data))[:16000]
    X, y, Xt, yt = data.iloc[rows[:8000]], labels.iloc[rows[:8000]], data.iloc[rows[8000:]], labels.iloc[rows[8000:]]
    truth = encode_labels(yt, schema)
    auc = {}
    for leaf in ("label", "counts"):
        auc[leaf] = np.array(
            [
                roc_auc_score(
                    truth,
                    EDPRFClassifier(
                        schema, epsilon=1.0, n_trees=1, max_depth=4, leaf=leaf, random_state=seed, marginals_share=0.0
                    )
                    .fit(X, y)
                    .predict_proba(Xt)[:, 1],
                )
                for seed in range(10)
            ]
        )
    gain = auc["counts"] - auc["label"]
    assert gain.mean() > 0.01 and np.sum(gain > 0) >= 8, gain


def test_default_shape_comes_from_a_charged_dp_count_or_a_declared_size():
    schema = make_schema()
    X, y = make_data(schema, 3000, seed=7)
    clf = EDPRFClassifier(schema, random_state=0, marginals_share=0.0).fit(X, y)
    p = clf.privacy_
    assert (clf.n_bins, p.split_mode, p.leaf) == ("auto", "binary", "counts")
    assert p.n_bins == clf.n_bins_ == public_bins(clf.n_rows_estimate_, 0.95) == 10  # 3,000 rows x 0.95
    assert p.depth_rule == "dp-count" and p.count_epsilon == pytest.approx(0.05)
    assert p.tree_epsilon() == pytest.approx(0.95)  # the trees get the rest (sequential composition)
    assert abs(clf.n_rows_estimate_ - 3000) < 200  # scale 1 / 0.05 = 20
    assert (clf.n_trees_, clf.max_depth_) == public_shape(clf.n_rows_estimate_, 0.95, leaf="counts")
    assert "chosen from a DP count of the rows that spent epsilon = 0.05" in clf.forest_.guarantee()
    assert clf.get_params()["max_depth"] == "auto"  # nothing written back

    declared = EDPRFClassifier(schema, n_rows_public=50_000, random_state=0, marginals_share=0.0).fit(X, y)
    q = declared.privacy_
    assert q.depth_rule == "declared-size" and q.count_epsilon == 0 and declared.n_rows_estimate_ is None
    assert (q.n_trees, q.max_depth) == public_shape(50_000, 1.0, leaf="counts")
    assert "chosen from a row count declared public" in declared.forest_.guarantee()


def test_automatic_bins_shrink_for_small_data():
    assert public_bins(200, 1.0) == 3 and public_bins(3000, 1.0) == 10 and public_bins(11_000, 1.0) == 20
    assert public_bins(11_000, 0.1) == 10  # what matters is rows x epsilon


def test_automatic_trees_grow_with_the_rows():
    assert public_shape(3000, 1.0, leaf="counts")[0] == 1
    assert public_shape(10 * ROWS_PER_COUNT_TREE, 1.0, leaf="counts")[0] == 10
    assert public_shape(1e9, 1.0, leaf="counts")[0] == AUTO_TREE_CAP
    assert public_shape(50_000, 1.0, leaf="label")[0] == 1  # labels: one tree until the depth cap is reached
    assert public_shape(50_000, 1.0, leaf="counts", depth_cap=3)[1] <= 3


def test_count_trees_split_the_rows_only_while_each_tree_stays_deep():
    # Small rows x epsilon: fewer, deeper trees instead of many of depth 3 (census-like size at eps 0.1).
    assert public_shape(36_000, 0.095, leaf="counts") == (2, MIN_COUNT_TREE_DEPTH)
    assert public_shape(11_200, 0.095, leaf="counts")[0] == 1  # no two trees reach depth 5: one tree
    # Larger budgets keep the rows-per-tree rule: each of its trees already reaches the depth.
    assert public_shape(36_000, 0.95, leaf="counts")[0] == 36_000 // ROWS_PER_COUNT_TREE
    for n in (500, 3_000, 12_000, 40_000, 200_000):
        trees = [public_shape(n, eps, leaf="counts") for eps in (0.05, 0.1, 0.5, 1.0, 2.0, 8.0)]
        assert all(t == 1 or d >= MIN_COUNT_TREE_DEPTH for t, d in trees)
        assert [t for t, _ in trees] == sorted(t for t, _ in trees)  # more budget, never fewer trees
        assert all(t <= max(1, n // ROWS_PER_COUNT_TREE) for t, _ in trees)
    # A given depth keeps the rows-per-tree count (the user chose the depth).
    assert public_shape(36_000, 0.095, leaf="counts", max_depth=3)[0] == 36_000 // ROWS_PER_COUNT_TREE


def test_bad_shape_options_are_refused_before_reading_data():
    schema = make_schema()
    for kw, match in (
        ({"max_depth": "deep"}, "max_depth. parameter of EDPRFClassifier must be"),
        ({"n_rows_public": 0}, "n_rows_public"),
        ({"count_epsilon_share": 0.9}, "count_epsilon_share"),
        ({"leaf": "probs"}, "leaf. parameter of EDPRFClassifier must be"),
        ({"max_depth_cap": 31}, "max_depth_cap"),
    ):
        with pytest.raises(ValueError, match=match):
            EDPRFClassifier(schema, **kw, marginals_share=0.0).fit(None, None)


def test_validate_bounds_leaf_counts():
    base = {
        "tree_offsets": np.array([0, 3]),
        "feature": np.array([0, -1, -1], dtype=np.int32),
        "split": np.array([1, -1, -1], dtype=np.int32),
        "first_child": np.array([1, -1, -1], dtype=np.int32),
        "leaf_class": np.array([-1, 0, 1], dtype=np.int32),
    }
    schema = make_schema(n_continuous=1, n_categorical=0)
    from edprf_core.encoding import FeatureGrid

    grid = FeatureGrid.from_schema(schema, 2)
    for counts, match in (
        ([[3, 3], [1, 1], [0, 2]], "split node"),
        ([[-1, -1], [1, -2], [0, 2]], "0..2147483647"),
        ([[-1, -1], [1, 2**31], [0, 2]], "0..2147483647"),
    ):
        with pytest.raises(TreeStructureError, match=match):
            ForestArrays(**base, leaf_counts=np.array(counts, dtype=np.int64)).validate(grid, 2, "binary")


def test_label_shift_factors_leave_one_part_alone_and_correct_skewed_parts():
    from edprf_core import merge_forests
    from edprf_core._leaf_distribution import label_shift_factors

    schema = make_schema()
    X, y = make_data(schema, 4000, seed=11)
    k0 = (y == "k0").to_numpy()
    mostly_k0 = np.r_[np.flatnonzero(k0)[:1500], np.flatnonzero(~k0)[:100]]
    mostly_k1 = np.r_[np.flatnonzero(k0)[1500:1600], np.flatnonzero(~k0)[100:1600]]
    fit = {"epsilon": 1.0, "n_trees": 2, "max_depth": 3, "random_state": 0}
    a = EDPRFClassifier(schema, **fit, marginals_share=0.0).fit(X.iloc[mostly_k0], y.iloc[mostly_k0]).forest_
    b = EDPRFClassifier(schema, **fit, marginals_share=0.0).fit(X.iloc[mostly_k1], y.iloc[mostly_k1]).forest_
    assert np.allclose(label_shift_factors(a.trees, 2, [2]), 1.0)  # one part: nothing to correct
    merged = merge_forests([a, b], labels=["a", "b"])
    f = label_shift_factors(merged.trees, 2, [2, 2])
    assert f[0, 1] > 1 > f[0, 0] and f[2, 0] > 1 > f[2, 1]  # each part is pulled toward the pooled mix
    assert np.allclose(f[0], f[1]) and np.allclose(f[2], f[3])
    p = merged.predict_proba(X)
    assert np.allclose(p.sum(axis=1), 1.0)
    assert not np.allclose(p, merged.predict_proba(X, label_shift=False))


@pytest.mark.slow
def test_label_shift_correction_helps_under_strong_label_skew():
    """Five parties, Dirichlet(0.1) label skew on the wall robot: the correction raises accuracy (10 seeds).

    Groups of 5 seeds gained 0.053 on average (spread 0.036, one group -0.009): 10 seeds and a bound of 0.01
    (5 seeds and 0.03 passed by 0.001: flaky-test audit, stop 44)."""
    from tests.synthetic import skewed_wall_federation

    gain = []
    for seed in range(10):
        merged, Xte, truth = skewed_wall_federation(0.1, seed)
        # the unbounded rule (issue 20): under Dirichlet(0.1) each class sits at about one party, which the
        # bound cannot tell from a hostile party claiming that class (edprf_core/_leaf_distribution.py, item 5)
        acc = [
            np.mean(
                np.argmax(merged.predict_proba(Xte, pooling="mean", label_shift=s, tolerated_parties=0), axis=1)
                == truth
            )
            for s in (True, False)
        ]
        gain.append(acc[0] - acc[1])
    assert np.mean(gain) > 0.01, gain
