"""edprf predict --id-column: identifier columns copied into OUT first, unchanged, on their record's row; a name
DATA lacks is refused before anything is scored; a quoted cell spanning lines gets an actionable reason."""

from __future__ import annotations

import pandas as pd
import pytest

from edprf_core import example_schema
from edprf_fl.cli import main

SCHEMA = example_schema("bank_marketing")
GOOD = "51,admin.,married,secondary,no,0,no,no,unknown,5,jun,1,-1,0,unknown"
IDS = ["007", "A-1", " spaced ", "0042", "x9", "1e3", "z"]


def _data(tmp_path, lines: list[str], header: str) -> str:
    path = tmp_path / "in.csv"
    path.write_text("\n".join([header, *lines]) + "\n", encoding="utf-8")
    return str(path)


def test_identifiers_come_first_unchanged_on_their_rows(tmp_path, bank_model):
    header = "mrn," + ",".join(SCHEMA.feature_names) + ",visit"
    ages = [25, 40, 61, 77, 33, 50, 19]
    lines = [f"{i},{GOOD.replace('51', str(a), 1)},v{k}" for k, (i, a) in enumerate(zip(IDS, ages, strict=True))]
    lines[3] = lines[3].replace(",admin.,", ",astronaut,")  # refused: its identifier is still copied
    out = tmp_path / "out.csv"
    args = ["predict", str(bank_model["model"]), _data(tmp_path, lines, header), "-o", str(out)]
    assert main([*args, "--id-column", "visit,mrn", "--chunk-rows", "2"]) == 0
    frame = pd.read_csv(out, dtype=str, keep_default_na=False)
    assert list(frame.columns[:4]) == ["visit", "mrn", "line", "status"]
    assert list(frame["mrn"]) == IDS  # text as written: no number parsing, no stripping
    assert list(frame["visit"]) == [f"v{k}" for k in range(len(IDS))]
    assert list(frame["line"]) == [str(n) for n in range(2, 2 + len(IDS))]
    assert frame["status"].iloc[3] == "refused"
    plain = tmp_path / "plain.csv"
    assert main(["predict", str(bank_model["model"]), _data(tmp_path, lines, header), "-o", str(plain)]) == 0
    # nothing else changes: the other columns are those of a run without --id-column
    assert frame.drop(columns=["visit", "mrn"]).equals(pd.read_csv(plain, dtype=str, keep_default_na=False))


def test_a_feature_may_be_an_identifier_too(tmp_path, bank_model):
    out = tmp_path / "out.csv"
    data = _data(tmp_path, [GOOD], ",".join(SCHEMA.feature_names))
    assert main(["predict", str(bank_model["model"]), data, "-o", str(out), "--id-column", "age"]) == 0
    assert list(pd.read_csv(out, dtype=str).iloc[0, :2]) == ["51", "2"]


@pytest.mark.parametrize(
    ("value", "extra", "message"),
    [
        ("mrn", [], "in.csv has no column 'mrn'; its header names 'age', 'job'"),
        ("mrn,age", ["--no-header"], "cannot be used with --no-header"),
        ("status", [], "--id-column 'status': OUT has a column of that name already"),
    ],
)
def test_a_name_data_lacks_is_refused(tmp_path, capsys, bank_model, value, extra, message):
    out = tmp_path / "out.csv"
    header = GOOD if extra else ",".join(SCHEMA.feature_names)  # --no-header: the first line is data
    data = _data(tmp_path, [GOOD], header)
    assert main(["predict", str(bank_model["model"]), data, "-o", str(out), "--id-column", value, *extra]) == 1
    assert message in capsys.readouterr().err
    assert not out.exists()


def test_a_quoted_cell_spanning_lines_says_what_to_do(tmp_path, bank_model):
    header = ",".join(SCHEMA.feature_names) + ",notes"
    lines = [f'{GOOD},"line one', 'line two"', f"{GOOD},fine"]
    out = tmp_path / "out.csv"
    assert main(["predict", str(bank_model["model"]), _data(tmp_path, lines, header), "-o", str(out)]) == 0
    frame = pd.read_csv(out, dtype=str, keep_default_na=False)
    assert list(frame["status"]) == ["malformed", "malformed", "ok"]
    assert frame["detail"].iloc[0] == (
        "unbalanced quotes: a quoted cell spans lines (embedded line break): remove line breaks from text columns, "
        "or drop the column"
    )


def test_an_id_column_in_a_semicolon_file_gets_the_separator_hint(tmp_path, bank_model, capsys):
    """Analyst review F6: --id-column was checked before the header, so a ';' file got "has no column 'mrn'"
    without the separator hint a run without --id-column gives.  The error now names the separator."""
    header = "mrn;" + ";".join(SCHEMA.feature_names)
    data = _data(tmp_path, ["007;" + GOOD.replace(",", ";")], header)
    out = str(tmp_path / "out.csv")
    assert main(["predict", str(bank_model["model"]), data, "-o", out, "--id-column", "mrn"]) == 1
    err = capsys.readouterr().err
    assert "has no column 'mrn'" in err and "the first line holds ';': is that the separator? pass --sep ';'" in err
    assert main(["predict", str(bank_model["model"]), data, "-o", out, "--id-column", "mrn", "--sep", ";"]) == 0
