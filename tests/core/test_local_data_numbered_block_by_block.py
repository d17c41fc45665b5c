"""A party's file numbered block by block as it is read gives the frame that numbering the whole text gives.

``load_local_data`` no longer holds the file's text: each block's text columns are numbered as the block is read
(:mod:`edprf_core._numbered_text`) and let go.  The reference here is the previous way, kept in this test only:
every column read whole as Arrow text (``read_columns``), then each numbered at once (``_text_categories``).  Both
must give the same frame (dtypes, codes, categories in order of first appearance), the same line numbers and notes
on dropped lines, hence the same LocalData and the same log, whatever the block size (down to one byte: every line
its own block) and however often a column's blocks are put on its dictionary.

The files mix what moves rows between the reader's routes: malformed lines (fields, unbalanced quotes, a quoted
line break), quoted separators, CRLF, missing cells and missing tokens, bytes that are not UTF-8, a byte-order
mark, blank lines, a column of distinct texts (its dictionary outgrows the waiting blocks), a category first seen on
the last line; and a header and none, an empty file, one row.
"""

from __future__ import annotations

import logging

import numpy as np
import pandas as pd
import pytest

from client import _local_data
from client._held_out_split import split_sides
from client._local_data import load_local_data
from edprf_core import Schema, _numbered_text, _text_table
from edprf_core.encoding import conforming_rows
from edprf_core.tables import read_columns, read_numbered_columns

SCHEMA = Schema.from_toml(
    """\
format = 1
description = "block by block"
ignored_columns = ["note"]
missing_values = ["", "?", "-1"]

[label]
column = "outcome"
classes = ["0", "1"]

[[features]]
kind = "continuous"
name = "age"
lower = 0.0
upper = 100.0
missing = 50.0
source = "generated"

[[features]]
kind = "categorical"
name = "code"
categories = ["007", "12", "other"]
unknown = "other"
missing = "refuse"
source = "generated"

[[features]]
kind = "categorical"
name = "grade"
categories = [1, 2, 3]
unknown = "refuse"
missing = "separate"
source = "generated"
"""
)
SALT = "0123456789abcdef" * 2
FRACTION = 0.3


def _line(rng: np.random.Generator, i: int, note: bool, crlf: bool) -> bytes:
    age = rng.choice([f"{rng.uniform(0, 100):.2f}", "30", "", "?", "-1", "abc", " 7.5", "NaN"])
    code = rng.choice(["007", "12", "other", "x", "", "\xe9t\xe9", "12 "])
    grade = rng.choice(["1", "2", "3", "2.0", "?", "4", ""])
    outcome = rng.choice(["0", "1", "1 ", "", "2"])
    cells = [age, code, grade] + ([f"n{i}"] if note else []) + [outcome]
    line = ",".join(cells).encode()
    kind = i % 37
    if kind == 3:
        cells[1] = '"a,b"'  # a quoted separator: the Python rules, one cell
        line = ",".join(cells).encode()
    elif kind == 5:
        line = b"30,\xe9t\xe9,1," + (b"n\xff," if note else b"") + b"0"  # Latin-1 bytes: read as U+FFFD
        line += b",\xff\xfe" if i % 3 == 0 else b""  # and sometimes a field too many
    elif kind == 7:
        line = b'"note with a\nline break",1,1' + (b",x" if note else b"") + b",0"  # a quoted line break
    elif kind == 11:
        line = b'"unbalanced,12,1,0'
    elif kind == 13:
        line = b""  # blank
    elif kind == 17:
        line += b"\r"  # one CRLF line among LF lines
    elif kind == 19:
        line = b",".join([b""] * (len(cells)))  # every cell missing
    elif kind == 23:
        line += b",extra"
    return line + (b"\r" if crlf and kind != 17 else b"")


def _file(tmp_path, n: int, *, note: bool = True, header: bool = True, crlf: bool = False, bom: bool = False):
    rng = np.random.default_rng(n)
    names = b"age,code,grade," + (b"note," if note else b"") + b"outcome"
    lines = [_line(rng, i, note, crlf) for i in range(n)]
    if n:
        lines.append(b"55.5,12,late," + (b"late note," if note else b"") + b"1")  # a category first seen last
    body = ([names + (b"\r" if crlf else b"")] if header else []) + lines
    path = tmp_path / f"party_{n}_{int(note)}{int(header)}{int(crlf)}{int(bom)}.csv"
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + b"\n".join(body) + (b"\n" if body else b""))
    return path


def _old_cells(path, header: bool):
    """The previous read: the whole file as Arrow text, then each column numbered at once."""
    read = read_columns(path, SCHEMA, header=header, hints=_local_data.NODE_CONFIG_HINTS, large=False)
    columns = dict(read.columns)
    return _local_data._text_categories(columns, len(read.line_numbers)), read.line_numbers, read.dropped


def _old_load(path, header: bool, caplog):
    """``load_local_data`` as it was (its log lines too), on the whole-text numbering."""
    cells, lines, dropped = _old_cells(path, header)
    label = SCHEMA.label.column
    X, y = cells.drop(columns=[label]), cells[label]
    keep, notes = conforming_rows(X, y, SCHEMA, lines)
    hold, trains = split_sides(cells, SCHEMA, SALT, FRACTION, FRACTION)
    train, held = np.flatnonzero(keep & trains), np.flatnonzero(keep & hold)
    log = [f"local data: {note}; left out" for note in dropped[:20]]
    if len(dropped) > 20:
        log.append(f"local data: {len(dropped) - 20} more line{'s' * (len(dropped) > 21)} left out")
    log += [f"local data: {note}; those rows are left out" for note in notes]
    if not keep.any():
        log.append("local data: no row conforms to the schema; the release will carry no information")
    return _local_data.LocalData(X.take(train), y.take(train), X.take(held), y.take(held)), log


def _same_frame(got: pd.DataFrame, expected: pd.DataFrame) -> None:
    pd.testing.assert_frame_equal(got, expected, check_categorical=True, check_exact=True)
    for c in expected.columns:  # the same categories in the same order, the same codes
        assert list(got[c].cat.categories) == list(expected[c].cat.categories), c
        np.testing.assert_array_equal(got[c].cat.codes.to_numpy(), expected[c].cat.codes.to_numpy())


FILES = {
    "mixed": {"n": 600},
    "crlf_bom": {"n": 300, "crlf": True, "bom": True},
    "no_header": {"n": 300, "note": False, "header": False},
    "one_row": {"n": 1},
    "header_only": {"n": 0},
    "empty_no_header": {"n": 0, "note": False, "header": False},
}


# privacy gate: a row's cells are read alone, whatever block it falls in (mutation campaign 4, M03)
@pytest.mark.privacy
@pytest.mark.parametrize("kind", list(FILES))
@pytest.mark.parametrize("block_bytes", [1, 97, 1 << 22])
@pytest.mark.parametrize("pending_rows", [1, 1 << 16])
def test_the_block_by_block_read_numbers_as_the_whole_text_did(
    tmp_path, monkeypatch, caplog, kind, block_bytes, pending_rows
):
    spec = FILES[kind]
    path = _file(tmp_path, **spec)
    header = spec.get("header", True)
    expected_cells, expected_lines, expected_dropped = _old_cells(path, header)
    expected, expected_log = _old_load(path, header, caplog)
    # blocks of one byte: every line its own block; waiting rows 1: each block put on the dictionary at once
    monkeypatch.setattr(_text_table, "_BLOCK_BYTES", block_bytes)
    monkeypatch.setattr(_numbered_text, "_PENDING_ROWS", pending_rows)
    read = read_numbered_columns(path, SCHEMA, header=header, hints=_local_data.NODE_CONFIG_HINTS)
    _same_frame(read.frame, expected_cells)
    np.testing.assert_array_equal(read.line_numbers, expected_lines)
    assert read.dropped == expected_dropped
    for whole_read_bytes in (0, 1 << 40):  # read block by block, then (a small file) whole: the same data
        monkeypatch.setattr(_local_data, "_WHOLE_READ_BYTES", whole_read_bytes)
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="edprf.party"):
            got = load_local_data(path, SCHEMA, FRACTION, SALT, header=header)
        for name in ("X_train", "X_holdout"):
            _same_frame(getattr(got, name), getattr(expected, name))
        for name in ("y_train", "y_holdout"):
            pd.testing.assert_series_equal(getattr(got, name), getattr(expected, name), check_exact=True)
        assert [r.getMessage() for r in caplog.records] == expected_log
    if kind == "mixed":  # the file holds what the test means it to
        assert len(expected.X_train) > 100 and len(expected.X_holdout) > 30
        assert any("unbalanced" in note for note in expected_dropped)
        assert any("fields" in note for note in expected_dropped)
        assert any("\ufffd" in c for c in expected_cells["code"].cat.categories)
        assert expected_cells["note"].cat.categories.size > 500  # a dictionary larger than the waiting rows
        assert expected_cells["grade"].cat.categories[-1] == "late"


def test_an_empty_file_is_refused_alike(tmp_path):
    """A file without a header line is a file-level problem, raised the same way by both reads."""
    path = tmp_path / "empty.csv"
    path.write_bytes(b"")
    with pytest.raises(ValueError) as old:
        read_columns(path, SCHEMA)
    with pytest.raises(ValueError) as new:
        read_numbered_columns(path, SCHEMA)
    assert str(new.value) == str(old.value)
