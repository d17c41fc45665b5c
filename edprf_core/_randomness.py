"""Random number generation for DP mechanisms.

Production releases draw from a numpy ``Generator`` whose seed comes from the
operating system's cryptographic random source (``secrets``).  A fixed
``random_state`` exists for tests and reproducible research only: with a known
seed, anyone can recompute the noise and strip it.
"""

from __future__ import annotations

import numbers
import secrets

import numpy as np

__all__ = ["RandomState", "is_cryptographically_seeded", "make_generator", "spawn_generators"]

RandomState = None | int | np.random.Generator | np.random.SeedSequence | np.random.RandomState

_CSPRNG_BITS = 256


def _seed_sequence(random_state: RandomState) -> tuple[np.random.SeedSequence, bool]:
    if random_state is None:
        return np.random.SeedSequence(secrets.randbits(_CSPRNG_BITS)), True
    if isinstance(random_state, np.random.SeedSequence):
        return random_state, False
    if isinstance(random_state, np.random.RandomState):  # scikit-learn's convention: drawn from, so it moves on
        return np.random.SeedSequence(random_state.randint(0, 2**32, size=4, dtype=np.uint64).tolist()), False
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        if int(random_state) < 0:
            raise ValueError(f"random_state must be a non-negative integer, got {random_state}")
        return np.random.SeedSequence(int(random_state)), False
    raise TypeError(
        "random_state must be None (cryptographically seeded), a non-negative int, "
        f"a numpy SeedSequence, Generator or RandomState; got {type(random_state).__name__}"
    )


def make_generator(random_state: RandomState = None) -> np.random.Generator:
    """Return the master generator for one fit.

    Parameters
    ----------
    random_state : None, int, SeedSequence, Generator or RandomState
        ``None`` (the default, and the only choice for a production release)
        seeds a PCG64DXSM generator with 256 bits from :mod:`secrets`.  An int or
        SeedSequence gives a reproducible stream for tests and simulation.  A
        Generator is used as is; a legacy ``RandomState`` (scikit-learn's
        convention) seeds one with 128 bits drawn from it, so each fit moves it on.
    """
    if isinstance(random_state, np.random.Generator):
        return random_state
    seq, _ = _seed_sequence(random_state)
    return np.random.Generator(np.random.PCG64DXSM(seq))


def is_cryptographically_seeded(random_state: RandomState) -> bool:
    """True when ``random_state`` asks for an OS-entropy seed (``None``)."""
    return random_state is None


def spawn_generators(master: np.random.Generator, n: int) -> list[np.random.Generator]:
    """Derive ``n`` independent child streams (one per tree) from ``master``.

    The children are seeded from 128 bits drawn from the master, so their
    unpredictability is that of the master.
    """
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    entropy = master.integers(0, 2**63, size=2, dtype=np.uint64)
    children = np.random.SeedSequence([int(e) for e in entropy]).spawn(n)
    return [np.random.Generator(np.random.PCG64DXSM(c)) for c in children]
