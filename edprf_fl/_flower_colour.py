"""Flower's log lines without colour codes wherever they are not shown on a terminal.

Flower 1.41 colours the level of every line of its console logger (``\\x1b[92mINFO \\x1b[0m:``) whatever the
console is: its ``ConsoleHandler`` is built with ``colored=True``, ``FLWR_LOG_LEVEL`` sets it to True again,
and neither an environment variable nor a configuration turns it off (``flwr/supercore/logger.py``).  The one
lever it offers is :func:`flwr.common.logger.update_console_handler`, in the process that logs:

- :func:`colour_flower_logs_on_terminals_only` pulls it where this package runs Flower in its own process (the
  simulation); the ServerApp and the ClientApp pull it the same way in theirs (``server.server_app``,
  ``client.client_app``);
- Flower's own processes (SuperLink, SuperExec, SuperNode, ``flwr log``, and the processes they start
  before the apps' code runs) cannot be reached so: ``edprf run`` and ``edprf consortium`` pass what they copy
  of their output to a file or a pipe through :func:`without_colour`.
"""

from __future__ import annotations

import re
from typing import TypeVar

__all__ = ["colour_flower_logs_on_terminals_only", "is_terminal", "without_colour"]

_SGR = re.compile(r"\x1b\[[0-9;]*m")
_SGR_BYTES = re.compile(rb"\x1b\[[0-9;]*m")
_Text = TypeVar("_Text", str, bytes)


def is_terminal(stream: object) -> bool:
    """Whether ``stream`` is a terminal (False for files, pipes, closed streams and objects without ``isatty``).

    The same as :func:`protocol.is_terminal`, kept here on purpose: importing ``protocol`` would load numpy at
    every ``edprf`` start (``edprf --help`` stays fast)."""
    try:
        return bool(stream.isatty())  # type: ignore[attr-defined]
    except (AttributeError, ValueError, OSError):
        return False


def without_colour(text: _Text) -> _Text:
    """``text`` (str or bytes) without its colour and style codes (SGR sequences, ``ESC [ ... m``); nothing else
    is changed."""
    if isinstance(text, bytes):
        return _SGR_BYTES.sub(b"", text) if b"\x1b" in text else text
    return _SGR.sub("", text) if "\x1b" in text else text


def colour_flower_logs_on_terminals_only() -> None:
    """Colour Flower's console log lines in this process only if its console stream is a terminal."""
    from flwr.common.logger import console_handler, update_console_handler

    update_console_handler(colored=is_terminal(console_handler.stream))
