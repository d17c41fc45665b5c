"""One process at a time in a directory: an exclusive, never-waited-for ``flock`` on a lock file inside it.

``edprf consortium --dir``, ``edprf simulate --output``, ``edprf sweep --output`` and ``edprf demo --output`` hold
their directory while they run: a second command taking the same lock file there (a ``simulate`` and a ``demo``
share one, as both write a model there) is refused at once, naming the pid (and
the command, when the holder gave it) of the one running, instead of both mixing their files (reviews rev-auto A1,
A2, rev-research2 N3).  The lock goes with the process (closing the descriptor, or its end however it ends), so a
killed command leaves no stale lock.  Standard library only: the parser's commands import it before any work.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path

__all__ = ["hold_directory"]

_ATTEMPTS = 5
"""Opens of a lock file that its holder removed between our open and our lock (``remove=True``) before giving up."""


@contextlib.contextmanager
def hold_directory(
    directory: str | Path,
    lock_name: str,
    in_use: Callable[[str], str],
    command: str = "",
    remove: bool = False,
    make: Callable[[Path], object] | None = None,
) -> Iterator[Path]:
    """Hold ``directory`` (an exclusive ``flock`` on ``directory/lock_name``, not waited for) while the block runs.

    Parameters
    ----------
    directory : str or Path
        An existing directory.
    lock_name : str
        The lock file's name in it (created with mode 0600); it keeps the holder's pid and ``command``.
    in_use : callable
        The refusal's text, given who holds the lock (``"pid 1234"``, ``"pid 1234: edprf sweep ..."``, or
        ``"another process"`` when the file names none).
    command : str, optional
        Written after the pid, for the refusal of the next process.
    remove : bool, default False
        Remove the lock file when the block ends (a directory of outputs keeps only them).  Safe against a process
        that opened the file before its removal: a lock taken on a removed file is dropped and the file opened again.
    make : callable, optional
        Makes ``directory`` again when it is gone at the open: a command that created it and ended before writing
        anything removes it, empty, and a second command that had just made (or found) it then failed with "No
        such file" (final read of stop 67, S3).  Without it, that ``FileNotFoundError`` propagates.

    Yields
    ------
    Path
        The lock file.

    Raises
    ------
    ValueError
        Another process holds the lock: ``in_use``'s text.
    """
    import fcntl

    path = Path(directory) / lock_name
    for _ in range(_ATTEMPTS):
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o600)
        except FileNotFoundError:
            if make is None or Path(directory).is_dir():
                raise
            make(Path(directory))  # removed, empty, by the command that had made it: made again, opened again
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 4096, 0).decode("utf-8", "replace").strip()
            os.close(fd)
            pid, _, held_by = holder.partition(" ")
            who = f"pid {pid}" + (f": {held_by}" if held_by else "") if pid else "another process"
            raise ValueError(in_use(who)) from None
        except BaseException:
            os.close(fd)
            raise
        if _same_file(fd, path):
            break
        os.close(fd)  # its holder removed it after our open: that lock guards nothing
    else:
        raise ValueError(in_use("another process"))
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}{' ' + command if command else ''}\n".encode(), 0)
        yield path
    finally:
        if remove:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()  # before the lock goes: a process that opened it meanwhile sees it removed
        os.close(fd)  # releases the lock


def _same_file(fd: int, path: Path) -> bool:
    """Whether ``fd`` is still the file at ``path`` (not one removed, and perhaps replaced, since it was opened)."""
    try:
        named = os.stat(path)
    except FileNotFoundError:
        return False
    held = os.fstat(fd)
    return (named.st_dev, named.st_ino) == (held.st_dev, held.st_ino)
