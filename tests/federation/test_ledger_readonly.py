"""Reading a ledger read-only leaves the directory as it was, and still sees what a running party committed."""

from __future__ import annotations

import os
import sqlite3
from fractions import Fraction
from pathlib import Path

import pytest

import client._ledger as ledger_file
from client import BudgetLedger, read_budget, read_ledger_readonly, read_meta_readonly


def _ledger(path: Path, *spends: float) -> Path:
    ledger = BudgetLedger(path, cap=2.0)
    for i, epsilon in enumerate(spends):
        ledger.reserve(f"r{i}", "release", epsilon)
    return path


def test_reading_a_ledger_no_party_has_open_leaves_no_file_beside_it(tmp_path):
    # `sudo edprf budget` must not leave a -wal or -shm owned by root that the party's own user cannot write
    path = _ledger(tmp_path / "ledger.sqlite", 0.25, 0.5)
    before = sorted(os.listdir(tmp_path))
    assert [e.epsilon for e in read_ledger_readonly(path)] == [0.25, 0.5]
    read_meta_readonly(path, ("ledger_id",))
    assert read_budget(path, 2.0).in_ledger == Fraction(3, 4)
    assert sorted(os.listdir(tmp_path)) == before


def test_a_read_sees_what_a_running_party_holds_in_its_write_ahead_log(tmp_path):
    path = _ledger(tmp_path / "ledger.sqlite", 0.25)
    party = sqlite3.connect(path, isolation_level=None)  # a party with the ledger open, its log not checkpointed
    try:
        party.execute("PRAGMA wal_autocheckpoint = 0")
        party.execute(
            "INSERT INTO spends (request_id, kind, epsilon, state, run_id, detail, created_at, updated_at, "
            "epsilon_exact) SELECT 'r9', kind, 0.5, state, run_id, detail, created_at, updated_at, '1/2' FROM spends"
        )
        assert (tmp_path / "ledger.sqlite-wal").stat().st_size > 0
        assert [e.epsilon for e in read_ledger_readonly(path)] == [0.25, 0.5]
    finally:
        party.close()


def test_a_ledger_written_while_it_is_read_is_read_again(tmp_path, monkeypatch):
    path = _ledger(tmp_path / "ledger.sqlite", 0.25)
    reads: list[str] = []
    connect = ledger_file._read_connected

    def spend_during_the_first_read(p, uri, *args):
        reads.append(uri.split("?")[1])
        result = connect(p, uri, *args)
        if len(reads) == 1:
            BudgetLedger(path, cap=2.0).reserve("r9", "release", 0.5)
        return result

    monkeypatch.setattr(ledger_file, "_read_connected", spend_during_the_first_read)
    assert [e.epsilon for e in read_ledger_readonly(path)] == [0.25, 0.5]
    assert reads == ["mode=ro&immutable=1", "mode=ro"]


def test_an_immutable_read_that_fails_while_a_party_writes_is_read_again(tmp_path, monkeypatch):
    """Review: a torn page under a party's checkpoint failed the immutable read, which was not retried: a false
    'unreadable ledger'."""
    path = _ledger(tmp_path / "ledger.sqlite", 0.25)
    connect = ledger_file._read_connected

    torn = []

    def torn_while_a_party_spends(p, uri, *args):
        if "immutable" in uri and not torn:  # once (the party's own ledger reads the file too)
            torn.append(uri)
            BudgetLedger(path, cap=2.0).reserve("r9", "release", 0.5)
            raise ValueError(f"{p} cannot be read as a ledger (DatabaseError: database disk image is malformed)")
        return connect(p, uri, *args)

    monkeypatch.setattr(ledger_file, "_read_connected", torn_while_a_party_spends)
    assert [e.epsilon for e in read_ledger_readonly(path)] == [0.25, 0.5]


def test_an_immutable_read_of_an_unchanged_file_that_fails_says_so(tmp_path):
    path = tmp_path / "ledger.sqlite"
    path.write_bytes(b"SQLite format 3\x00" + b"\xff" * 200)  # a header, then nothing SQLite can read
    with pytest.raises(ValueError, match="cannot be read as a ledger"):
        read_ledger_readonly(path)
    assert sorted(os.listdir(tmp_path)) == ["ledger.sqlite"]
