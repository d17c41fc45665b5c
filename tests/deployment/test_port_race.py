"""A port taken between :func:`free_port` and Flower binding it: the process is started again on a new port.

:func:`free_port` binds port 0, reads the number and closes its socket; another process may take the
port before the SuperLink or SuperNode binds it.  Flower 1.41's SuperLink and SuperNode then log
``[Errno 98] error while attempting to bind on address ('127.0.0.1', PORT): address already in use``
and exit 1 (neither retries).  :class:`Federation` starts such a process again on new ports, up to
``PORT_ATTEMPTS`` times, and says which port was taken.  Here the test holds a listening socket on the
port the chooser hands out first (the race, made certain):

- the SuperLink and a SuperNode come up on other ports, and the SuperNode gets online;
- a SuperNode whose every chosen port is taken fails after ``PORT_ATTEMPTS`` starts, naming the ports;
- a startup failure for another reason (a missing certificate or key) is not retried;
- a SuperLink restarted on its fixed port (the one its SuperNodes dial) is not moved when the port is taken.

Real Flower processes on 127.0.0.1 only.
"""

from __future__ import annotations

import logging
import socket
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from ._harness import (
    LOOPBACK,
    PORT_ATTEMPTS,
    Deployment,
    Federation,
    FlowerProcessError,
    Tls,
    command_line,
    free_port,
    listens_on,
    node_config,
    run_guarded,
    write_parties,
)

pytestmark = [pytest.mark.deployment, pytest.mark.slow]


@dataclass
class TakenFirst:
    """A port chooser (``Federation.choose_port``) that hands out the ``taken`` ports before free ones."""

    taken: list[int] = field(default_factory=list)
    asked: int = 0

    def __call__(self, used: set[int]) -> int:
        self.asked += 1
        if self.taken:
            port = self.taken.pop(0)
            used.add(port)
            return port
        return free_port(used)


@contextmanager
def held_port(port: int = 0) -> Iterator[int]:
    """A port on loopback held by a listening socket of this process (``port`` 0: any free one)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # also a port just left in TIME_WAIT
        s.bind((LOOPBACK, port))
        s.listen()
        yield s.getsockname()[1]


def _naming(port: int) -> list[str]:
    """Live processes whose command line names ``LOOPBACK:port`` (a SuperExec of a failed SuperLink would)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and f"{LOOPBACK}:{port}" in (cmd := command_line(int(entry.name))).split():
            found.append(cmd)
    return found


def _port_of(argv: list[str]) -> int:
    return int(argv[argv.index("--port") + 1])


def test_the_superlink_and_a_supernode_move_off_a_taken_port_and_the_federation_works(
    deployment: Deployment, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    dep = deployment
    parties, _ = write_parties(tmp_path / "parties", {"hospital-a": 5.0}, release_epsilon=1.0, evaluation_epsilon=0.1)
    with held_port() as link_taken, held_port() as node_taken:
        chooser = TakenFirst([link_taken])
        # insecure, the SuperLink starts its own SuperExec (before binding: the failed one starts one too)
        fed = Federation(dep, choose_port=chooser)

        def scenario() -> None:
            with caplog.at_level(logging.WARNING, logger="edprf"):
                fed.start_superlink(tmp_path / "superlink.db")
                fed.write_cli_config()
                chooser.taken.append(node_taken)
                node = fed.start_supernode("hospital-a", node_config(parties["hospital-a"]))
            assert fed.port not in (link_taken, node_taken) and listens_on(fed.superlink, fed.port)
            assert _port_of(node.popen.args) not in (link_taken, node_taken, fed.port)
            assert listens_on(node, _port_of(node.popen.args))
            assert len(fed.wait_online(1)) == 1
            fed.assert_loopback_only()
            for name, port in (("superlink", link_taken), ("hospital-a", node_taken)):
                log = (dep.logs / f"{name}.log").read_text(errors="replace")
                assert log.count("address already in use") == 1, log[-3000:]  # the first start's, appended
                assert f"{name}: port {LOOPBACK}:{port} was taken by another process" in caplog.text
            assert [p.name for p in dep.started if p.role in ("superlink", "supernode")] == ["superlink", "hospital-a"]

        run_guarded(dep, scenario)
        assert _naming(link_taken) == [], "a process of the SuperLink's failed start is still running"


def test_a_supernode_gives_up_after_every_chosen_port_was_taken(deployment: Deployment, tmp_path: Path) -> None:
    dep = deployment
    with ExitStack() as stack:
        taken = [stack.enter_context(held_port()) for _ in range(PORT_ATTEMPTS)]
        fed = Federation(dep, port=free_port(), choose_port=TakenFirst(list(taken)))  # no SuperLink: bound first

        def scenario() -> None:
            with pytest.raises(FlowerProcessError, match=f"each of the {PORT_ATTEMPTS} ports") as caught:
                fed.start_supernode("hospital-a", "party-id='hospital-a'")
            assert all(str(p) in str(caught.value) for p in taken), caught.value
            assert "address already in use" in str(caught.value)
            log = (dep.logs / "hospital-a.log").read_text(errors="replace")
            assert log.count("address already in use") == PORT_ATTEMPTS, log[-3000:]

        run_guarded(dep, scenario)


@pytest.mark.parametrize("process", ["superlink", "supernode"])
def test_another_startup_failure_is_not_retried(deployment: Deployment, tmp_path: Path, process: str) -> None:
    dep = deployment
    missing = tmp_path / "missing"
    chooser = TakenFirst()
    name = "superlink" if process == "superlink" else "hospital-a"

    def scenario() -> None:
        with pytest.raises(FlowerProcessError, match=rf"^Flower processes exited early: {name} \(exit"):
            if process == "superlink":  # TLS files that do not exist
                tls = Tls(missing / "ca.crt", missing / "server.pem", missing / "server.key")
                Federation(dep, tls=tls, choose_port=chooser).start_superlink(tmp_path / "superlink.db")
            else:  # an authentication key that does not exist
                fed = Federation(dep, port=free_port(), choose_port=chooser)
                fed.start_supernode(name, "party-id='hospital-a'", auth_key=missing / "auth.key")
        log = (dep.logs / f"{name}.log").read_text(errors="replace")
        assert "address already in use" not in log, log[-3000:]
        assert chooser.asked == 1, chooser.asked  # one start: its one port

    run_guarded(dep, scenario)


def test_a_restarted_superlink_keeps_its_port_even_when_it_is_taken(deployment: Deployment, tmp_path: Path) -> None:
    dep = deployment
    fed = Federation(dep)

    def scenario() -> None:
        fed.start_superlink(tmp_path / "superlink.db")
        port = fed.port
        dep.kill_tree(fed.superlink)
        with held_port(port), pytest.raises(FlowerProcessError, match="it was not moved to another one") as caught:
            fed.start_superlink(tmp_path / "superlink.db", name="superlink-restarted")
        assert f"{LOOPBACK}:{port}" in str(caught.value) and "address already in use" in str(caught.value)
        assert fed.port == port

    run_guarded(dep, scenario)
