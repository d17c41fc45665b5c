"""The party's local data: read from its own disk, validated, split once."""

from __future__ import annotations

import logging
import secrets
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from edprf_core import DataValidationError, Schema
from edprf_core.count_text import count_text
from edprf_core.encoding import conforming_rows
from edprf_core.tables import (
    PARQUET_SUFFIXES,
    OptionHints,
    check_table_header,
    numbered_text,
    read_columns,
    read_numbered_columns,
    read_table,
)

from ._held_out_split import split_sides

__all__ = ["NODE_CONFIG_HINTS", "LocalData", "data_file_problem", "load_local_data"]


log = logging.getLogger("edprf.party")

_LOGGED = 20

_WHOLE_READ_BYTES = 64 << 20
"""A text file of at most this many bytes is read whole, then numbered column by column
(:func:`edprf_core.tables.read_columns`); a larger one block by block as it is read
(:func:`edprf_core.tables.read_numbered_columns`), which never holds the file's text (4-5 times the file at the
peak: a 2 GB extract did not fit in 7 GB) but costs about a tenth more time (10^6 rows, 40 MB:
0.213 s against 0.198 s on one thread).  Both give every row the same cells, codes and line numbers
(``tests/core/test_local_data_numbered_block_by_block.py``), so the size decides speed and memory only."""

_THREADED_ROWS = 20_000
"""From this many rows on, :func:`_text_categories` numbers its columns on a thread each.  Below, handing columns
to threads costs more than it saves: on 2 cores, 2,000 diabetes rows took 1.5x as long with threads, 10,000 the same,
30,000 0.74x, 100,000 0.65x."""


@dataclass(frozen=True, eq=False)
class LocalData:
    """Training rows and held-out evaluation rows of one party (never sent anywhere)."""

    X_train: pd.DataFrame
    y_train: pd.Series
    X_holdout: pd.DataFrame
    y_holdout: pd.Series


NODE_CONFIG_HINTS = OptionHints(
    no_header="set data-header=false in the node config",
    separator="set data-separator='{sep}' in the node config",
    tab="set data-separator='tab' in the node config",
)
"""How a deployed party sets its reader's options (the node config keys ``data-separator`` and ``data-header``):
the words of the hint of a data file whose first line does not read as the schema's header."""


def data_file_problem(path: str | Path, schema: Schema, *, sep: str = ",", header: bool = True) -> str | None:
    """What makes the data file unusable as a whole, judged without reading a row; None when nothing does.

    :func:`edprf_core.tables.check_table_header`: the reader's own file-level checks (the file is there and
    readable; a header names the schema's columns), reading the header line at most.  A party refuses a request
    on such a problem before it reserves anything: neither the verdict nor its time depends on the rows.
    Privacy cost: none.
    """
    try:
        check_table_header(path, schema, sep=sep, header=header, hints=NODE_CONFIG_HINTS)
    except (DataValidationError, ValueError) as exc:
        return str(exc)
    return None


def load_local_data(
    path: str | Path,
    schema: Schema,
    holdout_fraction: float,
    salt: str,
    *,
    sep: str = ",",
    header: bool = True,
    train_from: float | None = None,
) -> LocalData:
    """Read the party's file and split off the held-out rows.

    Every step is a per-record map (privacy: a stable transformation, no ε):
    lines are read one by one as text (:func:`edprf_core.tables.read_table`'s rules,
    by :func:`~edprf_core.tables.read_numbered_columns`: a malformed line is dropped, never the
    file; each block's text is numbered as it is read and let go, so the file's text is
    never held whole), cells are judged by the schema
    alone, rows that break a rule are dropped one by one
    (:func:`edprf_core.encoding.conforming_rows`), and a row's side of the split is a
    keyed hash of that row's own cells as the schema reads them (:mod:`client._held_out_split`) with a party-local secret ``salt``
    (stored in the ledger): it depends on nothing else, not on its line number
    or on other rows, so adding or removing a record moves no other row.  Training and evaluation requests, which run in separate
    processes, therefore see the same split, and the coordinator cannot
    predict it.  What was dropped, and why, goes to the party's own log, never
    into a reply.  Only a file-level problem (no file, a header without the
    schema's columns) raises, its message naming the node config keys that
    read the file otherwise (:data:`NODE_CONFIG_HINTS`).  ``sep`` is the file's
    field separator (the node config's ``data-separator``); ``header`` whether its
    first line names the columns (the node config's ``data-header``; without one the
    columns are the schema's features in order, then the label).  A row's cells, and
    so its side of the split, are the same whether the file has a header or not.
    ``train_from`` (default ``holdout_fraction``): rows train when their keyed uniform is at least it, and are held
    out below ``holdout_fraction``; a party holds out below the smallest fraction its releases trained under
    (:func:`client._held_out_record.held_out_fraction`).
    """
    cells, lines, dropped = _file_cells(path, schema, sep, header)
    for note in dropped[:_LOGGED]:
        log.warning("local data: %s; left out", note)
    if len(dropped) > _LOGGED:
        log.warning("local data: %s left out", count_text(len(dropped) - _LOGGED, "more line"))
    label = schema.label.column
    X, y = cells.drop(columns=[label]), cells[label]
    keep, problems = conforming_rows(X, y, schema, lines)  # the log names the file's lines
    for note in problems:
        log.warning("local data: %s; those rows are left out", note)
    if not keep.any():
        # Not refused: whether any usable row exists is itself data (one record away from a
        # release); training on no rows is still epsilon-DP, just uninformative.
        log.warning("local data: no row conforms to the schema; the release will carry no information")
    # The side of the split is a keyed hash of the row's own cells as the schema reads them: adding or removing
    # a record never moves another row to the other side, however the file's writer typed its columns.
    # rows between the two fractions serve neither side (client._held_out_record.held_out_fraction); one pass
    hold, trains = split_sides(
        cells, schema, salt, holdout_fraction, holdout_fraction if train_from is None else train_from
    )
    train, held = np.flatnonzero(keep & trains), np.flatnonzero(keep & hold)  # positions: one gather per column
    data = LocalData(X.take(train), y.take(train), X.take(held), y.take(held))
    del cells, X, y
    # The party holds the data until it exits: the pages Arrow's allocator kept from the read go back (2 million
    # bank rows: 1.2 GB -> 0.8 GB held before a fit)
    pa.default_memory_pool().release_unused()
    return data


def _file_cells(path: str | Path, schema: Schema, sep: str, header: bool) -> tuple[pd.DataFrame, np.ndarray, list[str]]:
    """The file's rows as a frame (a text file's columns in its order; a Parquet file's features and ignored
    columns in its order, then the label), each row's line number in the file, and the notes on its dropped lines (:func:`edprf_core.tables.read_table`'s rules).

    Each text column is numbered by its distinct cells (a categorical view of the same texts): the schema's
    verdicts, the keyed hash and the encoding at fit time then read each distinct text once, and selecting rows
    gathers small integers instead of copying strings.  Every step still gives each row what its own cells give it
    (pandas hashes a categorical cell as its category's text; the encoder reads a category's text).  A text file's
    columns are numbered block by block as they are read (:func:`edprf_core.tables.read_numbered_columns`): the
    file's text is never held whole.  A Parquet file's keep its own types (:func:`edprf_core.tables.read_table`:
    its text as pandas' ``str``, numbered here; its numbers in numpy; other cells as objects, never numbered: a
    categorical of Python objects would merge 1, 1.0 and True).
    """
    label = schema.label.column
    if Path(path).suffix.lower() in PARQUET_SUFFIXES:
        table = read_table(path, schema, sep=sep, header=header, hints=NODE_CONFIG_HINTS)
        columns = {**dict(table.X.items()), label: table.y}
        rows = len(table.line_numbers)
        return _text_categories(columns, rows), table.line_numbers, table.dropped
    if _file_bytes(path) <= _WHOLE_READ_BYTES:  # held whole: faster, and a small file's text costs little memory
        whole = read_columns(path, schema, sep=sep, header=header, hints=NODE_CONFIG_HINTS, large=False)
        columns = dict(whole.columns)
        whole.columns.clear()  # held once, in ``columns``: each column's text goes when it is numbered
        return _text_categories(columns, len(whole.line_numbers)), whole.line_numbers, whole.dropped
    read = read_numbered_columns(path, schema, sep=sep, header=header, hints=NODE_CONFIG_HINTS)
    return read.frame, read.line_numbers, read.dropped  # the label where the file has it: X and y are taken by name


def _file_bytes(path: str | Path) -> int:
    """The file's size on disk (compressed size for a gzip file), or 0 when it cannot be read: the reader then
    says why."""
    try:
        return Path(path).stat().st_size
    except OSError:
        return 0


def _text_categories(columns: dict[str, pd.Series | pa.ChunkedArray], rows: int) -> pd.DataFrame:
    """A frame of ``columns`` (``rows`` rows), each text column as a categorical of the same texts (others as
    they are); the columns are taken out of ``columns`` one by one, so that a column's text is let go as soon
    as it is numbered (the file is never held twice).

    Text: an Arrow text column, or one of pandas' ``str`` dtype.  ``series.astype("category")`` of its cells
    as pandas' ``str``, categories in order of first appearance, a missing cell missing (:func:`_numbered`); a
    column per thread on as many threads as Arrow's own pool has (``pyarrow.cpu_count()``: the machine's CPUs
    unless ``OMP_NUM_THREADS`` says otherwise).
    """
    order = list(columns)
    text = [c for c in order if _is_text(columns[c])]
    others = {c: columns.pop(c) for c in order if c not in text}

    def number(name: str) -> pd.Categorical:
        numbered = numbered_text(columns.pop(name))  # the column's only reference: its text goes here
        # Arrow's allocator keeps freed pages for reuse; handing them back as the text goes keeps the process's
        # memory near what it holds (2 million bank rows, one thread: 1.18 GB -> 0.97 GB at the 7th column)
        pa.default_memory_pool().release_unused()
        return numbered

    workers = min(len(text), pa.cpu_count()) if rows >= _THREADED_ROWS else 1
    if workers <= 1:  # a small frame: handing columns to threads costs more than numbering them here
        numbered = {c: number(c) for c in text}
    else:
        pool = ThreadPoolExecutor(max_workers=workers)
        try:
            numbered = dict(zip(text, pool.map(number, text)))
        finally:  # on Ctrl-C, the columns not yet started are dropped: only the running ones are waited for
            pool.shutdown(wait=True, cancel_futures=True)
    return pd.DataFrame({c: numbered[c] if c in numbered else others[c] for c in order}, index=pd.RangeIndex(rows))


def _is_text(column: pd.Series | pa.ChunkedArray) -> bool:
    if isinstance(column, pa.ChunkedArray):
        return pa.types.is_string(column.type) or pa.types.is_large_string(column.type)
    return isinstance(column.dtype, pd.StringDtype)


def new_salt() -> str:
    return secrets.token_hex(16)
