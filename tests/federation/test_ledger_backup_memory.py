"""``edprf budget --backup-to``: the copy is written straight to a file, not built in memory.

Long-horizon review F4: the backup copied the ledger into an in-memory database, serialized it and wrote those
bytes, about three times the ledger's size in memory at its peak (a 498 MB ledger took 1.62 GB of RSS; at the
1 GiB read limit about 3.3 GB, enough to kill a small party VM at night).  Now SQLite's online backup writes
into a temporary file beside the target, which is fsynced and renamed into place; a failure half-way leaves no
temporary file and the target as it was.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

import client._ledger_backup as ledger_backup
from client import BudgetLedger, backup_ledger

RELEASE_BYTES = 165_000
"""A release at the policy's maxima (50 trees, depth 8, 64 bins: 164,994 bytes measured by the review)."""

RELEASES = 600
"""About 100 MB of stored releases: large against the interpreter's own memory, small enough to write in ~1 s."""


SMALL = 40
"""Releases of the ledgers the failure tests copy (6.6 MB: they copy it in steps of 64 pages, 256 KiB)."""


def _big_ledger(path: Path, releases: int = RELEASES) -> int:
    """A party's ledger holding ``releases`` released entries with their bytes (the rows the party writes,
    inserted directly: reserving each through :class:`client.BudgetLedger` would fsync 1,200 times); its size."""
    BudgetLedger(path, cap=1e6)
    db = sqlite3.connect(path)
    payload = bytes(range(256)) * (RELEASE_BYTES // 256)
    with db:
        db.executemany(
            "INSERT INTO spends (request_id, kind, epsilon, state, run_id, detail, payload, created_at, updated_at, "
            "epsilon_exact) VALUES (?, 'release', 0.1, 'released', ?, '', ?, 1.7e9, 1.7e9, '1/10')",
            ((f"run-{n}/train", f"run-{n}", payload) for n in range(releases)),
        )
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    return path.stat().st_size


_CHILD = """
import resource, sys
import client
if sys.argv[1:]:
    copy = client.backup_ledger(sys.argv[1], sys.argv[2])
    assert copy.entries == int(sys.argv[3]), copy
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)  # KiB on Linux
"""


def _peak_rss_bytes(*args: str) -> int:
    """The peak resident memory of a fresh interpreter that imports ``client`` and, given arguments, backs up a
    ledger.  Measured by the child itself (``RUSAGE_SELF`` at its end, which is its peak): the parent's
    ``RUSAGE_CHILDREN`` is the largest of every child the test process ever waited for, other tests' included."""
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, *args], capture_output=True, text=True, check=True, timeout=120
    ).stdout
    return int(out.split()[-1]) * 1024


@pytest.mark.skipif(sys.platform != "linux", reason="ru_maxrss is in KiB on Linux (bytes on macOS)")
def test_the_backup_does_not_hold_the_ledger_in_memory(tmp_path):
    """Bound: the copy costs at most half the ledger's size above a child that only imports ``client``.

    Why half: what the backup needs in memory is SQLite's page caches (2,000 KiB by default per connection,
    the ledger's and the copy's) and one step's pages (:data:`client._ledger_backup._BACKUP_PAGES` of 4 KiB:
    4 MiB), a few MB whatever the ledger's size; reading the copy back lists its entries through a covering
    index, without the stored releases.  Any design that holds the ledger once in memory (an in-memory copy,
    or its ``serialize()``d bytes) costs at least 1.0 x its size (the old one about 2-3 x), so a bound of
    0.5 x (about 50 MB here) separates the two with a margin of ~50 MB either way, far above the few MB the
    interpreter's own allocations vary between runs.
    """
    ledger = tmp_path / "party" / "ledger.sqlite"
    ledger.parent.mkdir()
    size = _big_ledger(ledger)
    assert size > RELEASES * RELEASE_BYTES
    baseline = _peak_rss_bytes()
    peak = _peak_rss_bytes(str(ledger), str(tmp_path / "backup.sqlite"), str(RELEASES))
    assert (tmp_path / "backup.sqlite").stat().st_size >= size - (1 << 20)
    for big in (ledger, tmp_path / "backup.sqlite"):  # 200 MB that pytest would keep for three runs
        big.unlink()
    assert peak < baseline + size // 2, (peak, baseline, size)


class _Interrupted(Exception):
    """Raised by the test half-way through a backup."""


@pytest.mark.parametrize("failure", [_Interrupted("stopped"), KeyboardInterrupt(), OSError(28, "No space left")])
def test_a_backup_that_fails_half_way_leaves_no_temporary_file_and_the_target_as_it_was(tmp_path, monkeypatch, failure):
    ledger = tmp_path / "party" / "ledger.sqlite"
    ledger.parent.mkdir()
    _big_ledger(ledger, SMALL)
    backups = tmp_path / "backups"
    backups.mkdir()
    target = backups / "ledger.sqlite"
    target.write_bytes(b"last night's copy")
    steps: list[tuple[int, int]] = []
    monkeypatch.setattr(ledger_backup, "_BACKUP_PAGES", 64)  # in steps, to stop it half-way

    def fail_after_the_first_step(status: int, remaining: int, total: int) -> None:
        steps.append((remaining, total))
        raise failure

    monkeypatch.setattr(ledger_backup, "_copied", fail_after_the_first_step)
    with pytest.raises(type(failure)):
        backup_ledger(ledger, target)
    remaining, total = steps[0]
    assert 0 < remaining < total  # it failed half-way: some pages written, some not
    assert sorted(p.name for p in backups.iterdir()) == ["ledger.sqlite"]  # no temporary file, no -journal
    assert target.read_bytes() == b"last night's copy"
    monkeypatch.undo()
    assert backup_ledger(ledger, target).entries == SMALL  # and the next night's backup works
    assert sorted(p.name for p in backups.iterdir()) == ["ledger.sqlite"]


def test_a_full_disk_is_said_as_one_and_leaves_no_temporary_file(tmp_path, monkeypatch, capsys):
    """SQLite's own "database or disk is full" (here: the copy's file may not grow past 64 pages) is an OSError
    naming the target (exit 1, "no space left"), not an unreadable ledger; nothing is left behind."""
    import types

    from edprf_fl.cli._main import main

    ledger = tmp_path / "party" / "ledger.sqlite"
    ledger.parent.mkdir()
    _big_ledger(ledger, SMALL)
    backups = tmp_path / "backups"
    backups.mkdir()

    def small_disk(path, **kwargs):
        db = sqlite3.connect(path, **kwargs)
        db.execute("PRAGMA max_page_count = 64")
        return db

    monkeypatch.setattr(ledger_backup, "sqlite3", types.SimpleNamespace(connect=small_disk, Error=sqlite3.Error))
    assert main(["budget", str(ledger), "--backup-to", str(backups / "ledger.sqlite")]) == 1
    err = capsys.readouterr().err
    assert "no space left for the copy" in err and str(backups / "ledger.sqlite") in err, err
    assert "cannot be read as a ledger" not in err and ".tmp" not in err
    assert list(backups.iterdir()) == []


def test_an_error_writing_the_copy_names_the_target_not_the_ledger(tmp_path, monkeypatch, capsys):
    """Stop-56 re-review S2: an I/O error or a quota while the copy was written said the ledger "cannot be read as a
    ledger", which could send an operator to restore or move a healthy ledger.  It names the target."""
    from edprf_fl.cli._main import main

    ledger = tmp_path / "party" / "ledger.sqlite"
    ledger.parent.mkdir()
    _big_ledger(ledger, SMALL)
    backups = tmp_path / "backups"
    backups.mkdir()

    def io_error(status: int, remaining: int, total: int) -> None:
        error = sqlite3.OperationalError("disk I/O error")
        error.sqlite_errorcode = 10  # SQLITE_IOERR, as the copy's file system reports it
        raise error

    monkeypatch.setattr(ledger_backup, "_BACKUP_PAGES", 64)
    monkeypatch.setattr(ledger_backup, "_copied", io_error)
    assert main(["budget", str(ledger), "--backup-to", str(backups / "ledger.sqlite")]) == 1
    err = capsys.readouterr().err
    assert "cannot write the copy (disk I/O error)" in err and str(backups / "ledger.sqlite") in err, err
    assert "cannot be read as a ledger" not in err
    assert list(backups.iterdir()) == []
