"""Output files readable by their owner only (mode 0600), whatever the umask.

``edprf predict -o`` writes a prediction for every row of DATA (a patient's, typically) and ``edprf evaluate
--json`` exact statistics of DATA: both are written as the other secrets the project writes are (private keys,
the SuperExec secret, a party's ledger), readable and writable by their owner only.  So does ``edprf budget
--release`` (the bytes a party released, its own record) and the coordinator its model and report
(:mod:`server._owner_only`); a model exported or copied by a command that takes its mode from the umask
(``edprf export``) is the operator's to share.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import IO, Literal, overload

__all__ = ["OWNER_ONLY", "open_owner_only"]

OWNER_ONLY = 0o600
"""The mode of the files :func:`open_owner_only` writes."""


@overload
def open_owner_only(path: str | Path, binary: Literal[False] = False) -> IO[str]: ...
@overload
def open_owner_only(path: str | Path, binary: Literal[True]) -> IO[bytes]: ...


def open_owner_only(path: str | Path, binary: bool = False) -> IO[str] | IO[bytes]:
    """``path`` opened for writing, empty, with mode :data:`OWNER_ONLY` (text: UTF-8, newlines as written).

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
        fd = os.open(path, flags, OWNER_ONLY)
    except OSError as exc:
        if os.path.islink(path):  # O_NOFOLLOW: the link's target would be made owner-only and emptied
            raise OSError(exc.errno, "a symbolic link: give the path of the file itself", str(path)) from None
        raise
    try:
        if stat.S_ISREG(os.fstat(fd).st_mode):
            os.fchmod(fd, OWNER_ONLY)
            os.ftruncate(fd, 0)
    except OSError as exc:
        os.close(fd)
        raise OSError(exc.errno, f"cannot make it readable by its owner only ({exc.strerror})", str(path)) from None
    if binary:
        return os.fdopen(fd, "wb")
    return os.fdopen(fd, "w", encoding="utf-8", newline="")
