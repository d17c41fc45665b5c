"""Which of a party's rows are held out for evaluation: a keyed hash of each row's readings, never of its text.

A row's side of the split is a function of that row alone, keyed with a party-local secret ``salt`` (stored
in the ledger, so the coordinator cannot predict the split).  What is hashed is each cell **as the schema
reads it** (:func:`edprf_core.encoding.cell_readings`: a number before clipping, a category's or a class's
declared index), not the cell's text or type.  So ``30``, ``30.0``, ``" 30"``, the integer 30 and the float
30.0 hash alike, and a writer that types or formats a whole column at once (Parquet; pandas writing ``44.0``
for every age once one age is missing) moves no other row when one record is added or removed.  Hashing the
text instead moved 955 of 3,000 rows for one added record that was itself dropped (DP review, stop 52):
the training sets of two neighbouring datasets then differed in hundreds of rows.

Privacy cost: none.  The split is a per-record map (a stable transformation): the training and the held-out
rows of neighbouring datasets are neighbouring, and training and evaluation see the same split whichever
process reads the file.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from edprf_core import Schema
from edprf_core.encoding import cell_readings
from edprf_core.tables import judged_per_category

__all__ = ["held_out_rows", "keyed_uniform", "split_sides"]

_HASHED_AT_ONCE = 1 << 16
"""Readings hashed per call: pandas hashes through a Python object per value, so a column of 2 million distinct
amounts hashed at once would hold 2 million of them at a time (memory review, stop 52)."""

_FOLDED_ROWS = 1 << 16
"""Rows whose column hashes are folded together (:func:`_row_hashes`): a part's 512 KiB of hashes stays in the
processor's cache across the columns (10^6 diabetes rows: 10 ms against 14 ms folding whole columns)."""

_MISSING = np.iinfo(np.uint64).max
"""The hash of a reading that is no number (a missing or unreadable continuous cell)."""


def keyed_uniform(rows: pd.DataFrame, schema: Schema, salt: str) -> NDArray[np.float64]:
    """A uniform number in [0, 1) per row, from a hash of the row's readings keyed with ``salt``.

    Privacy cost: none (a per-record map, see the module docstring).
    """
    return (_row_hashes(rows, schema, salt[:16]) >> np.uint64(11)).astype(np.float64) / float(1 << 53)


def held_out_rows(rows: pd.DataFrame, schema: Schema, salt: str, fraction: float) -> NDArray[np.bool_]:
    """Per row, whether it is held out: ``keyed_uniform(rows, schema, salt) < fraction``, as integers in one pass.

    ``rows``: a frame holding the schema's feature columns and its label, in any order, with any other columns
    (ignored ones: not read); a text column may be a categorical of its texts (each distinct text read once).  With ``k = h >> 11`` the uniform is ``k / 2**53`` exactly, and for an
    integer ``k``, ``k / 2**53 < fraction`` holds if and only if ``k < ceil(fraction * 2**53)`` (the product is
    exact: a power of two), that is ``h < ceil(fraction * 2**53) << 11``.

    Privacy cost: none (a per-record map: neighbouring files give neighbouring training and held-out rows).
    """
    return _below(_row_hashes(rows, schema, salt[:16]), fraction)


def split_sides(
    rows: pd.DataFrame, schema: Schema, salt: str, held_below: float, train_from: float
) -> tuple[NDArray[np.bool_], NDArray[np.bool_]]:
    """Per row, whether it is held out (keyed uniform below ``held_below``) and whether it trains (at least
    ``train_from``), from one pass of the hash; ``held_below <= train_from``, and the rows between serve neither.

    Privacy cost: none (a per-record map, as :func:`held_out_rows`).
    """
    if held_below > train_from:
        raise ValueError(f"held_below: expected at most train_from ({train_from!r}), got {held_below!r}")
    hashed = _row_hashes(rows, schema, salt[:16])
    return _below(hashed, held_below), ~_below(hashed, train_from)


def _below(hashed: NDArray[np.uint64], fraction: float) -> NDArray[np.bool_]:
    """Per row, whether its uniform ``(h >> 11) / 2**53`` is below ``fraction`` (see :func:`held_out_rows`)."""
    bound = math.ceil(fraction * float(1 << 53)) << 11
    if bound >= 1 << 64:
        return np.ones(len(hashed), dtype=bool)
    return hashed < np.uint64(max(bound, 0))


def _row_hashes(rows: pd.DataFrame, schema: Schema, key: str) -> NDArray[np.uint64]:
    """Each row's hash: the keyed hashes of its features' and its label's readings, in the schema's order, folded
    as CPython folds a tuple's hashes (as pandas does).

    Only the columns the schema reads, in its order: an ignored column (an identifier, a note) is not read, and a
    file whose header orders the columns otherwise puts each row on the same side.  Each column's readings are
    hashed once per distinct text (a categorical's), then the hashes are gathered and folded
    :data:`_FOLDED_ROWS` rows at a time, every column in turn: the same numbers as folding whole columns, with
    the part's arrays held in the processor's cache.
    """
    read = [*schema.feature_names, schema.label.column]
    n, width = len(rows), len(read)
    hashed = [_column_hashes(rows[name], schema, name, key) for name in read]
    out = np.empty(n, dtype=np.uint64)
    gathered = np.empty(min(n, _FOLDED_ROWS), dtype=np.uint64)  # one buffer for every part of every column
    for start in range(0, n, _FOLDED_ROWS):
        part = out[start : start + _FOLDED_ROWS]
        part[:] = 0x345678
        factor = np.uint64(1000003)
        for i, (per_slot, codes) in enumerate(hashed):
            if codes is None:  # hashed per row
                part ^= per_slot[start : start + part.size]
            else:
                part ^= np.take(per_slot, codes[start : start + part.size], out=gathered[: part.size], mode="wrap")
            part *= factor
            factor += np.uint64(82520 + 2 * (width - i))
    out += np.uint64(97531)
    return out


def _column_hashes(
    cells: pd.Series, schema: Schema, column: str, key: str
) -> tuple[NDArray[np.uint64], NDArray[np.integer] | None]:
    """The keyed hash of each cell's reading: for a categorical column, one per category then one for a missing
    cell, and the codes that gather them (``mode="wrap"``: code -1 takes the last); for any other, one per row
    and None."""

    def keyed(cells: pd.Series) -> NDArray[np.uint64]:
        return _keyed(cell_readings(cells.reset_index(drop=True), schema, column), key)

    per_category = judged_per_category(cells, keyed)
    return (keyed(cells), None) if per_category is None else per_category


def _keyed(readings: NDArray[np.float64], key: str) -> NDArray[np.uint64]:
    """SipHash (pandas' ``hash_array``, keyed) of each reading's eight bytes, computed once per distinct reading.

    The bytes of a little-endian float64 as Python ``bytes`` (numpy drops trailing zero bytes: still one text
    per value, all of width 8); no number (NaN) hashes to :data:`_MISSING`.
    """
    # the distinct numbers by a hash table (numpy's unique sorts: 0.1 s for 10^6 distinct amounts); every NaN
    # gets the code -1, which takes the last slot, _MISSING.  Readings are never -0.0 (cell_readings adds 0.0), so
    # equal numbers have equal bytes, whichever of them the table keeps
    rows, distinct = pd.factorize(np.asarray(readings, dtype=np.float64), use_na_sentinel=True)
    hashed = np.empty(distinct.size + 1, dtype=np.uint64)
    hashed[-1] = _MISSING
    values = np.ascontiguousarray(distinct, dtype="<f8").view("S8")
    for start in range(0, values.size, _HASHED_AT_ONCE):  # a slice of Python bytes objects at a time
        part = values[start : start + _HASHED_AT_ONCE].astype(object)
        hashed[start : start + part.size] = pd.util.hash_array(part, hash_key=key, categorize=False)
    return hashed[rows]
