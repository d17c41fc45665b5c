"""Run a long job (the Flower simulation) in a child process that Ctrl-C stops cleanly.

Flower's simulation engine starts Ray: a GCS server, a raylet and worker
processes, plus threads in the calling process.  Interrupting that in-process
left ``edprf simulate`` hanging for over a minute and a second Ctrl-C ended in
a threading traceback.  Here the job runs in a child that leads its own
session, so the terminal's Ctrl-C reaches only this process; on
``KeyboardInterrupt`` every descendant of the child (Ray's processes included,
found through ``/proc``) is sent SIGTERM, then SIGKILL after a grace period,
and the interrupt is re-raised for the command to exit with 130.

A stop can reach a process that the child has just forked and not yet turned
into another program (``ray.init`` starting Ray's daemons).  Python runs the
fork handlers of the libraries it imported there (filelock 4.2 registers a
large one), the SIGTERM handler that ``ray.init`` installed, inherited by the
fork, raises ``SystemExit`` inside them, and Python prints "Exception ignored
in ... Traceback" on the terminal, which the fork still shares.  The child
therefore installs :func:`quiet_stops_in_forked_children`: such interrupts,
which only a stop produces, are dropped (the process is killed with the rest
if it outlives the grace period); every other unraisable error is still
printed.

The child also gets a network namespace of its own, holding only a loopback
interface (Linux; unprivileged users through a user namespace).  Ray 2.55's
gRPC servers listen on every interface whatever node address they are given;
inside that namespace "every interface" is loopback, so nothing the
simulation opens (while every simulated party's data is loaded) can be reached
from the network.  Where the kernel refuses namespaces, the child runs as
before and says so in the log.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["descendants", "isolate_network", "quiet_stops_in_forked_children", "run_in_child"]

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


_CLONE_NEWUSER = 0x10000000
_CLONE_NEWNET = 0x40000000
_SIOCGIFFLAGS, _SIOCSIFFLAGS, _IFF_UP = 0x8913, 0x8914, 0x1


def isolate_network() -> bool:
    """Move this (single-threaded) process into a new network namespace with only ``lo``, up."""
    import ctypes
    import fcntl
    import socket
    import struct

    libc = ctypes.CDLL(None, use_errno=True)
    uid, gid = os.getuid(), os.getgid()
    if libc.unshare(_CLONE_NEWNET) != 0:
        if libc.unshare(_CLONE_NEWUSER | _CLONE_NEWNET) != 0:
            return False
        try:  # map ourselves, so that files we write keep our ids
            Path("/proc/self/setgroups").write_text("deny")
            Path("/proc/self/uid_map").write_text(f"{uid} {uid} 1")
            Path("/proc/self/gid_map").write_text(f"{gid} {gid} 1")
        except OSError:
            return False
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        request = struct.pack("16sH14x", b"lo", 0)
        flags = struct.unpack("16sH14x", fcntl.ioctl(s, _SIOCGIFFLAGS, request))[1]
        fcntl.ioctl(s, _SIOCSIFFLAGS, struct.pack("16sH14x", b"lo", flags | _IFF_UP))
    return True


def quiet_stops_in_forked_children() -> None:
    """Drop the unraisable ``KeyboardInterrupt`` and ``SystemExit`` of this process and of the processes it forks.

    Python reports an exception raised in a fork handler (``os.register_at_fork``) through
    ``sys.unraisablehook``; a forked process keeps the hook until it executes another program.  Those two
    exceptions come from signal handlers, i.e. from a stop in progress, whose SIGKILL round ends the process if
    it outlives the grace period; any other unraisable error still goes to the previous hook.
    """
    previous = sys.unraisablehook

    def hook(unraisable: Any) -> None:
        if not isinstance(unraisable.exc_value, (KeyboardInterrupt, SystemExit)):
            previous(unraisable)

    sys.unraisablehook = hook


def _leader(target: Callable[..., Any], args: tuple, isolate: bool) -> None:
    os.setsid()  # its own session: the terminal's Ctrl-C goes to the parent only
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    quiet_stops_in_forked_children()
    if isolate and not isolate_network():
        import logging

        logging.getLogger("edprf").warning(
            "could not give the simulation a loopback-only network namespace; Ray may listen on every interface"
        )
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


def run_in_child(target: Callable[..., Any], *args: Any, isolate_network: bool = True) -> int:
    """Run ``target(*args)`` in a spawned child; returns its exit code.

    With ``isolate_network`` the child first moves into a network namespace
    that has only a loopback interface (see the module docstring).

    On Ctrl-C (``KeyboardInterrupt`` here) the child and all its descendants
    are stopped within about ``GRACE_SECONDS + 1`` seconds, then the interrupt
    is re-raised.
    """
    process = multiprocessing.get_context("spawn").Process(
        target=_leader, args=(target, args, isolate_network), daemon=False
    )
    process.start()
    try:
        process.join()
    except KeyboardInterrupt:
        _stop(process.pid)
        process.join(timeout=1.0)
        raise
    return int(process.exitcode or 0)
