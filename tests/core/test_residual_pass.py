"""The residual pass of a two-class marginals part: its rule, its release, its replay, and where it may go.

The pass's privacy is audited through the production fit in ``tests/privacy/test_mixed_fit.py``; these tests
check the mechanism's contract and what the library does with it.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from edprf_core import EDPRFClassifier, merge_forests
from edprf_core._exceptions import SchemaError
from edprf_core._marginals import (
    RELEASE_RANGE,
    ResidualPass,
    marginal_log_ratio_tables,
    marginal_proba,
    naive_bayes_tables,
    release_marginals,
)
from edprf_core._marginals_merge import bounded_marginals_sum
from edprf_core._residual_pass import (
    RESIDUAL_MIN_EPSILON,
    RESIDUAL_QUANTUM,
    RESIDUAL_THRESHOLD,
    additive_terms,
    release_residual_pass,
    residual_pass_rule,
    start_terms,
)
from protocol import encode_release

from ..synthetic import make_data, make_schema


def _correlated(n: int, copies: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Codes of one informative 4-level feature repeated ``copies`` times and one pure-noise feature, and labels:
    naive Bayes counts the repeated evidence ``copies`` times, which a backfitting pass can undo."""
    rng = np.random.default_rng(seed)
    level = rng.integers(0, 4, n)
    y = (rng.random(n) < np.array([0.1, 0.3, 0.6, 0.85])[level]).astype(np.int64)
    codes = np.column_stack([level] * copies + [rng.integers(0, 4, n)])
    return codes, y


def _pass(n=20_000, copies=6, epsilon=4.0, seed=0):
    codes, y = _correlated(n, copies, seed)
    rng = np.random.default_rng([seed, 1])
    n_codes = (4,) * (copies + 1)
    histograms = release_marginals(codes, y, n_codes, 2, epsilon / 2, rng=rng)
    return codes, y, histograms, release_residual_pass(codes, y, histograms, epsilon / 2, rng=rng)


# ------------------------------------------------------------------ the public rule
@pytest.mark.parametrize(
    ("n_rows", "epsilon", "n_classes", "want"),
    [
        (2200, 1.0, 2, True),  # n eps / d = 220: at the threshold
        (2199, 1.0, 2, False),
        (4400, 0.5, 2, True),  # the minimum epsilon, at the threshold
        (10**6, 0.49, 2, False),  # epsilon below the minimum, whatever the rows
        (1100, 2.0, 2, True),
        (10**6, 1.0, 3, False),  # two classes only
    ],
)
def test_the_rule_needs_both_epsilon_and_rows_per_feature(n_rows, epsilon, n_classes, want):
    assert (RESIDUAL_MIN_EPSILON, RESIDUAL_THRESHOLD) == (0.5, 220.0)
    assert residual_pass_rule(n_rows, 10, n_classes, epsilon) is want


# ------------------------------------------------------------------ the release
def test_a_pass_releases_one_sum_per_bin_and_adds_its_budget():
    codes, _, histograms, out = _pass()
    assert histograms.residual_pass is None and out.residual_pass is not None
    assert all(np.array_equal(a, b) for a, b in zip(out.counts, histograms.counts))  # kept as released
    assert [s.shape for s in out.residual_pass.sums] == [(4,)] * codes.shape[1]
    assert all(s.dtype == np.int64 for s in out.residual_pass.sums)
    assert out.residual_pass.quantum == RESIDUAL_QUANTUM
    assert out.part_epsilon == pytest.approx(4.0) and out.epsilon == pytest.approx(2.0)


def test_the_sums_are_the_rows_quantised_residuals_plus_noise():
    """With noise of scale 1e-9 the released sums are the exact sums of round(Q (y - p)), p the starting model's
    (feature 0 is first: nothing moved the model yet)."""
    codes, y = _correlated(5000, 2, seed=3)
    histograms = release_marginals(codes, y, (4, 4, 4), 2, 1e9, rng=np.random.default_rng(0))
    out = release_residual_pass(codes, y, histograms, 1e12, rng=np.random.default_rng(1))
    intercept, terms = start_terms(histograms)
    logit = intercept + sum(t[codes[:, j]] for j, t in enumerate(terms))
    q = np.rint(RESIDUAL_QUANTUM * (y - 1 / (1 + np.exp(-logit)))).astype(np.int64)
    assert np.abs(q).max() <= RESIDUAL_QUANTUM
    np.testing.assert_array_equal(out.residual_pass.sums[0], np.bincount(codes[:, 0], weights=q, minlength=4))


def test_the_replay_reads_the_release_alone_and_scores_what_the_pass_fitted():
    codes, _, histograms, out = _pass()
    log_prior, terms = additive_terms(out)
    start_log_prior, _ = naive_bayes_tables(histograms)
    np.testing.assert_allclose(log_prior, start_log_prior)  # the pass moves the bins' terms, not the intercept
    proba = marginal_proba(out, codes[:50])
    logit = log_prior[1] - log_prior[0] + sum(t[codes[:50, j]] for j, t in enumerate(terms))
    np.testing.assert_allclose(proba[:, 1], 1 / (1 + np.exp(-logit)), rtol=1e-12)
    # the tables split each term evenly between the classes, so every consumer (export, explanations) agrees
    _, tables = marginal_log_ratio_tables(out)
    np.testing.assert_allclose([t[:, 0] for t in tables], [-t[:, 1] for t in tables])


def test_the_pass_undoes_double_counting():
    """Six copies of one feature: the histograms alone, at the whole budget, count its evidence up to six times
    (tempered by 2.5 / sqrt(7)); with half of it and a pass on the other half, the test rows' log loss is lower.
    Fixed seeds; over seeds 0-9 the gap was 0.45 to 0.52 nats, the bound asks for a fifth of it."""
    test_codes, test_y = _correlated(20_000, 6, seed=99)

    def log_loss(marginals):
        p = marginal_proba(marginals, test_codes)[np.arange(test_y.size), test_y]
        return float(-np.mean(np.log(p)))

    for seed in range(3):
        codes, y, _, out = _pass(seed=seed)
        alone = release_marginals(codes, y, (4,) * codes.shape[1], 2, 4.0, rng=np.random.default_rng([seed, 1]))
        assert log_loss(out) < log_loss(alone) - 0.09


def test_a_pass_is_refused_twice_and_beyond_two_classes():
    codes, y, _, out = _pass(n=500)
    with pytest.raises(ValueError, match="already carry a residual pass"):
        release_residual_pass(codes, y, out, 1.0, rng=np.random.default_rng(0))
    three = release_marginals(codes, y, (4,) * codes.shape[1], 3, 1.0, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="two classes"):
        release_residual_pass(codes, y, three, 1.0, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="labels 0 and 1"):
        release_residual_pass(codes, y * 2, dataclasses.replace(out, residual_pass=None), 1.0)


# ------------------------------------------------------------------ validation of what is held or decoded
def test_a_malformed_pass_is_refused_on_construction():
    _, _, histograms, out = _pass(n=500)
    sums = out.residual_pass.sums
    with pytest.raises(ValueError, match="expected an int64 array"):
        ResidualPass(tuple(s.astype(float) for s in sums), 1.0, RESIDUAL_QUANTUM)
    high = RESIDUAL_QUANTUM * RELEASE_RANGE[1]
    with pytest.raises(ValueError, match="expected values within"):
        ResidualPass((np.array([high + 1, 0, 0, 0]), *sums[1:]), 1.0, RESIDUAL_QUANTUM)
    with pytest.raises(ValueError, match="expected sums of"):
        dataclasses.replace(histograms, residual_pass=ResidualPass(sums[:-1], 1.0, RESIDUAL_QUANTUM))
    with pytest.raises(TypeError, match="expected a ResidualPass"):
        dataclasses.replace(histograms, residual_pass=sums)


def test_two_releases_differ_when_only_their_passes_do():
    _, _, histograms, out = _pass(n=500)
    again = dataclasses.replace(out, residual_pass=ResidualPass(out.residual_pass.sums, out.residual_pass.epsilon, 64))
    assert again == out and out != histograms
    other = ResidualPass(tuple(s + 1 for s in out.residual_pass.sums), out.residual_pass.epsilon, RESIDUAL_QUANTUM)
    assert dataclasses.replace(out, residual_pass=other) != out


# ------------------------------------------------------------------ the estimator
def _fit(**options):
    schema = make_schema(n_continuous=2, n_categorical=2)
    X, y = make_data(schema, 4000, seed=5)
    options.setdefault("random_state", 0)
    return EDPRFClassifier(schema, **options).fit(X, y)


def test_auto_runs_the_rule_only_with_the_automatic_share():
    auto = _fit(n_rows_public=4096)  # 4096 * 1 / 4 = 1024 >= 220 at epsilon 1
    assert auto.residual_pass_ and auto.forest_.marginals.residual_pass is not None
    assert _fit(n_rows_public=4096, epsilon=0.5).residual_pass_  # 512 >= 220 at the minimum epsilon
    assert not _fit(n_rows_public=4096, epsilon=0.4).residual_pass_  # epsilon below the minimum
    assert not _fit(marginals_share=0.5).residual_pass_  # a given share (a party's request): no pass
    assert _fit(marginals_share=0.5, residual_pass=True).residual_pass_
    assert not _fit(n_rows_public=4096, residual_pass=False).residual_pass_


def test_a_pass_without_a_two_class_marginals_part_is_refused():
    with pytest.raises(ValueError, match="residual_pass=True needs a marginals part"):
        _fit(marginals_share=0.0, residual_pass=True)
    # the automatic share chose the trees alone: the message says why, from public figures only
    with pytest.raises(ValueError, match=r"marginals_share='auto' keeps the trees alone .* n = 4, the public size"):
        _fit(n_rows_public=4, residual_pass=True)  # 4 * 1 / 4 < 2
    schema = make_schema(n_classes=3)
    X, y = make_data(schema, 300, seed=1)
    with pytest.raises(ValueError, match="with 3 classes"):
        EDPRFClassifier(schema, marginals_share=0.5, residual_pass=True, random_state=0).fit(X, y)


def test_the_guarantee_says_what_the_histograms_and_the_pass_spent():
    text = _fit(n_rows_public=4096).forest_.guarantee()
    assert "noise at epsilon = 0.6 / d, then one backfitting pass on the same rows' residuals" in text
    assert "one noisy integer sum per bin of each feature at epsilon = 0.4 / d" in text
    assert "epsilon = 1 differential privacy per record" in text


def test_a_forest_with_a_pass_is_neither_released_nor_merged():
    """A party releases histograms, which a federation sums; a pass is fitted to one holder's rows."""
    forest = _fit(n_rows_public=4096).forest_
    with pytest.raises(ValueError, match="a release carries histograms only"):
        encode_release(forest, "party-a")
    plain = _fit(n_rows_public=4096, residual_pass=False).forest_
    with pytest.raises(SchemaError, match="forest 1 ran a residual pass"):
        merge_forests([plain, forest])
    assert merge_forests([plain, plain]).marginals.residual_pass is None
    with pytest.raises(ValueError, match="part 1: carries a residual pass"):
        bounded_marginals_sum([plain.marginals, forest.marginals])


def test_a_forest_whose_pass_and_histograms_do_not_spend_the_part_budget_is_refused():
    forest = _fit(n_rows_public=4096).forest_
    m = forest.marginals
    half = dataclasses.replace(m.residual_pass, epsilon=m.residual_pass.epsilon / 2)
    with pytest.raises(ValueError, match="a residual pass belongs to one fit"):
        dataclasses.replace(forest, marginals=dataclasses.replace(m, residual_pass=half), _routing={})
