"""A text file's numbers written with a decimal comma (``5,0``): the per-cell rule of ``--decimal ,``.

Spreadsheets set to a European locale export ``5,0`` for five (and ``;`` between fields).  The schema's rules read
``.`` as the decimal point (:mod:`edprf_core._cell_text`), so each such cell is "not a number" and its row is
refused.  With ``decimal=","`` the reader (:func:`edprf_core.tables.stream_rows`) reads the schema's continuous
columns by this rule, each cell alone:

- a cell that, stripped, is a number with ``,`` as its decimal point (:data:`COMMA_NUMBER_PATTERN`: ``5,0``,
  ``-0,5``, ``12``, ``1,5e3``) is that number: its comma becomes a point, and the schema's rules read it;
- a cell holding a ``.`` written like a number (``1.400``, ``1.234,5``, ``5.0``) is not read: under a decimal comma
  a point is most often a thousands separator (``1.400`` for 1400, which the rules would read as 1.4), so its line
  gets a reason (:data:`POINT_REASON`) and is not scored, never guessed;
- any other cell (empty, a missing token such as ``NA``, text) is left as written, for the schema's rules.

Each record's cells and reason depend on that record only; the label and categorical columns are never changed.
Privacy: reading the caller's own file; nothing is released.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ._cell_text import TEXT_DTYPE, strip_text
from ._encoding import shown_cell
from ._schema import ContinuousFeature, Schema

__all__ = ["COMMA_NUMBER_PATTERN", "DECIMALS", "POINT_REASON", "check_decimal", "read_decimal_commas"]

DECIMALS = (".", ",")
"""The decimal marks a reader takes: the schema's own ``.``, or ``,``."""

COMMA_NUMBER_PATTERN = r"[+-]?(?:[0-9]+,?[0-9]*|,[0-9]+)(?:[eE][+-]?[0-9]+)?"
"""A decimal number with ``,`` as its decimal point (ASCII digits, no thousands separator)."""

_POINT_NUMBER_PATTERN = r"[+-]?[0-9]*\.[0-9.,]*(?:[eE][+-]?[0-9]+)?"
"""A cell written like a number that holds a ``.`` (``1.400``, ``1.234,5``, ``5.0``, ``.5``)."""

POINT_REASON = (
    "column {column!r}: {cell!r} holds a '.', which --decimal ',' does not read (a thousands separator to remove, "
    "or a decimal point to write as ',')"
)
"""Why a line with such a cell is not scored (filled with the column and the cell as written; no "; ", which
joins a row's reasons)."""


def check_decimal(decimal: str, sep: str, parquet: bool = False) -> None:
    """Refuse a decimal mark other than :data:`DECIMALS`, a decimal comma for a Parquet file (its numbers are typed),
    or a decimal mark equal to the field separator."""
    if decimal not in DECIMALS:
        raise ValueError(f"--decimal: expected '.' or ',', got {decimal!r}")
    if parquet and decimal != ".":
        raise ValueError(
            f"--decimal {decimal!r}: DATA is Parquet, whose numbers are typed: there is no decimal mark to read"
        )
    if decimal == sep and not parquet:
        raise ValueError(
            f"--decimal {decimal!r} with --sep {sep!r}: a file cannot use one character for both; such files "
            "separate fields with ';' (pass --sep ';')"
        )


def read_decimal_commas(frame: pd.DataFrame, malformed: np.ndarray, schema: Schema) -> tuple[pd.DataFrame, np.ndarray]:
    """The chunk's continuous columns read by the decimal-comma rule (see the module), and each record's reason.

    Parameters
    ----------
    frame : DataFrame
        Text cells (the reader's), holding the schema's feature columns.
    malformed : ndarray of str
        Per record, ``""`` or why its line could not be read (kept: the first reason stands).
    schema : Schema

    Returns
    -------
    frame : DataFrame
        A copy whose continuous columns' decimal-comma cells are written with ``.``.
    malformed : ndarray of str
        ``malformed``, with :data:`POINT_REASON` for a record that was readable but holds a ``.`` in a continuous
        cell.
    """
    frame = frame.copy(deep=False)
    reasons = np.asarray(malformed, dtype=object).copy()
    for f in schema.features:
        if not isinstance(f, ContinuousFeature) or f.name not in frame:
            continue
        cells = pa.array(frame[f.name].to_numpy(dtype=object), type=pa.large_string(), from_pandas=True)
        stripped = strip_text(cells)
        comma = pc.fill_null(pc.match_substring_regex(stripped, f"^{COMMA_NUMBER_PATTERN}$"), False)
        point = pc.fill_null(pc.match_substring_regex(stripped, f"^{_POINT_NUMBER_PATTERN}$"), False)
        converted = pc.if_else(comma, pc.replace_substring(stripped, ",", "."), cells)
        frame[f.name] = pd.Series(converted.to_pandas(), index=frame.index, dtype=TEXT_DTYPE)
        hit = point.to_numpy(zero_copy_only=False) & (reasons == "")
        if hit.any():
            written = frame[f.name].to_numpy(dtype=object)
            reasons[hit] = [
                POINT_REASON.format(column=f.name, cell=shown_cell(str(written[i]).strip()))
                for i in np.flatnonzero(hit)
            ]
    return frame, reasons
