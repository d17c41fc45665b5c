"""Real Flower processes on 127.0.0.1: start them, watch them, stop every one of them.

Used by ``edprf consortium`` (a local consortium in one command) and by the deployment tests
(``tests/deployment/_harness.py`` builds on it).

- :class:`Deployment` starts SuperLinks, SuperNodes and `flwr` commands, each the leader of its own
  process group, with its output in ``<root>/logs/<name>.log`` (copied there without the colour codes
  Flower 1.41 writes whatever its output is: ``edprf_fl.without_colour``); it remembers every descendant it
  has seen (SuperExec, ServerApp and ClientApp processes run detached), and every member of the process
  groups it started (a SuperNode's SuperExec and ClientApps share its group, and stay in it once orphaned);
  :meth:`Deployment.stop` ends them all: SIGTERM to each SuperNode's whole process group (its ClientApps
  too: Flower 1.41 can leave one blocked after a run is stopped, which outlives its SuperNode; see
  deploy/README.md section 10), then SuperLinks, SIGKILL by pid and start time to whatever outlives the
  grace period.
- :func:`listening_sockets` reads ``/proc`` to check that nothing listens beyond loopback.
- :class:`Federation` wraps the usual steps (SuperLink with or without TLS and SuperNode
  authentication, the CLI connection, SuperNodes, registration, waiting for nodes).  A SuperLink or
  SuperNode started on a freshly chosen port that another process takes first (between
  :func:`free_port` closing its probe and Flower binding) is started again on new ports, up to
  :data:`PORT_ATTEMPTS` times; a SuperLink restarted on its fixed port is never moved.

Linux only (``/proc``).  Never targets anything but 127.0.0.1.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Self

from edprf_core import EDPRFError
from edprf_fl import FLOWER_QUIET_ENVIRONMENT

__all__ = [
    "BIN",
    "FLOWER_TOOLS",
    "GRACE",
    "LOOPBACK",
    "PORT_ATTEMPTS",
    "READY_TIMEOUT",
    "RUN_TIMEOUT",
    "Deployment",
    "Federation",
    "FlowerProcessError",
    "ListenerWatch",
    "Started",
    "Tls",
    "address_in_use",
    "command_line",
    "flower_env",
    "free_port",
    "json_in",
    "json_result",
    "kill_group",
    "listening_sockets",
    "listens_on",
    "loopback_connections",
    "missing_flower_tools",
    "open_log",
    "port_open",
    "proc_stat",
    "process_group",
    "process_tree",
    "tail",
]

BIN = Path(sys.executable).parent
LOOPBACK = "127.0.0.1"
FLOWER_TOOLS = ("flower-superlink", "flower-supernode", "flower-superexec", "flwr")

READY_TIMEOUT = 60.0  # SuperLink and SuperNodes listening, SuperNodes online
RUN_TIMEOUT = 240.0  # one `flwr run --stream`
GRACE = 15.0  # SIGTERM -> SIGKILL
PORT_ATTEMPTS = 3  # starts of a SuperLink or SuperNode on freshly chosen ports, when another process takes one


class FlowerProcessError(EDPRFError, RuntimeError):
    """A Flower process exited early, or did not get ready in time."""


# ----------------------------------------------------------------------------- /proc
def free_port(used: set[int] | None = None) -> int:
    """A free TCP port on loopback, not in ``used`` (which it joins)."""
    used = used if used is not None else set()
    while True:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind((LOOPBACK, 0))
            port = s.getsockname()[1]
        if port not in used:
            used.add(port)
            return port


def port_open(port: int) -> bool:
    try:
        with socket.create_connection((LOOPBACK, port), timeout=0.5):
            return True
    except OSError:
        return False


def proc_stat(pid: int) -> tuple[int, int] | None:
    """(parent pid, start time in clock ticks) of a live process, from /proc."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    rest = text.rsplit(")", 1)[1].split()  # the command name may hold spaces and parentheses
    if rest[0] == "Z":
        return None
    return int(rest[1]), int(rest[19])


def process_tree(roots: Iterable[int]) -> dict[int, int]:
    """Every live process descending from ``roots`` (roots included): pid -> start time."""
    parents: dict[int, list[int]] = {}
    starts: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            stat = proc_stat(int(entry.name))
            if stat is not None:
                parents.setdefault(stat[0], []).append(int(entry.name))
                starts[int(entry.name)] = stat[1]
    tree, todo = {}, [r for r in roots if r in starts]
    while todo:
        pid = todo.pop()
        if pid not in tree:
            tree[pid] = starts[pid]
            todo.extend(parents.get(pid, []))
    return tree


def process_group(pgids: Iterable[int]) -> dict[int, int]:
    """Every live process in one of the process groups ``pgids``: pid -> start time.

    A SuperNode started as the leader of its own group shares it with the ``flower-superexec`` and the
    ``flwr-clientapp`` processes it starts (Flower 1.41 starts them without a new session); they stay in it
    when the SuperNode exits and they are reparented, out of :func:`process_tree`'s reach.
    """
    wanted = set(pgids)
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            rest = Path(f"/proc/{entry.name}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if rest[0] != "Z" and int(rest[2]) in wanted:
            found[int(entry.name)] = int(rest[19])
    return found


def command_line(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def _socket_inodes(pids: Iterable[int]) -> set[str]:
    """Inode numbers (as ``/proc/net`` writes them) of the sockets ``pids`` hold open."""
    inodes = set()
    for pid in pids:
        try:
            for fd in Path(f"/proc/{pid}/fd").iterdir():
                target = os.readlink(fd)
                if target.startswith("socket:["):
                    inodes.add(target[8:-1])
        except OSError:
            continue
    return inodes


def _held_rows(tables: Iterable[str], inodes: set[str]) -> Iterator[tuple[str, list[str]]]:
    """(table, columns) of each row of the ``/proc/net`` ``tables`` whose socket is one of ``inodes``."""
    for table in tables:
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            cols = line.split()
            if cols[9] in inodes:
                yield table, cols


_LOOPBACK_HEX = {"0100007F", "0000000000000000FFFF00000100007F"}  # 127.0.0.1 in /proc/net/tcp and tcp6 (v4-mapped)


def _loopback_peers(inodes: set[str]) -> dict[str, int]:
    """Socket inode -> remote port, for the established TCP connections to ``LOOPBACK`` among ``inodes``."""
    rows = _held_rows(("/proc/net/tcp", "/proc/net/tcp6"), inodes)
    remotes = [(cols[9], *cols[2].split(":")) for _, cols in rows if cols[3] == "01"]  # 01 = ESTABLISHED
    return {inode: int(hex_port, 16) for inode, hex_ip, hex_port in remotes if hex_ip in _LOOPBACK_HEX}


def loopback_connections(pids: Iterable[int]) -> set[int]:
    """Remote ports of the established TCP connections ``pids`` hold to ``LOOPBACK`` (from ``/proc``: no
    process started, no packet sent)."""
    return set(_loopback_peers(_socket_inodes(pids)).values())


def listening_sockets(pids: Iterable[int], udp: bool = False) -> list[str]:
    """Local addresses (``ip:port``) of the TCP sockets in LISTEN state held by ``pids``; with ``udp``, also those
    of their unconnected UDP sockets (``ip:port/udp``: a bound UDP socket takes datagrams from any sender)."""
    tables = {"/proc/net/tcp": "0A", "/proc/net/tcp6": "0A"}  # 0A = LISTEN
    if udp:  # 07 = unconnected (a connected one, 01, only takes its peer's datagrams)
        tables |= {"/proc/net/udp": "07", "/proc/net/udp6": "07"}
    found = []
    for table, cols in _held_rows(tables, _socket_inodes(pids)):
        if cols[3] != tables[table]:
            continue
        hex_ip, hex_port = cols[1].split(":")
        raw = bytes.fromhex(hex_ip)
        if table.endswith("6"):  # four little-endian 32-bit words
            raw = b"".join(raw[i : i + 4][::-1] for i in range(0, 16, 4))
            ip = socket.inet_ntop(socket.AF_INET6, raw)
        else:
            ip = socket.inet_ntop(socket.AF_INET, raw[::-1])
        found.append(f"{ip}:{int(hex_port, 16)}{'/udp' if '/udp' in table else ''}")
    return found


class ListenerWatch:
    """Every ``interval`` seconds while it runs, the TCP listeners and unconnected UDP sockets of a deployment's
    processes, their descendants included (the ServerApp and ClientApp processes Flower starts during a run).

    Attributes
    ----------
    seen : set of str
        Every address seen (``ip:port``, ``ip:port/udp``).
    """

    def __init__(self, dep: Deployment, interval: float = 1.0) -> None:
        self.dep, self.interval = dep, interval
        self.seen: set[str] = set()
        self.checks = 0
        self.failure = ""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="listener-watch", daemon=True)

    def _run(self) -> None:
        try:
            while True:
                self.check()
                if self._stop.wait(self.interval):
                    return
        except Exception as exc:  # noqa: BLE001 -- any failure: the summary says the watch stopped; the run goes on
            self.failure = f"{type(exc).__name__}: {exc}"

    def check(self) -> None:
        self.seen.update(listening_sockets(list(self.dep.remember_tree()), udp=True))
        self.checks += 1

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5.0)

    @property
    def exposed(self) -> list[str]:
        """The addresses seen that are not on loopback."""
        return sorted(a for a in self.seen if not a.startswith(f"{LOOPBACK}:"))

    def summary(self) -> str:
        """One line for the operator: loopback only, or the addresses beyond it (a WARNING)."""
        if self.exposed:
            return (
                f"WARNING: a process of this consortium listened beyond {LOOPBACK} during the run: "
                f"{', '.join(self.exposed)} (logs in {self.dep.logs})"
            )
        if self.failure:
            seen = f"; in those checks the processes listened on {LOOPBACK} only" if self.checks else ""
            return f"WARNING: the network watch stopped after {self.checks} checks ({self.failure}){seen}"
        return (
            f"network: in {self.checks} checks, one every {self.interval:g} s, every process of this consortium "
            f"listened on {LOOPBACK} only ({len(self.seen)} addresses, TCP and UDP; a socket open between two checks "
            "is not seen)"
        )


def listens_on(proc: Started, port: int) -> bool:
    """Whether ``proc`` or one of its descendants listens on ``LOOPBACK:port`` (from /proc: a
    connection test would also succeed when another process holds the port)."""
    return f"{LOOPBACK}:{port}" in listening_sockets(process_tree([proc.popen.pid]))


def address_in_use(proc: Started) -> str | None:
    """The line of ``proc``'s log (since it started) saying an address was in use, once ``proc`` has
    exited; None while it runs, or when it exited for another reason.

    Flower 1.41's SuperLink and SuperNode both log uvicorn's ``[Errno 98] error while attempting to
    bind on address ('127.0.0.1', PORT): address already in use`` and exit 1 when their HTTP port is
    taken; neither retries.
    """
    if proc.popen.poll() is None:
        return None
    proc.log_copied()
    try:
        with proc.log_path.open("rb") as f:
            f.seek(proc.log_offset)
            said = f.read().decode(errors="replace")
    except OSError:
        return None
    return next((line.strip() for line in said.splitlines() if "address already in use" in line.lower()), None)


def tail(path: Path, lines: int = 60) -> str:
    try:
        text = path.read_text(errors="replace").splitlines()
    except OSError:
        return "(no log)"
    return "\n".join(text[-lines:])


# ----------------------------------------------------------------------------- processes
@dataclass
class Started:
    name: str
    popen: subprocess.Popen
    log_path: Path
    log_file: IO[bytes]
    role: str  # superlink | superexec | supernode | cli | doomed (expected to exit by itself)
    log_offset: int = 0  # size of the log when this process started (a restarted process appends)
    copier: threading.Thread | None = None  # copies its output (and its descendants') to the log

    def log_copied(self, timeout: float = 5.0) -> bool:
        """Wait until everything the process wrote is in its log (its output ended: it and every descendant
        holding it have exited), for at most ``timeout`` seconds; whether it is."""
        if self.copier is not None:
            self.copier.join(timeout)
        return self.copier is None or not self.copier.is_alive()

    def close_log(self) -> None:
        """Close the log once the output is copied (or after the wait of :meth:`log_copied`)."""
        self.log_copied()
        self.log_file.close()


@dataclass
class Deployment:
    """Starts Flower processes on loopback, tracks their trees, stops them all."""

    root: Path
    env: dict[str, str]
    started: list[Started] = field(default_factory=list)
    seen: dict[int, int] = field(default_factory=dict)  # pid -> start time of every descendant ever seen
    stopped: bool = False

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    def start(self, name: str, argv: list[str], role: str, env: dict[str, str] | None = None) -> Started:
        self.logs.mkdir(parents=True, exist_ok=True)
        log_path = self.logs / f"{name}.log"
        # a restarted process appends; a repeated command keeps every output.  Owner-only, as is every file the
        # process creates (umask 077): the SuperLink's database holds the runs' messages, a party's log its notes
        log_file = open_log(log_path, "ab")
        log_offset = os.fstat(log_file.fileno()).st_size  # (an O_APPEND file's position is 0 until written)
        popen = subprocess.Popen(
            argv,
            cwd=self.root,
            env=env or self.env,
            stdout=subprocess.PIPE,  # to the log through a copier: Flower colours its lines whatever they go to
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            umask=0o077,
        )
        copier = threading.Thread(target=_copy_plain, args=(popen.stdout, log_file), name=f"log {name}", daemon=True)
        copier.start()
        proc = Started(name, popen, log_path, log_file, role, log_offset, copier)
        self.started.append(proc)
        self.seen[popen.pid] = proc_stat(popen.pid)[1] if proc_stat(popen.pid) else 0
        return proc

    def forget(self, proc: Started) -> None:
        """Drop ``proc``, which has exited, from the started processes (its log stays; so does its pid
        among those :meth:`stop` checks), so that :meth:`check_alive` no longer counts it."""
        proc.popen.wait(timeout=GRACE)
        proc.close_log()
        self.started.remove(proc)

    def remember_tree(self) -> dict[int, int]:
        """Note every live descendant (SuperExec, ServerApp and ClientApp processes run detached), and every
        member of a running started process's group (a SuperNode's orphaned ClientApp stays in its group).
        Groups of leaders that have exited are not read: the leader's pid, hence the group id, may be reused."""
        running = [p.popen.pid for p in self.started if p.popen.poll() is None]
        tree = process_tree(running)
        tree.update(process_group(running))
        self.seen.update(tree)
        return tree

    def check_alive(self, roles: tuple[str, ...] = ("superlink", "superexec", "supernode")) -> None:
        dead = [
            f"{p.name} (exit {p.popen.returncode})"
            for p in self.started
            if p.role in roles and p.popen.poll() is not None
        ]
        if dead:
            raise FlowerProcessError(f"Flower processes exited early: {', '.join(dead)}")

    def wait_until(self, what: str, condition: Callable[[], bool], timeout: float, interval: float = 0.5) -> None:
        deadline = time.monotonic() + timeout
        while True:
            self.check_alive()
            self.remember_tree()
            if condition():
                return
            if time.monotonic() >= deadline:
                raise FlowerProcessError(f"timed out after {timeout:g} s waiting for {what}")
            time.sleep(interval)

    def wait_exit(self, proc: Started, timeout: float) -> int:
        """Exit code of a process expected to end by itself (bounded wait)."""
        try:
            return proc.popen.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise FlowerProcessError(f"{proc.name} still running after {timeout:g} s") from None

    def cli(self, name: str, args: list[str], timeout: float, env: dict[str, str] | None = None) -> tuple[int, str]:
        """Run a `flwr` command to completion (in its own process group), return (exit code, output)."""
        offset = (self.logs / f"{name}.log").stat().st_size if (self.logs / f"{name}.log").exists() else 0
        proc = self.start(name, [str(BIN / "flwr"), *args], role="cli", env=env)
        try:
            code = proc.popen.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            kill_group(proc.popen.pid)
            proc.popen.wait(timeout=GRACE)
            raise FlowerProcessError(f"`flwr {' '.join(args)}` did not finish within {timeout:g} s") from None
        finally:
            proc.close_log()
            self.started.remove(proc)
        with proc.log_path.open("rb") as f:
            f.seek(offset)
            return code, f.read().decode(errors="replace")

    def kill_tree(self, proc: Started) -> list[int]:
        """SIGKILL ``proc`` and every descendant at once (a crashed host); returns the pids killed."""
        tree = process_tree([proc.popen.pid])
        self.seen.update(tree)
        for pid in tree:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        proc.popen.wait(timeout=GRACE)
        deadline = time.monotonic() + GRACE
        while time.monotonic() < deadline and any(
            (s := proc_stat(pid)) is not None and s[1] == start for pid, start in tree.items()
        ):
            time.sleep(0.1)
        proc.close_log()
        self.started.remove(proc)
        return sorted(tree)

    def _terminate(self, procs: list[Started], group: bool = False) -> None:
        """SIGTERM each of ``procs`` (with ``group``, its whole process group), wait for each (not for the
        rest of its group) until the grace period ends, SIGKILL it then."""
        for p in procs:
            if p.popen.poll() is None:
                if group:
                    _signal_group(p.popen.pid, signal.SIGTERM)
                else:
                    p.popen.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + GRACE
        for p in procs:
            try:
                p.popen.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.popen.kill()
                p.popen.wait(timeout=5)

    def stop(self) -> None:
        """SIGTERM each SuperNode's process group, then SuperExecs and SuperLinks; SIGKILL whatever outlives the
        grace period.

        A SuperNode's group holds its SuperExec and ClientApps.  Flower 1.41 can leave a ``flwr-clientapp``
        blocked for a run stopped while its SuperNode was pulling the message (deploy/README.md section 10): it
        outlives its SuperNode (its parent watch raises a SIGINT its blocked main thread never handles) and
        ends only on a signal sent to it, as this SIGTERM to the group is (it exits within Flower's 5 s).
        """
        if self.stopped:
            return
        self.stopped = True
        signalled = set(self.remember_tree())
        groups = [p for p in self.started if p.role in ("supernode", "cli", "doomed")]
        self._terminate(groups, group=True)
        # a member started after that SIGTERM (a ClientApp launched as its SuperNode stopped): its own SIGTERM,
        # once (a second one would end a ClientApp already exiting without its exit handlers).  Read right after
        # the leaders exited: a group id is not reused while the group has a member
        for pid, start in process_group(p.popen.pid for p in groups).items():
            if pid not in signalled and (s := proc_stat(pid)) is not None and s[1] == start:
                self.seen[pid] = start
                try:
                    os.kill(pid, signal.SIGTERM)
                except (ProcessLookupError, PermissionError):
                    pass
        self.remember_tree()
        self._terminate([p for p in self.started if p.role == "superexec"])
        self._terminate([p for p in self.started if p.role == "superlink"])
        # detached children (SuperExec and the apps it spawned) watch their parent and exit by
        # themselves; give them the grace period, then kill what is left by pid and start time
        deadline = time.monotonic() + GRACE
        while time.monotonic() < deadline and self.leftovers():
            time.sleep(0.2)
        for pid in self.leftovers():
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        deadline = time.monotonic() + 1.0  # SIGKILL is delivered asynchronously: let the kernel finish them
        while time.monotonic() < deadline and self.leftovers():
            time.sleep(0.05)
        for p in self.started:
            kill_group(p.popen.pid)  # each was started as the leader of its own group
            p.close_log()

    def leftovers(self) -> list[int]:
        return [pid for pid, start in self.seen.items() if (s := proc_stat(pid)) is not None and s[1] == start]

    def print_logs(self, lines: int = 60) -> None:
        for path in sorted(self.logs.glob("*.log")):
            print(f"\n===== {path.name} (last {lines} lines) =====\n{tail(path, lines)}", flush=True)


def _copy_plain(output: IO[bytes], log: IO[bytes]) -> None:
    """Copy a process's ``output`` to its ``log`` line by line, without colour codes, until the output ends."""
    from edprf_fl import without_colour

    writing = True
    with output:  # drained to its end whatever happens to the log: a closed pipe would break the process's writes
        for line in iter(output.readline, b""):
            if not writing:
                continue
            try:
                log.write(without_colour(line))
                log.flush()
            except (OSError, ValueError):  # disk full, or the log closed when the wait for the copy ended
                writing = False


def kill_group(pgid: int) -> None:
    _signal_group(pgid, signal.SIGKILL)


def _signal_group(pgid: int, signum: int) -> None:
    try:
        os.killpg(pgid, signum)
    except (ProcessLookupError, PermissionError):
        pass


def open_log(path: Path, mode: str = "a", **kwargs: Any) -> IO:
    """``path`` opened for appending (``mode`` "a" or "ab"), readable by its owner only: created 0600, and an
    existing log (one an earlier version left readable by others) set to 0600."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.fchmod(fd, 0o600)
    return os.fdopen(fd, mode, **kwargs)


def flower_env(root: Path) -> dict[str, str]:
    """The environment of every Flower process: the venv first on PATH, homes under ``root``,
    no runtime package installation, no telemetry, no update check.

    Log level: ``FLWR_LOG_LEVEL`` as the caller's environment sets it, else ``DEBUG`` under ``edprf -vv``, else
    Flower's default (INFO).  The parties' and the coordinator's own lines follow it, so a trial can show a
    party's debug lines in its log (review rev-dpo D11: every ``FLWR_`` variable was dropped and ``-vv`` reached
    no child).  Any other ``FLWR_`` variable of the caller is dropped (its homes and settings are this
    deployment's own)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("FLWR_") and k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    level = os.environ.get("FLWR_LOG_LEVEL") or (
        "DEBUG" if logging.getLogger("edprf").isEnabledFor(logging.DEBUG) else ""
    )
    if level:
        env["FLWR_LOG_LEVEL"] = level
    env.update(
        {
            "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
            "FLWR_HOME": str(root / "flwr-home" / "cli"),
            "FLWR_DISABLE_RUNTIME_DEPENDENCY_INSTALLATION": "1",
            **FLOWER_QUIET_ENVIRONMENT,
            "PYTHONUNBUFFERED": "1",
        }
    )
    return env


def missing_flower_tools() -> list[str]:
    """Flower's commands missing next to this Python."""
    return [tool for tool in FLOWER_TOOLS if not (BIN / tool).is_file()]


# ----------------------------------------------------------------------------- a federation
@dataclass(frozen=True)
class Tls:
    """Files of a TLS deployment (as written by ``edprf certs``)."""

    ca_cert: Path
    server_cert: Path
    server_key: Path


@dataclass
class Federation:
    """One SuperLink (optionally with TLS, SuperNode authentication and a separate SuperExec),
    the CLI connection to it, and SuperNodes, all on loopback under ``dep.root``.

    ``choose_port(used)`` picks each port (:func:`free_port` unless told otherwise); the port of a
    SuperLink or SuperNode is chosen again when another process takes it before Flower binds it.
    """

    dep: Deployment
    connection: str = "edprf-loopback"
    tls: Tls | None = None
    supernode_auth: bool = False
    separate_superexec: bool = False  # --isolation process + flower-superexec with a shared secret
    used_ports: set[int] = field(default_factory=set)
    port: int = 0
    superlink: Started | None = None
    choose_port: Callable[[set[int]], int] = free_port
    dials: dict[str, int] = field(default_factory=dict)  # SuperNode name -> the port it dials (SuperLink, gateway)

    @property
    def home(self) -> Path:
        return Path(self.dep.env["FLWR_HOME"]).parent

    def _tls_client_args(self) -> list[str]:
        return ["--insecure"] if self.tls is None else ["--root-certificates", str(self.tls.ca_cert)]

    def start_superlink(self, database: Path, name: str = "superlink") -> Started:
        """Start (or restart, same port and database) the SuperLink; wait until it listens on its port.

        A first start chooses the port (``self.port`` is 0) and chooses again when another process
        takes it first; a restart keeps ``self.port``, which the SuperNodes dial, even when it is taken.

        Raises
        ------
        FlowerProcessError
            The SuperLink exited, or did not listen in time; its fixed port was in use; or every one of
            :data:`PORT_ATTEMPTS` freshly chosen ports was.
        """
        fixed = self.port or None
        self.superlink, self.port = self._start_listening(
            name, lambda port: self._launch_superlink(database, name, port), fixed=fixed
        )
        if self.separate_superexec:
            self.dep.start(
                f"{name}-superexec",
                [
                    str(BIN / "flower-superexec"),
                    *self._tls_client_args(),
                    "--runtime-api-address",
                    f"{LOOPBACK}:{self.port}",
                    "--superexec-auth-secret-file",
                    str(self.home / "superexec.secret"),
                ],
                role="superexec",
                env={**self.dep.env, "FLWR_HOME": str(self.home / "superexec")},
            )
        return self.superlink

    def _launch_superlink(self, database: Path, name: str, port: int) -> Started:
        """``flower-superlink`` on ``LOOPBACK:port`` (not waited for)."""
        if self.tls is None:
            security = ["--insecure"]
        else:
            security = [
                "--ssl-ca-certfile",
                str(self.tls.ca_cert),
                "--ssl-certfile",
                str(self.tls.server_cert),
                "--ssl-keyfile",
                str(self.tls.server_key),
            ]
        if self.supernode_auth:
            security.append("--enable-supernode-auth")
        # 1.41 serves the Fleet, Control and Runtime APIs on this one HTTP port and opens no other listener
        # (checked: the deprecated --fleet-api-address and --control-api-address are not needed to keep it
        # on loopback, and passing them only logged two deprecation warnings); the consortium's network
        # check confirms every listener is on loopback at each run
        return self.dep.start(
            name,
            [
                str(BIN / "flower-superlink"),
                *security,
                *self._isolation_args(),
                "--host",
                LOOPBACK,
                "--port",
                str(port),
                "--database",
                str(database),
                "--disable-runtime-dependency-installation",
            ],
            role="superlink",
            env={**self.dep.env, "FLWR_HOME": str(self.home / "superlink")},
        )

    def _isolation_args(self) -> list[str]:
        """``--isolation process`` and the SuperExec's shared secret (written once, owner-only), or nothing."""
        if not self.separate_superexec:
            return []
        secret = self.home / "superexec.secret"
        if not secret.exists():
            secret.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            fd = os.open(secret, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)  # never readable by others
            with os.fdopen(fd, "wb") as handle:
                handle.write(os.urandom(32).hex().encode())
        return ["--isolation", "process", "--superexec-auth-secret-file", str(secret)]

    def _start_listening(
        self, name: str, launch: Callable[[int], Started], fixed: int | None = None
    ) -> tuple[Started, int]:
        """``launch(port)`` and wait until the process listens on the port; returns it and the port.

        Without ``fixed``, the port is chosen by ``choose_port`` and chosen again, up to
        :data:`PORT_ATTEMPTS` times, when the process exits because another process took it first
        (each such port is logged).  A process on the ``fixed`` port is never moved to another.

        Raises
        ------
        FlowerProcessError
            The process exited for another reason or did not listen in time (the message of
            :meth:`Deployment.wait_until`), its ``fixed`` port was in use, or every chosen port was.
        """
        tried = []
        for attempt in range(1, PORT_ATTEMPTS + 1):
            port = fixed or self.choose_port(self.used_ports)
            proc = launch(port)
            said = self._wait_listening(proc, port)
            if said is None:
                return proc, port
            if fixed:
                raise FlowerProcessError(
                    f"{name} could not listen on {LOOPBACK}:{port}, held by another process; a restart keeps its "
                    f"port (the SuperNodes dial it), so it was not moved to another one.  Flower said: {said}"
                )
            self.dep.forget(proc)
            tried.append(port)
            logging.getLogger("edprf").warning(
                "%s: port %s:%d was taken by another process before it could bind it (attempt %d of %d)%s; "
                "Flower said: %s",
                name,
                LOOPBACK,
                port,
                attempt,
                PORT_ATTEMPTS,
                ", starting it again on a new port" if attempt < PORT_ATTEMPTS else "",
                said,
            )
        raise FlowerProcessError(
            f"{name}: each of the {PORT_ATTEMPTS} ports chosen for it ({', '.join(map(str, tried))}) was taken by "
            f"another process before it could bind it.  Flower said: {said}"
        )

    def _wait_listening(self, proc: Started, port: int) -> str | None:
        """Wait until ``proc`` listens on ``port`` (or, when it is expected to exit, until it exits).

        Returns None, or Flower's line saying the address was in use when it exited for that
        (:func:`address_in_use`).

        Raises
        ------
        FlowerProcessError
            It (or another Flower process) exited for another reason, or it did not listen in time.
        """
        try:
            self.dep.wait_until(
                f"{proc.name} to listen on {LOOPBACK}:{port}",
                lambda: proc.popen.poll() is not None or listens_on(proc, port),
                READY_TIMEOUT,
                interval=0.2,
            )
        except FlowerProcessError:
            said = address_in_use(proc)
            if said is None:
                raise
            return said
        said = address_in_use(proc)
        if said is None:
            self.dep.check_alive()  # exited between two checks: "exited early", unless expected to ("doomed")
        return said

    def write_cli_config(self, home: Path | None = None, port: int | None = None) -> dict[str, str]:
        """A `flwr` home whose default connection is this SuperLink (or ``port``); returns the env that uses it."""
        home = home or Path(self.dep.env["FLWR_HOME"])
        home.mkdir(parents=True, exist_ok=True)
        security = "insecure = true\n" if self.tls is None else f'root-certificates = "{self.tls.ca_cert}"\n'
        (home / "config.toml").write_text(
            f'[superlink]\ndefault = "{self.connection}"\n\n'
            f'[superlink.{self.connection}]\naddress = "{LOOPBACK}:{port or self.port}"\n{security}',
            encoding="utf-8",
        )
        return {**self.dep.env, "FLWR_HOME": str(home)}

    def start_supernode(
        self,
        name: str,
        config: str,
        *,
        auth_key: Path | None = None,
        ca_cert: Path | None = None,
        role: str = "supernode",
        env: dict[str, str] | None = None,
        via: int | None = None,
        extra: list[str] = (),
    ) -> Started:
        """A SuperNode with its own Runtime API port on loopback and its own Flower home; it dials the
        SuperLink, or the port ``via`` (a gateway).  Returns once it listens on its port (or, ``role``
        "doomed", has exited); started again on a new port when another process took the chosen one.

        Raises
        ------
        FlowerProcessError
            It exited (unless "doomed") or did not listen in time, or each chosen port was taken.
        """
        tls = ["--insecure"] if self.tls is None else ["--root-certificates", str(ca_cert or self.tls.ca_cert)]
        auth = ["--auth-supernode-private-key", str(auth_key)] if auth_key else []

        self.dials[name] = via or self.port

        def launch(port: int) -> Started:
            return self.dep.start(
                name,
                [
                    str(BIN / "flower-supernode"),
                    *tls,
                    *auth,
                    "--superlink",
                    f"{LOOPBACK}:{via or self.port}",
                    "--host",
                    LOOPBACK,
                    "--port",
                    str(port),
                    "--node-config",
                    config,
                    *extra,
                ],
                role=role,
                env={**(env or self.dep.env), "FLWR_HOME": str(self.home / name)},
            )

        return self._start_listening(name, launch)[0]

    def flwr(self, name: str, args: list[str], timeout: float = 30.0) -> tuple[int, str]:
        return self.dep.cli(name, args, timeout=timeout)

    def register(self, public_key: Path) -> int:
        """`flwr supernode register`; returns the node id."""
        code, out = self.flwr(
            f"register-{public_key.name}",
            ["supernode", "register", str(public_key), self.connection, "--format", "json"],
        )
        return int(json_result(code, out, f"flwr supernode register {public_key}")["node-id"])

    def nodes(self) -> list[dict]:
        code, out = self.flwr("supernode-ls", ["supernode", "ls", self.connection, "--format", "json"], timeout=20)
        try:
            return list(json_result(code, out, "flwr supernode ls")["nodes"])
        except (FlowerProcessError, KeyError):
            return []

    def wait_online(self, count: int, timeout: float = READY_TIMEOUT) -> list[dict]:
        """Wait until `flwr supernode ls` lists ``count`` SuperNodes online; returns them.

        Each `flwr supernode ls` is a Python process of about 2 s of CPU, which SuperNodes still starting
        on a small host compete with; so it is first asked once ``count`` of this federation's SuperNodes
        hold a connection to the port they dial (read from ``/proc``, :meth:`_wait_connected`), then every
        second as before.

        Raises
        ------
        FlowerProcessError
            A Flower process exited, or ``count`` SuperNodes were not online within ``timeout`` seconds.
        """
        t0 = time.monotonic()
        self._wait_connected(count, timeout)
        found: list[dict] = []

        def online() -> bool:
            found[:] = [n for n in self.nodes() if n.get("status") == "online"]
            return len(found) >= count

        left = max(timeout - (time.monotonic() - t0), 1.0)
        self.dep.wait_until(f"{count} SuperNodes online", online, left, interval=1.0)
        return found

    def _wait_connected(self, count: int, timeout: float) -> None:
        """Wait, reading ``/proc`` only, until ``count`` running SuperNodes of this federation each hold an
        established connection to the port they dial.  Returns at once when fewer than ``count`` run (some
        SuperNodes were started otherwise, or one exited: the `ls` polling then decides and reports), and
        after ``timeout`` whatever it saw: this wait only saves work, it never fails a wait."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            nodes = [
                p for p in self.dep.started if p.role == "supernode" and p.name in self.dials and p.popen.poll() is None
            ]
            if len(nodes) < count:
                return
            held = {p.name: _socket_inodes([p.popen.pid]) for p in nodes}  # its own sockets
            peers = _loopback_peers(set().union(*held.values()))  # the tables read once for every node
            connected = sum(any(peers.get(i) == self.dials[name] for i in inodes) for name, inodes in held.items())
            if connected >= count:
                return
            time.sleep(0.2)

    def assert_loopback_only(self) -> list[str]:
        tree = self.dep.remember_tree()
        listeners = listening_sockets(list(tree), udp=True)
        if not listeners:
            raise FlowerProcessError("no listening sockets found for the Flower processes")
        if not all(a.startswith(f"{LOOPBACK}:") for a in listeners):
            raise FlowerProcessError(f"a listener is not on {LOOPBACK}: {listeners}")
        return listeners


def json_in(output: str) -> dict:
    """The JSON object in a `flwr ... --format json` output (after any log lines)."""
    return json.loads(output[output.index("{") : output.rindex("}") + 1])


def json_result(code: int, output: str, what: str) -> dict:
    """The JSON object of a `flwr ... --format json` command that succeeded.

    Flower 1.41 exits 0 in JSON mode even when the command failed (the SuperLink is not listening
    yet, a key is refused): the object then holds ``"success": false`` and an ``"error-message"``.
    So the exit code alone cannot tell success; this reads both.

    Raises
    ------
    FlowerProcessError
        The command exited non-zero, printed no JSON object, or reported ``"success": false``;
        the message names ``what`` and carries Flower's own text.
    """
    try:
        payload = json_in(output)
    except ValueError:
        payload = None
    if code != 0 or not isinstance(payload, dict) or payload.get("success") is False:
        said = payload.get("error-message") if isinstance(payload, dict) else None
        raise FlowerProcessError(f"{what} failed (exit {code}):\n{said or output.strip()}")
    return payload
