"""Privacy properties: sensitivity, monotonicity, ratio bounds on neighbouring datasets."""

from __future__ import annotations

import numpy as np
import pytest

from edprf_core import CategoricalFeature, ContinuousFeature, LabelSpec, Schema
from edprf_core._builder import BuildPlan, _binary_utilities, _Candidates, _multiway_utilities, build_forest
from edprf_core.encoding import FeatureGrid
from edprf_core.mechanisms import PermuteAndFlip, permute_and_flip_probabilities

SCHEMA = Schema(
    features=(ContinuousFeature("x", 0.0, 4.0), CategoricalFeature("c", ("a", "b", "c"))),
    label=LabelSpec("y", ("n", "p")),
)
GRID = FeatureGrid.from_schema(SCHEMA, n_bins=4)
OFFSETS = np.array([0, 4])
N_BINS, N_CLASSES = 7, 2


def _counts(codes: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Node counts (1 node, 7 bins, 2 classes) of rows with codes (n, 2)."""
    c = np.zeros((1, N_BINS, N_CLASSES))
    for f in range(2):
        np.add.at(c[0], (codes[:, f] + OFFSETS[f], y), 1)
    return c


def _binary_u(codes, y):
    cand = _Candidates.from_grid(GRID, OFFSETS)
    return _binary_utilities(_counts(codes, y), cand)[0]


def _multiway_u(codes, y):
    return _multiway_utilities(_counts(codes, y), OFFSETS)[0]


def _random_rows(rng, n):
    return np.stack([rng.integers(0, 4, n), rng.integers(0, 3, n)], axis=1), rng.integers(0, 2, n)


@pytest.mark.parametrize("utility", [_binary_u, _multiway_u])
def test_gini_utility_sensitivity_and_monotonicity_under_add_remove(utility):
    """Adding one record lowers every split utility by at most 2 and raises none."""
    rng = np.random.default_rng(7)
    worst = 0.0
    for _ in range(3000):
        codes, y = _random_rows(rng, int(rng.integers(0, 30)))
        extra_codes, extra_y = _random_rows(rng, 1)
        before = utility(codes, y)
        after = utility(np.vstack([codes, extra_codes]), np.append(y, extra_y))
        delta = after - before
        assert np.all(delta <= 1e-9), "adding a record raised a utility: not monotone"
        worst = max(worst, float(-delta.min()))
    assert worst <= 2.0
    assert worst > 1.0  # the search reached the interesting regime


@pytest.mark.parametrize("utility", [_binary_u, _multiway_u])
def test_gini_utility_sensitivity_under_replace_one(utility):
    rng = np.random.default_rng(8)
    for _ in range(3000):
        codes, y = _random_rows(rng, int(rng.integers(1, 30)))
        new_codes, new_y = _random_rows(rng, 1)
        i = int(rng.integers(0, len(y)))
        codes2, y2 = codes.copy(), y.copy()
        codes2[i], y2[i] = new_codes[0], new_y[0]
        assert np.max(np.abs(utility(codes2, y2) - utility(codes, y))) <= 4.0


def _worst_neighbour(codes, y, eps, monotone):
    """The added record whose exact PF distribution moves most (max log-ratio)."""
    base = permute_and_flip_probabilities(_binary_u(codes, y), eps, 2.0, monotone)
    best, best_ratio = None, 0.0
    for a in range(4):
        for b in range(3):
            for k in range(2):
                c2, y2 = np.vstack([codes, [[a, b]]]), np.append(y, k)
                p = permute_and_flip_probabilities(_binary_u(c2, y2), eps, 2.0, monotone)
                ratio = float(np.max(np.abs(np.log(p / base))))
                if ratio > best_ratio:
                    best, best_ratio = (c2, y2), ratio
    return best, best_ratio


@pytest.mark.parametrize("monotone", [False, True])
def test_exact_split_distribution_ratio_within_e_eps(monotone):
    rng = np.random.default_rng(11)
    eps = 1.0
    for _ in range(20):
        codes, y = _random_rows(rng, int(rng.integers(0, 15)))
        _, ratio = _worst_neighbour(codes, y, eps, monotone)
        assert ratio <= eps + 1e-9


def _root_choices(codes, y, tree_eps, n_trees, seed):
    """Root split of ``n_trees`` depth-1 trees, each grown by the real builder on the same rows."""
    plan = BuildPlan(
        split_mode="binary",
        n_layers=2,
        tree_epsilon=tree_eps,
        layer_epsilons=tuple(np.array([0.5, 1.0]) / 1.5 * tree_eps),
        split_mechanism=PermuteAndFlip(2.0, monotone=True),
        leaf_mechanism=PermuteAndFlip(1.0, monotone=True),
    )
    n = len(y)
    sample_tree = np.repeat(np.arange(n_trees), n)
    sample_rows = np.tile(np.arange(n), n_trees)
    gens = [np.random.Generator(np.random.PCG64(s)) for s in np.random.SeedSequence(seed).spawn(n_trees)]
    forest = build_forest(codes.astype(np.int32), y.astype(np.int32), GRID, 2, plan, sample_tree, sample_rows, gens)
    roots = forest.tree_offsets[:-1]
    cand = _Candidates.from_grid(GRID, OFFSETS)
    key = forest.feature[roots].astype(np.int64) * 10 + forest.split[roots]
    cand_key = cand.feature * 10 + cand.split
    return np.searchsorted(cand_key, key), cand_key.size


def _violations(p_a, p_b, n, bound):
    """Candidates where p_a > bound * p_b beyond 4.5 standard errors."""
    se = np.sqrt(p_a * (1 - p_a) / n + bound**2 * p_b * (1 - p_b) / n) + 1.0 / n
    return np.flatnonzero(p_a - bound * p_b > 4.5 * se)


def test_builder_root_split_ratio_on_neighbouring_datasets():
    """Empirical ratio check of the real builder's split selection.

    The root split of a tree with budget eps spends eps_1 (harmonic, 2 layers:
    eps_1 = eps / 3).  On the worst neighbouring pair, the empirical
    probabilities over 40,000 trees must satisfy p(D) <= e^{eps_1} p(D') (and
    the reverse) up to 4.5 standard errors.  Power: the same samples violate
    the bound e^{r / 2}, where r is the pair's exact worst log-ratio, so the
    check does see a mechanism that moves probability more than it may.
    """
    tree_eps = 6.0
    eps_root = tree_eps / 3.0
    rng = np.random.default_rng(3)
    codes, y = _random_rows(rng, 12)
    (codes2, y2), exact_ratio = _worst_neighbour(codes, y, eps_root, monotone=True)
    assert exact_ratio <= eps_root + 1e-9
    n = 40_000
    a, m = _root_choices(codes, y, tree_eps, n, seed=1)
    b, _ = _root_choices(codes2, y2, tree_eps, n, seed=2)
    p_a, p_b = np.bincount(a, minlength=m) / n, np.bincount(b, minlength=m) / n
    bound = np.exp(eps_root)
    assert _violations(p_a, p_b, n, bound).size == 0
    assert _violations(p_b, p_a, n, bound).size == 0
    tighter = np.exp(exact_ratio / 2)
    assert _violations(p_a, p_b, n, tighter).size + _violations(p_b, p_a, n, tighter).size > 0
