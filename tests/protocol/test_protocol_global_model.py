"""Global model: build, save atomically, load, re-verify every party's release."""

from __future__ import annotations

import os
import stat

import numpy as np
import pytest

from edprf_core.forest import FEDERATION_NOTE
from protocol import (
    InvalidRelease,
    PartyKeyRegistry,
    Reason,
    ReleasePolicy,
    SignatureStatus,
    _atomic_file,
    build_global_model,
    decode_release,
    encode_release,
    generate_signing_key,
    load_global_model,
    save_atomic,
)
from protocol import release_pb2 as pb

from .tampering import tamper

WALL = "wall_robot_navigation"
MANIFEST = {"run_id": "run-7", "metrics": {"accuracy": 0.61}, "rejections": [{"party": "x", "reason": "not_dp"}]}


@pytest.fixture
def accepted(forests, party_keys, registry, policy, wall_schema):
    """Two verified releases of the multi-class wall forest, from an Ed25519 and a P-384 party."""
    return [
        decode_release(encode_release(forests[WALL, "binary"], p, party_keys[p]), wall_schema, policy, registry)
        for p in ("hospital-a", "hospital-b")
    ]


def test_round_trip_and_reverification(accepted, registry, wall_schema, embedded, tmp_path):
    data = build_global_model(wall_schema, accepted, MANIFEST)
    path = save_atomic(tmp_path / "global.edprf", data)
    view = load_global_model(path, registry=registry)
    assert view.format_version == 1 and view.manifest == MANIFEST
    assert view.schema.fingerprint == wall_schema.fingerprint
    assert view.parties == ("hospital-a", "hospital-b") and view.all_verified
    assert [r.raw for r in view.releases] == [r.raw for r in accepted]  # exactly as received
    assert [(r.party_id, r.epsilon, r.n_trees) for r in view.releases] == [
        ("hospital-a", 1.0, 5),
        ("hospital-b", 1.0, 5),
    ]
    forest = view.forest
    assert [(label, n) for label, _, n in forest.parts] == [("hospital-a", 5), ("hospital-b", 5)]
    assert forest.trees.n_trees == 10
    X = embedded[WALL][0].iloc[:300]
    np.testing.assert_array_equal(forest.votes(X), sum(r.forest.votes(X) for r in accepted))
    assert FEDERATION_NOTE in forest.guarantee()
    assert load_global_model(data).releases[0].signature_status is SignatureStatus.UNVERIFIED


def test_reverification_with_a_wrong_key(accepted, party_keys, wall_schema):
    data = build_global_model(wall_schema, accepted, {})
    wrong = PartyKeyRegistry(
        {"hospital-a": party_keys["hospital-a"].public_key(), "hospital-b": generate_signing_key("p384").public_key()}
    )
    with pytest.raises(InvalidRelease) as info:
        load_global_model(data, registry=wrong)
    assert info.value.reason is Reason.BAD_SIGNATURE and "release 1 (party 'hospital-b')" in info.value.message
    view = load_global_model(data, registry=wrong, strict=False)
    assert [r.signature_status for r in view.releases] == [SignatureStatus.VERIFIED, SignatureStatus.INVALID]
    assert not view.all_verified


def test_tampered_release_inside_a_model(accepted, registry, wall_schema):
    model = pb.GlobalModel.FromString(build_global_model(wall_schema, accepted, {}))
    original = model.releases[1]
    forged = pb.SignedRelease.FromString(
        tamper(original.SerializeToString(deterministic=True), lambda r: setattr(r.parameters, "epsilon", 0.1))
    )
    forged.signature, forged.key_id, forged.algorithm = original.signature, original.key_id, original.algorithm
    model.releases[1].CopyFrom(forged)
    data = model.SerializeToString(deterministic=True)
    with pytest.raises(InvalidRelease) as info:
        load_global_model(data, registry=registry)
    assert info.value.reason is Reason.BAD_SIGNATURE
    assert (
        load_global_model(data, registry=registry, strict=False).releases[1].signature_status is SignatureStatus.INVALID
    )


def test_policy_applies_on_load(accepted, wall_schema):
    data = build_global_model(wall_schema, accepted, {})
    with pytest.raises(InvalidRelease) as info:
        load_global_model(data, policy=ReleasePolicy(max_epsilon=0.5))
    assert info.value.reason is Reason.POLICY_EPSILON


def test_build_refuses_duplicates_other_schemas_and_bad_manifests(accepted, forests, embedded, wall_schema, policy):
    with pytest.raises(ValueError, match="one release per party"):
        build_global_model(wall_schema, [accepted[0], accepted[0]], {})
    with pytest.raises(ValueError, match="schema fingerprint"):
        build_global_model(embedded["bank_marketing"][2], accepted, {})
    with pytest.raises(ValueError, match="at least one"):
        build_global_model(wall_schema, [], {})
    with pytest.raises(ValueError):
        build_global_model(wall_schema, accepted, {"accuracy": float("nan")})
    with pytest.raises(TypeError, match="mapping"):
        build_global_model(wall_schema, accepted, ["run"])
    multiway = decode_release(encode_release(forests[WALL, "multiway"], "hospital-c"), wall_schema, policy)
    with pytest.raises(ValueError, match="split mode"):
        build_global_model(wall_schema, [accepted[0], multiway], {})


def _model(releases, **fields) -> bytes:
    base = {"format_version": 1, "schema_toml": fields.pop("schema").to_toml(), "manifest_json": "{}"}
    base.update(fields)
    return pb.GlobalModel(releases=[pb.SignedRelease.FromString(r) for r in releases], **base).SerializeToString(
        deterministic=True
    )


@pytest.mark.parametrize(
    "fields, reason",
    [
        ({"format_version": 2}, Reason.UNKNOWN_VERSION),
        ({"schema_toml": "not toml ["}, Reason.MALFORMED),
        ({"schema_toml": "features = 1\n[label]\ncolumn = 'y'\nclasses = ['a', 'b']\n"}, Reason.MALFORMED),
        ({"manifest_json": "[1, 2]"}, Reason.MALFORMED),
        ({"manifest_json": '{"a": NaN}'}, Reason.MALFORMED),
        ({"manifest_json": "[" * 100_000}, Reason.MALFORMED),
    ],
)
def test_malformed_models(accepted, wall_schema, fields, reason):
    data = _model([accepted[0].raw], schema=wall_schema, **fields)
    with pytest.raises(InvalidRelease) as info:
        load_global_model(data)
    assert info.value.reason is reason


def test_model_level_refusals(accepted, forests, wall_schema, embedded):
    for releases, schema, reason in (
        ([], wall_schema, Reason.MALFORMED),
        ([accepted[0].raw, accepted[0].raw], wall_schema, Reason.DUPLICATE_PARTY),
        ([accepted[0].raw], embedded["bank_marketing"][2], Reason.SCHEMA_MISMATCH),
        (
            [accepted[0].raw, encode_release(forests[WALL, "multiway"], "hospital-c")],
            wall_schema,
            Reason.SCHEMA_MISMATCH,
        ),
    ):
        with pytest.raises(InvalidRelease) as info:
            load_global_model(_model(releases, schema=schema))
        assert info.value.reason is reason
    with pytest.raises(InvalidRelease) as info:
        load_global_model(_model([accepted[0].raw], schema=wall_schema), max_bytes=100)
    assert info.value.reason is Reason.TOO_LARGE


def test_oversized_model_file_is_not_read(tmp_path, monkeypatch):
    path = tmp_path / "big.edprf"
    path.write_bytes(b"\x00" * 1000)
    monkeypatch.setattr(type(path), "open", lambda *a, **k: pytest.fail("read a file above the cap"))
    with pytest.raises(InvalidRelease) as info:
        load_global_model(path, max_bytes=999)
    assert info.value.reason is Reason.TOO_LARGE


# ----------------------------------------------------------------- atomic save
def test_save_atomic_writes_and_replaces(tmp_path):
    path = tmp_path / "model.edprf"
    save_atomic(path, b"first")
    save_atomic(path, b"second" * 1_000_000)
    assert path.read_bytes() == b"second" * 1_000_000
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    assert os.listdir(tmp_path) == ["model.edprf"]


@pytest.mark.parametrize("fail_at", ["write", "fsync", "replace"])
def test_failure_mid_write_leaves_the_old_file(tmp_path, monkeypatch, fail_at):
    path = tmp_path / "model.edprf"
    save_atomic(path, b"old content")
    real_write = os.write
    calls = []

    def write_then_crash(fd, data):
        calls.append(len(data))
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        return real_write(fd, data)

    def crash(*args, **kwargs):
        raise OSError(5, "Input/output error")

    patch = {"write": ("write", write_then_crash), "fsync": ("fsync", crash), "replace": ("replace", crash)}[fail_at]
    monkeypatch.setattr(_atomic_file.os, *patch)
    with pytest.raises(OSError):
        save_atomic(path, b"n" * (3 << 20))  # three chunks: the second write fails
    monkeypatch.undo()
    assert path.read_bytes() == b"old content"
    assert os.listdir(tmp_path) == ["model.edprf"]  # no temporary file left behind
    if fail_at == "write":
        assert calls[0] == 1 << 20  # the crash happened after a part was written


def test_save_atomic_respects_mode(tmp_path):
    path = save_atomic(tmp_path / "secret", b"k", mode=0o600)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_the_model_records_how_many_colluding_parties_its_pooling_tolerates(accepted, wall_schema):
    """tolerated-parties (stop 59): recorded in the file and read back by every reader, the manifest read or not;
    the default is written as the field's absence, so a default model's bytes are those of earlier versions."""
    default = build_global_model(wall_schema, accepted, MANIFEST)
    assert pb.GlobalModel.FromString(default).tolerated_parties == 0
    assert build_global_model(wall_schema, accepted, MANIFEST, tolerated_parties=1) == default
    assert load_global_model(default).forest.tolerated_parties == 1
    two = build_global_model(wall_schema, accepted, MANIFEST, tolerated_parties=2)
    assert pb.GlobalModel.FromString(two).tolerated_parties == 2
    for manifest in (True, False):
        assert load_global_model(two, manifest=manifest).forest.tolerated_parties == 2
    for wrong in (0, -1, True, 1001):
        with pytest.raises(ValueError, match="tolerated_parties: expected an integer in"):
            build_global_model(wall_schema, accepted, MANIFEST, tolerated_parties=wrong)
    model = pb.GlobalModel.FromString(two)
    model.tolerated_parties = 1001
    with pytest.raises(InvalidRelease, match="tolerated_parties expected at most 1000, got 1001") as caught:
        load_global_model(model.SerializeToString(deterministic=True))
    assert caught.value.reason == Reason.MALFORMED
