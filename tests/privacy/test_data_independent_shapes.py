"""A party's released trees have a data-independent shape even where nodes are empty or pure.

Whether a node is a leaf may depend only on public facts: its layer is the last (depth
``max_depth``) or its path has left no split candidate.  A node that no training row reached,
or whose rows share one class, must split like any other (its mechanism picks among the
candidates with its all-zero or one-class counts); a leaf there would tell the outside that
the node was empty or pure, which no mechanism paid for.

A party with seven rows serves a production train request (no seed, the exact samplers)
with a FIXED deep depth through its real Flower handler.  On that fixture empty and pure
internal nodes are certain, whatever the noise (the counting arguments are at the
settings below), and the test checks that they really occur: it routes the TRUE training
rows (captured where the party hands them to ``fit``) through the released splits and
counts the rows and classes of every split node.  The reply must be a release (the
encoder refuses a data-dependent shape: a builder that stops at empty or pure nodes turns
the request into an error), every tree must pass
:func:`._instrumentation.check_tree_shapes` (each leaf at the last layer or with no
candidate left on its path), and the mechanism calls must add up to what the ledger
charged (:func:`._instrumentation.account_fit`, which runs the shape check on every fit the
gate accounts for, and requires every root-to-leaf path, the short ones here included, to spend
exactly the tree's epsilon).  The estimator alone (no encoder after it) is held to the same rule by
the accounting, and a builder that stops at pure nodes behind a release that says DP is
caught there.
"""

from __future__ import annotations

import dataclasses
import io
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import edprf_core._classifier as classifier
from edprf_core import EDPRFClassifier, load_schema
from edprf_core.encoding import FeatureGrid, encode_features, encode_labels

from ..federation._neighbours import HEADER, make_party
from ._instrumentation import AccountingError, Recorder, account_fit, check_tree_shapes
from ._party_requests import (
    TrainSettings,
    flower_task_identity,  # noqa: F401 (a fixture)
    ledger,
    release_of,
    result_of,
    send_train,
    share_salt,
)
from ._row_assignment import AssignmentRecorder

pytestmark = [pytest.mark.privacy, pytest.mark.usefixtures("flower_task_identity")]

SALT = "3c" * 16

ROWS = [
    # class 1: age in the top bin of 4 on [0, 100), code 007, grade 1
    b"80.5,007,1,1",
    b"88.0,007,1,1",
    b"97.5,007,1,1",
    # class 0: age in the bottom bin, code 12, grade 2
    b"3.5,12,2,0",
    b"9.0,12,2,0",
    b"15.5,12,2,0",
    b"22.0,12,2,0",
]
"""Seven rows, so at most seven training rows; the two classes differ in every feature.

Every age threshold of the 4-bin grid separates the classes, and so does every category split
except ``code = other`` and ``grade = 3``: a path splits off one class after at most two splits,
and the node below is pure (one class, or none)."""

BINARY = TrainSettings(leaf="counts", split_mode="binary", n_trees=1, max_depth=7, n_bins=4, depth_rule="fixed")
"""Binary on (age: 4 bins, code: 3 categories, grade: 3 categories); one tree, so it holds every training row.

A path closes every feature after 4 splits at least (age 2, code 1, grade 1) and 7 at most
(3 + 2 + 2), so the 8 nodes at depth 3 all split: with at most 7 training rows one of them is
empty (pigeonhole), and a pure non-empty one sits at depth 3 at the latest (two non-separating
splits, then a separating one).  Depth 7 is the longest path, and a tree always holds a leaf
above it: a root split on a category pins it on the left (that subtree's paths need 6 splits at
most), and any root threshold leaves one child's age at 2 codes or fewer (5 or 6 at most)."""

MULTIWAY = TrainSettings(leaf="label", split_mode="multiway", n_trees=1, max_depth=3, n_bins=4, depth_rule="fixed")
"""Multiway, one tree: every path uses each of the 3 features once, so every node above depth 3 splits.
The root's split separates the classes (they differ in every feature): its children are pure
(depth 1); depth 2 holds 3 x 3 nodes at least, more than the 7 rows: one is empty."""


def _data() -> bytes:
    return b"\n".join([HEADER, *ROWS]) + b"\n"


def node_members(forest, codes: np.ndarray, labels: np.ndarray, sample_tree, sample_rows) -> np.ndarray:
    """Class counts of every node: each training row routed from its tree's root through the released splits.

    Written from the routing rule, not the builder's code: binary, a continuous split at ``s``
    sends codes below ``s`` to the first child and a categorical split at ``c`` sends code ``c``
    there (the others to the second); multiway, code ``j`` goes to child ``j``.  Row
    ``sample_rows[i]`` goes down tree ``sample_tree[i]`` (the fit's assignment).
    """
    trees = forest.trees
    grid = FeatureGrid.from_schema(forest.schema, forest.grid_bins)
    counts = np.zeros((trees.n_nodes, forest.schema.n_classes), dtype=np.int64)
    binary = forest.split_mode == "binary"
    for t, r in zip(np.asarray(sample_tree).tolist(), np.asarray(sample_rows).tolist()):
        base = int(trees.tree_offsets[t])
        row, label = codes[r].tolist(), int(labels[r])
        node = base
        while True:
            counts[node, label] += 1
            f = int(trees.feature[node])
            if f < 0:
                break
            s, code = int(trees.split[node]), row[f]
            if not binary:
                child = code
            elif grid.is_categorical[f]:
                child = 0 if code == s else 1
            else:
                child = 0 if code < s else 1
            node = base + int(trees.first_child[node]) + child
    return counts


@pytest.mark.parametrize("settings", [BINARY, MULTIWAY], ids=["binary-counts", "multiway-label"])
def test_empty_and_pure_nodes_split_like_any_other(tmp_path: Path, monkeypatch, settings):
    setup = make_party(tmp_path, _data(), allow_seeded_randomness=False)
    share_salt(setup, SALT)
    seen = AssignmentRecorder().install(monkeypatch)  # the TRUE training rows and the fit's tree of each
    recorder = Recorder().install(monkeypatch)
    reply = send_train(setup, settings)
    assert result_of(reply)["status"] == "released", (
        f"a party with empty or pure nodes must release, got {result_of(reply)}"
    )
    release = release_of(setup, reply)
    params = release.params
    assert params.dp and not params.seeded and params.sampler == "exact"
    assert params.depth_rule == "fixed" and params.max_depth == settings.max_depth

    # the fixture really has empty and pure split nodes (the TRUE rows under the released splits)
    forest = release.forest
    schema = forest.schema
    (fit,), (build,) = seen.fits, seen.builds
    n_train = len(fit["y"])
    assert 1 <= n_train <= len(ROWS)
    codes = encode_features(fit["X"], schema, FeatureGrid.from_schema(schema, forest.grid_bins))
    assert sorted(build["sample_rows"].tolist()) == list(range(n_train))  # one tree: every training row in it
    counts = node_members(forest, codes, encode_labels(fit["y"], schema), build["sample_tree"], build["sample_rows"])
    trees = forest.trees
    internal = trees.feature >= 0
    per_tree = np.diff(trees.tree_offsets)
    totals = counts.sum(axis=1)
    classes_present = (counts > 0).sum(axis=1)
    tree_of = trees.tree_of_node()
    for t in range(trees.n_trees):
        mine = tree_of == t
        assert np.any(internal & mine & (totals == 0)), f"tree {t}: no empty split node ({per_tree[t]} nodes)"
        assert np.any(internal & mine & (totals > 0) & (classes_present == 1)), f"tree {t}: no pure split node"
    if settings.split_mode == "binary":
        depth, _ = trees.depths_and_parents()
        early = (trees.feature < 0) & (depth < params.max_depth)
        assert all(np.any(early & (tree_of == t)) for t in range(trees.n_trees)), "every tree has a leaf above depth 7"

    # the shape is data-independent, and the noise drawn adds up to what the ledger charged
    check_tree_shapes(forest)
    _, faced = account_fit(recorder.take(), forest, n_train)
    charged = {e.kind: float(e.epsilon_exact) for e in ledger(setup).entries()}
    assert charged == {"release": settings.epsilon}
    assert faced == pytest.approx(charged["release"], rel=1e-9) and faced <= charged["release"] * (1 + 1e-12)


def _fit(tmp_path: Path, monkeypatch, settings: TrainSettings):
    """The estimator alone (no encoder after it) on the seven rows, with the request's options; record, forest."""
    schema = load_schema(make_party(tmp_path, _data()).schema_path)
    frame = pd.read_csv(io.BytesIO(_data()), dtype=str)
    recorder = Recorder().install(monkeypatch)
    clf = EDPRFClassifier(
        schema,
        epsilon=settings.epsilon,
        n_trees=settings.n_trees,
        max_depth=settings.max_depth,
        n_bins=settings.n_bins,
        leaf=settings.leaf,
        split_mode=settings.split_mode,
        sampler="exact",
        marginals_share=0.0,  # the trees alone, as the party's request asks
    ).fit(frame.drop(columns=["outcome"]), frame["outcome"])
    return recorder.take(), clf.forest_


@pytest.mark.parametrize("settings", [BINARY, MULTIWAY], ids=["binary-counts", "multiway-label"])
def test_the_fit_accounting_checks_the_shape(tmp_path: Path, monkeypatch, settings):
    """The same fixture through the estimator alone: :func:`.account_fit` holds the shape to the rule itself."""
    calls, forest = _fit(tmp_path, monkeypatch, settings)
    assert forest.parts[0][1].dp
    _, faced = account_fit(calls, forest, len(ROWS))
    assert faced == pytest.approx(settings.epsilon, rel=1e-9)


@pytest.mark.parametrize("settings", [BINARY, MULTIWAY], ids=["binary-counts", "multiway-label"])
def test_the_shape_check_sees_a_builder_that_stops_at_pure_nodes(tmp_path: Path, monkeypatch, settings):
    """Power check: the builder's research rule (stop at empty or pure nodes) behind a release that says DP."""
    real = classifier.EDPRFClassifier._plan
    monkeypatch.setattr(
        classifier.EDPRFClassifier,
        "_plan",
        lambda self, params: dataclasses.replace(real(self, params), stop_when_pure=True),
    )
    calls, forest = _fit(tmp_path, monkeypatch, settings)
    assert forest.parts[0][1].dp
    with pytest.raises(AccountingError, match="a leaf above the last layer"):
        account_fit(calls, forest, len(ROWS))
