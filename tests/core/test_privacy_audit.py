"""Empirical privacy audit of what a party releases, with Clopper-Pearson confidence bounds.

For a mechanism M, worst-case neighbours D, D' and an event S, the privacy
loss is at least ``ln(P[M(D) in S] / P[M(D') in S])``.  From n draws on each
side, the one-sided Clopper-Pearson bounds give a lower confidence bound of
that log-ratio; for an eps-DP mechanism it must not exceed eps (up to the
audit's error rate alpha).  Each audit also runs a deliberately broken
mechanism (half the noise, i.e. 2 eps) whose lower bound must exceed eps:
the audit can see a violation.  The events are the ones where the log-ratio
is largest (the tail the added record pushes against), so the audit is tight.

The exact (OpenDP) samplers cannot be seeded: alpha = 1e-6 bounds the
false-failure rate of the whole file; the broken mechanisms use seeded numpy.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from edprf_core import discrete_laplace_counts, permute_and_flip_probabilities
from edprf_core._builder import BuildPlan, _Candidates, build_forest
from edprf_core._exact_selection import UTILITY_SCALE, ExactPermuteAndFlip
from edprf_core._mechanisms import PermuteAndFlip

from .test_privacy import GRID, OFFSETS, _binary_u, _random_rows, _worst_neighbour

ALPHA = 1e-6


def loss_lower_bound(hits_a: int, n_a: int, hits_b: int, n_b: int, alpha: float = ALPHA) -> float:
    """Lower confidence bound of ln(p_a / p_b) (Clopper-Pearson on each side, Bonferroni)."""
    low_a = stats.beta.ppf(alpha / 2, hits_a, n_a - hits_a + 1) if hits_a > 0 else 0.0
    high_b = stats.beta.ppf(1 - alpha / 2, hits_b + 1, n_b - hits_b) if hits_b < n_b else 1.0
    return -math.inf if low_a == 0 else math.log(low_a / high_b)


def test_the_lower_bound_is_sound_on_a_known_ratio():
    rng = np.random.default_rng(0)
    n = 50_000
    p, q = 0.5, 0.5 / math.e
    assert loss_lower_bound(rng.binomial(n, p), n, rng.binomial(n, q), n) <= 1.0


@pytest.mark.parametrize("epsilon", [0.5, 1.0])
def test_audit_released_leaf_counts(epsilon):
    """Class counts (L1 sensitivity 1): D has counts (5, 3), D' adds a record of class 1."""
    n = 40_000
    d = discrete_laplace_counts(np.tile([5, 3], (n, 1)), epsilon, 1)
    d2 = discrete_laplace_counts(np.tile([5, 4], (n, 1)), epsilon, 1)
    hits_a, hits_b = int(np.sum(d[:, 1] <= 3)), int(np.sum(d2[:, 1] <= 3))
    assert loss_lower_bound(hits_a, n, hits_b, n) <= epsilon
    rng = np.random.default_rng(1)
    broken = discrete_laplace_counts(np.tile([5, 3], (n, 1)), 2 * epsilon, 1, rng)
    broken2 = discrete_laplace_counts(np.tile([5, 4], (n, 1)), 2 * epsilon, 1, rng)
    assert loss_lower_bound(int(np.sum(broken[:, 1] <= 3)), n, int(np.sum(broken2[:, 1] <= 3)), n) > epsilon


def test_audit_released_evaluation_counts():
    """(correct, total), L1 sensitivity 2: D' adds one correctly classified held-out record."""
    epsilon, n = 1.0, 40_000
    d = discrete_laplace_counts(np.tile([40, 50], (n, 1)), epsilon, 2)
    d2 = discrete_laplace_counts(np.tile([41, 51], (n, 1)), epsilon, 2)

    def event(o: np.ndarray) -> int:
        return int(np.sum((o[:, 0] <= 40) & (o[:, 1] <= 50)))

    assert loss_lower_bound(event(d), n, event(d2), n) <= epsilon
    rng = np.random.default_rng(2)
    half = discrete_laplace_counts(np.tile([40, 50], (n, 1)), epsilon, 1, rng)  # sensitivity 1 declared: half the noise
    half2 = discrete_laplace_counts(np.tile([41, 51], (n, 1)), epsilon, 1, rng)
    assert loss_lower_bound(event(half), n, event(half2), n) > epsilon


def _root_splits(codes, y, eps_root: float, n_trees: int, mechanism, seed: int) -> np.ndarray:
    """Root split of ``n_trees`` depth-1 trees grown by the real builder on the same rows."""
    exact = isinstance(mechanism, ExactPermuteAndFlip)
    plan = BuildPlan(split_mode="binary", n_layers=2, tree_epsilon=3 * eps_root,
                     layer_epsilons=(eps_root, 2 * eps_root), split_mechanism=mechanism,
                     leaf_mechanism=ExactPermuteAndFlip(1, monotone=True) if exact else PermuteAndFlip(1.0, True),
                     integer_utilities=exact)
    m = len(y)
    sample_tree, sample_rows = np.repeat(np.arange(n_trees), m), np.tile(np.arange(m), n_trees)
    gens = [np.random.Generator(np.random.PCG64(s)) for s in np.random.SeedSequence(seed).spawn(n_trees)]
    forest = build_forest(codes.astype(np.int32), y.astype(np.int32), GRID, 2, plan, sample_tree, sample_rows, gens)
    roots = forest.tree_offsets[:-1]
    cand = _Candidates.from_grid(GRID, OFFSETS)
    key = forest.feature[roots].astype(np.int64) * 10 + forest.split[roots]
    return np.searchsorted(cand.feature * 10 + cand.split, key)


@pytest.mark.slow
def test_audit_the_builders_exact_root_split():
    """The real builder with the exact backend, on the worst neighbouring pair of a small node."""
    eps_root = 1.0
    codes, y = _random_rows(np.random.default_rng(3), 12)
    (codes2, y2), exact_ratio = _worst_neighbour(codes, y, eps_root, monotone=True)
    p = permute_and_flip_probabilities(_binary_u(codes, y), eps_root, 2.0, True)
    q = permute_and_flip_probabilities(_binary_u(codes2, y2), eps_root, 2.0, True)
    target = int(np.argmax(np.abs(np.log(p / q))))
    a_first = p[target] > q[target]
    n = 3000
    mech = ExactPermuteAndFlip(int(UTILITY_SCALE * 2) + 1, monotone=True)
    a = _root_splits(codes, y, eps_root, n, mech, 1)
    b = _root_splits(codes2, y2, eps_root, n, mech, 2)
    hits_a, hits_b = int(np.sum(a == target)), int(np.sum(b == target))
    if not a_first:
        hits_a, hits_b = hits_b, hits_a
    assert loss_lower_bound(hits_a, n, hits_b, n) <= eps_root
    assert exact_ratio <= eps_root + 1e-9


def _best_event(p: np.ndarray, q: np.ndarray, n: int) -> tuple[int, bool]:
    """The candidate (and direction) whose expected audit bound is largest under the laws p, q."""
    scored = [(loss_lower_bound(round(n * a), n, round(n * b), n), j, flip)
              for j in range(p.size) for flip, (a, b) in ((False, (p[j], q[j])), (True, (q[j], p[j])))]
    _, j, flip = max(scored)
    return j, flip


def _audit(codes, y, codes2, y2, eps_root, sensitivity, n) -> float:
    p = permute_and_flip_probabilities(_binary_u(codes, y), eps_root, sensitivity, True)
    q = permute_and_flip_probabilities(_binary_u(codes2, y2), eps_root, sensitivity, True)
    target, flip = _best_event(p, q, n)
    mech = PermuteAndFlip(sensitivity, monotone=True)
    hits_a = int(np.sum(_root_splits(codes, y, eps_root, n, mech, 1) == target))
    hits_b = int(np.sum(_root_splits(codes2, y2, eps_root, n, mech, 2) == target))
    return loss_lower_bound(hits_b, n, hits_a, n) if flip else loss_lower_bound(hits_a, n, hits_b, n)


def test_audit_catches_split_mechanisms_with_less_noise():
    """Power on the same pair: half the noise moves probability more than the true mechanism can
    (beyond the pair's exact log-ratio r); an eighth of the noise is caught above eps itself."""
    eps_root, n = 1.0, 20_000
    codes, y = _random_rows(np.random.default_rng(3), 12)
    (codes2, y2), exact_ratio = _worst_neighbour(codes, y, eps_root, monotone=True)
    assert _audit(codes, y, codes2, y2, eps_root, 2.0, n) <= exact_ratio
    assert _audit(codes, y, codes2, y2, eps_root, 1.0, n) > exact_ratio
    assert _audit(codes, y, codes2, y2, eps_root, 0.25, n) > eps_root
