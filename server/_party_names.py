"""Parties named by their policy's ``party-id`` in reports and logs, not by Flower's 19-digit node ids.

A release carries its party's id (signed when the party signs).  A refusal carries the id the
party's ClientApp read from its policy (``party-id`` in the reply, public by definition): it is
untrusted, so it is kept only when it is a well-formed id, and it is a label for people, never
used to accept, merge or deduplicate anything.  Node ids stay in the JSON for cross-reference
with ``flwr supernode ls``.
"""

from __future__ import annotations

from typing import Any

from protocol import check_party_id

from ._report import PartyOutcome

__all__ = ["PARTY_ID_KEY", "claimed_party_id", "name_evaluation", "who"]

PARTY_ID_KEY = "party-id"
"""Key of the party's id in a refusal reply's result record."""


def claimed_party_id(result: dict[str, Any]) -> str:
    """The ``party-id`` a reply names, if well-formed; else ''."""
    value = result.get(PARTY_ID_KEY)
    if not isinstance(value, str):
        return ""
    try:
        return check_party_id(value)
    except ValueError:
        return ""


def who(outcome: PartyOutcome) -> str:
    """How a party is named to people: its party-id, or its node id when it never said."""
    return outcome.party_id or f"node {outcome.node_id}"


def name_evaluation(evaluation: dict[str, Any], parties: list[PartyOutcome]) -> dict[str, Any]:
    """Add ``party_id`` to every per-party, refused and no-reply entry of the evaluation round's summary."""
    names = {p.node_id: p.party_id for p in parties}
    for key in ("per_party", "refused"):
        for entry in evaluation.get(key, []):
            if isinstance(entry, dict) and "node_id" in entry:
                entry["party_id"] = names.get(entry["node_id"], "")
    if evaluation.get("no_reply"):
        evaluation["no_reply_parties"] = [names.get(node, "") or f"node {node}" for node in evaluation["no_reply"]]
    return evaluation
