"""Sizes: a big impure party trains on the exact path, and every fixed width on a released path holds at its bound.

Regression of issue 19, finding 2: the exact split sampler used OpenDP's i32 domain, so a
node of more than about 32,768 balanced rows (a utility below -2**31) made the fit fail
after the ledger charged; through the party, 65,536 rows released and the same plus one
record replied ``internal_error``.  Widths on released paths and their proven bounds:

- split utilities: ``[-K * N, 0]`` with ``K = 2**16`` and ``N <= MAX_FIT_ROWS = 2**31 - 1``
  (``fit`` refuses more rows), exact in int64 (OpenDP ``T="i64"``) and in float64 (< 2**53);
- leaf counts: clamped by the builder to ``0..MAX_LEAF_COUNT = 2**31 - 1`` (post-processing),
  the wire's declared range (uint64 on the wire, checked by the decoder);
- the DP row count and the evaluation's ``(correct, total)``: int64 with OpenDP ``T="i64"``,
  for counts up to ``MAX_FIT_ROWS`` plus noise;
- node fields (feature, split, first child, leaf class) are int32: bounded by the schema and
  by ``MAX_NODES`` (public parameters), never by the data.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

import edprf_core._builder as builder
from edprf_core import DPForest, EDPRFClassifier
from edprf_core._builder import MAX_NODES
from edprf_core._exact_selection import UTILITY_SCALE, ExactPermuteAndFlip, integer_weighted_gini
from edprf_core.forest import MAX_FIT_ROWS, MAX_LEAF_COUNT
from edprf_core.marginals import MIX_SHARE_HIGH
from edprf_core.mechanisms import discrete_laplace_counts
from protocol import INSPECTION_POLICY, InvalidRelease, decode_release, encode_release, release_pb2

from ..federation._neighbours import HEADER, make_party
from ..synthetic import make_data, make_schema
from ._party_requests import TrainSettings, flower_task_identity, release_of, result_of, send_train  # noqa: F401

pytestmark = pytest.mark.privacy

K = UTILITY_SCALE
SPLIT_SENSITIVITY = 2 * K + 1  # add-remove, monotone (see _instrumentation.TrueSensitivity)


def _impure_csv(n: int) -> bytes:
    """``n`` rows of the harness schema whose label is independent of the features (balanced)."""
    rng = np.random.default_rng(19)
    age = rng.integers(0, 1000, n) / 10
    code = np.array(["007", "12", "other"])[rng.integers(0, 3, n)]
    grade = rng.integers(1, 4, n)
    outcome = rng.integers(0, 2, n)
    lines = np.char.add(
        np.char.add(np.char.add(np.char.add(age.astype(str), ","), code), ","),
        np.char.add(np.char.add(grade.astype(str), ","), outcome.astype(str)),
    )
    return HEADER + b"\n" + "\n".join(lines.tolist()).encode() + b"\n"


@pytest.mark.usefixtures("flower_task_identity")
def test_a_party_of_300000_impure_rows_trains_on_the_exact_path(tmp_path: Path):
    """One tree, auto depth, no held-out rows: the root holds all 300,000 rows (old i32: failed past ~65k)."""
    n = 300_000
    setup = make_party(tmp_path, _impure_csv(n), allow_seeded_randomness=False, holdout_fraction=0.0)
    reply = send_train(setup, TrainSettings(leaf="counts", split_mode="binary", n_trees=1, max_depth=3))
    assert result_of(reply)["status"] == "released", result_of(reply)
    release = release_of(setup, reply)
    params = release.params
    assert params.sampler == "exact" and params.depth_rule == "dp-count" and not params.seeded
    trees = release.forest.trees
    assert trees.n_trees == 1 and trees.feature[0] >= 0
    # the leaves' noisy counts add up to the rows (noise: <= 16 values of scale <= 1/0.25; 1,000 is > 60 sd)
    released = int(trees.leaf_counts[trees.feature < 0].sum())
    assert abs(released - n) < 1_000


def test_split_utilities_at_their_bound_select_exactly():
    """Utilities down to -K * MAX_FIT_ROWS go through OpenDP unwrapped: the best candidate still wins."""
    mech = ExactPermuteAndFlip(SPLIT_SENSITIVITY, monotone=True)
    low = -K * MAX_FIT_ROWS
    u = np.array([[low, 0.0], [0.0, low], [low, low + 2**40]], dtype=np.float64)
    # gaps of >= 2**40 at scale 2K + 1 (eps = 1): the best loses with probability below exp(-2**22)
    assert mech.select(u, 1.0).tolist() == [1, 0, 1]
    assert float(low) == low and low >= -(2**63)  # exact in float64 and in int64


def test_integer_gini_is_exact_at_the_row_bound():
    """``floor(K (N^2 - S) / N)`` for N = MAX_FIT_ROWS, two to five classes, against Python integers."""
    n = MAX_FIT_ROWS
    for parts in ([n // 2, n - n // 2], [1, n - 1], [n // 5] * 4 + [n - 4 * (n // 5)]):
        s = sum(p * p for p in parts)
        want = (K * (n * n - s)) // n
        got = integer_weighted_gini(np.array([parts], dtype=np.float64))[0]
        assert int(got) == want and want <= K * n < 2**53


def _small_counts_forest() -> DPForest:
    schema = make_schema(n_continuous=1, n_categorical=1)
    X, y = make_data(schema, 300, seed=0)
    return EDPRFClassifier(schema, max_depth=2, n_trees=1, n_bins=4, leaf="counts").fit(X, y).forest_


def _with_leaf_counts(forest: DPForest, value: int) -> DPForest:
    trees = forest.trees
    counts = trees.leaf_counts.copy()
    counts[trees.feature < 0] = value
    return dataclasses.replace(forest, trees=dataclasses.replace(trees, leaf_counts=counts))


def test_leaf_counts_at_their_bound_travel_the_wire():
    forest = _with_leaf_counts(_small_counts_forest(), MAX_LEAF_COUNT)
    release = decode_release(encode_release(forest, "p"), forest.schema, INSPECTION_POLICY)
    leaves = release.forest.trees.feature < 0
    assert np.all(release.forest.trees.leaf_counts[leaves] == MAX_LEAF_COUNT)


def test_leaf_counts_above_their_bound_cannot_be_released(monkeypatch):
    """The builder clamps (post-processing); a count past the bound is refused by the encoder or decoder."""
    monkeypatch.setattr(
        builder, "discrete_laplace_counts", lambda counts, epsilon, sensitivity=1, rng=None: np.asarray(counts) + 2**40
    )
    forest = _small_counts_forest()
    leaves = forest.trees.feature < 0
    assert np.all(forest.trees.leaf_counts[leaves] == MAX_LEAF_COUNT)
    with pytest.raises(ValueError, match="leaf counts"):
        encode_release(_with_leaf_counts(forest, MAX_LEAF_COUNT + 1), "p")
    # and a release forged past the encoder is refused by the decoder
    signed = release_pb2.SignedRelease.FromString(encode_release(forest, "p"))
    inner = release_pb2.Release.FromString(signed.release)
    inner.trees.leaf_counts[0] = MAX_LEAF_COUNT + 1
    signed.release = inner.SerializeToString()
    with pytest.raises(InvalidRelease, match="leaf_counts"):
        decode_release(signed.SerializeToString(), forest.schema, INSPECTION_POLICY)


@pytest.mark.parametrize("count", [2**31 - 2, 2**31 - 1, 2**31, 2**32 + 7, 2**40])
def test_the_exact_count_sampler_takes_counts_past_the_i32_range(count):
    """Discrete Laplace at scale 2 (the evaluation's): |noise| >= 60 has probability 2 e^-30 < 1e-12."""
    noisy = discrete_laplace_counts(np.array([count, count], dtype=np.int64), 1.0, sensitivity=2)
    assert noisy.dtype == np.int64 and np.all(np.abs(noisy - count) < 60)


def test_the_dp_row_count_chooses_a_shape_at_the_row_bound():
    """The DP count and the depth rule at MAX_FIT_ROWS rows (the count's noise may push it past 2**31)."""
    schema = make_schema(n_continuous=2, n_categorical=1)
    clf = EDPRFClassifier(schema, sampler="exact")
    shape = clf._shape(schema, MAX_FIT_ROWS, None)
    assert shape.rule == "dp-count" and shape.count_epsilon == pytest.approx(0.05)
    assert abs(shape.estimate - MAX_FIT_ROWS) < 600  # scale 20: |noise| >= 600 has probability 2 e^-30
    assert shape.n_trees >= 1 and 1 <= shape.max_depth and shape.n_bins >= 2
    assert shape.marginals_share == MIX_SHARE_HIGH and shape.marginals_bins >= 2  # two classes: the marginals part too


def test_node_fields_are_bounded_by_public_parameters():
    """int32 node fields: a tree-local child index is below MAX_NODES, which the builder enforces."""
    assert MAX_NODES < 2**31
    forest = _small_counts_forest()
    for name in ("feature", "split", "first_child", "leaf_class"):
        assert getattr(forest.trees, name).dtype == np.int32
