"""The DP mechanisms parties use: permute-and-flip selection and discrete Laplace counts.

Each states its privacy cost in its docstring; :func:`make_generator` gives the randomness (cryptographic
unless a seed is given, for tests and research only).  The paper's baselines (the exponential and Laplace
mechanisms, the literal permute-and-flip) are research options, kept out of this module.
"""

from ._count_noise import discrete_laplace_counts
from ._mechanisms import (
    PermuteAndFlip,
    permute_and_flip_probabilities,
)
from ._randomness import make_generator, spawn_generators
from ._sampler_check import load_exact_samplers

__all__ = [
    "PermuteAndFlip",
    "discrete_laplace_counts",
    "load_exact_samplers",
    "make_generator",
    "permute_and_flip_probabilities",
    "spawn_generators",
]
