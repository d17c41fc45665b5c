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

from collections.abc import Iterator
from contextlib import contextmanager

from flwr.common.logger import console_handler, update_console_handler

from protocol import is_terminal, logging_to

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
    with logging_to(console_handler, SHOWN_LOGGERS, WARNINGS_ONLY_LOGGERS):
        yield
