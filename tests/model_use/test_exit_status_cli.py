"""The same condition gives the same exit status in every command (review rev-auto A5, docs/exit-status.md): a model
whose signatures do not verify with --keys exits 3 in inspect, predict, evaluate, explain and export; a refused
option value exits 2, as argparse's wrong option does."""

from __future__ import annotations

import shutil

import pytest

from edprf_fl.cli import main
from protocol import generate_signing_key, save_public_key


@pytest.fixture(scope="module")
def other_keys(bank_model, tmp_path_factory):
    """The model's key directory with one party's key replaced: that party's release no longer verifies."""
    keys = tmp_path_factory.mktemp("rotated") / "keys"
    shutil.copytree(bank_model["keys"], keys)
    save_public_key(generate_signing_key("ed25519").public_key(), keys / "hospital-b.pub.pem")
    return keys


@pytest.mark.parametrize(
    "command",
    [
        ["inspect", "{model}"],
        ["predict", "{model}", "{data}", "-o", "{out}/p.csv"],
        ["evaluate", "{model}", "{data}"],
        ["explain", "{model}", "{data}", "--row", "0"],
        ["export", "{model}", "-o", "{out}/m.onnx"],
    ],
    ids=lambda c: c[0],
)
def test_a_signature_that_does_not_verify_exits_3_in_every_command(bank_model, other_keys, tmp_path, capsys, command):
    argv = [a.format(model=bank_model["model"], data=bank_model["data"], out=tmp_path) for a in command]
    assert main([*argv, "--keys", str(other_keys)]) == 3
    said = capsys.readouterr()
    assert "signature" in (said.out if command[0] == "inspect" else said.err)
    assert not list(tmp_path.iterdir())  # nothing written


def test_evaluate_json_to_stdout_is_a_usage_error(bank_model, capsys):
    assert main(["evaluate", str(bank_model["model"]), str(bank_model["data"]), "--json", "-"]) == 2
    assert "--json -: expected a file path" in capsys.readouterr().err
