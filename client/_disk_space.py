"""Whether the disk under a party's ledger is full: said where SQLite reports a full disk as an I/O error.

A party process that opens its ledger on a full disk creates SQLite's ``-wal`` and ``-shm`` files but cannot size
the shared-memory one: SQLite says ``disk I/O error`` (``SQLITE_IOERR_SHMSIZE``), not ``database or disk is full``.
Read alone, that text made ``edprf budget`` and ``edprf party check`` advise restoring the ledger from its backup,
while the same ledger read at once when space was freed (failure-injection review rev-ops F1).  So where a ledger
cannot be opened or read, the free space of its disk is looked at and, when it is nearly none, said instead.
The check reads the party's own disk: nothing of it leaves the party (its replies keep their constant texts).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

__all__ = ["LOW_DISK_BYTES", "low_disk_free", "low_disk_text", "read_only_text"]

LOW_DISK_BYTES = 1 << 20
"""Free bytes under which the disk holding a ledger is called full (a release with its anchor and write-ahead log
takes up to a few hundred kB; below 1 MiB a request can fail at any of its writes)."""


def low_disk_free(ledger: str | Path) -> int | None:
    """The free bytes of the disk holding ``ledger`` when below :data:`LOW_DISK_BYTES`; None otherwise, or when
    its free space cannot be read."""
    try:
        free = shutil.disk_usage(Path(ledger).parent).free
    except OSError:
        return None
    return free if free < LOW_DISK_BYTES else None


def low_disk_text(ledger: str | Path) -> str | None:
    """``"the disk holding DIR has N bytes free"`` with what to do, when that disk is nearly full
    (:func:`low_disk_free`); None otherwise."""
    free = low_disk_free(ledger)
    if free is None:
        return None
    return (
        f"the disk holding {Path(ledger).parent} has {free:,} bytes free (SQLite says 'disk I/O error' or 'database "
        "or disk is full' when it cannot grow its files there): free space on that disk; the ledger itself is likely "
        "intact, and reads again once there is room (do not restore it from a backup for this)"
    )


def read_only_text(ledger: str | Path) -> str | None:
    """``"the file system holding DIR is mounted read-only"`` with what to do, when it is; None otherwise (no owner or
    mode change can make such a ledger writable: review rev-ops F7)."""
    directory = Path(ledger).parent
    try:
        read_only = bool(os.statvfs(directory).f_flag & os.ST_RDONLY)
    except (OSError, AttributeError):  # no statvfs (Windows), or the directory cannot be reached
        return None
    return f"the file system holding {directory} is mounted read-only: remount it read-write" if read_only else None
