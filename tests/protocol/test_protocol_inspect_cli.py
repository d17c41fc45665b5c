"""``edprf inspect``: output and exit status for releases and global models."""

from __future__ import annotations

import pytest

from cli._main import main
from edprf_core import FEDERATION_NOTE
from protocol import (
    build_global_model,
    decode_release,
    encode_release,
    generate_signing_key,
    save_atomic,
    save_public_key,
)
from protocol import release_pb2 as pb

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
    for expected in ("format version 2", "party: hospital-a", f"schema fingerprint: {forest.schema.fingerprint}",
                     "epsilon=1 relation=add-remove", "split_mode=binary", "max_depth=4", "n_trees=5", "dp=True",
                     f"trees: 5, nodes: {forest.trees.n_nodes}", "signature: verified",
                     "structure: valid", "epsilon = 1 differential privacy per record", FEDERATION_NOTE):
        assert expected in out
    code, out = inspect(capsys, path)
    assert code == 0 and "signature: signed, not verified" in out


def test_release_without_a_known_schema(capsys, tmp_path, signed_wall_release, wall_schema):
    data = tamper(signed_wall_release, lambda r: setattr(r, "schema_fingerprint", "sha256:" + "ab" * 32))
    path = save_atomic(tmp_path / "x.release", data)
    code, out = inspect(capsys, path)
    assert code == 0 and "structure: NOT CHECKED" in out and "signature: unsigned" in out
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
    accepted = [decode_release(encode_release(forests[WALL, "binary"], p, party_keys[p]), wall_schema, policy,
                               registry) for p in ("hospital-a", "hospital-b")]
    path = save_atomic(tmp_path / "global.edprf", build_global_model(wall_schema, accepted, {"run_id": "r-1"}))
    code, out = inspect(capsys, path, "--keys", keys_dir)
    assert code == 0
    for expected in ("kind: global model", "format version 1", "parties: 2 (hospital-a, hospital-b)",
                     f"fingerprint {wall_schema.fingerprint}", "trees: 10", "party hospital-a: epsilon=1, 5 trees",
                     "party hospital-b: epsilon=1, 5 trees", '"run_id": "r-1"', "Merged forest of 2 parts",
                     FEDERATION_NOTE):
        assert expected in out
    assert out.count("signature: verified") == 2
    # hospital-b's key replaced in the key directory: its release no longer verifies
    save_public_key(generate_signing_key("p384"), keys_dir / "hospital-b.pub.pem")
    code, out = inspect(capsys, path, "--keys", keys_dir)
    assert code == 3 and out.count("signature: verified") == 1 and "signature: INVALID" in out


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


def test_help_lists_inspect(capsys):
    with pytest.raises(SystemExit):
        main(["inspect", "--help"])
    assert "--keys" in capsys.readouterr().out
    assert pb.GlobalModel  # the generated module imports
