"""The signal dispositions a terminal gives a command, for tests that start one and then stop it with a signal.

A test run started in the background (``./test.sh &``, a CI runner's job) inherits SIGINT ignored, a ``nohup`` one
SIGHUP, and every command a test starts inherits them in turn: a Ctrl-C test would then interrupt nothing (Python
installs no ``KeyboardInterrupt`` handler over an ignored SIGINT, and ``edprf`` keeps an ignored SIGINT ignored).
"""

from __future__ import annotations

import signal

__all__ = ["terminal_dispositions"]


def terminal_dispositions() -> None:
    """``preexec_fn`` of such a command: SIGINT, SIGTERM and SIGHUP back to their default actions."""
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)
