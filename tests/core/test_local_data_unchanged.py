"""``load_local_data`` on a file that arrives in many chunks gives what the straightforward way gives.

The party's reader numbers each text column from Arrow's chunks and lets each column go once numbered (to hold
the file once).  Whatever the chunking, the LocalData must be the one of the plain recipe: the file read whole
by ``read_table``, each text column ``pd.Categorical`` with its categories in order of first appearance, the
schema's verdicts by ``conforming_rows`` on the text, and the held-out side ``keyed_uniform(row) < f`` of the
text rows (the readings' hash, :mod:`client._held_out_split`).  The file mixes what moves rows between the reader's routes and chunks: repeated and late
categories (a category first seen in the last lines), missing and refused cells, malformed lines (wrong number of
fields, an unbalanced quote), quoted cells and carriage returns (read by the Python rules), blank lines.
"""

from __future__ import annotations

import logging

import numpy as np
import pandas as pd
import pytest

from client import _local_data
from client._held_out_split import keyed_uniform
from client._local_data import load_local_data
from edprf_core import Schema
from edprf_core.encoding import conforming_rows
from edprf_core.tables import read_table
from tests.federation._neighbours import SCHEMA_TOML

SCHEMA = Schema.from_toml(SCHEMA_TOML)  # age (continuous, missing -> 50), code, grade (categorical), outcome
SALT = "fedcba9876543210" * 2
FRACTION = 0.3


def _lines(n: int = 4000, seed: int = 11) -> list[bytes]:
    rng = np.random.default_rng(seed)
    lines = []
    for i in range(n):
        age = rng.choice([f"{rng.uniform(0, 100):.2f}", "30", "", "abc", "101", " 7.5", "NaN"], p=[0.6, *[0.4 / 6] * 6])
        code = rng.choice(["007", "12", "other", "x", "", " 12 "], p=[0.3, 0.3, 0.2, 0.1, 0.05, 0.05])
        grade = rng.choice(["1", "2", "3", "2.0", "?", "4"], p=[0.3, 0.3, 0.3, 0.05, 0.025, 0.025])
        outcome = rng.choice(["0", "1", "1 ", "", "2"], p=[0.45, 0.45, 0.05, 0.025, 0.025])
        line = f"{age},{code},{grade},{outcome}".encode()
        kind = i % 101
        if kind == 7:
            line = f'"{age}",{code},"{grade}",{outcome}'.encode()  # quoted cells: the Python rules
        elif kind == 19:
            line += b"\r"  # a carriage return before the line break
        elif kind == 23:
            line += b",extra"  # five fields: dropped
        elif kind == 41:
            line = b'"unbalanced,12,1,0'  # dropped
        elif kind == 59:
            line = b""  # blank: skipped
        lines.append(line)
    lines += [b"55.5,late code,1,1", b"66.25,007,3,0", b"55.5,12,late grade,1"]  # categories first seen at the end
    return lines


def _expected(path) -> tuple[_local_data.LocalData, list[str]]:
    """The plain recipe (the file read whole, pandas' own categoricals, the text rows hashed) and its log lines."""
    table = read_table(path, SCHEMA, hints=_local_data.NODE_CONFIG_HINTS)
    frame = pd.concat([table.X, table.y], axis=1)
    cells = pd.DataFrame(
        {
            c: pd.Categorical(
                frame[c], categories=pd.Index(list(dict.fromkeys(frame[c].dropna())), dtype=frame[c].dtype)
            )
            for c in frame.columns
        }
    )
    X, y = cells.drop(columns=["outcome"]), cells["outcome"]
    keep, notes = conforming_rows(frame.drop(columns=["outcome"]), frame["outcome"], SCHEMA, table.line_numbers)
    held = keyed_uniform(frame, SCHEMA, SALT) < FRACTION  # the text rows, not the party's categorical view
    train, out = np.flatnonzero(keep & ~held), np.flatnonzero(keep & held)
    log = [f"local data: {note}; left out" for note in table.dropped[:20]]
    if len(table.dropped) > 20:
        log.append(f"local data: {len(table.dropped) - 20} more line{'s' * (len(table.dropped) > 21)} left out")
    log += [f"local data: {note}; those rows are left out" for note in notes]
    return _local_data.LocalData(X.take(train), y.take(train), X.take(out), y.take(out)), log


@pytest.mark.parametrize("threaded", [False, True])
def test_a_file_of_many_chunks_loads_as_the_plain_recipe_loads_it(tmp_path, monkeypatch, caplog, threaded):
    from edprf_core import _text_table

    path = tmp_path / "party.csv"
    path.write_bytes(b"age,code,grade,outcome\n" + b"\n".join(_lines()) + b"\n")
    expected, expected_log = _expected(path)
    monkeypatch.setattr(_text_table, "_BLOCK_BYTES", 700)  # blocks of a few dozen lines: over a hundred chunks
    monkeypatch.setattr(_local_data, "_THREADED_ROWS", 1 if threaded else 10**9)
    with caplog.at_level(logging.WARNING, logger="edprf.party"):
        got = load_local_data(path, SCHEMA, FRACTION, SALT)
    assert len(expected.X_train) > 1000 and len(expected.X_holdout) > 300  # both sides, most rows kept
    assert any("left out" in m for m in expected_log[:20]) and any("those rows" in m for m in expected_log)
    for name in ("X_train", "X_holdout"):
        pd.testing.assert_frame_equal(getattr(got, name), getattr(expected, name), check_categorical=True)
        for c in getattr(got, name).columns:  # the same category order, not merely the same values
            assert list(getattr(got, name)[c].cat.categories) == list(getattr(expected, name)[c].cat.categories)
    for name in ("y_train", "y_holdout"):
        pd.testing.assert_series_equal(getattr(got, name), getattr(expected, name))
    assert "late code" in list(got.X_train["code"].cat.categories) + list(got.X_holdout["code"].cat.categories)
    assert [r.getMessage() for r in caplog.records] == expected_log
    # the log names the file's lines (rev-data S3-12: it named positions among the rows read, 0-based)
    (note,) = [m for m in expected_log if m.startswith("local data: column 'outcome': undeclared class")]
    file_lines = path.read_bytes().split(b"\n")
    named = [int(k) for k in note.split("first lines [")[1].split("]")[0].split(", ")]
    assert named and all(file_lines[k - 1].rstrip(b"\r").endswith(b",2") for k in named), note
