"""Reason and status codes are string enums whose values are the wire's and the report's strings."""

from __future__ import annotations

import json

import pytest

from client import REASONS, EntryState, Refusal
from protocol import REFUSAL_REASONS, RefusalReason, ReplyStatus
from server import EvaluationSkip, OutcomeReason, PartyOutcome, PartyStatus, RunReport, RunStatus
from server._guarantee import PRE_RESERVATION_REFUSALS

WIRE_REASONS = [
    "bad_model",
    "bad_request",
    "budget_exhausted",
    "epsilon_resolution",
    "held_out_changed",
    "internal_error",
    "invalid_local_data",
    "not_registered",
    "party_setup",
    "policy_bins",
    "policy_depth",
    "policy_epsilon",
    "policy_evaluation_epsilon",
    "policy_exact_metrics",
    "policy_marginals",
    "policy_min_epsilon",
    "policy_model_bytes",
    "policy_model_nodes",
    "policy_model_parts",
    "policy_model_schema",
    "policy_model_trees",
    "policy_model_work",
    "policy_relation",
    "policy_release_nodes",
    "policy_seed",
    "policy_trees",
    "request_id_reused",
    "request_spent",
    "round_closed",
    "schema_mismatch",
]
"""The refusal codes parties send today: the enum must not change one of them."""


def test_refusal_reasons_are_the_wire_strings() -> None:
    assert sorted(RefusalReason) == WIRE_REASONS
    assert set(REFUSAL_REASONS) == set(RefusalReason)
    assert REASONS is REFUSAL_REASONS
    assert all(REFUSAL_REASONS.values())  # every code documented


def test_a_member_is_its_string() -> None:
    assert RefusalReason.POLICY_DEPTH == "policy_depth"
    assert "policy_depth" in REASONS
    assert json.dumps({"reason": RefusalReason.BAD_MODEL}) == '{"reason": "bad_model"}'
    assert [str(s) for s in ReplyStatus] == ["released", "evaluated", "refused", "ready", "would_resend"]
    assert [str(s) for s in EntryState] == ["reserved", "released", "failed"]


def test_refusal_takes_a_code_or_its_string_and_refuses_others() -> None:
    assert Refusal("policy_depth", "too deep").reason is RefusalReason.POLICY_DEPTH
    assert Refusal(RefusalReason.POLICY_SEED, "no").reason is RefusalReason.POLICY_SEED
    with pytest.raises(ValueError, match=r"refusal reason: expected one of \['bad_model', 'bad_request', ") as caught:
        Refusal("made_up", "x")
    assert "RefusalReason" not in str(caught.value)  # the codes as their strings, not the enum's repr


def test_pre_reservation_refusals_exclude_the_charged_ones() -> None:
    assert PRE_RESERVATION_REFUSALS < set(RefusalReason)
    # after the reservation: the ε is counted
    assert RefusalReason.INTERNAL_ERROR not in PRE_RESERVATION_REFUSALS
    assert RefusalReason.REQUEST_SPENT not in PRE_RESERVATION_REFUSALS
    # a file that breaks during the read is refused after the reservation (review rev-ops F5)
    assert RefusalReason.INVALID_LOCAL_DATA not in PRE_RESERVATION_REFUSALS


def test_the_report_holds_plain_strings() -> None:
    report = RunReport(run_id="r", parameters={}, schema_fingerprint="f")
    assert report.status == "running"
    report.parties = [
        PartyOutcome(node_id=1, status=PartyStatus.ACCEPTED),
        PartyOutcome(node_id=2, status=PartyStatus.REFUSED, reason=RefusalReason.POLICY_TREES),
    ]
    report.status = RunStatus.COMPLETED
    data = json.loads(json.dumps(report.to_dict()))
    assert data["status"] == "completed"
    assert [p["status"] for p in data["parties"]] == ["accepted", "refused"]
    assert data["parties"][1]["reason"] == "policy_trees"
    assert [p.node_id for p in report.accepted] == [1]
    assert report.rejections()[0]["status"] == "refused"


def test_the_coordinators_own_codes_keep_their_strings() -> None:
    assert sorted(OutcomeReason) == [
        "client_error",
        "duplicate_content",
        "duplicate_party",
        "flagged_low_quality",
        "malformed",
        "not_selected",
        "replayed_release",
        "request_mismatch",
        "sampler_not_exact",
        "seeded_release",
        "timeout",
        "too_few_ready",
    ]
    assert sorted(EvaluationSkip) == [
        "model_too_large_for_transport",
        "party_rows_not_declared",
        "resumed_releases",
        "uninformative",
    ]
    assert sorted(PartyStatus) == ["accepted", "dropped", "failed", "no_reply", "not_asked", "refused", "rejected"]
    assert sorted(RunStatus) == ["completed", "failed", "running"]
