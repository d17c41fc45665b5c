"""Read a delimited text file one line at a time: every row's fate depends on that row only.

Why not :func:`pandas.read_csv`
-------------------------------
Parsing is part of the mechanism: the guarantee compares datasets that differ
in one record, so reading a record must not depend on the other records
(``docs/privacy.md``, "Threat model").  pandas
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

import gzip
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv

from ._cell_text import TEXT_DTYPE as _TEXT_DTYPE
from ._column_names import misspelling_hint
from ._exceptions import DataValidationError
from ._file_lines import BOM as _BOM
from ._file_lines import decoded as _decoded
from ._file_lines import header_line, line_blocks, open_lines
from ._first_line import foreign_header_text, looks_like_data, names_line, schema_column_named
from ._first_line import split_line as _split_line
from ._schema import Schema

__all__ = [
    "MAX_LINE_CHARS",
    "PARQUET_SUFFIXES",
    "OptionHints",
    "TextColumns",
    "TextTable",
    "read_columns",
    "read_named_columns",
    "read_table",
]

_T = TypeVar("_T")

PARQUET_SUFFIXES = (".parquet", ".pq")

MAX_LINE_CHARS = 1 << 20
"""Longest data line kept (1,048,576 characters): longer lines are dropped, whatever they hold."""


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


@dataclass(frozen=True, eq=False)
class TextColumns:
    """Rows of a text file as Arrow text columns (what :func:`read_table` puts in a frame).

    Attributes
    ----------
    columns : dict of str to pyarrow.ChunkedArray
        Every column of the file in its order (the label's too), cells as text.  The caller may take
        columns out (``pop``) to let their text go once it is done with them.
    line_numbers : ndarray of int
        1-based line number in the file of each kept row (for the owner's log).
    dropped : list of str
        One note per dropped line: its number and why (never its content).
    """

    columns: dict[str, pa.ChunkedArray]
    line_numbers: np.ndarray
    dropped: list[str]


@dataclass(frozen=True)
class OptionHints:
    """How the reader's caller sets its options, for the hints of a first line that does not read as the header.

    The reader does not know who calls it: the ``edprf`` commands take flags, a deployed party its node
    config.  Each text completes a hint such as "if the file has no header, <no_header>".

    Attributes
    ----------
    no_header : str, default "pass --no-header"
        What reads a file without a header line.
    separator : str, default "pass --sep '{sep}'"
        What reads a file with the separator ``{sep}`` (replaced with the one the first line holds).
    tab : str, default "pass --sep $'\\t'"
        What reads a file whose separator is a tab.
    """

    no_header: str = "pass --no-header"
    separator: str = "pass --sep '{sep}'"
    tab: str = "pass --sep $'\\t'"


def refuse_a_first_line_that_is_no_header(
    first: str, sep: str, schema: Schema, hint: str, path: Path, hints: OptionHints | None = None
) -> None:
    """Raise :class:`DataValidationError` (naming ``path``) when the first line, split well by ``sep``, is not a
    header of ``schema``: another table's header (:func:`foreign_header_text`), or a row of data
    (``hint``, :func:`header_hint`'s, is not empty: the file has no header).  Said before "a column twice", which
    a row of data often is.  The two readers (:func:`header_names`, the streamed reader) share it."""
    if separator_hint(first, sep, hints):
        return
    if foreign := foreign_header_text(first, sep, schema, (hints or OptionHints()).no_header):
        raise DataValidationError(f"{path}: {foreign}")
    if hint:
        raise DataValidationError(f"{path}: the first line is not a header of this schema{hint}")


def header_names(
    schema: Schema, first: str | None, sep: str, header: bool, path: Path, hints: OptionHints | None = None
) -> list[str]:
    """The column names of a table whose first line is ``first``, checked against ``schema``.

    With ``header=False`` the columns are the schema's features then its label.  Raises
    :class:`DataValidationError` (naming ``path``) for a repeated, missing or undeclared column, and
    ``ValueError`` when the first line is not a header; their hints name the options as ``hints`` words
    them (the ``edprf`` flags by default).  Reads nothing but the header line.
    """
    label = schema.label.column
    if not header:
        return [*schema.feature_names, label]
    names = _split_line(first, sep) if first is not None else None
    hint = header_hint(first, sep, schema, hints)
    if not names:
        raise ValueError(f"{path}: the first line must be a header naming the columns{hint}")
    names = [n.strip() for n in names]
    known = [*schema.feature_names, *schema.ignored_columns, label]
    refuse_a_first_line_that_is_no_header(first, sep, schema, hint, path, hints)
    if len(set(names)) != len(names):
        raise DataValidationError(f"{path}: the header names a column twice{hint}")
    unknown = [n for n in names if n not in known]
    if label not in names:
        spelt = misspelling_hint(unknown, [label], "the header")
        raise DataValidationError(f"{path}: label column {label!r} is missing from the header{spelt}{hint}")
    missing = [n for n in schema.feature_names if n not in names]
    if missing:
        spelt = misspelling_hint(unknown, missing, "the header")
        raise DataValidationError(
            f"{path}: missing columns {missing}; the schema declares {list(schema.feature_names)}{spelt}{hint}"
        )
    if unknown:
        spelt = misspelling_hint(unknown, [n for n in known if n not in names], "the header")
        raise DataValidationError(
            f"{path}: unknown columns {unknown}: declare them in the schema as features or ignored_columns{spelt}"
        )
    return names


_OTHER_SEPARATORS = (",", ";", "\t", "|")


def separator_hint(line: str, sep: str, hints: OptionHints | None = None) -> str:
    """A hint naming another separator ``line`` (a header) holds, the most frequent; ``""`` when it holds none.

    ``hints`` words how to choose it (default: the ``edprf`` flag ``--sep``).
    """
    held = [c for c in _OTHER_SEPARATORS if c != sep and c in line]
    if not held:
        return ""
    hints = hints or OptionHints()
    c = max(held, key=line.count)
    fix = hints.tab if c == "\t" else hints.separator.format(sep=c)
    return f" (the first line holds {c!r}: is that the separator? {fix})"


def header_hint(first: str | None, sep: str, schema: Schema, hints: OptionHints | None = None) -> str:
    """A hint for a first line that does not read as the schema's header: another separator it holds, or
    that the file may have no header (none of the schema's columns in it, and the line looks like data:
    :func:`~edprf_core._first_line.looks_like_data`); ``""`` when neither applies (another table's header gets
    :func:`~edprf_core._first_line.foreign_header_text` instead).

    ``hints`` words the options to set (default: the ``edprf`` flags ``--sep`` and ``--no-header``).
    """
    if not first:
        return ""
    hints = hints or OptionHints()
    if held := separator_hint(first, sep, hints):
        return held
    if not schema_column_named(first, sep, schema) and looks_like_data(first, sep, schema):
        return f" (none of the schema's columns is in the first line: if the file has no header, {hints.no_header})"
    return ""


def check_separator(sep: object) -> None:
    """Refuse a field separator that is not one character, or is a quote or a line break (every reader's rule)."""
    if not isinstance(sep, str) or len(sep) != 1 or sep in '"\r\n':
        raise ValueError(f"sep must be one character other than a quote or a line break, got {sep!r}")


def read_table(
    path: str | Path,
    schema: Schema,
    *,
    sep: str = ",",
    header: bool = True,
    max_line_chars: int = MAX_LINE_CHARS,
    hints: OptionHints | None = None,
) -> TextTable:
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
    hints : OptionHints, optional
        How the caller's user sets ``sep`` and ``header``, for the hint of a header that does not read
        (default: the ``edprf`` flags ``--sep`` and ``--no-header``).

    Returns
    -------
    TextTable
        Columns of pandas' ``str`` dtype, held by Arrow (every cell is text).

    Notes
    -----
    Privacy cost: none.  The map from a line to a row (or to "dropped") depends
    on that line only, so the rows read from neighbouring files are
    neighbouring (a stable transformation).  Raises ``ValueError`` /
    :class:`DataValidationError` for file-level problems only.

    Speed without coupling: a line that plainly meets the rules (no quote, no
    carriage return but a final one, no byte-order mark at its start, at most
    ``max_line_chars`` bytes, exactly one separator fewer than the header's
    fields, visible characters, an ASCII separator) is split
    by Arrow's CSV parser with quoting, type inference and null values turned
    off, which then splits exactly like ``str.split(sep)``.  Every other line
    goes through :func:`_line_fields` alone, the rules written out in Python.
    (Arrow's parser checks the number of fields of every line it gets and refuses
    its whole input if one is off; only then are the separators counted line by
    line, and the lines with another count go the Python way.)
    Which way a line goes is decided from its own bytes, so both ways give each
    line the fate the rules give it alone.  Lines are read in blocks of about
    :data:`_BLOCK_BYTES` (cut after a line break: no line is split).  A block
    in which every line is plain, shown without locating its lines (no quote,
    carriage return or byte-order mark in it; the parser accepts it whole; no
    row is empty or too long), is read whole (``_Lines.whole_block``); any
    other block line by line as above.
    """
    check_separator(sep)
    p = Path(path)
    if p.suffix.lower() in PARQUET_SUFFIXES:
        return _read_parquet(p, schema)
    read = read_columns(p, schema, sep=sep, header=header, max_line_chars=max_line_chars, hints=hints)
    frame = pd.DataFrame({name: pd.Series(column, dtype=_TEXT_DTYPE) for name, column in read.columns.items()})
    label = schema.label.column
    return TextTable(
        X=frame.drop(columns=[label]), y=frame[label], line_numbers=read.line_numbers, dropped=read.dropped
    )


def check_table_header(
    path: str | Path, schema: Schema, *, sep: str = ",", header: bool = True, hints: OptionHints | None = None
) -> None:
    """:func:`read_table`'s file-level checks, reading the header line at most: the file is there and readable, and
    (a text file with a header) its first non-blank line, or (Parquet) its footer's column names, name the schema's
    columns (:func:`header_names`).

    Raises what :func:`read_table` raises for those problems (``ValueError``, :class:`DataValidationError`); a file
    that passes may still fail later in its rows' blocks (a broken gzip stream), which the reader then raises.
    Privacy cost: none; neither the verdict nor its time depends on the rows.
    """
    check_separator(sep)
    p = Path(path)
    if p.suffix.lower() in PARQUET_SUFFIXES:
        import pyarrow.parquet as pq

        names = _parquet(p, pq.read_schema).names  # the footer only: its column names, as _read_parquet checks them
        header_names(schema, names_line(names), ",", True, p)
        return
    with open_lines(p) as handle:
        try:
            first = header_line(handle)[1] if header else None
        except (OSError, EOFError, gzip.BadGzipFile) as exc:
            raise ValueError(f"cannot read data file {p}: {type(exc).__name__}") from None
    header_names(schema, first, sep, header, p, hints)


def read_columns(
    path: str | Path,
    schema: Schema,
    *,
    sep: str = ",",
    header: bool = True,
    max_line_chars: int = MAX_LINE_CHARS,
    hints: OptionHints | None = None,
    large: bool = True,
) -> TextColumns:
    """:func:`read_table`'s rows of a delimited text file (not Parquet) as Arrow text columns, by the same rules.

    ``large``: the columns are Arrow's ``large_string`` (as pandas holds text); without, ``string``, whose chunks
    (one or a few per block of the file) hold their cells' offsets in 4 bytes instead of 8: a third less memory
    for a file of short cells, the same texts.

    Privacy cost: none (reads the caller's own file; a row's fate depends on that row alone, as in :func:`read_table`).
    """
    check_separator(sep)
    p = Path(path)

    def checked(first: str | None) -> list[str]:
        return header_names(schema, first, sep, header, p, hints)

    return _read_lines(p, checked, sep=sep, header=header, max_line_chars=max_line_chars, large=large)


def read_named_columns(
    path: str | Path,
    names: list[str] | None = None,
    *,
    sep: str = ",",
    max_line_chars: int = MAX_LINE_CHARS,
    large: bool = True,
) -> TextColumns:
    """:func:`read_columns` without a schema: the columns the first line names (stripped), or ``names``.

    For ``edprf schema draft``, which reads a file before any schema exists: its rows are the rows a party
    keeps under the same rules (a line longer than ``max_line_chars``, with an unbalanced quote or another
    number of fields than the header's is dropped and noted, never read as a cell).

    Parameters
    ----------
    path : path of the file (``.gz`` is decompressed)
    names : list of str, optional
        The file has no header line and these are its columns, in order; by default the first non-blank
        line names them.
    sep, max_line_chars, large
        As for :func:`read_columns`.

    Returns
    -------
    TextColumns
        Every column, keyed by its name stripped of whitespace.

    Raises
    ------
    ValueError
        The file cannot be read, has no header line, or its header line is malformed or names a column twice
        or not at all (an empty name).

    Notes
    -----
    Privacy cost: none (reads the caller's own file; a row's fate depends on that row alone).
    """
    check_separator(sep)
    p = Path(path)

    def named(first: str | None) -> list[str]:
        if names is not None:
            return list(names)
        fields = _split_line(first, sep) if first is not None else None
        if not fields:  # none, or malformed (quotes around names that another separator splits)
            hint = separator_hint(first, sep) if first is not None else ""
            raise ValueError(f"{p}: the first line must be a header naming the columns{hint}")
        stripped = [f.strip() for f in fields]
        if len(set(stripped)) != len(stripped) or not all(stripped):
            raise ValueError(f"{p}: the header names a column twice, or leaves a column unnamed (an empty name)")
        return stripped

    return _read_lines(p, named, sep=sep, header=names is None, max_line_chars=max_line_chars, large=large)


def _read_lines(
    p: Path,
    names_of: Callable[[str | None], list[str]],
    *,
    sep: str,
    header: bool,
    max_line_chars: int,
    large: bool,
) -> TextColumns:
    """The rows of ``p`` under the per-record rules, in columns named by ``names_of(first line)`` (``None``
    without a header)."""
    text = pa.large_string() if large else pa.string()
    pieces: list[tuple[list[pa.ChunkedArray], np.ndarray]] = []
    names, dropped = read_blocks(
        p, names_of, sep=sep, header=header, max_line_chars=max_line_chars, large=large, take=pieces.append
    )
    columns = {
        name: pa.chunked_array([chunk for piece in pieces for chunk in piece[0][j].chunks], text)
        for j, name in enumerate(names)
    }
    numbers = np.concatenate([piece[1] for piece in pieces]) if pieces else np.empty(0, dtype=np.int64)
    return TextColumns(columns, numbers, dropped)


def read_blocks(
    p: Path,
    names_of: Callable[[str | None], list[str]],
    *,
    sep: str,
    header: bool,
    max_line_chars: int,
    large: bool,
    take: Callable[[tuple[list[pa.ChunkedArray], np.ndarray]], object],
) -> tuple[list[str], list[str]]:
    """Read ``p`` block by block under the per-record rules, handing each block's rows to ``take`` as they are read.

    ``take`` gets ``(columns, line_numbers)``: one Arrow text column per name (in the order of ``names_of(first
    line)``, ``None`` without a header) and the file's line number of each row.  What it keeps is up to it: a
    reader that keeps less than the text (:mod:`edprf_core._numbered_text`) lets each block's text go once it is
    done with it.  Returns the column names and the notes on the dropped lines.

    Privacy cost: none.  Which lines a block holds changes nothing a line gets (:func:`read_table`'s notes).
    """
    text = pa.large_string() if large else pa.string()
    with open_lines(p) as handle:
        try:
            number, first = header_line(handle) if header else (0, None)
            names = names_of(first)
            reader = _Lines(sep, len(names), max_line_chars, text)
            first_number = number + 1
            for source, start, end in line_blocks(handle, number == 0, _BLOCK_BYTES):
                take(reader.read(memoryview(source)[start:end], first_number, source, start))
                first_number += reader.line_breaks
        except (OSError, EOFError, gzip.BadGzipFile) as exc:
            raise ValueError(f"cannot read data file {p}: {type(exc).__name__}") from None
    return names, reader.dropped


UNBALANCED_QUOTES = "unbalanced quotes"
"""The readers' reason for a line whose quoted cell does not close on that line (a note on a dropped line)."""

_BLOCK_BYTES = 1 << 22
"""Bytes of lines read from the file at a time (4 MiB; a longer line makes its block longer)."""

_ASCII_WHITESPACE = np.array([c for c in range(128) if chr(c).isspace()], dtype=np.uint8)


def _line_fields(line: str, sep: str, width: int, max_line_chars: int) -> list[str] | str | None:
    """The rules for one line (after decoding): its fields, a note on why it is dropped, or None when blank."""
    if not line.strip():
        return None
    if len(line) > max_line_chars:
        return f"longer than {max_line_chars} characters"
    fields = _split_line(line, sep)
    if fields is None:
        return UNBALANCED_QUOTES
    if len(fields) != width:
        return f"{len(fields)} fields, expected {width}"
    return fields


def _line_counts(flags: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """How many flagged bytes each line holds (a line runs from its start to the next line's start)."""
    return np.add.reduceat(flags.view(np.uint8), starts, dtype=np.int32 if flags.size < 2**31 else np.int64)


@dataclass(frozen=True, eq=False)
class PlainLines:
    """The lines of a block and which of them plainly meet the rules (see :func:`read_table`'s notes)."""

    buf: np.ndarray
    """The block's bytes."""
    starts: np.ndarray
    """Where each line starts in the block."""
    ends: np.ndarray
    """Where each line ends (its line break, or the block's end)."""
    plain: np.ndarray
    """Per line: no quote, no carriage return but a final one, no byte-order mark at its start, at most
    ``max_line_chars`` bytes, not empty; with a whitespace separator, at least one visible ASCII character.
    (The number of separators is not checked here.)"""
    line_breaks: int
    """Line breaks in the block."""


def plain_lines(block: memoryview, source: bytes, offset: int, sep: str, max_line_chars: int) -> PlainLines:
    """The lines of ``block`` (``source[offset:offset + len(block)]``, whole lines) and which are plain.

    Which way a line goes is decided from its own bytes alone.
    """

    def occurs(byte: int) -> bool:  # bytes.find: a quick look for a byte that is usually absent
        return source.find(bytes((byte,)), offset, offset + len(block)) >= 0

    buf = np.frombuffer(block, dtype=np.uint8)
    breaks = np.flatnonzero(buf == 10)
    starts = np.concatenate(([0], breaks + 1))
    if starts[-1] == len(buf):  # the block ends with a line break: no line after it
        starts = starts[:-1]
    ends = np.append(breaks, len(buf))[: len(starts)]
    has_cr = occurs(13)
    content_end = ends - ((ends > starts) & (buf[np.maximum(ends - 1, 0)] == 13)) if has_cr else ends
    plain = (content_end > starts) & ((content_end - starts) <= max_line_chars)  # bytes >= characters
    # Arrow's parser drops a byte-order mark that starts its input: a line that starts with one is not plain
    # (looked for where its first byte occurs, usually nowhere: the same lines as checking every line start)
    at = np.flatnonzero(buf[: max(len(buf) - 2, 0)] == _BOM[0]) if occurs(_BOM[0]) else np.empty(0, np.intp)
    at = at[(buf[at + 1] == _BOM[1]) & (buf[at + 2] == _BOM[2])]
    if at.size:
        line = np.minimum(np.searchsorted(starts, at), len(starts) - 1)
        plain[line[starts[line] == at]] = False
    for byte, present in ((34, occurs(34)), (13, has_cr)):  # a quote anywhere, or a carriage return before the end
        at = np.flatnonzero(buf == byte) if present else None
        if at is not None and at.size:
            line = np.searchsorted(breaks, at)
            plain[line[at < content_end[line]]] = False
    if sep.isspace():  # a line of separators and spaces only is blank: without a visible ASCII
        plain &= visible_lines(buf, starts)  # character, the rules decide it
    return PlainLines(buf, starts, ends, plain, int(breaks.size))


def visible_lines(buf: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Per line, whether it holds a visible ASCII character (a line without one may be blank)."""
    solid = (buf < 128) & ~np.isin(buf, _ASCII_WHITESPACE)
    return _line_counts(solid, starts) > 0


class _Lines:
    """Reads blocks of lines under the per-line rules; collects the notes on dropped lines."""

    def __init__(self, sep: str, width: int, max_line_chars: int, text: pa.DataType | None = None) -> None:
        self.sep, self.width, self.max_line_chars = sep, width, max_line_chars
        self.text = pa.large_string() if text is None else text
        """The Arrow type of the cells: ``large_string`` (default) or ``string``."""
        self.dropped: list[str] = []
        self.line_breaks = 0
        """Line breaks in the block last read (the next block's first line number follows from it)."""
        self._options = None
        if sep.isascii():
            names = [f"c{j}" for j in range(width)]
            self._options = (
                pcsv.ParseOptions(
                    delimiter=sep,
                    quote_char=False,
                    double_quote=False,
                    escape_char=False,
                    newlines_in_values=False,
                    ignore_empty_lines=False,
                ),
                *(
                    pcsv.ConvertOptions(
                        column_types={n: self.text for n in names},
                        strings_can_be_null=False,
                        quoted_strings_can_be_null=False,
                        null_values=[],
                        check_utf8=check,
                    )
                    for check in (True, False)
                ),
                names,
            )

    def read(
        self, block: memoryview, first_number: int, source: bytes, offset: int
    ) -> tuple[list[pa.ChunkedArray], np.ndarray]:
        """The rows of one block, ``source[offset:offset + len(block)]`` (one Arrow string array per column), and
        their line numbers."""
        if self._options is None:
            raw = bytes(block)
            self.line_breaks = raw.count(b"\n")
            return self._python(raw, first_number)
        whole = self.whole_block(block, first_number, source, offset)
        if whole is not None:
            return whole
        lines = plain_lines(block, source, offset, self.sep, self.max_line_chars)
        buf, starts, ends, plain = lines.buf, lines.starts, lines.ends, lines.plain
        self.line_breaks = lines.line_breaks
        numbers = first_number + np.arange(len(starts), dtype=np.int64)
        # Optimistic first: Arrow's parser checks every line's number of fields and refuses the whole input
        # if one is off; only then are the separators counted line by line (the same lines end up plain).
        columns = self.plain_columns(block, starts, ends, plain)
        if columns is None:
            plain &= _line_counts(buf == ord(self.sep), starts) == self.width - 1
            columns = self.plain_columns(block, starts, ends, plain)
        if columns is None:  # Arrow refused the plain lines: the Python rules read them (never the file fails)
            plain[:] = False
            columns = [pa.chunked_array([], self.text) for _ in range(self.width)]
        others = np.flatnonzero(~plain)
        if not others.size:
            return columns, numbers
        rows, kept = [], []
        for i in others:
            fate = _line_fields(_decoded(bytes(block[starts[i] : ends[i]])), self.sep, self.width, self.max_line_chars)
            if isinstance(fate, list):
                rows.append(fate)
                kept.append(i)
            elif fate is not None:
                self.dropped.append(f"line {numbers[i]}: {fate}")
        return _merged(columns, numbers[plain], rows, numbers[kept], self.text)

    def whole_block(
        self, block: memoryview, first_number: int, source: bytes, offset: int
    ) -> tuple[list[pa.ChunkedArray], np.ndarray] | None:
        """The rows of a block whose every line is plain with the header's number of fields, read by Arrow's
        parser at once without locating its lines first; None when that cannot be shown (the caller reads the
        block line by line).

        Shown from the block's bytes and from what the parser accepts: no quote, no carriage return and no
        byte-order mark anywhere; the parser, which refuses its whole input when a line has another number of
        fields than the header's (two or more), accepted every line, so its rows are the block's lines in order;
        every row holds a character (the parser reads an empty line as a row of empty cells); and no row (its
        cells and separators) is longer than ``max_line_chars``.  Each of these is a property of every single
        line, so a line read this way is read as the rules read it alone.
        """
        end = offset + len(block)
        if (
            self.width < 2
            or self.sep.isspace()
            or not len(block)
            or source.find(b'"', offset, end) >= 0
            or source.find(b"\r", offset, end) >= 0
            or (source.find(_BOM[:1], offset, end) >= 0 and source.find(_BOM, offset, end) >= 0)
        ):
            return None
        # blocks of the parser sized for lines within the limit (a longer line is found below, by its cells)
        columns = self._parsed(block, self.max_line_chars)
        if columns is None:
            return None
        rows = len(columns[0])
        # the parser reads an empty line as a row of empty cells: a row without a character is left to the rules
        # (it may also be a line of separators alone), and so is a row longer than the limit
        cells = np.zeros(rows, dtype=np.int64)
        for column in columns:
            cells += pc.binary_length(column).to_numpy()
        if rows and (int(cells.min()) == 0 or int(cells.max()) + self.width - 1 > self.max_line_chars):
            return None
        self.line_breaks = rows - (0 if block[-1:] == b"\n" else 1)
        return columns, first_number + np.arange(rows, dtype=np.int64)

    def plain_columns(
        self, block: memoryview, starts: np.ndarray, ends: np.ndarray, plain: np.ndarray
    ) -> list[pa.ChunkedArray] | None:
        """Arrow's CSV parser on the plain lines (copied together unless every line is plain); None if it fails."""
        if plain.all():
            data = block
        else:
            edges = np.flatnonzero(np.diff(np.concatenate(([0], plain.view(np.int8), [0]))))
            stops = np.append(starts, len(block))
            data = b"".join(block[stops[a] : stops[b]] for a, b in zip(edges[::2], edges[1::2]))
        longest = int(np.max(ends[plain] - starts[plain])) if plain.any() else 0
        return self._parsed(data, longest)

    def _parsed(self, data: bytes | memoryview, longest: int) -> list[pa.ChunkedArray] | None:
        """Arrow's CSV parser on ``data``, lines of at most ``longest`` bytes; None if it refuses them."""
        parse, checked, unchecked, names = self._options
        if not len(data):
            return [pa.chunked_array([], self.text) for _ in names]
        # bytes below 128 are ASCII, valid UTF-8 byte for byte: Arrow's UTF-8 check (a third of its time) could only
        # pass, so it is skipped; any other byte keeps the check (and the replacement-character route below)
        convert = unchecked if int(np.frombuffer(data, dtype=np.uint8).max()) < 128 else checked
        options = pcsv.ReadOptions(column_names=names, block_size=int(min(max(1 << 20, 2 * longest + 16), 1 << 30)))
        try:
            table = pcsv.read_csv(
                pa.BufferReader(pa.py_buffer(data)), read_options=options, parse_options=parse, convert_options=convert
            )
        except pa.ArrowInvalid:  # another number of fields, or invalid UTF-8 (read with replacement characters)
            fixed = bytes(data).decode("utf-8", errors="replace").encode("utf-8")
            if fixed == bytes(data):  # valid UTF-8: the number of fields was off somewhere
                return None
            try:
                table = pcsv.read_csv(
                    pa.BufferReader(pa.py_buffer(fixed)),
                    read_options=options,
                    parse_options=parse,
                    convert_options=convert,
                )
            except pa.ArrowInvalid:
                return None
        return [table.column(j) for j in range(len(names))]

    def _python(self, block: bytes, first_number: int) -> tuple[list[pa.ChunkedArray], np.ndarray]:
        """Every line of a block through the Python rules (a separator that is not ASCII)."""
        rows, numbers = [], []
        lines = block.split(b"\n")
        if block.endswith(b"\n"):
            lines.pop()  # the block ends with a line break: no line after it
        for k, line in enumerate(lines):
            fate = _line_fields(_decoded(line), self.sep, self.width, self.max_line_chars)
            if isinstance(fate, list):
                rows.append(fate)
                numbers.append(first_number + k)
            elif fate is not None:
                self.dropped.append(f"line {first_number + k}: {fate}")
        empty = [pa.chunked_array([], self.text) for _ in range(self.width)]
        return _merged(empty, np.empty(0, dtype=np.int64), rows, np.asarray(numbers, dtype=np.int64), self.text)


def _merged(
    columns: list[pa.ChunkedArray],
    numbers: np.ndarray,
    rows: list[list[str]],
    row_numbers: np.ndarray,
    text: pa.DataType,
) -> tuple[list[pa.ChunkedArray], np.ndarray]:
    """Arrow's rows and the Python-read rows together, in line order."""
    if not rows:
        return columns, numbers
    all_numbers = np.concatenate([numbers, np.asarray(row_numbers, dtype=np.int64)])
    order = pa.array(np.argsort(all_numbers, kind="stable"))
    merged = [
        pa.chunked_array([*column.chunks, pa.array([r[j] for r in rows], type=text)], text).take(order)
        for j, column in enumerate(columns)
    ]
    return merged, np.sort(all_numbers, kind="stable")


def _parquet(path: Path, read: Callable[[Path], _T]) -> _T:
    """``read(path)`` of a Parquet file (its footer, or the whole table), with the reader's errors: no such regular
    file, or one Parquet cannot read (named by the exception's type alone, never its text)."""
    if not path.is_file():
        raise ValueError(f"data file {path} does not exist or is not a regular file")
    try:
        return read(path)
    except (OSError, ValueError) as exc:
        raise ValueError(f"cannot read Parquet file {path}: {type(exc).__name__}") from None


def _read_parquet(path: Path, schema: Schema) -> TextTable:
    """A Parquet file: cells keep the types the file declares (no inference here), one row per record.

    The footer's column names are checked first (:func:`header_names`: every column of the file is the label, a
    feature or a declared ignored one, so every column is read).  Each column then keeps Arrow's or numpy's form
    where every cell reads as the Python object ``to_pylist`` gives it (:func:`_parquet_cells`): a row's
    verdicts, codes and side of the split are those of that object column, without a Python object per cell
    (10^6 rows x 51 columns: 3.5 GB and 37 s as objects).
    """
    try:
        import pyarrow.parquet as pq
    except ImportError:  # pragma: no cover - pyarrow is a dependency
        raise ValueError("reading Parquet needs the pyarrow package") from None
    written_names = _parquet(path, pq.read_schema).names  # the footer: a file whose names do not read is not read
    names = header_names(schema, names_line(written_names), ",", True, path)
    table = _parquet(path, pq.read_table)
    written = {name.strip(): name for name in table.column_names}  # header_names reads the names stripped
    columns = {name: table.column(written[name]) for name in names}
    rows = table.num_rows
    del table  # each Arrow column goes once it is converted (the numbers are copied into numpy)
    cells = {name: _parquet_cells(columns.pop(name)) for name in names}
    # copy=False: the frame holds the columns as they are (pandas would copy the numbers into one 2-D block)
    frame = pd.DataFrame(cells, index=pd.RangeIndex(rows), copy=False)
    del cells
    pa.default_memory_pool().release_unused()  # the pages Arrow's allocator kept from the decoded numbers
    label = schema.label.column
    return TextTable(
        X=frame.drop(columns=[label]),
        y=frame[label],
        line_numbers=np.arange(1, rows + 1, dtype=np.int64),
        dropped=[],
    )


def _parquet_cells(column: pa.ChunkedArray) -> pd.Series:
    """One Parquet column as a Series whose every cell reads, under the schema's rules, as the Python object
    ``to_pylist`` gives it (what this reader gave before: a ``str``, ``int``, ``float``, ``bool`` or None).

    The form depends on the column's declared type, and for integers and booleans on whether it holds a null;
    neither decides what a cell reads as, only how fast it is read (:mod:`edprf_core._encoding` reads a cell
    alike in every dtype, the point of its per-record map).  Proven cell by cell against the object column in
    ``tests/core/test_parquet_cells_read_as_python_objects.py``:

    - text (``string``, ``large_string``) and a dictionary of text: pandas' ``str`` held by Arrow, as a CSV
      file's cells (a null is missing, as None is);
    - floating point (16 to 64 bits): float64 in numpy, a null as NaN (the widening is exact, and ``to_pylist``
      gives the same double; NaN and None are both missing, and ``str`` of a missing cell is never compared);
    - integers (8 to 64 bits, signed or not) and booleans without a null: numpy's own dtype (``str`` of a cell
      and its float are those of the Python ``int``/``bool``);
    - any other column, and integers or booleans with a null, stays Python objects (the previous path, for
      that column only): numpy has no integer or boolean with a missing value, floats would spell ``1`` as
      ``1.0`` for a text category, and pandas' nullable dtypes read their missing cell as ``pd.NA`` in places.
      So are decimals, dates, times, timestamps, durations, binary, nulls and nested values: their objects
      (``Decimal``, ``datetime``, ``bytes``) have no numpy form that reads alike.
    """
    kind = column.type
    if pa.types.is_dictionary(kind):  # a categorical column: its cells are its dictionary's values
        column, kind = column.cast(kind.value_type), kind.value_type
    if pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_string_view(kind):
        if not _valid_text(column):
            # bytes that are not UTF-8 in some cell (a Parquet writer does not check them): each cell decoded on its
            # own, such bytes read as U+FFFD, as the CSV reader decodes a line, so that one record's bytes decide
            # that record's cells only (to_pylist refused the whole file: the party's reply then told of one record)
            raw = column.cast(pa.large_binary()).to_pylist()
            return pd.Series([None if b is None else b.decode("utf-8", "replace") for b in raw], dtype=_TEXT_DTYPE)
        return pd.Series(
            column if not pa.types.is_string_view(kind) else column.cast(pa.large_string()), dtype=_TEXT_DTYPE
        )
    if pa.types.is_floating(kind):
        return pd.Series(column.cast(pa.float64()).to_numpy(), dtype=np.float64, copy=False)  # a null: NaN
    if (pa.types.is_integer(kind) or pa.types.is_boolean(kind)) and column.null_count == 0:
        return pd.Series(column.to_numpy(), copy=False)  # a view of a lone chunk, else a new array: no copy here
    return _python_cells(column)


UNREADABLE_CELL = "\ufffd"
"""A Parquet cell no Python object holds (a timestamp past the year 9999): read as U+FFFD, as bytes that are not
UTF-8 are, which no rule reads as a number, a missing value or a declared category unless a schema declares it."""


def _python_cells(column: pa.ChunkedArray) -> pd.Series:
    """The objects ``to_pylist`` gives a column; a cell it cannot convert is :data:`UNREADABLE_CELL` on its own.

    ``to_pylist`` refuses the whole column for one such cell (``OverflowError`` for a date past 9999), and the file
    with it, after the party reserved its ε: one record would then decide whether the party could read any.
    """
    try:
        return pd.Series(column.to_pylist(), dtype=object)
    except (ArithmeticError, ValueError, pa.ArrowException):  # OverflowError, UnicodeDecodeError and Arrow's own
        return pd.Series([_python_cell(cell) for chunk in column.chunks for cell in chunk], dtype=object)


def _python_cell(cell: pa.Scalar) -> object:
    """One cell's Python object, or :data:`UNREADABLE_CELL` when it has none."""
    try:
        return cell.as_py()
    except (ArithmeticError, ValueError, pa.ArrowException):
        return UNREADABLE_CELL


def _valid_text(column: pa.ChunkedArray) -> bool:
    """Whether every cell of an Arrow text column is valid UTF-8 (a Parquet reader does not check it)."""
    try:
        column.validate(full=True)
    except pa.ArrowInvalid:
        return False
    return True
