"""The rules that read one text cell, and their vectorized (Arrow) form.

A text cell is read by itself: its result depends on its own characters and
the public schema only, so adding or removing a record cannot change how any
other record is read (``docs/privacy.md``, "Threat model"; ``docs/your-own-data.md``,
"How each row is read").  Each rule is stated
here once as a plain Python function on one ``str`` (the specification, also
used for the rare cells Arrow cannot hold, such as lone surrogates), and once
as a column of Arrow kernels that apply the same rule to every cell
independently (:mod:`pyarrow.compute` string kernels are element-wise: the
output at one position is a function of the input at that position).
``tests/core/test_cell_text.py`` checks that both forms agree cell by cell.

Rules
-----
- whitespace: the characters for which ``str.isspace()`` is true
  (:data:`WHITESPACE`); stripping removes them at both ends, like
  ``str.strip()``;
- a number: after stripping, the cell matches :data:`NUMBER_PATTERN` (ASCII
  digits, an optional sign, an optional decimal point, an optional exponent)
  and its value, correctly rounded to the nearest float64, is finite.
  ``"7"``, ``" 7 "``, ``"-0"``, ``".5"``, ``"1e3"`` are numbers; ``"inf"``,
  ``"nan"``, ``"1e309"`` (overflows), ``"1_000"``, ``"0x10"``, ``"1,5"``, and
  digits of other scripts are not.  No cell is read as an integer first: the
  value never depends on whether other cells of the column hold fractions
  (pandas' ``to_numeric`` turns ``"-0"`` into ``0`` or ``-0.0`` depending on
  the column).

Not a rule: :func:`decimal_comma_cells` only recognizes, for the hints of the commands that report refused
cells (``edprf schema check``, ``edprf party check``, ``edprf predict``), the cells a decimal comma made
"not a finite number"; it never changes how a cell is read.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from numpy.typing import NDArray

__all__ = [
    "DECIMAL_COMMA_PATTERN",
    "NUMBER_PATTERN",
    "TEXT_DTYPE",
    "THOUSANDS_DOT_PATTERN",
    "WHITESPACE",
    "Cells",
    "decimal_comma_cells",
    "number_of_text",
    "strip_text",
    "text_array",
    "text_numbers",
    "text_numbers_arrow",
    "thousands_dot_cells",
]

TEXT_DTYPE = pd.StringDtype("pyarrow", na_value=np.nan)
"""The dtype of text cells as the readers give them and the rules clean them (pandas' ``str``, held by Arrow,
a missing cell NaN)."""

WHITESPACE = (
    "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009"
    "\u200a\u2028\u2029\u202f\u205f\u3000"
)
"""Every character ``str.strip()`` removes (29 code points, from ``\\t`` to U+3000).  Written out: finding them
among all code points at import took 60 ms of every process's start; ``tests/core/test_cell_text.py`` checks the
list against ``str.isspace`` for every code point."""

NUMBER_PATTERN = r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
"""A decimal number: sign, digits with an optional point, optional exponent (ASCII only)."""

DECIMAL_COMMA_PATTERN = r"[+-]?(?:[0-9]{1,3}(?:\.[0-9]{3})+|[0-9]+),[0-9]+"
"""A number written with a decimal comma ('1234,56', '-0,5'), optionally with thousands dots ('1.234,56'): not a
number under :data:`NUMBER_PATTERN` (the schema reads '.' as the decimal point)."""

THOUSANDS_DOT_PATTERN = r"[+-]?[1-9][0-9]{0,2}(?:\.[0-9]{3})+"
"""A whole number written with thousands dots ('1.200', '12.500.000'; never '0.125', whose leading zero no thousands
separator follows): a number under :data:`NUMBER_PATTERN` only when it has one dot, and then read as a decimal."""

Cells = pa.Array | pa.ChunkedArray
"""Arrow string cells (one array, or the chunks of one column)."""

_NUMBER = re.compile(NUMBER_PATTERN + r"\Z", re.ASCII)
_NUMBER_ANCHORED = "^" + NUMBER_PATTERN + "$"  # RE2: without the multi-line flag, ^ and $ anchor the whole cell
THOUSANDS_COMMA_PATTERN = r"[+-]?[1-9][0-9]{0,2}(?:,[0-9]{3})+(?:\.[0-9]+)?"
"""A number whose every comma is followed by exactly three digits, with a decimal point after them or not ('1,400',
'12,500,000', '1,400.50'; never '0,500', whose leading zero no thousands separator follows): more likely written
with a thousands separator than with a decimal comma (read with a decimal comma, '1,400' would be 1.4; the hint
gives both readings)."""

_DECIMAL_COMMA = re.compile(DECIMAL_COMMA_PATTERN + r"\Z", re.ASCII)
_THOUSANDS_COMMA = re.compile(THOUSANDS_COMMA_PATTERN + r"\Z", re.ASCII)
_THOUSANDS_DOT = re.compile(THOUSANDS_DOT_PATTERN + r"\Z", re.ASCII)


def number_of_text(text: str) -> float:
    """The rule for one cell: its finite float value, or NaN when it is not a finite number."""
    text = text.strip()
    if _NUMBER.match(text) is None:
        return math.nan
    value = float(text)  # correctly rounded; the pattern is a subset of what float() accepts
    return value if math.isfinite(value) else math.nan


def strip_text(cells: Cells) -> Cells:
    """Every text cell without leading and trailing :data:`WHITESPACE` (``str.strip()``, cell by cell)."""
    return pc.utf8_trim_whitespace(cells)  # the same characters as WHITESPACE (tested for every code point)


def text_numbers_arrow(cells: Cells) -> NDArray[np.float64]:
    """:func:`number_of_text` of every cell of an Arrow string array (NaN for nulls), element-wise.

    The cast to float64 is correctly rounded (the same value as ``float``).  When
    every non-null cell is a number without surrounding whitespace, or one once
    stripped, the cast alone reads them; otherwise the cells that match
    :data:`NUMBER_PATTERN` are cast and the others are NaN.  All routes
    give every cell the value the rule gives it alone (the cast accepts exactly the
    pattern's cells plus the words ``inf``/``nan``, whose values are not finite:
    tested), so which route runs changes the time taken, not any value.
    """
    try:  # cells already stripped (the usual case) need no second pass: the cast refuses any whitespace
        values = pc.cast(cells, pa.float64())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        stripped = strip_text(cells)
        try:
            values = pc.cast(stripped, pa.float64())
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            matches = pc.match_substring_regex(stripped, _NUMBER_ANCHORED)
            values = pc.cast(pc.if_else(matches, stripped, pa.scalar(None, stripped.type)), pa.float64())
    x = values.to_numpy(zero_copy_only=False).astype(np.float64, copy=False)
    if values.null_count:
        x = np.where(pc.is_null(values).to_numpy(zero_copy_only=False), np.nan, x)
    return np.where(np.isfinite(x), x, np.nan)


def text_array(cells: NDArray[np.object_]) -> pa.Array | None:
    """The cells (``str``, or None/NaN for missing) as an Arrow string array; None when Arrow cannot hold one.

    A ``str`` with a lone surrogate has no UTF-8 form: such columns are read by the
    Python rules instead (same values, cell by cell).
    """
    try:
        return pa.array(cells, type=pa.string(), from_pandas=True)
    except (pa.ArrowException, UnicodeError, TypeError, ValueError):
        return None


def text_numbers(cells: NDArray[np.object_]) -> NDArray[np.float64]:
    """:func:`number_of_text` of ``str`` cells held in an object array (NaN for None/NaN)."""
    arrow = text_array(cells)
    if arrow is not None:
        return text_numbers_arrow(arrow)
    return np.fromiter(
        (number_of_text(c) if isinstance(c, str) else math.nan for c in cells), np.float64, count=len(cells)
    )


def decimal_comma_cells(cells: Cells | NDArray[np.object_] | pd.Series) -> NDArray[np.bool_]:
    """Per cell, whether it is text written as a number with a decimal comma (:data:`DECIMAL_COMMA_PATTERN`, once
    stripped of :data:`WHITESPACE`): ``" 1234,56"``, ``"-0,5"``, ``"1.234,56"``.  False for a missing cell and for a
    cell that is not text (a Parquet number is never a decimal comma).

    For hints only (the cells it finds are not numbers under the rules); each cell is judged alone.
    """
    return _pattern_cells(cells, _DECIMAL_COMMA, DECIMAL_COMMA_PATTERN)


def thousands_comma_cells(cells: Cells | NDArray[np.object_] | pd.Series) -> NDArray[np.bool_]:
    """Per cell, whether it is text written as a number with thousands commas (:data:`THOUSANDS_COMMA_PATTERN`,
    once stripped): ``"1,400"``, ``"12,500,000"``, ``"1,400.50"``.  For hints only; each cell is judged alone."""
    return _pattern_cells(cells, _THOUSANDS_COMMA, THOUSANDS_COMMA_PATTERN)


def thousands_dot_cells(cells: Cells | NDArray[np.object_] | pd.Series) -> NDArray[np.bool_]:
    """Per cell, whether it is text written as a whole number with thousands dots (:data:`THOUSANDS_DOT_PATTERN`,
    once stripped): ``"1.200"``, ``"12.500.000"``.  For hints only, in a column that also holds decimal commas
    (elsewhere ``1.200`` is a decimal); each cell is judged alone."""
    return _pattern_cells(cells, _THOUSANDS_DOT, THOUSANDS_DOT_PATTERN)


def _pattern_cells(
    cells: Cells | NDArray[np.object_] | pd.Series, compiled: re.Pattern[str], pattern: str
) -> NDArray[np.bool_]:
    """Per cell, whether it is text that matches ``pattern`` whole once stripped (False: missing, not text)."""
    if isinstance(cells, (pa.Array, pa.ChunkedArray)):
        arrow = cells if pa.types.is_string(cells.type) or pa.types.is_large_string(cells.type) else None
    else:
        arrow = text_array(np.asarray(cells, dtype=object))
    if arrow is None:  # not text (numbers, or a lone surrogate Arrow cannot hold): nothing written to find
        values = np.asarray(cells, dtype=object)
        return np.fromiter(
            (isinstance(c, str) and compiled.fullmatch(c.strip()) is not None for c in values),
            bool,
            count=len(values),
        )
    hit = pc.match_substring_regex(strip_text(arrow), "^" + pattern + "$").fill_null(False)
    return hit.to_numpy(zero_copy_only=False).astype(bool, copy=False)
