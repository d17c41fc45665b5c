"""The run's summary in a few lines: what `flwr run --stream` shows from the ServerApp's log."""

from __future__ import annotations

from ._contribution_text import contribution_lines
from ._report import RunReport

__all__ = ["summary_lines"]


def summary_lines(report: RunReport) -> list[str]:
    """Status, model path, accuracy, every party that was not accepted (with its reason), the guarantee."""
    accepted = report.accepted
    head = (f"edprf run {report.run_id}: {report.status}; {len(accepted)} of {len(report.parties)} parties' "
            f"releases accepted, {report.n_trees} trees")
    lines = [head]
    if report.failure:
        lines.append(f"failure: {report.failure}")
    if report.model_path:
        lines.append(f"model: {report.model_path}")
    central = report.central_evaluation.get("accuracy")
    if central is not None:
        lines.append(f"accuracy on the coordinator's test data: {central:.4f}")
    federated = report.federated_evaluation
    if federated.get("parties"):
        kind = "noised" if federated.get("noised") else "exact"
        lines.append(f"parties' own held-out accuracy ({kind}, {federated['parties']} parties): "
                     f"{federated.get('accuracy', float('nan')):.4f}")
    for p in report.parties:
        if p.status != "accepted":
            who = p.party_id or f"node {p.node_id}"
            lines.append(f"  {who}: {p.status} ({p.reason}) {p.message}".rstrip())
    if federated.get("skipped") == "resumed_releases":
        lines.append(federated["message"])
    if report.contributions:
        lines.append("what each party's trees add, on the coordinator's validation rows:")
        lines += [f"  {line}" for line in contribution_lines(report.contributions,
                                                             report.parameters.get("flag_alpha"))]
    if report.guarantee:
        lines.append(f"guarantee: {report.guarantee.splitlines()[0]}")
    return lines
