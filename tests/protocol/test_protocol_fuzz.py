"""Fuzzing the decoder: the only outcomes are a valid forest or InvalidRelease.

Bounded for CI: each test has a fixed number of examples and a deadline, so
a hang or a slow path fails the test instead of stalling the suite.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from protocol import InvalidRelease, Reason, ReleasePolicy, decode_release, encode_release, load_global_model
from protocol import release_pb2 as pb

from .fuzz_settings import bounded
from .tampering import tamper

FUZZ_POLICY = ReleasePolicy(max_epsilon=2.0, max_depth=8, max_n_trees=50, max_bytes=1 << 22, max_n_bins=16)
CASES = [
    ("wall_robot_navigation", "binary"),
    ("wall_robot_navigation", "multiway"),
    ("bank_marketing", "binary"),
    ("bank_marketing", "multiway"),
]


def decode_or_refuse(data, schema, registry=None):
    """Decode; on success the forest must pass the core's own validation."""
    try:
        got = decode_release(data, schema, FUZZ_POLICY, registry)
    except InvalidRelease as exc:
        assert isinstance(exc.reason, Reason)
        return exc
    forest = got.forest
    forest.trees.validate(forest.grid, schema.n_classes, forest.split_mode, got.params.max_depth)
    assert got.params.epsilon <= FUZZ_POLICY.max_epsilon and got.params.dp
    return got


@pytest.fixture(scope="module")
def releases(forests, party_keys):
    """(case) -> (unsigned bytes, signed bytes by hospital-b)."""
    return {
        case: (
            encode_release(forests[case], "hospital-b"),
            encode_release(forests[case], "hospital-b", party_keys["hospital-b"]),
        )
        for case in CASES
    }


mutations = st.one_of(
    st.tuples(st.just("flip"), st.integers(0, 10**9), st.integers(0, 7)),
    st.tuples(st.just("truncate"), st.integers(0, 10**9), st.just(0)),
    st.tuples(st.just("insert"), st.integers(0, 10**9), st.binary(min_size=1, max_size=8)),
    st.tuples(st.just("overwrite"), st.integers(0, 10**9), st.binary(min_size=1, max_size=8)),
    st.tuples(st.just("delete"), st.integers(0, 10**9), st.integers(1, 16)),
)


def mutate(data: bytes, ops) -> bytes:
    buf = bytearray(data)
    for kind, where, arg in ops:
        i = where % (len(buf) + 1)
        if kind == "flip" and buf:
            buf[i % len(buf)] ^= 1 << arg
        elif kind == "truncate":
            del buf[i:]
        elif kind == "insert":
            buf[i:i] = arg
        elif kind == "overwrite":
            buf[i : i + len(arg)] = arg
        elif kind == "delete":
            del buf[i : i + arg]
    return bytes(buf)


@bounded(150)
@given(data=st.binary(max_size=4096))
def test_random_bytes(data, wall_schema):
    decode_or_refuse(data, wall_schema)


@bounded(150)
@given(case=st.sampled_from(CASES), ops=st.lists(mutations, min_size=1, max_size=4))
def test_mutated_unsigned_releases(releases, embedded, case, ops):
    decode_or_refuse(mutate(releases[case][0], ops), embedded[case[0]][2])


@bounded(150)
@given(case=st.sampled_from(CASES), ops=st.lists(mutations, min_size=1, max_size=4))
def test_mutated_signed_releases_never_verify(releases, embedded, registry, case, ops):
    original = releases[case][1]
    data = mutate(original, ops)
    outcome = decode_or_refuse(data, embedded[case[0]][2], registry)
    if data != original:
        # canonical encoding + signature over the Release bytes: any change is refused
        assert isinstance(outcome, InvalidRelease)
        assert outcome.reason in {
            Reason.MALFORMED,
            Reason.TOO_LARGE,
            Reason.UNKNOWN_VERSION,
            Reason.BAD_PARAMETERS,
            Reason.BAD_SIGNATURE,
            Reason.UNKNOWN_PARTY,
            Reason.UNSIGNED,
        }


@bounded(120)
@given(
    case=st.sampled_from(CASES),
    field=st.sampled_from(["feature", "split", "first_child", "leaf_class"]),
    index=st.integers(0, 10**9),
    value=st.integers(-(2**31), 2**31 - 1),
)
def test_tampered_node_values(releases, embedded, case, field, index, value):
    """Any single node value: decoded (and valid) or refused for structure/domain reasons."""

    def edit(release):
        container = getattr(release.trees, field)
        container[index % len(container)] = value

    outcome = decode_or_refuse(tamper(releases[case][0], edit), embedded[case[0]][2])
    if isinstance(outcome, InvalidRelease):
        assert outcome.reason in {Reason.BAD_STRUCTURE, Reason.INDEX_OUT_OF_RANGE}


@bounded(80)
@given(case=st.sampled_from(CASES), seed=st.integers(0, 2**32 - 1), n_swaps=st.integers(1, 6))
def test_permuted_nodes(releases, embedded, case, seed, n_swaps):
    """Swapping nodes (cycles, shared and dangling children): never anything but a clean outcome."""
    rng = np.random.default_rng(seed)

    def edit(release):
        trees = release.trees
        n = len(trees.feature)
        for _ in range(n_swaps):
            i, j = (int(x) for x in rng.integers(0, n, 2))
            for name in ("feature", "split", "first_child", "leaf_class"):
                c = getattr(trees, name)
                c[i], c[j] = c[j], c[i]

    outcome = decode_or_refuse(tamper(releases[case][0], edit), embedded[case[0]][2])
    if isinstance(outcome, InvalidRelease):
        assert outcome.reason in {Reason.BAD_STRUCTURE, Reason.INDEX_OUT_OF_RANGE}


@bounded(60)
@given(
    epsilon=st.floats(),
    max_depth=st.integers(0, 2**32 - 1),
    n_trees=st.integers(0, 2**32 - 1),
    n_bins=st.integers(0, 2**32 - 1),
    enums=st.lists(st.integers(-5, 5), min_size=5, max_size=5),
)
def test_tampered_parameters(releases, wall_schema, epsilon, max_depth, n_trees, n_bins, enums):
    def edit(release):
        p = release.parameters
        p.epsilon, p.max_depth, p.n_trees, p.n_bins = epsilon, max_depth, n_trees, n_bins
        p.relation, p.split_mode, p.sampler, p.leaf, p.depth_rule = enums

    decode_or_refuse(tamper(releases["wall_robot_navigation", "binary"][0], edit), wall_schema)


@bounded(100)
@given(data=st.binary(max_size=2048))
def test_random_global_models(data):
    try:
        load_global_model(data)
    except InvalidRelease as exc:
        assert isinstance(exc.reason, Reason)


@bounded(60, 2000)
@given(toml=st.text(max_size=300), manifest=st.text(max_size=100))
def test_global_model_with_hostile_schema_and_manifest(releases, toml, manifest):
    model = pb.GlobalModel(
        format_version=1,
        schema_toml=toml,
        manifest_json=manifest,
        releases=[pb.SignedRelease.FromString(releases["wall_robot_navigation", "binary"][0])],
    )
    try:
        load_global_model(model.SerializeToString(deterministic=True))
    except InvalidRelease as exc:
        assert exc.reason in {Reason.MALFORMED, Reason.SCHEMA_MISMATCH}


TOML_VALUES = ['"x"', "1", "-1.5", "[]", "{}", "true", '[1, "a"]', "[[1]]", "{a = 1}", "inf", "nan", '"refuse"']


@bounded(80, 2000)
@given(edits=st.lists(st.tuples(st.integers(0, 10**6), st.sampled_from(TOML_VALUES)), min_size=1, max_size=3))
def test_global_model_with_tampered_schema_values(releases, embedded, edits):
    """Valid TOML with wrong value types: Schema.from_toml is not total on it, the loader must be."""
    lines = embedded["bank_marketing"][2].to_toml().splitlines()
    assignments = [i for i, line in enumerate(lines) if " = " in line]
    for where, value in edits:
        i = assignments[where % len(assignments)]
        lines[i] = lines[i].split(" = ")[0] + " = " + value
    model = pb.GlobalModel(
        format_version=1,
        schema_toml="\n".join(lines) + "\n",
        manifest_json="{}",
        releases=[pb.SignedRelease.FromString(releases["bank_marketing", "binary"][0])],
    )
    try:
        load_global_model(model.SerializeToString(deterministic=True))
    except InvalidRelease as exc:
        assert exc.reason in {Reason.MALFORMED, Reason.SCHEMA_MISMATCH}
