"""``edprf inspect``: output and exit status for releases and global models."""

from __future__ import annotations

import os
import random
import stat

import pytest
from hypothesis import given
from hypothesis import strategies as st

from edprf_core.forest import FEDERATION_NOTE, POOLING_NOTE
from edprf_fl.cli._main import main
from protocol import (
    build_global_model,
    decode_release,
    encode_release,
    generate_signing_key,
    save_atomic,
    save_public_key,
)
from protocol import release_pb2 as pb

from .fuzz_settings import bounded
from .tampering import tamper, tamper_envelope

WALL = "wall_robot_navigation"


@pytest.fixture
def keys_dir(tmp_path, party_keys):
    directory = tmp_path / "keys"
    directory.mkdir()
    for party in ("hospital-a", "hospital-b"):
        save_public_key(party_keys[party], directory / f"{party}.pub.pem")
    return directory


def inspect(capsys, *args) -> tuple[int, str]:
    code = main(["inspect", *map(str, args)])
    out, err = capsys.readouterr()
    return code, out + err


def test_release_output(capsys, tmp_path, signed_wall_release, forests, keys_dir):
    path = save_atomic(tmp_path / "a.release", signed_wall_release)
    forest = forests[WALL, "binary"]
    code, out = inspect(capsys, path, "--keys", keys_dir)
    assert code == 0
    for expected in (
        "format version 2",
        "party: hospital-a",
        f"schema fingerprint: {forest.schema.fingerprint}",
        "epsilon=1 relation=add-remove",
        "split_mode=binary",
        "max_depth=4",
        "n_trees=5",
        "dp=False seeded=True",  # the fixture's forests are seeded: not DP, as the guarantee says
        f"trees: 5, nodes: {forest.trees.n_nodes}",
        "signature: verified",
        "structure: valid",
        "epsilon = 1 differential privacy per record",
        POOLING_NOTE,
        "leaf=counts",
        "leaf counts (discrete Laplace noise, clamped at 0; classes ",
    ):
        assert expected in out
    first_tree = forest.trees.tree(0)
    leaf_rows = first_tree["leaf_counts"][first_tree["feature"] < 0]
    assert "  tree 0: [" + ", ".join(str(v) for v in leaf_rows[0]) + "]" in out
    code, out = inspect(capsys, path)
    assert code == 0 and "signature: signed, not verified" in out


def test_release_without_a_known_schema(capsys, tmp_path, signed_wall_release, wall_schema):
    data = tamper(signed_wall_release, lambda r: setattr(r, "schema_fingerprint", "sha256:" + "ab" * 32))
    path = save_atomic(tmp_path / "x.release", data)
    code, out = inspect(capsys, path)
    assert code == 0 and "structure: NOT CHECKED" in out and "signature: unsigned" in out
    # the release's own claim, unverified, is never printed as a bare guarantee
    assert "as claimed by the release (structure not checked): " in out
    wall_toml = tmp_path / "wall.toml"
    wall_toml.write_text(wall_schema.to_toml())
    code, out = inspect(capsys, path, "--schema", wall_toml)
    assert code == 1 and "schema_mismatch" in out


def test_unsigned_release_with_keys_fails(capsys, tmp_path, forests, keys_dir):
    path = save_atomic(tmp_path / "u.release", encode_release(forests[WALL, "binary"], "hospital-a"))
    code, out = inspect(capsys, path)
    assert code == 0 and "signature: unsigned" in out
    code, out = inspect(capsys, path, "--keys", keys_dir)
    assert code == 3 and "signature: unsigned" in out


def test_invalid_signature_exits_non_zero(capsys, tmp_path, signed_wall_release, keys_dir):
    broken = tamper_envelope(signed_wall_release, lambda s: setattr(s, "signature", bytes(64)))
    path = save_atomic(tmp_path / "b.release", broken)
    code, out = inspect(capsys, path, "--keys", keys_dir)
    assert code == 3 and "signature: INVALID" in out and "does not verify" in out


def test_global_model_output(capsys, tmp_path, forests, party_keys, registry, policy, wall_schema, keys_dir):
    accepted = [
        decode_release(encode_release(forests[WALL, "binary"], p, party_keys[p]), wall_schema, policy, registry)
        for p in ("hospital-a", "hospital-b")
    ]
    path = save_atomic(tmp_path / "global.edprf", build_global_model(wall_schema, accepted, {"run_id": "r-1"}))
    code, out = inspect(capsys, path, "--keys", keys_dir)
    assert code == 0
    for expected in (
        "kind: global model",
        "format version 1",
        "parties: 2 (hospital-a, hospital-b)",
        f"fingerprint {wall_schema.fingerprint}",
        "trees: 10",
        "party hospital-a: epsilon=1, 5 trees",
        "party hospital-b: epsilon=1, 5 trees",
        '"run_id": "r-1"',
        "Merged forest of 2 parts",
        FEDERATION_NOTE,
    ):
        assert expected in out
    assert out.count("signature: verified") == 2
    # hospital-b's key replaced in the key directory: its release no longer verifies
    save_public_key(generate_signing_key("p384"), keys_dir / "hospital-b.pub.pem")
    code, out = inspect(capsys, path, "--keys", keys_dir)
    assert code == 3 and out.count("signature: verified") == 1 and "signature: INVALID" in out


def test_a_removed_party_s_release_is_not_verified_rather_than_invalid(
    capsys, tmp_path, forests, party_keys, registry, policy, wall_schema, keys_dir
):
    """Review (day-2 operations, finding 8): after the runbook's removal of a party (its public key moved out of
    keys-dir), its correctly signed releases in older models printed "signature: INVALID (no registered key for
    this party)"; an analyst read a forgery.  Not verified (exit 3 with --keys, as for an unsigned release), and
    named as what it is; a bad signature stays INVALID."""
    accepted = [
        decode_release(encode_release(forests[WALL, "binary"], p, party_keys[p]), wall_schema, policy, registry)
        for p in ("hospital-a", "hospital-b")
    ]
    path = save_atomic(tmp_path / "global.edprf", build_global_model(wall_schema, accepted, {"run_id": "r-1"}))
    retired = tmp_path / "retired-keys"
    retired.mkdir()
    (keys_dir / "hospital-b.pub.pem").rename(retired / "hospital-b.pub.pem")
    code, out = inspect(capsys, path, "--keys", keys_dir)
    assert code == 3 and "INVALID" not in out
    assert out.count("signature: verified") == 1
    assert (
        f"signature: not verified: no key for party 'hospital-b' in {keys_dir} (a retired party? verify with its "
        "archived key, deploy/README.md section 8)"
    ) in out
    (retired / "hospital-b.pub.pem").rename(keys_dir / "hospital-b.pub.pem")  # the archived key back beside the others
    code, out = inspect(capsys, path, "--keys", keys_dir)
    assert code == 0 and out.count("signature: verified") == 2

    release = save_atomic(
        tmp_path / "b.release", encode_release(forests[WALL, "binary"], "hospital-c", party_keys["hospital-a"])
    )
    code, out = inspect(capsys, release, "--keys", keys_dir)
    assert code == 3 and "signature: not verified: no key for party 'hospital-c'" in out and "INVALID" not in out


@pytest.mark.parametrize("content", [b"", b"junk", b"\x08\x01", bytes(range(256))])
def test_invalid_files_exit_1(capsys, tmp_path, content):
    path = tmp_path / "junk.bin"
    path.write_bytes(content)
    code, out = inspect(capsys, path)
    assert code == 1 and "not a valid release or global model" in out


def test_bad_release_structure_exits_1(capsys, tmp_path, signed_wall_release):
    data = tamper(signed_wall_release, lambda r: r.trees.leaf_class.__setitem__(-1, 99))  # the last node: a leaf
    path = save_atomic(tmp_path / "bad.release", data)
    code, out = inspect(capsys, path)
    assert code == 1 and "index_out_of_range" in out


def test_missing_file_exits_1(capsys, tmp_path):
    code, out = inspect(capsys, tmp_path / "nothing.bin")
    assert code == 1 and "No such file" in out


@pytest.mark.parametrize("content", [None, b"", b"junk"])
def test_errors_go_to_stderr_with_the_command_s_prefix(capsys, tmp_path, content):
    """A script reading stdout gets nothing from a file inspect refuses; stderr has the one line every edprf command
    writes (review rev-auto A13)."""
    path = tmp_path / "model.edprf"
    if content is not None:
        path.write_bytes(content)
    code = main(["inspect", str(path)])
    out, err = capsys.readouterr()
    assert code == 1 and out == ""
    assert err.startswith("edprf inspect: error: ") and len(err.strip().splitlines()) == 1


def test_unloadable_keys_go_to_stderr(capsys, tmp_path, signed_wall_release):
    path = save_atomic(tmp_path / "a.release", signed_wall_release)
    bad_keys = tmp_path / "keys"
    bad_keys.mkdir()
    (bad_keys / "hospital-a.pub.pem").write_bytes(b"not a key")
    code = main(["inspect", str(path), "--keys", str(bad_keys)])
    out, err = capsys.readouterr()
    assert code == 1 and out == "" and err.startswith("edprf inspect: error: ") and "cannot load party keys" in err


def test_help_lists_inspect(capsys):
    with pytest.raises(SystemExit):
        main(["inspect", "--help"])
    assert "--keys" in capsys.readouterr().out
    assert pb.GlobalModel  # the generated module imports


# --- read-only and robust on any input -------------------------------------------------------------------------------


def _assert_one_clear_line(code: int, out: str) -> None:
    assert code != 0
    assert "Traceback" not in out
    lines = out.strip().splitlines()
    assert len(lines) == 1 and "not a valid release or global model" in lines[0]


@pytest.mark.parametrize("kind", ["directory", "fifo", "dev_zero", "dev_null"])
def test_non_regular_files_are_refused_without_reading(capsys, tmp_path, kind):
    if kind == "directory":
        path, expected = tmp_path, "a directory"
    elif kind == "fifo":
        path, expected = tmp_path / "pipe", "a FIFO"
        os.mkfifo(path)  # no writer: a blocking open or read would hang the test
    elif kind == "dev_zero":
        path, expected = "/dev/zero", "a character device"
    else:
        path, expected = "/dev/null", "a character device"
    code, out = inspect(capsys, path)
    _assert_one_clear_line(code, out)
    assert f"expected a regular file, got {expected}" in out


def test_oversized_file_refused_from_fstat(capsys, tmp_path, monkeypatch):
    import protocol

    path = tmp_path / "big.bin"
    with path.open("wb") as f:
        f.truncate(protocol.INSPECTION_POLICY.max_bytes + 1)  # sparse: the size is checked before any read
    code, out = inspect(capsys, path)
    _assert_one_clear_line(code, out)
    assert "too_large" in out or "expected at most" in out


def test_read_is_bounded_to_cap_plus_one(tmp_path):
    import protocol
    from edprf_fl.cli._inspect import read_bounded_regular_file

    path = tmp_path / "f.bin"
    path.write_bytes(b"x" * 10)
    assert read_bounded_regular_file(path, 10) == b"x" * 10
    with pytest.raises(protocol.InvalidRelease, match="expected at most 9 bytes"):
        read_bounded_regular_file(path, 9)


def test_inspect_does_not_write_the_file(capsys, tmp_path, signed_wall_release):
    path = save_atomic(tmp_path / "a.release", signed_wall_release)
    os.chmod(path, stat.S_IRUSR)  # read-only: any write attempt would fail
    before = (path.read_bytes(), os.stat(path).st_mtime_ns, os.stat(path).st_ino)
    code, _ = inspect(capsys, path)
    assert code == 0
    assert (path.read_bytes(), os.stat(path).st_mtime_ns, os.stat(path).st_ino) == before


def test_unreadable_keys_directory_is_one_line(capsys, tmp_path, signed_wall_release):
    path = save_atomic(tmp_path / "a.release", signed_wall_release)
    bad_keys = tmp_path / "keys"
    bad_keys.mkdir()
    (bad_keys / "hospital-a.pub.pem").write_bytes(b"\xff\xfenot a key")
    code, out = inspect(capsys, path, "--keys", bad_keys)
    assert code != 0 and "Traceback" not in out and len(out.strip().splitlines()) == 1


def test_bad_utf8_schema_file_is_one_line(capsys, tmp_path, signed_wall_release):
    data = tamper(signed_wall_release, lambda r: setattr(r, "schema_fingerprint", "sha256:" + "ab" * 32))
    path = save_atomic(tmp_path / "x.release", data)
    schema = tmp_path / "bad.toml"
    schema.write_bytes(b"\xff\xfe\x00 = [")
    code, out = inspect(capsys, path, "--schema", schema)
    _assert_one_clear_line(code, out)


def _inspect_bytes(capsys, tmp_path, data: bytes) -> tuple[int, str]:
    path = tmp_path / "fuzz.bin"
    path.write_bytes(data)
    return inspect(capsys, path)


def _mutate(data: bytes, rnd: random.Random) -> bytes:
    buf = bytearray(data)
    for _ in range(rnd.randint(1, 8)):
        op = rnd.randrange(4)
        if op == 0 and buf:
            buf[rnd.randrange(len(buf))] = rnd.randrange(256)
        elif op == 1 and buf:
            del buf[rnd.randrange(len(buf)) :]  # truncation
        elif op == 2:
            at = rnd.randrange(len(buf) + 1)
            buf[at:at] = bytes(rnd.randrange(256) for _ in range(rnd.randint(1, 16)))
        elif buf:
            at = rnd.randrange(len(buf))
            buf[at : at + 1] = b"\xff" * rnd.randint(1, 10)  # huge varints
    return bytes(buf)


def _global_model(forests, party_keys, registry, policy, wall_schema, manifest) -> bytes:
    accepted = [
        decode_release(encode_release(forests[WALL, "binary"], p, party_keys[p]), wall_schema, policy, registry)
        for p in ("hospital-a", "hospital-b")
    ]
    return build_global_model(wall_schema, accepted, manifest)


def _assert_never_a_traceback(code: int, out: str) -> None:
    assert "Traceback" not in out
    if code == EXIT_INVALID_CODE:
        assert len(out.strip().splitlines()) == 1 and "not a valid release or global model" in out
    else:
        first = out.splitlines()[1 if out.startswith("privacy: ") else 0]  # the verdict comes first, when there is one
        assert code in (0, 3) and first.startswith("file: ")


EXIT_INVALID_CODE = 1


@bounded(60)
@given(data=st.binary(max_size=512))
def test_fuzz_random_bytes(capsys, tmp_path, data):
    code, out = _inspect_bytes(capsys, tmp_path, data)
    _assert_never_a_traceback(code, out)


@bounded(80, deadline_ms=5000)
@given(seed=st.integers(0, 2**32 - 1))
def test_fuzz_mutated_release_and_model(
    capsys, tmp_path, signed_wall_release, forests, party_keys, registry, policy, wall_schema, seed
):
    rnd = random.Random(seed)
    model = _global_model(forests, party_keys, registry, policy, wall_schema, {"run_id": "r-1"})
    code, out = _inspect_bytes(capsys, tmp_path, _mutate(rnd.choice([signed_wall_release, model]), rnd))
    _assert_never_a_traceback(code, out)


@pytest.mark.parametrize(
    "manifest",
    [
        {"contributions": [{"party": "hospital-a"}]},  # missing keys
        {
            "contributions": [
                {
                    "party": "x",
                    "p_value": "high",
                    "flagged": True,
                    "information_bits": None,
                    "accuracy": [],
                    "agreement_with_global": {},
                }
            ]
        },  # wrong types
        {"contributions": "not a list"},
        {"selection": {"kept": 7}},
        {"selection": "no"},
        {"huge": 10**300, "text": "\udcff" if False else "\u00ff" * 1000},
    ],
)
def test_malformed_manifest_never_a_traceback(
    capsys, tmp_path, forests, party_keys, registry, policy, wall_schema, manifest
):
    try:
        model = _global_model(forests, party_keys, registry, policy, wall_schema, manifest)
    except Exception:  # noqa: BLE001 - the builder refused this manifest: nothing to inspect
        pytest.skip("build_global_model refuses this manifest")
    code, out = _inspect_bytes(capsys, tmp_path, model)
    _assert_never_a_traceback(code, out)


def _inspect_json(capsys, *args) -> tuple[int, dict]:
    import json

    code = main(["inspect", *map(str, args), "--json"])
    return code, json.loads(capsys.readouterr().out)


def test_json_of_a_release_verified_and_tampered(capsys, tmp_path, signed_wall_release, forests, keys_dir):
    """Review rev-auto A6: what the text says of a release, as data (docs/reference/inspect-json.md)."""
    path = save_atomic(tmp_path / "a.release", signed_wall_release)
    code, shown = _inspect_json(capsys, path, "--keys", keys_dir)
    assert code == 0 and shown["kind"] == "release" and shown["parties"] == ["hospital-a"]
    assert shown["structure_checked"] is True and shown["schema_name"] == forests[WALL, "binary"].schema.name
    assert shown["privacy"]["dp"] is False and shown["parameters"]["seeded"] is True
    assert shown["privacy"]["condition"] == POOLING_NOTE
    assert [r["signature"] for r in shown["releases"]] == ["verified"]
    broken = save_atomic(
        tmp_path / "b.release", tamper_envelope(signed_wall_release, lambda s: setattr(s, "signature", bytes(64)))
    )
    code, shown = _inspect_json(capsys, broken, "--keys", keys_dir)
    assert code == 3 and shown["exit_status"] == 3 and shown["releases"][0]["signature"] == "invalid"
    assert "does not verify" in shown["releases"][0]["signature_detail"]
    unsigned = save_atomic(tmp_path / "u.release", encode_release(forests[WALL, "binary"], "hospital-a"))
    code, shown = _inspect_json(capsys, unsigned, "--keys", keys_dir)
    assert code == 3 and shown["releases"][0]["signature"] == "unsigned"


def test_json_of_a_release_whose_schema_is_unknown_says_its_structure_was_not_checked(
    capsys, tmp_path, signed_wall_release
):
    data = tamper(signed_wall_release, lambda r: setattr(r, "schema_fingerprint", "sha256:" + "ab" * 32))
    code, shown = _inspect_json(capsys, save_atomic(tmp_path / "x.release", data))
    assert code == 0 and shown["structure_checked"] is False and shown["schema_name"] is None
    assert shown["privacy"]["verdict"] is None and shown["privacy"]["dp"] is False  # seeded, as its parameters say


def test_json_writes_64_bit_integers_of_the_manifest_as_strings(
    capsys, tmp_path, forests, party_keys, registry, policy, wall_schema
):
    """jq 1.6 rounds numbers above 2**53 (review rev-auto A8): a node id in the manifest is a decimal string."""
    manifest = {"run_id": "r-1", "node_id": 2111461120125096181, "rounds": 3}
    data = _global_model(forests, party_keys, registry, policy, wall_schema, manifest)
    code, shown = _inspect_json(capsys, save_atomic(tmp_path / "g.edprf", data))
    assert code == 0 and shown["manifest"]["node_id"] == "2111461120125096181" and shown["manifest"]["rounds"] == 3
