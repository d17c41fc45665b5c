"""`edprf simulate` opens no listening socket reachable from outside loopback.

The in-process engine opens none at all; Flower's Ray engine (``--engine ray``) opens several (GCS,
raylet, workers), and they must all sit in a loopback-only network namespace.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from edprf_fl.cli._child_process import running, session_members

from ._listening_sockets import descendants, listening_addresses, non_loopback


def _watch(
    cmd: list[str], env: dict[str, str], cwd: Path, timeout: float = 400, started: set[int] | None = None
) -> tuple[int, set[str], set[str], str]:
    proc = subprocess.Popen(
        cmd, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True
    )
    seen: set[str] = set()
    exposed: set[str] = set()
    deadline = time.monotonic() + timeout
    try:
        while proc.poll() is None and time.monotonic() < deadline:
            pids = descendants(proc.pid)
            if started is not None:
                # what the engine child started: everything outside the command's own session, which holds
                # only the command and Python's multiprocessing resource tracker (it exits on the command's
                # exit, when its pipe closes, a moment after the command)
                started |= pids - session_members(proc.pid)
            seen |= listening_addresses(pids)
            exposed |= listening_addresses(pids, exposed_only=True)
            time.sleep(0.2)
        if proc.poll() is None:
            proc.kill()
        out = proc.communicate(timeout=30)[0].decode(errors="replace")
    finally:
        if proc.poll() is None:
            proc.kill()
    return proc.returncode, seen, exposed, out


def _simulate_command(tmp_path: Path, *extra: str) -> list[str]:
    edprf = Path(sys.executable).parent / "edprf"
    return [
        str(edprf),
        "simulate",
        "--seeded-noise",
        "--parties",
        "2",
        "--max-depth",
        "2",
        "--n-trees",
        "1",
        "--no-baselines",
        "--output",
        str(tmp_path / "out"),
        *extra,
    ]


@pytest.mark.slow
def test_the_in_process_engine_opens_no_listening_socket(tmp_path):
    code, seen, _, out = _watch(_simulate_command(tmp_path, "--parties", "20"), {**os.environ}, tmp_path)
    assert code == 0, out[-3000:]
    assert "in-process engine" in out
    assert not seen, f"listening sockets: {sorted(seen)}"


@pytest.mark.slow
@pytest.mark.ray
def test_edprf_simulate_listens_on_loopback_only(tmp_path):
    cmd = _simulate_command(tmp_path, "--engine", "ray")
    started: set[int] = set()
    code, seen, exposed, out = _watch(cmd, {**os.environ}, tmp_path, started=started)
    assert code == 0, out[-3000:]
    assert seen, "no listening socket observed: the check did not see Ray run"
    # Ray's gRPC servers bind every interface of their network namespace; the simulation runs in one
    # whose only interface is loopback, so no listener is reachable from outside
    assert not non_loopback(exposed), f"reachable from outside loopback: {sorted(non_loopback(exposed))}"
    # and Ray took 127.0.0.1 as given: no route lookup towards a public address (it printed 8.8.8.8:53)
    assert "external connectivity" not in out and "8.8.8.8" not in out, out[-3000:]
    # and nothing Ray started outlives the command (its processes sit in the engine child's session)
    assert started, "no child process observed"
    assert not running(started), f"left running after the command ended: {sorted(running(started))}"


def test_with_the_engine_environment_ray_takes_loopback_as_this_node_s_address():
    """Ray 2.55 turns 127.0.0.1 into this machine's address by a route lookup towards 8.8.8.8 (here it gave
    192.0.2.2); in single-machine mode, which the engine and the `flwr run` hint set, it keeps 127.0.0.1."""
    from edprf_fl.simulation._engine import RAY_LOOPBACK_ENV

    code = "from ray._private.services import get_node_ip_address; print(get_node_ip_address())"
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    done = subprocess.run(
        [sys.executable, "-c", code],
        env={**env, **RAY_LOOPBACK_ENV},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "127.0.0.1"
