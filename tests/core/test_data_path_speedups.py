"""The party's data path, made faster, gives every row the same fate, code and side of the split.

The encoder and ``conforming_rows`` judge each text column's distinct cells once and map the verdicts
and codes back; they must return, row by row, what judging every row returns (the same rules on object
columns, which are never collapsed).  The keyed hold-out hash must stay the same function of a row's
cells: a pinned fixture fixes which rows are held out.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from client._held_out_split import held_out_rows, keyed_uniform
from client._local_data import load_local_data
from edprf_core import DataValidationError, Schema
from edprf_core._encoding import rule_violations
from edprf_core.encoding import FeatureGrid, conforming_rows, encode_features, encode_labels
from edprf_core.tables import read_table
from tests.federation._neighbours import SCHEMA_TOML

SCHEMA = Schema.from_toml(SCHEMA_TOML)  # age (continuous), code and grade (categorical), outcome
SALT = "0123456789abcdef" * 2


def _messy_table(n: int = 3000, seed: int = 3) -> tuple[pd.DataFrame, pd.Series]:
    """Text cells with repeats, whitespace variants, missing tokens, non-numbers and out-of-domain values."""
    rng = np.random.default_rng(seed)
    age = rng.choice(["30", " 30", "30 ", "1e309", "NaN", "", "abc", "-0", "101", "7.5", "?"], n)
    code = rng.choice(["007", "12", "other", " 12 ", "x", "", "NA"], n)
    grade = rng.choice(["1", "2", "3", "2.0", "?", "4", " 3"], n)
    label = rng.choice(["0", "1", "1 ", "2", ""], n)
    X = pd.DataFrame({"age": age, "code": code, "grade": grade}, dtype="str")
    return X, pd.Series(label, name="outcome", dtype="str")


def _row_by_row(X: pd.DataFrame, y: pd.Series) -> tuple[np.ndarray, list[tuple[str, str, np.ndarray]]]:
    problems = rule_violations(X.astype(object), y.astype(object), SCHEMA)  # object cells: every row judged
    keep = np.ones(len(X), dtype=bool)
    for _, _, mask in problems:
        keep &= ~mask
    return keep, problems


def test_conforming_rows_gives_every_row_the_verdict_of_judging_it_alone():
    X, y = _messy_table()
    keep, notes = conforming_rows(X, y, SCHEMA)
    expected_keep, problems = _row_by_row(X, y)
    assert 0 < keep.sum() < len(X)  # the fixture exercises both fates
    np.testing.assert_array_equal(keep, expected_keep)
    assert len(notes) == len(problems)
    for note, (column, what, mask) in zip(notes, problems):
        assert note.startswith(f"column {column!r}: {what}: {int(mask.sum())} rows")


def test_conforming_rows_on_object_columns_keeps_every_row_as_its_own_cell():
    """1 == 1.0 == True in an object column, yet the rules read them apart: no collapsing there."""
    X = pd.DataFrame(
        {
            "age": np.array([30, 30.0, True, "30", None, "x"], dtype=object),
            "code": np.array(["007", "007", "12", "x", "12", "007"], dtype=object),
            "grade": np.array([1, 1.0, True, "2", 2, 4], dtype=object),
        }
    )
    y = pd.Series(np.array(["0", 1, 1.0, True, "1", "0"], dtype=object), name="outcome")
    keep, _ = conforming_rows(X, y, SCHEMA)
    np.testing.assert_array_equal(keep, _row_by_row(X, y)[0])


def test_a_row_keeps_its_verdict_whatever_other_rows_hold():
    """The verdict of a row does not move when other rows (and so the set of distinct cells) change."""
    X, y = _messy_table()
    keep, _ = conforming_rows(X, y, SCHEMA)
    keep_half, _ = conforming_rows(X.iloc[::2], y.iloc[::2], SCHEMA)
    np.testing.assert_array_equal(keep_half, keep[::2])


# The keyed hold-out hash of five fixed rows under SALT (pinned: a change would move parties' held-out rows).
PINNED_ROWS = pd.DataFrame(
    {
        "age": ["30", "7.5", " 30", "", "30"],
        "code": ["007", "12", "007", "x", "007"],
        "grade": ["1", "2", "1", "3", "1"],
    },
    dtype="str",
)
PINNED_LABELS = pd.Series(["0", "1", "0", "1", "1"], name="outcome", dtype="str")
PINNED_UNIFORMS = [0.6370664638257202, 0.596608148839376, 0.6370664638257202, 0.30638273698691865, 0.5952422979979499]


def test_the_keyed_holdout_hash_is_pinned_on_a_fixture():
    u = keyed_uniform(pd.concat([PINNED_ROWS, PINNED_LABELS], axis=1), SCHEMA, SALT)
    np.testing.assert_allclose(u, PINNED_UNIFORMS, rtol=0, atol=0)


@pytest.mark.parametrize("holdout", [0.2, 0.5])
def test_the_split_of_a_file_is_a_function_of_each_row_alone(tmp_path, holdout):
    """Each row's side is its own cells' keyed hash: the same whether read alone or among others."""
    X, y = _messy_table(400)
    path = tmp_path / "data.csv"
    pd.concat([X, y], axis=1).to_csv(path, index=False)
    data = load_local_data(path, SCHEMA, holdout, SALT)
    table = read_table(path, SCHEMA)
    keep, _ = conforming_rows(table.X, table.y, SCHEMA)
    rows = pd.concat([table.X[keep], table.y[keep]], axis=1)
    alone = np.array([keyed_uniform(rows.iloc[[i]], SCHEMA, SALT)[0] for i in range(len(rows))]) < holdout
    assert len(data.X_holdout) == int(alone.sum()) and len(data.X_train) == int((~alone).sum())
    texts = data.X_holdout.astype(table.X.dtypes.to_dict())  # the party's categorical view, read back as text
    pd.testing.assert_frame_equal(texts.reset_index(drop=True), table.X[keep][alone].reset_index(drop=True))


def test_categorical_text_columns_get_the_verdicts_of_their_texts():
    """The party judges a categorical view of its text columns: the same verdicts and notes as the texts."""
    X, y = _messy_table()
    keep, notes = conforming_rows(X.astype("category"), y.astype("category"), SCHEMA)
    expected_keep, expected_notes = conforming_rows(X, y, SCHEMA)
    np.testing.assert_array_equal(keep, expected_keep)
    assert notes == expected_notes
    clean = X[expected_keep].astype("category")  # no missing cell left: no note about one
    assert (
        conforming_rows(clean, y[expected_keep].astype("category"), SCHEMA)[1]
        == conforming_rows(X[expected_keep], y[expected_keep], SCHEMA)[1]
    )


def test_the_keyed_hash_of_a_categorical_view_is_the_hash_of_the_texts():
    X, y = _messy_table(300)
    rows = pd.concat([X, y], axis=1)
    np.testing.assert_array_equal(
        keyed_uniform(rows.astype("category"), SCHEMA, SALT), keyed_uniform(rows, SCHEMA, SALT)
    )


def test_object_cells_of_a_parquet_file_are_not_merged(tmp_path):
    """1, 1.0 and True are equal to pandas but read apart by the rules: the party's view keeps them apart."""
    pq = pytest.importorskip("pyarrow.parquet")
    import pyarrow as pa

    table = pa.table(
        {
            "age": pa.array([30.0, 30.0, 7.5, 30.0]),
            "code": pa.array(["007", "12", "007", "x"]),
            "grade": pa.array([1, 2, 1, 3]),
            "outcome": pa.array(["0", "1", "0", "1"]),
        }
    )
    path = tmp_path / "data.parquet"
    pq.write_table(table, path)
    data = load_local_data(path, SCHEMA, 0.5, SALT)
    read = read_table(path, SCHEMA)
    keep, _ = conforming_rows(read.X, read.y, SCHEMA)
    rows = pd.concat([read.X[keep], read.y[keep]], axis=1)
    assert len(data.X_holdout) == int((keyed_uniform(rows, SCHEMA, SALT) < 0.5).sum())
    assert len(data.X_train) + len(data.X_holdout) == int(keep.sum())


@pytest.mark.parametrize("view", ["str", "category"])
def test_the_encoder_gives_every_row_the_code_of_encoding_it_alone(view):
    """Codes and per-rule masks of a text column (or its categorical view) equal those of encoding each row."""
    X, y = _messy_table()
    grid = FeatureGrid.from_schema(SCHEMA, n_bins=4)
    found, expected = [], []
    codes = encode_features(X.astype(view), SCHEMA, grid, found)
    np.testing.assert_array_equal(codes, encode_features(X.astype(object), SCHEMA, grid, expected))
    assert [(c, w) for c, w, _ in found] == [(c, w) for c, w, _ in expected]
    for (_, _, mask), (_, _, want) in zip(found, expected):
        np.testing.assert_array_equal(mask, want)
    keep, _ = _row_by_row(X, y)
    np.testing.assert_array_equal(
        encode_labels(y[keep].astype(view), SCHEMA), encode_labels(y[keep].astype(object), SCHEMA)
    )


@pytest.mark.parametrize("view", ["str", "category"])
def test_a_refused_cell_names_the_same_rows_with_or_without_the_shortcut(view):
    """Without a problems list the error names the rows that hold the cell, as encoding row by row does."""
    X, y = _messy_table(200)
    X.index = X.index * 3 + 7
    grid = FeatureGrid.from_schema(SCHEMA, n_bins=4)
    with pytest.raises(DataValidationError) as row_by_row:
        encode_features(X.astype(object), SCHEMA, grid)
    with pytest.raises(DataValidationError) as shortcut:
        encode_features(X.astype(view), SCHEMA, grid)
    assert str(shortcut.value) == str(row_by_row.value)
    with pytest.raises(DataValidationError) as label_error:
        encode_labels(y.astype(view), SCHEMA)
    assert str(label_error.value) == str(
        pytest.raises(DataValidationError, encode_labels, y.astype(object), SCHEMA).value
    )


def test_a_category_no_row_holds_refuses_no_row():
    """A categorical column may declare categories that no row holds: they are encoded but refuse nothing."""
    X, y = _messy_table(300)
    keep, _ = _row_by_row(X, y)
    clean = X.astype("category")[keep]  # categories of all rows, kept rows only: some unused, refused texts
    assert any(len(clean[c].cat.categories) > clean[c].nunique() for c in clean.columns)
    grid = FeatureGrid.from_schema(SCHEMA, n_bins=4)
    np.testing.assert_array_equal(
        encode_features(clean, SCHEMA, grid), encode_features(X[keep].astype(object), SCHEMA, grid)
    )
    assert rule_violations(clean, y.astype("category")[keep], SCHEMA) == []


def test_the_partys_local_data_is_a_categorical_view_of_the_files_texts(tmp_path):
    X, y = _messy_table(400)
    path = tmp_path / "data.csv"
    pd.concat([X, y], axis=1).to_csv(path, index=False)
    data = load_local_data(path, SCHEMA, 0.3, SALT)
    assert all(isinstance(t, pd.CategoricalDtype) for t in data.X_train.dtypes)
    assert isinstance(data.y_train.dtype, pd.CategoricalDtype)
    table = read_table(path, SCHEMA)
    rows = np.r_[data.X_train.index, data.X_holdout.index]
    both = pd.concat([data.X_train, data.X_holdout]).astype(table.X.dtypes.to_dict())
    pd.testing.assert_frame_equal(both, table.X.loc[rows])
    grid = FeatureGrid.from_schema(SCHEMA, n_bins=4)
    np.testing.assert_array_equal(
        encode_features(data.X_train, SCHEMA, grid),
        encode_features(table.X.loc[data.X_train.index].astype(object), SCHEMA, grid),
    )


@pytest.mark.parametrize("threaded", [False, True])
@pytest.mark.parametrize("storage", ["pyarrow", "python"])
def test_text_categories_number_the_same_texts_as_pandas(storage, threaded, monkeypatch):
    from client import _local_data
    from client._local_data import _text_categories

    # a column per thread from _THREADED_ROWS rows on (a party's big file); here both ways on small frames
    monkeypatch.setattr(_local_data, "_THREADED_ROWS", 1 if threaded else 10**9)
    dtype = pd.StringDtype(storage, na_value=np.nan)
    X, y = _messy_table(300)
    frame = pd.concat([X, y], axis=1).astype(dtype)
    frame.loc[[3, 40], "age"] = np.nan  # missing cells stay missing
    frame["number"] = np.arange(len(frame), dtype=float)  # not text: kept as it is
    numbered = _text_categories(dict(frame.items()), len(frame))
    expected = frame.astype({c: "category" for c in ["age", "code", "grade", "outcome"]})
    pd.testing.assert_frame_equal(numbered.astype(object), expected.astype(object))
    assert all(isinstance(numbered[c].dtype, pd.CategoricalDtype) for c in ["age", "code", "grade", "outcome"])
    assert numbered["number"].dtype == np.float64
    assert numbered["age"].isna().sum() == 2
    assert len(_text_categories(dict(frame.iloc[:0].items()), 0)) == 0
    # a text file's columns arrive as Arrow text (string, 4-byte offsets): the same categoricals
    arrow = {
        c: pa.chunked_array(pa.array(frame[c].array)).cast(pa.string()) for c in ["age", "code", "grade", "outcome"]
    }
    columns = {**arrow, "number": frame["number"]}
    pd.testing.assert_frame_equal(_text_categories(columns, len(frame)), numbered)
    assert not columns  # each column taken out as it is numbered: its text is let go


@pytest.mark.parametrize("view", ["str", "category"])
def test_clipped_shares_read_each_distinct_text_as_its_rows_would(view):
    from edprf_core._encoding import clipped_shares

    X, _ = _messy_table()
    assert clipped_shares(X.astype(view), SCHEMA) == clipped_shares(X.astype(object), SCHEMA)
    assert clipped_shares(X.astype(view), SCHEMA)["age"] > 0  # "101" lies outside age's bounds


@pytest.mark.parametrize("view", ["str", "category", "object"])
def test_a_missing_token_that_reads_as_a_number_is_not_clipped(view):
    """The encoder reads "-999" as missing when the schema declares it: the clipping warning must not count it."""
    from dataclasses import replace

    from edprf_core._encoding import clipped_shares

    schema = replace(SCHEMA, missing_values=("", "?", "-999"))
    X = pd.DataFrame({"age": ["30", "-999", "-999", "101", " -999 "], "code": "007", "grade": "1"}, dtype="str")
    assert clipped_shares(X.astype(view), schema) == {"age": 0.5}  # "101" of the two numbers, 30 and 101
    assert clipped_shares(X.astype(view), SCHEMA) == {"age": 0.8}  # undeclared, -999 is a number below 0


@pytest.mark.parametrize("strip", [True, False])
def test_a_text_cell_reads_the_same_whichever_columns_it_is_read_with(strip):
    """The encoder reads the distinct texts of all columns in one pass of element-wise kernels: a cell's reading
    (stripped text, missing, number) is the one it gets read alone, even where its neighbours change the route the
    number parse takes (all numbers: one cast; some text: a pattern match first)."""
    import pyarrow as pa

    from edprf_core._encoding import CellRules, _read_texts

    rules = CellRules(missing_values=("", "?", "-1"), strip_whitespace=strip)
    columns = [
        pa.array(["30", "7.5", "-0", "1e3"]),  # numbers only: read alone, one cast does
        pa.array([" 30", "abc", None, "?", "1e309", " -1 ", "-1"]),  # text and missing tokens: the pattern route
        pa.array(["007", " 12 ", "x", ""]),
    ]
    numbers = [True, True, False]
    together = _read_texts(columns, rules, numbers)
    for column, asked, reading in zip(columns, numbers, together):
        (alone,) = _read_texts([column], rules, [asked])
        assert reading.text.equals(alone.text)
        np.testing.assert_array_equal(reading.missing, alone.missing)
        if asked:
            np.testing.assert_array_equal(reading.numbers, alone.numbers)
        else:
            assert reading.numbers is None
    np.testing.assert_array_equal(together[0].numbers, [30.0, 7.5, -0.0, 1000.0])
    # a number is read stripped either way, and " -1 " is the number of the numeric token "-1": missing either way
    expected = [30.0, np.nan, np.nan, np.nan, np.nan, np.nan, np.nan]
    np.testing.assert_array_equal(together[1].numbers, expected)
    assert together[1].missing.tolist() == [False, False, True, True, False, True, True]


def test_encoding_a_frame_reads_each_column_as_encoding_it_alone():
    """Codes and refusals of a frame whose text columns are read together equal those of the row-by-row encoder."""
    X, y = _messy_table(500)
    grid = FeatureGrid.from_schema(SCHEMA, n_bins=4)
    keep, _ = conforming_rows(X, y, SCHEMA)
    for view in ("str", "category"):
        np.testing.assert_array_equal(
            encode_features(X[keep].astype(view), SCHEMA, grid), encode_features(X[keep].astype(object), SCHEMA, grid)
        )
        found = rule_violations(X.astype(view), y.astype(view), SCHEMA)
        expected = rule_violations(X.astype(object), y.astype(object), SCHEMA)
        assert [(c, w) for c, w, _ in found] == [(c, w) for c, w, _ in expected]
        for (_, _, mask), (_, _, want) in zip(found, expected):
            np.testing.assert_array_equal(mask, want)


def test_a_categorical_of_text_arrow_cannot_hold_is_judged_row_by_row():
    """A lone surrogate has no UTF-8 form: such a categorical is read cell by cell, with the same verdicts."""
    X, y = _messy_table(40)
    cats = pd.Index(np.array(["007", "x\ud800", "12"], dtype=object), dtype=object)
    X = X.astype(object)
    X["code"] = pd.Series(pd.Categorical.from_codes(np.arange(40) % 3, dtype=pd.CategoricalDtype(cats)))
    keep, notes = conforming_rows(X, y, SCHEMA)
    expected_keep, problems = _row_by_row(X, y)
    np.testing.assert_array_equal(keep, expected_keep)
    assert len(notes) == len(problems)


def _arrow_text(chunks: list[pa.Array]) -> pd.Series:
    return pd.Series(pd.arrays.ArrowStringArray(pa.chunked_array(chunks)), dtype=pd.StringDtype("pyarrow", np.nan))


# privacy gate: both numbering routes give every row the same category (mutation campaign 4, M01)
@pytest.mark.privacy
@pytest.mark.parametrize("large", [False, True], ids=["string", "large_string"])
@pytest.mark.parametrize(
    ("cells", "by_table"),
    [
        (["1", "0", "0", "1", "y", "1"], True),  # flags: numbered from their bytes
        (["1", "0", "", "1"], False),  # an empty cell
        (["1", None, "0"], False),  # a missing cell
        (["1", "10", "0"], False),  # another length
        (["1", "", "10"], False),  # an empty cell and a long one whose lengths sum to the count (mutation M01)
        (["1", "\u00e9", "0"], False),  # one character, two bytes
        ([], True),
    ],
)
def test_one_character_columns_are_numbered_as_the_dictionary_numbers_them(cells, by_table, large, monkeypatch):
    from edprf_core import _numbered_text

    kind = pa.large_string() if large else pa.string()
    whole = pa.array(["x", "0", *cells, "z"], type=kind)
    half = len(cells) // 2  # two chunks sliced out of one buffer: their offsets start inside it
    series = _arrow_text([whole.slice(2, half), whole.slice(2 + half, len(cells) - half)])
    assert (_numbered_text._one_character_codes(pa.chunked_array(pa.array(series.array))) is not None) is by_table
    got = _numbered_text.numbered_text(series)
    monkeypatch.setattr(_numbered_text, "_one_character_codes", lambda cells: None)  # the dictionary's way alone
    expected = _numbered_text.numbered_text(series)
    assert list(got.categories) == list(expected.categories) == list(dict.fromkeys(c for c in cells if c is not None))
    np.testing.assert_array_equal(got.codes, expected.codes)
    assert got.dtype == expected.dtype


def test_the_hash_reads_cells_as_the_schema_does_not_as_the_file_spelt_them():
    """``30``, ``" 30"``, ``30.0``, ``-0``/``0``, grade ``1``/``1.0``: the same readings, the same side; a row
    missing its age hashes apart from any number, and a categorical view hashes as its texts."""
    rows = pd.DataFrame(
        {
            "age": ["30", " 30", "30.0", "-0", "0", ""],
            "code": ["007", "007", "007 ", "12", "12", "12"],
            "grade": ["1", " 1", "1", "2", "2", "2"],
        },
        dtype="str",
    )
    labels = pd.Series(["1", " 1", "1 ", "0", "0", "0"], name="outcome", dtype="str")  # classes are texts
    text = pd.concat([rows, labels], axis=1)
    u = keyed_uniform(text, SCHEMA, SALT)
    assert u[0] == u[1] == u[2] and u[3] == u[4] and len({u[0], u[3], u[5]}) == 3
    np.testing.assert_array_equal(keyed_uniform(text.astype("category"), SCHEMA, SALT), u)
    typed = pd.DataFrame(  # the same records as a column-typed writer (Parquet, pandas) holds them
        {"age": [30, 30, 30.0, -0.0, 0, np.nan], "code": text["code"], "grade": [1, 1, 1.0, 2, 2, 2]}
    )
    typed["outcome"] = ["1", "1", "1", "0", "0", "0"]
    np.testing.assert_array_equal(keyed_uniform(typed, SCHEMA, SALT), u)
    assert keyed_uniform(text, SCHEMA, "f" * 32)[0] != u[0]  # keyed: another salt, another number


def test_readings_are_hashed_a_slice_at_a_time_with_the_same_numbers(monkeypatch):
    """The distinct readings are hashed a slice at a time (:data:`_HASHED_AT_ONCE`): the same numbers as all at once."""
    from client import _held_out_split

    X, y = _messy_table(300)
    rows = pd.concat([X, y], axis=1).astype("str").astype("category")
    rows["age"] = pd.Series([f"{i * 7 % 101}.5" for i in range(len(rows))], dtype="str").astype("category")
    whole = keyed_uniform(rows, SCHEMA, SALT)
    monkeypatch.setattr(_held_out_split, "_HASHED_AT_ONCE", 7)
    assert len(rows["age"].cat.categories) % 7 and len(rows["age"].cat.categories) > 3 * 7  # slices, one partial
    np.testing.assert_array_equal(keyed_uniform(rows, SCHEMA, SALT), whole)


def test_held_out_rows_are_those_whose_keyed_uniform_is_below_the_fraction():
    X, y = _messy_table(2000)
    rows = pd.concat([X, y], axis=1).astype("category")
    u = keyed_uniform(rows, SCHEMA, SALT)
    for fraction in (0.0, 0.2, 1 / 3, 0.5, 1.0, *u[:5], *np.nextafter(u[:5], 1.0), *np.nextafter(u[:5], 0.0)):
        np.testing.assert_array_equal(
            held_out_rows(rows, SCHEMA, SALT, fraction), u < fraction, err_msg=f"{fraction!r}"
        )


@pytest.mark.parametrize("string_type", [pa.string(), pa.large_string()])
def test_a_column_of_many_chunks_is_numbered_in_order_of_first_appearance(string_type):
    """A party's file arrives in many Arrow chunks; the numbering is that of the whole column (texts that recur
    across chunks, texts first seen in a late chunk, missing cells), whichever string type Arrow gave it."""
    from edprf_core.tables import numbered_text as _numbered

    rng = np.random.default_rng(0)
    texts = [f"{x:.2f}" for x in rng.lognormal(3, 1, 600)] + ["7", "7", "late"]
    cells = [None if i % 97 == 5 else t for i, t in enumerate(texts)]
    chunks = pa.chunked_array([pa.array(cells[i : i + 64], type=string_type) for i in range(0, len(cells), 64)])
    series = pd.Series(pd.arrays.ArrowStringArray(chunks), dtype=pd.StringDtype("pyarrow", na_value=np.nan))
    assert pa.chunked_array(pa.array(series.array)).num_chunks > 1
    got = _numbered(series)
    assert list(got.categories) == list(dict.fromkeys(c for c in cells if c is not None))
    assert [None if pd.isna(c) else c for c in got.astype(object)] == cells
    same = _numbered(chunks)  # the Arrow column itself, as a text file's reader gives it
    np.testing.assert_array_equal(same.codes, got.codes)
    assert same.dtype == got.dtype


def test_a_file_with_an_ignored_column_splits_by_the_columns_the_schema_reads(tmp_path):
    """A declared ignored column (an identifier) is not read, so it is not hashed: the party loads its file, and
    the same records with other identifiers, or with the columns in another order, fall on the same sides."""
    schema = Schema.from_toml(SCHEMA_TOML.replace("ignored_columns = []", 'ignored_columns = ["pid"]'))
    X, y = _messy_table(400)
    rows = pd.concat([X, y], axis=1)
    first, second = tmp_path / "a.csv", tmp_path / "b.csv"
    rows.assign(pid=[f"p{i}" for i in range(len(rows))]).to_csv(first, index=False)
    reordered = rows.assign(pid=[f"other-{i}" for i in range(len(rows))])[["outcome", "pid", *X.columns[::-1]]]
    reordered.to_csv(second, index=False)
    a = load_local_data(first, schema, 0.3, SALT)
    b = load_local_data(second, schema, 0.3, SALT)
    assert len(a.X_holdout) and len(a.X_train)
    pd.testing.assert_index_equal(a.X_holdout.index, b.X_holdout.index)
    pd.testing.assert_index_equal(a.X_train.index, b.X_train.index)


def test_rows_of_a_grid_too_large_for_one_key_are_told_apart_without_a_warning():
    """Scale review F9: with a thousand features the grid's size (a product of their codes) overflowed a float and
    numpy warned 'overflow encountered in reduce' on every prediction; the rows are compared whole there."""
    import warnings

    from edprf_core import CategoricalFeature, EDPRFClassifier, LabelSpec, Schema

    names = [f"f{j}" for j in range(300)]
    schema = Schema(
        features=tuple(CategoricalFeature(n, tuple("abcdefghijklmnopqrst")) for n in names),
        label=LabelSpec("y", ("n", "p")),
    )
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.choice(list("abcdefghijklmnopqrst"), size=(60, 300)), columns=names)
    y = pd.Series(rng.choice(["n", "p"], size=60))
    clf = EDPRFClassifier(schema, n_trees=2, max_depth=2, marginals_share=0, random_state=0).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        proba = clf.predict_proba(pd.concat([X, X]))
    assert np.array_equal(proba[:60], proba[60:])
