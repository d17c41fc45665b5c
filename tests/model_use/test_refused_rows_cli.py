"""edprf predict / evaluate when rows are refused: a file none of whose rows can be scored is a failure, and the
usual causes (decimal commas, a header read as data, labels in another case) are named with what to do
(hospital-analyst walkthrough: 20 of 20 rows refused said nothing more and exited 0)."""

from __future__ import annotations

import pandas as pd
import pytest

from edprf_fl.cli import main
from edprf_fl.cli._evaluate_cmd import SUBSET_EXIT

DECIMAL_HINT = "decimal comma? "
POINT = "the schema reads '.' as the decimal point"


def _rows(bank_model, n: int = 20) -> pd.DataFrame:
    return pd.read_csv(bank_model["data"]).head(n)


def _decimal_commas(bank_model, tmp_path, n: int = 20, refused: int | None = None):
    """DATA with ';' between fields and a decimal comma in 'age' and 'balance' of the first ``refused`` rows."""
    frame = _rows(bank_model, n).astype({"age": str, "balance": str})
    rows = frame.index[: n if refused is None else refused]
    frame.loc[rows, "age"] += ",41"  # not ",414": three digits may be a thousands separator (F7)
    frame.loc[rows, "balance"] += ",5"
    path = tmp_path / "commadec.csv"
    frame.to_csv(path, sep=";", index=False)
    return path


def test_predict_fails_when_no_row_can_be_scored_and_names_the_decimal_comma(tmp_path, bank_model, capsys):
    data = _decimal_commas(bank_model, tmp_path)
    out = tmp_path / "out.csv"
    assert main(["predict", str(bank_model["model"]), str(data), "--sep", ";", "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert "predicted 20 rows (0 ok, 0 clipped, 20 refused, 0 malformed)" in err
    assert (
        f"edprf predict: {data}: no row could be scored; most common reason: column 'age': not a number "
        "(20 of 20 rows); each row's reason is in the detail column of " in err
    )
    assert f"{DECIMAL_HINT}40 refused numbers such as '51,41' (column 'age'): {POINT}" in err
    assert list(pd.read_csv(out)["status"]) == ["refused"] * 20  # OUT is still written, with every reason


def test_predict_still_exits_0_when_some_rows_are_scored_and_still_hints(tmp_path, bank_model, capsys):
    data = _decimal_commas(bank_model, tmp_path, refused=1)
    assert main(["predict", str(bank_model["model"]), str(data), "--sep", ";", "-o", str(tmp_path / "o.csv")]) == 0
    err = capsys.readouterr().err
    assert "19 ok, 0 clipped, 1 refused" in err and "no row could be scored" not in err
    assert f"{DECIMAL_HINT}2 refused numbers such as '51,41' (column 'age'): {POINT}" in err


def test_a_comma_that_is_no_decimal_comma_gets_no_hint(tmp_path, bank_model, capsys):
    frame = _rows(bank_model).astype({"age": str})
    frame.loc[0, "age"] = "1,2,3"
    frame.loc[1, "age"] = "old"
    frame.to_csv(tmp_path / "odd.csv", sep=";", index=False)
    argv = ["predict", str(bank_model["model"]), str(tmp_path / "odd.csv"), "--sep", ";", "-o", str(tmp_path / "o.csv")]
    assert main(argv) == 0
    assert DECIMAL_HINT not in capsys.readouterr().err


def test_evaluate_names_the_decimal_comma_and_the_most_common_reason(tmp_path, bank_model, capsys):
    data = _decimal_commas(bank_model, tmp_path)
    assert main(["evaluate", str(bank_model["model"]), str(data), "--sep", ";"]) == 1
    captured = capsys.readouterr()
    assert f"{DECIMAL_HINT}40 refused numbers such as '51,41' (column 'age'): {POINT}" in captured.out
    assert "no row could be scored (most common reason: column 'age': not a number (20 of 20 rows))" in captured.err


@pytest.mark.parametrize("command", ["predict", "evaluate"])
def test_malformed_lines_are_a_reason_too(tmp_path, bank_model, capsys, command):
    data = tmp_path / "semicolons.csv"
    _rows(bank_model).to_csv(data, sep=";", index=False)
    out = ["-o", str(tmp_path / "o.csv")] if command == "predict" else []
    # no header at all: every line is one field, malformed
    assert main([command, str(bank_model["model"]), str(data), "--no-header", *out]) == 1
    assert "most common reason: 1 fields, expected " in capsys.readouterr().err


HEADER_HINT = "line 1 looks like a header (its cells are the schema's feature names): drop --no-header"


@pytest.mark.parametrize("command", ["predict", "evaluate"])
def test_a_header_read_with_no_header_is_named(tmp_path, bank_model, capsys, command):
    data = tmp_path / "with-header.csv"
    _rows(bank_model).to_csv(data, index=False)
    out = ["-o", str(tmp_path / "o.csv")] if command == "predict" else []
    assert main([command, str(bank_model["model"]), str(data), "--no-header", *out]) == 0  # the other rows score
    captured = capsys.readouterr()
    assert HEADER_HINT in captured.out + captured.err
    # without --no-header, or when line 1 is data that is refused for another reason: no such hint
    frame = _rows(bank_model).astype({"age": str})
    frame.loc[0, "age"] = "old"
    frame.to_csv(data, index=False, header=False)
    (tmp_path / "o.csv").unlink(missing_ok=True)
    assert main([command, str(bank_model["model"]), str(data), "--no-header", *out]) == 0
    assert main([command, str(bank_model["model"]), str(bank_model["data"]), *out, "--force"]) == 0
    captured = capsys.readouterr()
    assert "looks like a header" not in captured.out + captured.err


def test_a_header_of_a_few_renamed_columns_is_still_named(tmp_path, bank_model, capsys):
    frame = _rows(bank_model)
    frame.columns = ["Age", " job ", "status", *frame.columns[3:]]  # two of 15 differ: still most of them
    data = tmp_path / "renamed.csv"
    frame.to_csv(data, index=False)
    assert main(["predict", str(bank_model["model"]), str(data), "--no-header", "-o", str(tmp_path / "o.csv")]) == 0
    assert HEADER_HINT in capsys.readouterr().err


def test_evaluate_names_undeclared_labels_and_their_case(tmp_path, bank_model, capsys):
    """'Reverse' where the schema declares 'reverse' was counted as 'with a missing or undeclared label', unnamed."""
    frame = _rows(bank_model, 40)
    frame.loc[:1, "y"] = "Yes"
    frame.loc[2, "y"] = "maybe"
    frame.loc[3, "y"] = None  # missing: counted, not named
    data = tmp_path / "labels.csv"
    frame.to_csv(data, index=False)
    assert (
        main(["evaluate", str(bank_model["model"]), str(data)]) == SUBSET_EXIT
    )  # undeclared labels: metrics on a subset (exit 2)
    out = capsys.readouterr().out
    assert "4 with a missing or undeclared label" in out
    assert (
        "labels not among the declared classes ['no', 'yes']: 'Yes' (2 rows), 'maybe' (1 row); labels are "
        "case-sensitive: 'Yes' is declared as 'yes'"
    ) in out
    frame.loc[4:9, "y"] = [f"v{i}" for i in range(6)]  # more than four distinct values: the most frequent first
    frame.to_csv(data, index=False)
    assert main(["evaluate", str(bank_model["model"]), str(data)]) == SUBSET_EXIT
    assert "'Yes' (2 rows), 'maybe' (1 row), 'v0' (1 row), 'v1' (1 row) and 4 other values" in capsys.readouterr().out


def test_declared_labels_get_no_label_line(tmp_path, bank_model, capsys):
    assert main(["evaluate", str(bank_model["model"]), str(bank_model["data"])]) == 0
    assert "labels not among the declared classes" not in capsys.readouterr().out


@pytest.mark.parametrize("command", ["predict", "evaluate"])
@pytest.mark.parametrize("kind", ["header only", "no-header, blank lines only", "parquet without rows"])
def test_data_without_any_row_is_a_failure_too(tmp_path, bank_model, capsys, command, kind):
    """A header and no row: predict exited 0 ('predicted 0 rows'), though its help says 1 when not one row could be
    scored and evaluate exits 1 on the same file (walkthrough)."""
    empty = _rows(bank_model, 0)
    extra = []
    if kind == "header only":
        data = tmp_path / "empty.csv"
        empty.to_csv(data, index=False)
        what = "the file has a header line but no data line"
    elif kind == "parquet without rows":
        data = tmp_path / "empty.parquet"
        empty.astype(str).to_parquet(data, index=False)
        what = "the Parquet file has its columns but no row"
    else:
        data = tmp_path / "blank.csv"
        data.write_text("\n\n", encoding="utf-8")
        extra = ["--no-header"]
        what = "the file has no data line"
    out = tmp_path / "o.csv"
    written = ["-o", str(out)] if command == "predict" else []
    assert main([command, str(bank_model["model"]), str(data), *extra, *written]) == 1
    err = capsys.readouterr().err
    assert f"edprf {command}: {data}: no rows to score: {what}" in err
    if command == "predict":
        assert f"{out} holds the header only" in err
        assert pd.read_csv(out).empty and "p_yes" in pd.read_csv(out).columns
        assert main(["predict", str(bank_model["model"]), str(data), *extra, "-o", "-"]) == 1
        captured = capsys.readouterr()
        assert "the CSV written to stdout holds the header only" in captured.err
        assert captured.out.startswith("line,status,detail,p_no,p_yes,predicted")
