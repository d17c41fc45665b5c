"""Crash-safe file writes: readers see the old file or the new one, never a part."""

from __future__ import annotations

import contextlib
import errno
import os
import tempfile
from pathlib import Path

__all__ = ["fsync_directory", "save_atomic"]

_CHUNK = 1 << 20


def save_atomic(path: str | Path, data: bytes, mode: int = 0o644) -> Path:
    """Write ``data`` to ``path`` atomically.

    The bytes go to a temporary file in the same directory, which is flushed
    and fsynced and then renamed over ``path`` with :func:`os.replace`
    (atomic on POSIX and Windows); the directory is fsynced afterwards where
    the platform allows it.  On any failure the temporary file is removed and
    ``path`` is left as it was; an ``OSError`` that names no file (writing to a full disk) is raised naming
    ``path``.

    Parameters
    ----------
    path : str or Path
        Destination; its directory must exist.
    data : bytes
    mode : int, default 0o644
        Permission bits of the new file (0o600 for private keys).

    Returns
    -------
    Path
        ``path``.
    """
    path = Path(path)
    view = memoryview(bytes(data))
    try:
        fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except FileNotFoundError:  # named by the destination, not by the temporary file's made-up name
        raise FileNotFoundError(errno.ENOENT, f"its directory {path.parent} does not exist", str(path)) from None
    try:
        try:
            if hasattr(os, "fchmod"):
                os.fchmod(fd, mode)
            written = 0
            while written < len(view):
                written += os.write(fd, view[written : written + _CHUNK])
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp_name, path)
    except BaseException as exc:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp_name)
        if isinstance(exc, OSError) and exc.filename is None and exc.errno is not None:
            # a write or fsync error names no file ("[Errno 28] No space left on device"): named by the destination
            raise OSError(exc.errno, exc.strerror, str(path)) from exc
        raise
    fsync_directory(path.parent)
    return path


def fsync_directory(directory: Path) -> None:
    """Persist the rename (POSIX); a no-op where directories cannot be opened."""
    if os.name != "posix":
        return
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
