"""The run's summary in a few lines: what `flwr run --stream` shows from the ServerApp's log."""

from __future__ import annotations

import math
from typing import Any

from edprf_core.count_text import count_text
from protocol import RefusalReason

from ._contribution_text import contribution_lines
from ._marginals_text import marginals_lines
from ._metrics import interval_text
from ._outcomes import PartyStatus
from ._report import RunReport
from ._run_control import absent_text

__all__ = [
    "bounded_influence_lines",
    "central_evaluation_lines",
    "federated_evaluation_lines",
    "influence_cut_lines",
    "summary_lines",
]


HELD_OUT_CHANGED_STEP = (
    "these parties' held-out rows were drawn anew (an upgrade of edprf-fl, or a lost ledger) since their release in "
    "the model was trained, so they evaluate none of it: train new releases (a new request-tag) before asking for an "
    "evaluation (deploy/README.md, section 11)"
)
"""What to do when parties refuse the evaluation with ``held_out_changed``."""


def federated_evaluation_lines(federated: dict[str, Any]) -> list[str]:
    """The parties' held-out accuracy with its interval and one party's reach, or why it was not measured; then
    every party that refused or did not answer the evaluation request, by name, with its reason."""
    if federated.get("skipped"):
        message = federated.get("message") or f"the evaluation round was skipped ({federated['skipped']})"
        return [f"parties' own held-out accuracy: {message}"]
    refused, silent = federated.get("refused") or [], federated.get("no_reply") or []
    n = federated.get("parties") or 0
    if not n and not refused and not silent:
        return []
    if not n:
        lines = ["parties' own held-out accuracy: not measured (no party's counts could be used; reasons below)"]
    else:
        kind = "noised" if federated.get("noised") else "exact"
        value, ci = federated.get("accuracy"), federated.get("ci95")
        if not (isinstance(value, float) and math.isfinite(value)):
            shown = "not estimable (the noisy held-out row counts sum to zero or less: too few rows for the noise)"
        else:
            shown = f"{value:.4f}" + (f" (95% interval {ci[0]:.3f}-{ci[1]:.3f}{_if_lied(federated)})" if ci else "")
        each = f"epsilon {federated.get('epsilon_per_party', 0.0):g} each"
        lines = [f"parties' own held-out accuracy ({kind}, {each}, {count_text(n, 'party', 'parties')}): {shown}"]
        if "max_one_party_shift" in federated:
            pair = (
                f", two parties' replies together {_reach(federated.get('max_two_party_shift'))}"
                if "max_two_party_shift" in federated
                else ""
            )
            lines.append(
                f"  any one party's reply can move it {_reach(federated.get('max_one_party_shift'))}{pair} "
                f"(parties of at most {federated.get('max_party_rows', 0):,} held-out rows)"
            )
        if (f := federated.get("tolerated_parties")) is not None:
            lines.append(_tolerated_line(f, federated))
    for entry in refused:
        who = entry.get("party_id") or f"node {entry.get('node_id')}"
        lines.append(f"  {who}: not in the estimate ({entry.get('reason')})")
    if any(entry.get("reason") == RefusalReason.HELD_OUT_CHANGED for entry in refused):
        lines.append(f"  {RefusalReason.HELD_OUT_CHANGED}: {HELD_OUT_CHANGED_STEP}")
    if silent:
        names = federated.get("no_reply_parties") or [f"node {node}" for node in silent]
        lines.append(f"  no reply to the evaluation request: {', '.join(names)}")
    return lines


def _tolerated_line(f: int, federated: dict[str, Any]) -> str:
    """What ``f`` (the run's tolerated-parties, above 2) parties' replies together can do to the estimate."""
    interval = federated.get("ci95_if_tolerated_parties_lied")
    if interval is None:
        return (
            f"  {f} parties' replies together (tolerated-parties): not computed (too many sets of {f} parties to "
            "search; the one- and two-party figures above stand)"
        )
    return (
        f"  {f} parties' replies together (tolerated-parties) can move it "
        f"{_reach(federated.get('max_tolerated_parties_shift'))}; 95% interval {interval[0]:.3f}-{interval[1]:.3f} "
        f"if {f} lied"
    )


def _if_lied(federated: dict[str, Any]) -> str:
    """The intervals that still cover if one or two parties lied (the 95 % interval assumes every reply honest,
    and with many parties it is narrower than one party's reach), as a clause; "" in reports without them."""
    said = [
        f"{interval[0]:.3f}-{interval[1]:.3f} if {who}"
        for key, who in (("ci95_if_one_party_lied", "one party lied"), ("ci95_if_two_parties_lied", "two did"))
        if (interval := federated.get(key))
    ]
    return "; " + ", ".join(said) if said else ""


def _reach(shift: float | None) -> str:
    """How far one party's reply can move an accuracy in [0, 1], in words."""
    if shift is None:
        return "by an unbounded amount (too few other parties' rows)"
    if shift > 1:
        return f"anywhere in 0-1 (the bound, {shift:.2f}, exceeds an accuracy's whole range)"
    return f"by at most {shift:.3f}"


def summary_lines(report: RunReport) -> list[str]:
    """Status, model path, accuracy and balanced accuracy with their intervals (and the one-class warning), every
    party that was not accepted (with its reason), the guarantee."""
    accepted = report.accepted
    of_parties = count_text(len(report.parties), "party's", "parties'")
    head = (
        f"edprf run {report.run_id}: {report.status}; {len(accepted)} of {of_parties} releases accepted, "
        f"{count_text(report.n_trees, 'tree')}"
    )
    lines = [head]
    if report.failure:
        lines.append(f"failure: {report.failure}")
    if report.model_path:
        lines.append(f"model: {report.model_path}")
    lines.extend(central_evaluation_lines(report.central_evaluation))
    lines.extend(marginals_lines(report.marginals))
    lines.extend(federated_evaluation_lines(report.federated_evaluation))
    for p in report.parties:
        if p.status != PartyStatus.ACCEPTED:
            who = p.party_id or f"node {p.node_id}"
            lines.append(f"  {who}: {p.status} ({p.reason}) {p.message}".rstrip())
            if p.rejected_release_epsilon:
                lines.append(
                    f"    it sent a release: its ledger has charged up to epsilon {p.rejected_release_epsilon:g} "
                    "for it, which the model does not use"
                )
    if report.spend_record_unwritten:
        rows = report.spend_record_unwritten
        lines.append(
            f"  spend record: {count_text(len(rows), 'row')} (epsilon {sum(r['epsilon'] for r in rows):g} in all) "
            f"not written ({rows[0]['error']}): the parties' ledgers charged them, the record's totals miss them; "
            "make room on the record's disk"
        )
    if report.absent_parties and not report.failure:  # a failure's text names them already
        lines.append(f"  {absent_text(report.absent_parties)}")
    lines.extend(bounded_influence_lines(report.bounded_influence))
    if not report.parameters.get("keys_dir") and not report.parameters.get("sim_dir") and report.parties:
        lines.append(
            "  releases unauthenticated (no keys-dir): any node could release under any party's id; set keys-dir "
            "to the parties' registered public keys (the runbook does) so that only a party's key speaks for it"
        )
    lines.extend(influence_cut_lines(report.influence_cuts))
    if report.contributions:
        lines.append("what each party's trees add, on the coordinator's validation rows:")
        lines += [f"  {line}" for line in contribution_lines(report.contributions, report.parameters.get("flag_alpha"))]
    if report.guarantee:
        lines.append(f"guarantee: {report.guarantee.splitlines()[0]}")
    return lines


def bounded_influence_lines(bounded: dict[str, Any]) -> list[str]:
    """When the merge could not bound each party's say (fewer parts than it takes), what that means and what
    keeps such a run from saving a model."""
    if not bounded:
        return []
    if bounded.get("applies", True):
        return _tolerated_lines(bounded)
    parts, needs = bounded["parts"], bounded["needs"]
    what = (
        "the model is one party's release"
        if parts == 1
        else f"with {parts} parties' releases nothing tells a forged release from an honest one, and either can "
        "decide the model"
    )
    line = (
        f"bounded influence: OFF: {what}; it takes {needs} parties to bound one party's say "
        f"(with min-parties={needs}, a run with fewer fails and saves no model)"
    )
    return [line]


def _tolerated_lines(bounded: dict[str, Any]) -> list[str]:
    """With ``tolerated-parties`` above 1, how many hostile parties acting together the merge bounds (all of them,
    or as many as the releases allow)."""
    asked, against = bounded.get("tolerated_parties", 1), bounded.get("bounded_against", 1)
    if asked <= 1:
        return []
    if against >= asked:
        return [f"bounded influence: against {asked} hostile parties acting together (tolerated-parties)"]
    line = (
        f"bounded influence: against {count_text(against, 'hostile party', 'hostile parties acting together')}, "
        f"not the {asked} of tolerated-parties: that takes {2 * asked + 1} parties' releases ({bounded['parts']} "
        "merged)"
    )
    return [line]


def influence_cut_lines(cuts: list[dict[str, Any]]) -> list[str]:
    """Where bounded influence counted less than half of a party's claim on a class, and what that means."""
    if not cuts:
        return []
    head = (
        "bounded influence (one forged release cannot take the model) counted less than half of these parties' "
        "weight on a class; a class that one party alone holds is learned from it only up to twice the next "
        "party's weight, so under strong label skew the model may miss that class:"
    )
    lines = [head]
    lines += [
        f"  {c['party']}, class {c['label']!r}, {c['part']}: weight {c['claimed']:,.0f} (about its rows of the "
        f"class there), {c['counted']:,.0f} counted"
        for c in cuts[:10]
    ]
    if len(cuts) > 10:
        lines.append(f"  and {len(cuts) - 10} more (report.json: influence_cuts)")
    return lines


def central_evaluation_lines(central: dict[str, Any]) -> list[str]:
    """Accuracy and balanced accuracy on the coordinator's test data with their intervals, and the one-class warning."""
    if central.get("accuracy") is None:
        return []
    rows = count_text(central["n"], "row") if "n" in central else "? rows"
    head = (
        f"on the coordinator's test data ({rows}): accuracy "
        f"{interval_text(central, 'accuracy')}, balanced accuracy {interval_text(central, 'balanced_accuracy')}"
    )
    lines = [head]
    lines += [central[key] for key in ("warning", "unpredicted") if central.get(key)]
    return lines
