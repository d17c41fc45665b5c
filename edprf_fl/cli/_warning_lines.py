"""The project's own warnings, said on a command's standard error as its other messages are."""

from __future__ import annotations

import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

__all__ = ["warnings_as_lines"]


@contextmanager
def warnings_as_lines(prog: str) -> Iterator[None]:
    """While the block runs, an :class:`edprf_core.EDPRFWarning` that is shown (not filtered out, not raised)
    is printed as one line ``PROG: warning: MESSAGE`` on standard error, not as Python's
    ``FILE:LINE: Category: message`` followed by a source line; any other warning is shown as before.

    Filters are untouched: a warning ignored or turned into an error is ignored or raised as before, and a
    warning recorded by ``warnings.catch_warnings(record=True)`` outside the block is still recorded if it is
    not the project's own.  The hook is restored when the block ends.
    """
    previous = warnings.showwarning

    def show(
        message: Warning | str,
        category: type[Warning],
        filename: str,
        lineno: int,
        file: TextIO | None = None,
        line: str | None = None,
    ) -> None:
        if _is_ours(category):
            print(f"{prog}: warning: {message}", file=file if file is not None else sys.stderr)
        else:
            previous(message, category, filename, lineno, file, line)

    warnings.showwarning = show
    try:
        yield
    finally:
        warnings.showwarning = previous


def _is_ours(category: type[Warning]) -> bool:
    # edprf_core is not imported to ask (the CLI stays light until a handler runs): a warning of its class
    # can only have been raised once its module is loaded
    exceptions = sys.modules.get("edprf_core._exceptions")
    return exceptions is not None and issubclass(category, exceptions.EDPRFWarning)
