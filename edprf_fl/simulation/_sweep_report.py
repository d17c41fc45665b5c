"""``sweep.md``: the provenance of every set of rows at its top (the code and the command that wrote them), then
the table.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from edprf_fl import Provenance

from ._sweep import PROVENANCE_COLUMNS, sweep_table

__all__ = ["provenance_lines", "sweep_markdown"]


def provenance_lines(
    rows: Sequence[Mapping[str, Any]], made_by: Provenance | None = None, sources: Sequence[Path] = ()
) -> list[str]:
    """The top of ``sweep.md``: for each set of rows one command wrote (``sweep.csv``'s :data:`PROVENANCE_COLUMNS`),
    how many runs and which seeds, the code and the command; then, given ``made_by``, the code and command that
    wrote this table (from the sweeps in ``sources``, when it was rebuilt from them)."""
    groups: dict[tuple[str, ...], list[Mapping[str, Any]]] = {}
    for row in rows:
        groups.setdefault(tuple(str(row.get(c, "")) for c in PROVENANCE_COLUMNS), []).append(row)
    lines = ["Provenance (sweep.csv: edprf_version, git_describe, command):"]
    for (version, revision, command), members in groups.items():
        seeds = sorted({r["seed"] for r in members})
        shown = f"seed {seeds[0]}" if len(seeds) == 1 else f"seeds {_ranges_text(seeds)}"
        runs = f"{len(members)} run{'s' if len(members) != 1 else ''} ({shown})"
        if not version:
            lines.append(f"- {runs}: not recorded (rows written before sweep.csv recorded their code and command)")
            continue
        code = f"edprf-fl {version}" + (f" (git {revision})" if revision else "")
        lines.append(f"- {runs} by {code}: {_code_span(command)}")
    if made_by is not None:
        origin = f" from {', '.join(str(s) for s in sources)}" if sources else ""
        lines.append(f"- this table{origin} by {made_by.code_text}: {_code_span(made_by.command)}")
    return lines


def sweep_markdown(
    rows: Sequence[Mapping[str, Any]],
    configs: Sequence[Mapping[str, Any]],
    *,
    made_by: Provenance | None = None,
    sources: Sequence[Path] = (),
    head: str = "",
) -> str:
    """``sweep.md``: ``head`` (an interrupted sweep's INTERRUPTED line), :func:`provenance_lines`, then the
    table (:func:`sweep_table`)."""
    parts = [head] if head else []
    parts += ["\n".join(provenance_lines(rows, made_by, sources)), sweep_table(rows, configs)]
    return "\n\n".join(parts) + "\n"


def _ranges_text(values: Sequence[int]) -> str:
    """``0-3, 7``: sorted integers as runs of consecutive values."""
    spans: list[list[int]] = []
    for v in values:
        if spans and v == spans[-1][-1] + 1:
            spans[-1].append(v)
        else:
            spans.append([v])
    return ", ".join(str(s[0]) if len(s) == 1 else f"{s[0]}-{s[-1]}" for s in spans)


def _code_span(text: str) -> str:
    """``text`` as a Markdown code span (between longer runs of backticks than it holds)."""
    fence = "`"
    while fence in text:
        fence += "`"
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"
