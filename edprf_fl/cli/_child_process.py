"""Run a long job (the Flower simulation) in a child process that Ctrl-C stops cleanly.

Flower's simulation engine starts Ray: a GCS server, a raylet and worker
processes, plus threads in the calling process.  Interrupting that in-process
left ``edprf simulate`` hanging for over a minute and a second Ctrl-C ended in
a threading traceback.  Here the job runs in a child that leads its own
session, so the terminal's Ctrl-C reaches only this process; on
``KeyboardInterrupt`` every descendant of the child (Ray's processes included,
found through ``/proc``) is killed (SIGKILL: on SIGTERM Ray's processes print
hundreds of lines; see :func:`_stop`), and the interrupt is re-raised for the
command to exit with 130 (143 on SIGTERM, 129 on SIGHUP).

A SIGTERM (what a finished job left running gets, :func:`_finish_session`; an
interrupted one is killed outright) can reach a process that the child has just
forked and not yet turned into another program (``ray.init`` starting Ray's daemons).  Python runs the
fork handlers of the libraries it imported there (filelock 4.2 registers a
large one), the SIGTERM handler that ``ray.init`` installed, inherited by the
fork, raises ``SystemExit`` inside them, and Python prints "Exception ignored
in ... Traceback" on the terminal, which the fork still shares.  The child
therefore installs :func:`quiet_stops_in_forked_children`: such interrupts,
which only a stop produces, are dropped (the process is killed if it outlives
the grace period); every other unraisable error is still printed.

The child also gets a network namespace of its own, holding only a loopback
interface (Linux; unprivileged users through a user namespace).  Ray 2.55's
gRPC servers listen on every interface whatever node address they are given;
inside that namespace "every interface" is loopback, so nothing the
simulation opens (while every simulated party's data is loaded) can be reached
from the network.  Where the kernel refuses namespaces, the child runs as
before and says so in the log.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import signal
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

__all__ = [
    "descendants",
    "isolate_network",
    "quiet_stops_in_forked_children",
    "run_in_child",
    "running",
    "session_members",
]

GRACE_SECONDS = 2.0


def _process_table() -> Iterator[tuple[int, str, int, int]]:
    """``(pid, state, parent pid, session id)`` of every process in ``/proc`` (Linux; nothing elsewhere)."""
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[-1].split()
        except OSError:
            continue
        if len(fields) > 3:
            yield int(entry.name), fields[0], int(fields[1]), int(fields[3])


def descendants(pid: int) -> set[int]:
    """Every process below ``pid`` that /proc still lists (Linux ``/proc``; empty elsewhere)."""
    parents: dict[int, list[int]] = {}
    for child, _, parent, _ in _process_table():
        parents.setdefault(parent, []).append(child)
    found, todo = set(), [pid]
    while todo:
        for child in parents.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def session_members(sid: int) -> set[int]:
    """Every process of session ``sid`` that has not exited (zombies excluded; empty without ``/proc``)."""
    return {pid for pid, state, _, session in _process_table() if session == sid and state != "Z"}


def running(pids: set[int]) -> set[int]:
    """Those of ``pids`` that have not exited (zombies excluded)."""
    return {pid for pid, state, _, _ in _process_table() if pid in pids and state != "Z"}


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
    exceptions come from signal handlers, i.e. from a SIGTERM in progress (:func:`_finish_session`), whose SIGKILL
    round ends the process if it outlives the grace period; any other unraisable error still goes to the
    previous hook.
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
        logging.getLogger("edprf").warning(
            "could not give the simulation a loopback-only network namespace; Ray may listen on every interface"
        )
    target(*args)


def _terminate(victims: set[int], rounds: tuple[tuple[int, float], ...] | None = None) -> None:
    """Send each round's signal to those of ``victims`` still running and wait up to its seconds for them to go,
    reaping this process's children meanwhile.  Default: SIGTERM, then SIGKILL to those still running after
    ``GRACE_SECONDS``."""
    for sig, wait in rounds or ((signal.SIGTERM, GRACE_SECONDS), (signal.SIGKILL, 1.0)):
        for victim in victims:
            try:
                os.kill(victim, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline and running(victims):
            try:
                os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                pass
            time.sleep(0.05)
        victims = running(victims)
        if not victims:
            return


_KILL = ((signal.SIGKILL, 1.0),)
"""One round: SIGKILL, then up to a second for the processes to go."""


def _stop(pid: int) -> None:
    """Ctrl-C: the child ``pid``, everything below it, and what is left of its session (a process whose parent
    exited is no longer below it), killed at once.

    SIGKILL, not SIGTERM first: the run is being abandoned, and what it keeps is in SQLite files (the parties'
    ledgers), whose transactions a kill cannot tear.  On SIGTERM, Ray's daemons print a stack dump each, and the
    driver logs every actor that died under it: up to 826 lines on the terminal for one Ctrl-C (20 parties).
    """
    try:
        os.killpg(pid, signal.SIGKILL)  # the child leads its process group: every member in one delivery
    except (ProcessLookupError, PermissionError):
        pass
    _terminate(descendants(pid) | session_members(pid) | {pid}, _KILL)
    if late := session_members(pid):  # forked while the first round ran, outside the group (Ray's raylet)
        _terminate(late, _KILL)


def _finish_session(sid: int) -> None:
    """After the child ``sid`` (a session leader) exited: wait up to ``GRACE_SECONDS`` for the rest of its
    session to exit, then stop what is left, so that nothing the job started outlives the command.

    Ray's daemons (the autoscaler's monitor, for one) are still winding down when ``ray.shutdown`` returns;
    they exit within a fraction of a second, and are stopped if they do not.
    """
    deadline = time.monotonic() + GRACE_SECONDS
    while (left := session_members(sid)) and time.monotonic() < deadline:
        time.sleep(0.05)
    if left:
        from edprf_core.count_text import count_text

        from ._flower_processes import command_line

        logging.getLogger("edprf").warning(
            "stopping %s the job left running: %s",
            count_text(len(left), "process", "processes"),
            "; ".join(f"{pid} {command_line(pid)[:120] or '?'}" for pid in sorted(left)),
        )
        _terminate(left)


def run_in_child(target: Callable[..., Any], *args: Any, isolate_network: bool = True) -> int:
    """Run ``target(*args)`` in a spawned child; returns its exit code.

    With ``isolate_network`` the child first moves into a network namespace
    that has only a loopback interface (see the module docstring).

    On Ctrl-C (``KeyboardInterrupt`` here) the child and all its descendants
    are killed within about a second, then the interrupt is re-raised.  When the child ends, what is left of its session gets
    ``GRACE_SECONDS`` to exit and is then stopped: nothing it started outlives
    this call.
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
    try:
        _finish_session(process.pid)
    except KeyboardInterrupt:  # during the wait for the session's last processes
        _terminate(session_members(process.pid), _KILL)
        raise
    return int(process.exitcode or 0)
