"""``edprf inspect FILE --json``: one object a script reads instead of the text (review rev-auto A6: a seeded model
exited 0 and only the text ``privacy: NOT differentially private`` said it was not DP)."""

from __future__ import annotations

import json

import pytest

from edprf_fl.cli._inspect_json import INSPECT_FORMAT
from edprf_fl.cli._main import main
from protocol import generate_signing_key, save_public_key
from tests.model_use.model_files import PARTIES, write_model_files


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """A seeded (not DP) global model of three signed releases, and its parties' public keys."""
    return write_model_files(tmp_path_factory.mktemp("model"))


def _inspect(capsys, *args) -> tuple[int, dict, str]:
    code = main(["inspect", *map(str, args), "--json"])
    out, err = capsys.readouterr()
    return code, json.loads(out), err


def test_a_seeded_model_is_not_dp_with_its_reasons_and_verified_signatures(files, capsys):
    code, shown, err = _inspect(capsys, files["model"], "--keys", files["keys"])
    assert code == 0 and err == ""
    assert shown["format"] == INSPECT_FORMAT == "edprf-inspect/1"
    assert shown["kind"] == "global-model" and shown["exit_status"] == 0 and shown["error"] is None
    assert shown["parties"] == list(PARTIES)
    privacy = shown["privacy"]
    assert privacy["dp"] is False
    assert any("fixed research seed" in reason for reason in privacy["not_dp_reasons"])
    assert privacy["verdict"].startswith("NOT differentially private")
    assert privacy["epsilon"] == 1.0 and privacy["relations"] == ["add-remove"]
    assert "as long as each person's records sit at one party" in privacy["condition"]
    assert [r["signature"] for r in shown["releases"]] == ["verified"] * 3
    assert [r["party_id"] for r in shown["releases"]] == list(PARTIES)
    assert all(r["parameters"]["seeded"] and r["trees"] == 4 for r in shown["releases"])
    assert shown["trees"] == 12 and shown["nodes"] == sum(r["nodes"] for r in shown["releases"])
    assert shown["run_id"] == "test-run"


def test_without_keys_the_signatures_are_not_checked(files, capsys):
    code, shown, _ = _inspect(capsys, files["model"])
    assert code == 0 and [r["signature"] for r in shown["releases"]] == ["not-checked"] * 3


def test_a_signature_that_does_not_verify_is_invalid_and_exit_3(files, capsys, tmp_path):
    keys = tmp_path / "keys"
    keys.mkdir()
    for party in PARTIES:
        (keys / f"{party}.pub.pem").write_bytes((files["keys"] / f"{party}.pub.pem").read_bytes())
    save_public_key(generate_signing_key("ed25519").public_key(), keys / "hospital-b.pub.pem")  # another key
    (keys / "hospital-c.pub.pem").unlink()  # a retired party: no key
    code, shown, _ = _inspect(capsys, files["model"], "--keys", keys)
    assert code == 3 and shown["exit_status"] == 3
    assert [r["signature"] for r in shown["releases"]] == ["verified", "invalid", "no-key"]
    assert shown["releases"][1]["signature_detail"] and shown["releases"][0]["signature_detail"] is None


@pytest.mark.parametrize("content", [b"", b"junk"])
def test_an_invalid_file_is_exit_1_with_an_error_object(capsys, tmp_path, content):
    path = tmp_path / "model.edprf"
    path.write_bytes(content)
    code, shown, err = _inspect(capsys, path)
    assert code == 1
    assert set(shown) == {"format", "error", "exit_status"}
    assert shown["format"] == INSPECT_FORMAT and shown["exit_status"] == 1
    assert "not a valid release or global model" in shown["error"]
    assert err == f"edprf inspect: error: {shown['error']}\n"


@pytest.mark.parametrize("option", ["--rules", "--show-schema"])
def test_json_with_a_text_option_is_a_usage_error(files, capsys, option):
    assert main(["inspect", str(files["model"]), "--json", option]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "--json: not with --rules or --show-schema" in err
