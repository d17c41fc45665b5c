"""`flwr run` in simulation mode runs the same app, unchanged, on a prepared workspace."""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from edprf_fl.cli._flower_processes import free_port
from edprf_fl.cli._main import main
from protocol import load_global_model

REPO = Path(__file__).resolve().parents[2]


def _superlinks_started_under(flwr_home: Path) -> list[int]:
    pids = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                cmd = (proc / "cmdline").read_bytes().decode(errors="replace")
            except OSError:
                continue
            if "flower-superlink" in cmd and str(flwr_home) in cmd:
                pids.append(int(proc.name))
    return pids


# `flwr run` starts a local SuperLink on the HTTP port it is given unless something already answers ``/health`` there:
# then it sends the run to that, and another test's Flower process (its HTTP API) answers "Not Found".  The port is
# found free, but another test's process may bind it before `flwr run` probes it (CI rehearsal 4, stop 64: "Using
# SuperLink: local (127.0.0.1:57453)", then "Not Found", and no "Starting local SuperLink" line).  That race, and only
# that, is run again on new ports: a real failure fails every attempt.
RACE_ATTEMPTS = 3


def _sent_to_a_stranger(proc: subprocess.CompletedProcess[str]) -> bool:
    """Whether ``flwr run`` failed after sending its run to a process on its port that it had not started."""
    said = proc.stdout + proc.stderr
    return proc.returncode != 0 and "Using SuperLink: local" in said and "Starting local SuperLink" not in said


def _flwr_run(args: list[str], flwr_home: Path, env_from_hint: tuple[str, ...]) -> subprocess.CompletedProcess[str]:
    """Run ``flwr`` with ``args`` from the project directory, its local SuperLink on free ports, and stop that SuperLink."""
    ports: set[int] = set()
    env = {
        **os.environ,
        **dict(variable.split("=", 1) for variable in env_from_hint),
        "FLWR_HOME": str(flwr_home),
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        # the local SuperLink `flwr run` starts: free ports, not Flower's fixed 39091 and 39093, which flwr reuses
        # when anything answers there (another test's SuperLink; flaky-test audit, stop 44)
        "FLWR_LOCAL_SUPERLINK_HTTP_API_PORT": str(free_port(ports)),
        "FLWR_LOCAL_CONTROL_API_PORT": str(free_port(ports)),
    }
    try:
        return subprocess.run(  # noqa: PLW1510 (the caller asserts the return code)
            [str(Path(sys.executable).parent / "flwr"), *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            cwd=REPO,  # the project directory, as the printed hint says
        )
    finally:
        # `flwr run` starts a detached local SuperLink; stop the one this run started
        for pid in _superlinks_started_under(flwr_home):
            os.kill(pid, signal.SIGTERM)


@pytest.mark.slow
@pytest.mark.ray
def test_flwr_run_simulation_on_a_prepared_workspace(tmp_path, capsys, monkeypatch):
    """The command ``--prepare-only`` prints, run as printed (from another directory: its paths are absolute)."""
    if shutil.which("flwr", path=str(Path(sys.executable).parent)) is None:
        pytest.skip("the flwr command is not installed next to this Python")
    monkeypatch.chdir(tmp_path)
    argv = ["simulate", "--prepare-only", "--seeded-noise", "--seed", "3", "--parties", "2", "--max-depth", "3"]
    assert main([*argv, "--output", "out"]) == 0
    out = tmp_path / "out"
    printed = capsys.readouterr().out
    command = shlex.split(next(line for line in printed.splitlines() if "flwr run ." in line))
    variable, ray_variable, telemetry_variable, update_variable, flwr, *args = command
    assert variable == "FLWR_DISABLE_RUNTIME_DEPENDENCY_INSTALLATION=1" and flwr == "flwr" and args[:2] == ["run", "."]
    assert ray_variable == "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0" and telemetry_variable == "FLWR_TELEMETRY_ENABLED=0"
    assert update_variable == "FLWR_DISABLE_UPDATE_CHECK=1"  # no update check to api.flower.ai (review rev-pkg P1)
    run_config = tomllib.loads((out / "run-config.toml").read_text())
    assert run_config["seed"] == 3 and run_config["require-exact-sampling"] is False  # seeded noise is not exact
    assert run_config["sim-dir"] == str(out / "workspace") and run_config["max-depth"] == 3
    pyproject = (REPO / "pyproject.toml").read_bytes()
    for attempt in range(1, RACE_ATTEMPTS + 1):
        proc = _flwr_run(
            args,
            tmp_path / f"flwr-home-{attempt}",
            env_from_hint=(variable, ray_variable, telemetry_variable, update_variable),
        )
        said = proc.stdout[-3000:] + proc.stderr[-3000:]
        if not _sent_to_a_stranger(proc) or attempt == RACE_ATTEMPTS:
            break
    assert proc.returncode == 0, said
    assert (out / "global-model.edprf").is_file(), said  # `flwr run` exits 0 when the run fails, too
    view = load_global_model(out / "global-model.edprf")
    assert view.forest.n_trees == 2 and len(view.parties) == 2
    printed = proc.stdout + proc.stderr  # the ServerApp's summary, streamed by `flwr run`
    assert "2 of 2 parties' releases accepted" in printed and f"model: {out / 'global-model.edprf'}" in printed
    assert (REPO / "pyproject.toml").read_bytes() == pyproject


def test_only_a_run_sent_to_a_process_flwr_did_not_start_is_run_again():
    """The retry's rule, on CI rehearsal 4's output and on two failures that must not be retried."""

    def done(returncode: int, stdout: str) -> subprocess.CompletedProcess[str]:
        return subprocess.CompletedProcess(["flwr"], returncode, stdout, "")

    stranger = "Flower configuration not found.\nUsing SuperLink: local (127.0.0.1:57453)\n│ Not Found │\n"
    assert _sent_to_a_stranger(done(1, stranger))
    own = "Starting local SuperLink on 127.0.0.1:57453...\nUsing SuperLink: local (127.0.0.1:57453)\n│ Not Found │\n"
    assert not _sent_to_a_stranger(done(1, own))  # its own SuperLink said so: a real failure
    assert not _sent_to_a_stranger(done(0, stranger.replace("│ Not Found │\n", "")))
