"""The run's summary in a few lines: what `flwr run --stream` shows from the ServerApp's log."""

from __future__ import annotations

from typing import Any

from ._metrics import interval_text
from ._report import RunReport

__all__ = ["central_evaluation_lines", "summary_lines"]


def summary_lines(report: RunReport) -> list[str]:
    """Status, model path, accuracy and balanced accuracy with their intervals (and the one-class warning), every
    party that was not accepted (with its reason), the guarantee."""
    accepted = report.accepted
    head = (f"edprf run {report.run_id}: {report.status}; {len(accepted)} of {len(report.parties)} parties' "
            f"releases accepted, {report.n_trees} trees")
    lines = [head]
    if report.failure:
        lines.append(report.failure)
    if report.model_path:
        lines.append(f"model: {report.model_path}")
    lines.extend(central_evaluation_lines(report.central_evaluation))
    federated = report.federated_evaluation
    if federated.get("parties"):
        kind = "noised" if federated.get("noised") else "exact"
        lines.append(f"parties' own held-out accuracy ({kind}, {federated['parties']} parties): "
                     f"{federated.get('accuracy', float('nan')):.4f}")
    for p in report.parties:
        if p.status != "accepted":
            who = p.party_id or f"node {p.node_id}"
            lines.append(f"  {who}: {p.status} ({p.reason}) {p.message}".rstrip())
    if report.guarantee:
        lines.append(f"guarantee: {report.guarantee.splitlines()[0]}")
    return lines


def central_evaluation_lines(central: dict[str, Any]) -> list[str]:
    """Accuracy and balanced accuracy on the coordinator's test data with their intervals, and the one-class warning."""
    if central.get("accuracy") is None:
        return []
    head = (f"on the coordinator's test data ({central.get('n', '?')} rows): accuracy "
            f"{interval_text(central, 'accuracy')}, balanced accuracy {interval_text(central, 'balanced_accuracy')}")
    lines = [head]
    if central.get("warning"):
        lines.append(central["warning"])
    return lines
