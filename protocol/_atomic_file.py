"""Crash-safe file writes: readers see the old file or the new one, never a part.

:func:`save_atomic` writes bytes at hand; :class:`PendingFile` a file written as it comes (``edprf predict``'s
rows), under a temporary name in its destination's directory, moved there whole at the end: with
:func:`os.replace` (``--force``), or without replacing a file that exists, however recently it appeared (two runs
started together: the later one is refused when it ends, review rev-auto A1).  A run that fails or is stopped
removes its temporary file and nothing else.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import IO, Self

__all__ = ["PendingFile", "commit_together", "fsync_directory", "save_atomic"]

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


_NO_HARD_LINKS = frozenset(
    getattr(errno, name)
    for name in ("EPERM", "ENOTSUP", "EOPNOTSUPP", "ENOSYS", "EMLINK", "EXDEV")
    if hasattr(errno, name)
)
"""What :func:`os.link` fails with on a file system without hard links (FAT, some network shares)."""


class PendingFile:
    """A file written under a temporary name beside ``path`` and moved to ``path`` whole.

    The temporary file (``.<name>.<random>.tmp``, mode ``mode`` whatever the umask) is created at once; write
    through :meth:`open`.  Used as a context manager, the block's normal end moves it into place
    (:meth:`commit`) and an exception, a Ctrl-C or a SIGTERM removes it (:meth:`discard`): a reader of ``path``
    sees the earlier file or none until the move, never a part (on a file system without hard links, a move
    without ``replace`` first claims the name with an empty file, which a reader may see for that moment), and a
    stopped run removes no file but its own temporary one.

    Parameters
    ----------
    path : str or Path
        The destination; its directory must exist and be writable.
    replace : bool
        Replace a file at ``path`` (``--force``); without it, a file that exists when the move comes is left as
        it is and the move refused (``FileExistsError`` naming ``path``), whenever it appeared.
    mode : int, default 0o600
        The file's permission bits.

    Raises
    ------
    OSError
        Named by ``path``: the temporary file cannot be created in its directory or given ``mode``.
    """

    def __init__(self, path: str | Path, replace: bool, mode: int = 0o600) -> None:
        self.path = Path(path)
        self.replace = replace
        try:
            fd, name = tempfile.mkstemp(prefix=f".{self.path.name}.", suffix=".tmp", dir=self.path.parent)
        except OSError as exc:  # named by the destination, not by the temporary file's made-up name
            raise OSError(
                exc.errno, f"cannot create a file in its directory {self.path.parent} ({exc.strerror})", str(path)
            ) from None
        self.temp = Path(name)
        self._fd: int | None = fd
        self._handle: IO | None = None
        try:
            if hasattr(os, "fchmod"):
                os.fchmod(fd, mode)
            self._identity = _identity(os.fstat(fd))
        except BaseException:
            self.discard()
            raise

    def open(self, binary: bool = False) -> IO:
        """The temporary file for writing (text: UTF-8, newlines as written); closed by :meth:`commit` or
        :meth:`discard`.  Its ``name`` is not the file's path (``gzip`` writes no name into its header)."""
        if self._handle is None:
            if self._fd is None:
                raise ValueError(f"{self.path}: the pending file was already moved or removed")
            fd, self._fd = self._fd, None
            self._handle = os.fdopen(fd, "wb") if binary else os.fdopen(fd, "w", encoding="utf-8", newline="")
        return self._handle

    def commit(self) -> Path:
        """Flush the temporary file to disk and move it to ``path``; ``path``.

        Raises
        ------
        FileExistsError
            Named by ``path``: without ``replace``, a file is there (the temporary file is removed).
        """
        moved = False
        try:
            self._flush_and_close()
            if self.replace:
                os.replace(self.temp, self.path)
            else:
                _move_no_clobber(self.temp, self.path)
            moved = True
            fsync_directory(self.path.parent)
        except BaseException as exc:
            self.discard()
            if moved and not self.replace:  # the move is not known to be on disk: undone, as a refusal leaves none
                self.withdraw()
            if isinstance(exc, OSError) and exc.filename is None and exc.errno is not None:
                raise OSError(exc.errno, exc.strerror, str(self.path)) from exc  # a full disk, named by the file
            raise
        return self.path

    def discard(self) -> None:
        """Close and remove the temporary file (never ``path``); nothing when it is gone already."""
        handle, fd, self._handle, self._fd = self._handle, self._fd, None, None
        with contextlib.suppress(OSError, ValueError):
            if handle is not None:
                handle.close()
            elif fd is not None:
                os.close(fd)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.temp)

    def withdraw(self) -> None:
        """Undo a :meth:`commit`: remove ``path`` if it is still this file (not one written there since)."""
        with contextlib.suppress(FileNotFoundError):
            if _identity(os.lstat(self.path)) == self._identity:
                os.unlink(self.path)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if exc_type is None:
            self.commit()
        else:
            self.discard()

    def _flush_and_close(self) -> None:
        handle, fd, self._handle, self._fd = self._handle, self._fd, None, None
        if handle is not None:
            if not handle.closed:
                try:
                    handle.flush()
                    os.fsync(handle.fileno())
                except BaseException:  # a full disk: the handle is detached, so discard() cannot close it
                    with contextlib.suppress(OSError, ValueError):
                        handle.close()  # (its flush fails again; the descriptor is closed all the same)
                    raise
                handle.close()
                return
            fd = os.open(self.temp, os.O_RDONLY)  # closed by a writer wrapped around it (Parquet): fsync by name
        if fd is not None:
            try:
                os.fsync(fd)
            finally:
                os.close(fd)


def commit_together(pending: Sequence[PendingFile]) -> None:
    """Move several pending files into place as one output (``edprf export``'s graph and its encoding).

    Without ``replace``, a refused move withdraws the moves made before it (each file still this run's), so a
    refusal leaves none of them; with it, the moves follow each other: a reader between two sees the new first
    file beside the earlier second one.  Every temporary file is removed on failure.

    Raises
    ------
    FileExistsError
        Named by the file that exists (see :meth:`PendingFile.commit`).
    """
    done: list[PendingFile] = []
    try:
        for file in pending:
            file.commit()
            done.append(file)
    except BaseException:
        for file in pending:
            file.discard()
        for file in done:
            if not file.replace:
                file.withdraw()
        raise


def _identity(st: os.stat_result) -> tuple[int, int]:
    return st.st_dev, st.st_ino


def _move_no_clobber(temp: Path, path: Path) -> None:
    """Move ``temp`` to ``path`` unless something is there (a hard link, then the temporary name removed)."""
    try:
        os.link(temp, path, follow_symlinks=False)
    except FileExistsError:
        raise FileExistsError(errno.EEXIST, "exists", str(path)) from None
    except OSError as exc:
        if exc.errno not in _NO_HARD_LINKS:
            raise
        # no hard links here: claim the name exclusively, then replace the claim (a reader may see it empty)
        try:
            claim = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, stat.S_IRUSR | stat.S_IWUSR)
        except FileExistsError:
            raise FileExistsError(errno.EEXIST, "exists", str(path)) from None
        claimed = _identity(os.fstat(claim))
        os.close(claim)
        try:
            os.replace(temp, path)
        except BaseException:  # the claim is this run's: removed, unless something replaced it meanwhile
            with contextlib.suppress(OSError):
                if _identity(os.lstat(path)) == claimed:
                    os.unlink(path)
            raise
        return
    os.unlink(temp)
