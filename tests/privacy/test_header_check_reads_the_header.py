"""The file check a party makes before it reserves epsilon reads the header, never the rows.

A party refuses a file unusable as a whole (missing, no schema columns) before it reserves anything, and it
decides ``round_closed`` on the clock just after that check.  If the check read the rows, its time would follow the
file's size, and a coordinator stepping ``round-timeout`` would learn the size from which requests are refused for
free (the timing probe stop 54's red team found, closed by reserving before the read).  A mutation that reads every
row but swallows what it finds changed no verdict, and no test saw it (mutation review N15b).  Here the bytes the
process reads (``/proc/self/io``, any reading path) are bounded on files of a few megabytes, as text, gzip and
Parquet.
"""

from __future__ import annotations

import gzip
import io
from pathlib import Path

import pandas as pd
import pytest

from client._local_data import data_file_problem
from edprf_core import load_schema

from ..federation._neighbours import SCHEMA_TOML, file_bytes

pytestmark = pytest.mark.privacy

PROC_IO = Path("/proc/self/io")
N_ROWS = 300_000
READ_AT_MOST = 1 << 18
"""Bytes the check may read: the header, a compressed block, a Parquet footer, the schema; the files are larger."""


def _bytes_read() -> int:
    return int(next(line for line in PROC_IO.read_text().splitlines() if line.startswith("rchar:")).split()[1])


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("big")
    (d / "schema.toml").write_text(SCHEMA_TOML, encoding="utf-8")
    text = file_bytes(n_rows=N_ROWS)
    paths = {"csv": d / "data.csv", "gzip": d / "data.csv.gz", "parquet": d / "data.parquet"}
    paths["csv"].write_bytes(text)
    paths["gzip"].write_bytes(gzip.compress(text, compresslevel=1))
    pd.read_csv(io.BytesIO(text), dtype=str).to_parquet(paths["parquet"], compression=None, use_dictionary=False)
    return paths


@pytest.mark.skipif(not PROC_IO.exists(), reason="no /proc/self/io on this system (Linux only)")
@pytest.mark.parametrize("kind", ["csv", "gzip", "parquet"])
def test_the_check_before_the_reservation_reads_no_row(files, kind):
    path = files[kind]
    schema = load_schema(path.parent / "schema.toml")
    assert path.stat().st_size > 4 * READ_AT_MOST  # the file is larger than the bound
    before = _bytes_read()
    assert data_file_problem(path, schema) is None
    read = _bytes_read() - before
    assert read < READ_AT_MOST, f"the check read {read} bytes of a {path.stat().st_size}-byte {kind} file"
