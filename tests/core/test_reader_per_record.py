"""One hostile line added to a file read in many blocks changes no other row: not its cells, not its codes.

The reader sends plain lines to Arrow's CSV parser and every other line through the
Python rules, block by block (``_BLOCK_BYTES`` is made small here so that a file of
a few thousand lines spans many blocks).  Whatever route a line takes, and whatever
its neighbours are, it must be read as the rules read it alone.
"""

from __future__ import annotations

import numpy as np
import pytest

import edprf_core._text_table as text_table
from edprf_core import LabelSpec, Schema
from edprf_core._encoding import CellRules, _label_series, rule_violations
from edprf_core.encoding import FeatureGrid, encode_features, encode_labels
from edprf_core.tables import read_table
from tests.federation._neighbours import SCHEMA_TOML

SCHEMA = Schema.from_toml(SCHEMA_TOML)  # age (continuous), code and grade (categorical), outcome
HEADER = b"age,code,grade,outcome"
MAX_CHARS = 10_000  # above the test's block size: a kept line can span what would be two blocks

HOSTILE = {
    "huge_number": b"9" * 3000 + b",007,1,0",
    "longer_than_a_block": b"30," + b"x" * 6000 + b",1,0",
    "overflow": b"1e309,12,2,1",
    "nan_token": b"NaN,12,2,1",
    "stray_quote": b'3"0,007,1,0',
    "open_quote": b'30,"007,1,0',
    "quoted_fields": b'"30","12","2","1"',
    "extra_field": b"30,007,1,0,x",
    "missing_field": b"30,007,1",
    "non_utf8": b"30,\xff\xfe,1,0",
    "non_utf8_number": b"3\xc30,007,1,0",
    "carriage_return_inside": b"30,00\r7,1,0",
    "blank": b" \t ",
    "empty": b"",
    "separators_only": b",,,",
    "too_long": b"1" * (MAX_CHARS + 10) + b",007,1,0",
    "nul_byte": b"30,007\x00,1,0",
    "bom": b"\xef\xbb\xbf30,007,1,0",
    "newline_inside_quotes": b'30,"0\n07",1,0',
}


def _lines(n: int = 6000, seed: int = 1, carriage_returns: float = 0.1) -> list[bytes]:
    """``n`` lines, a share ``carriage_returns`` of them ending in ``\\r\\n`` (with none, every block of lines
    without the hostile one is read whole, see ``_Lines.whole_block``)."""
    rng = np.random.default_rng(seed)
    age = rng.uniform(0, 100, n).round(2)
    code = rng.choice(["007", "12", "other", " 12 ", "x"], n)
    grade = rng.choice(["1", "2", "3", "2.0", "?"], n)
    label = rng.choice(["0", "1", "1 "], n)
    ends = rng.choice(["", "\r"], n, p=[1 - carriage_returns, carriage_returns])
    return [f"{a},{c},{g},{o}{e}".encode() for a, c, g, o, e in zip(age, code, grade, label, ends)]


def _rows(path) -> dict[int, tuple]:
    """Line number -> (cells, codes, label code, kept by every rule), for every row read."""
    table = read_table(path, SCHEMA, max_line_chars=MAX_CHARS)
    problems: list = []
    codes = encode_features(table.X, SCHEMA, FeatureGrid.from_schema(SCHEMA, 8), problems)
    violations = rule_violations(table.X, table.y, SCHEMA)
    keep = np.ones(len(table.X), dtype=bool)
    for _, _, mask in violations:
        keep &= ~mask
    labels = np.full(len(table.y), -1)
    labels[keep] = encode_labels(table.y[keep], SCHEMA)
    cells = [tuple(row) for row in table.X.assign(outcome=table.y).to_numpy().tolist()]
    return {
        int(n): (c, tuple(k), int(lab), bool(ok))
        for n, c, k, lab, ok in zip(table.line_numbers, cells, codes.tolist(), labels, keep)
    }


def _reference(data: bytes) -> dict[int, tuple]:
    """The rules applied line by line in Python (the specification): line number -> fields."""
    out = {}
    for number, raw in enumerate(data.split(b"\n")[1:], start=2):
        fate = text_table._line_fields(text_table._decoded(raw), ",", 4, MAX_CHARS)
        if isinstance(fate, list):
            out[number] = tuple(fate)
    return out


@pytest.fixture
def small_blocks(monkeypatch):
    monkeypatch.setattr(text_table, "_BLOCK_BYTES", 4096)


@pytest.mark.parametrize("carriage_returns", [0.1, 0.0], ids=["some_crlf", "lf_only"])
@pytest.mark.parametrize("where", ["start", "middle", "end"])
@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_one_hostile_line_leaves_every_other_row_as_it_was(tmp_path, small_blocks, name, where, carriage_returns):
    lines = _lines(carriage_returns=carriage_returns)
    at = {"start": 0, "middle": len(lines) // 2 + 7, "end": len(lines)}[where]
    hostile = HOSTILE[name]
    d = b"\n".join([HEADER, *lines]) + b"\n"
    d_prime = b"\n".join([HEADER, *lines[:at], hostile, *lines[at:]]) + (b"" if where == "end" else b"\n")
    (tmp_path / "d.csv").write_bytes(d)
    (tmp_path / "d_prime.csv").write_bytes(d_prime)
    rows, rows_prime = _rows(tmp_path / "d.csv"), _rows(tmp_path / "d_prime.csv")
    first = at + 2  # the hostile line's number in D'
    shift = hostile.count(b"\n") + 1
    moved = {n + shift if n >= first else n: row for n, row in rows.items()}
    extra = {n: row for n, row in rows_prime.items() if n not in moved}
    assert {n: rows_prime.get(n) for n in moved} == moved, f"{name}: a row of D was read differently"
    assert all(first <= n < first + shift for n in extra), f"{name}: rows appeared outside the hostile line"
    assert len(rows) == len(lines)
    # both routes (Arrow, Python) give each line what the rules give it alone
    assert {n: row[0] for n, row in rows_prime.items()} == _reference(d_prime)


def test_a_non_ascii_separator_reads_by_the_python_rules(tmp_path):
    text = "age\u00a6code\u00a6grade\u00a6outcome\n30\u00a6007\u00a61\u00a60\nbad\u00a6line\n40\u00a612\u00a62\u00a61\n"
    path = tmp_path / "d.csv"
    path.write_text(text, encoding="utf-8")
    table = read_table(path, SCHEMA, sep="\u00a6")
    assert table.X.to_numpy().tolist() == [["30", "007", "1"], ["40", "12", "2"]] and table.y.tolist() == ["0", "1"]
    assert table.line_numbers.tolist() == [2, 4] and table.dropped == ["line 3: 2 fields, expected 4"]


def test_a_tab_separated_line_of_blanks_is_skipped(tmp_path):
    path = tmp_path / "d.tsv"
    path.write_bytes(b"age\tcode\tgrade\toutcome\n30\t007\t1\t0\n \t\t" + "\u3000".encode() + b"\t\n40\t12\t2\t1\n")
    table = read_table(path, SCHEMA, sep="\t")
    assert table.line_numbers.tolist() == [2, 4] and table.dropped == []


def test_labels_are_aliased_cell_by_cell():
    from dataclasses import replace

    import pandas as pd

    schema = replace(SCHEMA, label=LabelSpec("outcome", ("0", "1"), aliases=(("yes", "1"),)))
    series = _label_series(pd.Series([" yes", "0", "yes.", None], dtype="str"), schema, CellRules.of(schema))
    assert series.tolist()[:3] == ["1", "0", "yes."] and pd.isna(series.tolist()[3])


def test_lines_arrow_cannot_parse_are_read_by_the_python_rules(tmp_path, small_blocks, monkeypatch):
    """No file-wide failure: if Arrow's parser refused a block, its lines go through the rules one by one."""
    data = b"\n".join([HEADER, *_lines(500), HOSTILE["non_utf8"], HOSTILE["quoted_fields"]]) + b"\n"
    (tmp_path / "d.csv").write_bytes(data)
    expected = _rows(tmp_path / "d.csv")

    def refuse(*args, **kwargs):
        raise text_table.pa.ArrowInvalid("refused")

    monkeypatch.setattr(text_table.pcsv, "read_csv", refuse)
    assert _rows(tmp_path / "d.csv") == expected


def _whole_blocks(monkeypatch) -> list[bool]:
    """Per block read from now on, whether it was read whole (``_Lines.whole_block`` gave its rows)."""
    taken: list[bool] = []
    whole_block = text_table._Lines.whole_block

    def spy(self, *args):
        rows = whole_block(self, *args)
        taken.append(rows is not None)
        return rows

    monkeypatch.setattr(text_table._Lines, "whole_block", spy)
    return taken


def test_a_block_of_plain_lines_is_read_whole_and_one_hostile_line_sends_its_block_line_by_line(
    tmp_path, small_blocks, monkeypatch
):
    taken = _whole_blocks(monkeypatch)
    lines = _lines(carriage_returns=0.0)
    (tmp_path / "d.csv").write_bytes(b"\n".join([HEADER, *lines]) + b"\n")
    assert _rows(tmp_path / "d.csv") and len(taken) > 3 and all(taken)
    for name in ("extra_field", "too_long", "stray_quote", "empty", "bom", "carriage_return_inside"):
        taken.clear()
        at = len(lines) // 2
        data = b"\n".join([HEADER, *lines[:at], HOSTILE[name], *lines[at:]]) + b"\n"
        (tmp_path / "d_prime.csv").write_bytes(data)
        rows = _rows(tmp_path / "d_prime.csv")
        assert taken.count(False) == 1, f"{name}: {taken}"
        assert {n: row[0] for n, row in rows.items()} == _reference(data)


def test_a_line_longer_than_the_limit_is_found_in_a_block_read_whole(tmp_path, monkeypatch):
    """Default block size: the block is far longer than the limit, and the parser would accept the long line."""
    taken = _whole_blocks(monkeypatch)
    lines = _lines(n=200, carriage_returns=0.0)
    long_line = b"30," + b"x" * (MAX_CHARS - 6) + b",1,0"  # one byte over MAX_CHARS
    for line, kept in ((long_line, False), (long_line[1:], True)):
        data = b"\n".join([HEADER, *lines[:100], line, *lines[100:]]) + b"\n"
        (tmp_path / "d.csv").write_bytes(data)
        rows = _rows(tmp_path / "d.csv")
        assert (102 in rows) is kept and len(rows) == 200 + kept
        assert taken[-1] is kept  # read whole only when every line is within the limit
        assert {n: row[0] for n, row in rows.items()} == _reference(data)
