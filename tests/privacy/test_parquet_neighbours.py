"""A party reading Parquet: one added record changes no other row's reading (stop 58, the Parquet reader's rework).

The reader keeps each column in Arrow's or numpy's form when every cell reads alike there, and a column's form
follows its declared type and, for integers, whether it holds a null; a text cell that is not UTF-8 is read as
U+FFFD on its own, and a cell no Python object holds (a date past 9999) as U+FFFD too (the whole file used to fail
for one such cell, after the reservation).  Through the party's data path
(:func:`client._local_data.load_local_data`: reader, the schema's per-record rules, the keyed held-out split), every
row of D reads the same, on the same side of the split, in D and in D plus one hostile record.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from client._local_data import load_local_data
from edprf_core import load_embedded

pytestmark = pytest.mark.privacy

SALT = "5" * 32
ROWS = 400


VISIT = "visit"
"""An ignored column of timestamps (a party's file holds other columns than the schema's)."""
A_DAY = 86_400 * 10**6
YEAR_10000 = 253_402_300_800 * 10**6  # 10000-01-01, in microseconds: past what a Python datetime holds


def _table(X: pd.DataFrame, y: pd.Series, label: str, extra: dict | None = None, view: bool = False) -> pa.Table:
    """The rows as a Parquet table of declared types (integers int64, text string or ``view`` string_view, a
    timestamp column :data:`VISIT`), ``extra`` one more record."""
    visits = [A_DAY * k for k in range(len(X))] + ([extra[VISIT]] if extra is not None else [])
    columns = {VISIT: pa.array(visits, pa.timestamp("us"))}
    for name in [*X.columns, label]:
        values = list(y if name == label else X[name])
        if extra is not None:
            values.append(extra[name])
        if name in X and pd.api.types.is_integer_dtype(X[name]):
            columns[name] = pa.array(values, pa.int64())
        elif any(isinstance(v, bytes) for v in values):  # text with bytes that are not UTF-8: not checked on write
            columns[name] = pa.array([v if isinstance(v, bytes) else str(v).encode() for v in values]).view(pa.string())
        else:
            columns[name] = pa.array([None if v is None else str(v) for v in values], pa.string())
        if view and pa.types.is_string(columns[name].type):
            columns[name] = columns[name].view(pa.binary()).cast(pa.binary_view()).view(pa.string_view())
    return pa.table(columns)


def _read(path, schema) -> pd.DataFrame:
    """Every kept row of the file, by line, with its side of the split: what the party trains or evaluates on."""
    data = load_local_data(path, schema, 0.3, SALT)
    train = data.X_train.assign(_y=data.y_train.to_numpy(), _side="train")
    held = data.X_holdout.assign(_y=data.y_holdout.to_numpy(), _side="held-out")
    return pd.concat([train, held]).sort_index()


@pytest.mark.parametrize(
    "hostile",
    [
        {"age": None},  # a null in an integer column: that column is read as objects, not numpy
        {"job": b"adm\xffin."},  # text that is not UTF-8
        {"age": 2**63 - 1, "balance": -(2**63)},  # the int64 extremes
        {"job": None, "y": None},  # missing text and a missing label
        {VISIT: YEAR_10000},  # a date no Python datetime holds, in an ignored column
    ],
    ids=["null-int", "not-utf8", "int64-extremes", "missing-text", "year-10000"],
)
@pytest.mark.parametrize("view", [False, True], ids=["string", "string_view"])
def test_one_added_parquet_record_changes_no_other_row(tmp_path, hostile, view):
    X, y, schema = load_embedded("bank_marketing")
    X, y = X.iloc[:ROWS], y.iloc[:ROWS]
    schema = replace(schema, ignored_columns=(*schema.ignored_columns, VISIT))
    label = schema.label.column
    record = {**{n: X[n].iloc[0] for n in X.columns}, label: y.iloc[0], VISIT: 0, **hostile}
    d, neighbour = tmp_path / "d.parquet", tmp_path / "d_plus_one.parquet"
    pq.write_table(_table(X, y, label, view=view), d)
    pq.write_table(_table(X, y, label, record, view=view), neighbour)
    without, with_record = _read(d, schema), _read(neighbour, schema)
    assert len(without) > 0.9 * ROWS
    # the added record is the file's last line: the rows of D keep their lines, readings and sides
    common = with_record.loc[with_record.index.isin(without.index)]
    # cell by cell (a local frame's categorical dtype lists the values it holds; nothing of it leaves the party)
    pd.testing.assert_frame_equal(common.astype(str), without.astype(str))
    assert len(with_record) - len(without) in (0, 1)
    assert np.array_equal(common.index.to_numpy(), without.index.to_numpy())
