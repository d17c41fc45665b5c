"""Every refusal reason, each triggered by one targeted tampering."""

from __future__ import annotations

import math
import time

import pytest

from protocol import InvalidRelease, Reason, ReleasePolicy, decode_release, encode_release
from protocol import release_pb2 as pb

from .tampering import caterpillar, first_internal, first_leaf, replace_trees, tamper

WALL = "wall_robot_navigation"
BANK = "bank_marketing"


def refused(data, schema, policy, registry=None) -> InvalidRelease:
    with pytest.raises(InvalidRelease) as info:
        decode_release(data, schema, policy, registry)
    return info.value


def set_param(name, value):
    def edit(release):
        setattr(release.parameters, name, value)

    return edit


@pytest.fixture
def wall_release(forests):
    return encode_release(forests[WALL, "binary"], "hospital-a")


# --------------------------------------------------------------- envelope
def test_too_large_is_refused_before_parsing(wall_release, wall_schema, monkeypatch):
    import protocol._envelope as envelope

    def must_not_parse(*args, **kwargs):
        raise AssertionError("parsed bytes above the size cap")

    monkeypatch.setattr(envelope, "parse_canonical", must_not_parse)
    policy = ReleasePolicy(max_bytes=len(wall_release) - 1)
    err = refused(wall_release, wall_schema, policy)
    assert err.reason is Reason.TOO_LARGE
    assert f"expected at most {len(wall_release) - 1} bytes, got {len(wall_release)}" in err.message


@pytest.mark.parametrize("data", [b"\xff\xff\xff", b"\x0a\x05ab", b"\x12", bytes(range(256))])
def test_garbage_is_malformed(data, wall_schema, policy):
    assert refused(data, wall_schema, policy).reason is Reason.MALFORMED


def test_unknown_fields_are_malformed(wall_release, wall_schema, policy):
    # field 99, varint 1 after a valid message: a protobuf parser would keep it as an unknown field
    assert refused(wall_release + b"\x98\x06\x01", wall_schema, policy).reason is Reason.MALFORMED
    inner_with_extra = tamper(wall_release, lambda r: None)
    signed = pb.SignedRelease.FromString(inner_with_extra)
    signed.release = signed.release + b"\xf8\x07\x05"
    err = refused(signed.SerializeToString(deterministic=True), wall_schema, policy)
    assert err.reason is Reason.MALFORMED and "canonical" in err.message


def test_non_canonical_encoding_is_malformed(wall_release, wall_schema, policy):
    signed = pb.SignedRelease.FromString(wall_release)
    # the same Release with its party id repeated: parsers keep the last one
    signed.release = signed.release + b"\x1a\x0ahospital-a"
    assert refused(signed.SerializeToString(deterministic=True), wall_schema, policy).reason is Reason.MALFORMED


@pytest.mark.parametrize("version", [0, 1, 3, 4])
def test_unknown_version(wall_release, wall_schema, policy, version):
    """The decoder reads exactly one format version (2; 1 had no marginals part)."""
    err = refused(tamper(wall_release, lambda r: setattr(r, "format_version", version)), wall_schema, policy)
    assert err.reason is Reason.UNKNOWN_VERSION and f"format_version expected 2, got {version}" in err.message


def test_ids_are_bounded_and_printable(wall_release, wall_schema, policy):
    for bad in ("x" * 257, "a\x00b"):
        err = refused(tamper(wall_release, lambda r, bad=bad: setattr(r, "request_id", bad)), wall_schema, policy)
        assert err.reason is Reason.BAD_PARAMETERS and "printable" in err.message


def test_schema_mismatch(wall_release, wall_schema, embedded, policy):
    err = refused(wall_release, embedded[BANK][2], policy)
    assert err.reason is Reason.SCHEMA_MISMATCH and wall_schema.fingerprint in err.message
    forged = tamper(wall_release, lambda r: setattr(r, "schema_fingerprint", "sha256:" + "0" * 64))
    assert refused(forged, wall_schema, policy).reason is Reason.SCHEMA_MISMATCH


@pytest.mark.parametrize("party", ["", "../etc/passwd", "a b", "x" * 65])
def test_bad_party_id(wall_release, wall_schema, policy, party):
    err = refused(tamper(wall_release, lambda r: setattr(r, "party_id", party)), wall_schema, policy)
    assert err.reason is Reason.BAD_PARAMETERS and "party id" in err.message


# ------------------------------------------------------------- parameters
@pytest.mark.parametrize(
    "name, value",
    [
        ("epsilon", 0.0),
        ("epsilon", -1.0),
        ("epsilon", math.nan),
        ("epsilon", math.inf),
        ("relation", 0),
        ("relation", 7),
        ("split_mode", 3),
        ("sampler", 0),
        ("leaf", 0),
        ("depth_rule", 0),
        ("max_depth", 0),
        ("n_bins", 1),
        ("n_trees", 0),
    ],
)
def test_bad_parameters(wall_release, wall_schema, policy, name, value):
    err = refused(tamper(wall_release, set_param(name, value)), wall_schema, policy)
    assert err.reason is Reason.BAD_PARAMETERS and name in err.message


@pytest.mark.parametrize(
    "field", [b"\x18\x02", b"\x20\x02", b"\x30\x02", b"\x50\x00"], ids=["schedule", "composition", "variant", "mono"]
)
def test_a_research_option_on_the_wire_is_refused(wall_release, wall_schema, policy, field):
    """The numbers that held the research options (3, 4, 6, 10) are unknown fields: refused as malformed."""
    forged = tamper(wall_release, lambda r: r.parameters.MergeFromString(field))
    assert refused(forged, wall_schema, policy).reason is Reason.MALFORMED


def test_not_dp(wall_release, wall_schema, policy):
    err = refused(tamper(wall_release, set_param("dp", False)), wall_schema, policy)
    assert err.reason is Reason.NOT_DP


@pytest.mark.parametrize(
    "name, value, reason",
    [
        ("epsilon", 2.5, Reason.POLICY_EPSILON),
        ("max_depth", 9, Reason.POLICY_DEPTH),
        ("n_trees", 51, Reason.POLICY_TREES),
        ("n_trees", 2**32 - 1, Reason.POLICY_TREES),
        ("n_bins", 17, Reason.POLICY_BINS),
        ("n_bins", 2**32 - 1, Reason.POLICY_BINS),
    ],
)
def test_policy_limits(wall_release, wall_schema, policy, name, value, reason):
    err = refused(tamper(wall_release, set_param(name, value)), wall_schema, policy)
    shown = f"{value:g}" if isinstance(value, float) else str(value)
    assert err.reason is reason and f"got {shown}" in err.message


def test_an_epsilon_one_step_above_the_limit_is_told_apart_from_it(wall_release, wall_schema, policy):
    """Malicious-party review F6: printed short, it read "epsilon expected <= 2, got 2"."""
    above = math.nextafter(policy.max_epsilon, math.inf)
    err = refused(tamper(wall_release, set_param("epsilon", above)), wall_schema, policy)
    assert err.reason is Reason.POLICY_EPSILON
    assert f"epsilon expected <= {policy.max_epsilon!r}, got {above!r}" in err.message


def test_policy_relation(wall_release, wall_schema):
    def to_replace_one(release):
        release.parameters.relation = pb.RELATION_REPLACE_ONE

    policy = ReleasePolicy(allowed_relations=("add-remove",))
    assert refused(tamper(wall_release, to_replace_one), wall_schema, policy).reason is Reason.POLICY_RELATION
    decode_release(tamper(wall_release, to_replace_one), wall_schema, ReleasePolicy())


# --------------------------------------------------------------- structure
def test_huge_arrays_are_refused_before_building_arrays(wall_release, wall_schema, policy, monkeypatch):
    import protocol._decode as decode

    def extend_all(release):
        for name in ("feature", "split", "first_child", "leaf_class"):
            getattr(release.trees, name).extend([-1] * 200_000)

    data = tamper(wall_release, extend_all)
    monkeypatch.setattr(decode.np, "fromiter", None)  # any array built from the lists would crash
    err = refused(data, wall_schema, ReleasePolicy(max_bytes=len(data)))
    assert err.reason is Reason.BAD_STRUCTURE and "expected at most 155 nodes for 5 binary trees" in err.message


def test_declared_tree_count_must_match(wall_release, wall_schema, policy):
    err = refused(tamper(wall_release, set_param("n_trees", 4)), wall_schema, policy)
    assert err.reason is Reason.BAD_STRUCTURE and "nodes_per_tree expected 4 entries" in err.message


@pytest.mark.parametrize("sizes", [lambda s: [0] + s[1:], lambda s: [s[0] + 1] + s[1:], lambda s: [200] + s[1:]])
def test_bad_tree_sizes(wall_release, wall_schema, policy, sizes):
    def edit(release):
        new = sizes(list(release.trees.nodes_per_tree))
        del release.trees.nodes_per_tree[:]
        release.trees.nodes_per_tree.extend(new)

    assert refused(tamper(wall_release, edit), wall_schema, policy).reason is Reason.BAD_STRUCTURE


def test_unequal_node_arrays(wall_release, wall_schema, policy):
    err = refused(tamper(wall_release, lambda r: r.trees.split.append(-1)), wall_schema, policy)
    assert err.reason is Reason.BAD_STRUCTURE and "equal lengths" in err.message


def test_cycle(wall_release, wall_schema, policy):
    def point_back_to_root(release):
        release.trees.first_child[first_internal(release.trees, 1)] = 0

    err = refused(tamper(wall_release, point_back_to_root), wall_schema, policy)
    assert err.reason is Reason.BAD_STRUCTURE and "first_child expected" in err.message


def test_shared_children(wall_release, wall_schema, policy):
    def share(release):
        trees = release.trees
        a = first_internal(trees, 1)
        b = first_internal(trees, a + 1)
        trees.first_child[b] = trees.first_child[a]

    assert refused(tamper(wall_release, share), wall_schema, policy).reason is Reason.BAD_STRUCTURE


def test_dangling_node(wall_release, wall_schema, policy):
    def append_orphan_leaf(release):
        trees = release.trees
        for name, value in (("feature", -1), ("split", -1), ("first_child", -1), ("leaf_class", 0)):
            getattr(trees, name).append(value)
        trees.nodes_per_tree[-1] += 1
        release.parameters.max_depth += 1  # the fitted trees are complete: make room under the size cap

    err = refused(tamper(wall_release, append_orphan_leaf), wall_schema, policy)
    assert err.reason is Reason.BAD_STRUCTURE and "reachable from the root" in err.message


def test_leaf_with_children_is_bad_structure(wall_release, wall_schema, policy):
    def leaf_points_somewhere(release):
        release.trees.first_child[first_leaf(release.trees)] = 1

    assert refused(tamper(wall_release, leaf_points_somewhere), wall_schema, policy).reason is Reason.BAD_STRUCTURE


def test_split_node_without_children_is_bad_structure(wall_release, wall_schema, policy):
    def leaf_becomes_split(release):
        i = first_leaf(release.trees)
        release.trees.feature[i] = 0
        release.trees.split[i] = 1

    assert refused(tamper(wall_release, leaf_becomes_split), wall_schema, policy).reason is Reason.BAD_STRUCTURE


def test_deeper_than_declared(wall_release, wall_schema, policy):
    def deep_but_small(release):
        replace_trees(release, caterpillar(depth=4))  # 9 nodes, under the 15-node cap of depth 3
        release.parameters.max_depth = 3

    err = refused(tamper(wall_release, deep_but_small), wall_schema, policy)
    assert err.reason is Reason.BAD_STRUCTURE and "declared max_depth 3" in err.message


def test_multiway_feature_twice_on_a_path(forests, wall_schema, policy):
    data = encode_release(forests[WALL, "multiway"], "hospital-a")

    def reuse_root_feature(release):
        trees = release.trees
        trees.feature[first_internal(trees, 1)] = trees.feature[0]  # all wall features have 5 codes

    err = refused(tamper(data, reuse_root_feature), wall_schema, policy)
    assert err.reason is Reason.BAD_STRUCTURE and "once per path" in err.message


def test_long_chain_is_refused_quickly(wall_release, wall_schema):
    """A caterpillar of depth 100 000 (ForestArrays.validate alone is quadratic in it)."""

    def long_chain(release):
        replace_trees(release, caterpillar(depth=100_000))
        release.parameters.max_depth = 30

    data = tamper(wall_release, long_chain)
    start = time.perf_counter()
    err = refused(data, wall_schema, ReleasePolicy(max_depth=30, max_bytes=1 << 24))
    assert err.reason is Reason.BAD_STRUCTURE and "declared max_depth 30" in err.message
    assert time.perf_counter() - start < 2.0


# ------------------------------------------------------------ domain ranges
def _edit_node(pick, name, value):
    def edit(release):
        getattr(release.trees, name)[pick(release.trees)] = value

    return edit


@pytest.mark.parametrize(
    "edit, expected",
    [
        (_edit_node(lambda t: 0, "feature", 24), "feature index"),
        (_edit_node(lambda t: 0, "feature", -2), "feature index"),
        (_edit_node(first_leaf, "leaf_class", 4), "leaf class"),
        (_edit_node(first_leaf, "leaf_class", -1), "leaf class"),
        (_edit_node(lambda t: 0, "split", 5), "split value"),  # thresholds of 5 bins are 1..4
        (_edit_node(lambda t: 0, "split", 0), "split value"),
        (_edit_node(lambda t: 0, "split", -(2**31)), "split value"),
    ],
)
def test_index_out_of_range_binary(wall_release, wall_schema, policy, edit, expected):
    err = refused(tamper(wall_release, edit), wall_schema, policy)
    assert err.reason is Reason.INDEX_OUT_OF_RANGE and expected in err.message


def test_category_out_of_range(forests, embedded, policy):
    schema = embedded[BANK][2]
    data = encode_release(forests[BANK, "binary"], "hospital-a")
    release = pb.Release.FromString(pb.SignedRelease.FromString(data).release)
    grid_codes = forests[BANK, "binary"].grid.n_codes
    categorical = forests[BANK, "binary"].grid.is_categorical
    node = next(i for i, f in enumerate(release.trees.feature) if f >= 0 and categorical[f])
    too_big = grid_codes[release.trees.feature[node]]
    err = refused(tamper(data, _edit_node(lambda t: node, "split", too_big)), schema, policy)
    assert err.reason is Reason.INDEX_OUT_OF_RANGE and f"got {too_big}" in err.message


def test_multiway_split_value_must_be_unset(forests, wall_schema, policy):
    data = encode_release(forests[WALL, "multiway"], "hospital-a")
    err = refused(tamper(data, _edit_node(lambda t: 0, "split", 2)), wall_schema, policy)
    assert err.reason is Reason.INDEX_OUT_OF_RANGE


# ------------------------------------------------------------------ policy
@pytest.mark.parametrize(
    "kwargs",
    [
        {"max_epsilon": 0},
        {"max_epsilon": math.nan},
        {"max_epsilon": "1"},
        {"max_depth": 31},
        {"max_depth": 0},
        {"max_n_trees": 0},
        {"max_n_trees": 2.5},
        {"max_bytes": True},
        {"max_n_bins": 1},
        {"require_signature": 1},
        {"allowed_relations": ()},
        {"allowed_relations": "add-remove"},
        {"allowed_relations": ("add-one",)},
    ],
)
def test_policy_is_validated(kwargs):
    with pytest.raises((TypeError, ValueError), match="expected"):
        ReleasePolicy(**kwargs)


def test_policy_requiring_signatures_needs_a_registry(wall_release, wall_schema):
    with pytest.raises(ValueError, match="expected a PartyKeyRegistry"):
        decode_release(wall_release, wall_schema, ReleasePolicy(require_signature=True))


def test_invalid_release_pickles_with_its_reason(wall_schema, policy):
    import pickle

    err = refused(b"\xff", wall_schema, policy)
    again = pickle.loads(pickle.dumps(err))
    assert again.reason is err.reason and str(again) == str(err)


def test_the_encoder_refuses_the_marginals_model():
    """DPMarginalsClassifier has no wire format yet: a party cannot release it (nor its NoisyMarginals)."""
    from edprf_core import DPMarginalsClassifier

    from ..synthetic import make_data, make_schema

    schema = make_schema()
    clf = DPMarginalsClassifier(schema, n_bins=5, random_state=0).fit(*make_data(schema, 100, seed=0))
    for model in (clf, clf.marginals_):
        with pytest.raises(
            TypeError, match="encode_release: expected a DPForest, got .*: the DP marginals model has no"
        ):
            encode_release(model, "party-1")
