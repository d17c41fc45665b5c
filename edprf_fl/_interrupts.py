"""Ctrl-C stops a long command even when Python drops its ``KeyboardInterrupt``.

Python raises a SIGINT's ``KeyboardInterrupt`` in whatever Python code runs when
the signal is handled.  When that code is a finalizer (``__del__``, a weakref
callback: OpenDP frees its Rust objects in one, and a party's fit makes
thousands), Python prints "Exception ignored in ..." with a traceback and drops
the exception.  ``edprf simulate`` then went on training party after party as
if no key had been pressed.  pyarrow loses some outright: during its CSV
reads it hands SIGINT to Arrow's own handler, which passes it on through a
second thread, and a read that ends before that thread has run forgets it (33
of 300 SIGINTs sent during reads of 20,000 lines, pyarrow 26).  The in-process
engine's run went on in 2 of about 130 interrupted simulations under load.

While :func:`remembered_interrupts` is active, a SIGINT is written down as
well as raised.  :func:`raise_if_interrupted` raises it again at the next
point that calls it (the in-process engine calls it before each message it
delivers).  A ``KeyboardInterrupt`` dropped in a finalizer is not printed: it
is raised again where it can stop the command, at the latest when the block
ends.  One that the command caught itself (to stop a run and say so) is not
raised again there: the command's own answer stands.  pyarrow's signal handling is turned off
inside the block (``pyarrow.enable_signal_handlers(False)``): SIGINT reaches
Python's handler during a read too, and the read's ``KeyboardInterrupt`` comes
when the read returns (the reader reads at most 64 MiB at a time).

The record is process state, like the signal dispositions it mirrors: one per
process, set by SIGINT's handler and by the stop signals' (``record_interrupt``:
SIGTERM and SIGHUP, ``edprf_fl.cli``), cleared when the outermost block ends.
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

__all__ = [
    "interrupt_behind",
    "raise_if_interrupted",
    "record_interrupt",
    "recorded_interrupt",
    "remembered_interrupts",
]


class _Record:
    """What became of the interrupts (SIGINT, and the stop signals') that came while a
    :func:`remembered_interrupts` block was active."""

    def __init__(self) -> None:
        self.interrupted: KeyboardInterrupt | None = None
        """The interrupt of the SIGINT that came (or of a stop signal given to :func:`record_interrupt`)."""
        self.dropped = False
        """A finalizer dropped the ``KeyboardInterrupt`` of one."""
        self.depth = 0


_RECORD = _Record()


def raise_if_interrupted() -> None:
    """Raise the recorded interrupt (a SIGINT's ``KeyboardInterrupt``, a stop signal's) if one came inside the
    active :func:`remembered_interrupts` block.

    A checkpoint for loops that run party after party: a Ctrl-C or SIGTERM whose exception a finalizer dropped
    still stops the loop here.  Does nothing outside such a block.
    """
    if _RECORD.interrupted is not None:
        raise _RECORD.interrupted


def recorded_interrupt() -> KeyboardInterrupt | None:
    """The interrupt that came inside the active :func:`remembered_interrupts` block, or None.

    For a command that catches its own interrupt to say what it leaves behind: an ordinary exception after an
    interrupt is the interrupt's, when C code turned the ``KeyboardInterrupt`` into another error (numpy, parsing a
    buffer's format when the interrupt came, raises "... is not a valid PEP 3118 buffer format string").
    """
    return _RECORD.interrupted


def interrupt_behind(exc: BaseException, since: KeyboardInterrupt | None = None) -> KeyboardInterrupt | None:
    """The interrupt ``exc`` stands for, or None: ``exc`` itself when it is a ``KeyboardInterrupt``; for any other
    exception, the interrupt recorded in the active :func:`remembered_interrupts` block (C code may raise another
    error in place of a Ctrl-C's ``KeyboardInterrupt``: :func:`recorded_interrupt`), unless that is ``since``.

    Parameters
    ----------
    exc : BaseException
        The exception that ended a block.
    since : KeyboardInterrupt, optional
        An interrupt the caller is already handling (it says what that one left): an ordinary exception is an
        interrupt's only when another one (a second Ctrl-C) was recorded after it.
    """
    if isinstance(exc, KeyboardInterrupt):
        return exc
    recorded = _RECORD.interrupted
    return None if recorded is since else recorded


def record_interrupt(interrupt: KeyboardInterrupt) -> None:
    """Write down ``interrupt``, which a signal handler is about to raise, inside the active
    :func:`remembered_interrupts` block (nothing outside one).

    SIGINT's handler calls it; so does the handler that turns SIGTERM and SIGHUP into an interrupt
    (``edprf_fl.cli``), so that a finalizer dropping that interrupt still stops the command, with its own
    exit status.
    """
    if _RECORD.depth:
        _RECORD.interrupted = interrupt


@contextmanager
def remembered_interrupts() -> Iterator[None]:
    """Remember every interrupt that comes inside the block (see the module docstring).

    Main thread only.  SIGINT's handler is installed only over Python's own: a process that ignores SIGINT
    (started in the background) or that installed another handler keeps its own behaviour for SIGINT, and
    the record still catches the interrupts of the stop signals (:func:`record_interrupt`), which is where
    a background job gets them (``timeout``, a batch scheduler).  Blocks nest; the outermost one restores
    the previous handler and hook and forgets the record.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    outermost = _RECORD.depth == 0
    takes_sigint = outermost and signal.getsignal(signal.SIGINT) is signal.default_int_handler
    if outermost:
        previous_hook = sys.unraisablehook

        def drop_lost_interrupts(unraisable: Any) -> None:
            if isinstance(unraisable.exc_value, KeyboardInterrupt) and _RECORD.interrupted is not None:
                _RECORD.dropped = True  # raised again at the next checkpoint, or when the block ends
            else:
                previous_hook(unraisable)

        sys.unraisablehook = drop_lost_interrupts
    if takes_sigint:

        def remember(signum: int, frame: FrameType | None) -> None:
            interrupt = KeyboardInterrupt()
            record_interrupt(interrupt)
            raise interrupt

        signal.signal(signal.SIGINT, remember)
        _arrow_signal_handlers(False)
    _RECORD.depth += 1
    try:
        yield
        if _RECORD.dropped and _RECORD.interrupted is not None:  # dropped by a finalizer, not raised by a checkpoint
            raise _RECORD.interrupted
    except Exception as exc:  # an error after an interrupt is the interrupt's (C code may turn one into another)
        interrupt = interrupt_behind(exc)
        if interrupt is not None:
            raise interrupt from exc
        raise
    finally:
        _RECORD.depth -= 1
        if takes_sigint:
            signal.signal(signal.SIGINT, signal.default_int_handler)
            _arrow_signal_handlers(True)  # pyarrow's default
        if outermost:
            sys.unraisablehook = previous_hook
            _RECORD.interrupted, _RECORD.dropped = None, False


def _arrow_signal_handlers(enabled: bool) -> None:
    """Let pyarrow take SIGINT during its reads (its default) or leave it to Python's handler."""
    import pyarrow  # a dependency of edprf_core, which every command imports already

    pyarrow.enable_signal_handlers(enabled)
