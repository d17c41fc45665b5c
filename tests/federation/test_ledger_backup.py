"""``edprf budget LEDGER --backup-to FILE``: a consistent copy of a party's ledger, for its backups.

Ops review finding 4: ``cp ledger.sqlite`` taken while SQLite's write-ahead log holds the latest reservation
(a reader, such as a backup agent or ``edprf budget``, holding the database keeps it from being checkpointed)
misses that reservation; the docs gave no procedure.
"""

from __future__ import annotations

import shutil
import sqlite3
from fractions import Fraction
from pathlib import Path

import pytest

from client import BudgetExhausted, BudgetLedger, Party, backup_ledger
from client._ledger_anchor import anchor_path
from edprf_fl.cli._main import main

from .test_ledger_anchor import _party_check
from .test_party import _request, party_files  # noqa: F401 (a fixture)


def _rows(path: Path) -> list[str]:
    db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro&immutable=1", uri=True)
    try:
        return [r[0] for r in db.execute("SELECT request_id FROM spends ORDER BY id")]
    finally:
        db.close()


def test_the_backup_holds_a_spend_the_write_ahead_log_still_holds(tmp_path, capsys):
    party, backups = tmp_path / "party", tmp_path / "backups"
    backups.mkdir()
    ledger = party / "ledger.sqlite"
    BudgetLedger(ledger, cap=2.0).reserve("r1/train", "release", 0.5)
    reader = sqlite3.connect(ledger)  # a reader holding the database: no checkpoint of what follows
    reader.execute("BEGIN")
    reader.execute("SELECT count(*) FROM spends").fetchone()
    try:
        BudgetLedger(ledger, cap=2.0).reserve("r2/train", "release", 0.5)
        assert (party / "ledger.sqlite-wal").stat().st_size > 0
        shutil.copy(ledger, backups / "cp.sqlite")  # what the review did
        assert main(["budget", str(ledger), "--backup-to", str(backups / "ledger.sqlite")]) == 0
    finally:
        reader.close()
    out = capsys.readouterr().out
    assert _rows(backups / "cp.sqlite") == ["r1/train"]  # the plain copy lost r2 (the reason for the option)
    assert _rows(backups / "ledger.sqlite") == ["r1/train", "r2/train"]
    assert "2 entries, 1 spent" in out and "leave the anchor where it is" in out
    assert (backups / "ledger.sqlite").stat().st_mode & 0o777 == 0o600
    assert sorted(p.name for p in backups.iterdir()) == ["cp.sqlite", "ledger.sqlite"]  # no temporary file left


def test_restoring_the_backup_with_the_anchor_kept_counts_what_was_spent_after_it(party_files, tmp_path, capsys):  # noqa: F811
    setup, schema = party_files  # lifetime cap 1.5, releases of 1.0
    Party(setup).train(_request(schema, epsilon=0.5))
    backup = tmp_path / "backup.sqlite"
    assert backup_ledger(setup.ledger_path, backup).spent == Fraction(1, 2)
    Party(setup).train(_request(schema, request_id="run2/1/train", epsilon=1.0))  # 1.5 spent: the cap
    # restore: the copy in place of ledger.sqlite only; the anchor stays where it is
    for f in setup.ledger_path.parent.glob("ledger.sqlite*"):
        f.unlink()
    shutil.copy(backup, setup.ledger_path)
    assert anchor_path(setup.ledger_path).exists()
    said = _party_check(setup, capsys)
    assert "records more (restored from a backup, or replaced?): the party counts 1 more as spent" in said
    party = Party(setup)
    assert party.ledger.spent() == Fraction(3, 2)
    with pytest.raises(BudgetExhausted):
        party.ledger.reserve("run3/1/train", "release", 0.1)


def test_the_backup_is_refused_over_an_existing_file_and_over_the_ledger(tmp_path, capsys):
    ledger = tmp_path / "ledger.sqlite"
    BudgetLedger(ledger, cap=1.0).reserve("r1", "release", 0.5)
    target = tmp_path / "copy.sqlite"
    target.write_text("an earlier copy")
    assert main(["budget", str(ledger), "--backup-to", str(target)]) == 1
    assert "exists; pass --force to overwrite it" in capsys.readouterr().err
    assert target.read_text() == "an earlier copy"
    assert main(["budget", str(ledger), "--backup-to", str(target), "--force"]) == 0
    assert _rows(target) == ["r1"]
    for own in (ledger, tmp_path / "ledger.sqlite-wal"):
        before = ledger.read_bytes()
        assert main(["budget", str(ledger), "--backup-to", str(own), "--force"]) == 1
        assert "that is the ledger itself" in capsys.readouterr().err
        assert ledger.read_bytes() == before
    # the anchor is never the copy's target (whole-change review: --force overwrote it, and with it what it counts)
    anchor = tmp_path / "ledger-anchor.json"
    kept = anchor.read_bytes()
    for force in ([], ["--force"]):  # without --force too: not first told to pass --force
        assert main(["budget", str(ledger), "--backup-to", str(anchor), *force]) == 1
        err = capsys.readouterr().err
        assert "that is the ledger's anchor" in err and "--force" not in err and anchor.read_bytes() == kept
    # a missing directory is named, not a temporary file's name
    assert main(["budget", str(ledger), "--backup-to", str(tmp_path / "none" / "copy.sqlite")]) == 1
    err = capsys.readouterr().err
    assert f"no directory {tmp_path / 'none'}" in err and ".tmp" not in err


def test_a_file_that_is_not_a_ledger_is_not_copied(tmp_path, capsys):
    other = tmp_path / "other.sqlite"
    db = sqlite3.connect(other)
    db.execute("CREATE TABLE t (x)")
    db.commit()
    db.close()
    assert main(["budget", str(other), "--backup-to", str(tmp_path / "copy.sqlite")]) == 1
    assert "not a party's ledger" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other.sqlite"]


def test_a_partial_copy_left_by_a_stopped_backup_is_removed_by_the_next_and_said(tmp_path, capsys):
    """Failure-injection review rev-ops F9: a backup killed half-way left ``.<target>.XXXXXXXX.tmp``, a full copy of
    the ledger (its held-out salt, its released bytes) that nothing removed."""
    import os
    import time

    party, backups = tmp_path / "party", tmp_path / "backups"
    backups.mkdir()
    ledger = party / "ledger.sqlite"
    BudgetLedger(ledger, cap=2.0).reserve("r1/train", "release", 0.5)
    old = time.time() - 3600
    stale = backups / ".ledger.sqlite.k3j9x0ab.tmp"  # what the kill left, an hour ago
    stale.write_bytes(b"a partial copy")
    os.utime(stale, (old, old))
    fresh = backups / ".ledger.sqlite.q8w7e6r5.tmp"  # another backup may be writing this one now: kept
    fresh.write_bytes(b"being written")
    other = backups / ".notes.txt.k3j9x0ab.tmp"  # not a copy of this target: kept
    other.write_bytes(b"x")
    os.utime(other, (old, old))
    assert main(["budget", str(ledger), "--backup-to", str(backups / "ledger.sqlite")]) == 0
    out = capsys.readouterr().out
    assert out.startswith(
        f"removed {stale}: a partial copy left by a backup that was stopped (it held the whole ledger)"
    )
    assert sorted(p.name for p in backups.iterdir()) == sorted([fresh.name, other.name, "ledger.sqlite"])


def test_a_stopped_backup_s_sidecar_is_said_as_such_and_a_young_partial_copy_is_named_not_removed(tmp_path, capsys):
    """Review rev-ops2 N9 (d): a removed ``-journal`` sidecar was said to have held the whole ledger, and a partial
    copy younger than 10 minutes (another backup may be writing it) was left without a word."""
    import os
    import time

    ledger = tmp_path / "party" / "ledger.sqlite"
    backups = tmp_path / "backups"
    backups.mkdir()
    BudgetLedger(ledger, cap=2.0).reserve("r1/train", "release", 0.5)
    old = time.time() - 3600
    stale, sidecar = backups / ".ledger.sqlite.k3j9x0ab.tmp", backups / ".ledger.sqlite.k3j9x0ab.tmp-journal"
    for leftover in (stale, sidecar):
        leftover.write_bytes(b"left by a kill")
        os.utime(leftover, (old, old))
    fresh, fresh_sidecar = backups / ".ledger.sqlite.q8w7e6r5.tmp", backups / ".ledger.sqlite.q8w7e6r5.tmp-journal"
    fresh.write_bytes(b"being written")
    fresh_sidecar.write_bytes(b"being written")
    assert main(["budget", str(ledger), "--backup-to", str(backups / "ledger.sqlite")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert f"removed {stale}: a partial copy left by a backup that was stopped (it held the whole ledger)" in lines
    assert f"removed {sidecar}: the sidecar of a partial copy left by a backup that was stopped" in lines
    assert (
        f"left {fresh}: a partial copy written less than 10 min ago: another backup to this target may be running; "
        "if none is, remove it (it holds the ledger's records)"
    ) in lines
    assert (
        f"left {fresh_sidecar}: the sidecar of a partial copy written less than 10 min ago: another backup to this "
        "target may be running; if none is, remove it"
    ) in lines
    assert sorted(p.name for p in backups.iterdir()) == sorted([fresh.name, fresh_sidecar.name, "ledger.sqlite"])
