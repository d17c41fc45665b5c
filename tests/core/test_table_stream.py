"""The streamed reader (``edprf predict``, ``edprf evaluate``): every data line one record, read by its own bytes.

``stream_rows`` splits plain lines with Arrow's parser, a group per allowed number of fields, and every other
line by the rules written out in Python.  Whatever route a line takes, whatever its neighbours and wherever the
blocks and chunks are cut, its record (cells, line number, reason when malformed) must be what the rules give
that line alone.
"""

from __future__ import annotations

import gzip

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import edprf_core._table_stream as table_stream
import edprf_core._text_table as text_table
from edprf_core import Schema
from edprf_core._text_table import _decoded
from edprf_core.tables import stream_rows
from tests.core.test_reader_per_record import HOSTILE, MAX_CHARS, _lines, _whole_blocks
from tests.federation._neighbours import SCHEMA_TOML

SCHEMA = Schema.from_toml(SCHEMA_TOML)  # age, code, grade (features), outcome (label)
HEADER = b"age,code,grade,outcome"

# beyond the training reader's hostile lines: the two widths a file without a header may have, a line of one
# field, lines of separators, Unicode blanks, and lines whose quotes hide or add separators
MORE = {
    "features_only": b"30,007,1",
    "one_field": b"30",
    "unicode_blank": "\u3000 \u00a0".encode(),
    "quoted_separator": b'30,"0,07",1,0',
    "doubled_quotes": b'30,"0""7",1,0',
    "crlf": b"30,007,1,0\r",
    "cr_only_line": b"\r",
    "trailing_separator": b"30,007,1,0,",
    "spaces_around": b" 30 , 007 ,1 , 0 ",
}


def _reference(data: bytes, widths: dict[int, list[int | None]], n_wanted: int, first: int) -> list[tuple]:
    """The rules applied line by line in Python (the specification): (line number, cells, reason) per record."""
    rules = table_stream._RecordLines(",", widths, MAX_CHARS, n_wanted)  # only its rules are used
    out = []
    lines = data.split(b"\n")
    if data.endswith(b"\n"):
        lines.pop()
    for number, raw in enumerate(lines, start=first):
        record = table_stream._line_record(_decoded(raw), rules)
        if record is not None:
            out.append((number, tuple(record[0]), record[1]))
    return out


def _records(path, **kwargs) -> list[tuple]:
    out = []
    for chunk in stream_rows(path, SCHEMA, max_line_chars=MAX_CHARS, **kwargs):
        cells = chunk.frame.astype(object).where(chunk.frame.notna(), None).to_numpy().tolist()
        out += [(int(n), tuple(c), str(p)) for n, c, p in zip(chunk.line_numbers, cells, chunk.malformed)]
    return out


@pytest.fixture
def small_blocks(monkeypatch):
    monkeypatch.setattr(table_stream, "_BLOCK_BYTES", 4096)


def _body(seed: int = 1, carriage_returns: float = 0.1) -> list[bytes]:
    """Plain lines around two runs of hostile ones; with no carriage return, the blocks of plain lines alone are
    read whole (``_Lines.whole_block``) when one number of fields is allowed."""
    hostile = [*HOSTILE.values(), *MORE.values()]
    lines = [_lines(n, seed + k, carriage_returns) for k, n in enumerate((1500, 1500, 300))]
    return [*lines[0], *hostile, *lines[1], *hostile, *lines[2]]


@pytest.mark.parametrize("carriage_returns", [0.1, 0.0], ids=["some_crlf", "lf_only"])
@pytest.mark.parametrize("chunk_rows", [1, 7, 20_000])
def test_every_line_is_read_as_the_rules_read_it_alone(tmp_path, small_blocks, chunk_rows, carriage_returns):
    body = b"\n".join(_body(carriage_returns=carriage_returns)) + b"\n"
    path = tmp_path / "d.csv"
    path.write_bytes(HEADER + b"\n" + body)
    got = _records(path, chunk_rows=chunk_rows)
    assert got == _reference(body, {4: [0, 1, 2, 3]}, 4, first=2)
    malformed = [r for r in got if r[2]]
    assert len(malformed) > 10 and any("expected 4" in r[2] for r in malformed)
    assert {"unbalanced quotes", f"line longer than {MAX_CHARS} characters"} <= {r[2] for r in malformed}


@pytest.mark.parametrize("carriage_returns", [0.1, 0.0], ids=["some_crlf", "lf_only"])
def test_without_a_header_a_line_may_hold_the_label_or_not(tmp_path, small_blocks, carriage_returns):
    body = b"\xef\xbb\xbf" + b"\n".join(_body(5, carriage_returns)) + b"\n"  # a byte-order mark opens the file
    path = tmp_path / "d.csv"
    path.write_bytes(body)
    widths = {4: [0, 1, 2, 3], 3: [0, 1, 2, None]}
    got = _records(path, header=False)
    assert got == _reference(body.removeprefix(b"\xef\xbb\xbf"), widths, 4, first=1)
    assert any(r[1][3] is None and not r[2] for r in got)  # a features-only line: no label, not malformed
    labelled = _records(path, header=False, require_label=True)
    assert labelled == _reference(body.removeprefix(b"\xef\xbb\xbf"), {4: [0, 1, 2, 3]}, 4, first=1)


def test_a_header_picks_and_orders_the_columns(tmp_path, small_blocks):
    rows = [b"x,1,007,30,0", b"y,2,12,7.5,1", b'"z",3,other,1,1', b"w,3,x,2", b"", b"v,1,007,4,0"]
    path = tmp_path / "d.csv"
    path.write_bytes(b"\n\nnote,grade,code,age,outcome\n" + b"\n".join(rows) + b"\n")
    got = _records(path)
    assert got == [
        (4, ("30", "007", "1", "0"), ""),
        (5, ("7.5", "12", "2", "1"), ""),
        (6, ("1", "other", "3", "1"), ""),
        (7, (None, None, None, None), "4 fields, expected 5"),
        (9, ("4", "007", "1", "0"), ""),
    ]


def test_the_arrow_route_and_the_python_route_give_the_same_chunks(tmp_path, small_blocks, monkeypatch):
    body = b"\n".join(_body(seed=9)) + b"\n"
    path = tmp_path / "d.csv.gz"
    path.write_bytes(gzip.compress(HEADER + b"\n" + body))
    chunks = list(stream_rows(path, SCHEMA, chunk_rows=1000, max_line_chars=MAX_CHARS))
    monkeypatch.setattr(
        table_stream._RecordLines,
        "read",
        lambda self, block, number, source, offset: self._python(bytes(block), number),
    )
    python = list(stream_rows(path, SCHEMA, chunk_rows=1000, max_line_chars=MAX_CHARS))
    assert [len(c.frame) for c in chunks] == [len(c.frame) for c in python] and len(chunks) > 3
    assert all(len(c.frame) == 1000 for c in chunks[:-1])
    for a, b in zip(chunks, python):
        pd.testing.assert_frame_equal(a.frame, b.frame)
        np.testing.assert_array_equal(a.line_numbers, b.line_numbers)
        np.testing.assert_array_equal(a.malformed, b.malformed)
        assert all(isinstance(t, pd.StringDtype) for t in a.frame.dtypes)


def test_a_non_ascii_separator_and_a_last_line_without_a_break(tmp_path):
    path = tmp_path / "d.csv"
    path.write_text("age\u00a6code\u00a6grade\n30\u00a6007\u00a61\nbad\n40\u00a612\u00a62", encoding="utf-8")
    got = _records(path, sep="\u00a6")
    assert got == [
        (2, ("30", "007", "1"), ""),
        (3, (None, None, None), "1 fields, expected 3"),
        (4, ("40", "12", "2"), ""),
    ]


def test_a_file_without_data_lines_yields_nothing(tmp_path):
    path = tmp_path / "d.csv"
    path.write_bytes(HEADER + b"\n \n\n")
    assert list(stream_rows(path, SCHEMA)) == []


ONE_FEATURE = Schema.from_toml(
    SCHEMA_TOML.split("[[features]]")[0]
    + '[[features]]\nkind = "continuous"\nname = "age"\nlower = 0.0\nupper = 100.0\nmissing = 50.0\nsource = "x"\n'
)


def test_a_line_of_one_field_that_is_blank_is_no_record(tmp_path, small_blocks):
    """One feature, no header: a line may be one field, and a line of spaces is then blank, not a cell."""
    body = b"\n".join([b"30", b"   ", b"\t", b"7.5,1", " \u3000".encode(), b" 4 ", b",", b"1,2,3", b"x"]) + b"\n"
    path = tmp_path / "d.csv"
    path.write_bytes(body)
    chunks = list(stream_rows(path, ONE_FEATURE, header=False))
    got = [
        (int(n), tuple(None if pd.isna(v) else v for v in row), str(p))
        for c in chunks
        for n, row, p in zip(c.line_numbers, c.frame.astype(object).to_numpy().tolist(), c.malformed)
    ]
    assert got == [
        (1, ("30", None), ""),
        (4, ("7.5", "1"), ""),
        (6, (" 4 ", None), ""),
        (7, ("", ""), ""),
        (8, (None, None), "3 fields, expected 1 or 2"),
        (9, ("x", None), ""),
    ]


def test_lines_arrow_cannot_parse_are_read_by_the_python_rules(tmp_path, small_blocks, monkeypatch):
    """No file-wide failure: if Arrow's parser refuses a group of lines, they go through the rules one by one."""
    import edprf_core._text_table as text_table

    body = b"\n".join(_body(seed=3)) + b"\n"
    path = tmp_path / "d.csv"
    path.write_bytes(HEADER + b"\n" + body)
    expected = _records(path)

    def refuse(*args, **kwargs):
        raise text_table.pa.ArrowInvalid("refused")

    monkeypatch.setattr(text_table.pcsv, "read_csv", refuse)
    assert _records(path) == expected == _reference(body, {4: [0, 1, 2, 3]}, 4, first=2)


def test_blocks_of_plain_lines_are_read_whole_when_one_width_is_allowed(tmp_path, small_blocks, monkeypatch):
    taken = _whole_blocks(monkeypatch)
    line_by_line: list[set[bytes]] = []
    whole_block = text_table._Lines.whole_block

    def spy(self, block, *args):
        rows = whole_block(self, block, *args)
        if rows is None:
            line_by_line.append(set(bytes(block).split(b"\n")))
        return rows

    monkeypatch.setattr(text_table._Lines, "whole_block", spy)
    body = b"\n".join(_body(seed=11, carriage_returns=0.0)) + b"\n"
    path = tmp_path / "d.csv"
    path.write_bytes(HEADER + b"\n" + body)
    assert _records(path, chunk_rows=500) == _reference(body, {4: [0, 1, 2, 3]}, 4, first=2)
    hostile = {*HOSTILE.values(), *MORE.values()}
    assert taken.count(True) > 5 and line_by_line  # only the blocks holding hostile lines go line by line
    assert all(lines & hostile for lines in line_by_line)
    taken.clear()
    list(stream_rows(path, SCHEMA, header=False, max_line_chars=MAX_CHARS))  # two widths: never read whole
    assert not taken


@pytest.mark.parametrize("block", [1, 2, 3, 4096])
@pytest.mark.parametrize("gz", [False, True])
def test_a_byte_order_mark_is_removed_whatever_the_first_read_brings(tmp_path, monkeypatch, block, gz):
    """Fuzzing found reads of 1 or 2 bytes kept the mark (a first cell "\\ufeff30"): it is looked for in the first
    three bytes of the file, however many reads they take."""
    monkeypatch.setattr(table_stream, "_BLOCK_BYTES", block)
    monkeypatch.setattr(text_table, "_BLOCK_BYTES", block)
    data = b"\xef\xbb\xbf30,007,1,0\n40,12,2,1\n"
    path = tmp_path / ("d.csv.gz" if gz else "d.csv")
    path.write_bytes(gzip.compress(data) if gz else data)
    table = text_table.read_table(path, SCHEMA, header=False)
    assert table.X["age"].tolist() == ["30", "40"] and table.dropped == []
    assert [r[1][0] for r in _records(path, header=False)] == ["30", "40"]
    path.write_bytes(gzip.compress(b"\xef\xbb\xbf") if gz else b"\xef\xbb\xbf")  # the mark alone: no line at all
    assert len(text_table.read_table(path, SCHEMA, header=False).X) == 0 and _records(path, header=False) == []


def test_a_parquet_cell_python_cannot_hold_is_one_cell_not_the_end_of_the_stream(tmp_path):
    """Whole-change review F2, at predict time: to_pylist refused a whole batch for one cell that is not UTF-8 (or a
    date past 9999), so edprf predict stopped at that file; the cell now reads as U+FFFD and its row alone is affected."""
    import pyarrow.parquet as pq

    from edprf_core import CategoricalFeature, LabelSpec, Schema
    from edprf_core.tables import stream_rows

    schema = Schema(features=(CategoricalFeature("c", ("a", "b")),), label=LabelSpec("y", ("n", "p")))
    text = pa.array([b"a", b"\xffb", b"b"], pa.binary()).view(pa.string())  # a Parquet writer does not check it
    path = tmp_path / "rows.parquet"
    pq.write_table(pa.table({"c": text, "y": pa.array(["n", "p", "p"])}), path)
    (chunk,) = list(stream_rows(path, schema))
    assert list(chunk.frame["c"]) == ["a", "\ufffd", "b"] and list(chunk.line_numbers) == [1, 2, 3]
