"""Bounded influence across parts (issue 20; item 5 of edprf_core/_leaf_distribution.py).

The inequalities of the argument are checked by hand on small cases and on random hostile inputs
(fixed seeds); every attack of the forged-release library is checked against the bound on a fixed federation and against
the accuracy goal on average over ten seeded federations; honest federations keep their model.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from edprf_core import merge_forests
from edprf_core._leaf_distribution import (
    CLIP_MARGIN,
    PLAUSIBLE_CLIP_MARGIN,
    PLAUSIBLE_SIZE_FACTOR,
    WEIGHT_CAP_FACTOR,
    bounded_part_mean,
    capped_part_weights,
    part_clip_margins,
    part_consortium_prior,
    plausible_parts,
    tightest_spread,
)
from edprf_core.forest import MAX_LEAF_COUNT
from tests.forged_releases import ATTACKS, forge, seeded_federation

pytestmark = pytest.mark.privacy  # in the gate: mutation campaign 3 (stop 56)


def test_bounded_part_mean_by_hand():
    # five parts, the last hostile: value 1000 at weight 1e6
    values = np.array([0.0, 1.0, 2.0, 3.0, 1000.0])[:, None]
    weights = np.array([1.0, 1.0, 1.0, 1.0, 1e6])[:, None]
    # lo = 1 (2nd smallest), hi = 3 (2nd largest); g = 1 (the tightest pair), D = max(2, 1) = 2:
    # values clipped to [1 - 2, 3 + 2]; cap = 1 (2nd largest)
    assert tightest_spread(np.sort(values, axis=0), 2)[0] == 1.0
    assert bounded_part_mean(values, weights)[0] == pytest.approx((0 + 1 + 2 + 3 + 5) / 5)
    # honest range [0, 3], D_H = 3: within [0 - 3, 3 + 3]; displacement from the honest mean 1.5 at most
    # s (1 + lambda) D_H with share s = 1/5
    assert abs(2.2 - 1.5) <= 0.2 * (1 + CLIP_MARGIN) * 3
    # three parts: lo = hi = the median 1, D = g = 1 (the tightest pair {1, 2}): clipped to [0, 2]; the hostile value
    # becomes 0, its weight the 2nd largest (3)
    got = bounded_part_mean(np.array([[1.0], [2.0], [-50.0]]), np.array([[1.0], [3.0], [1e9]]))
    assert got[0] == pytest.approx((1 * 1 + 3 * 2 + 3 * 0) / 7)
    # the same hostile value from a part of plausible size (3 <= 64 x 3): margin 1.75 instead of 1, clipped to
    # [1 - 1.75, 1 + 1.75], weight 3 (at most 2 x the cap 3)
    np.testing.assert_array_equal(part_clip_margins(np.array([[1.0], [3.0], [3.0]]), 1), [PLAUSIBLE_CLIP_MARGIN] * 3)
    np.testing.assert_array_equal(
        part_clip_margins(np.array([[1.0], [3.0], [1e9]]), 1), [PLAUSIBLE_CLIP_MARGIN] * 2 + [CLIP_MARGIN]
    )
    got = bounded_part_mean(np.array([[1.0], [2.0], [-50.0]]), np.array([[1.0], [3.0], [3.0]]))
    assert got[0] == pytest.approx((1 * 1 + 3 * 2 + 3 * (1 - PLAUSIBLE_CLIP_MARGIN)) / 7)
    # a part of plausible size (at most 64 x the 2nd largest) keeps up to 2 x the cap, a larger one the cap
    # (caps: 10 and 3, the 2nd largest of each class; sizes 2, 6, 11, 600: 600 <= 64 x 11)
    caps = capped_part_weights(np.array([[1.0, 1.0], [3.0, 3.0], [10.0, 1.0], [300.0, 300.0]]), 1)
    np.testing.assert_allclose(caps, [[1.0, 1.0], [3.0, 3.0], [10.0, 1.0], [20.0, 6.0]])
    caps = capped_part_weights(np.array([[1.0, 1.0], [3.0, 3.0], [10.0, 1.0], [500.0, 5e3]]), 1)
    np.testing.assert_allclose(caps[3], [10.0, 3.0])  # size 5,500 > 64 x 11: capped at 1 x the cap
    # two honest parts that agree: the hostile one is held to them, whatever it claims
    got = bounded_part_mean(np.array([[2.0], [2.0], [1e9]]), np.array([[1.0], [1.0], [1e9]]))
    assert got[0] == pytest.approx(2.0)
    # two parts: nothing can tell the hostile one apart; the plain weighted mean
    assert bounded_part_mean(np.array([[1.0], [5.0]]), np.array([[1.0], [3.0]]))[0] == pytest.approx(4.0)
    assert bounded_part_mean(values, weights, tolerated=0)[0] == pytest.approx((6 + 1000 * 1e6) / (4 + 1e6))
    # per class, over rows: shape (parts, rows, classes) with (parts, classes) weights; an all-zero class gives 0
    v = np.arange(24, dtype=float).reshape(3, 4, 2)
    assert bounded_part_mean(v, np.array([[1.0, 0.0]] * 3)).shape == (4, 2)
    assert np.all(bounded_part_mean(v, np.array([[1.0, 0.0]] * 3))[:, 1] == 0.0)
    with pytest.raises(ValueError, match="weights: expected shape"):
        bounded_part_mean(v, np.ones((3, 3)))


def test_tightest_spread_is_the_smallest_range_of_any_subset_of_that_size():
    rng = np.random.default_rng(7)
    for n_parts in range(3, 8):
        values = rng.normal(0.0, 3.0, size=(n_parts, 5)) * rng.integers(1, 100, size=(n_parts, 1))
        for size in range(2, n_parts + 1):
            brute = np.min(
                [
                    values[list(c)].max(axis=0) - values[list(c)].min(axis=0)
                    for c in itertools.combinations(range(n_parts), size)
                ],
                axis=0,
            )
            np.testing.assert_allclose(tightest_spread(np.sort(values, axis=0), size), brute)


@pytest.mark.parametrize("n_honest", [2, 3, 4, 9])
def test_one_hostile_part_stays_within_the_bounds_of_the_argument(n_honest):
    """(a) range, (b) weight share, (c) displacement, on random honest parts and extreme hostile ones."""
    rng = np.random.default_rng(n_honest)
    for _ in range(300):
        honest_v = rng.normal(0.0, rng.uniform(0.1, 5.0), size=(n_honest, 6, 3))
        honest_w = rng.uniform(0.5, 50.0, size=(n_honest, 3))
        hostile_v = rng.choice([-1e9, 1e9, 0.0]) + rng.normal(0, 1e3, size=(1, 6, 3)) * rng.integers(0, 2)
        hostile_w = rng.choice([0.0, 1.0, 40.0, 1e4, 1e12], size=(1, 3))
        at = rng.integers(0, n_honest + 1)  # the hostile part's position does not matter
        values = np.insert(honest_v, at, hostile_v, axis=0)
        weights = np.insert(honest_w, at, hostile_w, axis=0)
        got = bounded_part_mean(values, weights)
        low, high = honest_v.min(axis=0), honest_v.max(axis=0)
        spread = high - low
        ordered = np.sort(values, axis=0)
        lo, hi = ordered[1], ordered[-2]
        tight = np.maximum(hi - lo, tightest_spread(ordered, 2))  # D, at most the honest spread D_H
        assert np.all(tight <= spread + 1e-12)
        assert n_honest > 2 or np.all(tight > 0)  # three parts: not the median (hi = lo) unless two values agree
        # (a): within the honest range widened by the largest margin (a part of plausible size)
        widest = max(CLIP_MARGIN, PLAUSIBLE_CLIP_MARGIN)
        assert np.all(got >= low - widest * spread - 1e-9) and np.all(got <= high + widest * spread + 1e-9)
        capped = capped_part_weights(weights, 1)
        share = capped[at] / capped.sum(axis=0)
        # (b): at most c times the largest honest weight, share at most c / (c + 1); a part claiming more than
        # rho times the largest honest size weighs at most the largest honest weight, share at most 1/2
        plausible = hostile_w.sum() <= PLAUSIBLE_SIZE_FACTOR * honest_w.sum(axis=1).max()
        assert plausible or not plausible_parts(weights, 1)[at]  # the rule's test is at least as strict
        factor = WEIGHT_CAP_FACTOR if plausible else 1.0
        assert np.all(capped[at] <= factor * honest_w.max(axis=0) + 1e-9)
        assert np.all(share <= factor / (factor + 1) + 1e-12)
        # (c): against the honest parts' weighted mean of their own clipped values (each with its own margin:
        # 1.75 for a part of plausible size, at most 64 x the 2nd largest size, else 1), at most the hostile share
        # times (1 + its margin) the honest spread
        sizes = weights.sum(axis=1)
        margins = np.where(sizes <= PLAUSIBLE_SIZE_FACTOR * np.sort(sizes)[-2], PLAUSIBLE_CLIP_MARGIN, CLIP_MARGIN)
        m_h = np.delete(margins, at)[:, None, None]
        clipped = np.clip(honest_v, lo - m_h * tight, hi + m_h * tight)
        w_h = np.delete(capped, at, axis=0)[:, None, :]
        honest_mean = (w_h * clipped).sum(axis=0) / w_h.sum(axis=0)
        hostile_margin = PLAUSIBLE_CLIP_MARGIN if plausible else CLIP_MARGIN
        assert np.all(np.abs(got - honest_mean) <= share * (1 + hostile_margin) * spread + 1e-9)


def test_the_consortium_prior_of_parts_by_hand():
    honest = np.array([[600.0, 300.0, 100.0, 0.0], [500.0, 400.0, 60.0, 40.0], [550.0, 350.0, 80.0, 20.0]])
    # no hostile part: the summed counts, +1 per class (item 3)
    assert np.allclose(part_consortium_prior(honest), (honest.sum(axis=0) + 1) / (honest.sum() + 4))
    forged = np.array([[0.0, 0.0, 16 * MAX_LEAF_COUNT, 0.0]])  # the issue's release: every leaf (0, 0, 2**31-1, 0)
    got = part_consortium_prior(np.vstack([honest, forged]))
    assert got[2] < 0.15  # the unbounded rule: about 1.0
    assert part_consortium_prior(np.vstack([honest, forged]), tolerated=0)[2] > 0.99
    mixes = honest / honest.sum(axis=1, keepdims=True)
    spread = mixes.max(axis=0) - mixes.min(axis=0)
    # within the honest mixes widened by the margin (before the +1 and renormalization, which move it by < 1e-3)
    assert np.all(got <= mixes.max(axis=0) + CLIP_MARGIN * spread + 1e-3)
    assert np.all(got >= mixes.min(axis=0) - CLIP_MARGIN * spread - 1e-3)
    zero = part_consortium_prior(np.vstack([honest, np.zeros((1, 4))]))  # a part claiming nothing
    assert np.allclose(zero.sum(), 1.0) and np.all(zero > 0)


@pytest.fixture(scope="module")
def federation():
    """Seed 0 of :func:`_federation`."""
    return seeded_federation(0)


def _accuracy(forest, X, truth, **kw) -> float:
    return float(np.mean(np.argmax(forest.predict_proba(X, **kw), axis=1) == truth))


@pytest.mark.parametrize("attack", ATTACKS)
def test_every_attack_of_the_library_is_bounded(federation, attack):
    honest, own, own_rows, X_test, _ = federation
    labels = [f"p{i}" for i in range(len(honest))]
    all_honest = merge_forests(honest, labels=labels)
    forged = forge(attack, own, honest_model=all_honest.predict_proba, own_rows=own_rows, other=honest[0])
    leaf_counts = forged.trees.leaf_counts[forged.trees.feature < 0]
    assert leaf_counts.min() >= 0 and leaf_counts.max() <= MAX_LEAF_COUNT  # the wire range
    assert forged.n_trees == own.n_trees and forged.parts == own.parts  # conforms: same parameters and tree count
    merged = merge_forests([*honest, forged], labels=[*labels, "mallory"])

    # the bound, on the pooled log ratios: within the honest parts' range widened by the margin
    codes = np.unique(merged.encode(X_test), axis=0)
    vectors, weights = merged._pooling_terms("log-linear", True)
    scores = merged._part_scores(vectors, codes)
    pooled = bounded_part_mean(scores, weights)
    low, high = scores[:-1].min(axis=0), scores[:-1].max(axis=0)
    # the hostile part's margin: 1.75 widths if the size it claims is plausible (at most 64 x the 2nd largest), else 1
    margin = PLAUSIBLE_CLIP_MARGIN if plausible_parts(weights, 1)[-1] else CLIP_MARGIN
    assert np.all(pooled >= low - margin * (high - low) - 1e-9)
    assert np.all(pooled <= high + margin * (high - low) + 1e-9)


GOAL_SEEDS = range(10)
"""The federations (:func:`_federation`) the goal of issue 20 is read on, as a mean over seeds."""

GOAL_TOLERANCE = 0.019
"""How far the mean over :data:`GOAL_SEEDS` of the per-seed shortfall (goal - accuracy) may exceed 0.

Two standard errors of honest noise: replacing the hostile part by an honest fifth party (its own forest, another
forest of the same rows, another forest of party 0's rows), the per-seed shortfall has an sd of 0.030 (200 seeds,
``benchmarks/results/bounded_influence_seeds.md``); 2 x 0.030 / sqrt(10) = 0.019.  A single seed's goal is
within that noise: an honest fifth party misses it on about 3 % of seeds, the copied release on about 30 %
while its mean shortfall is -0.009 (it meets the goal on average).  On 20 disjoint groups of 10 seeds (0-199) every
attack passes (worst group mean +0.004, copied release) and without the bound every attack of
:data:`UNBOUNDED_MISSES` fails in every group."""

UNBOUNDED_MISSES = ("rarest-class", "majority-class", "copied-release", "inverted", "one-class-per-tree")
"""The attacks the bound is for: without it (``tolerated_parties=0``) their mean shortfall over the seeds is above
:data:`GOAL_TOLERANCE` (200 seeds: +0.34 to +0.68, one class per tree +0.042, sd 0.039)."""


@pytest.fixture(scope="module")
def seeded_goal():
    """Per attack, the shortfall (goal - accuracy) on each seed of :data:`GOAL_SEEDS`, bounded and unbounded.

    The goal of issue 20 on each federation: acc(4 honest + forged) >= acc_honest - max(0, acc_honest -
    acc_drop) - 0.02, acc_drop the model without the first honest party.
    """
    bounded = {attack: [] for attack in ATTACKS}
    unbounded = {attack: [] for attack in ATTACKS}
    for seed in GOAL_SEEDS:
        honest, own, own_rows, X_test, truth = seeded_federation(seed)
        labels = [f"p{i}" for i in range(len(honest))]
        all_honest = merge_forests(honest, labels=labels)
        acc_honest = _accuracy(all_honest, X_test, truth)
        acc_drop = _accuracy(merge_forests(honest[1:], labels=labels[1:]), X_test, truth)
        goal = acc_honest - max(0.0, acc_honest - acc_drop) - 0.02
        for attack in ATTACKS:
            forged = forge(attack, own, honest_model=all_honest.predict_proba, own_rows=own_rows, other=honest[0])
            merged = merge_forests([*honest, forged], labels=[*labels, "mallory"])
            bounded[attack].append(goal - _accuracy(merged, X_test, truth))
            unbounded[attack].append(goal - _accuracy(merged, X_test, truth, tolerated_parties=0))
    return {a: np.array(v) for a, v in bounded.items()}, {a: np.array(v) for a, v in unbounded.items()}


@pytest.mark.parametrize("attack", ATTACKS)
def test_every_attack_of_the_library_meets_the_goal_over_seeds(seeded_goal, attack):
    shortfall = seeded_goal[0][attack]
    assert shortfall.mean() <= GOAL_TOLERANCE, (attack, np.round(shortfall, 3))


@pytest.mark.parametrize("attack", UNBOUNDED_MISSES)
def test_without_the_bound_the_goal_over_seeds_is_missed(seeded_goal, attack):
    """The goal test has the power to see the bound missing."""
    shortfall = seeded_goal[1][attack]
    assert shortfall.mean() > GOAL_TOLERANCE, (attack, np.round(shortfall, 3))


def test_the_issues_release_took_the_unbounded_model(federation):
    """Every leaf (0, 0, 2**31 - 1, 0)-like: before the bound the model predicted one class everywhere."""
    honest, own, _, X_test, truth = federation
    merged = merge_forests([*honest, forge("rarest-class", own)], labels=["a", "b", "c", "d", "mallory"])
    unbounded = np.argmax(merged.predict_proba(X_test, tolerated_parties=0), axis=1)
    assert np.mean(unbounded == unbounded[0]) > 0.95
    assert _accuracy(merged, X_test, truth) > 0.6


def test_honest_federations_keep_their_model(federation):
    honest, _, _, X_test, truth = federation
    merged = merge_forests(honest, labels=["a", "b", "c", "d"])
    bounded = merged.predict_proba(X_test)
    unbounded = merged.predict_proba(X_test, tolerated_parties=0)
    assert np.mean(np.argmax(bounded, axis=1) == np.argmax(unbounded, axis=1)) > 0.97
    assert abs(_accuracy(merged, X_test, truth) - _accuracy(merged, X_test, truth, tolerated_parties=0)) < 0.01
    two = merge_forests(honest[:2], labels=["a", "b"])  # two parts: the rule is the unbounded one, exactly
    np.testing.assert_allclose(two.predict_proba(X_test), two.predict_proba(X_test, tolerated_parties=0))
    with pytest.raises(ValueError, match="tolerated_parties"):
        merged.predict_proba(X_test, tolerated_parties=-1)
