"""The exact (OpenDP) backend: same law as permute-and-flip, integer utilities that keep the proof."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from edprf_core import EDPRFClassifier, load_embedded
from edprf_core._exact_selection import UTILITY_SCALE, ExactPermuteAndFlip, integer_weighted_gini
from edprf_core.mechanisms import permute_and_flip_probabilities
from edprf_core.research import PaperEDPRFClassifier

ALPHA = 1e-4
N_DRAWS = 6000
CASES = [
    (np.array([0, -1, -2, -4, -8]), 1.0, 1, False),
    (np.array([5, 4, 4, 0, 1, 2]), 2.0, 1, True),
    (np.array([-3, -3, -1, -10]), 0.5, 2, True),
]


def _draws(mech: ExactPermuteAndFlip, u: np.ndarray, eps: float, n: int = N_DRAWS) -> np.ndarray:
    return mech.select(np.broadcast_to(u, (n, u.size)), eps)


def _chi_square_p(samples: np.ndarray, probs: np.ndarray) -> float:
    """Pearson's test with the cells whose expected count is below 5 pooled into one (the test's validity rule).

    Without pooling, a cell expecting 0.12 draws that sees 2 alone gives chi2 = 28: the test would fail
    about once in a hundred runs of a correct sampler (an unseedable one: OpenDP draws from the OS).
    """
    observed = np.bincount(samples, minlength=probs.size).astype(float)
    expected = probs * samples.size
    small = expected < 5
    if small.any():
        observed = np.r_[observed[~small], observed[small].sum()]
        expected = np.r_[expected[~small], expected[small].sum()]
    return float(stats.chisquare(observed, expected).pvalue)


@pytest.mark.slow
@pytest.mark.parametrize("u,eps,sens,monotone", CASES)
def test_exact_backend_matches_the_permute_and_flip_law(u, eps, sens, monotone):
    """Chi-square against the exact PF probabilities; OpenDP cannot be seeded, so alpha bounds the false-failure rate."""
    samples = _draws(ExactPermuteAndFlip(sens, monotone=monotone), u, eps)
    probs = permute_and_flip_probabilities(u.astype(float), eps, float(sens), monotone)
    assert _chi_square_p(samples, probs) > ALPHA


@pytest.mark.slow
def test_the_chi_square_check_has_power_against_half_the_noise():
    """A mechanism with half the noise scale (a wrong sensitivity) is rejected."""
    u, eps = np.array([0, -1, -2, -4, -8]), 1.0
    broken = ExactPermuteAndFlip(1, monotone=True)  # true law: sensitivity 1, not monotone (twice the scale)
    samples = _draws(broken, u, eps)
    probs = permute_and_flip_probabilities(u.astype(float), eps, 1.0, False)
    assert _chi_square_p(samples, probs) < ALPHA


def test_invalid_candidates_are_never_chosen_and_empty_rows_give_minus_one():
    mech = ExactPermuteAndFlip(1, monotone=True)
    u = np.array([[100, 0, 0], [0, 0, 0]])
    valid = np.array([[False, True, True], [False, False, False]])
    out = np.stack([mech.select(u, 1.0, valid=valid) for _ in range(50)])
    assert set(out[:, 0]) <= {1, 2} and set(out[:, 1]) == {-1}


def test_non_integer_utilities_are_refused():
    with pytest.raises(ValueError, match="integer utilities"):
        ExactPermuteAndFlip(1).select(np.array([[0.5, 1.0]]), 1.0)


def test_integer_gini_is_monotone_with_sensitivity_2k_plus_1():
    """On random nodes and every added record: all terms move up, by at most 2K + 1 (add/remove)."""
    rng = np.random.default_rng(5)
    for _ in range(3000):
        k = rng.integers(2, 5)
        counts = rng.integers(0, rng.choice([3, 50, 10_000]), size=k).astype(float)
        base = integer_weighted_gini(counts)
        for c in range(k):
            added = counts.copy()
            added[c] += 1
            delta = integer_weighted_gini(added) - base
            assert 0 <= delta <= 2 * UTILITY_SCALE + 1


def test_auto_uses_exact_without_a_seed_and_numpy_with_one():
    X, y, schema = load_embedded("wall_robot_navigation")
    X, y = X[:300], y[:300]
    assert EDPRFClassifier(schema, max_depth=2, n_trees=1).fit(X, y).privacy_.sampler == "exact"
    assert EDPRFClassifier(schema, max_depth=2, n_trees=1, random_state=0).fit(X, y).privacy_.sampler == "numpy"
    with pytest.raises(ValueError, match="cannot be seeded"):
        EDPRFClassifier(schema, max_depth=2, random_state=0, sampler="exact").fit(X, y)
    with pytest.raises(ValueError, match="variant='pf' only"):
        PaperEDPRFClassifier(schema, max_depth=2, variant="tradition", sampler="exact").fit(X, y)


@pytest.mark.parametrize("split_mode", ["binary", "multiway"])
def test_exact_forest_has_the_data_independent_shape(split_mode):
    X, y, schema = load_embedded("wall_robot_navigation")
    a = EDPRFClassifier(schema, max_depth=3, n_trees=2, split_mode=split_mode, n_bins=4).fit(X[:500], y[:500])
    b = EDPRFClassifier(schema, max_depth=3, n_trees=2, split_mode=split_mode, n_bins=4).fit(X[:0], y[:0])
    if split_mode == "binary":
        np.testing.assert_array_equal(a.forest_.trees.feature < 0, b.forest_.trees.feature < 0)
    assert a.forest_.parts[0][1].sampler == "exact" and a.score(X[:500], y[:500]) > 0.3
