"""DP one-way marginals (``edprf_core._marginals``): the release's shapes, noise law and checks; the estimator.

Statistical checks use fixed seeds (the research sampler) and bounds from the math: the sample variance of
``N`` i.i.d. draws has standard deviation ``sqrt((mu4 - sigma^4) / N)``, with ``sigma^2`` and ``mu4`` computed
from the discrete Laplace law itself.  The exact sampler (OpenDP) cannot be seeded and is only checked for
its output's type and shape here; its cost is audited by the privacy gate
(``tests/privacy/test_marginals_release.py``).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from edprf_core._marginals import (
    MARGINALS_TEMPER_C,
    RELEASE_RANGE,
    NoisyMarginals,
    marginal_evidence,
    marginal_log_scores,
    marginal_proba,
    marginals_temper,
    release_marginals,
)
from edprf_core._tree import MAX_LEAF_COUNT


def _data(n: int, n_codes: tuple[int, ...], n_classes: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    codes = np.column_stack([rng.integers(0, k, size=n) for k in n_codes])
    return codes, rng.integers(0, n_classes, size=n)


def _histograms(codes: np.ndarray, y: np.ndarray, n_codes, n_classes: int) -> list[np.ndarray]:
    """The exact histograms, counted with np.add.at per feature (not the library's single bincount)."""
    out = []
    for j, k in enumerate(n_codes):
        h = np.zeros((k, n_classes), dtype=np.int64)
        np.add.at(h, (codes[:, j], y), 1)
        out.append(h)
    return out


def _discrete_laplace_moments(scale: float) -> tuple[float, float]:
    """``(variance, fourth moment)`` of the discrete Laplace law ``P(z) ∝ exp(-|z| / scale)``, summed exactly."""
    a = math.exp(-1.0 / scale)
    z = np.arange(1, int(60 * scale) + 60, dtype=np.float64)
    weight = (1 - a) / (1 + a) * a**z  # P(Z = z) for z >= 1 (and the same for -z)
    return float(2 * np.sum(weight * z**2)), float(2 * np.sum(weight * z**4))


# ------------------------------------------------------------------ the release
def test_shapes_dtype_and_a_record_in_one_cell_per_histogram():
    n_codes, k = (3, 5, 2), 4
    codes, y = _data(400, n_codes, k, seed=1)
    released = release_marginals(codes, y, n_codes, k, 1e9, rng=np.random.default_rng(0))
    assert released.n_features == 3 and released.n_codes == n_codes and released.n_classes == k
    assert released.epsilon == 1e9 and released.relation == "add-remove"
    for h, exact in zip(released.counts, _histograms(codes, y, n_codes, k)):
        assert h.dtype == np.int64 and h.shape == exact.shape
        assert not h.flags.writeable
        assert np.array_equal(h, exact)  # scale 3e-9: the noise is 0 with probability 1 - 1e-(1e8)
        assert h.sum() == 400  # each row in exactly one cell of each histogram


def test_empty_data_releases_noise_in_every_cell():
    """No rows: every cell is still drawn (empty bins are not revealed as such)."""
    released = release_marginals(
        np.zeros((0, 2), np.int64), np.zeros(0, np.int64), (50, 40), 2, 0.5, rng=np.random.default_rng(3)
    )
    assert [h.shape for h in released.counts] == [(50, 2), (40, 2)]
    # scale 4: P(Z = 0) = (1 - a) / (1 + a) = 0.12, so all 180 cells at 0 has probability 0.12^180
    assert all(np.count_nonzero(h) > 0 for h in released.counts)
    assert any((h < 0).any() for h in released.counts)  # signed: nothing clamped at 0


def test_released_counts_are_clamped_to_the_wire_range():
    """At a tiny epsilon (scale 1e15) the raw noise passes the int32 range; the release stays inside it."""
    codes, y = _data(20, (4,), 2, seed=2)
    released = release_marginals(codes, y, (4,), 2, 1e-15, rng=np.random.default_rng(0))
    h = released.counts[0]
    assert h.min() >= RELEASE_RANGE[0] and h.max() <= RELEASE_RANGE[1]
    assert set(np.abs(h).ravel()) == {MAX_LEAF_COUNT}  # every cell's |noise| >> 2^31 at this scale (P ~ 1 - 2e-5)


@pytest.mark.parametrize("relation", ["add-remove", "replace-one"])
def test_noise_variance_is_the_discrete_laplace_variance_at_scale_delta_d_over_epsilon(relation):
    """Per-cell noise of the seeded path: variance of the law at scale ``Delta d / epsilon`` (Delta 1 or 2)."""
    n_codes, k, eps = (400, 300, 300), 2, 6.0
    d = len(n_codes)
    codes, y = _data(2000, n_codes, k, seed=4)
    exact = _histograms(codes, y, n_codes, k)
    noise = np.concatenate(
        [
            (h - e).ravel()
            for seed in range(10)
            for h, e in zip(
                release_marginals(codes, y, n_codes, k, eps, relation=relation, rng=np.random.default_rng(seed)).counts,
                exact,
            )
        ]
    )
    delta = 1 if relation == "add-remove" else 2
    scale = delta * d / eps
    variance, fourth = _discrete_laplace_moments(scale)
    n = noise.size  # 10 seeds x 2000 cells = 20000 draws
    bound = 5 * math.sqrt((fourth - variance**2) / n)  # 5 standard deviations of the sample variance
    assert abs(np.mean(noise.astype(np.float64) ** 2) - variance) <= bound
    assert abs(noise.mean()) <= 5 * math.sqrt(variance / n)
    # the other relation's scale is far outside the bound (replace-one doubles the scale: 4x the variance)
    other, _ = _discrete_laplace_moments(scale * (2 if delta == 1 else 0.5))
    assert abs(other - variance) > 3 * bound


def test_replace_one_doubles_the_noise_scale():
    codes, y = _data(50, (3, 3), 2, seed=5)
    add = release_marginals(codes, y, (3, 3), 2, 0.8, rng=np.random.default_rng(0))
    replace = release_marginals(codes, y, (3, 3), 2, 0.8, relation="replace-one", rng=np.random.default_rng(0))
    assert add.sensitivity == 1 and replace.sensitivity == 2
    assert add.noise_scale == pytest.approx(2 / 0.8) and replace.noise_scale == pytest.approx(2 * add.noise_scale)


def test_the_exact_sampler_releases_integers():
    n_codes = (3, 4)
    codes, y = _data(100, n_codes, 3, seed=6)
    released = release_marginals(codes, y, n_codes, 3, 1.0)  # rng=None: OpenDP's exact sampler
    assert [h.shape for h in released.counts] == [(3, 3), (4, 3)]
    assert all(h.dtype == np.int64 for h in released.counts)
    assert all(h.min() >= RELEASE_RANGE[0] and h.max() <= RELEASE_RANGE[1] for h in released.counts)


def test_seeded_releases_are_reproducible_and_code_dtype_does_not_matter():
    codes, y = _data(80, (5, 6), 2, seed=7)
    one = release_marginals(codes, y, (5, 6), 2, 1.0, rng=np.random.default_rng(9))
    two = release_marginals(codes.astype(np.int8), y.astype(np.uint8), [5, 6], 2, 1.0, rng=np.random.default_rng(9))
    assert all(np.array_equal(a, b) for a, b in zip(one.counts, two.counts))


def test_two_releases_compare_by_their_counts_and_parameters_and_are_unhashable():
    codes, y = _data(80, (5, 6), 2, seed=7)
    one = release_marginals(codes, y, (5, 6), 2, 1.0, rng=np.random.default_rng(9))
    assert one == NoisyMarginals([h.copy() for h in one.counts], 1.0, "add-remove", 2)  # arrays compared whole
    changed = [h.copy() for h in one.counts]
    changed[1][4, 1] += 1
    assert one != NoisyMarginals(changed, 1.0, "add-remove", 2)
    assert one != NoisyMarginals(one.counts, 2.0, "add-remove", 2)
    assert one != NoisyMarginals(one.counts, 1.0, "replace-one", 2)
    assert one != NoisyMarginals(one.counts[:1], 1.0, "add-remove", 2)
    assert one != one.counts
    with pytest.raises(TypeError, match="unhashable"):
        hash(one)


# ------------------------------------------------------------------ input checks
GOOD = {"n_codes": (3, 2), "n_classes": 2, "epsilon": 1.0}


@pytest.mark.parametrize(
    ("codes", "y", "changes", "message"),
    [
        (np.zeros(4, np.int64), np.zeros(4, np.int64), {}, "codes: expected a 2-D array"),
        (np.zeros((4, 2)), np.zeros(4, np.int64), {}, "codes: expected integer codes, got dtype float64"),
        (np.zeros((4, 3), np.int64), np.zeros(4, np.int64), {}, "codes: expected 2 feature column"),
        (
            np.array([[0, 0], [3, 1]]),
            np.zeros(2, np.int64),
            {},
            "expected feature 0's codes within 0..2, got a code outside$",
        ),
        (
            np.array([[0, 0], [1, -1]]),
            np.zeros(2, np.int64),
            {},
            "expected feature 1's codes within 0..1, got a code outside$",
        ),
        (
            np.zeros((4, 2), np.int64),
            np.zeros(3, np.int64),
            {},
            "y: expected a 1-D array with one label per row of the codes, got another shape$",
        ),
        (np.zeros((2, 2), np.int64), np.array([0, 2]), {}, "y: expected labels within 0..1, got a label outside$"),
        (np.zeros((2, 2), np.int64), np.array([0.0, 1.0]), {}, "y: expected integer labels"),
        (np.zeros((2, 2), np.int64), np.zeros(2, np.int64), {"epsilon": 0.0}, "epsilon must be a positive finite"),
        (np.zeros((2, 2), np.int64), np.zeros(2, np.int64), {"epsilon": math.inf}, "epsilon must be a positive"),
        (np.zeros((2, 2), np.int64), np.zeros(2, np.int64), {"n_classes": 0}, "n_classes: expected an integer >= 1"),
        (np.zeros((2, 2), np.int64), np.zeros(2, np.int64), {"n_codes": (3, 0)}, r"n_codes\[1\]: expected an integer"),
        (np.zeros((2, 0), np.int64), np.zeros(2, np.int64), {"n_codes": ()}, "n_codes: expected a non-empty sequence"),
        (np.zeros((2, 2), np.int64), np.zeros(2, np.int64), {"relation": "bounded"}, "relation: expected one of"),
    ],
)
def test_release_rejects_bad_inputs_with_what_it_expected(codes, y, changes, message):
    kwargs = {**GOOD, **changes}
    relation = kwargs.pop("relation", "add-remove")
    with pytest.raises(ValueError, match=message):
        release_marginals(codes, y, **kwargs, relation=relation, rng=np.random.default_rng(0))


@pytest.mark.parametrize(
    ("counts", "changes", "message"),
    [
        ((np.zeros((2, 2), np.int32),), {}, r"counts\[0\]: expected an int64 array, got int32"),
        (([[0, 0]],), {}, r"counts\[0\]: expected an int64 array, got list"),
        ((np.zeros((2, 3), np.int64),), {}, r"counts\[0\]: expected shape \(n_codes >= 1, 2\), got \(2, 3\)"),
        ((np.zeros((0, 2), np.int64),), {}, r"expected shape \(n_codes >= 1, 2\), got \(0, 2\)"),
        ((np.full((1, 2), MAX_LEAF_COUNT + 1, np.int64),), {}, r"counts\[0\]: expected values within"),
        ((), {}, "counts: expected a non-empty sequence"),
        (np.zeros((1, 1, 2), np.int64), {}, "counts: expected a non-empty sequence"),
        ((np.zeros((1, 2), np.int64),), {"epsilon": -1.0}, "epsilon must be a positive finite"),
        ((np.zeros((1, 2), np.int64),), {"relation": "swap"}, "relation: expected one of"),
    ],
)
def test_a_deserialized_release_is_checked(counts, changes, message):
    kwargs = {"epsilon": 1.0, "relation": "add-remove", "n_classes": 2, **changes}
    with pytest.raises(ValueError, match=message):
        NoisyMarginals(counts, **kwargs)


def test_scoring_rejects_codes_off_the_release_grid_and_bad_constants():
    released = NoisyMarginals((np.ones((3, 2), np.int64), np.ones((2, 2), np.int64)), 1.0, "add-remove", 2)
    with pytest.raises(ValueError, match="codes: expected 2 feature column"):
        marginal_proba(released, np.zeros((1, 3), np.int64))
    with pytest.raises(ValueError, match="expected feature 1's codes within 0..1, got a code outside$"):
        marginal_proba(released, np.array([[0, 2]]))
    with pytest.raises(ValueError, match="shrinkage: expected a positive finite number"):
        marginal_proba(released, np.zeros((1, 2), np.int64), shrinkage=0.0)
    with pytest.raises(ValueError, match="temper: expected a positive finite number"):
        marginal_proba(released, np.zeros((1, 2), np.int64), temper=-1.0)


# ------------------------------------------------------------------ the estimator (post-processing)
def test_scores_do_not_depend_on_the_order_of_the_rows_scored():
    n_codes = (4, 3, 5)
    codes, y = _data(300, n_codes, 3, seed=8)
    released = release_marginals(codes, y, n_codes, 3, 1.0, rng=np.random.default_rng(1))
    test, _ = _data(60, n_codes, 3, seed=9)
    order = np.random.default_rng(2).permutation(60)
    scores = marginal_log_scores(released, test)
    assert scores.shape == (60, 3)
    assert np.array_equal(marginal_log_scores(released, test[order]), scores[order])
    assert np.array_equal(marginal_log_scores(released, test[:1]), scores[:1])  # each row scored on its own


def test_proba_is_the_softmax_of_the_scores():
    n_codes = (4, 3)
    codes, y = _data(200, n_codes, 3, seed=10)
    released = release_marginals(codes, y, n_codes, 3, 0.5, rng=np.random.default_rng(1))
    test, _ = _data(30, n_codes, 3, seed=11)
    proba, scores = marginal_proba(released, test), marginal_log_scores(released, test)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-12)
    np.testing.assert_allclose(np.log(proba) - np.log(proba[:, :1]), scores - scores[:, :1], atol=1e-10)


def test_with_huge_epsilon_and_many_rows_the_estimator_recovers_the_per_bin_class_frequencies():
    """One feature, temper 1: the probabilities are each bin's class frequencies, up to the pseudo-count.

    At epsilon 1e6 the noise scale is 1e-6 (P(Z != 0) ~ 2 exp(-1e6)), so the release is exact; the
    pseudo-count ``a = 4 * 1e-6 * 3`` moves a frequency by at most ``a / (n_bin + a) < 1e-8``.  And the
    frequencies are within 5 binomial standard deviations of the generating probabilities.
    """
    rng = np.random.default_rng(12)
    truth = np.array([[0.7, 0.2, 0.1], [0.1, 0.8, 0.1], [0.3, 0.3, 0.4], [0.05, 0.15, 0.8]])
    n = 200_000
    bins = rng.integers(0, 4, size=n)
    y = (rng.random(n)[:, None] > np.cumsum(truth[bins], axis=1)).sum(axis=1)
    released = release_marginals(bins[:, None], y, (4,), 3, 1e6, rng=np.random.default_rng(0))
    proba = marginal_proba(released, np.arange(4)[:, None], temper=1.0)
    counts = _histograms(bins[:, None], y, (4,), 3)[0]
    n_bin = counts.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(proba, counts / n_bin, atol=1e-8)
    assert np.all(np.abs(proba - truth) <= 5 * np.sqrt(truth * (1 - truth) / n_bin))


def test_a_bin_with_counts_small_against_the_noise_carries_no_evidence():
    """Counts of 0 against a noise scale of 4e4: each bin's distribution is the prior's (evidence ~ 0)."""
    released = NoisyMarginals((np.zeros((3, 2), np.int64), np.zeros((2, 2), np.int64)), 1e-4, "add-remove", 2)
    log_prior, evidence = marginal_evidence(released, np.array([[0, 0], [2, 1]]))
    np.testing.assert_allclose(log_prior, np.log([0.5, 0.5]))
    np.testing.assert_allclose(evidence, 0.0, atol=1e-12)


def test_the_temper_rule_and_its_default():
    assert MARGINALS_TEMPER_C == 2.5
    assert [marginals_temper(d) for d in (1, 4, 6)] == [1.0, 1.0, 1.0]
    assert marginals_temper(7) == pytest.approx(2.5 / math.sqrt(7))
    assert marginals_temper(25) == 0.5 and marginals_temper(100) == 0.25
    with pytest.raises(ValueError, match="n_features: expected an integer >= 1"):
        marginals_temper(0)
    n_codes = tuple([3] * 16)
    codes, y = _data(500, n_codes, 2, seed=13)
    released = release_marginals(codes, y, n_codes, 2, 2.0, rng=np.random.default_rng(0))
    test, _ = _data(40, n_codes, 2, seed=14)
    assert np.array_equal(marginal_log_scores(released, test), marginal_log_scores(released, test, temper=0.625))
    log_prior, evidence = marginal_evidence(released, test)
    np.testing.assert_allclose(marginal_log_scores(released, test, temper=0.3), log_prior + 0.3 * evidence)


def test_with_two_classes_the_ranking_does_not_depend_on_the_temper():
    n_codes = (5, 4, 6)
    codes, y = _data(400, n_codes, 2, seed=15)
    released = release_marginals(codes, y, n_codes, 2, 1.0, rng=np.random.default_rng(4))
    test, _ = _data(100, n_codes, 2, seed=16)
    low, high = (marginal_proba(released, test, temper=t)[:, 1] for t in (0.3, 1.0))
    order = np.argsort(high, kind="stable")
    assert np.all(np.diff(low[order]) >= -1e-12)  # the rows in the same order (ties aside)
    assert np.ptp(low) > 0.01 and not np.allclose(low, high)  # a real ranking, and the temper does change p
