"""The run report: what every party sent, what was accepted, and how the model does."""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from edprf_core.code_version import code_version
from protocol import OWNER_ONLY_FILE, save_atomic

from ._outcomes import PartyStatus, RunStatus

__all__ = ["REPORT_FORMAT", "PartyOutcome", "RunReport"]

REPORT_FORMAT = "edprf-run-report/3"
"""``report.json``'s ``report_format``: what its fields mean.  ``/3``: every Flower node id (``parties[].node_id``,
``federated_evaluation``'s ``per_party[].node_id``, ``refused[].node_id`` and ``no_reply[]``) is a decimal string,
as ``edprf budget --json`` and run ids write them: 64-bit ids written as JSON numbers were rounded by readers that
hold numbers as doubles (``jq`` 1.6; review rev-auto A8); ``/2`` wrote them as numbers.  ``/2`` (version 0.2.0 on):
a two-class ``brier`` is the positive class's Brier score (0-1), with ``brier_scale`` saying so; each accepted party
has ``count_epsilon``, ``marginals`` has ``release_epsilon``.  A report without ``report_format`` is of an earlier
version, whose two-class ``brier`` is the sum over classes (0-2).  Change it whenever a field's meaning changes, so
that a reader can tell."""


@dataclass
class PartyOutcome:
    """One node's answer to the train request (and the ε it spent on the evaluation request)."""

    node_id: int
    status: PartyStatus
    reason: str = ""
    message: str = ""
    party_id: str = ""
    n_trees: int = 0
    epsilon: float = 0.0
    evaluation_epsilon: float = 0.0
    exact_metrics: bool = False  # it may have sent un-noised held-out counts (not DP)
    seeded_evaluation: bool = False  # it may have noised its held-out counts with the run's seed (not DP)
    sampler: str = ""
    max_depth: int = 0  # the released depth (each party's own under depth-rule "auto")
    depth_rule: str = ""  # fixed | declared-size | dp-count
    count_epsilon: float = 0.0
    """The part of ``epsilon`` its release says it spent on its DP row count (depth rule ``dp-count``; 0 otherwise):
    the trees had ``epsilon - count_epsilon``.  As claimed by the release (the coordinator cannot check it)."""
    signed: bool = False
    release_bytes: int = 0
    resumed_from_run: str = ""  # the earlier run whose release was resent (reused request-tag): charged then
    marginals_share: float = 0.0  # its release's marginals part: share of its rows (0: none) and grid
    marginals_bins: int = 0
    rejected_release_epsilon: float = 0.0
    """The request's ε when the party sent a release the coordinator rejected: an honest party's ledger charged
    (up to) that much before releasing, and the model does not use it (0 otherwise)."""
    readiness_only: bool = False
    """The outcome is the party's answer to the readiness round (no train request was sent to it): nothing was
    reserved, whatever the refusal."""


@dataclass
class RunReport:
    run_id: str
    parameters: dict[str, Any]
    schema_fingerprint: str
    parties: list[PartyOutcome] = field(default_factory=list)
    model_path: str = ""
    model_bytes: int = 0
    n_trees: int = 0
    guarantee: str = ""
    merge_seconds: float = 0.0
    bytes_sent: int = 0
    bytes_received: int = 0
    timings: dict[str, float] = field(default_factory=dict)
    federated_evaluation: dict[str, Any] = field(default_factory=dict)
    central_evaluation: dict[str, float] = field(default_factory=dict)
    contributions: list[dict[str, Any]] = field(default_factory=list)
    selection: dict[str, Any] = field(default_factory=dict)
    marginals: dict[str, Any] = field(default_factory=dict)  # the model's marginals part ({}: none)
    absent_parties: list[str] | None = field(default_factory=list)
    """Registered parties (keys-dir) named by no reply; in a run stopped before its requests, those whose SuperNode
    did not connect; None when that is not known (``absent_parties_unknown`` says why)."""
    absent_parties_unknown: str = ""
    """Why ``absent_parties`` is None (a connected SuperNode was matched to no registered party), and how to find
    the missing parties."""
    influence_cuts: list[dict[str, Any]] = field(default_factory=list)  # edprf_core.forest.influence_cuts
    bounded_influence: dict[str, Any] = field(default_factory=dict)  # whether item 5's bounds apply ({}: no model)
    spend_record_unwritten: list[dict[str, Any]] = field(default_factory=list)
    """Rows the spend record could not take (``party_id``, ``request``, ``epsilon``, ``error``): the parties'
    ledgers charged them, the record's totals miss them (a full disk)."""
    status: RunStatus = RunStatus.RUNNING
    failure: str = ""
    report_format: str = REPORT_FORMAT
    """What the fields mean (:data:`REPORT_FORMAT`)."""
    edprf_version: str = field(default_factory=lambda: code_version()[0])
    """The version of the coordinator's code that made the report (:func:`edprf_core.code_version.code_version`: the
    run's app bundle's ``pyproject.toml``, or the installed metadata for a wheel; "unknown" when neither is there)."""

    @property
    def accepted(self) -> list[PartyOutcome]:
        return [p for p in self.parties if p.status == PartyStatus.ACCEPTED]

    def rejections(self) -> list[dict[str, Any]]:
        return [
            {"node_id": p.node_id, "party_id": p.party_id, "status": p.status, "reason": p.reason, "message": p.message}
            for p in self.parties
            if p.status != PartyStatus.ACCEPTED
        ]

    def to_dict(self) -> dict[str, Any]:
        """The report as ``report.json`` holds it: JSON values, node ids as strings (:data:`REPORT_FORMAT`)."""
        return _node_ids_as_text(_finite(asdict(self)))

    def save(self, path: str | Path) -> Path:
        """Write the report as JSON to ``path`` (atomically, readable by its owner only)."""
        data = json.dumps(self.to_dict(), indent=2, sort_keys=True).encode("utf-8")
        return save_atomic(path, data, mode=OWNER_ONLY_FILE)


def _finite(value: Any) -> Any:
    """JSON has no NaN: write None instead."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


def _node_ids_as_text(report: dict[str, Any]) -> dict[str, Any]:
    """``report`` (a copy: :func:`dataclasses.asdict`'s) with every Flower node id written as a decimal string:
    ``parties[].node_id`` and the evaluation round's ``per_party[].node_id``, ``refused[].node_id``, ``no_reply[]``.
    A 64-bit id as a JSON number loses digits in a reader that holds numbers as doubles (``jq`` 1.6, JavaScript)."""
    for party in report.get("parties") or []:
        party["node_id"] = str(party["node_id"])
    evaluation = report.get("federated_evaluation") or {}
    for key in ("per_party", "refused"):
        for entry in evaluation.get(key) or []:
            if isinstance(entry, dict) and entry.get("node_id") is not None:
                entry["node_id"] = str(entry["node_id"])
    if isinstance(evaluation.get("no_reply"), list):
        evaluation["no_reply"] = [str(node) for node in evaluation["no_reply"]]
    return report
