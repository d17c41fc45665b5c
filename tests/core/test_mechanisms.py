"""Distribution tests of the mechanisms (fixed seeds; chi-square at alpha = 1e-4)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from edprf_core._mechanisms import ExponentialMechanism, LaplaceMechanism, permute_and_flip_literal
from edprf_core.mechanisms import PermuteAndFlip, permute_and_flip_probabilities

ALPHA = 1e-4
UTILITY_CASES = [
    (np.array([0.0, -1.0, -2.0, -4.0, -8.0]), 1.0, 1.0, False),
    (np.array([-3.0, -3.0, -1.0, -10.0]), 0.5, 2.0, False),
    (np.array([5.0, 4.0, 4.0, 0.0, 1.0, 2.0]), 2.0, 1.0, True),
    (np.zeros(4), 1.0, 1.0, False),
]


def _chisquare_pvalue(samples: np.ndarray, probs: np.ndarray) -> float:
    observed = np.bincount(samples, minlength=probs.size)
    return float(stats.chisquare(observed, probs * samples.size).pvalue)


def _brute_force_pf(u: np.ndarray, eps: float, sens: float, monotone: bool) -> np.ndarray:
    """Average over every permutation of the candidates (exact for small m)."""
    from itertools import permutations

    p = np.exp(eps * (u - u.max()) / ((1 if monotone else 2) * sens))
    out = np.zeros(u.size)
    perms = list(permutations(range(u.size)))
    for perm in perms:
        reach = 1.0
        for r in perm:
            out[r] += reach * p[r]
            reach *= 1 - p[r]
    return out / len(perms)


@pytest.mark.parametrize("u,eps,sens,monotone", UTILITY_CASES)
def test_exact_probabilities_match_brute_force(u, eps, sens, monotone):
    np.testing.assert_allclose(
        permute_and_flip_probabilities(u, eps, sens, monotone),
        _brute_force_pf(u, eps, sens, monotone),
        rtol=1e-9,
        atol=1e-12,
    )


@pytest.mark.parametrize("u,eps,sens,monotone", UTILITY_CASES)
def test_vectorized_pf_matches_exact_distribution(u, eps, sens, monotone):
    rng = np.random.default_rng(1234)
    n = 200_000
    mech = PermuteAndFlip(sens, monotone=monotone)
    samples = mech.select(np.broadcast_to(u, (n, u.size)), eps, rng)
    assert _chisquare_pvalue(samples, permute_and_flip_probabilities(u, eps, sens, monotone)) > ALPHA


@pytest.mark.parametrize("u,eps,sens,monotone", UTILITY_CASES)
def test_literal_pf_matches_exact_distribution(u, eps, sens, monotone):
    rng = np.random.default_rng(99)
    samples = np.array([permute_and_flip_literal(u, eps, sens, rng, monotone) for _ in range(20_000)])
    assert _chisquare_pvalue(samples, permute_and_flip_probabilities(u, eps, sens, monotone)) > ALPHA


def test_chisquare_detects_wrong_noise_scale():
    """Power check: the test above rejects a mechanism with half the noise."""
    u, eps, sens, _ = UTILITY_CASES[0]
    rng = np.random.default_rng(1234)
    samples = PermuteAndFlip(sens).select(np.broadcast_to(u, (200_000, u.size)), 2 * eps, rng)
    assert _chisquare_pvalue(samples, permute_and_flip_probabilities(u, eps, sens)) < ALPHA


def test_exponential_mechanism_distribution():
    u = np.array([0.0, -1.0, -3.0, -0.5])
    mech = ExponentialMechanism(1.0)
    samples = mech.select(np.broadcast_to(u, (200_000, 4)), 1.5, np.random.default_rng(5))
    assert _chisquare_pvalue(samples, mech.probabilities(u, 1.5)) > ALPHA


def test_pf_is_never_worse_than_exponential_mechanism():
    """McKenna & Sheldon: PF's expected error is at most the EM's, for the same eps."""
    u = np.array([0.0, -1.0, -2.0, -2.0, -5.0])
    pf = permute_and_flip_probabilities(u, 1.0, 1.0)
    em = ExponentialMechanism(1.0).probabilities(u, 1.0)
    assert pf @ (u.max() - u) <= em @ (u.max() - u) + 1e-12


def test_laplace_noise_scale():
    rng = np.random.default_rng(3)
    noisy = LaplaceMechanism(2.0).randomise(np.zeros((100_000, 1)), 0.5, rng)
    # Laplace(b = 4): variance 2 b^2 = 32; the sample variance of 1e5 draws is within 3 %
    assert abs(noisy.var() / 32.0 - 1) < 0.03


def test_invalid_candidates_are_never_chosen_and_empty_rows_give_minus_one():
    rng = np.random.default_rng(0)
    u = np.array([[10.0, 0.0, 0.0], [0.0, 0.0, 0.0]])
    valid = np.array([[False, True, True], [False, False, False]])
    out = PermuteAndFlip(1.0).select(np.tile(u, (500, 1)), 1.0, rng, np.tile(valid, (500, 1)))
    assert set(out[::2].tolist()) <= {1, 2}
    assert np.all(out[1::2] == -1)


@pytest.mark.parametrize("eps", [0.0, -1.0, np.nan, np.inf, "x"])
def test_bad_epsilon_is_refused(eps):
    with pytest.raises(ValueError, match="epsilon"):
        PermuteAndFlip(1.0).select(np.zeros((1, 3)), eps, np.random.default_rng(0))


@pytest.mark.parametrize("sens", [0.0, -2.0, np.inf])
def test_bad_sensitivity_is_refused(sens):
    with pytest.raises(ValueError, match="sensitivity"):
        PermuteAndFlip(sens)
