"""`flwr ... --format json` says failure in its JSON, not in its exit code.

Flower 1.41's JSON mode exits 0 when the command failed (here: nothing listens on the SuperLink's
port yet) and prints ``{"success": false, "error-message": ...}``.  A readiness check on the exit
code alone is satisfied before the SuperLink listens: the container test's was, and on a slow CI
machine the next `flwr supernode register` then failed with a bare ``KeyError: 'node-id'``.
:func:`json_result` reads both the exit code and ``success``.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from edprf_fl.cli._main import main as edprf

from ._harness import BIN, LOOPBACK, FlowerProcessError, free_port, json_result

CONNECTION = "nobody-listens"


def test_json_result_returns_the_object_of_a_success() -> None:
    assert json_result(0, 'INFO: log line\n{"success": true, "node-id": 7}\n', "register") == {
        "success": True,
        "node-id": 7,
    }


@pytest.mark.parametrize(
    ("code", "output", "said"),
    [
        (0, '{"success": false, "error-message": "Connection to the SuperLink is unavailable."}', "unavailable"),
        (1, '{"success": true, "node-id": 7}', "node-id"),
        (0, "Traceback (most recent call last): ...", "Traceback"),
        (0, "[1, 2]", "[1, 2]"),
    ],
    ids=["success-false", "non-zero-exit", "no-json", "not-an-object"],
)
def test_json_result_refuses_a_failure_with_flowers_own_text(code: int, output: str, said: str) -> None:
    with pytest.raises(FlowerProcessError, match="flwr supernode ls failed") as caught:
        json_result(code, output, "flwr supernode ls")
    assert said in str(caught.value)


def _flwr(home: Path, *args: str) -> tuple[int, str]:
    proc = subprocess.run(
        [str(BIN / "flwr"), *args, CONNECTION, "--format", "json"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={"FLWR_HOME": str(home), "PATH": str(BIN), "FLWR_TELEMETRY_ENABLED": "0"},
    )
    return proc.returncode, proc.stdout + proc.stderr


@pytest.mark.deployment
def test_flwr_json_mode_exits_0_when_no_superlink_listens_and_json_result_says_so(tmp_path: Path) -> None:
    home = tmp_path / "flwr-home"
    home.mkdir()
    (home / "config.toml").write_text(
        f'[superlink]\ndefault = "{CONNECTION}"\n\n[superlink.{CONNECTION}]\n'
        f'address = "{LOOPBACK}:{free_port()}"\ninsecure = true\n',
        encoding="utf-8",
    )
    assert edprf(["certs", "party", "--out", str(tmp_path / "keys"), "--party-id", "party-a"]) == 0
    public_key = tmp_path / "keys" / "party-a.auth.key.pub"
    assert public_key.is_file()

    for args, what in (
        (("supernode", "ls"), "flwr supernode ls"),
        (("supernode", "register", str(public_key)), "flwr supernode register"),
    ):
        code, output = _flwr(home, *args)
        # Flower's behaviour, the reason json_result exists: a failure with exit code 0
        assert code == 0, output
        with pytest.raises(FlowerProcessError, match=f"{what} failed") as caught:
            json_result(code, output, what)
        assert "unavailable" in str(caught.value)
