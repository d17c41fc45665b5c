"""Discrete Laplace counts: exact (OpenDP) and research (numpy) samplers agree with the law."""

import math

import numpy as np
import pytest
from scipy import stats

from edprf_core.mechanisms import discrete_laplace_counts


def _pmf(z: np.ndarray, scale: float) -> np.ndarray:
    a = math.exp(-1.0 / scale)
    return (1 - a) / (1 + a) * a ** np.abs(z)


@pytest.mark.parametrize("exact", [False, True])
def test_noise_follows_discrete_laplace(exact):
    eps, n = 1.0, 20_000
    rng = None if exact else np.random.default_rng(7)
    if exact:
        draws = np.concatenate([discrete_laplace_counts(np.zeros(2000, dtype=int), eps, 1) for _ in range(10)])
    else:
        draws = discrete_laplace_counts(np.zeros(n, dtype=int), eps, 1, rng)
    assert draws.dtype == np.int64
    support = np.arange(-6, 7)
    observed = np.array([np.sum(draws == z) for z in support] + [np.sum(np.abs(draws) > 6)])
    p = _pmf(support, 1.0 / eps)
    expected = np.append(p, 1 - p.sum()) * draws.size
    _, pvalue = stats.chisquare(observed, expected)
    assert pvalue > 1e-4


def test_counts_are_shifted_and_shape_kept():
    out = discrete_laplace_counts(np.array([[5, 100]]), 50.0, 2, np.random.default_rng(0))
    assert out.shape == (1, 2) and np.all(np.abs(out - [[5, 100]]) <= 3)


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan"), float("inf")])
def test_bad_epsilon_refused(bad):
    with pytest.raises(ValueError):
        discrete_laplace_counts([1, 2], bad)


def test_non_integer_counts_refused():
    with pytest.raises(ValueError, match="integers"):
        discrete_laplace_counts([1.5], 1.0)
