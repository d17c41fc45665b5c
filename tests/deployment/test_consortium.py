"""`edprf consortium`: a local consortium in one command (TLS, SuperNode authentication, 3 parties).

- It creates the CA, certificates, parties (data share, schema, policy, ledger, keys) under --dir,
  starts a SuperLink with TLS and SuperNode authentication, a SuperExec and three SuperNodes on
  127.0.0.1, runs the coordinator, prints the summary and stops every process it started.
- Private keys and the SuperExec secret have mode 0600; parties are named by their party-id.
- Run control: a second invocation told to write into the first run's output directory is refused
  by the coordinator before any request (the ledgers do not change), Flower marks the run failed,
  and the command exits 1 with the reason.
- A run every party refuses (their budgets): exit 1, the report's failure, each party's reason and what to do,
  and no traceback.  No colour codes in the command's output or its processes' logs (neither is a terminal).
- Ctrl-C, SIGTERM or SIGHUP while the coordinator runs: the run is stopped (`flwr stop`), the command
  exits 128 + the signal's number, and nothing it started is left running; Ctrl-C once the coordinator has
  made its output directory leaves no empty directory behind.
"""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from edprf_fl.cli._flower_processes import BIN, missing_flower_tools
from tests.stop_dispositions import terminal_dispositions

from .conftest import ledger_rows

pytestmark = [pytest.mark.deployment, pytest.mark.slow]

PARTIES = ("hospital-a", "hospital-b", "hospital-c")
TWO = PARTIES[:2]
"""The runs that need no third party have two: each party's Flower processes cost about 30 s of CPU per run."""
TIMEOUT = 420


@pytest.fixture(autouse=True)
def _flower_tools():
    missing = missing_flower_tools()
    if missing:
        pytest.skip(f"{', '.join(missing)} not installed next to the test's Python")


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("FLWR_")} | {"PYTHONUNBUFFERED": "1"}


def _command(root: Path, *extra: str, parties: tuple[str, ...] = PARTIES) -> list[str]:
    return [
        str(BIN / "edprf"),
        "consortium",
        "--dir",
        str(root),
        "--parties",
        str(len(parties)),
        "--n-trees",
        "1",
        "--max-depth",
        "3",
        *extra,
    ]


def _run(root: Path, cwd: Path, *extra: str, parties: tuple[str, ...] = PARTIES) -> subprocess.CompletedProcess:
    """``edprf consortium`` on ``root`` with ``extra`` options, to its end (output captured, Flower's environment
    variables left out)."""
    return subprocess.run(
        _command(root, *extra, parties=parties),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env=_env(),
        cwd=cwd,
        check=False,
    )


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


def _assert_plain(output: str, root: Path) -> None:
    """No traceback and no colour code in the command's output; no colour code in its processes' logs (Flower
    colours its log lines whatever they are written to: ``\x1b[92mINFO \x1b[0m:`` in files and pipes)."""
    assert "Traceback" not in output and "raised an exception" not in output, output[-6000:]
    assert "\x1b[" not in output, [line for line in output.splitlines() if "\x1b[" in line][:5]
    coloured = {log.name: log.read_text(errors="replace").count("\x1b[") for log in (root / "logs").iterdir()}
    assert set(coloured.values()) == {0}, coloured


def test_three_parties_in_one_command_then_a_refused_output_dir(tmp_path):
    root = tmp_path / "consortium"
    t0 = time.monotonic()
    first = _run(root, tmp_path)
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
        assert f"  {party}: accepted, 1 tree," in output
        assert f"{party}: its tree raises the probability given to the right answer by" in output
    assert "party check: 3 parties, no problem found" in output
    for party in PARTIES:  # each SuperNode ran the party check in its own output
        assert f"party check of {party}: no problem found" in (root / "logs" / f"{party}.log").read_text()
    assert not any("address already in use" in log.read_text(errors="replace") for log in (root / "logs").iterdir())
    # no option this command passes is one Flower 1.41 calls deprecated (the SuperLink's old gRPC addresses were)
    deprecated = [line for log in (root / "logs").iterdir() for line in log.read_text(errors="replace").splitlines()]
    assert [line for line in deprecated if "is deprecated" in line] == []

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
    second = _run(root, tmp_path, "--run-config", f"output-dir='{run_dir}'")
    output = second.stdout + second.stderr
    assert second.returncode == 1, output[-6000:]
    assert "already holds a run" in output and "overwrite=true" in output, output[-3000:]
    assert "finished:failed" in output, output[-3000:]
    # the summary names the output-dir the run config gave, and not the earlier run's parties as this run's
    # (it said "outputs in <run_dir>", the earlier run's: deployment walkthrough)
    assert f"[5/5] the run FAILED; it wrote nothing: {run_dir} holds an earlier run's outputs\n" in output, output[
        -3000:
    ]
    assert "  hospital-a: accepted" not in output, output[-3000:]
    _assert_plain(output, root)  # the ServerApp's refusal was followed by Flower's traceback of it
    assert (run_dir / "report.json").read_bytes() == report_bytes
    assert {party: ledger_rows(root / "parties" / party / "ledger.sqlite") for party in PARTIES} == ledgers
    assert _running_under(root) == [], "processes left running"


def test_a_run_every_party_refuses_says_why_and_what_to_do_without_a_traceback(tmp_path):
    """Hospital IT walkthrough: every party refused (budget exhausted); the streamed log showed Flower's traceback
    of the ServerApp's RunFailed and its "Exit Code: 201 ... An unhandled exception occurred" before our own
    failure line, and colour codes (``\x1b[92mINFO \x1b[0m:``) in the output and in every process log."""
    from fractions import Fraction

    from edprf_fl.cli._consortium import _party_ids, lay_out
    from protocol import PartyKeyRegistry
    from server._spend_store import SpendStore

    root = tmp_path / "consortium"
    (root / "logs").mkdir(parents=True, mode=0o700)
    root.chmod(0o700)
    layout = lay_out(root, _party_ids(len(TWO)), "wall_robot_navigation", root / "logs" / "setup.log")
    # The command's checks read the ledgers, which hold nothing: they pass.  The coordinator's spend record says each
    # party spent 1.5 (a host restored from an earlier snapshot): the party counts that before it serves, and of its
    # cap 2 then 0.5 is left for a request of 1.  So every party refuses in the run itself.
    registry = PartyKeyRegistry.from_directory(layout["coordinator"] / "party-keys")
    record = SpendStore(root / "runs" / "spend-record.sqlite", {p: registry.key_id(p) for p in registry})
    for party in layout["parties"]:
        record.add(party, "earlier/train", Fraction(3, 2), "run-0")
    t0 = time.monotonic()
    done = _run(root, tmp_path, "--run-config", "request-tag='trial-7'", "--json", "--fail-on-refusal", parties=TWO)
    print(f"\nedprf consortium, every party refusing: {time.monotonic() - t0:.1f} s")
    output = done.stdout + done.stderr
    assert done.returncode == 1, output[-6000:]
    # the readiness round: every party refused before any trained (the same refusals a train request gets)
    assert (
        "finished:failed: 0 of 2 connected parties would serve the request (readiness round), min-parties is 2; "
        "no train request was sent, so no party spent epsilon" in output
    ), output[-3000:]
    assert "ServerApp failed with exception" not in output, output[-3000:]  # Flower's prefix, not our text
    for party in TWO:
        assert f"  {party}: refused (budget_exhausted) this release needs epsilon 1 but only 0.5" in output
    assert "FAILED (the failure and each party's reason are above); what to do:" in output, output[-3000:]
    # on disk too, beside the processes' logs (only stdout held it: deployment walkthrough)
    followed = (root / "logs" / "coordinator.log").read_text()
    assert followed.startswith("===== edprf consortium, ") and "what to do:" in followed and "\x1b[" not in followed
    assert "(budget_exhausted): the request would pass the lifetime epsilon cap" in output, output[-3000:]
    [run_dir] = [p for p in (root / "runs").iterdir() if p.is_dir()]
    saved = json.loads((run_dir / "report.json").read_text())
    assert saved["failure"].startswith("0 of 2 connected parties would serve the request")
    assert all(p["readiness_only"] and p["status"] == "refused" for p in saved["parties"]), saved["parties"]
    # --json: one object on stdout, everything else on stderr; --fail-on-refusal leaves a failed run's 1 (rev-auto A6, A7)
    summary = json.loads(done.stdout)
    assert (summary["format"], summary["status"], summary["exit_status"]) == ("edprf-run-summary/1", "failed", 1)
    assert summary["run_id"] == saved["run_id"] and summary["resume_request_tag"] == "trial-7", summary
    assert summary["report"] == str(run_dir / "report.json") and summary["output_dir"] == str(run_dir)
    assert summary["error"].startswith("run ") and "0 of 2 connected parties would serve" in summary["error"]
    assert sorted((p["party_id"], p["status"], p["reason"]) for p in summary["parties"]) == [
        (party, "refused", "budget_exhausted") for party in TWO
    ]
    assert [p["node_id"] for p in summary["parties"]] == [p["node_id"] for p in saved["parties"]]
    for party in TWO:  # each refusal at WARNING (the coordinator's log has them as INFO)
        assert (
            f"WARNING edprf.run: run {saved['run_id']}: {party} refused the request (budget_exhausted)" in done.stderr
        )
    _assert_plain(output, root)
    assert _running_under(root) == [], "processes left running"


@pytest.mark.parametrize(
    ("sig", "status", "after_claim"),
    [(signal.SIGINT, 130, True), (signal.SIGTERM, 143, False)],
    ids=["ctrl-c", "term"],
)
def test_ctrl_c_stops_the_run_and_every_process(tmp_path, sig, status, after_claim):
    """Ctrl-C and SIGTERM (timeout, systemd, kill) each stop the run: with SIGTERM the command died at once and the
    run stayed queued, to spend epsilon later.  SIGTERM comes right after the submission; Ctrl-C once the
    coordinator has made its output directory (which the stop left behind, empty).  SIGHUP (a closed terminal)
    takes SIGTERM's path once ``stop_signals`` has turned it into ``Terminated``: that mapping, and its exit status
    129, are tested in ``tests/federation/test_stop_signals.py`` without a federation."""
    root = tmp_path / "consortium"
    proc = subprocess.Popen(
        _command(root, parties=TWO),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=_env(),
        cwd=tmp_path,
        start_new_session=True,
        preexec_fn=terminal_dispositions,  # noqa: PLW1509 (a test run in the background ignores SIGINT)
    )
    lines = []
    try:
        for line in proc.stdout:
            lines.append(line)
            if "submitted; following its log" in line:
                break
        assert any("submitted" in line for line in lines), "".join(lines)[-4000:]
        # a second invocation on the same --dir is refused while this one runs (two crashed the first)
        second = subprocess.run(
            _command(root, parties=TWO),
            capture_output=True,
            text=True,
            timeout=120,
            env=_env(),
            cwd=tmp_path,
            check=False,
        )
        assert second.returncode == 75, second.stdout + second.stderr  # busy: retry later
        assert second.stderr.strip() == (
            f"edprf consortium: error: {root} is in use by another edprf consortium (pid {proc.pid}); "
            "wait for it or give another --dir"
        ), second.stdout + second.stderr
        [run_dir] = [Path(m) for line in lines for m in re.findall(r"output-dir='([^']*)'", line)]
        deadline = time.monotonic() + 120
        while after_claim and not run_dir.is_dir() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert run_dir.is_dir() or not after_claim, "the coordinator did not make its output directory"
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
    assert not run_dir.is_dir() or any(run_dir.iterdir()), f"{run_dir} left behind, empty"
    assert "[5/5] the run STOPPED; " in output, output[-4000:]
    assert "to finish it without spending again" in output and "request-tag='<the run id above>'" in output, output
    # the budgets, read once every process has exited, are what the ledgers hold (a ClientApp that finished
    # after the signal wrote its release after the summary had said `spent 0`)
    from client import format_epsilon, read_ledger_readonly, total_spent

    assert output.index("stopped: every process") < output.index("budgets (from each party's ledger):"), output
    for party in TWO:
        ledger = root / "parties" / party / "ledger.sqlite"
        spent = format_epsilon(total_spent(read_ledger_readonly(ledger))) if ledger.exists() else "0 (no ledger yet)"
        assert f"  {party}: spent {spent} of its lifetime cap 2\n" in output, output[-3000:]


def test_a_run_every_policy_refuses_is_refused_before_any_process_starts(tmp_path, capsys):
    """`--epsilon 5` against the policies the command itself wrote (max-release-epsilon 1) started the SuperLink
    and SuperNodes, waited about 30 s, then ended in a Flower traceback before the party's refusal (walkthrough)."""
    from edprf_fl.cli._main import main

    root = tmp_path / "c"
    assert main(["consortium", "--dir", str(root), "--epsilon", "5", "--run-config", "evaluation-epsilon=0.5"]) == 1
    err = capsys.readouterr().err
    assert "3 of 3 parties would refuse this run, by their policies:" in err
    assert "hospital-a: --epsilon 5 exceeds its policy's max-release-epsilon 1" in err
    assert "hospital-c: --run-config evaluation-epsilon=0.5 exceeds its policy's max-evaluation-epsilon 0.1" in err
    assert not list(root.glob("superlink.db*")) and not (root / "runs").exists()  # nothing started, no run


def test_an_epsilon_below_min_epsilon_or_finer_than_a_micro_is_refused_before_any_process_starts(tmp_path, capsys):
    from edprf_fl.cli._main import main

    root = tmp_path / "c"
    assert main(["consortium", "--dir", str(root), "--epsilon", "0.1234567", "--evaluation-epsilon", "0.001"]) == 1
    err = capsys.readouterr().err
    assert "hospital-a: --epsilon 0.1234567 is not a multiple of 1e-6" in err
    assert "hospital-b: --evaluation-epsilon 0.001 is below its policy's min-epsilon 0.01" in err
    assert not list(root.glob("superlink.db*"))


# ----------------------------------------------------------------------------- without Flower processes
# The command's own logic, with the Flower processes replaced (fast): the summary, the budgets, the lock.


class _FakeFederation:
    """Stands in for the SuperLink, SuperExec and SuperNodes (nothing is started)."""

    port = 1
    fail: Exception | None = None

    def __init__(self, dep, **kwargs):
        self.dep = dep

    def start_superlink(self, database):
        pass

    def write_cli_config(self):
        return {}

    def register(self, public_key):
        return 7

    def start_supernode(self, *args, **kwargs):
        pass

    def wait_online(self, count):
        if self.fail is not None:
            raise self.fail
        return []

    def assert_loopback_only(self):
        return []


@pytest.fixture
def fake_run(monkeypatch):
    """`edprf consortium` with fake Flower processes; the run writes a report of three accepted parties into
    its output-dir (``runs`` lists the run configs) and returns ``state['code']``."""
    import re

    from edprf_fl.cli import _flower_processes, _run_cmd

    state = {"code": 0, "runs": [], "during": None}

    def run_and_follow(app, connection, run_config, env=None, **kwargs):
        state["runs"].append(run_config)
        if state["during"] is not None:
            state["during"]()
        out = Path(re.search(r"output-dir='([^']*)'", run_config).group(1))
        out.mkdir(parents=True, exist_ok=True)
        parties = [
            {"party_id": p, "node_id": 7, "status": "accepted", "n_trees": 1, "epsilon": 1.0, "resumed_from_run": ""}
            | ({"resumed_from_run": state["resumed"]} if state.get("resumed") else {})
            for p in PARTIES
        ]
        (out / "report.json").write_text(json.dumps({"parties": parties}))
        return state["code"]

    _FakeFederation.fail = None
    monkeypatch.setattr(_flower_processes, "Federation", _FakeFederation)
    monkeypatch.setattr(_run_cmd, "run_and_follow", run_and_follow)
    return state


def _consortium(root: Path, *extra: str) -> int:
    from edprf_fl.cli._main import main

    return main(["consortium", "--dir", str(root), "--n-trees", "1", *extra])


def test_the_summary_names_the_output_dir_the_run_config_gave(tmp_path, fake_run, capsys, monkeypatch):
    """`--run-config "output-dir='...'"` said `outputs in <runs/<time>, which did not exist>` and no party lines."""
    custom = tmp_path / "elsewhere" / "trial-1"
    assert _consortium(tmp_path / "c", "--run-config", f"output-dir='{custom}'") == 0
    out = capsys.readouterr().out
    assert f"output-dir='{custom}'" in fake_run["runs"][0]
    assert f"[5/5] the run completed; outputs in {custom}\n" in out, out
    for party in PARTIES:
        assert f"  {party}: accepted, 1 tree, epsilon 1" in out, out
    # a relative one is taken from where the command runs (absolute in the run config, and in the summary)
    monkeypatch.chdir(tmp_path)
    assert _consortium(tmp_path / "c", "--run-config", "output-dir='rel/trial-2'") == 0
    out = capsys.readouterr().out
    assert f"output-dir='{tmp_path / 'rel' / 'trial-2'}'" in fake_run["runs"][1]
    assert f"outputs in {tmp_path / 'rel' / 'trial-2'}\n" in out and "  hospital-b: accepted" in out, out


def test_budgets_are_read_after_every_process_has_exited(tmp_path, fake_run, capsys, monkeypatch):
    """After a SIGINT the summary said `hospital-a: spent 0` while the ledger recorded a release of 1 written
    2 s after the signal, by the ClientApp, before the SuperNodes had stopped."""
    from client import BudgetLedger
    from edprf_fl.cli._flower_processes import Deployment

    root = tmp_path / "c"
    stop = Deployment.stop

    def stop_then_the_late_release(self):
        BudgetLedger(root / "parties" / "hospital-a" / "ledger.sqlite", cap=2.0).reserve("late", "release", 1.0)
        stop(self)

    monkeypatch.setattr(Deployment, "stop", stop_then_the_late_release)
    fake_run["code"] = 130
    assert _consortium(root) == 130
    out = capsys.readouterr().out
    assert out.index("stopped: every process this command started has exited") < out.index(
        "budgets (from each party"
    ), out
    assert "  hospital-a: spent 1 of its lifetime cap 2\n" in out, out
    assert "  hospital-b: spent 0 (no ledger yet) of its lifetime cap 2\n" in out, out


def _parties(tmp_path: Path) -> dict:
    from client import PartyPolicy

    parties = {}
    for party in ("hospital-a",):
        d = tmp_path / party
        d.mkdir()
        (d / "policy.toml").write_text(PartyPolicy(party_id=party).to_toml())
        parties[party] = {"policy-path": d / "policy.toml", "ledger-path": d / "ledger.sqlite"}
    return parties


def test_a_request_above_what_remains_of_a_cap_is_refused_before_any_process_starts(tmp_path):
    """0.5 left of a cap of 2 and --epsilon 1: the party check passed, the servers started and every party refused
    (budget_exhausted) in the run (deployment walkthrough). A party whose ledger holds the release of the run's
    request-tag is not checked (it resends that release and spends nothing)."""
    from client import BudgetLedger
    from edprf_fl.cli._consortium import _check_request

    parties = _parties(tmp_path)
    BudgetLedger(parties["hospital-a"]["ledger-path"], cap=2.0).reserve("r1", "release", 1.5)
    with pytest.raises(ValueError, match=r"--epsilon 1 exceeds what remains of its lifetime cap \(0.5 of 2"):
        _check_request(parties, 1.0, 0.0)
    _check_request(parties, 0.5, 0.0)  # exactly what remains
    _check_request(parties, 1.0, 0.0, resending={"hospital-a"})
    assert len(BudgetLedger(parties["hospital-a"]["ledger-path"], cap=2.0).entries()) == 1  # nothing spent


def test_a_tagged_resend_at_an_exhausted_cap_is_left_to_the_party(tmp_path, fake_run, capsys):
    """A party whose cap is reached failed the party check (budget_exhausted) even under the request-tag of a
    release it made, which it resends spending nothing: the tagged resend a failed run advises could not be made
    (review). Under another tag, or none, the check still refuses the run before any process starts (the party
    would refuse, and the others spend for a run that fails)."""
    from client import BudgetLedger

    root = tmp_path / "c"
    assert _consortium(root) == 0  # lays the parties out (caps 2)
    book = BudgetLedger(root / "parties" / "hospital-a" / "ledger.sqlite", cap=2.0)
    book.reserve("trial-1/train", "release", 2.0)
    book.complete("trial-1/train", b"x")
    capsys.readouterr()
    for extra in ((), ("--run-config", "request-tag='trial-2'")):
        assert _consortium(root, "--epsilon", "1", *extra) == 1
        err = capsys.readouterr().err
        assert "hospital-a: problem:" in err and "every new request will be refused (budget_exhausted" in err, err
    assert len(fake_run["runs"]) == 1  # nothing started
    fake_run["resumed"] = "41"
    assert _consortium(root, "--epsilon", "1", "--run-config", "request-tag='trial-1'") == 0
    out = capsys.readouterr().out
    assert (
        "  hospital-a: accepted, 1 tree, epsilon 1 (resent: made and charged by run 41, nothing newly charged)" in out
    )
    assert "[2/5] party check: 3 parties, no problem found\n" in out, out
    assert "hospital-a: lifetime cap reached; it holds a release made for the request-tag, which it resends" in out
    assert "request-tag='trial-1'" in fake_run["runs"][1]


def test_budget_of_an_unreadable_ledger_is_unknown_never_0(tmp_path):
    from edprf_fl.cli._consortium import _budget_lines

    parties = _parties(tmp_path)
    parties["hospital-a"]["ledger-path"].write_bytes(b"not a ledger" * 100)
    [line] = _budget_lines(parties)
    assert line.startswith("  hospital-a: spent unknown (") and "of its lifetime cap 2" in line, line
    assert "spent 0" not in line


def test_budget_of_a_lost_ledger_says_what_its_anchor_records(tmp_path):
    """hospital-b's ledger.sqlite deleted: the summary said `spent 0`, `edprf party check` that the anchor records 1."""
    from client import BudgetLedger
    from edprf_fl.cli._consortium import _budget_lines

    parties = _parties(tmp_path)
    ledger = parties["hospital-a"]["ledger-path"]
    BudgetLedger(ledger, cap=2.0).reserve("r1", "release", 1.0)
    for f in ledger.parent.glob("ledger.sqlite*"):
        f.unlink()
    [line] = _budget_lines(parties)
    assert line.startswith("  hospital-a: spent unknown (") and "spent 0" not in line, line
    assert "its anchor ledger-anchor.json records 1 spent, which the party counts as spent" in line, line


def test_budget_of_a_ledger_below_its_anchor_says_so(tmp_path):
    """A ledger restored from a backup holds less than its anchor: the summary says how much more is spent."""
    from edprf_fl.cli._consortium import _budget_lines
    from tests.federation.test_budget_state import restored_from_a_backup

    parties = _parties(tmp_path)
    restored_from_a_backup(parties["hospital-a"]["ledger-path"])
    [line] = _budget_lines(parties)
    assert line.startswith(
        "  hospital-a: spent 1 of its lifetime cap 2; its anchor ledger-anchor.json records 0.5 more"
    )


def test_budget_over_the_cap_says_so_as_edprf_budget_does(tmp_path):
    """A cap lowered after spending: the closing lines said `spent 1 of its lifetime cap 0.5` and nothing more."""
    from client import BudgetLedger, PartyPolicy
    from edprf_fl.cli._consortium import _budget_lines

    parties = _parties(tmp_path)
    BudgetLedger(parties["hospital-a"]["ledger-path"], cap=2.0).reserve("r1", "release", 1.0)
    parties["hospital-a"]["policy-path"].write_text(
        PartyPolicy(party_id="hospital-a", lifetime_epsilon_cap=0.5).to_toml()
    )
    [line] = _budget_lines(parties)
    assert line == (
        "  hospital-a: spent 1 of its lifetime cap 0.5; OVER THE CAP by 0.5: this party refuses every request that "
        "spends epsilon (the cap was lowered after spending, or spend was carried from the coordinator's record)"
    )


def test_budget_beside_an_unreadable_anchor_names_it(tmp_path):
    from client import BudgetLedger
    from edprf_fl.cli._consortium import _budget_lines

    parties = _parties(tmp_path)
    ledger = parties["hospital-a"]["ledger-path"]
    BudgetLedger(ledger, cap=2.0).reserve("r1", "release", 0.5)
    (ledger.parent / "ledger-anchor.json").write_text("{}")
    [line] = _budget_lines(parties)
    assert line.startswith("  hospital-a: spent 0.5 of its lifetime cap 2; anchor unreadable: ledger anchor "), line
    for f in ledger.parent.glob("ledger.sqlite*"):
        f.unlink()
    [line] = _budget_lines(parties)
    assert line.startswith(f"  hospital-a: spent unknown (no ledger at {ledger}) of its lifetime cap 2; anchor "), line
    assert not ledger.exists()


def test_a_second_consortium_on_the_same_dir_is_refused(tmp_path, fake_run, capsys):
    """Two runs on one --dir: the first crashed with `FlowerProcessError: Flower processes exited early`."""
    root = tmp_path / "c"
    said = {}

    def second_invocation():
        fake_run["during"] = None
        said["code"] = _consortium(root)
        said["err"] = capsys.readouterr().err

    fake_run["during"] = second_invocation
    assert _consortium(root) == 0
    assert said["code"] == 75, said  # busy: retry later, as budget's busy ledger (it was 1)
    assert (
        f"{root} is in use by another edprf consortium (pid {os.getpid()}); wait for it or give another --dir"
        in said["err"]
    )
    assert len(fake_run["runs"]) == 1  # the second submitted nothing
    assert _consortium(root) == 0  # released when the first ended


def test_a_flower_process_error_is_one_line_with_the_logs(tmp_path, fake_run, capsys):
    from edprf_fl.cli._flower_processes import FlowerProcessError

    _FakeFederation.fail = FlowerProcessError("Flower processes exited early: hospital-a (exit 0)")
    assert _consortium(tmp_path / "c") == 1
    err = capsys.readouterr().err
    assert (
        f"edprf consortium: error: Flower processes exited early: hospital-a (exit 0) (logs in {tmp_path / 'c' / 'logs'})"
        in err
    ), err


def test_a_missing_party_key_names_a_fix_this_command_has(tmp_path, fake_run, capsys):
    """A missing hospital-c.auth.key ended in `Pass --force to replace them`; `edprf consortium` has no --force."""
    root = tmp_path / "c"
    assert _consortium(root) == 0
    keys = root / "parties" / "hospital-c" / "keys"
    (keys / "hospital-c.auth.key").unlink()
    capsys.readouterr()
    assert _consortium(root) == 1
    err = capsys.readouterr().err
    assert "--force" not in err, err
    assert f"{keys}: hospital-c.auth.key missing beside the party's other keys" in err, err
    assert f"delete {keys} and run this command again" in err, err


def test_a_run_config_key_of_an_option_is_checked_as_the_run_reads_it_and_named_as_given(tmp_path, fake_run, capsys):
    """`--run-config "epsilon=5"` was refused as `--epsilon 5 exceeds ...`, an option nobody gave (hospital IT
    walkthrough); `exact-metrics='true'`, true to the coordinator, still had the evaluation epsilon checked; a value
    the coordinator refuses (`epsilon='abc'`) started every process first."""
    root = tmp_path / "c"
    assert _consortium(root, "--run-config", "epsilon=5 evaluation-epsilon=0.5") == 1
    err = capsys.readouterr().err
    assert "hospital-a: --run-config epsilon=5 exceeds its policy's max-release-epsilon 1" in err, err
    assert "hospital-b: --run-config evaluation-epsilon=0.5 exceeds its policy's max-evaluation-epsilon 0.1" in err
    assert " --epsilon" not in err and " --evaluation-epsilon" not in err, err
    for config, message in [
        ("epsilon='abc'", "--run-config epsilon: expected float, got 'abc'"),
        ("min-parties=4", "--run-config min-parties: expected at most 3 (--parties), got 4"),
        ("n-trees=3", "--n-trees 1 and --run-config n-trees=3 disagree; give n-trees once"),
    ]:
        assert _consortium(root, "--run-config", config) == 1
        err = capsys.readouterr().err
        assert err.strip().splitlines()[-1] == f"edprf consortium: error: {message}", err
    assert _consortium(root, "--epsilon", "0.5", "--run-config", "epsilon=0.7") == 1
    assert "--epsilon 0.5 and --run-config epsilon=0.7 disagree; give epsilon once" in capsys.readouterr().err
    assert not fake_run["runs"]  # every refusal came before any process
    assert _consortium(root, "--epsilon", "0.5", "--run-config", "exact-metrics='true' evaluation-epsilon=0.5") == 0
    assert _consortium(root, "--run-config", "max-depth=3 epsilon=0.25") == 0
    assert "max-depth=3" in fake_run["runs"][-1] and "epsilon=0.25" in fake_run["runs"][-1]


def test_summary_headline_puts_balanced_accuracy_and_the_majority_baseline_beside_accuracy():
    """Analyst review S3 #12: 'accuracy on the coordinator's test rows: 0.896' on bank data where always answering
    'no' scores 0.883.  The coordinator's central metrics carry its test rows' majority class and that baseline's
    accuracy (exact, from the confusion matrix of its own rows), and the headline prints both beside accuracy."""
    import numpy as np

    from edprf_fl.cli._consortium import _central_headline
    from server import classification_metrics

    classes = np.array(["no", "yes"], dtype=object)
    truth = np.array(["no"] * 883 + ["yes"] * 117, dtype=object)
    p_yes = np.r_[np.full(870, 0.1), np.full(13, 0.7), np.full(30, 0.8), np.full(87, 0.2)]
    central = classification_metrics(truth, np.c_[1 - p_yes, p_yes], classes)
    assert central["majority_class"] == "no" and central["majority_class_accuracy"] == pytest.approx(0.883)
    line = _central_headline(central)
    assert line == (
        f"accuracy on the coordinator's test rows: {(870 + 30) / 1000:.3f}, balanced accuracy "
        f"{(870 / 883 + 30 / 117) / 2:.3f}; always answering their most common class 'no' scores 0.883"
    )
