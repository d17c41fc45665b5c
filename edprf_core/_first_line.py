"""What a table's first line is when it names none of the schema's columns: another table's header, or data.

A file whose header names none of the schema's columns is either a file without a header (its first line is a
row of data: the reader's option for a headerless file helps) or a file of another table (its header names other
columns: data for another model or dataset, which no option of the reader helps).  Telling the two apart is for
the message only; the file is refused either way.

Privacy: reads the first line of the caller's own file, for the caller's eyes; nothing is released.  A first line
that names none of the schema's columns may be a row of data (a file without a header whose first row is text:
names, free-text codes), so the messages give its number of fields, never its cells: a party's log, where the
message lands, may be forwarded off the host (security review finding 5).
"""

from __future__ import annotations

import csv
import math
from collections.abc import Sequence

from ._schema import CategoricalFeature, Schema
from .count_text import count_text

__all__ = ["foreign_header_text", "looks_like_data", "names_line", "schema_column_named", "split_line"]

_SHOWN_NAMES = 4
"""Column names a message shows of the header and of the schema (then how many there are)."""


def split_line(text: str, sep: str) -> list[str] | None:
    """Fields of one line as the readers split it, or None when the line is malformed (open quote, stray
    quote)."""
    if '"' not in text:
        return text.split(sep)
    try:
        rows = list(csv.reader([text], delimiter=sep, quotechar='"', doublequote=True, strict=True))
    except csv.Error:
        return None
    return rows[0] if len(rows) == 1 else None


def names_line(names: Sequence[str]) -> str:
    """A header line (separator ``,``) that :func:`split_line` splits back into ``names``, whatever they hold: each
    name quoted, its quotes doubled.  For a Parquet file's column names, which may hold a comma (rev-data S3-8:
    ``"weight, kg"`` was read as two names)."""
    return ",".join('"' + name.replace('"', '""') + '"' for name in names)


def _cells(first: str, sep: str) -> list[str]:
    """The first line's cells, unquoted as the readers read them (a malformed line: split plainly, for a
    message only)."""
    fields = split_line(first, sep)
    return [c.strip().strip('"').strip() for c in (fields if fields is not None else first.split(sep))]


def schema_column_named(first: str, sep: str, schema: Schema) -> bool:
    """Whether a cell of ``first`` names one of the schema's columns (features, ignored columns, the label),
    case aside."""
    known = {n.casefold() for n in (*schema.feature_names, *schema.ignored_columns, schema.label.column)}
    return any(c.casefold() in known for c in _cells(first, sep))


def looks_like_data(first: str, sep: str, schema: Schema) -> bool:
    """Whether ``first`` reads as a row of data: one of its cells is a finite number, or a category or class the
    schema declares (case aside).  A header names columns: words, not numbers or category values."""
    declared = {str(c).casefold() for c in schema.classes}
    for f in schema.features:
        if isinstance(f, CategoricalFeature):
            declared |= {str(c).casefold() for c in f.categories}
    for cell in _cells(first, sep):
        if cell.casefold() in declared:
            return True
        try:
            if math.isfinite(float(cell)):
                return True
        except ValueError:
            continue
    return False


def _some(names: list[str]) -> str:
    shown = ", ".join(repr(n) for n in names[:_SHOWN_NAMES])
    return shown + (", ..." if len(names) > _SHOWN_NAMES else "")


def foreign_header_text(first: str | None, sep: str, schema: Schema, no_header: str = "pass --no-header") -> str:
    """Why a first line that is another table's header is refused, or ``""`` when it is not one.

    ``first`` is another table's header when it names none of the schema's columns and does not look like data
    (:func:`looks_like_data`); the caller has ruled out another separator.  The text names the schema, a few
    of the columns it expects and how many fields the first line has, never its cells (they may be data):
    ``"the file's columns do not match the schema 'bank-marketing': ..."``.  When that count is the schema's
    features and label, the layout of a file without a header, it ends with "if it has no header line,
    ``no_header``" (the words of the caller's option: the ``edprf`` flag, or a party's node config key).
    """
    if not first or schema_column_named(first, sep, schema) or looks_like_data(first, sep, schema):
        return ""
    fields = len(_cells(first, sep))
    features = list(schema.feature_names)
    text = (
        f"the file's columns do not match the schema {schema.name!r}: it expects {_some(features)} "
        f"({count_text(len(features), 'feature')} and the label {schema.label.column!r}); its first line names "
        f"none of them ({count_text(fields, 'field')}, none a number or a declared category or class; their text "
        "is not repeated here, as it may be data): is the file data for another model or dataset?"
    )
    if fields == len(features) + 1:
        text += f" If it has no header line (its first line a row of data in the schema's columns), {no_header}"
    return text
