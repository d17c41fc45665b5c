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

Privacy: reading the caller's own file; nothing is released.
"""

from __future__ import annotations

import gzip
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import numpy as np
import pandas as pd

from ._exceptions import DataValidationError
from ._schema import Schema
from ._text_table import _BOM, MAX_LINE_CHARS, PARQUET_SUFFIXES, _split_line

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
        it), one row per record; the cells of a malformed line are None.
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


def _open_lines(path: Path) -> IO[bytes]:
    if not path.is_file():
        raise ValueError(f"data file {path} does not exist or is not a regular file")
    try:
        return gzip.open(path, "rb") if path.suffix == ".gz" else path.open("rb")
    except OSError as exc:
        raise ValueError(f"cannot read data file {path}: {type(exc).__name__}") from None


def _header(schema: Schema, first: str | None, sep: str, path: Path, require_label: bool) -> list[str]:
    names = _split_line(first, sep) if first is not None else None
    if not names:
        raise ValueError(f"{path}: the first line must be a header naming the columns (or pass --no-header)")
    names = [n.strip() for n in names]
    if len(set(names)) != len(names):
        raise DataValidationError(f"{path}: the header names a column twice")
    missing = [n for n in schema.feature_names if n not in names]
    if missing:
        raise DataValidationError(
            f"{path}: missing columns {missing}; the schema declares {list(schema.feature_names)}"
        )
    if require_label and schema.label.column not in names:
        raise DataValidationError(f"{path}: label column {schema.label.column!r} is missing from the header")
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
) -> Iterator[RowChunk]:
    """Yield the file's records in chunks of at most ``chunk_rows`` (CSV, gzip-compressed CSV, or Parquet).

    Raises ``ValueError`` / :class:`DataValidationError` for file-level
    problems only (no file, a header without the schema's features, or
    without the label when ``require_label``), before any record is yielded.
    """
    if not isinstance(sep, str) or len(sep) != 1 or sep in '"\r\n':
        raise ValueError(f"sep must be one character other than a quote or a line break, got {sep!r}")
    if chunk_rows < 1:
        raise ValueError(f"chunk_rows must be >= 1, got {chunk_rows}")
    p = Path(path)
    if p.suffix.lower() in PARQUET_SUFFIXES:
        yield from _stream_parquet(p, schema, require_label, chunk_rows)
        return
    with _open_lines(p) as handle:
        try:
            yield from _stream_text(handle, p, schema, sep, header, require_label, chunk_rows, max_line_chars)
        except (OSError, EOFError, gzip.BadGzipFile) as exc:
            raise ValueError(f"cannot read data file {p}: {type(exc).__name__}") from None


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
        first = None
        for raw in handle:
            number += 1
            text = _decode(raw, first_line)
            first_line = False
            if text.strip():
                first = text
                break
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
    # a line whose fields are exactly the wanted columns, in order, is kept as split (no reordering)
    as_split = {w for w, positions in widths.items() if positions == list(range(len(wanted)))}
    rows: list[list[object]] = []
    numbers: list[int] = []
    problems: list[str] = []
    blank = [None] * len(wanted)
    expected = " or ".join(str(w) for w in sorted(widths))
    for line in _lines(handle, first_line):
        number += 1
        if not line or line.isspace():
            continue
        fields = None
        if len(line) > max_line_chars:
            problem = f"line longer than {max_line_chars} characters"
        else:
            fields = _split_line(line, sep)
            if fields is None:
                problem = "unbalanced quotes"
            elif len(fields) not in widths:
                problem, fields = f"{len(fields)} fields, expected {expected}", None
            else:
                problem = ""
        if fields is None:
            rows.append(blank)
        elif len(fields) in as_split:
            rows.append(fields)
        else:
            rows.append([fields[i] if i is not None else None for i in widths[len(fields)]])
        numbers.append(number)
        problems.append(problem)
        if len(rows) >= chunk_rows:
            yield _chunk(rows, numbers, problems, wanted, has_label)
            rows, numbers, problems = [], [], []
    if rows:
        yield _chunk(rows, numbers, problems, wanted, has_label)


_BLOCK_BYTES = 1 << 22


def _lines(handle: IO[bytes], first: bool) -> Iterator[str]:
    """The remaining lines, decoded a block of whole lines at a time (UTF-8 with replacement; a line break is
    never part of a multi-byte sequence, so this equals decoding each line alone), without their line ends."""
    while True:
        block = handle.readlines(_BLOCK_BYTES)
        if not block:
            return
        if first:
            block[0] = block[0].removeprefix(_BOM)
            first = False
        text = b"".join(block).decode("utf-8", errors="replace")
        lines = text.split("\n")
        if text.endswith("\n"):
            lines.pop()  # the empty text after the block's last line break
        for line in lines:
            yield line.removesuffix("\r")


def _decode(raw: bytes, first: bool) -> str:
    if first:
        raw = raw.removeprefix(_BOM)
    return raw.decode("utf-8", errors="replace").removesuffix("\n").removesuffix("\r")


def _chunk(
    rows: list[list[object]], numbers: list[int], problems: list[str], names: list[str], has_label: bool
) -> RowChunk:
    cells = np.empty((len(rows), len(names)), dtype=object)
    cells[:] = rows
    return RowChunk(
        frame=pd.DataFrame(cells, columns=names, dtype=object),
        line_numbers=np.asarray(numbers, dtype=np.int64),
        malformed=np.asarray(problems, dtype=object),
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
    names = _header(schema, ",".join(parquet.schema_arrow.names), ",", path, require_label)
    label = schema.label.column
    wanted = list(schema.feature_names) + ([label] if label in names else [])
    start = 0
    for batch in parquet.iter_batches(batch_size=chunk_rows, columns=wanted):
        frame = pd.DataFrame({n: pd.Series(batch.column(n).to_pylist(), dtype=object) for n in wanted})
        n = len(frame)
        yield RowChunk(
            frame=frame,
            line_numbers=np.arange(start + 1, start + n + 1, dtype=np.int64),
            malformed=np.full(n, "", dtype=object),
            has_label=label in wanted,
        )
        start += n
