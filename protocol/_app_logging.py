"""What the ServerApp and the ClientApp share about their log output: the package loggers routed to one handler
(Flower's console) while an app runs, and whether a stream is a terminal.

No Flower import here: each app passes its handler (:mod:`server._flower_console`, :mod:`client._flower_console`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

__all__ = ["is_terminal", "logging_to"]


@contextmanager
def logging_to(handler: logging.Handler, shown: Sequence[str], warnings_only: Sequence[str]) -> Iterator[None]:
    """Within the block, the loggers ``shown`` write their records at ``handler``'s level and above to
    ``handler``, and the loggers ``warnings_only`` their warnings and errors; on leaving, every logger is as it
    was (the handler removed where it was added, the levels restored), so a process that runs an app more than
    once, or a test, keeps its own logging.  A logger that has the handler already gets no second one.
    """
    added = []
    for name in (*shown, *warnings_only):
        logger = logging.getLogger(name)
        if handler not in logger.handlers:
            logger.addHandler(handler)
            added.append(logger)
    levels = {}
    for name in shown:
        logger = logging.getLogger(name)
        level = max(handler.level, logging.DEBUG)
        if logger.getEffectiveLevel() > level:  # else only records at the root's WARNING and above are made
            levels[logger] = logger.level
            logger.setLevel(level)
    try:
        yield
    finally:
        for logger in added:
            logger.removeHandler(handler)
        for logger, level in levels.items():
            logger.setLevel(level)


def is_terminal(stream: object) -> bool:
    """Whether ``stream`` is a terminal (False for files, pipes, closed streams and objects without ``isatty``)."""
    try:
        return bool(stream.isatty())  # type: ignore[attr-defined]
    except (AttributeError, ValueError, OSError):  # no isatty, or closed
        return False
