"""Which columns of DATA were clipped to the schema's bounds, by how many rows and at which bound, for ``edprf
predict`` and ``edprf evaluate`` (analyst review F10).

The summary's ``138 clipped`` says how many rows were scored from a bound, not where: these lines name each column,
the few largest first (``HbA1c_level: 138 rows above its upper bound 15``).  A column clipped in
:data:`PARTIAL_UNITS_SHARE` or more of its values (and in at least :data:`PARTIAL_UNITS_MIN_ROWS` rows) but less
than :data:`._model_args.CLIPPED_EXIT_SHARE` gets a warning: that many values beyond a bound is seldom a few extreme
patients, more often part of the column in other units (one site or laboratory writing HbA1c in mmol/mol against
%).  From :data:`._model_args.CLIPPED_EXIT_SHARE` on, the command's exit-4 line already says so.

Imports nothing heavy (the parser imports the command modules): it reads the run's ``ClippingTally`` and schema.
Privacy: counts of the caller's own rows, said to the caller; nothing is released.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from edprf_core import Schema
    from edprf_core.prediction import ClippedColumn

__all__ = ["PARTIAL_UNITS_MIN_ROWS", "PARTIAL_UNITS_SHARE", "SHOWN_COLUMNS", "clipped_by_column", "clipped_lines"]

SHOWN_COLUMNS = 5
"""Columns listed by name in the summary, the most clipped first (the JSON lists every one)."""

PARTIAL_UNITS_SHARE = 0.05
"""Share of a column's values clipped from which the command warns of a unit error in part of the column: among
real patients a value beyond a clinically plausible bound is rare (a few in a thousand), so one in twenty is more
likely a site or a laboratory writing other units."""

PARTIAL_UNITS_MIN_ROWS = 5
"""Clipped rows a column needs for that warning (one clipped row of a 20-row extract is 5 %)."""


def _rows(n: int) -> str:
    return f"{n} row{'' if n == 1 else 's'}"


def _where(column: ClippedColumn, lower: float, upper: float) -> str:
    """``138 rows above its upper bound 15`` (``3 rows below its lower bound 10, 1 row above its upper bound 60``)."""
    parts = []
    if column.below:
        parts.append(f"{_rows(column.below)} below its lower bound {lower:g}")
    if column.above:
        parts.append(f"{_rows(column.above)} above its upper bound {upper:g}")
    return ", ".join(parts)


def _percent(share: float) -> str:
    return "<1%" if share < 0.005 else f"{share:.0%}"


def _partial_units(column: ClippedColumn) -> bool:
    """Whether ``column`` gets the warning of a unit error in part of it (see the module's text)."""
    from ._model_args import CLIPPED_EXIT_SHARE

    return PARTIAL_UNITS_SHARE <= column.share < CLIPPED_EXIT_SHARE and column.count >= PARTIAL_UNITS_MIN_ROWS


def _bounds(schema: Schema) -> dict[str, tuple[float, float]]:
    """Each continuous feature's declared ``(lower, upper)``."""
    return {f.name: (f.lower, f.upper) for f in schema.features if hasattr(f, "lower")}


def _ordered(columns: dict[str, ClippedColumn]) -> list[tuple[str, ClippedColumn]]:
    """The clipped columns, the most clipped rows first (then by name)."""
    return sorted(columns.items(), key=lambda item: (-item[1].count, item[0]))


def clipped_lines(columns: dict[str, ClippedColumn], schema: Schema, command: str) -> tuple[list[str], list[str]]:
    """The summary's lines naming the clipped columns and the warnings of a likely unit error in part of a column.

    Parameters
    ----------
    columns : dict of str to ClippedColumn
        ``ClippingTally.columns()`` of the rows read.
    schema : Schema
        The model's schema (its bounds).
    command : str
        ``"predict"`` or ``"evaluate"``: the warnings begin ``edprf COMMAND: warning:``.

    Returns
    -------
    lines : list of str
        ``[]`` when nothing was clipped; else a heading and one indented line per column (at most
        :data:`SHOWN_COLUMNS`, then how many more).
    warnings : list of str
        One per column clipped in :data:`PARTIAL_UNITS_SHARE` to :data:`._model_args.CLIPPED_EXIT_SHARE` of its
        values (at least :data:`PARTIAL_UNITS_MIN_ROWS` rows).
    """
    if not columns:
        return [], []
    bounds = _bounds(schema)
    ordered = _ordered(columns)
    header = (
        "values beyond the schema's bounds, by column (a row scored was scored at the bound, not its value; rows "
        "refused for another cell count here too):"
    )
    lines = [header]
    for name, column in ordered[:SHOWN_COLUMNS]:
        lines.append(f"  {name}: {_where(column, *bounds[name])} ({_percent(column.share)} of its values)")
    rest = ordered[SHOWN_COLUMNS:]
    if rest:
        lines.append(f"  and {len(rest)} more columns ({_rows(sum(c.count for _, c in rest))} clipped)")
    warnings = [
        f"edprf {command}: warning: column {name!r}: {_where(column, *bounds[name])}, {_percent(column.share)} of "
        f"its values: {PARTIAL_UNITS_SHARE:.0%} or more beyond a bound is seldom a few extreme patients; likely a "
        "unit error in part of the column (one site or laboratory writing other units than the schema's, e.g. "
        "HbA1c in mmol/mol against %): check those rows (their detail says 'clipped to its') and convert them"
        for name, column in ordered
        if _partial_units(column)
    ]
    return lines, warnings


def clipped_by_column(columns: dict[str, ClippedColumn], schema: Schema) -> list[dict[str, object]]:
    """Every clipped column for ``--json``, the most clipped first: its name, bounds, rows below and above, share
    of its values and whether it got the unit warning (:func:`clipped_lines`)."""
    bounds = _bounds(schema)
    return [
        {
            "column": name,
            "lower": bounds[name][0],
            "upper": bounds[name][1],
            "below": column.below,
            "above": column.above,
            "share": column.share,
            "partial_units_warning": _partial_units(column),
        }
        for name, column in _ordered(columns)
    ]
