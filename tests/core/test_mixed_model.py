"""EDPRFClassifier's marginals part: the share rule, the fit's parts, the mix, and the validation of the model."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from edprf_core import EDPRFClassifier, TrainingParameters
from edprf_core._marginals import (
    MIX_SHARE_HIGH,
    MIX_SHARE_LOW,
    MIX_SHARE_THRESHOLD,
    marginal_proba,
    marginals_n_bins,
    marginals_rows,
    marginals_share_rule,
    mix_probabilities,
)
from edprf_core._residual_pass import RESIDUAL_HISTOGRAM_SHARE
from edprf_core.encoding import FeatureGrid, encode_features
from edprf_core.research import PaperEDPRFClassifier

from ..synthetic import make_data, make_schema


def _fit(n_rows=2000, n_classes=2, **options):
    schema = make_schema(n_classes=n_classes)
    X, y = make_data(schema, n_rows, seed=3)
    options.setdefault("random_state", 0)
    return EDPRFClassifier(schema, **options).fit(X, y), X, y


# ------------------------------------------------------------------ the public rules
@pytest.mark.parametrize(
    ("n_rows", "epsilon", "want"),
    [(9, 1.0, MIX_SHARE_LOW), (10, 1.0, MIX_SHARE_HIGH), (99, 0.1, MIX_SHARE_LOW), (10_000, 0.1, MIX_SHARE_HIGH)],
)
def test_the_two_class_share_rule_switches_at_its_threshold(n_rows, epsilon, want):
    assert (MIX_SHARE_LOW, MIX_SHARE_HIGH, MIX_SHARE_THRESHOLD) == (0.0, 0.9, 2.0)  # below: the trees alone
    # n * eps / d with d = 5 below: 9 -> 1.8, 10 -> 2.0
    assert marginals_share_rule(n_rows, 5, 2, epsilon) == want


@pytest.mark.parametrize("n_classes", [3, 4, 7])
def test_more_than_two_classes_get_no_marginals(n_classes):
    assert marginals_share_rule(10**6, 5, n_classes, 10.0) == 0.0


def test_the_row_assignment_is_data_free_and_keeps_its_share():
    rng = np.random.default_rng(0)
    mask = marginals_rows(100_000, 0.25, rng)
    assert mask.dtype == bool and mask.shape == (100_000,)
    # binomial(1e5, 0.25): sd 137 rows; 6 sd
    assert abs(int(mask.sum()) - 25_000) < 6 * 137
    assert not marginals_rows(10, 0.0, rng).any()


def test_the_mix_is_the_weighted_geometric_pool():
    trees = np.array([[0.9, 0.1], [0.5, 0.5], [0.0, 1.0]])
    marg = np.array([[0.2, 0.8], [0.7, 0.3], [0.5, 0.5]])
    out = mix_probabilities(trees, marg, 0.25)
    want = marg**0.25 * np.clip(trees, 1e-12, 1) ** 0.75
    np.testing.assert_allclose(out, want / want.sum(axis=1, keepdims=True))
    np.testing.assert_allclose(out.sum(axis=1), 1.0)


# ------------------------------------------------------------------ fitted models
def test_an_auto_two_class_fit_has_a_marginals_part_on_its_own_grid():
    clf, _, _ = _fit(n_rows_public=2048)  # 0.9 * 2048 * eps / d = 369 >= 300: 20 bins
    forest = clf.forest_
    assert clf.marginals_share_ == MIX_SHARE_HIGH == clf.privacy_.marginals_share == forest.marginals_share
    assert clf.marginals_bins_ == marginals_n_bins(round(MIX_SHARE_HIGH * 2048), 5, 1.0) == forest.marginals_bins == 20
    grid = FeatureGrid.from_schema(forest.schema, clf.marginals_bins_)
    assert forest.marginals.n_codes == tuple(grid.n_codes)
    # a declared size: no row count; 2048 * 1 / 5 = 410 >= 220 at epsilon 1: the histograms and a residual pass
    assert clf.residual_pass_ and forest.marginals.part_epsilon == pytest.approx(1.0)
    assert forest.marginals.epsilon == pytest.approx(RESIDUAL_HISTOGRAM_SHARE)
    # the trees' automatic shape reads the trees' share of the public size
    assert clf.n_rows_estimate_ is None


def test_predict_proba_is_the_mix_of_the_two_parts():
    clf, X, _ = _fit(marginals_share=0.4)
    forest = clf.forest_
    trees = forest.trees_proba(X)
    codes = encode_features(X, forest.schema, FeatureGrid.from_schema(forest.schema, forest.marginals_bins))
    marg = marginal_proba(forest.marginals, codes)
    np.testing.assert_allclose(clf.predict_proba(X), mix_probabilities(trees, marg, 0.4))
    np.testing.assert_array_equal(clf.predict(X), clf.classes_[np.argmax(clf.predict_proba(X), axis=1)])


def test_label_leaves_mix_their_vote_shares():
    clf, X, _ = _fit(marginals_share=0.5, leaf="label", n_trees=3, max_depth=2, n_bins=4)
    forest = clf.forest_
    votes = forest.votes(X) / 3.0
    np.testing.assert_allclose(clf.predict_proba(X), mix_probabilities(votes, forest.marginals_proba(X), 0.5))


def test_a_share_of_zero_and_three_classes_fit_trees_only():
    for clf in (_fit(marginals_share=0.0)[0], _fit(n_classes=3)[0]):
        assert clf.forest_.marginals is None and clf.marginals_share_ == 0 and clf.marginals_bins_ == 0
        assert "one-way marginals" not in clf.forest_.guarantee()


def test_the_paper_classifier_has_no_marginals_part_by_default():
    schema = make_schema()
    X, y = make_data(schema, 300, seed=0)
    clf = PaperEDPRFClassifier(schema, random_state=0).fit(X, y)
    assert clf.forest_.marginals is None and clf.get_params()["marginals_share"] == 0.0


def test_the_guarantee_names_the_marginals_part_and_its_composition():
    clf, _, _ = _fit(marginals_share=0.25)
    text = clf.forest_.guarantee()
    assert "a random 25% of the rows, disjoint from the trees' rows (parallel composition)" in text
    assert f"{clf.marginals_bins_}-bin public grid" in text and "discrete Laplace noise at epsilon = " in text


def test_the_guarantee_gives_the_histograms_the_epsilon_they_spent_after_a_dp_row_count():
    """With a DP row count drawn first the histograms get epsilon - count_epsilon; the text said epsilon / d."""
    clf, _, _ = _fit(marginals_share=0.25)  # a DP row count, no residual pass
    spent = 1.0 - clf.privacy_.count_epsilon
    assert clf.privacy_.count_epsilon > 0 and clf.forest_.marginals.part_epsilon == pytest.approx(spent)
    text = clf.forest_.guarantee()
    assert f"discrete Laplace noise at epsilon = {spent:g} / d" in text and "noise at epsilon / d" not in text


def test_the_fitted_marginals_hold_no_data_derived_size():
    """Fits on 4000 and 40 rows release marginals of the same shapes (the public grid's), nothing else."""
    a, _, _ = _fit(n_rows=4000, marginals_share=0.5, n_trees=2, max_depth=3, n_bins=8)
    b, _, _ = _fit(n_rows=40, marginals_share=0.5, n_trees=2, max_depth=3, n_bins=8)
    assert a.forest_.marginals.n_codes == b.forest_.marginals.n_codes
    assert [h.shape for h in a.forest_.marginals.counts] == [h.shape for h in b.forest_.marginals.counts]


def test_a_fixed_shape_with_the_automatic_share_draws_one_row_count():
    """The two-class share rule reads a public size: without a declared one, one DP count is drawn."""
    clf, _, _ = _fit(n_trees=2, max_depth=3, n_bins=8)
    assert clf.privacy_.depth_rule == "dp-count" and clf.n_rows_estimate_ is not None
    assert clf.marginals_bins_ == 8  # an integer n_bins is both grids
    assert clf.forest_.marginals.part_epsilon == pytest.approx(1.0 - clf.privacy_.count_epsilon)
    declared, _, _ = _fit(n_trees=2, max_depth=3, n_bins=8, n_rows_public=2048)
    assert declared.privacy_.depth_rule == "declared-size" and declared.n_rows_estimate_ is None


def test_the_automatic_shapes_read_each_part_of_the_dp_count():
    clf, _, _ = _fit(n_rows=2000)
    assert clf.privacy_.depth_rule == "dp-count" and clf.n_rows_estimate_ is not None
    size = max(1, clf.n_rows_estimate_)
    eps = 1.0 - clf.privacy_.count_epsilon
    assert clf.marginals_bins_ == marginals_n_bins(max(1, round(MIX_SHARE_HIGH * size)), 5, eps)
    assert clf.forest_.marginals.part_epsilon == pytest.approx(eps)


@pytest.mark.parametrize("bad", [-0.1, 1.0, 1.5, "half", True])
def test_the_share_parameter_is_validated(bad):
    schema = make_schema()
    X, y = make_data(schema, 50, seed=0)
    with pytest.raises((ValueError, TypeError)):
        EDPRFClassifier(schema, marginals_share=bad, random_state=0).fit(X, y)


# ------------------------------------------------------------------ validation of the model objects
@pytest.mark.parametrize(
    ("share", "bins", "match"),
    [
        (0.5, 0, "does not match"),
        (0.0, 5, "does not match"),
        (1.0, 5, r"in \[0, 1\)"),
        (-0.2, 5, r"in \[0, 1\)"),
        (0.5, 1, "0 or an integer >= 2"),
        (float("nan"), 5, r"in \[0, 1\)"),
    ],
)
def test_training_parameters_check_the_marginals_fields(share, bins, match):
    with pytest.raises(ValueError, match=match):
        TrainingParameters(epsilon=1.0, marginals_share=share, marginals_bins=bins)


def test_a_forest_refuses_marginals_that_do_not_match_its_parts():
    clf, _, _ = _fit(marginals_share=0.5)
    forest = clf.forest_
    with pytest.raises(ValueError, match="expected its marginals, got None"):
        dataclasses.replace(forest, marginals=None, _routing={})
    other, _, _ = _fit(marginals_share=0.5, n_bins=7)
    with pytest.raises(ValueError, match="expected histograms of"):
        dataclasses.replace(forest, marginals=other.forest_.marginals, _routing={})
    trees_only = dataclasses.replace(forest.parts[0][1], marginals_share=0.0, marginals_bins=0)
    with pytest.raises(ValueError, match="expected every part with a marginals part on one grid"):
        dataclasses.replace(forest, parts=(("local", trees_only, forest.n_trees),), _routing={})
