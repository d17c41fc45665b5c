"""SIGTERM and SIGHUP raise ``Terminated`` (a ``KeyboardInterrupt``) inside ``stop_signals``, so ``edprf run`` and
``edprf consortium`` stop the run they submitted as on Ctrl-C.  End to end: ``tests/deployment/test_consortium.py``."""

from __future__ import annotations

import os
import signal

import pytest

from edprf_fl.cli._stop_signals import Terminated, exit_status, stop_signals


@pytest.mark.parametrize(("sig", "status"), [(signal.SIGTERM, 143), (signal.SIGHUP, 129)])
def test_a_stop_signal_is_raised_as_an_interrupt_and_the_handler_restored(sig, status):
    before = signal.getsignal(sig)
    with pytest.raises(Terminated) as stopped, stop_signals():
        os.kill(os.getpid(), sig)
        signal.sigtimedwait([], 0.1)  # let the handler run
    assert isinstance(stopped.value, KeyboardInterrupt) and stopped.value.signum == sig
    assert exit_status(stopped.value) == status and exit_status(KeyboardInterrupt()) == 130
    assert signal.getsignal(sig) == before


def test_an_ignored_hangup_stays_ignored():
    """Under nohup, SIGHUP is ignored: the block does not take it over."""
    previous = signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        with stop_signals():
            os.kill(os.getpid(), signal.SIGHUP)
            signal.sigtimedwait([], 0.1)
        assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGHUP, previous)
