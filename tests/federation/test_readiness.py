"""The readiness round: a run that too few parties would serve fails before any party trains and spends.

Hospital IT walkthrough: two parties at their lifetime cap, min-parties 3: the third trained, spent 0.5, and no
model was saved.  Each party now answers a ``query`` message carrying the train request from its request,
policy, key and ledger alone (:meth:`client.Party.ready`); the coordinator sends the train request only when
at least min-parties would serve it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from flwr.app import ConfigRecord, Error, Message, MessageType, RecordDict
from flwr.common.constant import ErrorCode

from client import Party, Refusal, handle_query
from protocol import RefusalReason, ReplyStatus
from server import REPORT_FILE, CoordinatorConfig, PartyStatus, RunStatus, run_federation
from server._failure_log import failure_lines
from server._readiness import readiness_round

from .test_party_hardening import _context, _message, _train_request, _write_party, party_files  # noqa: F401
from .test_waiting_for_parties import serverapp_identity  # noqa: F401 (a fixture)


def _query(schema, **kw) -> Message:
    return _message(MessageType.QUERY, RecordDict({"request": ConfigRecord(_train_request(schema, **kw).to_record())}))


def _status(reply: Message) -> dict:
    return dict(reply.content.config_records["result"])


def test_a_party_answers_ready_then_would_resend_and_spends_nothing_to_answer(party_files):  # noqa: F811
    setup, schema = party_files
    party = Party(setup)
    assert party.ready(_train_request(schema)) is True
    assert party.ledger.entries() == []  # nothing reserved by the answer
    party.train(_train_request(schema))
    assert party.ready(_train_request(schema)) is False  # it would resend: nothing to spend
    assert len(party.ledger.entries()) == 1
    reply = handle_query(_query(schema, request_id="run1/2/train"), _context(setup))
    assert _status(reply) == {"status": str(ReplyStatus.READY), "party-id": "hospital-a"}
    assert _status(handle_query(_query(schema), _context(setup)))["status"] == ReplyStatus.WOULD_RESEND


def test_a_party_at_its_cap_answers_the_refusal_training_would_get_without_reading_its_rows(tmp_path):
    setup, schema = _write_party(tmp_path, lifetime_epsilon_cap=1.0)
    Party(setup).train(_train_request(schema))
    setup.data_path.unlink()
    setup.data_path.mkdir()  # a directory where the data file was: any read of it would fail
    with pytest.raises(Refusal) as refused:
        Party(setup).ready(_train_request(schema, request_id="run1/2/train"))
    assert refused.value.reason == RefusalReason.BUDGET_EXHAUSTED
    result = _status(handle_query(_query(schema, request_id="run1/2/train"), _context(setup)))
    assert result["status"] == ReplyStatus.REFUSED and result["reason"] == RefusalReason.BUDGET_EXHAUSTED


class _Grid:
    """Connected nodes that answer the query as told, and record what they were sent."""

    def __init__(self, answers: dict[int, dict | None]) -> None:
        self.answers = answers
        self.sent: list[str] = []

    def get_node_ids(self) -> list[int]:
        return list(self.answers)

    def get_nodes(self) -> list:
        return []

    def send_and_receive(self, messages, timeout=None):
        replies = []
        for m in messages:
            self.sent.append(m.metadata.message_type)
            answer = self.answers[m.metadata.dst_node_id]
            if m.metadata.message_type == MessageType.QUERY and answer is not None:
                if answer == "error":  # what Flower 1.41 replies for a ClientApp without a query handler
                    reply = Message(Error(code=ErrorCode.CLIENT_APP_RAISED_EXCEPTION, reason="no query"), reply_to=m)
                elif answer == "pinned":  # the app-pinning launcher's refusal, as Flower 1.41 relays it
                    reply = Message(Error(code=ErrorCode.CLIENT_APP_RAISED_EXCEPTION, reason=PIN_REASON), reply_to=m)
                elif answer == "no-result":
                    reply = Message(RecordDict({}), reply_to=m)
                else:
                    reply = Message(RecordDict({"result": ConfigRecord(answer)}), reply_to=m)
                reply.metadata.__dict__["_src_node_id"] = m.metadata.dst_node_id
                replies.append(reply)
        return replies


PIN_REASON = "<class 'PermissionError'>:<'app bundle sha256:" + "ab" * 32 + " is not in the party's trusted list'>"
READY = {"status": "ready", "party-id": "hospital-a"}
AT_CAP = {"status": "refused", "reason": "budget_exhausted", "message": "the cap", "party-id": "hospital-b"}


@pytest.fixture
def cfg(tmp_path) -> CoordinatorConfig:
    from edprf_core import example_schema

    example_schema("wall_robot_navigation").save(tmp_path / "schema.toml")
    return CoordinatorConfig(
        schema_path=str(tmp_path / "schema.toml"),
        output_dir=str(tmp_path / "out"),
        min_parties=3,
        node_wait_timeout=0.0,
        evaluation_epsilon=0.0,
        spend_record="none",
    )


def test_too_few_ready_parties_fail_the_run_before_any_train_request(cfg, serverapp_identity):  # noqa: F811
    grid = _Grid({1: READY, 2: AT_CAP, 3: {**AT_CAP, "party-id": "hospital-c"}})
    report = run_federation(grid, cfg, "5")
    assert grid.sent == [MessageType.QUERY] * 3  # no train message
    assert report.parties[0].party_id == "hospital-a"  # named by its answer
    assert report.status == RunStatus.FAILED
    assert report.failure.startswith(
        "1 of 3 connected parties would serve the request (readiness round), min-parties is 3; no train request "
        "was sent, so no party spent epsilon. hospital-b: budget_exhausted; hospital-c: budget_exhausted"
    )
    saved = json.loads((Path(cfg.output_dir) / REPORT_FILE).read_text())
    # report.json writes node ids as decimal strings (edprf-run-report/3)
    statuses = {int(p["node_id"]): (p["status"], p["reason"], p["readiness_only"]) for p in saved["parties"]}
    assert statuses == {
        1: (PartyStatus.NOT_ASKED, "too_few_ready", True),
        2: (PartyStatus.REFUSED, "budget_exhausted", True),
        3: (PartyStatus.REFUSED, "budget_exhausted", True),
    }
    text = "\n".join(failure_lines("5", report))
    assert "spent:" not in text and "may have spent" not in text  # nobody reserved anything
    assert "or run without the parties that refused: min-parties=1 or lower" in text and "new output-dir" in text


def test_a_failed_or_silent_node_is_reported_as_such_not_as_ready(cfg, serverapp_identity):  # noqa: F811
    """Review: a ClientApp error and no answer were reported not_asked ('it would have served'), hiding a real
    fault until the next run."""
    grid = _Grid({1: READY, 2: AT_CAP, 3: "error", 4: None, 5: "no-result"})
    report = run_federation(grid, CoordinatorConfig(**{**vars(cfg), "min_parties": 5}), "9")
    assert grid.sent == [MessageType.QUERY] * 5
    got = {p.node_id: (p.status, p.reason) for p in report.parties}
    assert got == {
        1: ("not_asked", "too_few_ready"),
        2: ("refused", "budget_exhausted"),
        3: ("failed", "client_error"),
        4: ("no_reply", "timeout"),
        5: ("failed", "client_error"),
    }
    assert report.failure.startswith("4 of 5 connected parties would serve")  # errors and silence count as serving


def test_two_nodes_answering_for_one_party_count_once(cfg, serverapp_identity):  # noqa: F811
    """Two SuperNodes serving one party's data make one release (the second is a duplicate_party)."""
    grid = _Grid({1: READY, 2: READY, 3: {"status": "ready", "party-id": "hospital-b"}})
    report = run_federation(grid, cfg, "10")
    assert grid.sent == [MessageType.QUERY] * 3 and report.failure.startswith("2 of 3 connected parties would serve")


def test_enough_ready_parties_go_on_to_the_train_round(cfg, serverapp_identity):  # noqa: F811
    grid = _Grid({1: READY, 2: {"status": "would_resend"}, 3: "error", 4: AT_CAP})  # node 3: an app without query
    run_federation(grid, cfg, "6")
    assert grid.sent == [MessageType.QUERY] * 4 + [MessageType.TRAIN] * 4  # every connected party, as before


def test_without_the_readiness_check_the_train_request_goes_out_at_once(cfg, serverapp_identity):  # noqa: F811
    grid = _Grid({1: AT_CAP, 2: AT_CAP, 3: AT_CAP})
    run_federation(grid, CoordinatorConfig(**{**vars(cfg), "readiness_check": False}), "7")
    assert grid.sent == [MessageType.TRAIN] * 3


def test_readiness_round_sorts_the_answers(serverapp_identity):  # noqa: F811
    grid = _Grid({1: READY, 2: AT_CAP, 3: None, 4: {"status": "released"}, 5: "error"})
    readiness = readiness_round(grid, [1, 2, 3, 4, 5], {"request-id": "x"}, timeout=1.0)
    assert list(readiness.serving) == [1] and list(readiness.refused) == [2] and readiness.silent == (3,)
    assert list(readiness.errored) == [4, 5] and readiness.would_serve == 4


def test_simulations_skip_the_readiness_round(tmp_path):
    """The simulation's ClientApp has no query handler, and its fresh parties with min-parties 1 would all serve."""
    from edprf_fl.simulation import SimulationSettings
    from edprf_fl.simulation._prepare import _coordinator_config

    config = _coordinator_config(SimulationSettings(parties=2), tmp_path, tmp_path / "out", 100, 200)
    assert config.readiness_check is False


def test_a_party_whose_app_pin_refuses_the_bundle_does_not_count_as_serving(cfg, serverapp_identity, caplog):  # noqa: F811
    """Day-2 review: during an upgrade, a party pinned to the old bundle was counted as serving; the others trained
    and spent for a run that then failed with no model.  Its pin refuses the train request alike."""
    grid = _Grid({1: READY, 2: {"status": "ready", "party-id": "hospital-b"}, 3: "pinned"})
    report = run_federation(grid, cfg, "11")
    assert grid.sent == [MessageType.QUERY] * 3  # no train message: nobody spent
    assert report.failure.startswith("2 of 3 connected parties would serve")
    got = {p.node_id: (p.status, p.reason) for p in report.parties}
    assert got[3] == ("failed", "client_error") and "trusted list" in report.parties[2].message
    assert "node 3 runs an app pin" in caplog.text and "runbook section 6" in caplog.text
    readiness = readiness_round(grid, [1, 3], {"request-id": "x"}, timeout=1.0)
    assert list(readiness.pinned_out) == [3] and readiness.errored == {} and readiness.would_serve == 1


LAUNCHER_REFUSALS = (
    "app bundle sha256:" + "ab" * 32 + " is not in the party's trusted list",
    "installed files of app bundle sha256:" + "ab" * 32 + " differ from the bundle's files",
    "app bundle hash 'abc' named by the SuperLink was not installed from verified content in this process",
    "app 'edprf-fl/edprf-fl' version '0.1.1' named by the SuperLink is not the verified bundle sha256:" + "ab" * 32,
    "app 'o'brien/" + "x" * 300 + "' version '1' named by the SuperLink is not the verified bundle sha256:" + "ab" * 32,
    "files of the verified app bundle sha256:" + "ab" * 32 + " changed after installation",
)


def test_every_refusal_of_the_app_pin_launcher_reads_as_one():
    """Whole-change review: the pattern missed the launcher's app/version refusal.  Each refusal the launcher raises
    (edprf_fl/_pinned_clientapp.py) is here, as Flower 1.41 relays it; a new one fails the count below."""
    from server._readiness import PIN_REFUSAL

    launcher = (Path(__file__).parents[2] / "edprf_fl" / "_pinned_clientapp.py").read_text(encoding="utf-8")
    assert launcher.count("raise PermissionError(") == len(LAUNCHER_REFUSALS) - 1  # two app ids for one refusal
    for text in LAUNCHER_REFUSALS:
        assert PIN_REFUSAL.search(f"<class 'PermissionError'>:<'{text}'>"), text
    for other in ("<class 'PermissionError'>:<'[Errno 13] Permission denied: '/party/ledger.sqlite''>", "no query"):
        assert not PIN_REFUSAL.search(other), other


def test_a_refusal_in_the_readiness_round_is_logged_as_a_warning(cfg, serverapp_identity, caplog):  # noqa: F811
    """An operator's log filter or a service's journal at WARNING shows a party that refuses (review rev-auto A7)."""
    import logging

    grid = _Grid({1: READY, 2: AT_CAP, 3: {**AT_CAP, "party-id": "hospital-c"}})
    with caplog.at_level(logging.WARNING):
        run_federation(grid, cfg, "12")
    lines = [r for r in caplog.records if r.getMessage().startswith("readiness: 1 of 3 parties would serve")]
    assert [r.levelno for r in lines] == [logging.WARNING]
    assert "refused: hospital-b (budget_exhausted), hospital-c (budget_exhausted)" in lines[0].getMessage()
