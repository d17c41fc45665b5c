"""The coordinator's log lines in the run's log, in Flower's format, next to Flower's own.

The ServerApp's process (``flwr-serverapp``) shows what it writes to its standard streams in the run's log
(``flwr log``, ``edprf run``).  Flower 1.41 gives a console handler to its own logger (``flwr``) only: the
coordinator's logger, ``edprf.coordinator``, had none, so its INFO lines (the spend record's path and size,
how many parties connected, where the global model was saved) were dropped and its WARNINGs were written by
Python's last-resort handler, bare, without level or prefix.  :func:`flower_console` gives the
``edprf`` loggers Flower's own console handler (one handler object: its format, level, colour and stream,
``FLWR_LOG_LEVEL`` included), so each of their lines comes once, as Flower's do.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

from flwr.common.logger import console_handler, update_console_handler

__all__ = ["flower_console"]

SHOWN_LOGGERS = ("edprf",)
"""The loggers whose lines the run's log shows at the console handler's level (INFO unless ``FLWR_LOG_LEVEL``)."""
WARNINGS_ONLY_LOGGERS = ("edprf_core",)
"""Loggers whose warnings and errors the run's log shows, in Flower's format (their INFO lines stay out)."""


@contextmanager
def flower_console() -> Iterator[None]:
    """Within the block, show the ``edprf`` loggers' lines (INFO and above) and ``edprf_core``'s warnings on
    Flower's console.

    Flower's lines are coloured only when its console is a terminal (Flower 1.41 colours them always; the
    ServerApp's output is stored by the SuperLink and shown by ``flwr log``: never a terminal here).  On leaving,
    the loggers are as they were (the handler removed, the levels restored): another run in the same process, or a
    test, adds nothing and keeps its own logging.
    """
    update_console_handler(colored=is_terminal(console_handler.stream))
    added = []
    for name in SHOWN_LOGGERS + WARNINGS_ONLY_LOGGERS:
        logger = logging.getLogger(name)
        if console_handler not in logger.handlers:
            logger.addHandler(console_handler)
            added.append(logger)
    levels = {}
    for name in SHOWN_LOGGERS:
        logger = logging.getLogger(name)
        level = max(console_handler.level, logging.DEBUG)
        if logger.getEffectiveLevel() > level:  # else only records at the root's WARNING and above are made
            levels[logger] = logger.level
            logger.setLevel(level)
    try:
        yield
    finally:
        for logger in added:
            logger.removeHandler(console_handler)
        for logger, level in levels.items():
            logger.setLevel(level)


def is_terminal(stream: object) -> bool:
    """Whether ``stream`` is a terminal (False for files, pipes, closed streams and objects without ``isatty``)."""
    try:
        return bool(stream.isatty())  # type: ignore[attr-defined]
    except (AttributeError, ValueError, OSError):  # no isatty, or closed
        return False
