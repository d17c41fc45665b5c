"""encode_release / decode_release round trips exactly, for random and fitted forests."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from edprf_core import EDPRFClassifier, PrivacyLeakWarning, TrainingParameters, merge_forests
from edprf_core.forest import DEPTH_RULES, LEAF_OUTPUTS, RELATIONS, SPLIT_MODES
from edprf_core.research import PaperEDPRFClassifier
from protocol import (
    FORMAT_VERSION,
    ReleasePolicy,
    SignatureStatus,
    decode_release,
    encode_release,
    read_release_header,
)
from protocol import release_pb2 as pb
from protocol._parameters import ENUM_TABLES

from .forest_strategies import SPLIT_MODES as GENERATED_MODES
from .forest_strategies import random_forests
from .fuzz_settings import bounded

OPEN_POLICY = ReleasePolicy(max_epsilon=math.inf, max_depth=30, max_n_trees=100, max_n_bins=64)


def assert_same_forest(decoded, original, party_id):
    assert decoded.trees.equals(original.trees)
    assert decoded.trees.tree_offsets.dtype == np.int64
    assert all(getattr(decoded.trees, n).dtype == np.int32 for n in ("feature", "split", "first_child", "leaf_class"))
    assert decoded.schema.fingerprint == original.schema.fingerprint
    assert (decoded.split_mode, decoded.grid_bins) == (original.split_mode, original.grid_bins)
    assert len(decoded.parts) == 1
    label, params, n = decoded.parts[0]
    assert (label, params, n) == (party_id, original.parts[0][1], original.n_trees)


@bounded(60, 2000)
@given(forest=random_forests())
def test_random_forests_round_trip_exactly(forest):
    research = not forest.parts[0][1].dp  # stop_when_pure: paths may stop at any depth
    policy = replace(OPEN_POLICY, allow_non_dp=research)
    data = encode_release(forest, "party-1", allow_non_dp=research)
    got = decode_release(data, forest.schema, policy)
    assert_same_forest(got.forest, forest, "party-1")
    assert got.params == forest.parts[0][1]
    assert got.party_id == "party-1" and got.raw == data
    assert got.signature_status is SignatureStatus.UNSIGNED and not got.signed
    # encoding is deterministic: the decoded forest re-encodes to the same bytes
    assert encode_release(got.forest, "party-1", allow_non_dp=research) == data


@bounded(12, 5000)
@given(
    dataset=st.sampled_from(["wall_robot_navigation", "bank_marketing"]),
    split_mode=st.sampled_from(GENERATED_MODES),
    n_trees=st.integers(1, 4),
    max_depth=st.integers(1, 3),
    n_bins=st.integers(2, 6),
    leaf=st.sampled_from(["label", "counts"]),
    seed=st.integers(0, 2**32 - 1),
)
def test_fitted_forests_round_trip_and_predict_identically(
    embedded, dataset, split_mode, n_trees, max_depth, n_bins, leaf, seed
):
    X, y, schema = embedded[dataset]
    rows = np.random.default_rng(seed).choice(len(X), 600, replace=False)
    forest = (
        EDPRFClassifier(
            schema,
            epsilon=1.0,
            n_trees=n_trees,
            max_depth=max_depth,
            split_mode=split_mode,
            n_bins=n_bins,
            leaf=leaf,
            random_state=seed,
        )
        .fit(X.iloc[rows], y.iloc[rows])
        .forest_
    )
    got = decode_release(encode_release(forest, "hospital-a"), schema, OPEN_POLICY)
    assert_same_forest(got.forest, forest, "hospital-a")
    np.testing.assert_array_equal(got.forest.predict_proba(X.iloc[:300]), forest.predict_proba(X.iloc[:300]))


@pytest.mark.parametrize("key", ["wall_robot_navigation", "bank_marketing"])
@pytest.mark.parametrize("mode", ["binary", "multiway"])
def test_signed_fixture_forests_round_trip(forests, party_keys, registry, policy, key, mode):
    forest = forests[key, mode]
    data = encode_release(forest, "hospital-b", party_keys["hospital-b"])
    got = decode_release(data, forest.schema, policy, registry)
    assert_same_forest(got.forest, forest, "hospital-b")
    assert got.signed and got.signature_status is SignatureStatus.VERIFIED
    assert got.key_id == registry.key_id("hospital-b")


def test_multiclass_merge_of_decoded_releases_keeps_every_tree(forests, embedded, policy):
    X, _, schema = embedded["wall_robot_navigation"]
    forest = forests["wall_robot_navigation", "binary"]
    assert schema.n_classes == 4
    releases = [decode_release(encode_release(forest, p), schema, policy) for p in ("a", "b", "c")]
    merged = merge_forests([r.forest for r in releases], labels=[r.party_id for r in releases])
    assert merged.n_trees == 3 * forest.n_trees
    assert [label for label, _, _ in merged.parts] == ["a", "b", "c"]
    np.testing.assert_array_equal(merged.votes(X.iloc[:200]), 3 * forest.votes(X.iloc[:200]))


def test_header_is_readable_without_a_schema(signed_wall_release, forests, registry):
    header = read_release_header(signed_wall_release, max_bytes=1 << 22, registry=registry)
    forest = forests["wall_robot_navigation", "binary"]
    assert header.party_id == "hospital-a" and header.format_version == FORMAT_VERSION
    assert header.schema_fingerprint == forest.schema.fingerprint
    assert header.parameters == forest.parts[0][1]
    assert (header.n_trees, header.n_nodes) == (forest.n_trees, forest.trees.n_nodes)
    assert header.signature.status is SignatureStatus.VERIFIED


def test_release_carries_only_the_declared_fields(forests):
    forest = forests["bank_marketing", "binary"]
    signed = pb.SignedRelease.FromString(encode_release(forest, "hospital-a", run_id="r1", request_id="r1/train"))
    release = pb.Release.FromString(signed.release)
    assert [f.name for f, _ in release.ListFields()] == [
        "format_version",
        "schema_fingerprint",
        "party_id",
        "parameters",
        "trees",
        "run_id",
        "request_id",
    ] + (["marginals"] if forest.marginals is not None else [])
    assert {f.name for f in pb.Release.DESCRIPTOR.fields} == {
        "format_version",
        "schema_fingerprint",
        "party_id",
        "parameters",
        "trees",
        "run_id",
        "request_id",
        "marginals",
    }
    research = {"schedule", "composition", "variant", "exploit_monotonicity"}  # edprf_core.research: not on the wire
    # which choices a local fit left to the rule: for its own guarantee text, never released; why a local fit's
    # inputs were not DP (a data-fitted Pipeline step, a search's refit): refused by encode_release
    local = {"chosen", "inputs_not_dp"}
    assert {f.name for f in pb.TrainingParameters.DESCRIPTOR.fields} == {
        f for f in TrainingParameters.__dataclass_fields__
    } - research - local
    assert {f.name for f in pb.Trees.DESCRIPTOR.fields} == {
        "nodes_per_tree",
        "feature",
        "split",
        "first_child",
        "leaf_class",
        "leaf_counts",
    }
    assert all(f.is_packed for f in pb.Trees.DESCRIPTOR.fields)


def test_enum_tables_cover_every_core_value():
    for name, values in (
        ("relation", RELATIONS),
        ("split_mode", SPLIT_MODES),
        ("leaf", LEAF_OUTPUTS),
        ("depth_rule", DEPTH_RULES),
    ):
        assert set(ENUM_TABLES[name]) == set(values)
        assert 0 not in ENUM_TABLES[name].values()


def test_encoder_refuses_merged_and_non_dp_forests(forests, embedded):
    forest = forests["wall_robot_navigation", "binary"]
    with pytest.raises(ValueError, match="single-part"):
        encode_release(merge_forests([forest, forest], labels=["a", "b"]), "a")
    X, y, schema = embedded["wall_robot_navigation"]
    with pytest.warns(PrivacyLeakWarning):
        leaky = (
            PaperEDPRFClassifier(schema, n_trees=2, max_depth=2, stop_when_pure=True, random_state=0)
            .fit(X.iloc[:500], y.iloc[:500])
            .forest_
        )
    with pytest.raises(ValueError, match="dp=True"):
        encode_release(leaky, "a")
    research = encode_release(leaky, "a", allow_non_dp=True)
    got = decode_release(research, schema, replace(OPEN_POLICY, allow_non_dp=True))
    assert not got.params.dp and "NOT differentially private" in got.forest.guarantee()


@pytest.mark.parametrize(
    "option",
    [{"schedule": "uniform"}, {"composition": "sequential"}, {"variant": "tradition"}, {"exploit_monotonicity": False}],
)
def test_encoder_refuses_research_options(embedded, option):
    """The wire carries the production configuration only: a research model cannot be sent to a federation."""
    X, y, schema = embedded["wall_robot_navigation"]
    forest = (
        PaperEDPRFClassifier(schema, n_trees=2, max_depth=2, random_state=0, **option).fit(X[:500], y[:500]).forest_
    )
    with pytest.raises(ValueError, match="research options"):
        encode_release(forest, "a")


@pytest.mark.parametrize("party_id", ["", "a/b", "../x", "-lead", "x" * 65, "é", 7])
def test_encoder_refuses_bad_party_ids(forests, party_id):
    with pytest.raises(ValueError, match="party id"):
        encode_release(forests["wall_robot_navigation", "binary"], party_id)
