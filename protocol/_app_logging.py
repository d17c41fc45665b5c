"""What the ServerApp and the ClientApp share about their log output: the package loggers routed to one handler
(Flower's console) while an app runs, and whether a stream is a terminal.

The ServerApp's process (``flwr-serverapp``) shows what it writes to its standard streams in the run's log
(``flwr log``, ``edprf run``); a SuperNode shows what each ClientApp process (``flwr-clientapp``) writes in its own
output.  Flower 1.41 gives a console handler to its own logger (``flwr``) only: ``edprf.coordinator`` and
``edprf.party`` had none, so their INFO lines (how many parties connected, where the global model was saved, a
release made) were dropped and their WARNINGs (each refusal) were written by Python's last-resort handler, bare.
:func:`flower_console` gives the ``edprf`` loggers Flower's own console handler (one handler object: its format,
level, colour and stream, ``FLWR_LOG_LEVEL`` included), so each of their lines comes once, as Flower's do.  Local
output only: nothing here reaches a reply.  Flower is imported only when an app enters :func:`flower_console`.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

__all__ = ["SHOWN_LOGGERS", "WARNINGS_ONLY_LOGGERS", "flower_console", "is_terminal", "logging_to"]

SHOWN_LOGGERS = ("edprf",)
"""The loggers whose lines an app's output shows at the console handler's level (INFO unless ``FLWR_LOG_LEVEL``)."""
WARNINGS_ONLY_LOGGERS = ("edprf_core",)
"""Loggers whose warnings and errors an app's output shows, in Flower's format (their INFO lines stay out)."""


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


@contextmanager
def flower_console() -> Iterator[None]:
    """Within the block (the ServerApp's main, a ClientApp's message hook), show the ``edprf`` loggers' lines
    (INFO and above) and ``edprf_core``'s warnings on Flower's console handler.

    Flower's lines are coloured only when the console is a terminal (Flower 1.41 colours them always; a
    SuperNode's output is mostly a log file, the ServerApp's is stored by the SuperLink).  On leaving, the loggers
    are as they were (:func:`logging_to`): another message or run in the same process, or a test, adds nothing.
    """
    from flwr.common.logger import console_handler, update_console_handler

    update_console_handler(colored=is_terminal(console_handler.stream))
    with logging_to(console_handler, SHOWN_LOGGERS, WARNINGS_ONLY_LOGGERS):
        yield
