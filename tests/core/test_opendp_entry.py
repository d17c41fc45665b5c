"""The direct call of OpenDP's C entry point (``edprf_core._opendp_entry``) draws what the public call draws."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from edprf_core._exact_selection import ExactPermuteAndFlip
from edprf_core._opendp_constructors import opendp_constructors
from edprf_core._opendp_entry import IndexDraw, index_draw


def _noisy_max(scale: float, T: str = "i64"):
    dp = opendp_constructors()
    domain = dp.vector_domain(dp.atom_domain(T=T, nan=False) if T != "i64" else dp.atom_domain(T=T))
    return dp.m.make_noisy_max(domain, dp.linf_distance(T=T, monotonic=True), dp.max_divergence(), scale=scale)


def test_a_noisy_max_on_int64_vectors_takes_the_direct_call():
    assert isinstance(index_draw(_noisy_max(1.0)), IndexDraw)


@pytest.mark.parametrize("n", [1, 2, 7, 60])
def test_decisive_utilities_give_the_same_index_as_the_public_call(n):
    """A gap of 10^12 at scale 1 leaves the winner to chance with probability below e^-(10^12)."""
    meas = _noisy_max(1.0)
    draw = index_draw(meas)
    for winner in range(n):
        u = np.zeros(n, dtype=np.int64)
        u[winner] = 10**12
        assert draw(u) == winner == meas(u)


def test_views_and_other_integer_dtypes_are_passed_as_their_int64_values():
    draw = index_draw(_noisy_max(1.0))
    block = np.zeros((3, 8), dtype=np.int64)
    block[1, 5] = 10**12
    assert draw(block[1]) == 5
    assert draw(block[:, 5]) == 1  # a strided column
    assert draw(np.array([0, 0, 10**9], dtype=np.int32)) == 2


def test_opendp_errors_come_through_as_opendp_raises_them():
    from opendp.mod import OpenDPException

    draw = index_draw(_noisy_max(1.0))
    with pytest.raises(OpenDPException, match="empty"):
        draw(np.zeros(0, dtype=np.int64))
    assert draw(np.array([0, 10**12], dtype=np.int64)) == 1  # and the next draw is fine


def test_measurements_not_on_int64_vectors_are_refused():
    with pytest.raises(TypeError, match=r"expected a measurement on Vec<i64>, got one on Vec<f64>"):
        index_draw(_noisy_max(1.0, T="f64"))


def test_the_exact_sampler_draws_through_the_direct_call(caplog):
    sampler = ExactPermuteAndFlip(sensitivity=3, monotone=True)
    u = np.zeros((4, 6))
    u[np.arange(4), [5, 0, 3, 3]] = 1e12
    with caplog.at_level(logging.WARNING):
        assert sampler.select(u, 1.0).tolist() == [5, 0, 3, 3]
    assert isinstance(sampler._measurement(1.0), IndexDraw)
    assert not caplog.records  # no fallback to the Python layer
