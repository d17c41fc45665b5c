"""The coordinator's output files are its own account's only, whatever the umask (hospital IT walkthrough).

Under the common umask 022, ``spend-record.sqlite`` and ``report.json`` came out 0644 and ``outputs/run-1``
0755, readable by every account on the coordinator's host, while a party's ledger is forced to 0600.  Now the
coordinator creates its files 0600 and its directories 0700 explicitly.
"""

from __future__ import annotations

import os
import stat
from dataclasses import replace
from fractions import Fraction
from pathlib import Path

import pytest

from edprf_fl.simulation import prepare_workspace, simulate_federation
from protocol import create_owner_only_file, make_owner_only_dirs
from server import MODEL_FILE, REPORT_FILE, CoordinatorConfig
from server._run_control import CLAIM_NAME, claim_output_dir, release_output_dir
from server._spend_store import SpendStore

from .test_simulation import _settings


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_run_s_output_directory_and_its_parents_are_created_owner_only(tmp_path, permissive_umask):
    out = tmp_path / "outputs" / "run-1"
    claimed = claim_output_dir(CoordinatorConfig(schema_path="s.toml", output_dir=str(out)))
    try:
        assert {p.name: oct(_mode(p)) for p in (out.parent, out)} == {"outputs": "0o700", "run-1": "0o700"}
        assert _mode(out / CLAIM_NAME) == 0o600
    finally:
        release_output_dir(claimed)


def test_an_existing_directory_or_file_keeps_its_mode(tmp_path, permissive_umask):
    """An operator may have given the outputs directory or the spend record to a backup group on purpose."""
    shared = tmp_path / "outputs"
    shared.mkdir(mode=0o750)
    os.chmod(shared, 0o750)
    assert make_owner_only_dirs(shared / "run-1") is True
    assert make_owner_only_dirs(shared / "run-1") is False
    assert (_mode(shared), _mode(shared / "run-1")) == (0o750, 0o700)
    record = shared / "record.sqlite"
    record.write_bytes(b"")
    os.chmod(record, 0o640)
    assert create_owner_only_file(record) is False and _mode(record) == 0o640
    with pytest.raises(NotADirectoryError):
        make_owner_only_dirs(record)


def test_the_spend_record_is_owner_only_with_its_sqlite_companions(tmp_path, permissive_umask):
    path = tmp_path / "outputs" / "spend-record.sqlite"
    store = SpendStore(path, {"hospital-a": "sha256:" + "0" * 64})
    store.add("hospital-a", "run-1/train", Fraction(1), "run-1")
    with store._connect() as db:  # open: its -wal and -shm files exist now
        db.execute("SELECT COUNT(*) FROM releases").fetchone()
        files = sorted(path.parent.glob(f"{path.name}*"))
        assert {p.name: oct(_mode(p)) for p in files} == {p.name: "0o600" for p in files}
        assert {p.name for p in files} >= {"spend-record.sqlite", "spend-record.sqlite-wal"}
    assert _mode(path.parent) == 0o700


def test_a_run_s_model_and_report_are_owner_only(tmp_path, permissive_umask):
    cfg = prepare_workspace(_settings(parties=2, max_depth=2, evaluation_epsilon=0.0), tmp_path / "ws").config
    out = tmp_path / "outputs" / "run-1"
    simulate_federation(replace(cfg, output_dir=str(out)), 2)
    assert (out / MODEL_FILE).is_file()
    written = [out.parent, out, out / MODEL_FILE, out / REPORT_FILE]
    assert {p.name: oct(_mode(p)) for p in written} == {
        "outputs": "0o700",
        "run-1": "0o700",
        MODEL_FILE: "0o600",
        REPORT_FILE: "0o600",
    }
