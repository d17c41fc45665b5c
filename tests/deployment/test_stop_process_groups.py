""":meth:`Deployment.stop` ends the processes a SuperNode started, also once they are orphaned.

Flower 1.41's SuperNode (``--isolation subprocess``) starts ``flower-superexec`` and, through it, each
``flwr-clientapp`` without a new session: they share the SuperNode's process group.  A run stopped while
the SuperNode was pulling its message leaves a ``flwr-clientapp`` blocked in Flower's object pull (it waits
for objects the SuperNode never stores, and retries the Runtime API forever once the SuperNode is gone):
it outlives a SIGTERM to its SuperNode, reparented to init, and ends only on a signal sent to it
(deploy/README.md section 10).  Here stand-ins play the parts, no Flower process: a "SuperNode" that starts
a child in its own group and exits on SIGTERM, and a child that ignores its parent's end and exits only on
a SIGTERM of its own (noted in a file).  The stop must SIGTERM that child well before its grace period ends,
and also a child started as the "SuperNode" was being stopped.  A few seconds, no Flower process.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from edprf_fl.cli import _flower_processes
from edprf_fl.cli._flower_processes import Deployment, proc_stat

GRACE = 6.0  # the stop's grace period in these tests (15 s in production)

CHILD = """
import os, signal, sys, time
from pathlib import Path
marker = Path(sys.argv[1])
def on_term(signum, frame):
    marker.write_text("SIGTERM")
    sys.exit(0)
signal.signal(signal.SIGTERM, on_term)
Path(str(marker) + ".pid").write_text(str(os.getpid()))
while True:  # its parent's end changes nothing (a blocked flwr-clientapp)
    time.sleep(0.1)
"""

SUPERNODE = """
import signal, subprocess, sys, time
child, marker, late = sys.argv[1], sys.argv[2], sys.argv[3] == "late"
def start_child():
    subprocess.Popen([sys.executable, child, marker])  # no new session: the child shares this process group
def on_term(signum, frame):
    if late:  # a ClientApp launched just as the SuperNode stops
        start_child()
        time.sleep(1.0)  # let the child install its handler
    sys.exit(0)
signal.signal(signal.SIGTERM, on_term)
if not late:
    start_child()
while True:
    time.sleep(0.1)
"""


def _supernode(tmp_path: Path, late: bool) -> tuple[Deployment, Path]:
    (tmp_path / "child.py").write_text(CHILD)
    (tmp_path / "supernode.py").write_text(SUPERNODE)
    marker = tmp_path / "child.signal"
    dep = Deployment(root=tmp_path, env=dict(os.environ))
    dep.start(
        "supernode",
        [
            sys.executable,
            str(tmp_path / "supernode.py"),
            str(tmp_path / "child.py"),
            str(marker),
            "late" if late else "-",
        ],
        role="supernode",
    )
    return dep, marker


def _wait_for(path: Path, timeout: float = 20.0) -> str:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path.name} never written"
        time.sleep(0.05)
    time.sleep(0.05)  # written whole
    return path.read_text()


def _gone(pid: int) -> bool:
    return proc_stat(pid) is None


def test_stop_sigterms_a_supernodes_orphaned_child_at_once(tmp_path, monkeypatch):
    """The child survives its SuperNode's SIGTERM (as Flower's blocked ClientApp does); the stop's SIGTERM to the
    SuperNode's group reaches it: it exits on that signal, long before the grace period would SIGKILL it."""
    monkeypatch.setattr(_flower_processes, "GRACE", GRACE)
    dep, marker = _supernode(tmp_path, late=False)
    try:
        child = int(_wait_for(Path(f"{marker}.pid")))
        started = time.monotonic()
        dep.stop()
        took = time.monotonic() - started
    finally:
        dep.stop()
    assert marker.exists() and marker.read_text() == "SIGTERM", "the orphaned child never got a SIGTERM"
    assert took < GRACE, f"the stop waited {took:.1f} s: the child was only killed at the end of the grace period"
    assert _gone(child)
    assert dep.leftovers() == []


def test_stop_sigterms_a_child_started_as_its_supernode_stops(tmp_path, monkeypatch):
    """A child started after the group's SIGTERM (it missed that one) gets its own SIGTERM, and the stop returns
    only once it is gone: it is tracked though it was never a descendant the deployment had seen."""
    monkeypatch.setattr(_flower_processes, "GRACE", GRACE)
    dep, marker = _supernode(tmp_path, late=True)
    try:
        supernode = dep.started[0]
        deadline = time.monotonic() + 20
        while not (tmp_path / "logs" / "supernode.log").exists() or proc_stat(supernode.popen.pid) is None:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        time.sleep(0.5)  # its SIGTERM handler is installed
        dep.stop()
    finally:
        dep.stop()
    child = int(_wait_for(Path(f"{marker}.pid"), timeout=1.0))
    assert marker.exists() and marker.read_text() == "SIGTERM", "the late child never got a SIGTERM"
    assert _gone(child)
    assert dep.leftovers() == []
