"""Files that are not UTF-8 CSV text are named as such (UTF-16, an Excel workbook, cp1252) by predict, evaluate,
schema draft and schema check; --sep '\\t' and --sep tab mean a tab wherever --sep exists."""

from __future__ import annotations

import gzip
import zipfile

import pandas as pd
import pytest

from edprf_fl.cli import main
from edprf_fl.cli._main import build_parser

UTF16 = "UTF-16 text: re-save as CSV UTF-8"
EXCEL = "an Excel workbook: save it as CSV (UTF-8)"


def _rows(bank_model) -> pd.DataFrame:
    return pd.read_csv(bank_model["data"], dtype=str, keep_default_na=False).head(30)


def _xlsx(path) -> None:
    """A zip archive as .xlsx is: what matters is its signature, not its sheets."""
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("[Content_Types].xml", "<Types/>")
        z.writestr("xl/workbook.xml", "<workbook/>")


@pytest.fixture
def files(tmp_path, bank_model):
    rows = _rows(bank_model)
    out = {}
    out["utf16"] = tmp_path / "utf16.csv"
    rows.to_csv(out["utf16"], index=False, encoding="utf-16")  # with a byte-order mark
    out["utf16le"] = tmp_path / "utf16le.csv"
    out["utf16le"].write_bytes(rows.to_csv(index=False).encode("utf-16-le"))  # no mark: NUL bytes tell it
    out["xlsx"] = tmp_path / "book.xlsx"
    _xlsx(out["xlsx"])
    out["xlsx_as_csv"] = tmp_path / "book.csv"  # a workbook renamed: the bytes say what it is
    _xlsx(out["xlsx_as_csv"])
    return out


@pytest.mark.parametrize("kind", ["utf16", "utf16le", "xlsx", "xlsx_as_csv"])
@pytest.mark.parametrize("command", ["predict", "evaluate", "schema draft", "schema check"])
def test_utf16_and_workbooks_are_named(tmp_path, capsys, bank_model, files, kind, command):
    data = str(files[kind])
    argv = {
        "predict": ["predict", str(bank_model["model"]), data, "-o", str(tmp_path / "out.csv")],
        "evaluate": ["evaluate", str(bank_model["model"]), data],
        "schema draft": ["schema", "draft", data, "--label", "y"],
        "schema check": ["schema", "check", str(bank_model["schema"]), data],
    }[command]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert f"edprf {command}: error: {data}: {EXCEL if kind.startswith('xlsx') else UTF16}" in err
    assert "another model or dataset" not in err and "first line" not in err


def test_schema_draft_on_cp1252_names_the_line_and_how_to_re_encode(tmp_path, capsys, bank_model):
    rows = _rows(bank_model)
    rows.loc[6, "job"] = "caf\u00e9"  # 0xe9 in cp1252: line 8 of the file (header, then rows 0..6)
    data = tmp_path / "cp1252.csv"
    rows.to_csv(data, index=False, encoding="cp1252")
    assert main(["schema", "draft", str(data), "--label", "y"]) == 1
    err = capsys.readouterr().err
    assert f"{data}: line 8 holds bytes that are not valid UTF-8" in err
    assert "iconv -f cp1252 -t utf-8" in err and "codec can't decode" not in err


@pytest.mark.parametrize("given", ["\\t", "tab", "TAB", "\t"])
def test_a_tab_separator_is_accepted_by_its_name(tmp_path, capsys, bank_model, given):
    rows = _rows(bank_model)
    tsv = tmp_path / "rows.tsv"
    rows.to_csv(tsv, index=False, sep="\t")
    out = tmp_path / "out.csv"
    assert main(["predict", str(bank_model["model"]), str(tsv), "-o", str(out), "--sep", given]) == 0
    assert (pd.read_csv(out)["status"] != "malformed").all() and len(pd.read_csv(out)) == len(rows)
    assert main(["evaluate", str(bank_model["model"]), str(tsv), "--sep", given]) == 0
    assert main(["explain", str(bank_model["model"]), str(tsv), "--row", "0", "--sep", given]) == 0
    assert main(["schema", "check", str(bank_model["schema"]), str(tsv), "--sep", given]) == 0
    assert main(["schema", "draft", str(tsv), "--label", "y", "--sep", given]) == 0
    assert build_parser().parse_args(["simulate", "--sep", given]).sep == "\t"


@pytest.mark.parametrize(
    ("content", "named"),
    [
        (gzip.compress(b"age,balance\n30,100\n"), "a gzip-compressed file: name it with .gz"),
        ("age,balance\n30,100\n".encode("utf-16-le"), "UTF-16 text"),  # no byte-order mark
        (b"SQLite format 3\x00\x10\x00\x01\x01\x00@  ", "a binary file, not CSV text"),
        (b"age,balance\n30,100\n", None),
    ],
    ids=["gzip-without-gz", "utf16-no-bom", "sqlite", "csv"],
)
def test_a_file_is_named_by_what_its_first_bytes_are(tmp_path, content, named):
    """Only UTF-16 text is told to re-save it as UTF-8; a gzip stream without .gz and other binary files get
    their own advice (any NUL byte used to read as UTF-16)."""
    from edprf_core.tables import foreign_format_text

    path = tmp_path / "data.csv"
    path.write_bytes(content)
    said = foreign_format_text(path)
    assert (named in said) if named else said == ""
    if named and "UTF-16" not in named:
        assert "UTF-16" not in said
