"""``edprf schema check`` on a file read block by block (each column numbered) reports what the text read reported.

:func:`edprf_core.check_data` reads a text file with :func:`~edprf_core.tables.read_numbered_columns` (each column
a categorical of its texts; the file's text is never held whole) and judges each distinct text once.  The report
must be the one of the same checks on the file read whole as text (``read_table``, the previous read, kept here):
the same counts, findings and line numbers, whatever the block size.
"""

from __future__ import annotations

import pytest

from edprf_core import _data_check, _text_table, check_data
from edprf_core.tables import read_table

from .test_local_data_numbered_block_by_block import FILES, SCHEMA, _file


def _text_check(path, header: bool) -> _data_check.DataCheck:
    """The check on the file's cells as text (``read_table``), as it was before."""
    parquet = False
    return _data_check._checked(read_table(path, SCHEMA, header=header), SCHEMA, parquet, lambda _: None)


def _hinted_file(tmp_path):
    """Cells that the report's hints look for: decimal commas, thousands dots, missing tokens, U+FFFD."""
    rows = [
        '"12,5",007,1,n1,1',
        "1.200,12,2,n2,0",
        "1.250,OTHER,3,n3,1",
        '"3,5",12,1,n4,0',
        "?,Other,,n5,YES",
        "40,\xe9,2,n6,1",
        "1.200,12,1,n7,0",
        "55,007,1,n8,1",
        "12,5,007,1,n9,1",
    ]
    text = "age,code,grade,note,outcome\n" + "\n".join(rows) + "\n"
    path = tmp_path / "hinted.csv"
    path.write_bytes(text.encode("utf-8").replace("\xe9".encode(), b"\xe9"))
    return path


@pytest.mark.parametrize("kind", [*FILES, "hinted"])
@pytest.mark.parametrize("block_bytes", [1, 97, 1 << 22])
def test_the_check_reports_the_same_on_the_numbered_read(tmp_path, monkeypatch, kind, block_bytes):
    spec = FILES.get(kind, {})
    path = _hinted_file(tmp_path) if kind == "hinted" else _file(tmp_path, **spec)
    header = spec.get("header", True)
    expected = _text_check(path, header)
    monkeypatch.setattr(_text_table, "_BLOCK_BYTES", block_bytes)
    got = check_data(path, SCHEMA, header=header)
    assert got == expected
    assert got.lines() == expected.lines() and got.findings() == expected.findings()
    if kind in ("mixed", "hinted"):  # the files hold what the report looks for
        assert got.not_utf8 and got.missing and got.rows_dropped
    if kind == "hinted":
        assert got.decimal_commas and got.thousands_dots
