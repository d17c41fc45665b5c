"""``edprf run`` and ``edprf consortium`` for scripts (review rev-auto A6, A7).

- ``--json``: one JSON object on standard output at the end (``edprf-run-summary/1``: status, run id, output
  directory, report.json's path, each party's status as report.json has it), everything else on standard error; on a
  failure, a stop or a refusal before the run too.
- ``--fail-on-refusal``: a run that completed while a party refused or was silent exits 6 (without it: 0); each
  refusal is logged at WARNING.
- ``consortium --dir`` held by another consortium: exit 75 (retry later), as ``budget``'s busy ledger.

No Flower process is started: the runs are replaced by fakes that write a report.json as the coordinator does.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from edprf_fl.cli import _flower_processes, _run_cmd
from edprf_fl.cli._main import main
from edprf_fl.cli._run_summary import REFUSAL_STATUS, refusal_status, run_report, run_summary
from tests.deployment.test_consortium import _FakeFederation  # the one stand-in for the Flower processes

PARTIES = ("hospital-a", "hospital-b", "hospital-c")
NODE = "12345678901234567890"  # above 2**63: a JSON number would lose digits in some readers


def _report(run_id: str, *, refused: str | None = "hospital-c", failure: str = "", absent=None) -> dict:
    """A report.json as the coordinator writes it (edprf-run-report/3: node ids as decimal strings)."""
    parties = []
    for i, party in enumerate(PARTIES):
        outcome = {"party_id": party, "node_id": str(int(NODE) - i), "n_trees": 1, "epsilon": 1.0}
        if party == refused:
            outcome |= {"status": "refused", "reason": "policy_bins", "message": "20 bins exceed the maximum 10"}
        else:
            outcome |= {"status": "accepted", "reason": "", "message": ""}
        parties.append(outcome | {"resumed_from_run": ""})
    return {
        "report_format": "edprf-run-report/3",
        "run_id": run_id,
        "status": "failed" if failure else "completed",
        "failure": failure,
        "parties": parties,
        "absent_parties": absent if absent is not None else [],
    }


def _write(out: Path, report: dict) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    path = out / "report.json"
    path.write_text(json.dumps(report))
    return path


# ----------------------------------------------------------------------------- the summary, from a report.json


def test_the_summary_copies_each_party_from_the_runs_report(tmp_path):
    path = _write(tmp_path / "run", _report("41", absent=["hospital-d"]))
    assert run_report(tmp_path / "run", "41") == path
    summary = run_summary(
        status="completed",
        run_id=41,
        request_tag="",
        output_dir=tmp_path / "run",
        report_path=path,
        exit_status=0,
    )
    assert summary == {
        "format": "edprf-run-summary/1",
        "status": "completed",
        "exit_status": 0,
        "run_id": "41",
        "request_tag": None,
        "resume_request_tag": None,
        "output_dir": str(tmp_path / "run"),
        "report": str(path),
        "parties": [
            {"party_id": "hospital-a", "node_id": NODE, "status": "accepted", "reason": None},
            {"party_id": "hospital-b", "node_id": str(int(NODE) - 1), "status": "accepted", "reason": None},
            {"party_id": "hospital-c", "node_id": str(int(NODE) - 2), "status": "refused", "reason": "policy_bins"},
        ],
        "absent_parties": ["hospital-d"],
        "error": None,
    }
    assert json.loads(json.dumps(summary))["parties"][0]["node_id"] == NODE  # a string, every digit


def test_a_failed_or_stopped_run_says_the_request_tag_to_resume_with(tmp_path):
    path = _write(tmp_path / "run", _report("41", refused=None, failure="too few valid releases"))
    failed = run_summary(
        status="failed", run_id=41, request_tag="", output_dir="x", report_path=path, exit_status=1, error=None
    )
    assert failed["resume_request_tag"] == "41" and failed["error"] == "too few valid releases"
    stopped = run_summary(
        status="stopped", run_id=41, request_tag="trial-7", output_dir="x", report_path=None, exit_status=143
    )
    assert stopped["resume_request_tag"] == "trial-7" and stopped["report"] is None and stopped["parties"] == []
    refused = run_summary(
        status="refused", run_id=None, request_tag="", output_dir=None, report_path=None, exit_status=1, error="no"
    )
    assert refused["run_id"] is None and refused["resume_request_tag"] is None and refused["output_dir"] is None


def test_only_this_runs_report_is_read(tmp_path):
    """A run refused before it wrote anything leaves an earlier run's report in place: it is not this run's."""
    _write(tmp_path / "run", _report("40"))
    assert run_report(tmp_path / "run", "41") is None
    assert run_report(tmp_path / "nothing", "41") is None
    (tmp_path / "run" / "report.json").write_text("{not json")
    assert run_report(tmp_path / "run", "40") is None


@pytest.mark.parametrize(
    ("report", "expected"),
    [
        (_report("41"), REFUSAL_STATUS),  # a party refused
        (_report("41", refused=None) | {"absent_parties": ["hospital-d"]}, REFUSAL_STATUS),  # one never answered
        (_report("41", refused=None), 0),  # every party accepted
    ],
)
def test_fail_on_refusal_turns_a_completed_run_with_a_refusal_into_6(tmp_path, report, expected):
    path = _write(tmp_path / "run", report)
    assert refusal_status(0, path, True)[0] == expected
    assert refusal_status(0, path, False) == (0, None)  # without the flag: unchanged
    assert refusal_status(1, path, True) == (1, None)  # a failed run stays failed
    silent = _report("41", refused=None)
    silent["parties"][1] |= {"status": "no_reply", "reason": "timeout"}
    assert refusal_status(0, _write(tmp_path / "silent", silent), True)[0] == REFUSAL_STATUS
    code, said = refusal_status(0, None, True)  # no report to read: it cannot tell, and does not say 0
    assert code == 1 and "could not be read here" in said


# ----------------------------------------------------------------------------- edprf consortium


@pytest.fixture
def fake_run(monkeypatch):
    """``edprf consortium`` with fake Flower processes: the run (id 41) writes a report with hospital-c refused and
    prints a Flower-like log line."""
    state = {"during": None}

    def run_and_follow(app, connection, run_config, env=None, out=None, progress=None, **kwargs):
        progress.run_id = 41
        out.write("INFO :      readiness: 2 of 3 parties would serve the request; refused: hospital-c\n")
        if state["during"] is not None:
            state["during"]()
        _write(Path(re.search(r"output-dir='([^']*)'", run_config).group(1)), _report("41"))
        return 0

    monkeypatch.setattr(_flower_processes, "Federation", _FakeFederation)
    monkeypatch.setattr(_run_cmd, "run_and_follow", run_and_follow)
    return state


def _warnings(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelname == "WARNING" and r.name == "edprf.run"]


def test_consortium_json_is_the_only_thing_on_stdout_and_a_refusal_exits_6_on_request(
    tmp_path, fake_run, capfd, caplog
):
    root, out = tmp_path / "c", tmp_path / "c" / "runs" / "trial"
    argv = ["consortium", "--dir", str(root), "--n-trees", "1", "--run-config", f"output-dir='{out}'", "--json"]
    assert main(argv) == 0  # a refusal alone: the run completed
    printed, err = capfd.readouterr()
    [line] = printed.splitlines()  # one object, nothing else: `edprf consortium --json | jq` works
    summary = json.loads(line)
    assert summary["format"] == "edprf-run-summary/1" and summary["status"] == "completed"
    assert summary["exit_status"] == 0 and summary["run_id"] == "41" and summary["request_tag"] is None
    assert summary["output_dir"] == str(out) and summary["report"] == str(out / "report.json")
    assert [(p["party_id"], p["status"], p["reason"]) for p in summary["parties"]] == [
        ("hospital-a", "accepted", None),
        ("hospital-b", "accepted", None),
        ("hospital-c", "refused", "policy_bins"),
    ]
    assert "[5/5] the run completed" in err and "readiness: 2 of 3 parties" in err  # the rest: on stderr
    assert "budgets (from each party's ledger):" in err
    assert _warnings(caplog) == ["run 41: hospital-c refused the request (policy_bins): 20 bins exceed the maximum 10"]

    assert main([*argv, "--fail-on-refusal", "--run-config", f"output-dir='{out}-2'"]) == REFUSAL_STATUS
    printed, err = capfd.readouterr()
    summary = json.loads(printed)
    assert summary["status"] == "completed" and summary["exit_status"] == REFUSAL_STATUS
    assert "hospital-c: refused (policy_bins)" in summary["error"]
    assert "edprf consortium: the run completed without 1 of its parties (--fail-on-refusal): hospital-c" in err


def test_consortium_without_json_keeps_its_summary_on_stdout(tmp_path, fake_run, capfd, caplog):
    assert main(["consortium", "--dir", str(tmp_path / "c"), "--n-trees", "1", "--fail-on-refusal"]) == 6
    printed, err = capfd.readouterr()
    assert "[5/5] the run completed" in printed and "  hospital-c: refused (policy_bins)" in printed
    assert "format" not in printed and "edprf consortium: the run completed without 1 of its parties" in err
    assert _warnings(caplog) == ["run 41: hospital-c refused the request (policy_bins): 20 bins exceed the maximum 10"]


def test_a_consortium_dir_in_use_exits_75_and_json_says_refused(tmp_path, fake_run, capfd):
    """A second consortium on a --dir another one holds exited 1, as a failure; budget's busy ledger exits 75."""
    root = tmp_path / "c"
    said = {}

    def second_invocation():
        fake_run["during"] = None
        said["code"] = main(["consortium", "--dir", str(root), "--n-trees", "1", "--json"])
        said["out"], said["err"] = capfd.readouterr()

    fake_run["during"] = second_invocation
    assert main(["consortium", "--dir", str(root), "--n-trees", "1"]) == 0
    assert said["code"] == 75, said
    assert f"{root} is in use by another edprf consortium (pid {os.getpid()}); wait for it" in said["err"]
    summary = json.loads(said["out"].splitlines()[-1])  # after the first invocation's lines so far
    assert summary["status"] == "refused" and summary["exit_status"] == 75 and summary["run_id"] is None
    assert "is in use by another edprf consortium" in summary["error"]


# ----------------------------------------------------------------------------- edprf run


@pytest.fixture
def flower_run(monkeypatch):
    """``edprf run`` with Flower's commands replaced: run 12, whose final status is ``state['status']``."""
    state = {"status": ("finished:completed", "")}
    monkeypatch.setattr(_run_cmd, "flwr_command", lambda: "flwr")
    monkeypatch.setattr(_run_cmd, "submit", lambda *a, **k: _run_cmd.FlowerRun(12, None))
    monkeypatch.setattr(_run_cmd, "follow", lambda run, out, env: out.write("INFO :      a Flower log line\n"))
    monkeypatch.setattr(_run_cmd, "_pending_watch", lambda *a, **k: type("W", (), {"cancel": lambda self: None})())
    monkeypatch.setattr(_run_cmd.FlowerRun, "final_status", lambda self, env=None: state["status"])
    return state


def test_run_json_names_the_report_and_fail_on_refusal_exits_6(tmp_path, flower_run, capfd):
    out = tmp_path / "outputs" / "run-1"
    _write(out, _report("12"))
    argv = ["run", str(tmp_path), "--run-config", f"output-dir='{out}' request-tag='trial-1'", "--json"]
    assert main(argv) == 0
    printed, err = capfd.readouterr()
    summary = json.loads(printed)
    assert (summary["status"], summary["run_id"], summary["request_tag"]) == ("completed", "12", "trial-1")
    assert summary["report"] == str(out / "report.json") and summary["parties"][2]["status"] == "refused"
    assert "a Flower log line" in err and "edprf run: run 12 completed" in err and "a Flower" not in printed
    assert main([*argv, "--fail-on-refusal"]) == REFUSAL_STATUS
    assert json.loads(capfd.readouterr().out)["exit_status"] == REFUSAL_STATUS


def test_run_json_on_a_failed_run_says_what_to_resume_with(tmp_path, flower_run, capfd):
    flower_run["status"] = ("finished:failed", "ServerApp failed with exception: 1 of 3 parties would serve")
    argv = ["run", str(tmp_path), "--run-config", f"output-dir='{tmp_path / 'none'}'", "--json", "--fail-on-refusal"]
    assert main(argv) == 1
    summary = json.loads(capfd.readouterr().out)
    assert summary["status"] == "failed" and summary["exit_status"] == 1 and summary["report"] is None
    assert (
        summary["resume_request_tag"] == "12"
        and summary["error"] == "run 12 finished:failed: 1 of 3 parties would serve"
    )


def test_run_json_when_flower_cannot_submit(tmp_path, flower_run, capfd, monkeypatch):
    def refused(*args, **kwargs):
        raise ValueError("flwr run did not start a run (exit 1): Connection to the SuperLink is unavailable")

    monkeypatch.setattr(_run_cmd, "submit", refused)
    assert main(["run", str(tmp_path), "--json"]) == 1
    printed, err = capfd.readouterr()
    summary = json.loads(printed)
    assert summary["status"] == "refused" and summary["run_id"] is None and summary["exit_status"] == 1
    assert "SuperLink is unavailable" in summary["error"] and "edprf run: error: flwr run did not start" in err
