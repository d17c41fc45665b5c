"""Read a large file in chunks of rows, one output record per data line, in bounded memory.

The per-record rules of :mod:`edprf_core._text_table` (each line decoded and
parsed alone, every cell text; Parquet cells keep the file's types), applied
to a stream: lines are read in chunks of ``chunk_rows``, so a file of 10^6
rows never sits in memory whole.  Unlike :func:`read_table`, which a party
uses to train and which drops malformed lines, every data line yields one
record here: a malformed line (wrong number of fields, an unbalanced quote,
longer than :data:`MAX_LINE_CHARS`) keeps its place with the reason, so that
``edprf predict`` writes one output row per input line, in order.  Blank lines
are skipped (they are not records), as in training.

Columns: with a header, the schema's features must be present (the label,
declared ignored columns and any other column may be too; others are not
read).  Without a header, a line holds the features in schema order,
optionally followed by the label (decided per line by its number of fields).

Speed without coupling: a plain line (no quote, no carriage return but a
final one, no byte-order mark at its start, within the length limit) with as
many fields as one allowed width is split by Arrow's CSV parser, the lines of
each width together; every other line by the rules written out in Python.
Which way a line goes depends on its own bytes only, and both ways give it
the same record (``tests/core/test_table_stream.py``).  With one allowed
width (a header), a block whose every line is plain and of that width is
read whole, without locating its lines (``_Lines.whole_block``).

Privacy: reading the caller's own file; nothing is released.
"""

from __future__ import annotations

import gzip
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import numpy as np
import pandas as pd
import pyarrow as pa

from ._column_names import misspelling_hint
from ._decimal_comma import check_decimal, read_decimal_commas
from ._exceptions import DataValidationError
from ._file_lines import decoded, header_line, line_blocks, open_lines
from ._first_line import names_line
from ._schema import Schema
from ._text_table import (
    _TEXT_DTYPE,
    MAX_LINE_CHARS,
    PARQUET_SUFFIXES,
    UNBALANCED_QUOTES,
    _line_counts,
    _Lines,
    _python_cells,
    _split_line,
    check_separator,
    header_hint,
    plain_lines,
    refuse_a_first_line_that_is_no_header,
    visible_lines,
)

__all__ = ["DEFAULT_CHUNK_ROWS", "RowChunk", "stream_rows"]

DEFAULT_CHUNK_ROWS = 20_000
"""Rows per chunk: about 20-40 MB of text cells for a few dozen columns."""


@dataclass(frozen=True, eq=False)
class RowChunk:
    """Consecutive records of the file.

    Attributes
    ----------
    frame : DataFrame
        The schema's feature columns (and the label column when the file has
        it), one row per record.  From a CSV file every cell is text (pandas'
        ``str`` dtype, held by Arrow); the cells of a malformed line, and the
        label of a line without one, are missing.  From a Parquet file the
        cells keep the types the file declares (``object`` columns).
    line_numbers : ndarray of int
        1-based line number of each record (row number for Parquet).
    malformed : ndarray of str
        Per record, ``""`` or why its line could not be read.
    has_label : bool
        Whether ``frame`` holds the label column.
    """

    frame: pd.DataFrame
    line_numbers: np.ndarray
    malformed: np.ndarray
    has_label: bool


def _header(schema: Schema, first: str | None, sep: str, path: Path, require_label: bool) -> list[str]:
    names = _split_line(first, sep) if first is not None else None
    hint = header_hint(first, sep, schema)
    if not names:
        raise ValueError(
            f"{path}: the first line must be a header naming the columns{hint or ' (or pass --no-header)'}"
        )
    names = [n.strip() for n in names]
    refuse_a_first_line_that_is_no_header(first, sep, schema, hint, path)
    if len(set(names)) != len(names):
        raise DataValidationError(f"{path}: the header names a column twice{hint}")
    label = schema.label.column
    unknown = [n for n in names if n not in {*schema.feature_names, *schema.ignored_columns, label}]
    missing = [n for n in schema.feature_names if n not in names]
    if missing:
        spelt = misspelling_hint(unknown, missing, "the header")
        raise DataValidationError(
            f"{path}: missing columns {missing}; the schema declares {list(schema.feature_names)}{spelt}{hint}"
        )
    if require_label and label not in names:
        spelt = misspelling_hint(unknown, [label], "the header")
        raise DataValidationError(f"{path}: label column {label!r} is missing from the header{spelt}{hint}")
    return names


def stream_rows(
    path: str | Path,
    schema: Schema,
    *,
    sep: str = ",",
    header: bool = True,
    require_label: bool = False,
    chunk_rows: int = DEFAULT_CHUNK_ROWS,
    max_line_chars: int = MAX_LINE_CHARS,
    decimal: str = ".",
) -> Iterator[RowChunk]:
    """Yield the file's records in chunks of at most ``chunk_rows`` (CSV, gzip-compressed CSV, or Parquet).

    ``decimal=","`` reads a text file's continuous columns with a decimal comma (``5,0``), each cell alone
    (:mod:`edprf_core._decimal_comma`: a cell holding a ``.`` makes its record malformed, with the reason); it
    cannot be the separator, and a Parquet file's numbers are typed (refused there).

    Raises ``ValueError`` / :class:`DataValidationError` for file-level
    problems only (no file, a header without the schema's features, or
    without the label when ``require_label``), before any record is yielded.
    """
    check_separator(sep)
    if chunk_rows < 1:
        raise ValueError(f"chunk_rows must be >= 1, got {chunk_rows}")
    p = Path(path)
    check_decimal(decimal, sep, parquet=p.suffix.lower() in PARQUET_SUFFIXES)
    if p.suffix.lower() in PARQUET_SUFFIXES:
        yield from _stream_parquet(p, schema, require_label, chunk_rows)
        return
    with open_lines(p) as handle:
        try:
            chunks = _stream_text(handle, p, schema, sep, header, require_label, chunk_rows, max_line_chars)
            if decimal == ",":
                chunks = (_decimal_commas(chunk, schema) for chunk in chunks)
            yield from chunks
        except (OSError, EOFError, gzip.BadGzipFile) as exc:
            raise ValueError(f"cannot read data file {p}: {type(exc).__name__}") from None


def _decimal_commas(chunk: RowChunk, schema: Schema) -> RowChunk:
    """The chunk read with a decimal comma (:func:`edprf_core._decimal_comma.read_decimal_commas`)."""
    frame, malformed = read_decimal_commas(chunk.frame, chunk.malformed, schema)
    return RowChunk(frame, chunk.line_numbers, malformed, chunk.has_label)


def _stream_text(
    handle: IO[bytes],
    path: Path,
    schema: Schema,
    sep: str,
    header: bool,
    require_label: bool,
    chunk_rows: int,
    max_line_chars: int,
) -> Iterator[RowChunk]:
    features = list(schema.feature_names)
    label = schema.label.column
    number = 0
    first_line = True
    if header:
        number, first = header_line(handle)
        first_line = number == 0
        names = _header(schema, first, sep, path, require_label)
        wanted = features + ([label] if label in names else [])
        positions = [names.index(n) for n in wanted]
        widths = {len(names): positions}
    else:
        wanted = features + [label]
        widths = {len(features) + 1: list(range(len(features) + 1))}
        if not require_label:
            widths[len(features)] = list(range(len(features))) + [None]
    has_label = label in wanted
    lines = _RecordLines(sep, widths, max_line_chars, len(wanted))
    pending: list[_Records] = []
    waiting = 0
    first_number = number + 1
    for source, start, end in line_blocks(handle, first_line, _BLOCK_BYTES):
        records = lines.read(memoryview(source)[start:end], first_number, source, start)
        first_number += lines.line_breaks
        pending.append(records)
        waiting += records.size
        while waiting >= chunk_rows:
            ready, pending, waiting = _take(pending, chunk_rows)
            yield _chunk(ready, wanted, has_label)
    if waiting:
        yield _chunk(_take(pending, waiting)[0], wanted, has_label)


_BLOCK_BYTES = 1 << 22
"""Bytes of lines read at a time (4 MiB; a longer line makes its block longer)."""


@dataclass(frozen=True, eq=False)
class _Records:
    """Consecutive records: one Arrow text array per wanted column (null: no cell), line numbers, problems."""

    columns: list[pa.ChunkedArray]
    numbers: np.ndarray
    problems: np.ndarray

    @property
    def size(self) -> int:
        return len(self.numbers)


def _take(pending: list[_Records], n: int) -> tuple[_Records, list[_Records], int]:
    """The first ``n`` records of ``pending``, what is left, and how many are left."""
    columns = _joined([r.columns for r in pending])
    numbers = np.concatenate([r.numbers for r in pending])
    problems = np.concatenate([r.problems for r in pending])
    ready = _Records([c.slice(0, n) for c in columns], numbers[:n], problems[:n])  # slices: nothing copied
    left = len(numbers) - n
    rest = [_Records([c.slice(n) for c in columns], numbers[n:], problems[n:])] if left else []
    return ready, rest, left


def _joined(groups: list[list[pa.ChunkedArray]]) -> list[pa.ChunkedArray]:
    """Per column, the groups' cells one after the other (their chunks, not copied)."""
    return [
        pa.chunked_array([chunk for g in groups for chunk in g[j].chunks], pa.large_string())
        for j in range(len(groups[0]))
    ]


class _RecordLines:
    """Reads blocks of lines into records: every data line one record, a malformed one with its reason.

    A plain line (see :func:`_text_table.plain_lines`) with as many fields as one of ``widths`` allows is
    split by Arrow's parser (quoting off: exactly ``str.split(sep)``), a group of lines per width; every other
    line goes through :func:`_line_record`, the rules written out in Python.  Which way a line goes is decided
    from its own bytes, and both ways give it the record the rules give it alone.
    """

    def __init__(self, sep: str, widths: dict[int, list[int | None]], max_line_chars: int, n_wanted: int) -> None:
        self.sep, self.widths, self.max_line_chars, self.n_wanted = sep, widths, max_line_chars, n_wanted
        self.expected = " or ".join(str(w) for w in sorted(widths))
        self._parsers = {w: _Lines(sep, w, max_line_chars) for w in widths} if sep.isascii() else {}
        self.line_breaks = 0
        """Line breaks in the block last read."""

    def read(self, block: memoryview, first_number: int, source: bytes, offset: int) -> _Records:
        """The records of one block, ``source[offset:offset + len(block)]`` (whole lines), its first line numbered
        ``first_number``; sets :attr:`line_breaks` to the block's number of line breaks."""
        if not self._parsers:
            return self._python(bytes(block), first_number)
        if len(self.widths) == 1:  # one allowed width: a block of plain lines of that width is read whole
            ((width, positions),) = self.widths.items()
            parser = self._parsers[width]
            whole = parser.whole_block(block, first_number, source, offset)
            if whole is not None:
                self.line_breaks = parser.line_breaks
                return self._records(*whole, positions)
        lines = plain_lines(block, source, offset, self.sep, self.max_line_chars)
        self.line_breaks = lines.line_breaks
        starts, ends, plain = lines.starts, lines.ends, lines.plain
        if min(self.widths) == 1 and not self.sep.isspace():  # a line of one field may be blank: the rules decide
            plain &= visible_lines(lines.buf, starts)
        numbers = first_number + np.arange(len(starts), dtype=np.int64)
        fields = _line_counts(lines.buf == ord(self.sep), starts) + 1
        groups: list[_Records] = []
        parsed = np.zeros(len(starts), dtype=bool)
        for width, positions in self.widths.items():
            these = plain & (fields == width)
            if not these.any():
                continue
            columns = self._parsers[width].plain_columns(block, starts, ends, these)
            if columns is None:  # Arrow refused them: the Python rules read them
                continue
            parsed |= these
            groups.append(self._records(columns, numbers[these], positions))
        others = np.flatnonzero(~parsed)
        if others.size:
            groups.append(self._by_the_rules((bytes(block[starts[i] : ends[i]]) for i in others), numbers[others]))
        return _in_line_order(groups, self.n_wanted)

    @staticmethod
    def _records(columns: list[pa.ChunkedArray], numbers: np.ndarray, positions: list[int | None]) -> _Records:
        """Well-formed records: the parsed columns at ``positions`` (None: no such cell, as for a missing label)."""
        n = len(numbers)
        wanted = [
            columns[i] if i is not None else pa.chunked_array([pa.nulls(n, pa.large_string())]) for i in positions
        ]
        return _Records(wanted, numbers, np.full(n, "", dtype=object))

    def _python(self, block: bytes, first_number: int) -> _Records:
        """Every line of a block through the Python rules (a separator that is not ASCII)."""
        lines = block.split(b"\n")
        self.line_breaks = len(lines) - 1
        if block.endswith(b"\n"):
            lines.pop()  # the block ends with a line break: no line after it
        return self._by_the_rules(lines, first_number + np.arange(len(lines), dtype=np.int64))

    def _by_the_rules(self, lines: Iterable[bytes], numbers: np.ndarray) -> _Records:
        """The records of ``lines`` (numbered ``numbers``) by :func:`_line_record`; blank lines give none."""
        rows, kept, problems = [], [], []
        for line, number in zip(lines, numbers):
            record = _line_record(decoded(line), self)
            if record is not None:
                rows.append(record[0])
                problems.append(record[1])
                kept.append(number)
        columns = [
            pa.chunked_array([pa.array([r[j] for r in rows], type=pa.large_string())]) for j in range(self.n_wanted)
        ]
        return _Records(columns, np.asarray(kept, dtype=np.int64), np.asarray(problems, dtype=object))


def _line_record(line: str, rules: _RecordLines) -> tuple[list[str | None], str] | None:
    """The rules for one line (after decoding): its wanted cells and ``""``, or no cells and why it is malformed;
    None when it is blank (not a record)."""
    if not line or line.isspace():
        return None
    blank = [None] * rules.n_wanted
    if len(line) > rules.max_line_chars:
        return blank, f"line longer than {rules.max_line_chars} characters"
    fields = _split_line(line, rules.sep)
    if fields is None:
        return blank, UNBALANCED_QUOTES
    if len(fields) not in rules.widths:
        return blank, f"{len(fields)} fields, expected {rules.expected}"
    return [fields[i] if i is not None else None for i in rules.widths[len(fields)]], ""


def _in_line_order(groups: list[_Records], n_wanted: int) -> _Records:
    """The groups' records together, ordered by line number."""
    if len(groups) == 1:
        return groups[0]
    if not groups:
        return _Records(
            [pa.chunked_array([], pa.large_string()) for _ in range(n_wanted)],
            np.zeros(0, np.int64),
            np.zeros(0, object),
        )
    numbers = np.concatenate([g.numbers for g in groups])
    order = np.argsort(numbers, kind="stable")
    columns = [c.take(pa.array(order)) for c in _joined([g.columns for g in groups])]
    return _Records(columns, numbers[order], np.concatenate([g.problems for g in groups])[order])


def _chunk(records: _Records, names: list[str], has_label: bool) -> RowChunk:
    return RowChunk(
        frame=pd.DataFrame({n: pd.Series(c, dtype=_TEXT_DTYPE) for n, c in zip(names, records.columns)}),
        line_numbers=records.numbers,
        malformed=records.problems,
        has_label=has_label,
    )


def _stream_parquet(path: Path, schema: Schema, require_label: bool, chunk_rows: int) -> Iterator[RowChunk]:
    """A Parquet file in record batches: cells keep the types the file declares."""
    import pyarrow.parquet as pq

    if not path.is_file():
        raise ValueError(f"data file {path} does not exist or is not a regular file")
    try:
        parquet = pq.ParquetFile(path)
    except (OSError, ValueError) as exc:
        raise ValueError(f"cannot read Parquet file {path}: {type(exc).__name__}") from None
    names = _header(schema, names_line(parquet.schema_arrow.names), ",", path, require_label)
    written = {name.strip(): name for name in parquet.schema_arrow.names}  # _header reads the names stripped
    label = schema.label.column
    wanted = list(schema.feature_names) + ([label] if label in names else [])
    start = 0
    for batch in parquet.iter_batches(batch_size=chunk_rows, columns=[written[n] for n in wanted]):
        # to_pylist's objects; a cell it cannot convert (not UTF-8, a date past 9999) is U+FFFD on its own, not the
        # end of the whole file's predictions
        frame = pd.DataFrame({n: _python_cells(pa.chunked_array([batch.column(written[n])])) for n in wanted})
        n = len(frame)
        yield RowChunk(
            frame=frame,
            line_numbers=np.arange(start + 1, start + n + 1, dtype=np.int64),
            malformed=np.full(n, "", dtype=object),
            has_label=label in wanted,
        )
        start += n
