"""The coordinator's output files and directories readable by its own account only, whatever the umask.

A run's ``report.json`` and global model, the spend record and the run's output directories name the
consortium's parties, their outcomes and what each was charged: they are created with mode 0600 (files) and
0700 (directories), as a party's ledger is (:mod:`client._ledger`), instead of what the coordinator's umask
leaves (0644 and 0755 under the common 022).  The modes are set explicitly after creation, so a permissive
umask cannot widen them.  A directory or a spend record that exists already keeps its mode (an operator may
have given one to a backup group on purpose); the report and the model are replaced whole
(:func:`protocol.save_atomic`), always 0600.

Privacy: none of this reads or releases anything; it narrows who on the coordinator's host can read what the
coordinator writes.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["OWNER_ONLY_DIR", "OWNER_ONLY_FILE", "create_owner_only_file", "make_owner_only_dirs"]

OWNER_ONLY_FILE = 0o600
"""Mode of the files the coordinator creates."""
OWNER_ONLY_DIR = 0o700
"""Mode of the directories the coordinator creates."""


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
