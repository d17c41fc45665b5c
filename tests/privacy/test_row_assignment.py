"""The randomness that is not noise: which tree, or the marginals, each row of a party's fit goes to.

The forest is ε-DP by parallel composition only if each row's part is drawn independently of every other
row and of the data, and from a seed nobody knows (``ParallelComposition``, ``marginals_rows``,
``docs/privacy.md``): under add/remove, one record's presence must not move any other record.  Round-robin
by input order, a shuffle cut into equal chunks (one inserted record shifts a record across every later
boundary) and a constant seed all keep every noise call intact, so the mechanism audits cannot see them.

Here a party serves train requests through its real Flower handler with production settings (no seed, the
exact samplers, automatic depth), and :class:`._row_assignment.AssignmentRecorder` records what each fit
CONSUMED: the ``sample_tree`` / ``sample_rows`` handed to ``build_forest`` and the rows handed to
``release_marginals``, mapped back to input positions.  The tests then require, at ``ALPHA = 1e-6`` per
assertion, with exact laws (stated at each test):

(a) each position's tree is uniform over the T trees, and adjacent positions share a tree with probability
    1/T (round-robin: never);
(b) the trees' sizes vary like Multinomial(n, 1/T) (a balanced cut: not at all);
(c) the marginals mask: each position in with probability ``share``, adjacent positions independent, the
    part's size varying like Binomial(n, share) (by input order: fixed);
(d) the assignment is a function of the operating system's entropy (``secrets.randbits``): two known
    entropies give two assignments, one gives one, and two unpatched fits differ.

For (a)-(c) ``secrets.randbits`` (as ``edprf_core._randomness`` reaches it) is fed by a fixed-seed stream so
the statistics are reproducible: that fixes the entropy only; the code path from it to the assignment is
production's.
"""

from __future__ import annotations

import itertools
import random
import secrets
from pathlib import Path

import numpy as np
import pytest
from scipy.fft import irfft, next_fast_len, rfft
from scipy.stats import binom, multinomial

from ._party_requests import TrainSettings, flower_task_identity  # noqa: F401 (a fixture)
from ._row_assignment import AGE_BINS, AssignmentRecorder, Consumed, entropy_party

pytestmark = [pytest.mark.privacy, pytest.mark.usefixtures("flower_task_identity")]

ALPHA = 1e-6
"""Probability that one assertion fails for a correct assignment (Bonferroni within an assertion)."""

N_TREES = 3
TREES = TrainSettings(n_trees=N_TREES, max_depth=1, n_bins=AGE_BINS)
"""Production request, trees only: 3 trees, automatic depth capped at 1 (fast), the 8-bin grid."""
TREE_ROWS, TREE_FITS = 144, 80

SHARE = 0.5
MIXED = TrainSettings(n_trees=2, max_depth=1, n_bins=AGE_BINS, marginals_share=SHARE, marginals_bins=AGE_BINS)
"""Production request with a marginals part: half the rows in expectation, on the trees' grid."""
MIXED_ROWS, MIXED_FITS = 144, 60


# ------------------------------------------------------------------ exact laws and their bands
def binomial_band(n: int, p: float, alpha: float) -> tuple[int, int]:
    """``[lo, hi]`` with P(X < lo) < alpha/2 and P(X > hi) <= alpha/2 for X ~ Binomial(n, p) (exact)."""
    k = np.arange(n + 1)
    lo = int(np.argmax(binom.cdf(k, n, p) >= alpha / 2))
    hi = int(np.argmax(binom.sf(k, n, p) <= alpha / 2))
    return lo, hi


def sum_band(values: np.ndarray, probs: np.ndarray, n_copies: int, alpha: float) -> tuple[int, int]:
    """``[lo, hi]`` for the sum of ``n_copies`` iid copies of a law on non-negative integers, two-sided at alpha.

    The sum's law is the ``n_copies``-fold convolution of the one-copy law, by FFT on at least the sum's support
    (so nothing wraps round); its rounding error, about 1e-13, is far below the alpha/2 tails.
    """
    pmf = np.bincount(values, weights=probs)
    size = (pmf.size - 1) * n_copies + 1
    length = next_fast_len(size, real=True)
    law = np.clip(irfft(rfft(pmf, length) ** n_copies, length)[:size], 0.0, None)
    law /= law.sum()
    cdf, sf = np.cumsum(law), np.cumsum(law[::-1])[::-1] - law  # sf[k] = P(S > k)
    return int(np.argmax(cdf >= alpha / 2)), int(np.argmax(sf <= alpha / 2))


def tree_sizes_law(n: int, n_trees: int) -> tuple[np.ndarray, np.ndarray]:
    """Law of ``Q = sum_t (N_t - n/T)^2`` for ``(N_t) ~ Multinomial(n, 1/T)``: values and probabilities."""
    assert n % n_trees == 0
    sizes = np.array(
        [(*c, n - sum(c)) for c in itertools.product(range(n + 1), repeat=n_trees - 1) if sum(c) <= n], dtype=np.int64
    )
    q = ((sizes - n // n_trees) ** 2).sum(axis=1)
    return q, multinomial.pmf(sizes, n, np.full(n_trees, 1.0 / n_trees))


# ------------------------------------------------------------------ the fits
def _fits(tmp_path_factory, settings: TrainSettings, n_rows: int, n_fits: int, seed: int) -> list[Consumed]:
    setup = entropy_party(tmp_path_factory.mktemp("party"), n_rows)
    with pytest.MonkeyPatch.context() as monkeypatch:
        recorder = AssignmentRecorder().install(monkeypatch)
        recorder.watch_entropy(monkeypatch, random.Random(seed).getrandbits)  # fixed entropy, production path
        fits = [recorder.serve(setup, settings, f"run1/train{i}") for i in range(n_fits)]
    for fit in fits:  # the production path: exact samplers, OS-seeded, parallel composition
        p = fit.params
        assert (p.sampler, p.seeded, p.dp, p.composition) == ("exact", False, True, "parallel")
        assert fit.n_trees == p.n_trees == settings.n_trees and fit.tree_of.size == n_rows
    return fits


@pytest.fixture(scope="module")
def tree_fits(tmp_path_factory, flower_task_identity) -> list[Consumed]:  # noqa: F811 (the fixture, first)
    return _fits(tmp_path_factory, TREES, TREE_ROWS, TREE_FITS, seed=20251)


@pytest.fixture(scope="module")
def mixed_fits(tmp_path_factory, flower_task_identity) -> list[Consumed]:  # noqa: F811 (the fixture, first)
    fits = _fits(tmp_path_factory, MIXED, MIXED_ROWS, MIXED_FITS, seed=20252)
    for fit in fits:
        assert fit.params.marginals_share == SHARE and fit.params.marginals_bins == AGE_BINS
    return fits


# ------------------------------------------------------------------ (a) each row's tree
def test_each_row_s_tree_is_uniform_and_independent_of_its_neighbour(tree_fits):
    """Over F fits, position i's count in tree t is Binomial(F, 1/T) (iid uniform trees); the band is exact at
    ALPHA / (n T) per cell (Bonferroni over the n T cells).  For iid uniform trees X_1..X_n the differences
    X_{i+1} - X_i mod T are iid uniform (a bijection of (X_1, ..., X_n)), so the number of adjacent pairs in one
    tree, over all fits, is exactly Binomial(F (n - 1), 1/T).  Round-robin puts a position in one tree in
    every fit and adjacent rows never together."""
    trees = np.stack([fit.tree_of for fit in tree_fits])
    n_fits, n = trees.shape
    per_cell = np.stack([(trees == t).sum(axis=0) for t in range(N_TREES)])
    lo, hi = binomial_band(n_fits, 1 / N_TREES, ALPHA / (N_TREES * n))
    assert lo <= per_cell.min() and per_cell.max() <= hi, (lo, hi, per_cell.min(), per_cell.max())

    together = int((trees[:, 1:] == trees[:, :-1]).sum())
    lo, hi = binomial_band(n_fits * (n - 1), 1 / N_TREES, ALPHA)
    assert lo <= together <= hi, (lo, together, hi)


# ------------------------------------------------------------------ (b) the trees' sizes
def test_tree_sizes_vary_like_a_multinomial(tree_fits):
    """A fit's tree sizes (N_t) are Multinomial(n, 1/T): Q = sum_t (N_t - n/T)^2 has mean n (1 - 1/T) (each N_t
    has variance n (1/T)(1 - 1/T)).  The exact law of Q (enumerated) convolved over the F independent fits
    gives the band of sum_fits Q, two-sided at ALPHA.  A shuffle cut into equal chunks has Q = 0 every fit."""
    trees = np.stack([fit.tree_of for fit in tree_fits])
    n_fits, n = trees.shape
    sizes = np.stack([(trees == t).sum(axis=1) for t in range(N_TREES)], axis=1)
    assert np.all(sizes.sum(axis=1) == n)
    spread = int(((sizes - n // N_TREES) ** 2).sum())
    lo, hi = sum_band(*tree_sizes_law(n, N_TREES), n_fits, ALPHA)
    assert lo <= spread <= hi, (lo, spread, hi, "expected", n_fits * n * (1 - 1 / N_TREES))


# ------------------------------------------------------------------ (c) the marginals mask
def test_the_marginals_rows_are_iid_with_probability_share(mixed_fits):
    """Over F fits, position i is in the marginals Binomial(F, share) times (band exact at ALPHA / n per
    position, Bonferroni).  Disjoint adjacent pairs (2j + o, 2j + o + 1), o = 0 and 1, are iid over pairs and
    fits; each of the four joint cells (in, in), (in, out), (out, in), (out, out) is hit Binomial(pairs,
    share^2 / share(1 - share) / (1 - share) share / (1 - share)^2) times (exact band at ALPHA / 8, Bonferroni
    over 2 offsets x 4 cells).  The part's size M is Binomial(n, share): sum_fits (M - n share)^2 is banded by
    its exact law (convolution over the F fits) at ALPHA.  Rows taken by input order fail all three."""
    mask = np.stack([fit.to_marginals for fit in mixed_fits])
    assert all(np.array_equal(fit.tree_of < 0, fit.to_marginals) for fit in mixed_fits)
    n_fits, n = mask.shape

    lo, hi = binomial_band(n_fits, SHARE, ALPHA / n)
    per_position = mask.sum(axis=0)
    assert lo <= per_position.min() and per_position.max() <= hi, (lo, hi, per_position.min(), per_position.max())

    for offset in (0, 1):
        pairs = (n - offset) // 2
        first = mask[:, offset : offset + 2 * pairs : 2]
        second = mask[:, offset + 1 : offset + 2 * pairs : 2]
        for a, b in itertools.product((True, False), repeat=2):
            hits = int(((first == a) & (second == b)).sum())
            p = (SHARE if a else 1 - SHARE) * (SHARE if b else 1 - SHARE)
            lo, hi = binomial_band(n_fits * pairs, p, ALPHA / 8)
            assert lo <= hits <= hi, (offset, a, b, lo, hits, hi)

    mean = SHARE * n
    assert mean == int(mean)
    sizes = np.arange(n + 1)
    lo, hi = sum_band((sizes - int(mean)) ** 2, binom.pmf(sizes, n, SHARE), n_fits, ALPHA)
    spread = int(((mask.sum(axis=1) - int(mean)) ** 2).sum())
    assert lo <= spread <= hi, (lo, spread, hi, "expected", n_fits * n * SHARE * (1 - SHARE))


# ------------------------------------------------------------------ (d) the seed is the OS's entropy
def _assignment(fit: Consumed) -> tuple:
    return tuple(fit.tree_of.tolist())


ENTROPY_A = 0x9E3779B97F4A7C15F39CC0605CEDC8341082276BF3A27251F86C6A11D0C18E95
ENTROPY_B = 0x2545F4914F6CDD1D5851F42D4C957F2D14057B7EF767814F3C6EF372FE94F82B


def test_the_assignment_is_drawn_from_the_os_entropy(tmp_path: Path, monkeypatch):
    """With ``secrets.randbits`` replaced by a known value the whole assignment (trees and marginals) is a
    function of it: the same value twice gives the same assignment, two values two assignments (a constant
    production seed gives one for all).  Each fit asks for 256 bits.  Deterministic: no chance involved."""
    setup = entropy_party(tmp_path, 60)
    recorder = AssignmentRecorder().install(monkeypatch)
    served = {}
    for name, entropy in (("A", ENTROPY_A), ("A again", ENTROPY_A), ("B", ENTROPY_B)):
        recorder.watch_entropy(monkeypatch, lambda k, entropy=entropy: entropy & ((1 << k) - 1))
        served[name] = _assignment(recorder.serve(setup, MIXED, f"run1/train-{name}"))
    assert served["A"] == served["A again"], "the assignment must be a function of the OS entropy"
    assert served["A"] != served["B"], "two entropies gave one assignment: the seed does not come from secrets"
    # every bit is used: A with one bit flipped, low, middle or high, gives another assignment (a seed cut to
    # 16 or 64 bits of the 256 would not see the flip)
    for bit in (0, 15, 16, 63, 64, 127, 128, 255):
        flipped = ENTROPY_A ^ (1 << bit)
        recorder.watch_entropy(monkeypatch, lambda k, entropy=flipped: entropy & ((1 << k) - 1))
        assignment = _assignment(recorder.serve(setup, MIXED, f"run1/train-bit-{bit}"))
        assert assignment != served["A"], f"bit {bit} of the OS entropy does not reach the seed"
    assert set(recorder.entropy_requests) == {256} and len(recorder.entropy_requests) >= 11


def test_two_production_fits_assign_rows_differently(tmp_path: Path, monkeypatch):
    """Two unpatched production fits (the real ``secrets.randbits``) on the same 60 rows.  Each row lands in the
    marginals (probability 1/2) or one of 2 trees (1/4 each), independently, so two independent fits agree on
    every row with probability (1/4 + 2/16)^60 = (3/8)^60 < 1e-25."""
    setup = entropy_party(tmp_path, 60)
    recorder = AssignmentRecorder().install(monkeypatch)
    recorder.watch_entropy(monkeypatch, secrets.randbits)
    first = recorder.serve(setup, MIXED, "run1/train-first")
    second = recorder.serve(setup, MIXED, "run1/train-second")
    assert _assignment(first) != _assignment(second), "two production fits drew one assignment: a public seed"
    assert set(recorder.entropy_requests) == {256}
