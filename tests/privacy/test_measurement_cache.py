"""The exact samplers build each OpenDP measurement once per process, keyed by the constructor object itself.

Reusing measurements across fits saves about 2 ms a fit; it must never keep a measurement that the privacy gate
(``_audit.opendp_noise_scaled``) or the instrumentation replaced, nor keep the replaced one afterwards: a replaced
``make_noisy_max`` / ``make_laplace`` is a new key. What the fits draw is checked here by the law of the draws
(a weakened scale shows as the spread of the noise), not by which object was used.
"""

from __future__ import annotations

import numpy as np
import pytest

from edprf_core._count_noise import discrete_laplace_counts
from edprf_core._exact_selection import ExactPermuteAndFlip

from ._audit import opendp_noise_scaled

pytestmark = pytest.mark.privacy

DRAWS = 400


def _laplace_spread() -> float:
    """Mean absolute noise of ``DRAWS`` exact draws at scale 10 (expected about 10)."""
    return float(np.mean(np.abs(discrete_laplace_counts(np.zeros(DRAWS, dtype=np.int64), 0.1))))


def test_a_weakened_laplace_is_used_while_in_place_and_the_genuine_one_after():
    # mean |Z| of the discrete Laplace at scale t is about t; over 400 draws its standard error is under 0.8 t / 20
    before = _laplace_spread()
    with opendp_noise_scaled(0.0):
        assert _laplace_spread() == 0.0, "a cached genuine measurement outlived the weakened constructor"
    after = _laplace_spread()
    assert 7.0 < before < 13.0 and 7.0 < after < 13.0, (before, after)


def test_a_weakened_noisy_max_is_used_while_in_place_and_the_genuine_one_after():
    # utilities (1, 0) at eps 1 (scale 2): with the genuine noise the lower one wins often; without noise, never.
    # each phase is a new selection, as each fit makes its own
    utilities = np.tile(np.array([[1, 0]], dtype=np.int64), (DRAWS, 1))

    def losers() -> int:
        return int(np.sum(ExactPermuteAndFlip(sensitivity=1).select(utilities, 1.0) == 1))

    assert losers() > DRAWS // 10
    with opendp_noise_scaled(0.0):
        assert losers() == 0, "a cached genuine noisy max outlived the weakened constructor"
    assert losers() > DRAWS // 10, "the weakened noisy max outlived its constructor"
