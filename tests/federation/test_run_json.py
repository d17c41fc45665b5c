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
from pathlib import Path

import pytest

from edprf_fl.cli._run_summary import REFUSAL_STATUS, refusal_status, run_report, run_summary

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
