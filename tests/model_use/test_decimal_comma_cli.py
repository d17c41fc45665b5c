"""--decimal ',' reads a spreadsheet's European export (predict, evaluate, explain), each cell alone; the refused-rows
hint tells a thousands comma ('1,400') from a decimal comma (analyst review F7)."""

from __future__ import annotations

import pandas as pd
import pytest

from edprf_core import example_schema, load_embedded
from edprf_core.tables import stream_rows
from edprf_fl.cli import main

SCHEMA = example_schema("bank_marketing")
ROWS = 40


def _frames():
    X, y, _ = load_embedded("bank_marketing")
    frame = X.iloc[:ROWS].copy()
    frame["age"] = frame["age"].astype(float) + 0.5  # a fraction in every row: '58,5'
    frame[SCHEMA.label.column] = y.iloc[:ROWS].to_numpy()
    return frame


def _write(tmp_path, frame, name, decimal):
    path = tmp_path / name
    frame.to_csv(path, index=False, sep=";" if decimal == "," else ",", decimal=decimal)
    return path


def _probabilities(path):
    return pd.read_csv(path).filter(like="p_")


def test_predict_with_decimal_comma_scores_as_the_point_file(tmp_path, bank_model):
    frame = _frames()
    point = _write(tmp_path, frame, "point.csv", ".")
    comma = _write(tmp_path, frame, "comma.csv", ",")
    assert "58,5" in comma.read_text()
    model = str(bank_model["model"])
    assert main(["predict", model, str(point), "-o", str(tmp_path / "a.csv")]) == 0
    assert main(["predict", model, str(comma), "--sep", ";", "--decimal", ",", "-o", str(tmp_path / "b.csv")]) == 0
    pd.testing.assert_frame_equal(_probabilities(tmp_path / "a.csv"), _probabilities(tmp_path / "b.csv"))
    assert main(["evaluate", model, str(comma), "--sep", ";", "--decimal", ","]) == 0
    assert main(["explain", model, str(comma), "--sep", ";", "--decimal", ",", "--row", "0"]) == 0


def test_a_point_under_decimal_comma_leaves_that_row_only_unscored(tmp_path, capsys, bank_model):
    path = _write(tmp_path, _frames(), "comma.csv", ",")
    lines = path.read_text().splitlines()
    cells = lines[4].split(";")
    cells[list(SCHEMA.feature_names).index("balance")] = "1.400"  # a thousands point: never read as 1.4
    lines[4] = ";".join(cells)
    path.write_text("\n".join(lines) + "\n")
    out = tmp_path / "out.csv"
    assert main(["predict", str(bank_model["model"]), str(path), "--sep", ";", "--decimal", ",", "-o", str(out)]) == 0
    result = pd.read_csv(out)
    assert (result["status"] == "malformed").sum() == 1
    assert result.loc[3, "status"] == "malformed"
    assert "'1.400' holds a '.', which --decimal ',' does not read" in result.loc[3, "detail"]
    assert result["p_yes"].notna().sum() == ROWS - 1


def test_decimal_comma_with_comma_separator_is_refused(tmp_path, capsys, bank_model):
    path = _write(tmp_path, _frames(), "point.csv", ".")
    assert main(["predict", str(bank_model["model"]), str(path), "--decimal", ",", "-o", str(tmp_path / "o.csv")]) == 1
    assert "--decimal ',' with --sep ','" in capsys.readouterr().err
    assert not (tmp_path / "o.csv").exists()


def test_stream_rows_reads_each_cell_alone(tmp_path):
    """Each cell by the rule whatever the other rows hold: chunks of one row give the whole file's cells."""
    frame = _frames().astype(object).iloc[:4]
    frame["age"] = ["33,5", "1.400", " -0,5 ", "NA"]
    path = tmp_path / "in.csv"
    frame.to_csv(path, index=False, sep=";")
    whole = next(stream_rows(path, SCHEMA, sep=";", decimal=","))
    parts = list(stream_rows(path, SCHEMA, sep=";", decimal=",", chunk_rows=1))
    assert whole.frame["age"].tolist() == ["33.5", "1.400", "-0.5", "NA"]
    assert [p.frame["age"].iloc[0] for p in parts] == whole.frame["age"].tolist()
    assert [bool(p.malformed[0]) for p in parts] == [False, True, False, False] == [bool(m) for m in whole.malformed]
    assert whole.frame["job"].tolist() == frame["job"].tolist()  # a categorical column is never changed


@pytest.mark.parametrize(
    ("cell", "hint"),
    [
        ("1,400", "thousands separator? 1 refused number such as '1,400' (column 'balance'): 1,400 may mean 1400"),
        (  # a US-formatted amount with cents (rev-s60b F9): no reading with a decimal comma is offered
            "1,400.50",
            (
                "thousands separator? 1 refused number such as '1,400.50' (column 'balance'): 1,400.50 may mean "
                "1400.50: remove the separator (the schema reads none)\n"
            ),
        ),
        ("7,25", "decimal comma? 1 refused number such as '7,25' (column 'balance')"),
        ("0,500", "decimal comma? 1 refused number such as '0,500' (column 'balance')"),  # rev-s60b F4
        (  # several commas: never a decimal comma, so the one-comma test must not come first (review rev-s60 F7)
            "12,500,000",
            (
                "thousands separator? 1 refused number such as '12,500,000' (column 'balance'): 12,500,000 may mean "
                "12500000"
            ),
        ),
    ],
)
def test_the_refused_number_hint_tells_thousands_from_decimal_commas(tmp_path, capsys, bank_model, cell, hint):
    frame = _frames().astype(object)
    frame.loc[frame.index[0], "balance"] = cell
    path = tmp_path / "in.csv"
    frame.to_csv(path, index=False)
    assert main(["predict", str(bank_model["model"]), str(path), "-o", str(tmp_path / "o.csv")]) == 0
    err = capsys.readouterr().err
    assert hint in err
    assert ("decimal comma?" in err) is (cell in ("7,25", "0,500"))  # 1,400 is not called a decimal comma
