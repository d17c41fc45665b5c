"""The marginals part across parties: summed histograms, their noise scale, one grid, and bounded influence.

``merge_forests`` sums the parties' histograms after bounding each (edprf_core/_marginals_merge.py): the
tests check the sum and its noise scale by hand, the refusals, how parts without marginals combine, that
one forged release (any attack of ``tests/forged_releases.MARGINALS_ATTACKS``) does not take over the
global model's predictions on honest rows (bank marketing, and the wall robot: 4 classes, 24 features, where a
party's noise per column is several times its class counts), that it moves each class's summed mass no more
than the module docstring's items 3-4 say, the mass floor's honest tail by exact convolution, the limit the
docstring states (a release that keeps its class totals but reshapes the bins), and that an honest federation
is unchanged by the bound.
"""

from __future__ import annotations

import functools
import math
from dataclasses import replace

import numpy as np
import pytest

from edprf_core import EDPRFClassifier, SchemaError, load_embedded, merge_forests
from edprf_core._marginals_merge import _floors_below as _floors_below_of
from edprf_core._marginals_merge import floored_masses
from edprf_core.encoding import encode_labels
from edprf_core.marginals import (
    NOISE_MARGIN_SCALES,
    RELEASE_RANGE,
    NoisyMarginals,
    bounded_marginals_sum,
    cell_floor,
    column_floor,
    effective_epsilon,
    mass_floor,
    negative_mass_ceiling,
)
from tests.forged_releases import MARGINALS_ALTERNATING, MARGINALS_ATTACKS, forge_marginals
from tests.synthetic import make_data, make_schema

pytestmark = pytest.mark.privacy  # invariant 7 for the marginals part: in the gate, as the trees' bound is

N_HONEST = 4


def _fit(schema, X, y, seed, **kw):
    params = {"epsilon": 1.0, "n_trees": 2, "max_depth": 4, "n_bins": 10, "marginals_share": 0.5}
    params |= {"marginals_bins": 5} | kw
    return EDPRFClassifier(schema, random_state=seed, **params).fit(X, y).forest_


def test_the_sum_is_cell_by_cell_at_the_effective_epsilon():
    schema = make_schema()
    forests = [_fit(schema, *make_data(schema, 600, i), i, epsilon=e) for i, e in enumerate((0.5, 1.0))]
    merged = merge_forests(forests, labels=["a", "b"])
    for j in range(schema.n_features):
        np.testing.assert_array_equal(
            merged.marginals.counts[j], forests[0].marginals.counts[j] + forests[1].marginals.counts[j]
        )
    # variance of the sum = sum of the variances: t_sum**2 = t_a**2 + t_b**2 (what marginal_evidence reads)
    t = [f.marginals.noise_scale for f in forests]
    assert math.isclose(merged.marginals.noise_scale, math.hypot(*t))
    assert math.isclose(merged.marginals.epsilon, 1 / math.sqrt(1 / 0.5**2 + 1 / 1.0**2))
    assert math.isclose(effective_epsilon([1.0] * 4), 0.5)
    assert merged.marginals_share == 0.5


def test_differing_grids_are_refused_and_parts_without_marginals_add_trees_only():
    schema = make_schema()
    a = _fit(schema, *make_data(schema, 500, 0), 0)
    b = _fit(schema, *make_data(schema, 500, 1), 1, marginals_bins=7)
    with pytest.raises(SchemaError, match="marginals grids expected one"):
        merge_forests([a, b], labels=["a", "b"])
    trees_only = _fit(schema, *make_data(schema, 500, 2), 2, marginals_share=0.0)
    merged = merge_forests([a, trees_only], labels=["a", "t"])
    assert merged.n_trees == 4 and merged.marginals_share == 0.25  # the mean of 0.5 and 0
    for j in range(schema.n_features):
        np.testing.assert_array_equal(merged.marginals.counts[j], a.marginals.counts[j])
    assert merged.marginals.epsilon == a.marginals.epsilon
    assert merge_forests([trees_only, trees_only], labels=["x", "y"]).marginals is None


def test_the_floor_and_the_cap_by_hand():
    d, k = 2, 2

    def part(value: int, eps: float = 1.0) -> NoisyMarginals:
        return NoisyMarginals(tuple(np.full((3, k), value, dtype=np.int64) for _ in range(d)), eps, "add-remove", k)

    honest = [part(10), part(12), part(14)]
    assert cell_floor(honest[0]) == -NOISE_MARGIN_SCALES * d  # t = 1 * d / 1
    low, high = RELEASE_RANGE
    erased = NoisyMarginals(tuple(np.array([[low, 10]] * 3, dtype=np.int64) for _ in range(d)), 1.0, "add-remove", k)
    got = bounded_marginals_sum([*honest, erased])
    # class 0: the forged -2**31 cells count as the cell floor, -24 each; their negative mass (6 cells, 144) is
    # brought down to its ceiling x- = 46.2 (item 5: each cell x 0.321, -7.7, rounded -8); the column (-24) and
    # the class mass (-24) are then above their floors (item 2: -12 * 2 * sqrt(2 * 3) = -58.8; item 3: -x / d,
    # N = 6 cells < 36, x = t (24 + 2 N / 3) = 56, d = 2, so -28); class 1 as sent
    assert negative_mass_ceiling(honest[0]) == pytest.approx(46.2, abs=0.05)
    assert column_floor(honest[0], 3) == pytest.approx(-12 * 2 * np.sqrt(6))
    assert mass_floor(honest[0]) == pytest.approx(-2 * (24 + 2 * 6 / 3) / 2)
    np.testing.assert_array_equal(got.counts[0], np.array([[36 - 8, 36 + 10]] * 3))
    flooded = NoisyMarginals(tuple(np.full((3, k), high, dtype=np.int64) for _ in range(d)), 1.0, "add-remove", k)
    got = bounded_marginals_sum([*honest, flooded])
    # implausible size: each class mass capped at the 2nd largest, the largest honest one (42: 14 per cell)
    np.testing.assert_array_equal(got.counts[0], np.full((3, k), 36 + 14))
    # two parts: nothing tells the forged one from the honest one; only the floor applies
    assert bounded_marginals_sum([honest[0], flooded]).counts[0].min() == high
    with pytest.raises(ValueError, match="one grid for every party"):
        bounded_marginals_sum([part(1), NoisyMarginals((np.zeros((4, k), dtype=np.int64),) * d, 1.0, "add-remove", k)])


def _sum_tail(t: float, n: int, x: float) -> float:
    """``P(S <= -x)``, ``S`` the sum of ``n`` independent discrete Laplace noises of scale ``t``, exactly (by
    convolution of the probability mass functions, truncated far beyond ``x``)."""
    a = math.exp(-1 / t)
    support = int(60 * t) + 50
    ks = np.arange(-support, support + 1)
    pmf = (1 - a) / (1 + a) * a ** np.abs(ks)
    total = np.ones(1)
    for _ in range(n):
        total = np.convolve(total, pmf)
    return float(total[np.arange(len(total)) - n * support <= -x].sum())


def _discrete_laplace(rng: np.random.Generator, t: float, shape) -> np.ndarray:
    """Discrete Laplace noise of scale ``t``: the difference of two geometric draws."""
    p = 1 - math.exp(-1 / t)
    return rng.geometric(p, shape) - rng.geometric(p, shape)


@pytest.mark.parametrize("t", [0.5, 2.0])
@pytest.mark.parametrize("n", [1, 2, 6, 35, 36, 120])
def test_the_mass_floor_leaves_honest_noise_with_the_stated_probability(t, n):
    """Module docstring, item 3: the sum of ``N`` honest cell noises is below ``-d * mass_floor`` with probability
    below ``exp(-12)``, on both sides of ``N = 36`` where ``x`` switches form (exact tails)."""
    d = 1
    m = NoisyMarginals((np.zeros((n, 2), dtype=np.int64),), d / t, "add-remove", 2)  # t = 1 * d / epsilon
    assert m.noise_scale == pytest.approx(t)
    x = -d * mass_floor(m)
    assert x == pytest.approx(t * (8 * math.sqrt(n) if n >= 36 else 24 + 2 * n / 3))
    assert _sum_tail(t, n, x) < math.exp(-NOISE_MARGIN_SCALES)


def test_the_floors_and_ceilings_on_synthetic_histograms():
    """The wall robot's shapes (d = 24 features of 5 bins, 4 classes, t = 24): 2000 honest releases, one class
    empty, never reach the mass floor (item 3), the negative-mass ceiling (item 5) or the column ceiling (item 6):
    each with probability below exp(-12) per class (items 5, 3) or about 1e-5 per column (item 6); a forged class
    at -2**31 - 1 is brought to the mass floor, one at -2**31 - 1 in half the features and positive in the others
    to the negative-mass ceiling."""
    d, n, k = 24, 5, 4
    rng = np.random.default_rng(0)
    epsilon = 1.0
    template = NoisyMarginals(tuple(np.zeros((n, k), dtype=np.int64) for _ in range(d)), epsilon, "add-remove", k)
    t, floor, ceiling = template.noise_scale, mass_floor(template), negative_mass_ceiling(template)
    assert t == 24 and floor == pytest.approx(-8 * 24 * math.sqrt(d * n) / d)  # -87.6 rows
    assert ceiling == pytest.approx(2782, abs=1)  # against a mean of 120 a / (1 - a**2) = 1440 for an empty class
    class_rows = np.array([222, 162, 27, 0])
    # each release: one row count per class, spread over the bins of every feature, plus noise in every cell
    shares = rng.dirichlet(np.ones(n), size=(2000, d, k))  # (R, d, K, n)
    counts = np.rint(shares * class_rows[None, None, :, None]).transpose(0, 1, 3, 2)  # (R, d, n, K)
    noisy = counts + _discrete_laplace(rng, t, counts.shape)
    columns = noisy.sum(axis=2)  # (R, d, K)
    assert columns.mean(axis=1).min() > floor  # item 3's honest tail: none of 8000 class masses
    assert np.maximum(-noisy, 0).sum(axis=(1, 2)).max() <= ceiling  # item 5's: none of 8000 negative masses
    column_ceiling = np.median(columns, axis=1) - 2 * column_floor(template, n)  # item 6's, equal n_codes
    assert (columns <= column_ceiling[:, None, :]).all()  # none of 192,000 columns
    released = NoisyMarginals(tuple(noisy[0].astype(np.int64)), epsilon, "add-remove", k)
    for got, sent in zip(bounded_marginals_sum([released]).counts, released.counts):
        np.testing.assert_array_equal(got, sent)
    low = RELEASE_RANGE[0]
    erased = [h.copy() for h in released.counts]
    for h in erased:
        h[:, 0] = low
    half = [h.copy() for h in released.counts]
    for j, h in enumerate(half):
        h[:, 0] = low if j % 2 == 0 else 20  # cells of -288 (item 1) and +20
    rounding = 0.5 * n * d  # half a row per scaled cell
    for cells, mass in ((erased, floor), (half, (12 * 5 * 20 - ceiling) / d)):
        forged = NoisyMarginals(tuple(cells), epsilon, "add-remove", k)
        got = bounded_marginals_sum([forged])
        assert _class_totals(got)[0] == pytest.approx(mass, abs=rounding / d)
        assert -np.sum([np.minimum(h[:, 0], 0).sum() for h in got.counts]) <= ceiling + rounding
        np.testing.assert_array_equal(_class_totals(got)[1:], _class_totals(released)[1:])  # the others as sent
        # items 1-2 alone leave the erased class at the column floor, ten times lower
        assert column_floor(forged, n) < 10 * floor


@pytest.mark.parametrize("t", [0.5, 2.0, 24.0])
@pytest.mark.parametrize("n", [1, 6, 36, 120])
def test_the_negative_mass_ceiling_leaves_honest_noise_with_the_stated_probability(t, n):
    """Item 5: the sum of ``N`` honest cells' negative parts (at most those of their noises) exceeds
    :func:`negative_mass_ceiling` with probability below ``exp(-12)`` (exact tail, by convolution)."""
    m = NoisyMarginals((np.zeros((n, 2), dtype=np.int64),), 1 / t, "add-remove", 2)  # t = 1 * d / epsilon
    assert m.noise_scale == pytest.approx(t)
    a = math.exp(-1 / t)
    support = int(60 * t) + 50
    pmf = np.concatenate([[1 / (1 + a)], (1 - a) / (1 + a) * a ** np.arange(1, support + 1)])  # max(0, -Z)
    total = np.ones(1)
    for _ in range(n):
        total = np.convolve(total, pmf)
    x = negative_mass_ceiling(m)
    assert total[np.arange(len(total)) > x].sum() < math.exp(-NOISE_MARGIN_SCALES)
    # and the ceiling is not loose by more than the Chernoff bound's usual slack: the exact exp(-12) quantile
    assert x < 1.5 * np.searchsorted(np.cumsum(total), 1 - math.exp(-NOISE_MARGIN_SCALES))


@functools.cache
def _federation(name: str):
    """4 honest IID parties, a hostile party's own forest, test rows and their classes, seeded.

    ``"bank"``: bank marketing (two classes, 16,000 training rows, marginals share 0.75).  ``"wall-<seed>"``: the
    wall robot (4 classes, 24 features, 1,000 test rows, about 900 rows per party, marginals share 0.5 on 5 bins
    at epsilon 1: a cell's noise scale is 24, a party's noise per class column about 76 against 27-220 rows).
    """
    if name == "bank":
        X, y, schema = load_embedded("bank_marketing")
        order = np.random.default_rng(0).permutation(len(X))[:20000]
        test, train = order[:4000], order[4000:]
        seeds, kw = [200 + i for i in range(N_HONEST + 1)], {"marginals_share": 0.75}
    else:
        seed = int(name.split("-")[1])
        X, y, schema = load_embedded("wall_robot_navigation")
        order = np.random.default_rng(seed).permutation(len(X))
        test, train = order[:1000], order[1000:]
        seeds, kw = [100 * seed + i for i in range(N_HONEST + 1)], {}
    shares = np.array_split(train, N_HONEST + 1)
    forests = [_fit(schema, X.iloc[rows], y.iloc[rows], s, **kw) for s, rows in zip(seeds, shares)]
    return forests[:N_HONEST], forests[N_HONEST], X.iloc[test], encode_labels(y.iloc[test], schema)


FEDERATIONS = ("bank", "wall-0", "wall-1", "wall-2")


@pytest.fixture(scope="module")
def bank():
    return _federation("bank")


def _accuracy(forest, X, truth) -> float:
    return float(np.mean(np.argmax(forest.predict_proba(X), axis=1) == truth))


def _class_totals(marginals: NoisyMarginals) -> np.ndarray:
    """The estimator's class totals before their floor at 0: the mean over features of the column sums."""
    return np.mean([h.sum(axis=0) for h in marginals.counts], axis=0)


def _goal(honest, X_test, truth) -> tuple[float, float]:
    """(the goal of the trees' bound, tests/core/test_bounded_influence.py: no worse than losing one honest
    party, less 0.02; the honest marginals' own accuracy)."""
    labels = [f"p{i}" for i in range(N_HONEST)]
    honest_model = merge_forests(honest, labels=labels)
    acc_honest = _accuracy(honest_model, X_test, truth)
    acc_drop = _accuracy(merge_forests(honest[1:], labels=labels[1:]), X_test, truth)
    m_honest = float(np.mean(np.argmax(honest_model.marginals_proba(X_test), axis=1) == truth))
    return acc_honest - max(0.0, acc_honest - acc_drop) - 0.02, m_honest


def _assert_class_totals_bounded(honest, forged, merged) -> None:
    """Module docstring, items 3-4: against the honest parties' own sum, one forged release adds at most twice
    the largest honest party's class mass (item 4, 5 parts) and removes at most ``-mass_floor`` (item 3), up to
    the rounding of scaled cells (half a row per cell: ``N / d`` over the two items)."""
    summed = _class_totals(merged.marginals)
    honest_sum = _class_totals(bounded_marginals_sum([f.marginals for f in honest]))
    _, masses = floored_masses([f.marginals for f in honest])
    m = forged.marginals
    rounding = sum(m.n_codes) / m.n_features
    assert np.all(summed <= honest_sum + 2 * masses.max(axis=0) + rounding), (summed, honest_sum)
    assert np.all(summed >= honest_sum + mass_floor(m) - rounding), (summed, honest_sum, mass_floor(m))


@pytest.mark.parametrize("attack", MARGINALS_ATTACKS)
@pytest.mark.parametrize("federation", FEDERATIONS)
def test_one_forged_marginals_release_does_not_take_over_the_model(federation, attack):
    honest, own, X_test, truth = _federation(federation)
    labels = [f"p{i}" for i in range(N_HONEST)]
    forged = forge_marginals(attack, own)
    assert forged.parts == own.parts and forged.trees is own.trees  # conforms: only the histograms lie
    merged = merge_forests([*honest, forged], labels=[*labels, "mallory"])
    goal, m_honest = _goal(honest, X_test, truth)
    assert _accuracy(merged, X_test, truth) >= goal, attack
    # the marginals' own predictions too (the part the attack aims at), against the same goal
    m_forged = np.mean(np.argmax(merged.marginals_proba(X_test), axis=1) == truth)
    assert m_forged >= m_honest - 0.02, attack
    # the bound's own statement (module docstring, items 3-4), on the summed class totals
    _assert_class_totals_bounded(honest, forged, merged)


def _reshaped(own, k: int):
    """``own`` with class ``k``'s two densest bins of every feature at the cell floor and their mass spread over
    the other bins: every column sum, hence the class mass, as the party released it."""
    m = own.marginals
    counts = [h.copy() for h in m.counts]
    for h in counts:
        order, column = np.argsort(h[:, k]), h[:, k].sum()
        h[order[-2:], k] = cell_floor(m)
        if len(order) > 2:  # a two-bin feature has no other bins to take the mass
            h[order[:-2], k] = (column - 2 * cell_floor(m)) // (len(order) - 2)
    return replace(own, marginals=NoisyMarginals(tuple(counts), m.epsilon, m.relation, m.n_classes))


def _reshaped_within_ceiling(own, k: int):
    """``own`` with class ``k``'s densest cells over all features, as many as item 5's negative-mass ceiling
    allows, at the cell floor and their mass spread over their features' other bins: what a party that knows
    items 5-6 would send to move the class out of its densest bins."""
    m = own.marginals
    counts = [h.copy() for h in m.counts]
    floor, budget = cell_floor(m), negative_mass_ceiling(m)
    order = sorted(((h[b, k], j, b) for j, h in enumerate(counts) for b in range(h.shape[0])), reverse=True)
    chosen: dict[int, list[int]] = {}
    for _, j, b in order[: int(budget // -floor)]:
        chosen.setdefault(j, []).append(b)
    for j, bins in chosen.items():
        h, others = counts[j], [b for b in range(counts[j].shape[0]) if b not in bins]
        column = h[:, k].sum()
        h[bins, k] = floor
        h[others, k] = (column - floor * len(bins)) // len(others)
    return replace(own, marginals=NoisyMarginals(tuple(counts), m.epsilon, m.relation, m.n_classes))


@pytest.mark.parametrize("federation", ["wall-0", "wall-1", "wall-2"])
def test_a_reshaped_release_keeps_the_class_totals(federation):
    """The limit the module docstring states: the bound holds the summed class totals, each class's negative mass
    (item 5) and each column against the release's others (item 6), not every bin's class shares.  A release that
    keeps its class masses and moves the majority class out of its densest bins (each cell at the cell floor,
    -288 here: an honest cell's own noise reaches it) stays inside every item.  Before items 5-6 it cost the wall
    robot 15-20 points (accuracy 0.52, 0.45, 0.53 against goals 0.64-0.66); item 5 scales its 48 cells at -288 to
    about -58, and it costs at most 3.2 points below the goal (0.709, 0.628, 0.735).  Spending the ceiling on the
    class's densest cells over all features (9 cells at -288) does no worse than 2.7 points below it (0.681,
    0.633, 0.764).  If these bounds fail, the docstring's statement is wrong: update it and docs/federation.md."""
    honest, own, X_test, truth = _federation(federation)
    k = int(np.argmax(_class_totals(own.marginals)))
    goal, _ = _goal(honest, X_test, truth)
    for forged in (_reshaped(own, k), _reshaped_within_ceiling(own, k)):
        merged = merge_forests([*honest, forged], labels=[*(f"p{i}" for i in range(N_HONEST)), "mallory"])
        _assert_class_totals_bounded(honest, forged, merged)
        assert _accuracy(merged, X_test, truth) >= goal - 0.04


@pytest.mark.parametrize("federation", FEDERATIONS)
def test_one_cell_holds_at_most_the_column_ceiling(federation):
    """Review rev-eval E5: one cell of the least-held class carried the class's mass d times over plus the other
    columns' floors (about 21,700 rows on the wall robot against a summed cell of -56 to 27).  Item 6 holds each
    column to the median column plus ``B_j + max B`` (``B = -column_floor``), item 5 the other columns' negative
    mass; the forged cell now adds about 1,700 rows (wall robot) and 1,350 (bank), and by the items at most
    ``2 B + n |cell_floor|`` above a median column, which item 5 keeps near the class's own level."""
    honest, own, _, _ = _federation(federation)
    forged = forge_marginals("marginals-one-cell", own)
    m = own.marginals
    k = int(np.argmin(_class_totals(m)))
    sent = int(forged.marginals.counts[0][0, k])
    floored, _ = floored_masses([forged.marginals])
    columns = np.array([h[:, k].sum() for h in floored[0]])
    below = [np.minimum(h, 0) for h in _floors_below_of(forged.marginals)]
    median = np.median([h[:, k].sum() for h in _floors_below_of(forged.marginals)])
    margin = -column_floor(m, m.n_codes[0])
    # item 6, up to the negative cells item 3 may raise afterwards (at most the class's negative mass)
    assert columns.max() <= median + 2 * margin + -sum(h[:, k].sum() for h in below) + 0.5 * m.n_codes[0]
    merged = merge_forests([*honest, forged], labels=[*(f"p{i}" for i in range(N_HONEST)), "mallory"])
    added = merged.marginals.counts[0][0, k] - bounded_marginals_sum([f.marginals for f in honest]).counts[0][0, k]
    assert added <= 2 * margin + m.n_codes[0] * -cell_floor(m) and added < sent / 5


def _one_cell_against_the_bound(own, k: int, level: int):
    """Review rev-proof P1: class ``k``'s first column at ``[median + 2 B + (n - 1) m_p, -m_p, ...]`` (item 6's
    ceiling plus the column's own negative cells), 11 other columns spending the rest of item 5's negative mass, and
    the others at ``level`` rows per column (the median, the forger's choice within item 4's cap)."""
    m = own.marginals
    n, d = m.n_codes[0], m.n_features
    floor, ceiling, margin = cell_floor(m), negative_mass_ceiling(m), -column_floor(m, n)
    counts = [h.copy() for h in m.counts]
    counts[0][:, k] = floor
    spread = ceiling - (n - 1) * -floor - 1
    for h in counts[1:12]:
        h[:, k] = -int(spread / 11 / h.shape[0])
    for h in counts[12:]:
        h[:, k] = level // h.shape[0]
    median = np.median([h[:, k].sum() for h in counts[1:]] + [10**9])
    counts[0][0, k] = int(median + 2 * margin + (n - 1) * -floor) - 1
    assert d == 24  # the wall robot's shape, which the column counts above assume
    return replace(own, marginals=NoisyMarginals(tuple(counts), m.epsilon, m.relation, m.n_classes))


@pytest.mark.parametrize("federation", ["wall-0", "wall-1", "wall-2"])
def test_a_cell_built_against_the_bounds_stays_within_them(federation):
    """Reviews rev-proof P1 and rev-s60b F1: the strongest one-cell release the items allow adds up to 3,640-3,770
    rows to one cell on the wall robot, with its median column at the class's mass cap (700-800 rows a column),
    within the module docstring's bound ``median + 2 B + (n - 1) m_p`` for every class and median; not the 1,700 of
    the simpler forgery.  Over every class and a median of 0-800 rows a column it leaves the merged model at most
    1.5 points below the trees' goal (the marginals part alone loses up to 14 points)."""
    honest, own, X_test, truth = _federation(federation)
    m = own.marginals
    reach = 2 * -column_floor(m, m.n_codes[0]) + m.n_codes[0] * -cell_floor(m)
    labels = [*(f"p{i}" for i in range(N_HONEST)), "mallory"]
    goal, _ = _goal(honest, X_test, truth)
    most, worst = 0, 1.0
    for k in range(4):
        base = bounded_marginals_sum([f.marginals for f in honest]).counts[0][0, k]
        for level in (0, 200, 400, 600, 800):
            merged = merge_forests([*honest, _one_cell_against_the_bound(own, k, level)], labels=labels)
            added = merged.marginals.counts[0][0, k] - base
            assert added <= level + reach  # the median column is at most ``level`` after the items
            most = max(most, added)
            worst = min(worst, _accuracy(merged, X_test, truth))
    assert 3500 < most < 3900
    assert worst >= goal - 0.015


@pytest.mark.parametrize("federation", FEDERATIONS)
def test_an_alternating_release_stays_near_the_goal(federation):
    """Review rev-eval E6: every cell at +-(2**31 - 1) in a checkerboard over (bin, class), no knowledge of the
    data.  Items 1-6 bound it as designed (its negative cells at the cell floor, then item 5; each class mass
    capped at twice the reference party's, item 4); what remains is that capped mass placed in half the bins,
    where the class may be rare.  Measured: wall robot 0.643, 0.657, 0.717 against goals 0.642, 0.660, 0.659;
    bank 0.883 against 0.868.  So it is held to within a point of the trees' goal, not always within the goal."""
    honest, own, X_test, truth = _federation(federation)
    forged = forge_marginals(MARGINALS_ALTERNATING, own)
    merged = merge_forests([*honest, forged], labels=[*(f"p{i}" for i in range(N_HONEST)), "mallory"])
    goal, _ = _goal(honest, X_test, truth)
    assert _accuracy(merged, X_test, truth) >= goal - 0.01
    _assert_class_totals_bounded(honest, forged, merged)


@pytest.mark.parametrize("k", [0, 1])
def test_a_reshaped_release_on_bank_keeps_the_model_within_the_goal(bank, k):
    """The same reshaping where the marginals are what the coordinator asks for (two classes, per-bin counts
    above the cell noise): the model stays within the trees' goal (measured 0.883 and 0.886 against 0.869),
    though the marginals part alone loses up to 3 points (0.860 against 0.891; 5 points, 0.841, before item 5)."""
    honest, own, X_test, truth = bank
    merged = merge_forests([*honest, _reshaped(own, k)], labels=[*(f"p{i}" for i in range(N_HONEST)), "mallory"])
    goal, _ = _goal(honest, X_test, truth)
    assert _accuracy(merged, X_test, truth) >= goal


def test_without_the_bound_the_forged_release_takes_the_model(bank):
    honest, own, X_test, truth = bank
    forged = forge_marginals("marginals-rarest-max", own)
    unbounded = bounded_marginals_sum([f.marginals for f in [*honest, forged]], tolerated=0)
    merged = merge_forests([*honest, forged], labels=["a", "b", "c", "d", "mallory"])
    taken = replace(merged, marginals=unbounded)
    rarest = int(np.argmin(np.bincount(truth, minlength=2)))
    assert np.mean(np.argmax(taken.marginals_proba(X_test), axis=1) == rarest) > 0.95
    assert np.mean(np.argmax(merged.marginals_proba(X_test), axis=1) == rarest) < 0.3


def test_an_honest_federation_is_unchanged_by_the_bound(bank):
    honest, own, _, _ = bank
    parts = [f.marginals for f in [*honest, own]]
    bounded = bounded_marginals_sum(parts)
    plain = bounded_marginals_sum(parts, tolerated=0)
    # IID parties of equal sizes: no cap binds and no honest cell lies 12 noise scales below 0
    for b, p in zip(bounded.counts, plain.counts):
        np.testing.assert_array_equal(b, p)
    for j, p in enumerate(plain.counts):
        np.testing.assert_array_equal(p, sum(m.counts[j] for m in parts))


def test_an_honest_label_skewed_federation_keeps_its_predictions():
    """Dirichlet 0.5 label skew over 5 parties: the cap may bind on a party holding most of a class, but the
    marginals' predictions stay those of the plain sum (the price the trees' rule documents, measured here)."""
    from edprf_fl.simulation import Partitioning, partition_rows

    X, y, schema = load_embedded("bank_marketing")
    order = np.random.default_rng(1).permutation(len(X))[:20000]
    test, train = order[:4000], order[4000:]
    Xtr, ytr = X.iloc[train], y.iloc[train]
    parts = partition_rows(Xtr, ytr, 5, Partitioning("dirichlet", 0.5, ""), np.random.default_rng(1))
    forests = [_fit(schema, Xtr.iloc[rows], ytr.iloc[rows], 300 + i) for i, rows in enumerate(parts)]
    merged = merge_forests(forests, labels=[f"p{i}" for i in range(5)])
    plain = replace(merged, marginals=bounded_marginals_sum([f.marginals for f in forests], tolerated=0))
    bounded_pred = np.argmax(merged.marginals_proba(X.iloc[test]), axis=1)
    plain_pred = np.argmax(plain.marginals_proba(X.iloc[test]), axis=1)
    assert np.mean(bounded_pred == plain_pred) > 0.97
