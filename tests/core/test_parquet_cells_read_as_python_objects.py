"""A Parquet file's cells read as the Python objects ``to_pylist`` gives them, whatever form the reader keeps.

The reader once turned every cell of a Parquet file into a Python object (``pd.Series(column.to_pylist(),
dtype=object)``: 3.5 GB for 10^6 rows x 51 columns); it now keeps Arrow's text and numpy's numbers where every
cell reads alike (:func:`edprf_core._text_table._parquet_cells`).  The privacy argument needs each row's fate to
be a function of that row's cells and the public schema: the forms may differ by column (by its type, by
whether it holds a null), never what a cell reads as.  So every Arrow type a Parquet file may declare, with
nulls and with valid and invalid cells for each kind of feature and for the label, is read both ways and
compared: rows kept and the notes on the others, every cell's code, the label's class, every cell's reading (the
held-out split's key), the data check's report and the party's own training and held-out rows.  The old object
path is kept here only, as the reference (:func:`_object_table`).
"""

from __future__ import annotations

import datetime
from decimal import Decimal

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from client._held_out_split import keyed_uniform
from client._local_data import load_local_data
from edprf_core import DataValidationError, Schema, check_data
from edprf_core import _text_table as text_table
from edprf_core._encoding import declared_labels
from edprf_core.encoding import FeatureGrid, cell_readings, conforming_rows, encode_features, encode_labels
from edprf_core.tables import TextTable, read_table

SALT = "0123456789abcdef" * 2
ROWS = 97  # several row groups of 16 rows: the columns arrive in chunks

_TEXT = [
    "1", "0", "2", "-3", " 1 ", "1.0", "2.00", "-1", " -1.00", "007", "7", "1.5", "a", " a", "A", "x", "True",
    "False", "true", "", "?", "NA", "nan", "inf", "-inf", "1e3", "1e309", "1_000", "Zu\u0308rich", "Z\u00fcrich",
    "\ufffd", "yes", "-0", "0x10", "None",
]  # fmt: skip
_INTEGERS = [0, 1, 2, -3, -1, 7, 3, 100, 11, -128, 127]
_FLOATS = [0.0, 1.0, 2.0, -3.0, -1.0, 1.5, 0.1, -0.0, 7.25, 1e308, -1e308, 9.5, float("nan"), float("inf"), -np.inf]
_LARGE = [2**53 + 1, 2**63 - 1, -(2**63), 2**62 + 3, 10**18 + 1]

VALUES: dict[str, tuple[pa.DataType, list[object]]] = {
    "int8": (pa.int8(), _INTEGERS),
    "int16": (pa.int16(), [*_INTEGERS, 32767, -32768]),
    "int32": (pa.int32(), [*_INTEGERS, 2**31 - 1, -(2**31)]),
    "int64": (pa.int64(), [*_INTEGERS, *_LARGE]),
    "uint8": (pa.uint8(), [0, 1, 2, 3, 7, 11, 255]),
    "uint16": (pa.uint16(), [0, 1, 2, 3, 7, 65535]),
    "uint32": (pa.uint32(), [0, 1, 2, 3, 7, 2**32 - 1]),
    "uint64": (pa.uint64(), [0, 1, 2, 3, 7, 2**64 - 1, 2**63 + 1, 2**53 + 1, 2**64 - 1025]),
    "float16": (pa.float16(), _FLOATS[:9] + [7.25, 65504.0, float("nan"), float("inf")]),
    "float32": (pa.float32(), [*_FLOATS[:9], 3.4e38, float("nan"), float("inf"), 16777217.0]),
    "float64": (pa.float64(), [*_FLOATS, 2.0**53 + 1, 5e-324]),
    "bool": (pa.bool_(), [True, False]),
    "string": (pa.string(), _TEXT),
    "large_string": (pa.large_string(), _TEXT),
    "dictionary_string": (pa.dictionary(pa.int32(), pa.string()), _TEXT),
    "dictionary_int": (pa.dictionary(pa.int8(), pa.int64()), _INTEGERS),
    "null": (pa.null(), [None]),
    "decimal": (pa.decimal128(12, 3), [Decimal("1.000"), Decimal(0), Decimal("1.5"), Decimal(-3), Decimal("7.25")]),
    "decimal256": (pa.decimal256(40, 2), [Decimal("1.00"), Decimal(2), Decimal("-1.00"), Decimal("99.99")]),
    "date": (pa.date32(), [datetime.date(2024, 1, 1), datetime.date(1970, 1, 2)]),
    "timestamp": (pa.timestamp("us"), [datetime.datetime(2024, 1, 1, 12), datetime.datetime(1970, 1, 1)]),
    "timestamp_tz": (pa.timestamp("ms", tz="UTC"), [datetime.datetime(2024, 1, 1, tzinfo=datetime.UTC)]),
    "binary": (pa.binary(), [b"1", b"0", b"a", b"", b"\xff"]),
}
"""Per Parquet type, the values its cells cycle through (each column also gets nulls, but see :data:`NO_NULLS`)."""

NO_NULLS = {"int8", "int64", "uint64", "bool", "float64", "string", "dictionary_string"}
"""Types also written without a null (integers and booleans then keep numpy's dtype)."""

FEATURES = ("cont", "intcat", "textcat", "numcat", "catch")


def _cells(kind: str, nulls: bool, seed: int) -> pa.Array:
    """:data:`ROWS` cells of the type, its values in a shuffled cycle; about one in six null when ``nulls``."""
    arrow_type, values = VALUES[kind]
    rng = np.random.default_rng(seed)
    picked = [values[i] for i in rng.integers(0, len(values), ROWS)]
    if nulls:
        picked = [None if gap else v for v, gap in zip(picked, rng.random(ROWS) < 1 / 6)]
    if pa.types.is_dictionary(arrow_type):
        return pa.array(picked, type=arrow_type.value_type).dictionary_encode().cast(arrow_type)
    return pa.array(picked, type=arrow_type)


def _write(path, kind: str, nulls: bool) -> None:
    """A file whose feature columns and ``outcome`` hold the type's cells, ``fixed`` a valid text label, ``rid``
    each row's number (an ignored column: which rows a party keeps, and on which side)."""
    columns = {name: _cells(kind, nulls, seed) for seed, name in enumerate([*FEATURES, "outcome"])}
    columns["fixed"] = pa.array(np.where(np.arange(ROWS) % 3 == 0, "1", "0"))
    columns["rid"] = pa.array(np.arange(ROWS, dtype=np.int64))
    pq.write_table(pa.table(columns), path, row_group_size=16)


def _schema(variant: str) -> Schema:
    """Every kind of feature on the type's cells; the label on them (text or numeric classes) or on ``fixed``."""
    refuse = variant in ("text_label", "number_label", "fixed_refuse")
    features = [
        {"kind": "continuous", "name": "cont", "lower": -2.0, "upper": 10.0, "missing": "refuse" if refuse else 4.5},
        {
            "kind": "categorical",
            "name": "intcat",
            "categories": ["0", "1", "2", "-3"],  # canonical integers: 1.0 meets "1"
            "unknown": "refuse" if refuse else "0",
            "missing": "refuse" if refuse else "separate",
        },
        {
            "kind": "categorical",
            "name": "textcat",
            "categories": ["a", "True", "False", "1.5", "007", "Z\u00fcrich", "x", "b'1'", "2024-01-01"],
            "unknown": "refuse" if refuse else "x",
            "missing": "refuse" if refuse else "a",
        },
        {"kind": "categorical", "name": "numcat", "categories": [0, 1, 2, 1.5, -3], "unknown": "refuse"},
        {"kind": "categorical", "name": "catch", "categories": ["1", "a", "other"], "unknown": "other"},
    ]
    if variant == "text_label":
        label = {"column": "outcome", "classes": ["0", "1", "a", "True"], "aliases": {"yes": "1", "2": "0"}}
    elif variant == "number_label":
        label = {"column": "outcome", "classes": [0, 1, 2], "aliases": {"-3": 2, "7.25": 1}}
    else:
        label = {"column": "fixed", "classes": ["0", "1"]}
    ignored = ["rid", "fixed" if label["column"] == "outcome" else "outcome"]
    schema = {"format": 1, "ignored_columns": ignored, "label": label, "features": features}
    if variant == "fixed_lenient":
        schema.update(missing_values=["", "?", "-1", "NA"], strip_whitespace=False)
    else:
        schema.update(missing_values=["", "?", "-1"])
    return Schema.from_dict(schema)


VARIANTS = ("text_label", "number_label", "fixed_refuse", "fixed_lenient")
CASES = [(kind, True) for kind in VALUES] + [(kind, False) for kind in sorted(NO_NULLS)]


def _object_table(path, schema: Schema) -> TextTable:
    """The reader before: every cell the Python object ``to_pylist`` gives (the reference, kept here only)."""
    table = pq.read_table(path)
    names = text_table.header_names(schema, text_table.names_line(table.column_names), ",", True, path)
    written = {name.strip(): name for name in table.column_names}
    columns = {name: pd.Series(table.column(written[name]).to_pylist(), dtype=object) for name in names}
    frame = pd.DataFrame(columns) if columns else pd.DataFrame()
    label = schema.label.column
    return TextTable(
        X=frame.drop(columns=[label]),
        y=frame[label],
        line_numbers=np.arange(1, len(frame) + 1, dtype=np.int64),
        dropped=[],
    )


def _raised(call) -> str | None:
    """The text of the DataValidationError ``call()`` raises (None when it returns)."""
    try:
        call()
    except DataValidationError as exc:
        return str(exc)
    return None


def _failure(call) -> tuple[type, str] | None:
    """The type and text of the exception ``call()`` raises other than a refusal (None when it returns)."""
    try:
        call()
    except DataValidationError:
        return None
    except Exception as exc:  # noqa: BLE001 - any failure, compared between the two readers
        return type(exc), str(exc)
    return None


def _same_problems(found, expected) -> None:
    assert [(c, w) for c, w, _ in found] == [(c, w) for c, w, _ in expected]
    for (_, _, mask), (_, _, want) in zip(found, expected):
        np.testing.assert_array_equal(mask, want)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize(("kind", "nulls"), CASES, ids=[f"{k}-{'nulls' if n else 'full'}" for k, n in CASES])
def test_every_row_reads_as_its_python_objects(tmp_path, kind, nulls, variant):
    path = tmp_path / "data.parquet"
    _write(path, kind, nulls)
    schema = _schema(variant)
    new, old = read_table(path, schema), _object_table(path, schema)
    assert list(new.X.columns) == list(old.X.columns)
    np.testing.assert_array_equal(new.line_numbers, old.line_numbers)
    assert new.dropped == old.dropped
    for name in [*new.X.columns, schema.label.column]:  # a column the reader leaves as objects: the same objects
        column, reference = pd.concat([new.X, new.y], axis=1)[name], pd.concat([old.X, old.y], axis=1)[name]
        if column.dtype == object:
            assert [type(v) for v in column] == [type(v) for v in reference]
            assert column.equals(reference), name
    # which rows a party keeps, and the notes its log gets
    failed = _failure(lambda: conforming_rows(old.X, old.y, schema, old.line_numbers))
    if failed:  # the rules cannot read the type (binary: bytes have no .str): the same failure, nothing else
        assert _failure(lambda: conforming_rows(new.X, new.y, schema, new.line_numbers)) == failed
        return
    keep, notes = conforming_rows(new.X, new.y, schema, new.line_numbers)
    want_keep, want_notes = conforming_rows(old.X, old.y, schema, old.line_numbers)
    np.testing.assert_array_equal(keep, want_keep)
    assert notes == want_notes
    # every cell's code, refused cells recorded (their placeholder codes too), and the kept rows' codes
    grid = FeatureGrid.from_schema(schema, n_bins=4)
    found, expected = [], []
    np.testing.assert_array_equal(
        encode_features(new.X, schema, grid, found), encode_features(old.X, schema, grid, expected)
    )
    _same_problems(found, expected)
    np.testing.assert_array_equal(
        encode_features(new.X[keep], schema, grid), encode_features(old.X[want_keep], schema, grid)
    )
    np.testing.assert_array_equal(encode_labels(new.y[keep], schema), encode_labels(old.y[want_keep], schema))
    # a refusal (an estimator fitted on the rows as read) names the same rows and cells
    assert _raised(lambda: encode_features(new.X, schema, grid)) == _raised(
        lambda: encode_features(old.X, schema, grid)
    )
    assert _raised(lambda: encode_labels(new.y, schema)) == _raised(lambda: encode_labels(old.y, schema))
    # every cell's reading: the key of the held-out split
    for name in [*schema.feature_names, schema.label.column]:
        column = new.y if name == schema.label.column else new.X[name]
        reference = old.y if name == schema.label.column else old.X[name]
        np.testing.assert_array_equal(
            cell_readings(column, schema, name), cell_readings(reference, schema, name), err_msg=name
        )
    np.testing.assert_array_equal(
        keyed_uniform(pd.concat([new.X, new.y], axis=1), schema, SALT),
        keyed_uniform(pd.concat([old.X, old.y], axis=1), schema, SALT),
    )
    # the label as read_csv gives it: each declared class it reads as (a cell that is none: missing or as written)
    got, want = declared_labels(new.y, schema), declared_labels(old.y, schema)
    assert [None if pd.isna(v) else v for v in got] == [None if pd.isna(v) else v for v in want]


# privacy gate: the held-out split of rows with missing cells is the rule's (mutation campaign 4, M02)
@pytest.mark.privacy
@pytest.mark.parametrize("variant", ["text_label", "fixed_lenient"])
@pytest.mark.parametrize(("kind", "nulls"), CASES, ids=[f"{k}-{'nulls' if n else 'full'}" for k, n in CASES])
def test_the_party_and_the_data_check_see_the_same_rows(tmp_path, monkeypatch, kind, nulls, variant):
    """``load_local_data`` (the party's training and held-out rows) and ``check_data`` (``edprf schema check``)
    give what they gave on the object columns."""
    path = tmp_path / "data.parquet"
    _write(path, kind, nulls)
    schema = _schema(variant)
    monkeypatch.setattr(text_table, "_read_parquet", _object_table)
    failed = _failure(lambda: load_local_data(path, schema, 0.3, SALT))
    old_data, old_check = (
        (None, None) if failed else (load_local_data(path, schema, 0.3, SALT), check_data(path, schema))
    )
    monkeypatch.undo()
    if failed:  # the rules cannot read the type (binary): the same failure
        assert _failure(lambda: load_local_data(path, schema, 0.3, SALT)) == failed
        return
    new_data, new_check = load_local_data(path, schema, 0.3, SALT), check_data(path, schema)
    assert new_check == old_check
    grid = FeatureGrid.from_schema(schema, n_bins=4)
    for part in ("train", "holdout"):
        X, y = getattr(new_data, f"X_{part}"), getattr(new_data, f"y_{part}")
        X_old, y_old = getattr(old_data, f"X_{part}"), getattr(old_data, f"y_{part}")
        assert X["rid"].tolist() == X_old["rid"].tolist()
        np.testing.assert_array_equal(encode_features(X, schema, grid), encode_features(X_old, schema, grid))
        np.testing.assert_array_equal(encode_labels(y, schema), encode_labels(y_old, schema))


def test_a_file_without_rows_reads_as_before(tmp_path):
    path = tmp_path / "empty.parquet"
    empty = {name: pa.array([], type=VALUES[kind][0]) for name, kind in zip(FEATURES, VALUES)}
    pq.write_table(pa.table({**empty, "outcome": pa.array([], pa.string()), "fixed": pa.array([], pa.string()),
                             "rid": pa.array([], pa.int64())}), path)  # fmt: skip
    schema = _schema("text_label")
    new, old = read_table(path, schema), _object_table(path, schema)
    assert len(new.X) == len(old.X) == 0 and list(new.X.columns) == list(old.X.columns)
    keep, notes = conforming_rows(new.X, new.y, schema)
    assert keep.size == 0 and notes == conforming_rows(old.X, old.y, schema)[1]


@pytest.mark.parametrize("dictionary", [False, True])
def test_text_that_is_not_utf8_is_read_cell_by_cell(tmp_path, dictionary):
    """A Parquet reader does not check that text is UTF-8, and ``to_pylist`` refused the whole file for one such
    cell: one record then decided whether the party could read any (its reply told of that record).  Each cell is
    decoded on its own now, such bytes read as U+FFFD as the CSV reader reads them; the other rows read as in a file
    without that record."""
    offsets = np.array([0, 1, 3, 4], dtype=np.int32)
    bad = pa.Array.from_buffers(pa.string(), 3, [None, pa.py_buffer(offsets.tobytes()), pa.py_buffer(b"a\xffb1")])
    good = pa.array(["a", "b", "1"])
    if dictionary:
        bad = pa.DictionaryArray.from_arrays(pa.array([0, 1, 2], pa.int32()), bad)
        good = pa.DictionaryArray.from_arrays(pa.array([0, 1, 2], pa.int32()), good)
    numbers = pa.array([1.0, 2.0, 3.0])
    labels = pa.array(["1", "0", "1"])
    schema = _schema("fixed_refuse")
    tables = {}
    for name, text in (("bad", bad), ("good", good)):
        columns = {feature: text if feature == "textcat" else numbers for feature in FEATURES}
        path = tmp_path / f"{name}.parquet"
        pq.write_table(pa.table({**columns, "outcome": labels, "fixed": labels, "rid": pa.array([0, 1, 2])}), path)
        tables[name] = read_table(path, schema)
    cells = list(tables["bad"].X["textcat"])
    assert cells == ["a", "\ufffdb", "1"]
    for row in (0, 2):  # the rows without the bytes read as without them
        assert tables["bad"].X.iloc[row].astype(str).tolist() == tables["good"].X.iloc[row].astype(str).tolist()
