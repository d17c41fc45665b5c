"""The party's data path, made faster, gives every row the same fate and the same side of the split.

``conforming_rows`` judges each text column's distinct cells once and maps the verdicts back; it must
return, row by row, what judging every row returns (``rule_violations``).  The keyed hold-out hash must
stay the same function of a row's cells: a pinned fixture fixes which rows are held out.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from client._local_data import _keyed_uniform, load_local_data
from edprf_core import Schema
from edprf_core._encoding import rule_violations
from edprf_core.encoding import conforming_rows
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
    problems = rule_violations(X, y, SCHEMA)  # every row judged (no distinct-cell shortcut)
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
PINNED_UNIFORMS = [0.9227142094154281, 0.769261501730111, 0.7220850542878448, 0.137474256130507, 0.5560212516045634]


def test_the_keyed_holdout_hash_is_pinned_on_a_fixture():
    u = _keyed_uniform(pd.concat([PINNED_ROWS, PINNED_LABELS], axis=1), SALT)
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
    alone = np.array([_keyed_uniform(rows.iloc[[i]], SALT)[0] for i in range(len(rows))]) < holdout
    assert len(data.X_holdout) == int(alone.sum()) and len(data.X_train) == int((~alone).sum())
    pd.testing.assert_frame_equal(data.X_holdout.reset_index(drop=True), table.X[keep][alone].reset_index(drop=True))


def test_rows_selects_like_pandas_boolean_indexing():
    from client._local_data import _rows

    X, y = _messy_table(500)
    X.index = X.index * 3 + 7  # an index that is not 0..n-1
    y.index = X.index
    mask = np.random.default_rng(0).random(len(X)) < 0.6
    pd.testing.assert_frame_equal(_rows(X, mask), X[mask])
    pd.testing.assert_series_equal(_rows(y, mask), y[mask])
    mixed = X.assign(age=X["age"].astype(object))  # a column not held by Arrow: pandas' own selection
    pd.testing.assert_frame_equal(_rows(mixed, mask), mixed[mask])


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
    np.testing.assert_array_equal(_keyed_uniform(rows.astype("category"), SALT), _keyed_uniform(rows, SALT))


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
    assert len(data.X_holdout) == int((_keyed_uniform(rows, SALT) < 0.5).sum())
    assert len(data.X_train) + len(data.X_holdout) == int(keep.sum())
