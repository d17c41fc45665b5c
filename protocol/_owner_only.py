"""Files and directories readable by their owner only, whatever the umask: a party's ledger and the coordinator's
outputs.

A party's ledger holds its hold-out split's secret salt (:mod:`client._ledger`); a run's ``report.json`` and
global model, the spend record and the run's output directories name the consortium's parties, their outcomes
and what each was charged (:mod:`server`).  They are created with mode 0600 (files) and 0700 (directories),
instead of what the umask leaves (0644 and 0755 under the common 022); the modes are set explicitly after
creation.  A directory or file that exists already keeps its mode (an operator may have given one to a backup
group on purpose); files replaced whole go through :func:`protocol.save_atomic` with ``mode=OWNER_ONLY_FILE``, and
files written in place through :func:`open_owner_only` (the commands' patient-level outputs, the simulation's
copies of its input rows).

Privacy: none of this reads or releases anything; it narrows who on the host can read what is written.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import IO, Literal, overload

__all__ = [
    "OWNER_ONLY_DIR",
    "OWNER_ONLY_FILE",
    "create_owner_only_file",
    "make_owner_only_dirs",
    "open_owner_only",
    "others_can_write",
]

OWNER_ONLY_FILE = 0o600
"""Mode of the owner-only files."""
OWNER_ONLY_DIR = 0o700
"""Mode of the owner-only directories."""


def others_can_write(mode: int, *, sticky_protects: bool = False) -> bool:
    """Whether accounts other than the owner can write under ``mode`` (an ``st_mode``): its group or other write
    bit, read from the bits rather than ``os.access`` (a check run as root may write anything).

    ``sticky_protects``: a directory with the sticky bit counts as safe (others cannot rename or delete what is in
    it: the app pin's parents, its list's directory); not for a missing name, which others can still create first.
    """
    return bool(mode & 0o022) and not (sticky_protects and mode & stat.S_ISVTX)


def make_owner_only_dirs(path: str | Path) -> bool:
    """Create ``path`` and each missing parent with mode :data:`OWNER_ONLY_DIR`; True if ``path`` was created.

    Directories that exist are left as they are.  A directory created at the same moment by another process is
    taken as existing.

    Raises
    ------
    OSError
        ``path`` or a parent cannot be created, or ``path`` exists and is not a directory.
    """
    path = Path(path)
    missing = []
    for directory in (path, *path.parents):
        if directory.is_dir():
            break
        missing.append(directory)
    created = False
    for directory in reversed(missing):
        try:
            directory.mkdir(mode=OWNER_ONLY_DIR)
        except FileExistsError:
            if not directory.is_dir():
                raise NotADirectoryError(f"not a directory: {directory}") from None
            continue
        os.chmod(directory, OWNER_ONLY_DIR)  # mkdir's mode is masked by the umask
        created = created or directory == path
    if not path.is_dir():
        raise NotADirectoryError(f"not a directory: {path}")
    return created


def create_owner_only_file(path: str | Path) -> bool:
    """Create ``path`` empty with mode :data:`OWNER_ONLY_FILE` if it does not exist; True if it was created.

    An existing file is left as it is (its content and its mode).  Used before SQLite opens a database file,
    which then gives its ``-wal`` and ``-shm`` files the database file's mode.
    """
    try:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, OWNER_ONLY_FILE)
    except FileExistsError:
        return False
    try:
        os.fchmod(fd, OWNER_ONLY_FILE)  # os.open's mode is masked by the umask
    finally:
        os.close(fd)
    return True


@overload
def open_owner_only(path: str | Path, binary: Literal[False] = False) -> IO[str]: ...
@overload
def open_owner_only(path: str | Path, binary: Literal[True]) -> IO[bytes]: ...


def open_owner_only(path: str | Path, binary: bool = False) -> IO[str] | IO[bytes]:
    """``path`` opened for writing, empty, with mode :data:`OWNER_ONLY_FILE` (text: UTF-8, newlines as written).

    A new file is created with that mode; an existing one (replaced with ``--force``) is given it before it is
    emptied, so that a file this user may write but not chmod is refused as it was, not emptied.  A symbolic link
    is refused (``--force`` included: its target, perhaps a shared file, would lose its mode and its content).  A
    path that is not a regular file (a FIFO, a device) is opened as it is.

    Raises
    ------
    OSError
        With ``path`` as its file name: the file cannot be created, opened or given mode 0600, or is a symbolic
        link.
    """
    flags = os.O_WRONLY | os.O_CREAT | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags, OWNER_ONLY_FILE)
    except OSError as exc:
        if os.path.islink(path):  # O_NOFOLLOW: the link's target would be made owner-only and emptied
            raise OSError(exc.errno, "a symbolic link: give the path of the file itself", str(path)) from None
        raise
    try:
        if stat.S_ISREG(os.fstat(fd).st_mode):
            os.fchmod(fd, OWNER_ONLY_FILE)
            os.ftruncate(fd, 0)
    except OSError as exc:
        os.close(fd)
        raise OSError(exc.errno, f"cannot make it readable by its owner only ({exc.strerror})", str(path)) from None
    if binary:
        return os.fdopen(fd, "wb")
    return os.fdopen(fd, "w", encoding="utf-8", newline="")
