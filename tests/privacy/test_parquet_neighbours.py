"""A party reading Parquet: one added record changes no other row's reading (stop 58, the Parquet reader's rework).

The reader keeps each column in Arrow's or numpy's form when every cell reads alike there, and a column's form
follows its declared type and, for integers, whether it holds a null; a text cell that is not UTF-8 is read as
U+FFFD on its own, and a cell no Python object holds (a date past 9999) as U+FFFD too (the whole file used to fail
for one such cell, after the reservation).  Through the party's data path
(:func:`client._local_data.load_local_data`: reader, the schema's per-record rules, the keyed held-out split), every
row of D reads the same, on the same side of the split, in D and in D plus one hostile record; and, where D holds
null text cells that its schema imputes, in D with one record placed first or with its first row removed (a text
column is numbered in order of first appearance, so those two neighbours change every category's number).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from client._local_data import load_local_data
from edprf_core import Schema, load_embedded
from edprf_core.encoding import FeatureGrid, encode_features

from ..federation._neighbours import HEADER, SCHEMA_TOML, base_lines

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
    """Every kept row of the file, by line, with its readings (its codes on the schema's grid) and its side of the
    split: what the party trains or evaluates on."""
    data = load_local_data(path, schema, 0.3, SALT)
    grid = FeatureGrid.from_schema(schema, 8)

    def rows(X, y, side):
        return X.assign(_y=y.to_numpy(), _reading=list(map(tuple, encode_features(X, schema, grid))), _side=side)

    return pd.concat(
        [rows(data.X_train, data.y_train, "train"), rows(data.X_holdout, data.y_holdout, "held-out")]
    ).sort_index()


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


def _imputing_schema(code_missing: str) -> Schema:
    """The neighbouring harness's schema (``age`` continuous, ``missing = 50.0``) with the categorical ``code``'s
    missing rule ``code_missing`` (a TOML value: ``"separate"``, or a declared category that imputes it)."""
    refused = 'unknown = "other"\nmissing = "refuse"'
    assert SCHEMA_TOML.count(refused) == 1
    return Schema.from_toml(SCHEMA_TOML.replace(refused, f'unknown = "other"\nmissing = {code_missing}'))


def _text_parquet(path, rows: list[list[str | None]]):
    """``rows`` under the harness's header as a Parquet file of text columns (None: a null cell)."""
    names = HEADER.decode().split(",")
    pq.write_table(pa.table({n: pa.array([r[i] for r in rows], pa.string()) for i, n in enumerate(names)}), path)
    return path


NULL_CELLS = [("age", '"refuse"'), ("code", '"separate"'), ("code", '"other"')]
"""The column holding nulls and the ``code`` column's missing rule: each null is imputed (age 50.0, code's
separate slot or the declared ``other``), so its row is kept and its side of the split hashes the null."""


@pytest.mark.parametrize(("column", "code_missing"), NULL_CELLS, ids=["age-50", "code-separate", "code-other"])
def test_null_cells_keep_their_side_when_a_record_comes_first_or_the_first_goes(tmp_path, column, code_missing):
    """A Parquet text column is numbered in order of first appearance, a null cell code -1.  D holds nulls in a
    column whose rule imputes them; D' places a record of other texts FIRST (it becomes the first category of
    every column), D'' removes D's first row.  Every row of D keeps its cells, its reading and its side: a null
    hashes as a missing reading, never as whichever text the file shows first (mutation campaign 4, M02: 38 of
    108 null ages changed side for one record placed first)."""
    schema = _imputing_schema(code_missing)
    at = HEADER.decode().split(",").index(column)
    rows = [line.decode().split(",") for line in base_lines(ROWS)]
    rng = np.random.default_rng(0)
    for row in rows[1:]:  # D's first row keeps its text: the first category of D's column
        row[at] = None if rng.random() < 0.2 else row[at]
    hostile = ["99.9", "12", "3", "0"]
    assert all(h != cell for h, cell in zip(hostile, rows[0])) and rows[1][at] not in (None, rows[0][at])
    d = _read(_text_parquet(tmp_path / "d.parquet", rows), schema)
    first = _read(_text_parquet(tmp_path / "first.parquet", [hostile, *rows]), schema)
    removed = _read(_text_parquet(tmp_path / "removed.parquet", rows[1:]), schema)
    held = d["_side"].where(d[column].isna()).value_counts()
    assert len(d) == ROWS and held.get("train", 0) >= 10 and held.get("held-out", 0) >= 10  # nulls on both sides
    assert len(first) == ROWS + 1 and len(removed) == ROWS - 1
    shifted = first.iloc[1:].set_axis(first.index[1:] - 1)  # D's row i is D''s row i + 1
    pd.testing.assert_frame_equal(shifted.astype(str), d.astype(str))
    pd.testing.assert_frame_equal(removed.set_axis(removed.index + 1).astype(str), d.iloc[1:].astype(str))
