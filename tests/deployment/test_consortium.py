"""`edprf consortium`: a local consortium in one command (TLS, SuperNode authentication, 3 parties).

- It creates the CA, certificates, parties (data share, schema, policy, ledger, keys) under --dir,
  starts a SuperLink with TLS and SuperNode authentication, a SuperExec and three SuperNodes on
  127.0.0.1, runs the coordinator, prints the summary and stops every process it started.
- Private keys and the SuperExec secret have mode 0600; parties are named by their party-id.
- Run control: a second invocation told to write into the first run's output directory is refused
  by the coordinator before any request (the ledgers do not change), Flower marks the run failed,
  and the command exits 1 with the reason.
- Ctrl-C, SIGTERM or SIGHUP while the coordinator runs: the run is stopped (`flwr stop`), the command
  exits 128 + the signal's number, and nothing it started is left running.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from edprf_fl.cli._flower_processes import BIN, missing_flower_tools

from .conftest import ledger_rows

pytestmark = [pytest.mark.deployment, pytest.mark.slow]

PARTIES = ("hospital-a", "hospital-b", "hospital-c")
TIMEOUT = 420


@pytest.fixture(autouse=True)
def _flower_tools():
    missing = missing_flower_tools()
    if missing:
        pytest.skip(f"{', '.join(missing)} not installed next to the test's Python")


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("FLWR_")} | {"PYTHONUNBUFFERED": "1"}


def _command(root: Path, *extra: str) -> list[str]:
    return [
        str(BIN / "edprf"),
        "consortium",
        "--dir",
        str(root),
        "--parties",
        str(len(PARTIES)),
        "--n-trees",
        "1",
        "--max-depth",
        "3",
        *extra,
    ]


def _running_under(root: Path) -> list[str]:
    """Command lines of live processes that name ``root`` (every Flower process the command starts does)."""
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                cmd = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if str(root) in cmd and state != "Z":
                found.append(cmd)
    return found


def test_three_parties_in_one_command_then_a_refused_output_dir(tmp_path):
    root = tmp_path / "consortium"
    t0 = time.monotonic()
    first = subprocess.run(
        _command(root), capture_output=True, text=True, timeout=TIMEOUT, env=_env(), cwd=tmp_path, check=False
    )
    print(f"\nedprf consortium (3 parties): {time.monotonic() - t0:.1f} s")
    output = first.stdout + first.stderr
    assert first.returncode == 0, output[-6000:]
    assert _running_under(root) == [], "processes left running"
    assert "stopped: every process this command started has exited" in output

    [run_dir] = [p for p in (root / "runs").iterdir() if p.is_dir()]
    # beside the runs: the coordinator's spend record (keys-dir is set), one row per release (no evaluation here)
    with sqlite3.connect(root / "runs" / "spend-record.sqlite") as db:
        assert db.execute("SELECT COUNT(DISTINCT party_id), COUNT(*) FROM releases").fetchone() == (3, 3)
    report = json.loads((run_dir / "report.json").read_text())
    assert report["status"] == "completed" and report["failure"] == ""
    assert sorted(p["party_id"] for p in report["parties"]) == list(PARTIES)
    assert all(p["status"] == "accepted" and p["signed"] for p in report["parties"]), report["parties"]
    assert report["parameters"]["require_exact_sampling"] is True
    assert all(p["sampler"] == "exact" for p in report["parties"])
    for party in PARTIES:  # the summary names parties by id, in words
        assert f"  {party}: accepted, 1 trees" in output
        assert f"{party}: its tree raises the probability given to the right answer by" in output
    assert "party check: 3 parties, no problem found" in output
    for party in PARTIES:  # each SuperNode ran the party check in its own output
        assert f"party check of {party}: no problem found" in (root / "logs" / f"{party}.log").read_text()
    assert not any("address already in use" in log.read_text(errors="replace") for log in (root / "logs").iterdir())

    secrets = [root / "pki" / "ca.key", root / "pki" / "server.key", root / "flwr-home" / "superexec.secret"]
    for party in PARTIES:
        secrets += [
            root / "parties" / party / "keys" / f"{party}.auth.key",
            root / "parties" / party / "keys" / f"{party}.signing.pem",
        ]
    assert {str(p): oct(p.stat().st_mode & 0o777) for p in secrets} == {str(p): "0o600" for p in secrets}
    assert (root.stat().st_mode & 0o077) == 0
    # what the processes write is owner-only too (umask 077), not only through the directory's mode
    written = [root / "superlink.db", root / "runs" / "spend-record.sqlite", *(root / "logs").iterdir()]
    assert {str(p): oct(p.stat().st_mode & 0o077) for p in written} == {str(p): "0o0" for p in written}

    ledgers = {party: ledger_rows(root / "parties" / party / "ledger.sqlite") for party in PARTIES}
    assert all(
        [(kind, eps, state) for _, kind, eps, state, _ in rows] == [("release", 1.0, "released")]
        for rows in ledgers.values()
    ), ledgers

    # the same output directory again: refused before any request, reported as failed, exit 1
    report_bytes = (run_dir / "report.json").read_bytes()
    second = subprocess.run(
        _command(root, "--run-config", f"output-dir='{run_dir}'"),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env=_env(),
        cwd=tmp_path,
        check=False,
    )
    output = second.stdout + second.stderr
    assert second.returncode == 1, output[-6000:]
    assert "already holds a run" in output and "overwrite=true" in output, output[-3000:]
    assert "finished:failed" in output, output[-3000:]
    assert (run_dir / "report.json").read_bytes() == report_bytes
    assert {party: ledger_rows(root / "parties" / party / "ledger.sqlite") for party in PARTIES} == ledgers
    assert _running_under(root) == [], "processes left running"


@pytest.mark.parametrize(
    ("sig", "status"),
    [(signal.SIGINT, 130), (signal.SIGTERM, 143), (signal.SIGHUP, 129)],
    ids=["ctrl-c", "term", "hup"],
)
def test_ctrl_c_stops_the_run_and_every_process(tmp_path, sig, status):
    """Ctrl-C, SIGTERM (timeout, systemd, kill) and SIGHUP (a closed terminal) each stop the run: with SIGTERM
    and SIGHUP the command died at once and the run stayed queued, to spend epsilon later."""
    root = tmp_path / "consortium"
    proc = subprocess.Popen(
        _command(root),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=_env(),
        cwd=tmp_path,
        start_new_session=True,
    )
    lines = []
    try:
        for line in proc.stdout:
            lines.append(line)
            if "submitted; following its log" in line:
                break
        assert any("submitted" in line for line in lines), "".join(lines)[-4000:]
        proc.send_signal(sig)
        rest, _ = proc.communicate(timeout=180)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    output = "".join(lines) + rest
    assert proc.returncode == status, output[-4000:]
    assert "interrupted; stopped run" in output and "continues on the SuperLink" not in output, output[-4000:]
    assert "stopped: every process this command started has exited" in output, output[-4000:]
    assert _running_under(root) == [], "processes left running"


def test_a_run_every_policy_refuses_is_refused_before_any_process_starts(tmp_path, capsys):
    """`--epsilon 5` against the policies the command itself wrote (max-release-epsilon 1) started the SuperLink
    and SuperNodes, waited about 30 s, then ended in a Flower traceback before the party's refusal (walkthrough)."""
    from edprf_fl.cli._main import main

    root = tmp_path / "c"
    assert main(["consortium", "--dir", str(root), "--epsilon", "5", "--run-config", "evaluation-epsilon=0.5"]) == 1
    err = capsys.readouterr().err
    assert "3 of 3 parties would refuse this run, by their policies:" in err
    assert "hospital-a: --epsilon 5 exceeds its policy's max-release-epsilon 1" in err
    assert "hospital-c: --evaluation-epsilon 0.5 exceeds its policy's max-evaluation-epsilon 0.1" in err
    assert not list(root.glob("superlink.db*")) and not (root / "runs").exists()  # nothing started, no run


def test_an_epsilon_below_min_epsilon_or_finer_than_a_micro_is_refused_before_any_process_starts(tmp_path, capsys):
    from edprf_fl.cli._main import main

    root = tmp_path / "c"
    assert main(["consortium", "--dir", str(root), "--epsilon", "0.1234567", "--evaluation-epsilon", "0.001"]) == 1
    err = capsys.readouterr().err
    assert "hospital-a: --epsilon 0.1234567 is not a multiple of 1e-6" in err
    assert "hospital-b: --evaluation-epsilon 0.001 is below its policy's min-epsilon 0.01" in err
    assert not list(root.glob("superlink.db*"))
