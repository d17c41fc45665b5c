"""SIGTERM and SIGHUP raise ``Terminated`` (a ``KeyboardInterrupt``) inside ``stop_signals``, so ``edprf run`` and
``edprf consortium`` stop the run they submitted as on Ctrl-C.  End to end: ``tests/deployment/test_consortium.py``.

Each case runs in a process of its own: the signal goes to that process's main thread, whatever thread the
test runner uses (a test worker's own handlers are not touched).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent(
    """
    import os, signal, sys
    from edprf_fl.cli._stop_signals import Terminated, exit_status, stop_signals

    sig = getattr(signal, sys.argv[1])
    if sys.argv[2] == "ignored":
        signal.signal(sig, signal.SIG_IGN)
    before = signal.getsignal(sig)
    try:
        with stop_signals():
            os.kill(os.getpid(), sig)
            signal.sigtimedwait([], 0.2)  # let the handler run
        print("not raised")
    except Terminated as stopped:
        print("raised", isinstance(stopped, KeyboardInterrupt), stopped.signum == sig, exit_status(stopped))
    print("restored", signal.getsignal(sig) == before, exit_status(KeyboardInterrupt()))
    """
)


def _run(name: str, disposition: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, name, disposition], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


@pytest.mark.parametrize(("name", "status"), [("SIGTERM", 143), ("SIGHUP", 129)])
def test_a_stop_signal_is_raised_as_an_interrupt_and_the_handler_restored(name, status):
    assert _run(name, "default") == [f"raised True True {status}", "restored True 130"]


def test_an_ignored_hangup_stays_ignored():
    """Under nohup, SIGHUP is ignored: the block does not take it over."""
    assert _run("SIGHUP", "ignored") == ["not raised", "restored True 130"]


DROPPED = textwrap.dedent(
    """
    import os, signal, sys
    from edprf_fl import raise_if_interrupted, remembered_interrupts
    from edprf_fl.cli._stop_signals import Terminated, exit_status, stop_signals

    class DropsASigterm:  # its finalizer is where the SIGTERM is handled: Python drops the interrupt raised there
        def __del__(self):
            os.kill(os.getpid(), signal.SIGTERM)
            signal.sigtimedwait([], 0.2)

    sys.unraisablehook = lambda u: print("reported", type(u.exc_value).__name__)
    try:
        with remembered_interrupts(), stop_signals():
            DropsASigterm()
            print("went on")
            raise_if_interrupted()
            print("not raised")
    except KeyboardInterrupt as stopped:
        print("raised", type(stopped).__name__, exit_status(stopped))
    """
)


@pytest.mark.parametrize("sigint", ["default", "ignored"])
def test_a_stop_signal_a_finalizer_drops_is_raised_again_as_itself(sigint):
    """As for Ctrl-C (``edprf_fl.remembered_interrupts``): a SIGTERM whose interrupt a finalizer dropped stops the
    command at the next checkpoint, with SIGTERM's exit status, not Ctrl-C's; also in a process that ignores
    SIGINT (a background job: where ``timeout`` and batch schedulers send SIGTERM)."""
    ignore = "import signal; signal.signal(signal.SIGINT, signal.SIG_IGN)\n" if sigint == "ignored" else ""
    done = subprocess.run(
        [sys.executable, "-c", ignore + DROPPED], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["went on", "raised Terminated 143"]


def test_an_error_c_code_made_of_an_interrupt_is_the_interrupt(tmp_path, monkeypatch, capsys):
    """CI rehearsal 4 at 71544bb: a Ctrl-C during simulate's baselines came out of numpy as "... is not a valid PEP
    3118 buffer format string" (its C code replaces the KeyboardInterrupt), and the command exited 1 with that
    error instead of 130 with what the stop left behind.  After a recorded interrupt, an ordinary exception is the
    interrupt's: in the block, and in simulate's own handler."""
    from edprf_fl import record_interrupt, recorded_interrupt, remembered_interrupts

    interrupt = KeyboardInterrupt()
    with pytest.raises(KeyboardInterrupt) as raised, remembered_interrupts():
        record_interrupt(interrupt)
        raise ValueError("'T{d:val:q:i1:q:i2:}' is not a valid PEP 3118 buffer format string")
    assert raised.value is interrupt and isinstance(raised.value.__cause__, ValueError)
    assert recorded_interrupt() is None  # forgotten when the block ends
    with pytest.raises(ValueError), remembered_interrupts():  # without an interrupt, an error stays itself
        raise ValueError("a real error")

    import edprf_fl.cli._simulate as simulate_cmd
    from edprf_fl.cli._main import main

    def interrupted_in_c(settings, out_dir, args):
        record_interrupt(KeyboardInterrupt())
        raise ValueError("'T{d:val:q:i1:q:i2:}' is not a valid PEP 3118 buffer format string")

    monkeypatch.setattr(simulate_cmd, "_simulate", interrupted_in_c)
    assert main(["simulate", "--parties", "2", "--output", str(tmp_path / "o")]) == 130
    err = capsys.readouterr().err
    assert "interrupted" in err and "PEP 3118" not in err
