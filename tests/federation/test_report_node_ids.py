"""report.json (format /3) writes every Flower node id as a decimal string (review rev-auto A8): a 64-bit id written
as a JSON number was rounded by readers that hold numbers as doubles (jq 1.6), and `edprf budget --json` writes it
as a string, so a join by node id failed."""

from __future__ import annotations

import json

from server import REPORT_FORMAT, PartyOutcome, RunReport
from server._outcomes import PartyStatus

BIG = 2111461120125096181  # the review's id: jq 1.6 printed 2111461120125096200
OTHER = 2**64 - 1


def _report() -> RunReport:
    report = RunReport(run_id="run-1", parameters={}, schema_fingerprint="sha256:" + "0" * 64)
    report.parties = [
        PartyOutcome(node_id=BIG, status=PartyStatus.ACCEPTED, party_id="hospital-a"),
        PartyOutcome(node_id=OTHER, status=PartyStatus.NO_REPLY, reason="timeout"),
    ]
    report.federated_evaluation = {
        "parties": 1,
        "per_party": [{"node_id": BIG, "accuracy": 0.5, "ci95": [0.4, 0.6], "party_id": "hospital-a"}],
        "refused": [{"node_id": OTHER, "reason": "invalid_metrics", "party_id": ""}],
        "no_reply": [OTHER],
    }
    return report


def test_every_node_id_is_a_string_that_a_double_reader_keeps_exact(tmp_path):
    path = _report().save(tmp_path / "report.json")
    as_doubles = json.loads(path.read_text(encoding="utf-8"), parse_int=float)  # how jq 1.6 reads numbers
    assert as_doubles["report_format"] == REPORT_FORMAT == "edprf-run-report/3"
    assert [p["node_id"] for p in as_doubles["parties"]] == [str(BIG), str(OTHER)]
    evaluation = as_doubles["federated_evaluation"]
    assert evaluation["per_party"][0]["node_id"] == str(BIG)
    assert evaluation["refused"][0]["node_id"] == str(OTHER)
    assert evaluation["no_reply"] == [str(OTHER)]


def test_the_report_in_memory_keeps_its_integer_ids():
    """The coordinator matches replies to parties by node id (ints, as Flower gives them): only the file changes."""
    report = _report()
    report.to_dict()
    assert report.parties[0].node_id == BIG and report.federated_evaluation["no_reply"] == [OTHER]
    assert report.federated_evaluation["per_party"][0]["node_id"] == BIG


def test_the_summary_names_a_party_by_its_node_id_from_either_form():
    """Readers of report.json in the project (simulate's and consortium's summaries) take /2's numbers and /3's
    strings alike."""
    from edprf_fl.simulation._run import missed_timeout_lines
    from server._summary import federated_evaluation_lines

    for node in (OTHER, str(OTHER)):
        fed = {"parties": [{"node_id": node, "party_id": "", "status": "no_reply", "reason": "timeout"}]}
        assert f"node {OTHER} missed the round timeout" in missed_timeout_lines(fed, 5.0)[0]
        lines = federated_evaluation_lines(
            {"parties": 0, "refused": [{"node_id": node, "reason": "x"}], "no_reply": [node]}
        )
        assert any(f"node {OTHER}: not in the estimate" in line for line in lines)
        assert any(f"no reply to the evaluation request: node {OTHER}" in line for line in lines)
