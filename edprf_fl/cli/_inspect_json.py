"""``edprf inspect FILE --json``: what the text says, as one JSON object (review rev-auto A6: a script had to grep
``privacy: NOT differentially private`` to learn that a model is not DP).

Every value is one the text mode prints, taken from the same objects (the decoded header or model, its forest's
:meth:`~edprf_core.DPForest.not_dp_reasons` and :meth:`~edprf_core.DPForest.verdict`): nothing new is computed
from the model.  docs/reference/inspect-json.md documents every key.  Integers beyond JSON's exact range
(``2**53``: ``jq`` 1.6 rounds them), such as a node id in the coordinator's manifest, are written as decimal
strings.  Imported by ``inspect``'s handler only; privacy: text about public parameters, as the text mode.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Sequence

    from edprf_core import DPForest, TrainingParameters
    from protocol import GlobalModelView, ReleaseHeader

__all__ = [
    "INSPECT_FORMAT",
    "MAX_EXACT_INTEGER",
    "SIGNATURE_STATES",
    "error_json",
    "model_facts",
    "release_facts",
    "shown_json",
]

INSPECT_FORMAT = "edprf-inspect/1"
"""The ``format`` of ``edprf inspect --json``'s object; a key removed or changed in meaning gets a new number, a key
added does not."""

MAX_EXACT_INTEGER = 2**53 - 1
"""The largest integer every JSON reader keeps exactly; larger ones are written as decimal strings."""

SIGNATURE_STATES = {
    "verified": "verified",
    "unverified": "not-checked",
    "unsigned": "unsigned",
    "unknown_party": "no-key",
    "invalid": "invalid",
}
"""A release's signature status (:class:`protocol.SignatureStatus`) as the JSON names it: ``not-checked`` is signed
but not verified (no ``--keys``), ``no-key`` signed by a party with no key in ``--keys`` (a retired party)."""


def exact_integers(value: Any) -> Any:
    """``value`` (a JSON value) with every integer beyond :data:`MAX_EXACT_INTEGER` as its decimal string."""
    if isinstance(value, dict):
        return {str(k): exact_integers(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [exact_integers(v) for v in value]
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_EXACT_INTEGER:
        return str(value)
    return value


def _parameters(p: TrainingParameters) -> dict[str, Any]:
    """The parameters line of the text, as an object (``dp``: whether they give a DP release)."""
    return {
        "epsilon": p.epsilon,
        "relation": p.relation,
        "split_mode": p.split_mode,
        "max_depth": p.max_depth,
        "n_trees": p.n_trees,
        "n_bins": p.n_bins,
        "dp": not p.not_dp_reasons(),
        "seeded": p.seeded,
        "sampler": p.sampler,
        "leaf": p.leaf,
        "depth_rule": p.depth_rule,
        "count_epsilon": p.count_epsilon,
        "marginals_share": p.marginals_share,
        "marginals_bins": p.marginals_bins,
    }


def _release(
    party_id: str, p: TrainingParameters, n_trees: int, n_nodes: int, status: str, detail: str
) -> dict[str, Any]:
    return {
        "party_id": party_id,
        "epsilon": p.epsilon,
        "trees": n_trees,
        "nodes": n_nodes,
        "parameters": _parameters(p),
        "signature": SIGNATURE_STATES[status],
        "signature_detail": detail if status == "invalid" else None,
    }


def _privacy(
    reasons: Sequence[str], epsilon: float, relations: Sequence[str], condition: str, verdict: str, guarantee: str
) -> dict[str, Any]:
    return {
        "dp": not reasons,
        "not_dp_reasons": list(reasons),
        "epsilon": epsilon,
        "relations": sorted(set(relations)),
        "condition": condition,
        "verdict": verdict or None,
        "guarantee": guarantee,
    }


def release_facts(
    header: ReleaseHeader, forest: DPForest | None, schema_name: str | None, guarantee: str
) -> dict[str, Any]:
    """A release's object; ``forest`` is the decoded one (None when no schema matched: the structure was not checked,
    and the privacy is what the parameters claim, as the text's guarantee says)."""
    from edprf_core.forest import POOLING_NOTE

    p = header.parameters
    reasons = forest.not_dp_reasons() if forest is not None else p.not_dp_reasons()
    epsilon = forest.epsilon if forest is not None else p.epsilon
    return {
        "kind": "release",
        "format_version": header.format_version,
        "schema_fingerprint": header.schema_fingerprint,
        "schema_name": schema_name,
        "structure_checked": forest is not None,
        "parties": [header.party_id],
        "trees": header.n_trees,
        "nodes": header.n_nodes,
        "parameters": _parameters(p),
        "privacy": _privacy(
            reasons, epsilon, [p.relation], POOLING_NOTE, forest.verdict() if forest else "", guarantee
        ),
        "releases": [
            _release(
                header.party_id,
                p,
                header.n_trees,
                header.n_nodes,
                header.signature.status.value,
                header.signature.detail,
            )
        ],
        "run_id": None,
        "manifest": None,
    }


def model_facts(view: GlobalModelView, manifest: dict[str, Any]) -> dict[str, Any]:
    """A global model's object; ``manifest`` is the one the text shows (the coordinator's local paths hidden)."""
    from edprf_core.forest import FEDERATION_NOTE

    forest = view.forest
    run_id = view.manifest.get("run_id")
    return {
        "kind": "global-model",
        "format_version": view.format_version,
        "schema_fingerprint": view.schema.fingerprint,
        "schema_name": view.schema.name,
        "structure_checked": True,
        "parties": list(view.parties),
        "trees": forest.n_trees,
        "nodes": forest.trees.n_nodes,
        "parameters": None,
        "privacy": _privacy(
            forest.not_dp_reasons(),
            forest.epsilon,
            [p.relation for _, p, _ in forest.parts],
            FEDERATION_NOTE,
            forest.verdict(),
            forest.guarantee(),
        ),
        "releases": [
            _release(
                r.party_id,
                r.params,
                r.forest.n_trees,
                r.forest.trees.n_nodes,
                r.signature_status.value,
                r.signature_detail,
            )
            for r in view.releases
        ],
        "run_id": run_id if isinstance(run_id, str) else None,
        "manifest": manifest,
    }


def shown_json(facts: dict[str, Any], file: str, exit_status: int) -> str:
    """The object printed for a file that was read (exit 0 or 3)."""
    return json.dumps(
        exact_integers({"format": INSPECT_FORMAT, "file": file, **facts, "error": None, "exit_status": exit_status}),
        indent=2,
    )


def error_json(error: str, exit_status: int) -> str:
    """The object printed when nothing is shown: the error line stderr gives after ``edprf inspect: error: ``."""
    return json.dumps({"format": INSPECT_FORMAT, "error": error, "exit_status": exit_status}, indent=2)
