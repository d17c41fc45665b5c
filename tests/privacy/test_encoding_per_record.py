"""Encoding is a per-record map: a whole table gets the codes each of its rows gets alone.

A row's codes may depend on its own cells and the public schema only, never on the other rows
(``docs/privacy.md``, "Threat model": the data path must be a stable transformation).  A code is
the declared category's position (or the bin of the public grid, or the missing code after the
declared ones), so a table that lacks a declared category reads every other category as it
would with it.  Here a schema with continuous and categorical features (text and number
categories, a label) meets a table that lacks a declared category of each categorical feature
and of the label, with missing cells (a missing value, ``separate``, a declared category),
undeclared categories mapped to a catch-all, and out-of-domain numbers (clipped).  The codes
of the whole table, read as a party reads its file (:func:`client._local_data.load_local_data`)
and as plain pandas frames, must equal the codes of each row read alone (its own one-line file,
and its own one-row frame), and both the codes written out here from the schema's rules.
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from client._local_data import load_local_data
from edprf_core import load_schema
from edprf_core.encoding import FeatureGrid, encode_features, encode_labels

pytestmark = pytest.mark.privacy

SCHEMA_TOML = """\
format = 1
description = "per-record encoding: absent categories, missing and out-of-domain cells"
ignored_columns = []

[label]
column = "outcome"
classes = ["a", "b", "c"]

[[features]]
kind = "continuous"
name = "age"
lower = 0.0
upper = 100.0
missing = 40.0
source = "test"

[[features]]
kind = "continuous"
name = "dose"
lower = -1.0
upper = 1.0
missing = "separate"
source = "test"

[[features]]
kind = "categorical"
name = "code"
categories = ["007", "12", "other"]
unknown = "other"
missing = "separate"
source = "test"

[[features]]
kind = "categorical"
name = "grade"
categories = [1, 2, 3]
unknown = 2
missing = 3
source = "test"
"""

N_BINS = 4
"""age: edges 25, 50, 75 on [0, 100]; dose: edges -0.5, 0, 0.5 on [-1, 1], code 4 for a missing dose."""

HEADER = "age,dose,code,grade,outcome"

# (the row's cells, its codes (age, dose, code, grade), its class index) -- by the schema's rules, by hand:
# a number is clipped to [lower, upper] and takes the bin whose left edge it reaches; "" and "?" are missing.
# The table lacks code "12", grade 1 and class "a": none of them is the last declared value.
ROWS: list[tuple[str, tuple[int, int, int, int], int]] = [
    ("30,0.6,007,2,b", (1, 3, 0, 1), 1),
    (",-3,other,3,c", (1, 0, 2, 2), 2),  # age missing -> 40; dose below the domain -> -1
    ("?,,xyz,7,b", (1, 4, 2, 1), 1),  # dose missing -> its own code; undeclared code -> other; grade 7 -> 2
    ("150,0.1,,,c", (3, 2, 3, 2), 2),  # age above the domain -> 100; code missing -> its own code; grade -> 3
    ("-5,-0.2,?,2.0,b", (0, 1, 3, 1), 1),  # 2.0 is the number category 2
    ("75,5,other,3,c", (3, 3, 2, 2), 2),  # 75 is an edge: the bin it opens
    ("12,,007,,b", (0, 4, 0, 2), 1),
    ("99.9,-0.2,xyz,2,c", (3, 1, 2, 1), 2),
]
EXPECTED_CODES = np.array([codes for _, codes, _ in ROWS], dtype=np.int32)
EXPECTED_LABELS = np.array([label for _, _, label in ROWS], dtype=np.int32)


def _file(directory: Path, lines: list[str]) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "data.csv"
    path.write_text("\n".join([HEADER, *lines]) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def schema(tmp_path_factory):
    path = tmp_path_factory.mktemp("schema") / "schema.toml"
    path.write_text(SCHEMA_TOML, encoding="utf-8")
    return load_schema(path)


def _party_codes(directory: Path, schema, lines: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """The codes of a file read as a party reads it (every row kept for training: no held-out share)."""
    data = load_local_data(_file(directory, lines), schema, 0.0, "7e" * 16)
    grid = FeatureGrid.from_schema(schema, N_BINS)
    return encode_features(data.X_train, schema, grid), encode_labels(data.y_train, schema)


def _frame(lines: list[str]) -> pd.DataFrame:
    """Text cells as plain pandas reads them (an empty cell stays the empty text)."""
    return pd.read_csv(io.StringIO("\n".join([HEADER, *lines])), dtype=str, keep_default_na=False)


def test_the_table_lacks_a_declared_value_of_each_categorical_column(schema):
    frame = _frame([cells for cells, _, _ in ROWS])
    assert "12" not in set(frame["code"]) and "1" not in set(frame["grade"]) and "a" not in set(frame["outcome"])
    assert {"", "?"} & set(frame["age"]) and {"", "?"} & set(frame["code"]) and "" in set(frame["grade"])
    assert schema.features[2].categories[1] == "12" and schema.label.classes[0] == "a"


def test_the_party_reads_a_table_as_each_of_its_rows_alone(tmp_path: Path, schema):
    lines = [cells for cells, _, _ in ROWS]
    codes, labels = _party_codes(tmp_path / "table", schema, lines)
    alone = [_party_codes(tmp_path / f"row{i}", schema, [line]) for i, line in enumerate(lines)]
    assert codes.tolist() == [c.tolist()[0] for c, _ in alone], "a row's codes depend on the other rows"
    assert labels.tolist() == [y.tolist()[0] for _, y in alone], "a row's class depends on the other rows"
    assert codes.tolist() == EXPECTED_CODES.tolist()
    assert labels.tolist() == EXPECTED_LABELS.tolist()


@pytest.mark.parametrize("dtype", [object, "string"], ids=["object", "pandas-str"])
def test_a_frame_encodes_as_each_of_its_rows_alone(schema, dtype):
    frame = _frame([cells for cells, _, _ in ROWS]).astype(dtype)
    X, y = frame.drop(columns=["outcome"]), frame["outcome"]
    grid = FeatureGrid.from_schema(schema, N_BINS)
    table = encode_features(X, schema, grid)
    alone = np.vstack([encode_features(X.iloc[[i]].reset_index(drop=True), schema, grid) for i in range(len(X))])
    assert table.tolist() == alone.tolist() == EXPECTED_CODES.tolist()
    labels_alone = [encode_labels(y.iloc[[i]].reset_index(drop=True), schema)[0] for i in range(len(y))]
    assert encode_labels(y, schema).tolist() == labels_alone == EXPECTED_LABELS.tolist()
