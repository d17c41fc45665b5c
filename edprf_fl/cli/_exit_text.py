"""The exit statuses of a command, as its ``--help`` ends (review rev-auto A5; docs/exit-status.md has every command's).

Light: imported when the parser is built (``tests/federation/test_cli_startup.py``).
"""

from __future__ import annotations

__all__ = ["BUSY_STATUS", "SHARED_EXIT_TEXT", "error_text", "exit_epilog"]

SHARED_EXIT_TEXT = (
    "2 a wrong option or argument; 129, 130, 143 stopped by SIGHUP, Ctrl-C, SIGTERM; 141 the reader of standard "
    "output went away (| head); every command's statuses: docs/exit-status.md"
)
"""The statuses every ``edprf`` command shares (said by argparse, the entry point and ``_stop_signals``)."""

BUSY_STATUS = 75
"""``EX_TEMPFAIL``: the exit status of a command refused because another process holds what it needs (``budget``'s
busy ledger, ``consortium``'s ``--dir``); retrying later may succeed."""


def exit_epilog(own: str) -> str:
    """``exit status: OWN; `` and :data:`SHARED_EXIT_TEXT`, for a parser's ``epilog``; ``own`` says 0, 1 and the
    command's own codes."""
    return f"exit status: {own}; {SHARED_EXIT_TEXT}"


def error_text(exc: Exception) -> str:
    """An error as the one line ``edprf COMMAND: error: ...`` says: a file-system error as 'PATH: what' (not
    Python's '[Errno 2] ...'); a ``--json`` error object carries the same text."""
    if isinstance(exc, OSError) and exc.filename is not None and exc.strerror:
        return f"{exc.filename}: {exc.strerror}"
    return str(exc)
