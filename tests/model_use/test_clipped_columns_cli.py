"""predict and evaluate name each clipped column with its rows and bound, the most clipped first (also in evaluate's
--json), and warn of a unit error in part of a column clipped in 5 % or more of its values (analyst review F10)."""

from __future__ import annotations

import json

import pytest

from edprf_core import example_schema, load_embedded
from edprf_fl.cli import main

SCHEMA = example_schema("bank_marketing")
PARTIAL = "likely a unit error in part of the column"


def _file(tmp_path, months: int, low_balance: int = 0, rows: int = 200):
    """``rows`` embedded bank rows (labelled): the first ``months`` with their age in months (above the upper bound
    100), the last ``low_balance`` with a balance below the lower bound -10000."""
    X, y, _ = load_embedded("bank_marketing")
    frame = X.iloc[:rows].copy()
    frame["age"] = frame["age"].astype(float)
    frame.loc[frame.index[:months], "age"] = frame["age"].iloc[:months] * 12
    if low_balance:
        frame.loc[frame.index[-low_balance:], "balance"] = -50_000
    frame[SCHEMA.label.column] = y.iloc[:rows].to_numpy()
    path = tmp_path / "in.csv"
    frame.to_csv(path, index=False)
    return path


@pytest.mark.parametrize("command", ["predict", "evaluate"])
def test_the_summary_names_each_clipped_column_with_its_rows_and_bound(tmp_path, capsys, bank_model, command):
    data = _file(tmp_path, months=20, low_balance=3)  # age 10 % above its bound, balance 3 rows below
    out = ["-o", str(tmp_path / "out.csv")] if command == "predict" else ["--json", str(tmp_path / "m.json")]
    assert main([command, str(bank_model["model"]), str(data), *out]) == 0
    captured = capsys.readouterr()
    text = captured.err + captured.out
    age = "    age: 20 rows above its upper bound 100 (10% of its values)"
    balance = "    balance: 3 rows below its lower bound -10000 (2% of its values)"
    assert age in text and balance in text
    assert text.index(age) < text.index(balance)  # the most clipped first
    assert "rows refused for another cell count here too" in text  # the tally reads every row read (rev-s60 F6)
    warnings = [line for line in captured.err.splitlines() if PARTIAL in line]
    assert len(warnings) == 1  # 10 %: age only; balance's 1.5 % is no such sign
    assert warnings[0].startswith(f"edprf {command}: warning: column 'age': 20 rows above its upper bound 100, 10%")
    if command == "evaluate":
        columns = json.loads((tmp_path / "m.json").read_text())["clipped_columns"]
        assert [(c["column"], c["below"], c["above"], c["partial_units_warning"]) for c in columns] == [
            ("age", 0, 20, True),
            ("balance", 3, 0, False),
        ]


def test_no_clipped_column_no_lines(tmp_path, capsys, bank_model):
    assert (
        main(["predict", str(bank_model["model"]), str(_file(tmp_path, months=0)), "-o", str(tmp_path / "o.csv")]) == 0
    )
    assert "by column" not in capsys.readouterr().err
