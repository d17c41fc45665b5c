"""A consistent copy of a party's ledger, for its backups (``edprf budget LEDGER --backup-to FILE``).

A ledger is an SQLite database in write-ahead mode: a committed spend can sit in ``ledger.sqlite-wal`` until
SQLite checkpoints it into ``ledger.sqlite``, so ``cp ledger.sqlite`` can copy a file that lacks the latest
reservations (ops review finding 4).  :func:`backup_ledger` copies with SQLite's online backup API, which
reads the database as one transaction sees it, the write-ahead log included, while the party may go on
writing.

The copy is the ledger alone: its anchor (``ledger-anchor.json``) is not copied.  The anchor stays where it is
and, when a backup is restored in place of the ledger, makes the party count what it spent after the backup
(:mod:`client._ledger_anchor`); a backup restored together with its anchor would undo that.  Reading never
writes to the ledger (it is read as :func:`client.read_ledger_readonly` reads it: read-only, bounded in time,
the file untrusted).  Privacy cost: none; the copy holds what the ledger holds (the hold-out split's secret
salt, the released bytes), so it is written readable by its owner only.  The copy goes straight to a temporary
file beside the target (owner-only from its creation), which is fsynced and renamed into place: memory holds SQLite's
page caches, not the ledger (long-horizon review F4), and a failure leaves no temporary file and the target as it was.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sqlite3
import tempfile
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

from protocol import OWNER_ONLY_FILE, fsync_directory

from ._disk_space import low_disk_text
from ._ledger import READ_SECONDS, LedgerOfAnotherVersion, _read_ledger_file, read_ledger_readonly, total_spent
from ._ledger_anchor import anchor_path, sweep_temp_files
from ._open_reservations import duration_text

__all__ = ["LedgerBackup", "backup_ledger", "check_backup_target"]

_SIDECARS = ("-wal", "-shm", "-journal")
"""SQLite's files beside a ledger: never a backup's target."""


@dataclass(frozen=True)
class LedgerBackup:
    """What :func:`backup_ledger` wrote.

    Attributes
    ----------
    path : Path
        The copy.
    entries : int or None
        How many entries the copy holds; None for a ledger of another edprf-fl version (copied as it is).
    spent : Fraction or None
        The exact sum of the copy's entries (without what its anchor records beyond them); None as ``entries``.
    """

    path: Path
    entries: int | None
    spent: Fraction | None
    removed: tuple[Path, ...] = ()
    """Partial copies an earlier backup to the same target left when it was killed, and their SQLite sidecars, older
    than :data:`_STALE_COPY_SECONDS` (:func:`client._ledger_anchor.sweep_temp_files`), removed before this
    one."""
    left: tuple[Path, ...] = ()
    """Such files younger than :data:`_STALE_COPY_SECONDS`, left where they are: another backup to the same target
    may be writing them (review rev-ops2 N9)."""

    def leftover_lines(self) -> list[str]:
        """One line per file of :attr:`removed` and :attr:`left`: what it is (a partial copy, which held the whole
        ledger, or the sidecar of one) and what was done with it."""
        lines = [
            f"removed {p}: the sidecar of a partial copy left by a backup that was stopped"
            if _sidecar(p)
            else f"removed {p}: a partial copy left by a backup that was stopped (it held the whole ledger)"
            for p in self.removed
        ]
        young = duration_text(_STALE_COPY_SECONDS)
        lines += [
            f"left {p}: {'the sidecar of a partial copy' if _sidecar(p) else 'a partial copy'} written less than "
            f"{young} ago: another backup to this target may be running; if none is, remove it"
            + ("" if _sidecar(p) else " (it holds the ledger's records)")
            for p in self.left
        ]
        return lines


def _sidecar(path: Path) -> bool:
    """Whether a backup's leftover is the SQLite sidecar of a partial copy (``-journal``, ``-wal``, ``-shm``)."""
    return path.name.endswith(_SIDECARS)


_STALE_COPY_SECONDS = 600.0
"""A partial copy untouched for this long is a killed backup's, not one being written (a copy is written in one go:
a ledger of 10^5 entries in about a second).  Such a copy holds the whole ledger (its held-out salt and released
bytes), owner-only, and nothing else removes it (failure-injection review rev-ops F9)."""


def backup_ledger(
    ledger: str | Path, target: str | Path, max_bytes: int = 1 << 30, max_seconds: float = READ_SECONDS
) -> LedgerBackup:
    """Write a consistent copy of the ledger at ``ledger`` to ``target`` (mode 0600, replaced atomically).

    Parameters
    ----------
    ledger : str or Path
        The party's ledger; read-only, with :func:`client.read_ledger_readonly`'s checks and bounds.  A ledger
        of another edprf-fl version is copied too (it is a record of spend all the same).
    target : str or Path
        The copy; its directory must exist.  An existing file is replaced (the caller refuses that without
        ``--force``).
    max_bytes, max_seconds
        As :func:`client.read_ledger_readonly`.

    Returns
    -------
    LedgerBackup
        The copy's path, and the entries and spend it holds, read back from the copy.

    Raises
    ------
    ValueError
        The ledger cannot be read as one (one line, as :func:`client.read_ledger_readonly`); ``target`` is the
        ledger itself or one of SQLite's files beside it.
    OSError
        The copy cannot be written (``target`` is left as it was).
    """
    source, target = Path(ledger), Path(target)
    check_backup_target(source, target)
    # before this backup makes its own: older ones removed, younger ones (perhaps another backup's) named
    removed, left = map(tuple, sweep_temp_files(target, _SIDECARS, _STALE_COPY_SECONDS))
    try:  # owner-only from its creation (mkstemp), in the target's directory: the rename below stays atomic
        fd, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except FileNotFoundError:  # named by the target, not by the temporary file's made-up name
        raise FileNotFoundError(errno.ENOENT, f"its directory {target.parent} does not exist", str(target)) from None
    temporary = Path(name)
    try:
        try:
            if hasattr(os, "fchmod"):
                os.fchmod(fd, OWNER_ONLY_FILE)
        finally:
            os.close(fd)

        def copy(db: sqlite3.Connection) -> None:  # run again when the party wrote meanwhile: the last copy counts
            kinds = [r[0] for r in db.execute("SELECT type FROM sqlite_master WHERE name = 'spends' LIMIT 2")]
            if kinds != ["table"]:
                raise ValueError(f"{source} is an SQLite database but not a party's ledger (no spends table)")
            _copy_pages(db, temporary, target)

        try:
            _read_ledger_file(source, max_bytes, max_seconds, copy)
        except ValueError as exc:  # SQLite's "disk I/O error" on a full ledger disk: said as such (rev-ops2 N7)
            if (full := low_disk_text(source)) is None:
                raise
            raise ValueError(f"{exc}; {full}") from None
        fd = os.open(temporary, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temporary, target)
    except BaseException:  # ENOSPC, an interrupt, a refused ledger: no temporary file is left, the target as it was
        for leftover in (temporary, *(temporary.with_name(temporary.name + s) for s in _SIDECARS)):
            with contextlib.suppress(FileNotFoundError):
                leftover.unlink()
        raise
    fsync_directory(target.parent)
    try:
        entries = read_ledger_readonly(target, max_bytes=max_bytes, max_seconds=max_seconds)
    except LedgerOfAnotherVersion:
        return LedgerBackup(target, None, None, removed, left)
    return LedgerBackup(target, len(entries), total_spent(entries), removed, left)


_BACKUP_PAGES = -1
"""Pages copied per step of SQLite's online backup: all in one step.  SQLite restarts a backup whenever the
source is written between two steps, so a copy in steps of 1,024 pages restarted 41 to 215 times while the party
served (20 s against 0.7 s, stop-56 re-review); one step still streams the pages to the file, holding only the
page caches."""


def _copy_pages(db: sqlite3.Connection, temporary: Path, target: Path) -> None:
    """SQLite's online backup of ``db`` straight into the file ``temporary``, :data:`_BACKUP_PAGES` at a time: the
    memory held is SQLite's page caches, not the ledger (long-horizon review F4: the copy was built in memory and
    serialized, about three times the ledger's size at its peak).  A failure writing the copy (a full disk, a
    quota, an I/O error) is an ``OSError`` naming ``target``, never an unreadable ledger: an operator told the ledger
    cannot be read might restore or move a healthy one (stop-56 re-review S2)."""
    copy = sqlite3.connect(temporary, isolation_level=None)
    try:
        copy.execute("PRAGMA journal_mode = OFF")  # a new file, discarded on any failure: nothing to roll back
        db.backup(copy, pages=_BACKUP_PAGES, progress=_copied)
    except sqlite3.Error as exc:
        code = getattr(exc, "sqlite_errorcode", 0) & 0xFF
        if code == _SQLITE_FULL:
            raise OSError(errno.ENOSPC, f"no space left for the copy ({exc})", str(target)) from None
        if code in _SOURCE_CODES:  # the ledger's side (busy, locked, damaged): said by the ledger's reader
            raise
        raise OSError(  # the copy's side, or not to be told apart from it (an I/O error)
            errno.EIO,
            f"cannot write the copy ({exc}): check the target's file system (space, quota, permissions); "
            "`edprf budget LEDGER` without --backup-to shows whether the ledger itself reads",
            str(target),
        ) from None
    finally:
        copy.close()


_SQLITE_FULL = 13
_SOURCE_CODES = frozenset({5, 6, 11, 26})
"""SQLITE_BUSY, SQLITE_LOCKED, SQLITE_CORRUPT, SQLITE_NOTADB: the ledger's side of a backup."""


def _copied(status: int, remaining: int, total: int) -> None:
    """Called by the backup after each step (a no-op; a test makes it fail half-way)."""


def check_backup_target(ledger: str | Path, target: str | Path) -> None:
    """Refuse a backup ``target`` that is the ledger, one of SQLite's files beside it, or its anchor, or whose
    directory does not exist; the CLI asks this before it asks whether an existing file may be overwritten.

    Raises
    ------
    ValueError
        Naming the target and why.
    """
    source, target = Path(ledger), Path(target)
    if _one_of(target, (source, *(source.with_name(source.name + s) for s in _SIDECARS))):
        raise ValueError(f"--backup-to {target}: that is the ledger itself (or one of its files); choose another file")
    if _one_of(target, (anchor_path(source),)):
        raise ValueError(
            f"--backup-to {target}: that is the ledger's anchor, which counts what the party spent when its ledger is "
            "restored; choose another file (the anchor is never backed up or overwritten)"
        )
    if not target.parent.is_dir():
        raise ValueError(f"--backup-to {target}: no directory {target.parent}; create it first")


def _one_of(target: Path, paths: tuple[Path, ...]) -> bool:
    """``target`` resolves to one of ``paths`` (False when it cannot be resolved)."""
    try:
        return target.resolve() in {p.resolve() for p in paths}
    except OSError:
        return False
