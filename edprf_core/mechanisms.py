"""The DP mechanisms: permute-and-flip, the exponential and Laplace mechanisms, discrete Laplace counts.

Each states its privacy cost in its docstring; :func:`make_generator` gives the randomness (cryptographic
unless a seed is given, for tests and research only).
"""

from ._count_noise import discrete_laplace_counts
from ._mechanisms import (
    ExponentialMechanism,
    LaplaceMechanism,
    PermuteAndFlip,
    permute_and_flip_literal,
    permute_and_flip_probabilities,
)
from ._randomness import make_generator, spawn_generators

__all__ = [
    "ExponentialMechanism",
    "LaplaceMechanism",
    "PermuteAndFlip",
    "discrete_laplace_counts",
    "make_generator",
    "permute_and_flip_literal",
    "permute_and_flip_probabilities",
    "spawn_generators",
]
