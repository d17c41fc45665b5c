"""How ``edprf schema draft`` types the columns it reads: numbers, missing-value marks and text, one pass a column.

The draft's reading of a cell is pandas' (``pandas.to_numeric`` on the stripped text, as the draft always read
it: ``inf`` is a number here, ``1_000`` is not, a column of whole numbers is of integers), computed with Arrow
kernels over the whole column instead of Python objects cell by cell.  A column of plain numbers, the usual
case, takes one cast; a column with marks or text takes a strip, a look-up of the marks, and a cast of the cells
that :data:`NUMBER_PATTERN` matches.  Any column these routes cannot settle exactly (a whole number written
``+5``, one beyond 64 bits) is typed by pandas itself, so every route gives the types and values pandas gives.

The draft is not differentially private (its schema says ``drafted = true``); nothing here prints a cell.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from edprf_core.tables import TEXT_DTYPE

__all__ = [
    "EXAMPLE_CHARS",
    "NUMBER_PATTERN",
    "ColumnCells",
    "cell_text",
    "column_cells",
    "number_cells",
    "share_text",
    "typed_column",
]

NUMBER_PATTERN = r"(?i)^[+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:e[+-]?[0-9]+)?|inf|infinity)$"
"""A stripped cell that ``pandas.to_numeric`` reads as a number (``inf`` and ``Infinity`` included; ``nan`` is
no number to it); Arrow's cast to float64 accepts every such cell."""

_WHOLE_PATTERN = r"^[+-]?[0-9]+$"
"""A stripped cell that ``pandas.to_numeric`` reads as an integer."""


@dataclass(frozen=True, eq=False)
class ColumnCells:
    """One column as the draft reads it, before the file's missing-value marks are chosen.

    Attributes
    ----------
    rows : int
        Cells in the column.
    cells : int
        Cells that are not null (a Parquet file's nulls aside; a CSV has none).
    marks : dict of str to int
        Each missing-value mark some cell holds (stripped), and how many cells hold it.
    numbers : int
        Cells that are numbers.
    values : ndarray of float64
        Each cell's number; NaN where the cell is no number (a mark, text, null).
    exact : Series or None
        When every cell is a number: the column as pandas types it (int64 for whole numbers); else None.
    text : pyarrow.ChunkedArray or None
        The stripped cells, kept while the column may be drafted as text (some cell is no number); else None.
    """

    rows: int
    cells: int
    marks: dict[str, int]
    numbers: int
    values: np.ndarray
    exact: pd.Series | None
    text: pa.ChunkedArray | None

    def numeric(self, share: float) -> bool:
        """Whether at least ``share`` of the cells that are no mark are numbers (a column of numbers with a few
        stray cells, whose dashes are gaps)."""
        others = self.cells - sum(self.marks.values())
        return others > 0 and self.numbers / others >= share


def column_cells(cells: pa.Array | pa.ChunkedArray, marks: tuple[str, ...]) -> ColumnCells:
    """Read one column of text cells: its numbers and the marks of ``marks`` it holds (one pass).

    Parameters
    ----------
    cells : pyarrow string array
        The column's cells as written (nulls: a Parquet file's missing cells).
    marks : tuple of str
        The texts that may mark a missing value.

    Returns
    -------
    ColumnCells
    """
    cells = _chunked(cells)
    rows = len(cells)
    plain = _cast(cells)
    if plain is not None and not np.isnan(plain).any():  # numbers alone, no mark, nothing to strip
        return ColumnCells(rows, rows, {}, rows, plain, _exact(cells, plain), None)
    stripped = pc.utf8_trim_whitespace(cells)
    is_mark = pc.fill_null(pc.is_in(stripped, value_set=pa.array(marks, stripped.type)), False)
    held = pc.value_counts(pc.filter(stripped, is_mark))
    counts = dict(zip(held.field("values").to_pylist(), held.field("counts").to_pylist()))
    candidates = pc.if_else(is_mark, pa.scalar(None, stripped.type), stripped)
    values = _numbers(candidates)
    if values is None:  # a cell Arrow cannot settle as pandas does: pandas types the column
        values = _pandas_numbers(candidates)
    numbers = int(np.count_nonzero(~np.isnan(values)))
    cells_held = rows - stripped.null_count
    exact = _exact(stripped, values) if numbers == rows else None
    text = None if numbers == rows else stripped
    return ColumnCells(rows, cells_held, counts, numbers, values, exact, text)


def typed_column(column: ColumnCells, tokens: tuple[str, ...]) -> pd.Series:
    """The column as the draft drafts it, once ``tokens`` are the file's missing-value marks: numbers when every
    cell that is no token is one, else text (stripped, tokens missing)."""
    missing = column.rows - column.cells + sum(n for mark, n in column.marks.items() if mark in tokens)
    present = column.rows - missing
    if present and column.numbers == present:
        return column.exact if column.exact is not None else pd.Series(column.values, dtype=np.float64, copy=False)
    text = column.text
    if text is None:  # every cell a number (no present cell was left: not reached) - kept for safety
        return pd.Series(column.values, dtype=np.float64, copy=False)
    if tokens:
        text = pc.if_else(pc.is_in(text, value_set=pa.array(tokens, text.type)), pa.scalar(None, text.type), text)
    return pd.Series(text, dtype=TEXT_DTYPE)


def number_cells(cells: pd.Series) -> np.ndarray:
    """Per cell of a text column, whether it is a number (pandas' reading, see :data:`NUMBER_PATTERN`)."""
    if isinstance(cells.dtype, pd.StringDtype) and cells.dtype.storage == "pyarrow":
        arrow = pa.array(cells.array)  # the Arrow cells themselves, no copy into Python objects
    else:
        arrow = pa.array(cells.astype(str).to_numpy(dtype=object), type=pa.large_string())
    arrow = _chunked(pc.utf8_trim_whitespace(arrow))
    values = _numbers(arrow)
    if values is None:
        values = _pandas_numbers(arrow)
    return ~np.isnan(values)


def _chunked(cells: pa.Array | pa.ChunkedArray) -> pa.ChunkedArray:
    """The cells as one chunked array (an array becomes its one chunk; a chunked array is kept, never rebuilt)."""
    return pa.chunked_array([cells]) if isinstance(cells, pa.Array) else cells


_PROBE_CELLS = 1024
"""Cells cast first: a failed cast of a whole column costs ten times a successful one (Arrow), and a column of
text fails on its first cells."""


def _cast(cells: pa.ChunkedArray) -> np.ndarray | None:
    """Every cell cast to float64 (NaN for null), or None when some cell is not a number to Arrow."""
    try:
        if len(cells) > _PROBE_CELLS:
            pc.cast(cells.slice(0, _PROBE_CELLS), pa.float64())  # a column of text: refused at once
        values = pc.cast(cells, pa.float64())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    return values.to_numpy(zero_copy_only=False).astype(np.float64, copy=False)


def _numbers(cells: pa.ChunkedArray) -> np.ndarray | None:
    """Each cell's number (NaN: no number, null); None when Arrow refuses a cell :data:`NUMBER_PATTERN` takes."""
    matches = pc.fill_null(pc.match_substring_regex(cells, NUMBER_PATTERN), False)
    if pc.all(pc.or_(matches, pc.is_null(cells))).as_py():  # numbers and gaps: one cast
        return _cast(cells)
    return _cast(pc.if_else(matches, cells, pa.scalar(None, cells.type)))


def _pandas_numbers(cells: pa.ChunkedArray) -> np.ndarray:
    """Each cell's number as ``pandas.to_numeric`` reads it (NaN: no number)."""
    objects = pd.Series(cells.to_numpy(zero_copy_only=False), dtype=object)
    return pd.to_numeric(objects, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)


def _exact(cells: pa.ChunkedArray, values: np.ndarray) -> pd.Series:
    """A column whose every cell is a number, typed as pandas types it: integers when every cell is written as a
    whole number (int64; pandas itself where Arrow's cast cannot say: a sign '+', more than 64 bits)."""
    if not (np.isfinite(values).all() and np.array_equal(values, np.trunc(values))):
        return pd.Series(values, dtype=np.float64, copy=False)  # a fraction or inf somewhere: float64, as pandas
    try:
        return pd.Series(pc.cast(cells, pa.int64()).to_numpy(zero_copy_only=False), dtype=np.int64)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        pass
    stripped = pc.utf8_trim_whitespace(cells)
    if not pc.all(pc.match_substring_regex(stripped, _WHOLE_PATTERN)).as_py():
        return pd.Series(values, dtype=np.float64, copy=False)  # '3.0' or '1e3' somewhere: float64, as pandas
    numbers = pd.to_numeric(pd.Series(stripped.to_numpy(zero_copy_only=False), dtype=object))
    if numbers.dtype == object:  # more than 64 bits: floats, as the earlier draft read them (a TOML integer has 64)
        return pd.Series(values, dtype=np.float64, copy=False)
    return numbers


EXAMPLE_CHARS = 40
"""Characters of a cell shown at most where the draft quotes one as an example (a cell may be a megabyte long)."""


def cell_text(cell: object, limit: int = EXAMPLE_CHARS) -> str:
    """A cell quoted for a message: its ``repr`` (escaped), cut after ``limit`` characters with an ellipsis and its
    length (``'yyyy...'... (300,000 characters)``)."""
    text = str(cell)
    if len(text) <= limit:
        return repr(text)
    return f"{text[:limit]!r}... ({len(text):,} characters)"


def share_text(part: int, whole: int) -> str:
    """``part`` of ``whole`` as a percentage that never says 100 % when not all (nor 0 % when some): ``"98%"``,
    ``"99.95%"``; as many decimals as that takes, floored, and at most four ("99.9999%")."""
    percent = 100 * part / whole
    text = f"{percent:.0f}%"
    if 0 < part < whole and text in ("100%", "0%"):
        for digits in range(1, 5):
            scale = 10**digits
            shown = (np.floor if part * 2 > whole else np.ceil)(percent * scale) / scale
            if 0 < shown < 100:
                return f"{shown:.{digits}f}%"
        return f"{99.9999 if part * 2 > whole else 0.0001}%"
    return text
