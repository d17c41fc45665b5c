"""Waiting for SuperNodes reads ``/proc`` before it asks Flower: :meth:`Federation.wait_online` runs `flwr
supernode ls` (a Python process of about 2 s of CPU) only once every SuperNode holds a connection to the port it
dials, so that fewer such processes compete with SuperNodes still starting.  The real wait runs in every
deployment test; these tests pin what it reads and that it never fails a wait by itself."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

from edprf_fl.cli._flower_processes import Deployment, Federation, loopback_connections


def test_an_established_loopback_connection_is_seen_by_its_remote_port_and_only_by_its_holder():
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        assert port not in loopback_connections([os.getpid()])  # listening is not connected
        with socket.create_connection(("127.0.0.1", port)) as client:
            accepted, _ = server.accept()
            with accepted:
                assert port in loopback_connections([os.getpid()])
                assert client.getsockname()[1] in loopback_connections([os.getpid()])  # the accepted end's peer
                assert loopback_connections([]) == set()
                other = subprocess.Popen(["sleep", "30"])
                try:
                    assert port not in loopback_connections([other.pid])
                finally:
                    other.kill()
                    other.wait()
        assert port not in loopback_connections([os.getpid()])


DIALER = """
import socket, sys, time
time.sleep(float(sys.argv[2]))
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
time.sleep(60)
"""


def test_the_wait_returns_once_every_supernode_is_connected_and_at_once_when_fewer_run(tmp_path):
    (tmp_path / "dialer.py").write_text(DIALER)
    dep = Deployment(root=tmp_path, env=dict(os.environ))
    fed = Federation(dep)
    with socket.socket() as superlink:
        superlink.bind(("127.0.0.1", 0))
        superlink.listen(8)
        port = superlink.getsockname()[1]
        try:
            for name, delay in (("node-a", "0.2"), ("node-b", "1.5")):
                fed.dials[name] = port
                dep.start(name, [sys.executable, str(tmp_path / "dialer.py"), str(port), delay], role="supernode")
            t0 = time.monotonic()
            fed._wait_connected(2, timeout=30)
            waited = time.monotonic() - t0
            pids = [p.popen.pid for p in dep.started]
            assert all(port in loopback_connections([pid]) for pid in pids)
            assert waited >= 1.0  # it waited for the later one (its start alone takes a Python start-up)
            t0 = time.monotonic()
            fed._wait_connected(3, timeout=30)  # three asked, two run: the `ls` polling decides
            assert time.monotonic() - t0 < 5
        finally:
            dep.stop()
