"""Leaf class counts on the wire, bounded and tied to the parameters."""

from __future__ import annotations

import numpy as np
import pytest

from protocol import FORMAT_VERSION, InvalidRelease, Reason, decode_release, encode_release
from protocol import release_pb2 as pb

from .tampering import tamper

WALL = "wall_robot_navigation"


def refused(data, schema, policy) -> InvalidRelease:
    with pytest.raises(InvalidRelease) as info:
        decode_release(data, schema, policy)
    return info.value


@pytest.fixture
def counts_release(forests):
    forest = forests[WALL, "binary"]
    assert forest.has_counts  # the binary fixtures release counts (the default)
    return encode_release(forest, "hospital-a", run_id="r", request_id="q")


def test_counts_round_trip_and_give_the_same_probabilities(forests, counts_release, wall_schema, policy, embedded):
    forest = forests[WALL, "binary"]
    got = decode_release(counts_release, wall_schema, policy)
    assert got.format_version == FORMAT_VERSION and got.params.leaf == "counts"
    assert np.array_equal(got.forest.trees.leaf_counts, forest.trees.leaf_counts)
    X = embedded[WALL][0].iloc[:500]
    assert np.allclose(got.forest.predict_proba(X), forest.predict_proba(X))
    leaves = int((forest.trees.feature < 0).sum())
    release = pb.Release.FromString(pb.SignedRelease.FromString(counts_release).release)
    assert len(release.trees.leaf_counts) == leaves * wall_schema.n_classes  # leaves only, no split rows


def test_label_release_carries_no_counts(forests, wall_schema, policy):
    label = forests[WALL, "multiway"]
    raw = encode_release(label, "hospital-a")
    release = pb.Release.FromString(pb.SignedRelease.FromString(raw).release)
    assert len(release.trees.leaf_counts) == 0 and release.parameters.leaf == pb.LEAF_OUTPUT_LABEL
    forged = tamper(raw, lambda r: r.trees.leaf_counts.extend([1] * 8))
    err = refused(forged, wall_schema, policy)
    assert err.reason is Reason.BAD_STRUCTURE and "leaf_counts expected empty" in err.message


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda r: r.trees.leaf_counts.pop(), "leaf_counts expected"),
        (lambda r: r.trees.leaf_counts.append(3), "leaf_counts expected"),
        (lambda r: r.trees.leaf_counts.__setitem__(0, 2**31), "values 0..2147483647"),
        (lambda r: r.trees.leaf_counts.__setitem__(0, 2**64 - 1), "values 0..2147483647"),
        (lambda r: setattr(r.parameters, "leaf", pb.LEAF_OUTPUT_LABEL), "leaf_counts expected empty"),
    ],
)
def test_malformed_counts_are_refused(counts_release, wall_schema, policy, edit, message):
    err = refused(tamper(counts_release, edit), wall_schema, policy)
    assert err.reason is Reason.BAD_STRUCTURE and message in err.message


def test_depth_rule_must_match_the_count_epsilon(counts_release, wall_schema, policy):
    def claim_dp_count(r):
        r.parameters.depth_rule = pb.DEPTH_RULE_DP_COUNT  # with count_epsilon 0

    err = refused(tamper(counts_release, claim_dp_count), wall_schema, policy)
    assert err.reason is Reason.BAD_PARAMETERS and "depth_rule" in err.message


def _relabelled(release: pb.Release, choose) -> None:
    """Every leaf's ``leaf_class`` set to ``choose(its counts)``."""
    k = len(release.trees.leaf_counts) // sum(f < 0 for f in release.trees.feature)
    leaf = 0
    for node, feature in enumerate(release.trees.feature):
        if feature < 0:
            release.trees.leaf_class[node] = choose(list(release.trees.leaf_counts[leaf * k : (leaf + 1) * k]))
            leaf += 1


def test_a_leaf_label_is_a_class_of_its_largest_count(counts_release, wall_schema, policy):
    """Malicious-party review F5: a count leaf's label was not tied to its counts, so a party could forge the votes
    the report reads (its accuracy, agreement and kappa) while its probabilities stayed its counts'."""
    smallest = tamper(counts_release, lambda r: _relabelled(r, lambda c: int(np.argmin(c))))
    err = refused(smallest, wall_schema, policy)
    assert (
        err.reason is Reason.BAD_STRUCTURE and "leaf_class expected a class of the leaf's largest count" in err.message
    )

    def tied(release: pb.Release) -> None:  # two classes share the largest count: either label is honest
        _relabelled(release, lambda c: int(np.argmax(c)))
        k, first = wall_schema.n_classes, list(release.trees.feature).index(-1)
        top = max(release.trees.leaf_counts[:k])
        release.trees.leaf_counts[k - 1] = release.trees.leaf_counts[0] = top
        release.trees.leaf_class[first] = k - 1

    decode_release(tamper(counts_release, tied), wall_schema, policy)
