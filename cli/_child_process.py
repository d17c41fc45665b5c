"""Run a long job (the Flower simulation) in a child process that Ctrl-C stops cleanly.

Flower's simulation engine starts Ray: a GCS server, a raylet and worker
processes, plus threads in the calling process.  Interrupting that in-process
left ``edprf simulate`` hanging for over a minute and a second Ctrl-C ended in
a threading traceback.  Here the job runs in a child that leads its own
session, so the terminal's Ctrl-C reaches only this process; on
``KeyboardInterrupt`` every descendant of the child (Ray's processes included,
found through ``/proc``) is sent SIGTERM, then SIGKILL after a grace period,
and the interrupt is re-raised for the command to exit with 130.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["descendants", "run_in_child"]

GRACE_SECONDS = 2.0


def descendants(pid: int) -> set[int]:
    """Every live process below ``pid`` (Linux ``/proc``; empty elsewhere)."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[-1].split()
        if len(fields) > 2:
            parents.setdefault(int(fields[1]), []).append(int(entry.name))
    found, todo = set(), [pid]
    while todo:
        for child in parents.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def _leader(target: Callable[..., Any], args: tuple) -> None:
    os.setsid()  # its own session: the terminal's Ctrl-C goes to the parent only
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    target(*args)


def _stop(pid: int) -> None:
    victims = descendants(pid) | {pid}
    for sig, wait in ((signal.SIGTERM, GRACE_SECONDS), (signal.SIGKILL, 1.0)):
        for victim in victims:
            try:
                os.kill(victim, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline and any(Path(f"/proc/{v}").exists() for v in victims):
            try:
                os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                pass
            time.sleep(0.05)
        victims = {v for v in victims if Path(f"/proc/{v}").exists()}
        if not victims:
            return


def run_in_child(target: Callable[..., Any], *args: Any) -> int:
    """Run ``target(*args)`` in a spawned child; returns its exit code.

    On Ctrl-C (``KeyboardInterrupt`` here) the child and all its descendants
    are stopped within about ``GRACE_SECONDS + 1`` seconds, then the interrupt
    is re-raised.
    """
    process = multiprocessing.get_context("spawn").Process(target=_leader, args=(target, args), daemon=False)
    process.start()
    try:
        process.join()
    except KeyboardInterrupt:
        _stop(process.pid)
        process.join(timeout=1.0)
        raise
    return int(process.exitcode or 0)
