"""What ``edprf inspect`` says of a global model for the analyst who will use it (analyst review F5): the features it
expects (name, kind, bounds or categories, missing rule, the schema's source text, where its units are written),
the manifest without the coordinator's local paths, and the central evaluation of a ``report.json`` beside the
model file, said to come from that file.

Imported by ``inspect``'s handler only.  Privacy: text about the public schema and the model's manifest; the report
is the coordinator's own file (its figures are already in its summary).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from edprf_core import Schema

__all__ = [
    "HIDDEN_PATH",
    "REPORT_NAME",
    "feature_lines",
    "report_lines",
    "without_paths",
]

REPORT_NAME = "report.json"
"""The coordinator's report beside its model (``server``'s ``REPORT_FILE``)."""

MAX_REPORT_BYTES = 16 << 20
"""A larger ``report.json`` is not read (a report is a few kB)."""

HIDDEN_PATH = "(a local path, not shown)"
"""What a path-valued run-config key of the manifest shows instead of the coordinator's path."""

_PATH_SUFFIXES = ("_dir", "_path")
"""Run-config keys whose value is a file or directory path (``output_dir``, ``sim_dir``, ``schema_path``)."""

_PATH_KEYS = frozenset({"spend_record"})
"""Other keys that may hold a path (``spend_record``: ``auto``, ``off`` or a file)."""

_WORDS = frozenset({"", "auto", "off", "none"})
"""Values of a path key that are no path (shown as they are)."""

SHOWN_CATEGORIES = 12
"""Categories of a feature the feature table lists (``--show-schema`` prints them all)."""

SOURCE_CHARS = 90
"""Characters of a feature's source text shown in the feature table (``--show-schema`` prints it whole)."""


def _path_like(key: str, value: object) -> bool:
    if not isinstance(value, str) or value.strip().lower() in _WORDS:
        return False
    return key.endswith(_PATH_SUFFIXES) or key in _PATH_KEYS or "/" in value or "\\" in value


def without_paths(value: Any, key: str = "") -> Any:
    """``value`` (the manifest, a JSON value) with every path-valued entry replaced by :data:`HIDDEN_PATH`: keys
    ending in ``_dir`` or ``_path``, ``spend_record``, and any text holding a ``/`` or ``\\``."""
    if isinstance(value, dict):
        return {k: without_paths(v, str(k)) for k, v in value.items()}
    if isinstance(value, list):
        return [without_paths(v, key) for v in value]
    return HIDDEN_PATH if _path_like(key, value) else value


def _cut(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _domain(feature) -> str:
    if feature.kind == "continuous":
        return f"[{feature.lower:g}, {feature.upper:g}]"
    unknown = "" if feature.unknown == "refuse" else f"; others read as {feature.unknown!r}"
    shown = ", ".join(str(c) for c in feature.categories[:SHOWN_CATEGORIES])
    more = len(feature.categories) - SHOWN_CATEGORIES
    return shown + (f", ... ({more} more: --show-schema)" if more > 0 else "") + unknown


def feature_lines(schema: Schema) -> list[str]:
    """The features the model expects, one line each: name, kind, bounds or categories, missing rule and the start
    of the schema's source text (where a schema states units); then the label and its classes."""
    rows = [
        (f.name, f.kind, _domain(f), f"missing: {f.missing}", _cut(f.source, SOURCE_CHARS)) for f in schema.features
    ]
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    lines = [
        (
            f"features ({len(rows)}, from the schema in the model; each cell is read by these rules; units, where the "
            "schema states them, are in each source; --show-schema prints the schema's TOML):"
        )
    ]
    for name, kind, domain, missing, source in rows:
        shown = f"  {name:<{widths[0]}}  {kind:<{widths[1]}}  {domain:<{widths[2]}}  {missing}"
        lines.append(f"{shown}  source: {source}" if source else shown)
    classes = ", ".join(str(c) for c in schema.label.classes)
    lines.append(f"label: column {schema.label.column!r}, classes {classes}")
    return lines


def _share(value: object) -> float | None:
    """``value`` as a share in [0, 1], or None: a report's figure of another type, out of range, not finite or too
    large for a float (valid JSON such as ``1e400`` or a 400-digit integer) is shown as nothing, not trusted."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return None
    try:
        share = float(value)
    except OverflowError:
        return None
    return share if math.isfinite(share) and 0.0 <= share <= 1.0 else None


def _interval(report: dict, key: str) -> str | None:
    value, ci = _share(report.get(key)), report.get(f"{key}_ci95")
    if value is None:
        return None
    bounds = [_share(c) for c in ci] if isinstance(ci, list) and len(ci) == 2 else [None]
    if None not in bounds and bounds[0] <= value <= bounds[1]:
        return f"{value:.3f} (95% CI {bounds[0]:.3f}-{bounds[1]:.3f})"
    return f"{value:.3f}"


def report_lines(model_path: Path, run_id: object, fingerprint: str | None = None) -> list[str]:
    """The central evaluation headline of a ``report.json`` beside ``model_path``, of the same run (``run_id``, the
    manifest's) and, given ``fingerprint``, the same schema, said to come from that file; ``[]`` when there is none.
    A report of another run or schema, or one that cannot be read, gets one line saying so."""
    path = model_path.parent / REPORT_NAME
    if not path.is_file():
        return []
    try:
        if path.stat().st_size > MAX_REPORT_BYTES:
            return [f"evaluation: {path} is larger than {MAX_REPORT_BYTES >> 20} MiB: not read"]
        report = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:  # RecursionError: nesting too deep
        return [f"evaluation: {path} could not be read ({type(exc).__name__}): no evaluation shown"]
    if not isinstance(report, dict):
        return [f"evaluation: {path} is not a run report: no evaluation shown"]
    if not (isinstance(run_id, str) and run_id):  # nothing ties a report to a model that names no run
        return [f"evaluation: the model names no run, so {path} is not shown as its evaluation"]
    if report.get("run_id") != run_id:
        return [
            f"evaluation: {path} is of another run ({report.get('run_id')!r}, the model's is {run_id!r}): not shown"
        ]
    if fingerprint is not None and report.get("schema_fingerprint") != fingerprint:
        return [f"evaluation: {path} names another schema than the model's (or none): not shown"]
    charged = _evaluation_charge_lines(report)
    central = report.get("central_evaluation")
    n = central.get("n") if isinstance(central, dict) else None
    figures = [
        f"{name} {text}"
        for name, key in (("accuracy", "accuracy"), ("balanced accuracy", "balanced_accuracy"), ("ROC AUC", "roc_auc"))
        if isinstance(central, dict) and (text := _interval(central, key)) is not None
    ]
    if not (isinstance(n, int) and not isinstance(n, bool) and n > 0) or not figures:
        return [f"evaluation: {path} holds no central evaluation of this model that can be read", *charged]
    majority = _share(central.get("majority_class_accuracy"))
    baseline = f"; majority class {majority:.3f}" if majority is not None else ""
    return [
        (
            f"evaluation (from {path}, a report of this model's run {run_id!r}, not from the model file): on "
            f"{n} held-out rows of the coordinator's test data: {', '.join(figures)}{baseline}"
        ),
        *charged,
    ]


def _evaluation_charge_lines(report: dict) -> list[str]:
    """A line when the run's report says parties were charged for a noised evaluation: that ε is not in the model
    file's (the model is not made from it), but each such party's ledger counts it (review rev-dpo D12: a model
    showing epsilon 0.5 beside a run report's 0.6 went unexplained).  The report is untrusted: only finite,
    positive figures of at most 1e6 are read."""
    parties = report.get("parties")
    charges = []
    for party in parties if isinstance(parties, list) else []:
        value = party.get("evaluation_epsilon") if isinstance(party, dict) else None
        if (
            isinstance(value, (int, float))
            and not isinstance(value, bool)
            and math.isfinite(value)
            and 0 < value <= 1e6
        ):
            charges.append(float(value))
    if not charges:
        return []
    each = f"{max(charges):g}" if min(charges) == max(charges) else f"up to {max(charges):g}"
    parties_text = "party" if len(charges) == 1 else "parties"
    line = (
        f"evaluation charge: this run also charged {len(charges)} {parties_text} epsilon {each} each for its noised "
        "evaluation, not counted in the model's epsilon above; a party's total over all its runs is in its ledger "
        "(`edprf budget` on its host)"
    )
    return [line]
