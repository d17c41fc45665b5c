"""``edprf consortium`` watches every socket its processes bind during the run, not only at start.

Flower starts the ServerApp and ClientApp processes after the start-up check (``assert_loopback_only``) ran;
:class:`ListenerWatch` reads their TCP listeners and unconnected UDP sockets once a second while the run goes on,
descendants included.  Here a stand-in "SuperNode" (no Flower process) starts a child only after the watch began,
and the child binds a UDP socket: on ``127.0.0.2`` (still loopback, so the test opens nothing to the network, but
not the ``127.0.0.1`` the consortium promises), then, in the second test, on ``127.0.0.1`` only.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from edprf_fl.cli._flower_processes import Deployment, ListenerWatch

CHILD = """
import socket, sys, time
from pathlib import Path
tcp = socket.socket(); tcp.bind(("127.0.0.1", 0)); tcp.listen()
udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); udp.bind((sys.argv[1], 0))
Path(sys.argv[2]).write_text(f"{udp.getsockname()[1]}")
time.sleep(60)
"""

SUPERNODE = """
import subprocess, sys, time
time.sleep(0.5)  # after the watch's first check, as a ClientApp starts after the start-up check
subprocess.Popen([sys.executable, *sys.argv[1:]])
time.sleep(60)
"""


def _watched(tmp_path: Path, address: str) -> tuple[ListenerWatch, int]:
    (tmp_path / "child.py").write_text(CHILD)
    (tmp_path / "supernode.py").write_text(SUPERNODE)
    bound = tmp_path / "bound"
    dep = Deployment(root=tmp_path, env=dict(os.environ))
    dep.start(
        "supernode",
        [sys.executable, str(tmp_path / "supernode.py"), str(tmp_path / "child.py"), address, str(bound)],
        role="supernode",
    )
    try:
        with ListenerWatch(dep, interval=0.1) as watch:
            deadline = time.monotonic() + 20
            while not bound.exists() or not any(a.endswith("/udp") for a in watch.seen):
                assert time.monotonic() < deadline, "the child's socket was never seen"
                time.sleep(0.05)
        assert watch.checks >= 2
        return watch, int(bound.read_text())
    finally:
        dep.stop()


def test_a_socket_bound_beyond_127_0_0_1_after_the_start_is_reported(tmp_path):
    watch, port = _watched(tmp_path, "127.0.0.2")
    assert watch.exposed == [f"127.0.0.2:{port}/udp"]
    assert watch.summary().startswith("WARNING: a process of this consortium listened beyond 127.0.0.1")
    assert f"127.0.0.2:{port}/udp" in watch.summary()


def test_loopback_only_sockets_give_the_all_clear(tmp_path):
    watch, port = _watched(tmp_path, "127.0.0.1")
    assert watch.exposed == [] and f"127.0.0.1:{port}/udp" in watch.seen
    assert any(not a.endswith("/udp") for a in watch.seen)  # the TCP listener too
    assert watch.summary().startswith("network: in ") and "listened on 127.0.0.1 only" in watch.summary()


def test_a_watch_that_fails_says_so(tmp_path, monkeypatch):
    """Whole-change review: a watch thread that failed still printed the all-clear."""
    import edprf_fl.cli._flower_processes as processes

    def broken(*args, **kwargs):
        raise OSError("no /proc")

    monkeypatch.setattr(processes, "listening_sockets", broken)
    dep = Deployment(root=tmp_path, env=dict(os.environ))
    with ListenerWatch(dep, interval=0.05) as watch:
        time.sleep(0.2)
    assert watch.summary() == "WARNING: the network watch stopped after 0 checks (OSError: no /proc)"
