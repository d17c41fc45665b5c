"""Read a delimited text file one line at a time: every row's fate depends on that row only.

Why not :func:`pandas.read_csv`
-------------------------------
Parsing is part of the mechanism (``PRIVACY_NOTES.md``, note 11).  pandas
guesses each column's type from all of its cells, parses NA tokens by default
and fails the whole file on one malformed line: one added record can change
how every other record is read (an empty label cell turns a column of ``"0"``
into ``0.0``), or make the party refuse.  Under add/remove that is a change of
the whole dataset, not of one record, and no mechanism pays for it.

The rules here make the reader a *per-record map*: the output for a line is a
function of that line's bytes alone (and of the header and the public
parameters ``sep``/``header``/``max_line_bytes``):

- the file is split into physical lines on ``\\n`` (a trailing ``\\r`` is
  removed); a quoted field cannot span lines: a line that ends inside quotes
  is malformed and dropped, it never swallows the next ones;
- the bytes are decoded as UTF-8 with replacement characters (a line break is
  never part of a multi-byte sequence, so this equals decoding line by line),
  then each line is parsed alone as one CSV record (quotes and doubled quotes
  as in RFC 4180);
- a line with another number of fields than the header, an unbalanced quote,
  or more than ``max_line_chars`` characters is dropped; blank lines are
  skipped;
- every cell stays text: no type inference and no NA guessing here (the
  schema alone decides, cell by cell, in :mod:`edprf_core._encoding`).

A Parquet file (``.parquet``, ``.pq``) is read with pyarrow: its cells keep
the types the file itself declares (nothing is inferred here), one row per
record.

Only the file itself can be refused: it does not exist, cannot be read, or its
header lacks the label or a feature column.  Those are checked on the header
line, before any data line is looked at.

The notes about dropped lines (line number and reason, never a value) are for
the data owner's log; nothing here is released.
"""

from __future__ import annotations

import csv
import gzip
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ._exceptions import DataValidationError
from ._schema import Schema

__all__ = ["MAX_LINE_CHARS", "PARQUET_SUFFIXES", "TextTable", "read_table"]

PARQUET_SUFFIXES = (".parquet", ".pq")

MAX_LINE_CHARS = 1 << 20
"""Longest data line kept (1,048,576 characters): longer lines are dropped, whatever they hold."""

_BOM = b"\xef\xbb\xbf"


@dataclass(frozen=True, eq=False)
class TextTable:
    """Rows of a text file, every cell a string.

    Attributes
    ----------
    X : DataFrame
        The feature columns (and declared ignored columns), cells as ``str``.
    y : Series
        The label column, cells as ``str``.
    line_numbers : ndarray of int
        1-based line number in the file of each kept row (for the owner's log).
    dropped : list of str
        One note per dropped line: its number and why (never its content).
    """

    X: pd.DataFrame
    y: pd.Series
    line_numbers: np.ndarray
    dropped: list[str]


def _split_line(text: str, sep: str) -> list[str] | None:
    """Fields of one line, or None when the line is malformed (open quote, stray quote)."""
    if '"' not in text:
        return text.split(sep)
    try:
        rows = list(csv.reader([text], delimiter=sep, quotechar='"', doublequote=True, strict=True))
    except csv.Error:
        return None
    return rows[0] if len(rows) == 1 else None


def _read_bytes(path: Path) -> bytes:
    if not path.is_file():
        raise ValueError(f"data file {path} does not exist or is not a regular file")
    try:
        data = path.read_bytes()
        if path.suffix == ".gz":
            data = gzip.decompress(data)
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise ValueError(f"cannot read data file {path}: {type(exc).__name__}") from None
    return data.removeprefix(_BOM)


def _header_names(schema: Schema, first: str | None, sep: str, header: bool, path: Path) -> list[str]:
    label = schema.label.column
    if not header:
        return [*schema.feature_names, label]
    names = _split_line(first, sep) if first is not None else None
    if not names:
        raise ValueError(f"{path}: the first line must be a header naming the columns")
    names = [n.strip() for n in names]
    if len(set(names)) != len(names):
        raise DataValidationError(f"{path}: the header names a column twice")
    if label not in names:
        raise DataValidationError(f"{path}: label column {label!r} is missing from the header")
    missing = [n for n in schema.feature_names if n not in names]
    if missing:
        raise DataValidationError(f"{path}: missing columns {missing}; the schema declares {list(schema.feature_names)}")
    known = set(schema.feature_names) | set(schema.ignored_columns) | {label}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise DataValidationError(f"{path}: unknown columns {unknown}: declare them in the schema as features "
                                  f"or ignored_columns")
    return names


def read_table(path: str | Path, schema: Schema, *, sep: str = ",", header: bool = True,
               max_line_chars: int = MAX_LINE_CHARS) -> TextTable:
    """Read a delimited text file (optionally gzip-compressed) under the per-record rules.

    Parameters
    ----------
    path : path of the file (``.gz`` is decompressed)
    schema : the public schema (column names, label column)
    sep : str, default ","
        One-character field separator.
    header : bool, default True
        Whether the first non-blank line names the columns.  Without a header
        the columns must be the schema's features in order, then the label.
    max_line_chars : int, default 1,048,576
        Longer lines are dropped.

    Privacy cost: none.  The map from a line to a row (or to "dropped") depends
    on that line only, so the rows read from neighbouring files are
    neighbouring (a stable transformation).  Raises ``ValueError`` /
    :class:`DataValidationError` for file-level problems only.
    """
    if not isinstance(sep, str) or len(sep) != 1 or sep in '"\r\n':
        raise ValueError(f"sep must be one character other than a quote or a line break, got {sep!r}")
    p = Path(path)
    if p.suffix.lower() in PARQUET_SUFFIXES:
        return _read_parquet(p, schema)
    lines = _read_bytes(p).decode("utf-8", errors="replace").split("\n")
    start = 0
    first = None
    if header:
        while start < len(lines) and not lines[start].strip():
            start += 1
        if start < len(lines):
            first = lines[start].removesuffix("\r")
            start += 1
    names = _header_names(schema, first, sep, header, p)
    width = len(names)
    rows: list[list[str]] = []
    numbers: list[int] = []
    dropped: list[str] = []
    for number, line in enumerate(lines[start:], start=start + 1):
        line = line.removesuffix("\r")
        if not line.strip():
            continue
        if len(line) > max_line_chars:
            dropped.append(f"line {number}: longer than {max_line_chars} characters")
            continue
        fields = _split_line(line, sep)
        if fields is None:
            dropped.append(f"line {number}: unbalanced quotes")
        elif len(fields) != width:
            dropped.append(f"line {number}: {len(fields)} fields, expected {width}")
        else:
            rows.append(fields)
            numbers.append(number)
    cells = np.empty((len(rows), width), dtype=object)
    if rows:
        cells[:] = rows
    frame = pd.DataFrame(cells, columns=names, dtype=object)
    label = schema.label.column
    return TextTable(X=frame.drop(columns=[label]), y=frame[label], line_numbers=np.asarray(numbers, dtype=np.int64),
                     dropped=dropped)


def _read_parquet(path: Path, schema: Schema) -> TextTable:
    """A Parquet file: cells keep the types the file declares (no inference here), one row per record."""
    try:
        import pyarrow.parquet as pq
    except ImportError:  # pragma: no cover - pyarrow is a dependency
        raise ValueError("reading Parquet needs the pyarrow package") from None
    if not path.is_file():
        raise ValueError(f"data file {path} does not exist or is not a regular file")
    try:
        table = pq.read_table(path)
    except (OSError, ValueError) as exc:
        raise ValueError(f"cannot read Parquet file {path}: {type(exc).__name__}") from None
    names = _header_names(schema, ",".join(table.column_names), ",", True, path)
    columns = {name: pd.Series(table.column(name).to_pylist(), dtype=object) for name in names}
    frame = pd.DataFrame(columns) if columns else pd.DataFrame()
    label = schema.label.column
    return TextTable(X=frame.drop(columns=[label]), y=frame[label],
                     line_numbers=np.arange(1, len(frame) + 1, dtype=np.int64), dropped=[])
