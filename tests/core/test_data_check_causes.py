"""`check_data` names the usual causes of rows lost, for the data owner (bank review S2-3, S2-4).

A cp1252 export read as UTF-8 turned 'société' into 'soci\ufffdt\ufffd': the rows were counted as "undeclared
category" and nothing said the file was not UTF-8.  Amounts written with a decimal comma were "not a finite
number"; when only some carried a decimal part, the rows kept were exactly the whole amounts (a biased sample) and
the check said nothing more.  The findings carry counts and line numbers, never a cell's value.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from edprf_core import CategoricalFeature, ContinuousFeature, LabelSpec, Schema, check_data
from edprf_core._data_check import BIASED_SHARE
from edprf_core.tables import decimal_comma_cells

BANK = Schema(
    features=(
        ContinuousFeature("age", 18.0, 110.0),
        ContinuousFeature("balance", -1e6, 1e7, missing="separate"),
        CategoricalFeature("segment", ("retail", "société", "crédit"), unknown="refuse"),
    ),
    label=LabelSpec("default", ("no", "yes")),
)


def _rows(n: int, balance=lambda i: f"{1000 + i}.25", segment=lambda i: "retail") -> str:
    return "age,balance,segment,default\n" + "".join(
        f"{30 + i % 50},{balance(i)},{segment(i)},{'yes' if i % 3 else 'no'}\n" for i in range(n)
    )


def test_a_cp1252_file_is_named_with_the_rows_lines_and_a_recode_hint(tmp_path):
    text = _rows(20, segment=lambda i: "société" if i % 4 == 0 else "crédit" if i % 4 == 1 else "retail")
    latin = tmp_path / "latin.csv"
    latin.write_bytes(text.encode("cp1252"))
    report = check_data(latin, BANK)
    # rows 0, 1, 4, 5, ... (i % 4 in {0, 1}) on file lines i + 2: 10 of 20
    assert report.rows_kept == 10 and report.not_utf8 == 10
    assert report.not_utf8_lines == (2, 3, 6, 7, 10)
    (finding,) = report.findings()
    level, said = finding
    assert level == "problem"
    assert said.startswith("10 rows (50.0%) hold bytes that are not valid UTF-8")
    assert "lines 2, 3, 6, 7, 10, ...)" in said and "Latin-1/cp1252?" in said
    assert "iconv -f cp1252 -t utf-8 in.csv > out.csv" in said
    assert "soci" not in said and "cr" + "\ufffd" not in said  # no cell's value
    utf8 = tmp_path / "utf8.csv"
    utf8.write_text(text, encoding="utf-8")  # the same rows, re-encoded: all kept, nothing said
    report = check_data(utf8, BANK)
    assert report.rows_kept == 20 and report.not_utf8 == 0 and report.findings() == []


def test_one_foreign_byte_in_a_label_is_counted_too(tmp_path):
    path = tmp_path / "one.csv"
    path.write_bytes(_rows(5).encode() + b"40,10.5,retail,n\xf6\n")
    report = check_data(path, BANK)
    assert report.not_utf8 == 1 and report.not_utf8_lines == (7,)
    assert "(16.7%) hold bytes that are not valid UTF-8" in report.findings()[0][1]
    assert "line 7)" in report.findings()[0][1]


@pytest.mark.parametrize(
    ("cell", "comma"),
    [
        ("1234,56", True),
        (" -0,5 ", True),
        ("+1.234,56", True),
        ("1.234.567,8", True),
        ("12,3", True),
        ("1,5,6", False),
        ("1234", False),
        ("1.5", False),
        ("1234,", False),
        (",5", False),
        ("12.34,5", False),  # a dot that is no thousands separator
        ("1,234.5", False),  # a thousands comma with a decimal point: not a decimal comma
        ("abc,de", False),
        ("", False),
        (None, False),
    ],
)
def test_decimal_comma_cells_recognizes_a_number_written_with_a_decimal_comma(cell, comma):
    assert decimal_comma_cells(pd.Series([cell], dtype=object)).tolist() == [comma]
    assert decimal_comma_cells(pa.array([cell], pa.large_string())).tolist() == [comma]


def test_decimal_comma_cells_of_numbers_and_of_text_arrow_cannot_hold():
    assert decimal_comma_cells(pd.Series([1.5, np.nan, 3.0])).tolist() == [False, False, False]
    assert decimal_comma_cells(np.array(["1,5", "\ud800", 2.0], dtype=object)).tolist() == [True, False, False]


def _partial(tmp_path, n: int, commas: int):
    """``n`` rows separated by ';'; the balance of the first ``commas`` written with a decimal comma, the others
    whole amounts."""
    path = tmp_path / f"partial-{commas}.csv"
    lines = [f"{30 + i % 50};{1000 + i}{',56' if i < commas else ''};retail;no\n" for i in range(n)]
    path.write_text("age;balance;segment;default\n" + "".join(lines))
    return check_data(path, BANK, sep=";")


def test_a_numeric_column_unread_in_a_tenth_of_the_rows_is_a_biased_training_set(tmp_path):
    assert BIASED_SHARE == 0.10
    report = _partial(tmp_path, 50, 5)  # exactly 10 %: at the threshold
    assert report.rows_kept == 45 and report.decimal_commas == {"balance": 5}
    ((level, said),) = report.findings()
    assert level == "problem"
    assert said.startswith("column 'balance': 5 rows (10.0%) are not a finite number and are dropped")
    assert "a biased training set" in said
    assert "decimal comma, or a thousands comma? 5 of them are written like 1234,56" in said
    assert "the schema reads '.' as the decimal point" in said
    assert "1000,56" not in said and "1000" not in said  # no cell's value


def test_a_few_decimal_commas_below_the_share_are_a_note(tmp_path):
    report = _partial(tmp_path, 50, 4)  # 8 %
    ((level, said),) = report.findings()
    assert level == "note" and said.startswith("column 'balance': decimal comma, or a thousands comma? 4 of them")


def test_thousands_dots_next_to_decimal_commas_are_named(tmp_path):
    """rev-data S2-3: in a file written with decimal commas, ``1.200`` is a thousand two hundred, but the schema
    reads it as 1.2, silently (clipped or binned low).  Where a column also holds decimal commas, such cells are
    counted and named (no cell's value); elsewhere ``1.200`` is a decimal and nothing is said."""
    path = tmp_path / "dots.csv"
    lines = [
        f"{30 + i % 50};{'1.200' if i % 5 == 0 else f'{1000 + i},56' if i < 4 else str(1000 + i)};retail;no\n"
        for i in range(50)
    ]
    path.write_text("age;balance;segment;default\n" + "".join(lines))
    report = check_data(path, BANK, sep=";")
    assert report.thousands_dots == {"balance": 10} and report.decimal_commas == {"balance": 3}
    dots = [(level, said) for level, said in report.findings() if "1.200" in said]
    said = (
        "column 'balance': 10 cells (20.0%) are written like 1.200 in a column that also holds decimal commas: "
        "thousands separators? The schema reads them as 1.2; drop the thousands separators before converting "
        "the decimal commas"
    )
    assert dots == [("note", said)]  # 1.250 may be a decimal too: a note, never a failed party check
    path.write_text("age;balance;segment;default\n" + "".join(line.replace(",56", "") for line in lines))
    assert check_data(path, BANK, sep=";").thousands_dots == {}  # no decimal comma: 1.200 is a decimal


def test_a_column_of_decimal_commas_keeps_no_row(tmp_path):
    report = _partial(tmp_path, 20, 20)
    assert report.rows_kept == 0
    ((level, said),) = report.findings()
    assert level == "problem" and "20 rows (100.0%) are not a finite number and are dropped; no row is kept" in said
    assert "decimal comma, or a thousands comma? 20 of them" in said


def test_text_that_is_no_number_at_all_is_a_biased_training_set_without_a_comma_hint(tmp_path):
    path = tmp_path / "words.csv"
    path.write_text(_rows(10, balance=lambda i: "n/a-ish" if i < 2 else f"{i}.5"))
    ((level, said),) = check_data(path, BANK).findings()
    assert level == "problem" and "2 rows (20.0%) are not a finite number" in said and "decimal comma" not in said


def test_undeclared_categories_lost_to_case_are_a_problem_and_left_out_on_purpose_a_note(tmp_path):
    """rev-data S3-10: 13.7 % of rows dropped as undeclared stayed a bare count and the check ended "no problem
    found"; nothing said that most were a declared category but for case.  A tenth of the rows lost to case alone
    is a problem; undeclared values in a tenth of the rows are a note (a schema may leave values out on purpose:
    rev-s57 S3-15).  Counts only, never a cell's value."""
    from edprf_core import CategoricalFeature, LabelSpec, Schema

    schema = Schema(
        features=(CategoricalFeature("g", ("Male", "Female"), source="t"),), label=LabelSpec("y", ("yes", "no"))
    )
    path = tmp_path / "case.csv"

    def findings(cells, labels):
        path.write_text("g,y\n" + "".join(f"{c},{y}\n" for c, y in zip(cells, labels)))
        return {said.split(":")[0]: (level, said) for level, said in check_data(path, schema).findings()}

    labels = (["yes", "no"] * 50)[:96] + ["Yes"] * 4
    found = findings(["Male", "Female"] * 40 + ["MALE"] * 15 + ["other"] * 5, labels)
    level, said = found["column 'g'"]
    assert level == "problem" and "20 rows (20.0%) hold a category the schema does not declare" in said
    assert "15 of them are a declared category but for case: write it as declared" in said and "MALE" not in said
    level, said = found["column 'y'"]
    assert level == "note" and "4 of them are a declared class but for case" in said and "[label] aliases" in said
    found = findings(["Male", "Female"] * 40 + ["other"] * 20, ["yes", "no"] * 50)  # left out on purpose
    level, said = found["column 'g'"]
    assert level == "note" and "20 rows (20.0%) hold a category" in said and "but for case" not in said
    assert set(findings(["Male", "Female"] * 48 + ["other"] * 4, ["yes", "no"] * 50)) == set()  # 4 %: nothing


def test_an_unbalanced_quote_is_explained_with_its_lines(tmp_path):
    """rev-data S3-11: a quoted cell holding a line break (a spreadsheet's multi-line note) showed only as "lines
    left out (unbalanced quotes): 1 / (wrong number of fields): 1", without a cause or a line number."""
    from edprf_core import CategoricalFeature, LabelSpec, Schema

    schema = Schema(
        features=(CategoricalFeature("g", ("Male", "Female"), source="t"),),
        label=LabelSpec("y", ("yes", "no")),
        ignored_columns=("note",),
    )
    path = tmp_path / "notes.csv"
    path.write_text('g,note,y\nMale,"pain\nfever",yes\n' + "Female,ok,no\n" * 30)
    report = check_data(path, schema)
    assert report.quote_lines == (2,) and report.lines_dropped == {"unbalanced quotes": 1, "wrong number of fields": 1}
    ((level, said),) = report.findings()
    assert level == "note" and said.startswith("1 line left out for an unbalanced quote (line 2): a quoted cell")
    assert "remove the line breaks inside cells" in said and "pain" not in said


def test_a_leading_zero_is_never_a_thousands_separator(tmp_path):
    """rev-s57 S2-4: 0.125 and 1.250 beside 5 % of decimal commas were reported as 95 % thousands separators, a
    problem that failed party check: a cell with a leading zero (0.125) is a decimal, and then so are the others."""
    path = tmp_path / "three-decimals.csv"
    amounts = ["0,5" if i < 5 else ("0.125" if i % 2 else "1.250") for i in range(100)]
    path.write_text("age;balance;segment;default\n" + "".join(f"30;{a};retail;no\n" for a in amounts))
    report = check_data(path, BANK, sep=";")
    assert report.decimal_commas == {"balance": 5} and report.thousands_dots == {}
    assert [level for level, _ in report.findings()] == ["note"]  # the decimal commas alone
