"""`edprf schema draft` on big and hostile files (scale review F6).

The draft reads a file as the party will (a line the party leaves out is no cell of the draft), types its columns
as pandas did but a column at a time with Arrow, says how far it got on a long file, and never prints a cell
whole.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from edprf_core import load_schema
from edprf_core.tables import MAX_LINE_CHARS
from edprf_fl.cli import _draft_columns
from edprf_fl.cli._main import main
from edprf_fl.simulation import _progress


def _numbers_file(path, rows: int = 2000) -> pd.DataFrame:
    """``rows`` rows of two number columns and a label, written to ``path``."""
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(
        {"num0": rng.normal(size=rows).round(3), "num1": rng.integers(0, 90, rows), "y": [0, 1] * (rows // 2)}
    )
    frame.to_csv(path, index=False)
    return frame


def _warnings(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("warning:")]


def test_a_line_the_party_leaves_out_is_left_out_of_the_draft(tmp_path, capsys):
    """A line longer than MAX_LINE_CHARS among 2,000 rows was one more cell of the draft: num0 became text with
    2,001 categories and the schema held the whole line.  The party drops it, and so does the draft now (and a
    line of another number of fields, which pandas padded with gaps)."""
    data, drafted = tmp_path / "long.csv", tmp_path / "long.toml"
    _numbers_file(data)
    with data.open("a") as handle:
        handle.write("y" * (MAX_LINE_CHARS + 10) + ",1,0\n")
        handle.write("7\n")  # one field of three
    assert main(["schema", "draft", str(data), "--label", "y", "-o", str(drafted)]) == 0
    err = capsys.readouterr().err
    assert drafted.stat().st_size < 4000 and "yyyy" not in drafted.read_text() and "yyyy" not in err
    features = {f.name: f for f in load_schema(drafted).features}
    assert features["num0"].kind == "continuous" and features["num1"].missing == "refuse"  # no gap drafted
    said = [line for line in _warnings(err) if "left out" in line]
    expected = (
        "warning: 2 lines of the file are left out, as a party leaves them out (line 2002: longer than "
        f"{MAX_LINE_CHARS} characters; line 2003: 1 fields, expected 3): the draft does not read them"
    )
    assert said == [expected], err
    assert main(["schema", "check", str(drafted), str(data)]) == 0
    assert "rows kept: 2000 (100.0%)" in capsys.readouterr().out


def test_a_huge_cell_is_quoted_short_and_the_share_and_count_read_true(tmp_path, capsys):
    """One cell of 500,000 characters in a column of numbers was printed whole in the warning, its share said
    "100%" (99.95 % rounded) and "1 cell are"."""
    data = tmp_path / "huge.csv"
    frame = _numbers_file(data).astype({"num0": object})
    frame.loc[5, "num0"] = "y" * 500_000
    frame.to_csv(data, index=False)
    assert main(["schema", "draft", str(data), "--label", "y", "-o", str(tmp_path / "s.toml")]) == 0
    [said] = [line for line in _warnings(capsys.readouterr().err) if "'num0' is drafted as text" in line]
    assert len(said) < 400, said[:400]
    assert "although 99.9% of its cells are numbers: 1 cell is not (e.g. 'yyyy" in said, said
    assert "'... (500,000 characters)" in said


@pytest.mark.parametrize(
    ("part", "whole", "text"),
    [
        (1999, 2000, "99.9%"),
        (98, 100, "98%"),
        (1, 2000, "0.1%"),
        (5, 5, "100%"),
        (10**9 - 1, 10**9, "99.9%"),
        (1, 10**9, "0.1%"),
    ],
)
def test_a_share_never_says_all_or_none_when_it_is_not(part, whole, text):
    assert _draft_columns.share_text(part, whole) == text


def test_a_cell_quoted_in_a_warning_is_escaped_and_bounded():
    assert _draft_columns.cell_text("a\nb") == "'a\\nb'"
    assert _draft_columns.cell_text("x" * 41) == repr("x" * 40) + "... (41 characters)"


def test_a_long_draft_says_how_many_columns_are_typed(tmp_path, capsys, monkeypatch):
    data = tmp_path / "rows.csv"
    _numbers_file(data, rows=200)
    monkeypatch.setattr(_progress, "PROGRESS_EVERY", 0.0)  # every column is "a few seconds" later
    assert main(["schema", "draft", str(data), "--label", "y"]) == 0
    err = capsys.readouterr().err.splitlines()
    typed = [line for line in err if "typed" in line]
    assert typed == [f"      typed {k} of 3 columns" for k in (1, 2, 3)], err
    assert err.index(typed[0]) > 0 and err[err.index(typed[-1]) + 1].startswith("      read in ")


def test_a_file_whose_every_line_is_left_out_is_refused(tmp_path, capsys):
    """pandas refused a file whose lines held more fields than its header; the reader drops them one by one, and
    the draft refuses a file it kept no row of (naming the lines, and the separator the header holds)."""
    data = tmp_path / "wide.csv"
    data.write_text("a;b,y\n1;2,3,4\n5;6,7,8\n")
    assert main(["schema", "draft", str(data), "--label", "y"]) == 1
    err = capsys.readouterr().err
    assert "no line reads as a row of its 2 columns (line 2: 3 fields, expected 2; line 3: 3 fields" in err, err
    assert "pass --sep ';'" in err


def _pandas_typed(cells: list, tokens: tuple[str, ...]) -> pd.Series:
    """The draft's typing before scale review F6, cell by cell with pandas (the reference)."""
    text = pd.Series(cells, dtype=object).astype("string").str.strip()
    text = text.mask(text.isin(tokens))
    values = text.astype(object).where(text.notna(), np.nan)
    numbers = pd.to_numeric(values, errors="coerce")
    present = int(values.notna().sum())
    return numbers if present and int(numbers.notna().sum()) == present else values


_CELLS = [
    "7", " 7 ", "-0", "+5", "00012", "1.", ".5", "1e3", "1E+3", "inf", "-Infinity", "nan", "NAN", "1_000", "0x10",
    "1,5", "١", "9223372036854775808", "1e400", "", "-", "NA", "True", "abc", "3.25", None,
]  # fmt: skip


@pytest.mark.parametrize("seed", range(40))
def test_the_columns_are_typed_as_pandas_types_them(seed):
    """The vectorized typing gives every column pandas' dtype, and every cell pandas' number or text."""
    rng = np.random.default_rng(seed)
    pool = [c for c in rng.choice(np.array(_CELLS, dtype=object), size=int(rng.integers(1, 8)))]
    cells = [pool[i] for i in rng.integers(0, len(pool), size=int(rng.integers(1, 30)))]
    tokens = tuple(m for m in ("", "NA", "nan", "-") if rng.random() < 0.7)
    marks = ("", "NA", "nan", "-", "NaN")
    got = _draft_columns.typed_column(_draft_columns.column_cells(pa.array(cells, type=pa.string()), marks), tokens)
    want = _pandas_typed(cells, tokens)
    if pd.api.types.is_numeric_dtype(want):
        assert got.dtype == want.dtype, (cells, tokens, got.dtype, want.dtype)
        np.testing.assert_array_equal(got.to_numpy(), want.to_numpy())
    else:
        assert not pd.api.types.is_numeric_dtype(got), (cells, tokens)
        assert got.astype(object).where(got.notna(), None).tolist() == want.where(want.notna(), None).tolist()


def test_a_number_to_pandas_is_a_number_to_the_draft():
    """NUMBER_PATTERN takes the cells pandas reads as numbers (a fuzz over their characters)."""
    rng = np.random.default_rng(1)
    alphabet = list("0123456789.eE+-") + ["inf", "infinity", "nan", " ", "x"]
    cells = ["".join(rng.choice(alphabet, size=int(rng.integers(1, 7)))) for _ in range(3000)]
    want = pd.to_numeric(pd.Series(cells, dtype=object).str.strip(), errors="coerce").notna().to_numpy()
    got = _draft_columns.number_cells(pd.Series(cells, dtype=object))
    assert [c for c, g, w in zip(cells, got, want) if g != w] == []
    assert re.fullmatch(r"\d+", str(int(want.sum())))  # some of each
    assert 0 < want.sum() < len(cells)


def test_one_infinite_cell_is_one_cell_that_holds_it(tmp_path, capsys):
    data = tmp_path / "inf.csv"
    frame = _numbers_file(data).astype({"num0": object})
    frame.loc[3, "num0"] = "inf"
    frame.to_csv(data, index=False)
    assert main(["schema", "draft", str(data), "--label", "y"]) == 0
    err = capsys.readouterr().err
    assert "column 'num0': 1 cell holds an infinite number (inf): no number to a party, its row is dropped;" in err


def test_whole_numbers_past_64_bits_are_drafted_as_numbers(tmp_path):
    """Whole-change review F4: the vectorized typing drafted a column holding 99999999999999999999 as categories
    (a 20-digit TOML integer, past what TOML holds); the earlier draft read it as a continuous number."""
    data = tmp_path / "big.csv"
    data.write_text("e,y\n1,p\n2,q\n99999999999999999999,p\n")
    assert main(["schema", "draft", str(data), "--label", "y", "-o", str(tmp_path / "big.toml")]) == 0
    (feature,) = load_schema(tmp_path / "big.toml").features
    assert feature.kind == "continuous" and (feature.lower, feature.upper) == (1.0, 1e20)
