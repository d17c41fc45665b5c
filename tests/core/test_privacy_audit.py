"""Power of the audit against the research (numpy) split mechanism, on a random small node.

The audits of what a party releases, through the estimator and the party on the
production path (exact samplers), are the privacy gate's: ``tests/privacy``
(``./test.sh -m privacy``), which also holds the Clopper-Pearson bound used here.
This file keeps the one check the gate does not make: the seeded floating-point
permute-and-flip of research runs, on the worst neighbour of a random node, moves
probability by no more than the pair's exact log-ratio, and by more once its noise
is cut.
"""

from __future__ import annotations

import numpy as np

from edprf_core._builder import BuildPlan, _Candidates, build_forest
from edprf_core._exact_selection import ExactPermuteAndFlip
from edprf_core.mechanisms import PermuteAndFlip, permute_and_flip_probabilities
from tests.privacy._audit import loss_lower_bound

from .test_privacy import GRID, OFFSETS, _binary_u, _random_rows, _worst_neighbour


def _root_splits(codes, y, eps_root: float, n_trees: int, mechanism, seed: int) -> np.ndarray:
    """Root split of ``n_trees`` depth-1 trees grown by the real builder on the same rows."""
    exact = isinstance(mechanism, ExactPermuteAndFlip)
    plan = BuildPlan(
        split_mode="binary",
        n_layers=2,
        tree_epsilon=3 * eps_root,
        layer_epsilons=(eps_root, 2 * eps_root),
        split_mechanism=mechanism,
        leaf_mechanism=ExactPermuteAndFlip(1, monotone=True) if exact else PermuteAndFlip(1.0, True),
        integer_utilities=exact,
    )
    m = len(y)
    sample_tree, sample_rows = np.repeat(np.arange(n_trees), m), np.tile(np.arange(m), n_trees)
    gens = [np.random.Generator(np.random.PCG64(s)) for s in np.random.SeedSequence(seed).spawn(n_trees)]
    forest = build_forest(codes.astype(np.int32), y.astype(np.int32), GRID, 2, plan, sample_tree, sample_rows, gens)
    roots = forest.tree_offsets[:-1]
    cand = _Candidates.from_grid(GRID, OFFSETS)
    key = forest.feature[roots].astype(np.int64) * 10 + forest.split[roots]
    return np.searchsorted(cand.feature * 10 + cand.split, key)


def _best_event(p: np.ndarray, q: np.ndarray, n: int) -> tuple[int, bool]:
    """The candidate (and direction) whose expected audit bound is largest under the laws p, q."""
    scored = [
        (loss_lower_bound(round(n * a), n, round(n * b), n), j, flip)
        for j in range(p.size)
        for flip, (a, b) in ((False, (p[j], q[j])), (True, (q[j], p[j])))
    ]
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
