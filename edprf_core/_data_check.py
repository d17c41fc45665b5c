"""What a schema's rules will do to a data file, before any training.

For the data owner's eyes only: the report counts rows and values of the
owner's own file (it is data, not DP, and must not be sent anywhere).  It uses
exactly the rules the parties and the estimator apply: the per-line reader
(:func:`read_table`), the per-cell reading of :mod:`edprf_core._encoding` and
the per-record filter (:func:`conforming_rows`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ._encoding import CellRules, _parse_numbers, rule_violations
from ._schema import ContinuousFeature, Schema
from ._text_table import OptionHints, read_table

__all__ = ["DataCheck", "check_data"]


@dataclass(frozen=True)
class DataCheck:
    """Counts of what the rules do to one file.

    Attributes
    ----------
    lines_read : int
        Data lines parsed into rows.
    lines_dropped : dict of str to int
        Unreadable lines by reason (wrong number of fields, unbalanced quotes, too long).
    rows_kept : int
        Rows that satisfy every rule (what training would use).
    rows_dropped : list of (column, rule, count)
        Rows a rule drops (a row can break several).
    clipped : dict of str to (count, share)
        Continuous values outside the declared bounds, clipped to them.
    missing : dict of str to (count, rule)
        Missing cells per column and what the column's rule does with them.
    """

    lines_read: int
    lines_dropped: dict[str, int]
    rows_kept: int
    rows_dropped: list[tuple[str, str, int]] = field(default_factory=list)
    clipped: dict[str, tuple[int, float]] = field(default_factory=dict)
    missing: dict[str, tuple[int, str]] = field(default_factory=dict)

    def lines(self) -> list[str]:
        """A human-readable report."""
        n = max(self.lines_read, 1)
        out = [f"rows read: {self.lines_read}; rows kept: {self.rows_kept} ({self.rows_kept / n:.1%})"]
        for reason, count in sorted(self.lines_dropped.items()):
            out.append(f"lines left out ({reason}): {count}")
        for column, rule, count in self.rows_dropped:
            out.append(f"rows dropped, column {column!r}: {rule}: {count} ({count / n:.1%})")
        for column, (count, rule) in self.missing.items():
            out.append(f"missing values, column {column!r}: {count} ({count / n:.1%}) -> {rule}")
        for column, (count, share) in self.clipped.items():
            hint = "  <- most values lie outside the bounds: other units than the schema?" if share > 0.2 else ""
            out.append(f"values clipped to the bounds, column {column!r}: {count} ({share:.1%}){hint}")
        return out


def check_data(
    path: str | Path, schema: Schema, *, sep: str = ",", header: bool = True, hints: OptionHints | None = None
) -> DataCheck:
    """Report what the schema's rules do to the file at ``path`` (nothing is trained or sent).

    ``sep``, ``header`` and ``hints`` are those of :func:`edprf_core.tables.read_table`.  Privacy cost: none
    released; the report itself is exact data about the file, for its owner.
    """
    table = read_table(path, schema, sep=sep, header=header, hints=hints)
    dropped: dict[str, int] = {}
    for note in table.dropped:
        reason = note.split(": ", 1)[1].split(",")[0]
        reason = "wrong number of fields" if "fields" in reason else reason
        dropped[reason] = dropped.get(reason, 0) + 1
    found = rule_violations(table.X, table.y, schema)
    keep = np.ones(len(table.X), dtype=bool)
    for _, _, mask in found:
        keep &= ~mask
    problems = [(column, what, int(mask.sum())) for column, what, mask in found]
    rules = CellRules.of(schema)
    clipped, missing = {}, {}
    for f in schema.features:
        cells = rules.clean(table.X[f.name])
        gaps = int(rules.missing(cells).sum())
        if gaps:
            rule = f.missing if isinstance(f.missing, str) else f"imputed as {f.missing:g}"
            missing[f.name] = (gaps, {"refuse": "rows dropped", "separate": "a code of their own"}.get(rule, rule))
        if isinstance(f, ContinuousFeature):
            x = _parse_numbers(cells)
            finite = np.isfinite(x)
            outside = int(np.sum(finite & ((x < f.lower) | (x > f.upper))))
            if outside:
                clipped[f.name] = (outside, outside / max(int(finite.sum()), 1))
    label_missing = int(rules.missing(rules.clean(table.y)).sum())
    if label_missing:
        missing[schema.label.column] = (label_missing, "rows dropped (labels have no catch-all)")
    return DataCheck(
        lines_read=len(table.X),
        lines_dropped=dropped,
        rows_kept=int(keep.sum()),
        rows_dropped=problems,
        clipped=clipped,
        missing=missing,
    )
