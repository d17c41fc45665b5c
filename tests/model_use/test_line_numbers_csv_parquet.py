"""The `line` of a row: a CSV file's own line, the header being line 1; a Parquet file's data row number from 1.
predict writes it so, explain --line reads it so, and its help and docs/using-a-model.md say both (analyst review
F13)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from edprf_fl.cli import main
from edprf_fl.cli._main import build_parser

DOCS = Path(__file__).resolve().parents[2] / "docs" / "using-a-model.md"


def test_predict_numbers_csv_lines_from_the_header_and_parquet_rows_from_1(tmp_path, bank_model):
    rows = pd.read_csv(bank_model["data"]).head(3)
    csv, parquet = tmp_path / "in.csv", tmp_path / "in.parquet"
    rows.to_csv(csv, index=False)
    rows.to_parquet(parquet, index=False)
    for data, first in ((csv, 2), (parquet, 1)):
        out = tmp_path / f"{data.suffix[1:]}-out.csv"
        assert main(["predict", str(bank_model["model"]), str(data), "-o", str(out)]) == 0
        assert pd.read_csv(out)["line"].tolist() == [first, first + 1, first + 2]
        assert main(["explain", str(bank_model["model"]), str(data), "--line", str(first)]) == 0


def test_explain_help_and_the_docs_say_how_lines_count(capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args(["explain", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "for a CSV file the file's line, counting the header as line 1 (the first data row is line 2)" in help_text
    assert "for a Parquet file, which has no header line, the data row's number from 1" in help_text
    docs = " ".join(DOCS.read_text(encoding="utf-8").split())
    assert "in a CSV file the file's own line, the header being line 1, so the first data row is line 2" in docs
    assert "in a Parquet file, which has no header line, the data row's number from 1" in docs
