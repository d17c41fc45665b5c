"""Every path spends exactly epsilon; tree shapes do not depend on the data."""

from __future__ import annotations

import pickle
import re

import numpy as np
import pytest

from edprf_core import CategoricalFeature, EDPRFClassifier, LabelSpec, Schema
from edprf_core.research import HarmonicSchedule, LinearSchedule, PaperEDPRFClassifier, UniformSchedule
from tests.synthetic import make_data, make_schema


@pytest.mark.parametrize("schedule", [HarmonicSchedule(), UniformSchedule(), LinearSchedule()])
@pytest.mark.parametrize("n_layers", range(1, 14))
def test_schedule_paths_spend_exactly_epsilon(schedule, n_layers):
    eps = 0.37
    budgets = schedule.layer_budgets(eps, n_layers)
    assert np.all(budgets > 0)
    assert budgets.sum() == pytest.approx(eps, rel=1e-12)
    for leaf_layer in range(1, n_layers + 1):
        assert schedule.path_spend(eps, n_layers, leaf_layer) == pytest.approx(eps, rel=1e-12)


def test_harmonic_schedule_is_formula_9():
    D = 6
    s = sum(1 / j for j in range(1, D + 1))
    expected = [1.0 / s / (D - k + 1) for k in range(1, D + 1)]
    np.testing.assert_allclose(HarmonicSchedule().layer_budgets(1.0, D), expected)


@pytest.mark.parametrize("split_mode", ["binary", "multiway"])
@pytest.mark.parametrize("schedule", ["harmonic", "uniform", "linear"])
@pytest.mark.parametrize("depth", range(1, 13))
def test_fitted_trees_spend_exactly_epsilon_on_every_path(split_mode, schedule, depth):
    # few features in multiway mode: paths end early when features run out
    schema = make_schema(n_continuous=2, n_categorical=2, n_categories=2) if split_mode == "multiway" else make_schema()
    X, y = make_data(schema, 300, seed=depth)
    clf = PaperEDPRFClassifier(
        schema,
        epsilon=0.8,
        n_trees=2,
        max_depth=depth,
        split_mode=split_mode,
        n_bins=3 if split_mode == "multiway" else 8,
        schedule=schedule,
        random_state=depth,
    )
    forest = clf.fit(X, y).forest_
    node_spend, path_spend = forest.spent_epsilons()
    leaves = forest.trees.feature < 0
    np.testing.assert_allclose(path_spend[leaves], 0.8, rtol=1e-12)
    assert np.all(node_spend > 0)
    depths = forest.trees.validate(forest.grid, schema.n_classes, split_mode, depth)
    assert depths.max() <= depth


def test_sequential_composition_trees_spend_epsilon_over_t():
    schema = make_schema()
    X, y = make_data(schema, 300, seed=1)
    forest = (
        PaperEDPRFClassifier(
            schema, epsilon=1.0, n_trees=4, max_depth=3, n_bins=5, composition="sequential", random_state=0
        )
        .fit(X, y)
        .forest_
    )
    _, path_spend = forest.spent_epsilons()
    np.testing.assert_allclose(path_spend[forest.trees.feature < 0], 0.25)


def _structure(forest):
    t = forest.trees
    return t.tree_offsets.tolist(), t.first_child.tolist(), (t.feature < 0).tolist()


def test_binary_tree_shape_does_not_depend_on_the_data():
    schema = make_schema()
    big, labels = make_data(schema, 5000, seed=1, signal=True)
    small, noise = make_data(schema, 7, seed=2, signal=False)
    a = EDPRFClassifier(schema, n_trees=3, max_depth=6, n_bins=16, random_state=0).fit(big, labels)
    b = EDPRFClassifier(schema, n_trees=3, max_depth=6, n_bins=16, random_state=1).fit(small, noise)
    assert _structure(a.forest_) == _structure(b.forest_)
    # full binary trees of depth 6
    assert a.forest_.trees.n_nodes == 3 * (2**7 - 1)


def test_multiway_tree_shape_does_not_depend_on_the_data():
    cats = tuple("abc")
    schema = Schema(
        features=tuple(CategoricalFeature(f"c{i}", cats) for i in range(4)), label=LabelSpec("label", ("k0", "k1"))
    )
    rng = np.random.default_rng(0)
    import pandas as pd

    def frame(n):
        return pd.DataFrame({f"c{i}": rng.choice(list(cats), n) for i in range(4)})

    a = EDPRFClassifier(schema, n_trees=2, max_depth=6, split_mode="multiway", random_state=0)
    b = EDPRFClassifier(schema, n_trees=2, max_depth=6, split_mode="multiway", random_state=5)
    a.fit(frame(3000), rng.choice(["k0", "k1"], 3000))
    b.fit(frame(5), ["k0"] * 5)
    # every path uses all 4 features once, then stops: 1 + 3 + 9 + 27 + 81 nodes
    assert _structure(a.forest_) == _structure(b.forest_)
    assert a.forest_.trees.n_nodes == 2 * (1 + 3 + 9 + 27 + 81)


def test_fitted_model_holds_no_data_derived_value():
    schema = make_schema()
    X1, y1 = make_data(schema, 4000, seed=1)
    X2, y2 = make_data(schema, 40, seed=2)
    a = EDPRFClassifier(schema, n_trees=3, max_depth=4, n_bins=20, random_state=0, marginals_share=0.0)
    params_before = a.get_params()
    a.fit(X1, y1)
    b = EDPRFClassifier(schema, n_trees=3, max_depth=4, n_bins=20, random_state=0, marginals_share=0.0).fit(X2, y2)
    assert a.get_params() == params_before  # nothing written back into constructor parameters
    assert set(vars(a)) == set(params_before) | {
        "forest_",
        "classes_",
        "n_features_in_",
        "feature_names_in_",
        "privacy_",
        "dp_",
        "guarantee_",
        "n_trees_",
        "max_depth_",
        "n_bins_",
        "n_rows_estimate_",
        "marginals_share_",
        "marginals_bins_",
        "residual_pass_",
    }
    assert (a.n_trees_, a.max_depth_, a.n_rows_estimate_) == (3, 4, None)  # fixed shape: no count drawn
    # the serialized models have the same size: no exact counts or row numbers inside (leaf counts are noisy)
    assert len(pickle.dumps(a.forest_.trees)) == len(pickle.dumps(b.forest_.trees))
    assert a.n_features_in_ == schema.n_features and list(a.classes_) == list(schema.classes)
    t = a.forest_.trees
    assert set(np.unique(t.leaf_class[t.feature < 0])) <= {0, 1}
    assert t.split[t.feature >= 0].max() < 20  # thresholds are edge indices of the public grid (20 bins)


def test_empty_nodes_still_run_the_mechanism():
    """A tree trained on one row still has full shape and labelled leaves everywhere."""
    schema = make_schema()
    X, y = make_data(schema, 1, seed=0)
    forest = EDPRFClassifier(schema, n_trees=1, max_depth=5, n_bins=8, random_state=0).fit(X, y).forest_
    leaves = forest.trees.feature < 0
    assert leaves.sum() == 2**5
    assert np.all(forest.trees.leaf_class[leaves] >= 0)
    # empty leaves pick uniformly: both classes appear among the 32 leaves
    assert len(set(forest.trees.leaf_class[leaves].tolist())) == 2


def test_validate_refuses_deep_chains_quickly_and_non_breadth_first_order():
    """A hostile chain is refused after max_depth + 1 passes, not after its full depth."""
    from edprf_core._tree import _propagate_depth
    from edprf_core.encoding import FeatureGrid
    from edprf_core.forest import ForestArrays, TreeStructureError

    schema = make_schema()
    grid = FeatureGrid.from_schema(schema, 5)
    d = 200_000
    n = 2 * d + 1
    internal = np.arange(0, n - 1, 2)
    feature = np.full(n, -1, np.int32)
    feature[internal] = 0
    split = feature.copy()
    split[internal] = 1
    first = np.full(n, -1, np.int32)
    first[internal] = internal + 1
    leaf = np.zeros(n, np.int32)
    leaf[internal] = -1
    chain = ForestArrays(np.array([0, n]), feature, split, first, leaf)
    with pytest.raises(TreeStructureError, match="depth expected <= 6"):
        chain.validate(grid, 2, "binary", max_depth=6)
    # the depth propagation stops after max_depth + 1 passes (uncapped: 200,000 passes)
    parent = np.r_[-1, np.repeat(internal, 2)]
    assert _propagate_depth(parent, 6).max() == 7
    # a root whose first child block comes after its second child's block
    swapped = ForestArrays(
        np.array([0, 7]),
        np.array([0, 0, 0, -1, -1, -1, -1], np.int32),
        np.array([1, 1, 1, -1, -1, -1, -1], np.int32),
        np.array([1, 5, 3, -1, -1, -1, -1], np.int32),
        np.array([-1, -1, -1, 0, 1, 0, 1], np.int32),
    )
    with pytest.raises(TreeStructureError, match="breadth-first"):
        swapped.validate(grid, 2, "binary", max_depth=6)


def test_public_depth_rule():
    """Largest depth with n * eps_leaf(d) / (T * b^d) >= c; monotone in n, T and eps."""
    from edprf_core._depth_rule import depth_score
    from edprf_core.shape import public_depth

    d = public_depth(4364, 1, 1.0, c=16)
    assert depth_score(4364, 1, 1.0, d) >= 16 > depth_score(4364, 1, 1.0, d + 1)
    assert d == 6  # n eps / (H_7 2^6) = 26.2 >= 16 > n eps / (H_8 2^7) = 12.5
    assert public_depth(4364, 5, 1.0) < d and public_depth(4364, 1, 0.1) < d and public_depth(43640, 1, 1.0) > d
    assert public_depth(10, 1, 0.01) == 1  # nothing qualifies: the minimum
    with pytest.raises(ValueError):
        public_depth(0, 1, 1.0)


@pytest.mark.parametrize("split_mode", ["binary", "multiway"])
def test_histogram_memory_cap_blocks_nodes_instead_of_refusing(monkeypatch, split_mode):
    """How many nodes hold rows depends on the data, so a capped histogram must not fail
    (a refusal would leak that count): the builder takes the nodes in blocks, and the
    released forest is the one an uncapped build gives with the same randomness."""
    import edprf_core._builder as builder

    schema = make_schema()
    X, y = make_data(schema, 3000, seed=3, signal=True)

    def fit():
        return (
            EDPRFClassifier(schema, n_trees=3, max_depth=4, n_bins=8, split_mode=split_mode, random_state=11)
            .fit(X, y)
            .forest_.trees
        )

    uncapped = fit()
    monkeypatch.setattr(builder, "MAX_HISTOGRAM_BYTES", 1)  # one node per block
    assert fit().equals(uncapped)


def test_a_forest_too_large_to_build_is_refused_before_the_charge():
    """max_depth=22 (valid up to 30) ran out of 8 GB after 60-90 s, its epsilon charged (walkthrough, stop 44)."""
    from sklearn.utils._param_validation import InvalidParameterError

    from edprf_core import BudgetAccountant, load_embedded
    from edprf_core.forest import MAX_FIT_NODES

    schema = make_schema()
    X, y = make_data(schema, 400, seed=1)
    acc = BudgetAccountant(epsilon_cap=1e5)
    refused = {
        "1 tree(s) of depth 22 may hold 8,388,607 nodes": {"max_depth": 22, "n_trees": 1},
        "2 tree(s) of depth 21": {"max_depth": 21, "n_trees": 2},
        # automatic shapes by their public caps: refused before the DP row count is charged, not after
        "600 tree(s) of depth up to 12 (max_depth_cap)": {"max_depth": "auto", "n_trees": 600},
        "up to 64 trees (n_trees='auto') of depth up to 16": {"max_depth": "auto", "max_depth_cap": 16},
    }
    for said, shape in refused.items():
        with pytest.raises(InvalidParameterError, match=rf"{re.escape(said)}.*nothing was charged"):
            EDPRFClassifier(schema, accountant=acc, marginals_share=0.0, **shape).fit(X, y)
    assert acc.total == 0
    assert MAX_FIT_NODES == 2**22  # a binary tree of depth 21 is the deepest one fit builds
    EDPRFClassifier(schema, accountant=acc, marginals_share=0.0, n_trees=64, max_depth="auto").fit(X, y)  # the caps
    # multiway: the worst case (the widest features at every layer) is far above what a fit builds, so it is not
    # refused (the review's case: 60-category features, depth 4: 13 million in the worst case, 104,294 built)
    wall_X, wall_y, wall = load_embedded("wall_robot_navigation")
    EDPRFClassifier(wall, split_mode="multiway", n_bins=20, max_depth=4, n_trees=1).fit(wall_X[:50], wall_y[:50])
