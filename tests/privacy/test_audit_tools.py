"""The audit's own tools: the bound is sound, its power claim holds, the weakened sampler is what it says."""

from __future__ import annotations

import math

import numpy as np
import opendp.prelude as dp
import pytest

from edprf_core.mechanisms import discrete_laplace_counts

from ._audit import assured_lower_bound, discrete_laplace_tail_law, loss_lower_bound, opendp_noise_scaled

pytestmark = pytest.mark.privacy


def test_the_lower_bound_is_sound_on_a_known_ratio():
    """Binomial draws with a log-ratio of exactly 1 (seeded): the bound stays below 1, at every seed."""
    rng = np.random.default_rng(0)
    n, p, q = 50_000, 0.5, 0.5 / math.e
    bounds = [loss_lower_bound(rng.binomial(n, p), n, rng.binomial(n, q), n) for _ in range(50)]
    assert max(bounds) <= 1.0 and min(bounds) > 0.9


def test_the_assured_bound_is_reached_at_least_that_often():
    """Seeded draws from the laws: the bound falls below the assured value no more often than beta allows."""
    rng = np.random.default_rng(1)
    p, q, n_a, n_b, beta = 0.5, 0.05, 300, 600, 0.05
    assured = assured_lower_bound(p, q, n_a, n_b, beta=beta)
    bounds = np.array([loss_lower_bound(rng.binomial(n_a, p), n_a, rng.binomial(n_b, q), n_b) for _ in range(200)])
    assert np.mean(bounds < assured) <= beta


def test_the_weakened_sampler_keeps_an_honest_map_and_draws_less_noise():
    dp.enable_features("contrib")
    space = dp.vector_domain(dp.atom_domain(T="i64"), size=1), dp.l1_distance(T="i64")
    honest = space >> dp.m.then_laplace(scale=1.0)
    with opendp_noise_scaled(0.5):
        weakened = space >> dp.m.then_laplace(scale=1.0)
        draws = discrete_laplace_counts(np.zeros(20_000, dtype=np.int64), 1.0)
    assert weakened.map(1) == honest.map(1)
    a = math.exp(-2.0)  # half the scale: variance 2a / (1 - a)^2
    assert np.var(draws) == pytest.approx(2 * a / (1 - a) ** 2, rel=0.2)
    with opendp_noise_scaled(0.0):
        assert list(discrete_laplace_counts(np.arange(5), 1.0)) == list(range(5))
    assert dp.m.make_laplace.__name__ == "make_laplace"  # restored


def test_the_tail_law_has_the_budgeted_log_ratio():
    p, q = discrete_laplace_tail_law(2.0 / 1.5, coordinates=2)
    assert math.log(p / q) == pytest.approx(1.5)
