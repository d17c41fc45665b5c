"""``client.read_budget``: the one reader of what a party has spent and has left, for ``edprf party check``,
``edprf consortium``'s closing budgets and ``edprf budget``; every case each of them words, and that reading
never writes (a missing ledger is not created)."""

from __future__ import annotations

import os
import shutil
import time
from fractions import Fraction
from pathlib import Path

import pytest

from client import LEDGER_ID_KEY, BudgetLedger, LedgerStatus, anchor_path, read_budget


def _ledger(path: Path, *spends: float, cap: float = 2.0) -> Path:
    ledger = BudgetLedger(path, cap=cap)
    for i, epsilon in enumerate(spends):
        ledger.reserve(f"r{i}", "release", epsilon)
    return path


def _files(directory: Path) -> dict[str, tuple[bytes, int]]:
    """The ledgers and anchors below ``directory``: their bytes and modification times (what a read must leave as it
    is).  SQLite's ``-shm`` (its WAL index) is left out: a read-only connection to a WAL ledger a party has open
    may create one; a ``-wal`` it creates is empty (checked by :func:`_unchanged`; a ledger no party has open gets
    neither: ``test_ledger_readonly.py``)."""
    return {
        str(p.relative_to(directory)): (p.read_bytes(), p.stat().st_mtime_ns)
        for p in directory.rglob("*")
        if p.is_file() and not p.name.endswith(("-shm", "-wal"))
    }


def _unchanged(directory: Path, before: dict[str, tuple[bytes, int]], wal_before: dict[str, int]) -> None:
    assert _files(directory) == before
    for wal in directory.rglob("*-wal"):  # a write-ahead log the read created holds nothing; one it found, as found
        assert wal.stat().st_size == wal_before.get(str(wal), 0), wal


def _wal_sizes(directory: Path) -> dict[str, int]:
    return {str(p): p.stat().st_size for p in directory.rglob("*-wal")}


def _remove_ledger(path: Path) -> None:
    for f in path.parent.glob(f"{path.name}*"):
        f.unlink()


def restored_from_a_backup(path: Path) -> Path:
    """A ledger at ``path`` (cap 2) that spent 1, was backed up, spent 0.5 more and was put back from the backup:
    it holds 1, its anchor records 1.5 (the anchor is not among the ``ledger.sqlite*`` files a backup copies).
    Also for the callers' tests (``edprf budget``, ``edprf consortium``)."""
    _ledger(path, 1.0)
    backup = path.parent / "backup"
    backup.mkdir()
    for f in path.parent.glob("ledger.sqlite*"):
        shutil.copy2(f, backup / f.name)
    BudgetLedger(path, cap=2.0).reserve("r9", "release", 0.5)
    _remove_ledger(path)
    for f in backup.iterdir():
        shutil.copy2(f, path.parent / f.name)
    return path


def test_a_ledger_that_is_fine_is_read_with_what_remains(tmp_path):
    path = _ledger(tmp_path / "ledger.sqlite", 0.1, 0.1, 0.1)
    state = read_budget(path, 0.3)
    assert state.status is LedgerStatus.READ
    assert state.spent == state.in_ledger == Fraction(3, 10)  # exact: no 0.30000000000000004
    assert state.cap == Fraction(3, 10) and state.remaining == 0 and state.over_cap is None
    assert state.carried == 0 and state.anchor is not None and state.anchor.spent == Fraction(3, 10)
    assert [e.request_id for e in state.entries] == ["r0", "r1", "r2"]
    assert state.meta[LEDGER_ID_KEY] == state.anchor.ledger_id
    assert not state.ledger_absent and state.ledger_error == state.anchor_error == ""
    assert state.anchor_path == anchor_path(path)


def test_without_a_cap_nothing_remains_to_say(tmp_path):
    state = read_budget(_ledger(tmp_path / "ledger.sqlite", 0.5))
    assert state.spent == Fraction(1, 2) and state.cap is None and state.remaining is None and state.over_cap is None


def test_a_missing_ledger_without_an_anchor_has_spent_nothing_and_is_not_created(tmp_path):
    path = tmp_path / "party" / "ledger.sqlite"
    state = read_budget(path, 2.0)
    assert state.status is LedgerStatus.NOT_CREATED and state.ledger_absent
    assert state.spent == 0 and state.remaining == 2 and state.in_ledger is None and state.anchor is None
    assert state.ledger_error == f"no ledger at {path}"
    assert not path.parent.exists()  # neither the ledger nor its directory
    path.parent.mkdir()
    assert read_budget(path, 2.0).status is LedgerStatus.NOT_CREATED
    assert list(path.parent.iterdir()) == []  # no empty SQLite file, no -wal, no -shm


def test_a_missing_ledger_with_an_anchor_is_lost_and_counts_what_the_anchor_records(tmp_path):
    path = _ledger(tmp_path / "ledger.sqlite", 0.7)
    _remove_ledger(path)
    before = _files(tmp_path)
    state = read_budget(path, 2.0)
    assert state.status is LedgerStatus.LOST and state.ledger_absent
    assert state.anchor.spent == state.carried == state.spent == Fraction(7, 10)  # what a new ledger carries
    assert state.remaining == Fraction(13, 10) and state.in_ledger is None and state.entries == ()
    assert _files(tmp_path) == before and not path.exists()
    assert BudgetLedger(path, cap=2.0).spent() == state.spent  # the ledger the party would open agrees


def test_a_file_on_the_path_is_a_missing_ledger(tmp_path):
    (tmp_path / "file").write_text("x")
    assert read_budget(tmp_path / "file" / "ledger.sqlite").status is LedgerStatus.NOT_CREATED


def test_a_dangling_link_is_unreadable_naming_its_missing_target_and_the_party_does_not_open_it(tmp_path):
    """A link whose target is missing (a broken mount or restore) read as 'no ledger yet', and the party's SQLite
    created a new, empty ledger at the target."""
    link, target = tmp_path / "ledger.sqlite", tmp_path / "mnt" / "ledger.sqlite"
    target.parent.mkdir()
    link.symlink_to(target)
    state = read_budget(link, 2.0)
    assert state.status is LedgerStatus.UNREADABLE and state.spent is None and state.remaining is None
    assert state.ledger_error.startswith(f"{link} is a symbolic link to {target}, which does not exist (a broken ")
    with pytest.raises(ValueError, match="the party refuses to serve rather than start a new ledger there") as refused:
        BudgetLedger(link, cap=2.0)
    assert str(refused.value).startswith(f"ledger {link} is a symbolic link to {target}, which does not exist")
    assert not target.exists() and link.is_symlink()
    target.write_bytes(b"")  # a link to a file is the file: read (here, as the empty file it is)
    assert "symbolic link" not in read_budget(link).ledger_error


@pytest.mark.parametrize(
    ("make", "said"),
    [
        (lambda p: p.write_bytes(b"not a ledger" * 100), "is not an SQLite database"),
        (lambda p: p.write_bytes(b""), "is empty"),
        (lambda p: p.mkdir(), "is not a regular file"),
    ],
    ids=["corrupt", "empty", "directory"],
)
def test_an_unreadable_ledger_is_unknown_never_0(tmp_path, make, said):
    path = tmp_path / "ledger.sqlite"
    make(path)
    before = _files(tmp_path)
    state = read_budget(path, 2.0)
    assert state.status is LedgerStatus.UNREADABLE and not state.ledger_absent
    assert said in state.ledger_error and "\n" not in state.ledger_error
    assert state.spent is None and state.remaining is None and state.over_cap is None and state.in_ledger is None
    assert _files(tmp_path) == before


def test_an_unreadable_ledger_keeps_its_anchor(tmp_path):
    path = _ledger(tmp_path / "ledger.sqlite", 1.0)
    _remove_ledger(path)
    path.write_bytes(b"not a ledger" * 100)
    state = read_budget(path, 2.0)
    assert state.status is LedgerStatus.UNREADABLE and state.anchor.spent == 1 and state.spent is None


def test_a_ledger_bigger_than_the_bound_is_unreadable(tmp_path):
    path = _ledger(tmp_path / "ledger.sqlite", 0.5)
    state = read_budget(path, max_bytes=10)
    assert state.status is LedgerStatus.UNREADABLE and "at most 10 bytes" in state.ledger_error


def test_a_ledger_restored_from_a_backup_is_behind_its_anchor(tmp_path):
    path = restored_from_a_backup(tmp_path / "party" / "ledger.sqlite")
    before, wal = _files(tmp_path / "party"), _wal_sizes(tmp_path / "party")
    state = read_budget(path, 2.0)
    assert state.status is LedgerStatus.BEHIND_ANCHOR
    assert state.in_ledger == 1 and state.carried == Fraction(1, 2) and state.spent == Fraction(3, 2)
    assert state.remaining == Fraction(1, 2) and len(state.entries) == 1
    _unchanged(tmp_path / "party", before, wal)  # nothing carried by the reading: the party carries it
    assert BudgetLedger(path, cap=2.0).spent() == state.spent


def test_another_ledger_in_its_place_counts_all_its_anchor_records(tmp_path):
    _ledger(tmp_path / "a" / "ledger.sqlite", 2.0, cap=5.0)
    _ledger(tmp_path / "b" / "ledger.sqlite", 0.5, cap=5.0)
    _remove_ledger(tmp_path / "a" / "ledger.sqlite")
    for f in (tmp_path / "b").glob("ledger.sqlite*"):
        shutil.copy2(f, tmp_path / "a" / f.name)
    state = read_budget(tmp_path / "a" / "ledger.sqlite", 5.0)
    assert state.status is LedgerStatus.BEHIND_ANCHOR and state.in_ledger == Fraction(1, 2) and state.carried == 2


def test_a_spend_above_the_cap_is_over_it(tmp_path):
    path = _ledger(tmp_path / "ledger.sqlite", 0.1, 0.1, 0.1)
    state = read_budget(path, 0.2)
    assert state.status is LedgerStatus.READ and state.over_cap == Fraction(1, 10) and state.remaining == 0
    assert read_budget(path, 0.3).over_cap is None  # at the cap exactly: not over


def test_what_the_anchor_records_counts_against_the_cap(tmp_path):
    path = _ledger(tmp_path / "ledger.sqlite", 1.5)
    _remove_ledger(path)
    state = read_budget(path, 1.0)  # a lost ledger, and a cap lowered since
    assert state.status is LedgerStatus.LOST and state.over_cap == Fraction(1, 2) and state.remaining == 0


@pytest.mark.parametrize(
    "make",
    [lambda p: (p.unlink(), os.mkfifo(p)), lambda p: p.write_text(p.read_text() + " " * 5000)],
    ids=["fifo", "oversized"],
)
def test_an_anchor_that_is_no_small_regular_file_is_unreadable_without_blocking(tmp_path, make):
    """A FIFO at the anchor's path made `edprf budget` hang (it reads the anchor beside every ledger now), and any
    file was read whole: an anchor is opened non-blocking, must be a regular file, and is read up to 4 KiB (the
    oversized one is the ledger's own anchor padded with blanks: valid JSON, refused for its size)."""
    path = _ledger(tmp_path / "ledger.sqlite", 0.5)
    make(anchor_path(path))
    state = read_budget(path, 2.0)
    assert state.status is LedgerStatus.ANCHOR_UNREADABLE and "ledger anchor" in state.anchor_error
    assert state.spent is None and state.in_ledger == Fraction(1, 2)


def test_an_unreadable_anchor_makes_the_spend_unknown_and_the_ledger_is_still_read(tmp_path):
    path = _ledger(tmp_path / "ledger.sqlite", 0.5)
    anchor_path(path).write_text("{}")
    state = read_budget(path, 2.0)
    assert state.status is LedgerStatus.ANCHOR_UNREADABLE and "ledger anchor" in state.anchor_error
    assert state.spent is None and state.remaining is None and state.anchor is None
    assert state.in_ledger == Fraction(1, 2) and len(state.entries) == 1 and not state.ledger_absent
    _remove_ledger(path)
    state = read_budget(path, 2.0)  # a lost ledger whose anchor cannot be read: neither lost nor new
    assert state.status is LedgerStatus.ANCHOR_UNREADABLE and state.ledger_absent and state.spent is None
    assert not path.exists()


def test_reading_never_changes_a_ledger_in_use(tmp_path):
    path = _ledger(tmp_path / "ledger.sqlite", 0.1, 0.2)
    before, wal = _files(tmp_path), _wal_sizes(tmp_path)
    time.sleep(0.01)
    for cap in (None, 0.1, 2.0):
        read_budget(path, cap)
    _unchanged(tmp_path, before, wal)
    assert {name for name in os.listdir(tmp_path) if not name.endswith(("-shm", "-wal"))} == set(before)


@pytest.mark.parametrize("cap", [0, -1.0, float("inf"), float("nan"), True, "2"])
def test_a_cap_that_is_not_a_positive_finite_number_is_refused(tmp_path, cap):
    with pytest.raises(ValueError, match="cap: expected a positive finite number"):
        read_budget(tmp_path / "ledger.sqlite", cap)
