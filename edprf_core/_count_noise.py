"""Integer counts released with discrete Laplace (two-sided geometric) noise.

Privacy proof (kept next to the code)
-------------------------------------
Let ``q(D)`` be a vector of integer counts with L1 sensitivity ``Delta`` under
the neighbouring relation (add/remove: a class-count vector moves by 1, the
pair (correct, total) of an evaluation by at most 2).  Releasing
``q(D) + Z`` with ``Z_i`` i.i.d. discrete Laplace of scale ``t = Delta / eps``,
``P(Z = z) ∝ exp(-|z| / t)`` on the integers, is eps-DP: for every output
``o``, ``P(o | D) / P(o | D') = prod_i exp((|o_i - q_i(D')| - |o_i - q_i(D)|) / t)
<= exp(||q(D) - q(D')||_1 / t) <= exp(eps)``.  Output and noise are integers,
so nothing of the floating-point representation of a sum can leak (the attack
of Mironov, CCS 2012, needs real-valued noise).

Two samplers:

- ``rng=None`` (production): OpenDP's exact discrete Laplace sampler
  (rational arithmetic, randomness from the operating system).  It cannot be
  seeded.
- a numpy ``Generator`` (research, seeded simulations): the difference of two
  geometric variables with ``p = 1 - exp(-1/t)``, which has the same law up to
  the floating-point rounding of ``p``; fine for studies, not for releases.
"""

from __future__ import annotations

import functools
import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._mechanisms import check_epsilon
from ._opendp_constructors import opendp_constructors

__all__ = ["discrete_laplace_counts"]


def _opendp_measurement(scale: float, n: int):
    """OpenDP's discrete Laplace measurement of ``scale`` on ``n`` integer counts (L1 distance)."""
    dp = opendp_constructors()  # imported at first use: research runs never need OpenDP
    return _laplace_measurement(dp.m.make_laplace, float(scale), int(n))


@functools.lru_cache(maxsize=256)
def _laplace_measurement(make_laplace, scale: float, n: int):
    """Built once per process and reused (each invocation draws afresh, from the operating system).  Cached by the
    constructor object itself: a replaced ``opendp.measurements.make_laplace`` (the privacy gate's weakened sampler,
    the instrumentation's recorder) is a new key, so its measurement is built and used while it is in place.
    ``make_laplace(domain, metric, scale)`` is what ``domain, metric >> then_laplace(scale)`` builds."""
    dp = opendp_constructors()
    return make_laplace(dp.vector_domain(dp.atom_domain(T="i64"), size=n), dp.l1_distance(T="i64"), scale=scale)


def discrete_laplace_counts(
    counts: ArrayLike, epsilon: float, sensitivity: int = 1, rng: np.random.Generator | None = None
) -> NDArray[np.int64]:
    """Release integer ``counts`` with discrete Laplace noise of scale ``sensitivity / epsilon``.

    Parameters
    ----------
    counts : array-like of int
        The exact counts (any shape); must be integers.
    epsilon : float in (0, inf)
        Privacy budget of this release.
    sensitivity : int >= 1
        L1 sensitivity of the count vector under the neighbouring relation.
    rng : numpy Generator or None
        ``None`` draws with OpenDP's exact sampler (what a party releases);
        a Generator draws the research approximation (seeded, reproducible).

    Returns
    -------
    ndarray of int64, same shape as ``counts`` (may be negative).

    Privacy cost: ``epsilon`` (eps-DP for a query of L1 sensitivity
    ``sensitivity``; proof in the module docstring).  Independent calls compose
    sequentially.
    """
    eps = check_epsilon(epsilon)
    if isinstance(sensitivity, bool) or not isinstance(sensitivity, (int, np.integer)) or sensitivity < 1:
        raise ValueError(f"sensitivity must be an integer >= 1, got {sensitivity!r}")
    arr = np.asarray(counts)
    integral = np.issubdtype(arr.dtype, np.integer) or (np.all(np.isfinite(arr)) and np.all(arr == np.round(arr)))
    if arr.size and not integral:
        raise ValueError("counts must be integers")
    values = arr.astype(np.int64)
    scale = int(sensitivity) / eps
    if rng is None:
        if values.size == 0:
            return values.copy()
        # OpenDP's map rounds up (it may give eps * (1 + 2**-52)): the scale is inflated by a relative
        # 1e-12 so that the map meets the requested eps exactly and the ledger's figure is the true cost
        meas = _opendp_measurement(scale * (1 + 1e-12), values.size)
        if meas.map(int(sensitivity)) > eps:
            raise RuntimeError("the discrete Laplace measurement does not meet the requested epsilon")
        # an int64 array goes to OpenDP's i64 vector as is (no per-element Python conversion)
        noisy = np.asarray(meas(np.ascontiguousarray(values.ravel())), dtype=np.int64)
        return noisy.reshape(values.shape)
    p = -math.expm1(-1.0 / scale)  # 1 - exp(-1/t)
    noise = rng.geometric(p, size=values.shape) - rng.geometric(p, size=values.shape)
    return values + noise.astype(np.int64)
