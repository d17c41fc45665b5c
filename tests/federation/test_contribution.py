"""Information content, quality flags and selective aggregation."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from edprf_core import CategoricalFeature, DPForest, LabelSpec, Schema, TrainingParameters
from edprf_core.forest import ForestArrays
from server._contribution import entropy_bits, party_contributions, tree_information
from server._selection import select_parties

SCHEMA = Schema(features=(CategoricalFeature("x", ("a", "b")),), label=LabelSpec("y", ("n", "p")))
PARAMS = TrainingParameters(epsilon=1.0, max_depth=1, n_trees=1, n_bins=2)


def _forest(trees: list[dict], labels: list[str]) -> DPForest:
    arrays = ForestArrays.from_trees(trees)
    params = [TrainingParameters(epsilon=1.0, max_depth=1, n_trees=1, n_bins=2) for _ in trees]
    return DPForest(SCHEMA, 2, "binary", arrays, tuple((lab, p, 1) for lab, p in zip(labels, params)))


STUMP = {"feature": [0, -1, -1], "split": [0, -1, -1], "first_child": [1, -1, -1], "leaf_class": [-1, 0, 1]}
LEAF = {"feature": [-1], "split": [-1], "first_child": [-1], "leaf_class": [1]}


def test_entropy_bits_by_hand():
    assert entropy_bits(np.array([1, 1])) == pytest.approx(1.0)
    assert entropy_bits(np.array([4, 0])) == pytest.approx(0.0)
    assert entropy_bits(np.array([0, 0])) == pytest.approx(0.0)
    assert entropy_bits(np.array([1, 1, 1, 1])) == pytest.approx(2.0)


def test_information_of_a_stump_and_of_the_empty_tree_by_hand():
    # x = a: labels n, n, n, p   x = b: labels p, p, p, p
    codes = np.array([[0], [0], [0], [0], [1], [1], [1], [1]], dtype=np.int32)
    y = np.array([0, 0, 0, 1, 1, 1, 1, 1])
    h_y = -(3 / 8 * np.log2(3 / 8) + 5 / 8 * np.log2(5 / 8))  # TH' = 0.9544
    h_a = -(3 / 4 * np.log2(3 / 4) + 1 / 4 * np.log2(1 / 4))  # 0.8113
    expected = h_y - (0.5 * h_a + 0.5 * 0.0)  # 0.5488 bits
    info = tree_information(_forest([STUMP, LEAF], ["s", "l"]), codes, y)
    assert info[0] == pytest.approx(expected, abs=1e-12)
    assert info[1] == pytest.approx(0.0, abs=1e-12)  # one route: TH = TH'


def test_a_split_unrelated_to_the_label_carries_no_information():
    codes = np.array([[0], [0], [1], [1]], dtype=np.int32)
    y = np.array([0, 1, 0, 1])
    assert tree_information(_forest([STUMP], ["s"]), codes, y)[0] == pytest.approx(0.0, abs=1e-12)


def test_flags_a_party_whose_trees_disagree_beyond_chance():
    rng = np.random.default_rng(0)
    n = 400
    codes = rng.integers(0, 2, (n, 1)).astype(np.int32)
    y = codes[:, 0].astype(np.int64)  # the stump is right everywhere
    flipped = {**STUMP, "leaf_class": [-1, 1, 0]}  # a flipped label map
    forest = _forest([STUMP, STUMP, STUMP, STUMP, flipped], ["a", "b", "c", "d", "bad"])
    out = {c.party: c for c in party_contributions(forest, codes, y)}
    assert out["bad"].flagged and out["bad"].accuracy == 0.0
    assert not any(out[p].flagged for p in "abcd")
    # the flipped map has the same routes, so the same information: quality needs agreement too
    assert out["bad"].information_bits == pytest.approx(out["a"].information_bits)


def test_no_flags_among_honest_parties():
    rng = np.random.default_rng(1)
    codes = rng.integers(0, 2, (300, 1)).astype(np.int32)
    y = np.where(rng.random(300) < 0.8, codes[:, 0], 1 - codes[:, 0]).astype(np.int64)
    forest = _forest([STUMP] * 5, list("abcde"))
    assert not any(c.flagged for c in party_contributions(forest, codes, y))


def test_greedy_selection_drops_harmful_parts():
    y = np.array([0, 1, 0, 1, 0, 1, 0, 1])
    good = np.eye(2, dtype=np.int64)[y]
    bad = np.eye(2, dtype=np.int64)[1 - y]
    sel = select_parties([bad, good, bad], y)
    assert sel.kept == (1,) and sel.dropped == (0, 2)
    assert sel.accuracy_path == (1.0,)
    capped = select_parties([good, good, good], y, target_parts=2)
    assert len(capped.kept) == 2
    # the coordinator's floor (min-parties, and three parts for bounded influence) wins over accuracy and target
    floored = select_parties([bad, good, bad, bad], y, target_parts=2, min_parts=3)
    assert floored.kept[0] == 1 and len(floored.kept) == 3 and len(floored.accuracy_path) == 3
    assert select_parties([bad, good], y, min_parts=3).kept == (1, 0)  # fewer parts than the floor: all of them


def test_selection_drops_a_random_part_among_honest_ones():
    rng = np.random.default_rng(3)
    n = 2000
    y = rng.integers(0, 2, n)

    def honest(acc):
        right = rng.random(n) < acc
        return np.eye(2, dtype=np.int64)[np.where(right, y, 1 - y)]

    parts = [honest(0.8), honest(0.78), honest(0.82), honest(0.79), np.eye(2, dtype=np.int64)[rng.integers(0, 2, n)]]
    sel = select_parties(parts, y)
    assert set(sel.kept) >= {0, 1, 2, 3} - set(sel.dropped) and 4 in sel.dropped
    assert len(sel.kept) >= 3


def test_probability_lift_by_hand_and_its_variance_is_the_exact_permutation_variance():
    from itertools import permutations

    from server._contribution import probability_lift

    proba = np.array([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5], [0.5, 0.5]])
    lift, _ = probability_lift(proba, np.array([0, 1, 0, 1]))
    assert lift == pytest.approx(0.75 - 0.5)  # mean P(true class) 0.75; chance 0.5 * 0.5 + 0.5 * 0.5
    # Hoeffding's variance is exact: compare with the variance over all 7! relabellings
    rng = np.random.default_rng(4)
    proba = rng.dirichlet(np.ones(3), size=7)
    y = np.array([0, 0, 0, 1, 1, 2, 2])
    lifts = [probability_lift(proba, y[list(perm)])[0] for perm in permutations(range(7))]
    assert np.mean(lifts) == pytest.approx(0.0, abs=1e-12)
    assert probability_lift(proba, y)[1] == pytest.approx(np.std(lifts), rel=1e-9)


def test_lift_p_value_has_its_level_under_relabelling():
    """Rows relabelled at random (a label-blind party): lift / se is standard normal (Hoeffding's
    combinatorial CLT), so P(p < alpha) = alpha in each tail, within binomial error."""
    from server._contribution import probability_lift

    rng = np.random.default_rng(0)
    n, runs, alpha = 400, 4000, 0.05
    proba = rng.dirichlet(np.ones(3), size=n)
    y = rng.integers(0, 3, n)
    z = np.array([np.divide(*probability_lift(proba, rng.permutation(y))) for _ in range(runs)])
    sd = np.sqrt(runs * alpha * (1 - alpha))  # binomial(4000, 0.05): 13.8
    for tail in (np.sum(z < -1.6449), np.sum(z > 1.6449)):
        assert abs(tail - alpha * runs) < 4 * sd, tail


def _honest_consortium(rng, n_parties: int, n_rows: int, blind: int | None = None):
    """Rows of two classes with P(y = 1 | x) = x; party j's probabilities are x blurred by its own noise
    (exchangeable honest parties of unequal quality); a blind party gives probabilities near chance that
    vary with noise unrelated to y (like shrunk leaf counts of trees grown on shuffled labels)."""
    x = rng.beta(0.3, 0.3, n_rows)
    y = (rng.random(n_rows) < x).astype(np.int64)
    probas = []
    for j in range(n_parties):
        weight = rng.uniform(0.3, 1.0)  # how much of the signal the party's trees kept
        p1 = weight * x + (1 - weight) * rng.random(n_rows) if j != blind else 0.5 + 0.2 * (rng.random(n_rows) - 0.5)
        probas.append(np.column_stack([1 - p1, p1]))
    return probas, y


def test_flag_rate_of_honest_parties_is_at_most_alpha_and_a_blind_party_is_flagged():
    from server._contribution import lift_flags, probability_lift

    rng = np.random.default_rng(7)
    alpha, runs, n_parties = 0.01, 300, 10
    honest_flags, blind_flags = 0, 0
    for _ in range(runs):
        probas, y = _honest_consortium(rng, n_parties, 300)
        lift, se = np.array([probability_lift(p, y) for p in probas]).T
        p_value, _, inconclusive = lift_flags(lift, se)
        honest_flags += int(np.sum((p_value < alpha) & ~inconclusive))
        probas, y = _honest_consortium(rng, n_parties, 300, blind=0)
        lift, se = np.array([probability_lift(p, y) for p in probas]).T
        p_value, _, inconclusive = lift_flags(lift, se)
        blind_flags += int(p_value[0] < alpha and not inconclusive[0])
    n = runs * n_parties
    # an honest party's lift is 0.31 x its weight (0.09-0.31; the best is 0.5 - 2 E[x(1 - x)] = 0.31 for
    # Beta(0.3, 0.3)), far above 0.1 x the median (about 0.02): the only way to be flagged is a
    # validation-sampling error, of probability < alpha; allow 4 binomial sd above alpha * n
    assert honest_flags <= alpha * n + 4 * np.sqrt(n * alpha * (1 - alpha)), honest_flags
    # a blind party's lift is 0 +- se (se about 0.06 / sqrt(300) = 0.0035) while 0.1 x the median is about 0.02
    assert blind_flags >= 0.95 * runs, blind_flags


def test_flags_need_enough_parties_an_informative_and_even_consortium():
    from server._contribution import MIN_PARTIES_FOR_FLAGS, lift_flags

    se = np.full(10, 0.005)
    p_value, threshold, inconclusive = lift_flags(np.array([0.0, 0.3, 0.31, 0.29, 0.3]), se[:5])
    assert p_value[0] < 1e-6 and not inconclusive[0] and threshold[0] == pytest.approx(0.03)
    assert not np.any(p_value[1:] < 0.5)
    # too few parties to say what is typical
    few = lift_flags(np.array([0.0, 0.3, 0.31]), se[:3])
    assert MIN_PARTIES_FOR_FLAGS > 3 and np.all(few[2]) and np.all(few[0] == 1.0)
    # the others learnt nothing the rows can see: nothing to fall short of
    assert np.all(lift_flags(np.array([0.0, -0.01, 0.0, -0.02, 0.0]), se[:5])[2])
    # two of nine others are themselves nearly blind (22 % > 15 %): inconclusive, no flag
    uneven = np.array([0.0, 0.01, 0.015] + [0.3] * 7)
    assert lift_flags(uneven, se)[2][0]
    # one of nine (11 %) is tolerated: the party is tested and flagged
    assert lift_flags(np.array([0.0, 0.01] + [0.3] * 8), se)[0][0] < 1e-6


def test_a_label_blind_party_is_flagged_unless_its_released_counts_show_a_single_class():
    """A party that saw (almost) one class cannot have learnt how x separates the classes; its released
    counts say so, and it is not tested.  The same blind trees with an even class mix are flagged."""
    rng = np.random.default_rng(2)
    n = 600
    codes = rng.integers(0, 2, (n, 1)).astype(np.int32)
    y = np.where(rng.random(n) < 0.9, codes[:, 0], 1 - codes[:, 0]).astype(np.int64)
    split_row = [-1, -1]

    def stump(counts_a, counts_b):
        return {**STUMP, "leaf_counts": [split_row, counts_a, counts_b]}

    honest = [stump([90 + i, 10], [10, 90 - i]) for i in range(4)]
    for blind, expected in ((stump([60, 60], [60, 60]), True), (stump([120, 2], [120, 1]), False)):
        forest = _forest([*honest, blind], ["a", "b", "c", "d", "blind"])
        out = {c.party: c for c in party_contributions(forest, codes, y)}
        assert out["blind"].flagged is expected and out["blind"].flag_inconclusive is not expected
        assert abs(out["blind"].probability_lift) < 0.05 < min(out[p].probability_lift for p in "abcd")
        assert not any(out[p].flagged for p in "abcd")


def test_selection_scores_each_candidate_set_as_the_pooled_model_it_would_make():
    from edprf_core import EDPRFClassifier, load_embedded, merge_forests
    from edprf_core.encoding import encode_labels

    X, y, schema = load_embedded("wall_robot_navigation")
    order = np.random.default_rng(0).permutation(len(X))
    forests = []
    for j in range(4):
        rows = order[j * 800 : (j + 1) * 800]
        labels = y.iloc[rows]
        if j == 2:  # a party with shuffled labels
            labels = pd.Series(np.random.default_rng(0).permutation(labels.to_numpy()), index=labels.index)
        forests.append(
            EDPRFClassifier(schema, epsilon=1.0, n_trees=1, max_depth=4, n_bins=10, random_state=j)
            .fit(X.iloc[rows], labels)
            .forest_
        )
    val = order[3200:4200]
    X_val, y_val = X.iloc[val], y.iloc[val]
    y_idx = encode_labels(y_val, schema).astype(np.int64)
    pooling = merge_forests(forests, labels=list("abcd")).part_pooling(X_val)
    sel = select_parties(pooling, y_idx)
    assert 2 in sel.dropped
    for k in range(len(sel.kept)):  # the path is the accuracy of the pooled model of the first k + 1 parties
        model = merge_forests([forests[i] for i in sel.kept[: k + 1]], labels=[str(i) for i in sel.kept[: k + 1]])
        assert sel.accuracy_path[k] == pytest.approx(float(np.mean(model.predict(X_val) == y_val.to_numpy())))


def test_the_normal_distribution_function_is_scipys_to_rounding():
    from scipy import stats

    from server._contribution import _normal_cdf

    z = np.concatenate([np.linspace(-37.0, 9.0, 4601), [0.0, -1e-300, 1e-300]])
    ours = np.array([_normal_cdf(v) for v in z])
    np.testing.assert_allclose(ours, stats.norm.cdf(z), rtol=1e-12, atol=0.0)
    assert _normal_cdf(0.0) == 0.5
    assert _normal_cdf(-40.0) < 1e-300 and _normal_cdf(40.0) == 1.0


def test_the_coordinator_starts_without_scipy_stats():
    """``import server`` (the coordinator, ``edprf inspect``) does not pay for scipy.stats' import (about 0.5 s)."""
    import subprocess
    import sys

    code = "import sys, server, server.server_app; print('scipy.stats' in sys.modules, 'sklearn' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "False"]


def _entry(party: str, lift: float, flagged: bool = False, inconclusive: bool = False) -> dict:
    return {
        "party": party,
        "n_trees": 1,
        "information_bits": 0.1,
        "accuracy": 0.5,
        "agreement_with_global": 0.8,
        "probability_lift": lift,
        "lift_threshold": None if inconclusive else 0.01,
        "p_value": 0.5 if not flagged else 1e-4,
        "flagged": flagged,
        "flag_inconclusive": inconclusive,
    }


def test_the_summary_of_many_parties_names_the_flagged_and_counts_the_others():
    """100 parties gave 200 summary lines (stop 40 walkthrough item): beyond 12, the flagged party by name,
    one line per other verdict, and the file with every line."""
    from edprf_fl.simulation._summary import SHOWN_PARTY_LINES, contribution_section, contributions_markdown

    many = [_entry(f"p{i:03d}", 0.01 * (i % 7)) for i in range(97)]
    many += [_entry("blind", -0.001, flagged=True), _entry("one-class", 0.0, inconclusive=True)]
    many += [_entry("odd", float("nan"), inconclusive=True)]
    lines = contribution_section(many, 0.01)
    assert len(lines) == 4, lines
    assert lines[0].startswith("- blind: ") and "SIGNIFICANTLY BELOW" in lines[0]
    assert lines[1].startswith("- 97 parties other than those named: not significantly below the other parties at the")
    assert "by +0.0 to +6.0 points (median +3.0)" in lines[1]
    assert lines[2].startswith("- 2 parties other than those named: not compared with the others")
    assert "by +0.0 to +0.0 points" in lines[2]  # the NaN lift is left out of the spread
    assert "contributions.md" in lines[3]
    full = contributions_markdown(many, 0.01)
    assert all(f"- {c['party']}: " in full for c in many) and all(f"| {c['party']} |" in full for c in many)
    unflagged = contribution_section(many[:97], 0.01)  # no flagged party: the groups are all the parties
    assert unflagged[0].startswith("- 97 parties: not significantly below the other parties")
    few = contribution_section(many[:SHOWN_PARTY_LINES], 0.01)
    assert len(few) == 1 and all(f"- {c['party']}: " in few[0] for c in many[:SHOWN_PARTY_LINES])


def test_a_flagged_party_s_line_gives_the_tenth_and_the_typical_improvement_apart():
    """The numbers audit: "less than a tenth of their typical improvement (0.9 points)" read 0.9 as the typical
    improvement; it was the tenth (the threshold), the others' median lift being 8.8 points."""
    from server._contribution_text import contribution_verdict

    flagged = {"flagged": True, "flag_inconclusive": False, "lift_threshold": 0.0088, "p_value": 1e-4}
    text = contribution_verdict(flagged, 0.01, 5)
    assert "less than a tenth (0.9 points) of their typical improvement (8.8 points)" in text


def test_the_contribution_report_holds_one_part_at_a_time():
    """Scale review F1 (S2): the report built every tree's class distribution of every validation row at once
    (trees x rows x classes floats: 8.8 GB for 50 parties x 20 trees, 10 classes, 72,000 rows).  Here 40 parts of
    10 depth-4 trees on 20,000 rows: that array alone would be 400 x 20,000 x 2 x 8 bytes = 122 MiB, the forest's
    leaves 61 MiB more; one part's are 1.5 MiB."""
    import tracemalloc

    from edprf_core import EDPRFClassifier, load_embedded, merge_forests
    from edprf_core.encoding import encode_labels

    X, y, schema = load_embedded("bank_marketing")
    part = EDPRFClassifier(schema, n_trees=10, max_depth=4, marginals_share=0, random_state=0).fit(X[:4000], y[:4000])
    forest = merge_forests([part.forest_] * 40, labels=[f"p{i}" for i in range(40)])
    rows = np.arange(20_000) % len(X)
    codes, y_idx = forest.encode(X.iloc[rows]), encode_labels(y.iloc[rows], schema).astype(np.int64)
    tracemalloc.start()
    try:
        report = party_contributions(forest, codes, y_idx, global_predicted=np.zeros(rows.size, dtype=np.int64))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(report) == 40 and len({c.probability_lift for c in report}) == 1  # the same part forty times
    assert peak < 32 * 2**20, f"peak {peak / 2**20:.0f} MiB"
