"""Information content, quality flags and selective aggregation."""

from __future__ import annotations

import numpy as np
import pytest

from edprf_core import CategoricalFeature, DPForest, ForestArrays, LabelSpec, Schema, TrainingParameters
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


def test_leave_one_out_flag_has_its_stated_false_positive_rate():
    """Exchangeable normal kappas (honest IID parties): each party is flagged with probability alpha."""
    from server._contribution import leave_one_out_p_value

    rng = np.random.default_rng(0)
    alpha, runs = 0.05, 4000
    for n in (4, 5, 10):
        kappas = rng.normal(0.7, 0.05, size=(runs, n))
        flagged = sum(leave_one_out_p_value(k, 0) < alpha for k in kappas)
        # binomial(4000, 0.05): sd 13.8; 4 sd either side
        assert abs(flagged - alpha * runs) < 4 * np.sqrt(runs * alpha * (1 - alpha)), (n, flagged)
    assert leave_one_out_p_value(np.array([0.7, 0.71, 0.69]), 0) == 1.0  # too few parties: never flagged
    assert leave_one_out_p_value(np.array([0.0, 0.7, 0.71, 0.69, 0.7]), 0) < 1e-4  # a label-blind party
