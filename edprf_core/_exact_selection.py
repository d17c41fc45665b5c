"""Exact permute-and-flip: OpenDP's noisy max with exponential noise on integer utilities.

The production backend of the tree mechanisms (``sampler="exact"``).

Privacy proof (kept next to the code)
-------------------------------------
Permute-and-flip equals report-noisy-max with exponential noise (Ding et al.
2021); OpenDP's ``make_noisy_max`` over ``MaxDivergence`` is that mechanism,
sampled exactly (arbitrary-precision arithmetic, randomness from the operating
system), with the privacy map ``eps = d_in / scale`` for a *monotonic*
``LInfDistance`` and ``2 d_in / scale`` otherwise.  So for integer utilities
of sensitivity ``Delta_int`` (monotone or not), ``scale = f * Delta_int / eps``
with ``f`` = 1 (monotone) or 2 gives an eps-DP selection, and no floating-point
value of the noise is ever computed or compared.

Integer utilities.  Class counts are integers already (sensitivity 1,
monotone).  The split utility ``-sum_v g(v)`` with ``g = N - S/N`` (see
:mod:`edprf_core._mechanisms`) is a rational; it is mapped to integers per
child as ``t(v) = floor(K * (N^2 - S) / N)`` with ``K = 2**16``, computed in
exact integer arithmetic (``N^2 - S = q N + r``, so ``t = K q + floor(K r / N)``):

Widths, from proven bounds.  ``fit`` refuses more than ``MAX_FIT_ROWS = 2**31 - 1``
rows locally, before anything is charged or released, so every node has
``N <= 2**31 - 1``: ``N^2 < 2**62`` fits int64; ``0 <= t(v) <= K N < 2**47``;
a candidate's utility, minus a sum of ``t`` over children that partition the
node, lies in ``[-K N, 0]``, far inside OpenDP's ``i64`` domain (``T="i64"``;
the ``i32`` domain overflowed once ``K N`` passed ``2**31``, i.e. from about
32,768 rows in one node, and the failure itself told neighbours apart).
Nothing here can fail on one dataset and not on a neighbour.

- ``floor`` is a monotone non-decreasing map, so ``t`` moves in the same
  direction as ``g``: the utility stays monotone under add/remove;
- ``g`` moves by less than ``Delta`` (2 under add/remove), so ``t`` moves by
  at most ``K * Delta`` (a difference of floors is below the difference of
  their arguments plus 1, and an integer); ``K * Delta + 1`` is used as the
  sensitivity, one unit of slack.

No step depends on the data's size below that limit.  The limit itself is
one a dataset could cross (2**31 - 1 rows fit, 2**31 are refused), but only
past the memory any party's reader has: the out-of-memory failure comes
first, and both lie outside the guarantee (``docs/privacy.md``).

Only the child that receives the added record changes, so a candidate's
integer utility has sensitivity ``Delta_int = K * Delta + 1``.  The extra
``+1`` costs a relative ``1 / (K * Delta)`` (under 1e-5) of the noise.

Under replace-one the old record leaves one child and the new one enters
another (or the same): each child's ``t`` moves by at most ``K * Delta`` (add/remove),
so the utility by at most ``2 K Delta``, which the replace-one
``Delta`` (4, twice the add/remove 2) already calibrates; the utility is then
not monotone, which OpenDP's map accounts for (twice the scale's cost).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._opendp_constructors import opendp_constructors
from ._opendp_entry import index_draw

__all__ = ["MAX_FIT_ROWS", "UTILITY_SCALE", "ExactPermuteAndFlip", "integer_weighted_gini"]

UTILITY_SCALE = 1 << 16
"""``K``: split utilities are counted in 1/65536ths."""

MAX_FIT_ROWS = 2**31 - 1
"""Most rows one ``fit`` accepts (a public, local limit: the integer widths above are proven up to it)."""


def integer_weighted_gini(v: NDArray[np.float64]) -> NDArray[np.float64]:
    """``floor(K * (N^2 - S) / N)`` over the last axis (0 when empty), exact, as integers in float64."""
    counts = v.astype(np.int64)
    n = counts.sum(axis=-1)
    sq = np.einsum("...c,...c->...", counts, counts)
    q, r = np.divmod(n * n - sq, np.maximum(n, 1))
    return (UTILITY_SCALE * q + (UTILITY_SCALE * r) // np.maximum(n, 1)).astype(np.float64)


@functools.lru_cache(maxsize=256)
def _noisy_max_draw(make_noisy_max, sensitivity: int, monotone: bool, epsilon: float):
    """The exact draw of OpenDP's noisy max at ``epsilon`` for integer utilities of ``sensitivity``, built once per
    process and reused by every fit (building costs about a millisecond; each draw is fresh, from the operating
    system).  Cached by the constructor object itself: a replaced ``opendp.measurements.make_noisy_max`` (the
    privacy gate's weakened sampler, the instrumentation's recorder) is a new key, so its measurement is built and
    used while it is in place, and the genuine one again once it is restored.

    Privacy cost: none (nothing is drawn).  Raises RuntimeError when OpenDP's map exceeds ``epsilon``.
    """
    dp = opendp_constructors()
    factor = 1 if monotone else 2
    scale = factor * sensitivity / epsilon * (1 + 1e-12)
    space = dp.vector_domain(dp.atom_domain(T="i64")), dp.linf_distance(T="i64", monotonic=monotone)
    meas = make_noisy_max(*space, dp.max_divergence(), scale=scale)
    if meas.map(sensitivity) > epsilon:
        raise RuntimeError("the noisy-max measurement does not meet the requested epsilon")
    return index_draw(meas)


@dataclass
class ExactPermuteAndFlip:
    """Permute-and-flip on integer utilities, sampled exactly by OpenDP.

    Parameters
    ----------
    sensitivity : int >= 1
        Sensitivity of the integer utilities (``Delta_int``).
    monotone : bool
        The utilities move in one direction between neighbours (halves the scale).

    Notes
    -----
    Privacy cost: one selection on a row of utilities with budget ``eps`` in
    (0, inf) is eps-DP for that row's data (module docstring).  The ``rng``
    argument of :meth:`select` is ignored: OpenDP draws from the operating
    system and cannot be seeded.
    """

    sensitivity: int
    monotone: bool = False

    def __post_init__(self) -> None:
        if (
            isinstance(self.sensitivity, bool)
            or not isinstance(self.sensitivity, (int, np.integer))
            or self.sensitivity < 1
        ):
            raise ValueError(f"sensitivity must be an integer >= 1, got {self.sensitivity!r}")

    def _measurement(self, epsilon: float):
        """The draw at ``epsilon``: :func:`_noisy_max_draw`'s, built once per process (no copy kept here)."""
        if not math.isfinite(epsilon) or epsilon <= 0:
            raise ValueError(f"epsilon must be a positive finite number, got {epsilon!r}")
        dp = opendp_constructors()  # imported at first use: research runs never need OpenDP
        return _noisy_max_draw(dp.m.make_noisy_max, int(self.sensitivity), bool(self.monotone), float(epsilon))

    def select(
        self, utilities: ArrayLike, epsilon: ArrayLike, rng: object = None, valid: ArrayLike | None = None
    ) -> NDArray[np.intp]:
        """One candidate per row of ``utilities`` (exact integers), or -1 where none is valid."""
        u = np.asarray(utilities)
        if u.ndim != 2:
            raise ValueError(f"utilities must be 2-D (selections, candidates), got shape {u.shape}")
        if u.size and not np.all(u == np.round(u)):
            raise ValueError("the exact sampler needs integer utilities")
        ok = np.ones(u.shape, dtype=bool) if valid is None else np.broadcast_to(np.asarray(valid, dtype=bool), u.shape)
        eps = np.broadcast_to(np.asarray(epsilon, dtype=np.float64), u.shape[:1])
        out = np.full(u.shape[0], -1, dtype=np.intp)
        # the valid candidates of every row, gathered once: row i's are flat[bounds[i]:bounds[i + 1]] (contiguous)
        row, column = np.nonzero(ok)
        flat = np.ascontiguousarray(u[row, column], dtype=np.int64)
        bounds = np.searchsorted(row, np.arange(u.shape[0] + 1))
        rows = np.flatnonzero(bounds[1:] > bounds[:-1])
        draws: dict[float, object] = {}
        for i, e, a, b in zip(rows.tolist(), eps[rows].tolist(), bounds[rows].tolist(), bounds[rows + 1].tolist()):
            draw = draws.get(e)
            if draw is None:
                draw = draws[e] = self._measurement(e)
            # one exact draw per selection: an int64 slice handed to OpenDP's C entry point as is (no per-element
            # Python conversion, no type parsing: edprf_core._opendp_entry); one measurement invocation each
            out[i] = column[a + draw(flat[a:b])]
        return out
