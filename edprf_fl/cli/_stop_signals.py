"""SIGTERM and SIGHUP stop every ``edprf`` command the way Ctrl-C does.

A run submitted to a SuperLink outlives the command that submitted it: if ``edprf run`` dies
without stopping it, the run stays queued and later asks every party to spend epsilon.  Ctrl-C
is handled (the run is stopped); ``timeout``, systemd and ``kill`` send SIGTERM, a closed SSH
session or terminal SIGHUP, and both killed the command at once.  Inside :func:`stop_signals`,
they raise :class:`Terminated`, a ``KeyboardInterrupt``, so the command's Ctrl-C path runs.
``edprf`` runs every subcommand inside it: ``edprf simulate --engine ray`` killed by SIGTERM used to
leave its child and Ray's processes running, finishing the federation and writing its model after
the command had ended.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

from edprf_fl import record_interrupt

__all__ = ["Terminated", "exit_status", "stop_signals"]

_SIGNALS = tuple(s for s in (getattr(signal, "SIGTERM", None), getattr(signal, "SIGHUP", None)) if s is not None)


class Terminated(KeyboardInterrupt):
    """A SIGTERM or SIGHUP inside :func:`stop_signals` (``signum`` says which)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def exit_status(interrupt: KeyboardInterrupt) -> int:
    """The shell's status for a command ended by ``interrupt``: 128 + the signal's number (130 for Ctrl-C)."""
    return 128 + (interrupt.signum if isinstance(interrupt, Terminated) else signal.SIGINT)


@contextmanager
def stop_signals() -> Iterator[None]:
    """Raise :class:`Terminated` on SIGTERM and SIGHUP inside the block.

    Only in the main thread, and only where the signal has its default action: a command started
    under ``nohup`` (SIGHUP ignored) keeps ignoring it.  The previous handlers come back when the
    block ends.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def terminated(signum: int, frame: FrameType | None) -> None:
        interrupt = Terminated(signum)
        record_interrupt(interrupt)  # raised again if a finalizer drops it (edprf_fl.remembered_interrupts)
        raise interrupt

    previous = {}
    for sig in _SIGNALS:
        if signal.getsignal(sig) is signal.SIG_DFL:
            previous[sig] = signal.signal(sig, terminated)
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
