"""``edprf``'s standard output and error as scripts use them (review rev-auto A9, A14, A15, A16).

- Encoding: text a terminal's or a pipe's encoding cannot hold (the ``–`` of a table under ``LANG=C`` without UTF-8
  coercion, or ``PYTHONIOENCODING=latin-1``) is written as a backslash escape (``\\u2013``), never an error that
  would stop a command after its work is done (:func:`never_fail_on_encoding`).
- A closed pipe (``edprf predict M D -o - | head -1``): the command stops quietly with :data:`EXIT_BROKEN_PIPE`, as a
  Unix tool killed by ``SIGPIPE`` does, and Python's ``Exception ignored ... BrokenPipeError`` at exit is silenced
  (:func:`stdout_pipe_closed`, :func:`quiet_after_broken_pipe`; the recipe of the Python documentation, "Note on
  SIGPIPE").
- A closed standard output (``edprf budget L >&-``: Python's ``sys.stdout`` is None): the first line a command
  writes there fails with an ``OSError`` (:func:`closed_stdout_error`), said as an error, exit 1, instead of being dropped with exit 0
  (:func:`fail_on_closed_stdout`).  File descriptor 1 is given to ``/dev/null`` meanwhile, so that no file the
  command opens gets it (a child process would write into that file).
- Matplotlib's configuration directory: a private temporary one when the usual one cannot be written (a read-only
  HOME), so that plotting logs no warning (:func:`private_matplotlib_dir`).

Standard library only: imported by the entry point before any subcommand.
"""

from __future__ import annotations

import codecs
import errno
import io
import os
import sys
from pathlib import Path

__all__ = [
    "ESCAPE_ERRORS",
    "EXIT_BROKEN_PIPE",
    "closed_stdout_error",
    "fail_on_closed_stdout",
    "never_fail_on_encoding",
    "private_matplotlib_dir",
    "quiet_after_broken_pipe",
    "stdout_pipe_closed",
]

EXIT_BROKEN_PIPE = 141
"""Exit status after the reader of standard output went away: 128 + ``SIGPIPE`` (13), what a shell reports for
``seq``, ``cat`` or ``grep`` stopped the same way, so ``set -o pipefail`` treats ``edprf`` as it treats them."""

STDOUT_NAME = "standard output"
"""The file name of the error a write to a closed standard output raises (:func:`closed_stdout_error`)."""

CLOSED_STDOUT_TEXT = (
    "closed (started with >&- or by a service without one), so the result cannot be written: give the command an "
    "open output, e.g. > FILE or > /dev/null"
)
"""What a command says, after :data:`STDOUT_NAME`, when it writes to a closed standard output."""


def closed_stdout_error(exc: BaseException) -> bool:
    """Whether ``exc`` is the error of a write to a standard output closed at start (:func:`fail_on_closed_stdout`):
    an ``OSError`` (``EBADF``, as a write to a closed descriptor) named :data:`STDOUT_NAME`.  A plain ``OSError``, not
    an ``EDPRFError``: the entry point, which raises and says it, imports no ``edprf_core``
    (``tests/federation/test_cli_startup.py``); it says it as ``STDOUT_NAME: CLOSED_STDOUT_TEXT``, exit 1."""
    return isinstance(exc, OSError) and exc.errno == errno.EBADF and exc.filename == STDOUT_NAME


class _ClosedStdout(io.TextIOBase):
    """``sys.stdout`` when standard output was closed at start: each write raises the error
    :func:`closed_stdout_error` recognises."""

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        if not text:
            return 0
        raise OSError(errno.EBADF, CLOSED_STDOUT_TEXT, STDOUT_NAME)

    def fileno(self) -> int:
        raise io.UnsupportedOperation("standard output is closed")


def fail_on_closed_stdout() -> None:
    """When standard output is closed (``sys.stdout is None``): give descriptor 1 to ``/dev/null`` (no file opened
    later may take it) and make ``sys.stdout`` an object whose writes raise the error :func:`closed_stdout_error`
    recognises."""
    if sys.stdout is not None:
        return
    try:
        os.fstat(1)
    except OSError:  # descriptor 1 is free: the next open would take it
        fd = os.open(os.devnull, os.O_WRONLY)
        if fd != 1:
            os.dup2(fd, 1)
            os.close(fd)
    sys.stdout = _ClosedStdout()


ESCAPE_ERRORS = "edprf-escape"
"""The codec error handler :func:`never_fail_on_encoding` gives stdout and stderr: ``surrogateescape`` for the bytes
of a file name that is not valid in the locale's encoding (written back as they were), ``backslashreplace`` for any
other character the encoding cannot hold."""


def _escape(exc: UnicodeError) -> tuple[str | bytes, int]:
    try:
        return codecs.lookup_error("surrogateescape")(exc)
    except UnicodeError:
        return codecs.lookup_error("backslashreplace")(exc)


def never_fail_on_encoding() -> None:
    """Write what stdout's and stderr's encodings cannot hold as backslash escapes instead of raising
    ``UnicodeEncodeError`` (review rev-auto A9: ``simulate`` failed at its very end under a Latin-1 or ASCII
    locale).  Nothing changes for what the encoding holds: all of it under a UTF-8 locale."""
    try:
        codecs.lookup_error(ESCAPE_ERRORS)
    except LookupError:
        codecs.register_error(ESCAPE_ERRORS, _escape)
    for stream in (sys.stdout, sys.stderr):
        # "strict" (PYTHONIOENCODING=latin-1) and "surrogateescape" (the C locale without UTF-8 coercion) both raise
        if isinstance(stream, io.TextIOWrapper) and stream.errors in ("strict", "surrogateescape"):
            try:
                stream.reconfigure(errors=ESCAPE_ERRORS)
            except (ValueError, OSError):  # a closed or detached stream: left as it is
                continue


def stdout_pipe_closed(exc: BaseException) -> bool:
    """Whether ``exc`` is a write to a standard output whose reader went away (``EPIPE`` on descriptor 1), not a
    broken pipe of another kind (to a child process, a socket), which stays an error."""
    if not isinstance(exc, BrokenPipeError):
        return False
    try:
        import select

        poller = select.poll()
        poller.register(1, 0)  # POLLERR is reported whatever the events asked: a pipe with no reader left
        return any(event & (select.POLLERR | select.POLLHUP) for _, event in poller.poll(0))
    except (ImportError, AttributeError, OSError, ValueError):  # no poll here: a broken pipe is most likely stdout
        return True


def quiet_after_broken_pipe() -> int:
    """Point descriptor 1 at ``/dev/null`` so that Python's final flush of what is still buffered does not print
    ``Exception ignored ... BrokenPipeError``; returns :data:`EXIT_BROKEN_PIPE`."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.close(devnull)
    except OSError:
        pass
    return EXIT_BROKEN_PIPE


def private_matplotlib_dir() -> None:
    """Give matplotlib a private temporary configuration and cache directory (``MPLCONFIGDIR``) when the usual ones
    cannot be written (a read-only or missing HOME): matplotlib would otherwise log two warnings on stderr and make
    one itself.  Unchanged when ``MPLCONFIGDIR`` is set or the usual directories are writable (the font cache is
    kept between runs there).  The directory is removed when ``edprf`` exits."""
    if os.environ.get("MPLCONFIGDIR"):
        return
    try:
        home = Path.home()
    except (RuntimeError, KeyError):  # no HOME and no password entry
        home = None
    if home is not None:
        if sys.platform.startswith(("linux", "freebsd")):
            config = Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config") / "matplotlib"
            cache = Path(os.environ.get("XDG_CACHE_HOME") or home / ".cache") / "matplotlib"
        else:
            config = cache = home / ".matplotlib"
        if _could_write(config) and _could_write(cache):
            return
    import atexit
    import shutil
    import tempfile

    try:
        private = tempfile.mkdtemp(prefix="edprf-matplotlib-")
    except OSError:  # no writable temporary directory either: matplotlib copes (and warns) on its own
        return
    os.environ["MPLCONFIGDIR"] = private
    atexit.register(shutil.rmtree, private, True)


def _could_write(directory: Path) -> bool:
    """Whether ``directory`` is, or could be created as, a directory this process can write (nothing is created)."""
    path = directory
    while not path.exists():
        if path.parent == path:
            return False
        path = path.parent
    return path.is_dir() and os.access(path, os.W_OK | os.X_OK)
