"""Whether the disk under a party's ledger can take a request's records: said where SQLite reports a full disk as an
I/O error, and checked before a reservation.

A party process that opens its ledger on a full disk creates SQLite's ``-wal`` and ``-shm`` files but cannot size
the shared-memory one: SQLite says ``disk I/O error`` (``SQLITE_IOERR_SHMSIZE``), not ``database or disk is full``.
Read alone, that text made ``edprf budget`` and ``edprf party check`` advise restoring the ledger from its backup,
while the same ledger read at once when space was freed (failure-injection review rev-ops F1).  So where a ledger
cannot be opened or read, the free space of its disk is looked at and, when it is nearly none, said instead.

Before a reservation the party also checks that the disk can take what the request may write (the release stored
in the ledger, its write-ahead copy, the anchor: :func:`ledger_room_problem`), and that the ledger's directory takes
a new file (the anchor's write makes one): the reservation would commit and the writes after it fail, spending
epsilon on a request that releases nothing (rev-ops F2, and N1 for a release larger than a fixed floor).  These
checks read the party's own disk and the request's public parameters: nothing of them leaves the party (its
replies keep their constant texts), and they are made before any row is read.
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from pathlib import Path

__all__ = ["LOW_DISK_BYTES", "ledger_room_problem", "low_disk_text", "read_only_text"]

LOW_DISK_BYTES = 1 << 20
"""Free bytes under which the disk holding a ledger is called full, whatever a request's size (a release with its
anchor and write-ahead log takes up to a few hundred kB at the default policy's largest)."""

_WRITES_PER_RELEASE_BYTE = 3
"""Bytes a request may write per byte of its largest release: the release stored in the ledger's row, its page
images in the write-ahead log, and the database's growth when they are checkpointed."""

_PROBE_NAME = ".edprf-write-check.tmp"
"""The file the directory check makes and removes: one fixed name, so that a directory where files can be made but
not removed (``chattr +a``), or a process killed between the two steps, leaves at most this one file, whatever the
number of requests (review rev-ops2 N4: a random name left one file per refused request)."""


def _free_bytes(ledger: str | Path) -> int | None:
    """The free bytes of the disk holding ``ledger``; None when they cannot be read, or when the file system reports
    no size at all (a FUSE file system without ``statfs`` says 0 of 0: unknown, not full; review rev-ops2 N3)."""
    try:
        usage = shutil.disk_usage(Path(ledger).parent)
    except OSError:
        return None
    return None if usage.total == 0 else usage.free


def low_disk_text(ledger: str | Path) -> str | None:
    """Why a ledger on a nearly full disk (less than :data:`LOW_DISK_BYTES` free) could not be opened or read, with
    what to do: free space and read it again, and restore it only if it still fails (a damaged ledger on a full disk
    reads as one only then: review rev-ops2 N9); None when its disk is not nearly full, or its free space cannot be
    read.  For a failure SQLite reported: a refusal before any write says the free space its own way
    (:func:`ledger_room_problem`)."""
    free = _free_bytes(ledger)
    if free is None or free >= LOW_DISK_BYTES:
        return None
    return (
        f"the disk holding {Path(ledger).parent} has {free:,} bytes free (SQLite says 'disk I/O error' or 'database "
        "or disk is full' when it cannot grow its files there): free space on that disk, then run `edprf budget` "
        "again; the ledger itself is likely intact: restore it from a backup only if it still fails then"
    )


def read_only_text(ledger: str | Path) -> str | None:
    """``"the file system holding DIR is mounted read-only"`` with what to do, when it is; None otherwise (no owner or
    mode change can make such a ledger writable: review rev-ops F7)."""
    for place in (Path(ledger), Path(ledger).parent):  # the ledger file may be mounted alone (review rev-ops2 N6)
        try:
            read_only = bool(os.statvfs(place).f_flag & os.ST_RDONLY)
        except (OSError, AttributeError):  # no such file yet, no statvfs (Windows), or it cannot be reached
            continue
        if read_only:
            return f"the file system holding {place} is mounted read-only: remount it read-write"
    return None


def ledger_room_problem(ledger: str | Path, release_bytes: int = 0) -> str | None:
    """Why the ledger at ``ledger`` cannot take a request now; None when it can.

    ``release_bytes``: the largest release the request may make (public parameters only; 0 for an evaluation,
    which stores none).  The disk must hold :data:`LOW_DISK_BYTES` plus :data:`_WRITES_PER_RELEASE_BYTE` times
    that; the file system must be writable, and the ledger's directory must take a new file (:data:`_PROBE_NAME` is
    made and removed, as the anchor's write makes one).
    """
    if problem := read_only_text(ledger):
        return problem
    directory = Path(ledger).parent
    need = LOW_DISK_BYTES + _WRITES_PER_RELEASE_BYTE * release_bytes
    free = _free_bytes(ledger)
    if free is not None and free < need:
        return (
            f"the disk holding {directory} has {free:,} bytes free, less than this request may write "
            f"({need:,} bytes: its largest release, stored in the ledger and its write-ahead log, and a margin); "
            "free space on that disk"
        )
    probe = _opened_probe(directory)
    if isinstance(probe, str):
        return probe
    try:
        os.unlink(probe)
    except FileNotFoundError:  # another request's check (a party serves requests in separate processes) removed it
        pass
    except OSError as exc:  # an append-only directory: made but not removable (left, and said: review rev-ops2 N4)
        return (
            f"a file made in the ledger's directory {directory} cannot be removed ({exc.strerror or type(exc).__name__}"
            f"; {probe.name} is left there{', and reused by the next check' if probe.name == _PROBE_NAME else ''}): "
            "the ledger's anchor is replaced there after each reservation"
        )
    return None


def _opened_probe(directory: Path) -> Path | str:
    """A regular file made (or found) in ``directory`` and closed again: :data:`_PROBE_NAME`, or a random name when
    something the party cannot use sits at that name (review rev-s64 F3: a probe left by another account, ``sudo
    edprf party check`` killed between its two steps, refused every request with a text blaming the directory; a
    FIFO there would hang the open); the text of the problem when no file can be made at all."""
    probe = directory / _PROBE_NAME
    flags = os.O_WRONLY | os.O_CREAT | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0)
    try:  # not exclusive: a probe left by an earlier process of the party (killed, an append-only directory) is reused
        fd = os.open(probe, flags, 0o600)
    except OSError as exc:
        if not os.path.lexists(probe):  # nothing in the way: the directory itself takes no file
            return _cannot_make(directory, exc)
        fd = -1
    if fd >= 0:
        regular = stat.S_ISREG(os.fstat(fd).st_mode)
        os.close(fd)
        if regular:
            return probe
    try:  # something else sits at the fixed name (another account's file, a FIFO, a link): a name of this check's own
        fd, name = tempfile.mkstemp(prefix=".edprf-write-check.", suffix=".tmp", dir=directory)
    except OSError as exc:
        return _cannot_make(directory, exc)
    os.close(fd)
    return Path(name)


def _cannot_make(directory: Path, exc: OSError) -> str:
    return (
        f"a file cannot be made in the ledger's directory {directory} ({exc.strerror or type(exc).__name__}): "
        "the ledger's anchor is written there after each reservation; give the party's user write access to it"
    )
