"""Deployment on loopback (issue 4): a real SuperLink, three SuperNodes and two `flwr run`s.

Everything listens on 127.0.0.1 only, in insecure mode, with every file (Flower homes,
SuperLink database, party data, policies, ledgers, outputs, logs) under ``tmp_path``.

Run 1: parties A, B, C each release 2 trees at ε 1.0 and answer a noised evaluation at
ε 0.1; the coordinator saves a 6-tree model.  Party C's lifetime cap is 1.1, so in run 2
it refuses with ``budget_exhausted`` and spends nothing; A and B release again and the
model has 4 trees.

Every process started here is stopped here: SIGTERM to the SuperNodes, then to the
SuperLink, SIGKILL after a grace period to whatever is left of their process trees and
process groups.  Logs go to ``tmp_path/logs``; their tails are printed on failure.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import numpy as np
import pytest

from client import BudgetLedger, PartyPolicy
from edprf_core import load_embedded
from protocol import load_global_model

pytestmark = [pytest.mark.deployment, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
LOOPBACK = "127.0.0.1"
CONNECTION = "edprf-loopback"

RELEASE_EPSILON = 1.0
EVALUATION_EPSILON = 0.1
TREES_PER_PARTY = 2
# lifetime caps: A and B can serve two runs (2 x (1.0 + 0.1)), C exactly one
PARTIES = {"party-a": 2.2, "party-b": 2.2, "party-c": 1.1}

READY_TIMEOUT = 60.0  # SuperLink port open, SuperNodes online
RUN_TIMEOUT = 240.0  # one `flwr run --stream`
GRACE = 15.0  # SIGTERM -> SIGKILL


# --------------------------------------------------------------------------- processes
def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((LOOPBACK, 0))
        return s.getsockname()[1]


def _port_open(port: int) -> bool:
    try:
        with socket.create_connection((LOOPBACK, port), timeout=0.5):
            return True
    except OSError:
        return False


def _proc_stat(pid: int) -> tuple[int, int] | None:
    """(parent pid, start time in clock ticks) of a live process, from /proc."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    rest = text.rsplit(")", 1)[1].split()  # the command name may hold spaces and parentheses
    if rest[0] == "Z":
        return None
    return int(rest[1]), int(rest[19])


def _process_tree(roots: list[int]) -> dict[int, int]:
    """Every live process descending from ``roots`` (roots included): pid -> start time."""
    parents: dict[int, list[int]] = {}
    starts: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            stat = _proc_stat(int(entry.name))
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


def _listening_sockets(pids: list[int]) -> list[str]:
    """Local addresses (``ip:port``) of the TCP sockets in LISTEN state held by ``pids``."""
    inodes = set()
    for pid in pids:
        try:
            for fd in Path(f"/proc/{pid}/fd").iterdir():
                target = os.readlink(fd)
                if target.startswith("socket:["):
                    inodes.add(target[8:-1])
        except OSError:
            continue
    found = []
    for table, v6 in (("/proc/net/tcp", False), ("/proc/net/tcp6", True)):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            cols = line.split()
            if cols[3] != "0A" or cols[9] not in inodes:  # 0A = LISTEN
                continue
            hex_ip, hex_port = cols[1].split(":")
            raw = bytes.fromhex(hex_ip)
            if v6:  # four little-endian 32-bit words
                raw = b"".join(raw[i:i + 4][::-1] for i in range(0, 16, 4))
                ip = socket.inet_ntop(socket.AF_INET6, raw)
            else:
                ip = socket.inet_ntop(socket.AF_INET, raw[::-1])
            found.append(f"{ip}:{int(hex_port, 16)}")
    return found


def _tail(path: Path, lines: int = 60) -> str:
    try:
        text = path.read_text(errors="replace").splitlines()
    except OSError:
        return "(no log)"
    return "\n".join(text[-lines:])


@dataclass
class _Started:
    name: str
    popen: subprocess.Popen
    log_path: Path
    log_file: IO[bytes]
    role: str  # superlink | supernode | cli


@dataclass
class Deployment:
    """Starts Flower processes on loopback, tracks their trees, stops them all."""

    root: Path
    env: dict[str, str]
    started: list[_Started] = field(default_factory=list)
    seen: dict[int, int] = field(default_factory=dict)  # pid -> start time of every descendant ever seen
    stopped: bool = False

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    def start(self, name: str, argv: list[str], role: str, env: dict[str, str] | None = None) -> _Started:
        self.logs.mkdir(parents=True, exist_ok=True)
        log_path = self.logs / f"{name}.log"
        log_file = log_path.open("wb")  # a repeated command (supernode ls) keeps its last output
        popen = subprocess.Popen(argv, cwd=self.root, env=env or self.env, stdout=log_file, stderr=subprocess.STDOUT,
                                 stdin=subprocess.DEVNULL, start_new_session=True)
        proc = _Started(name, popen, log_path, log_file, role)
        self.started.append(proc)
        return proc

    def remember_tree(self) -> dict[int, int]:
        """Note every live descendant (SuperExec, ServerApp, ClientApp processes run detached)."""
        tree = _process_tree([p.popen.pid for p in self.started if p.popen.poll() is None])
        self.seen.update(tree)
        return tree

    def check_alive(self, roles: tuple[str, ...] = ("superlink", "supernode")) -> None:
        dead = [f"{p.name} (exit {p.popen.returncode})" for p in self.started
                if p.role in roles and p.popen.poll() is not None]
        if dead:
            raise AssertionError(f"Flower processes exited early: {', '.join(dead)}")

    def wait_until(self, what: str, condition: Callable[[], bool], timeout: float, interval: float = 0.5) -> None:
        deadline = time.monotonic() + timeout
        while True:
            self.check_alive()
            if condition():
                return
            if time.monotonic() >= deadline:
                raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
            time.sleep(interval)

    def cli(self, name: str, args: list[str], timeout: float) -> tuple[int, str]:
        """Run a `flwr` command to completion (in its own process group), return (exit code, output)."""
        proc = self.start(name, [str(BIN / "flwr"), *args], role="cli")
        try:
            code = proc.popen.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self._kill_group(proc.popen.pid)
            proc.popen.wait(timeout=GRACE)
            raise AssertionError(f"`flwr {' '.join(args)}` did not finish within {timeout:g} s") from None
        finally:
            proc.log_file.close()
            self.started.remove(proc)
        return code, proc.log_path.read_text(errors="replace")

    @staticmethod
    def _kill_group(pgid: int) -> None:
        try:
            os.killpg(pgid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass

    def _terminate(self, procs: list[_Started]) -> None:
        for p in procs:
            if p.popen.poll() is None:
                p.popen.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + GRACE
        for p in procs:
            try:
                p.popen.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.popen.kill()
                p.popen.wait(timeout=5)

    def stop(self) -> None:
        """SIGTERM SuperNodes, then the SuperLink; SIGKILL whatever of theirs outlives the grace period."""
        if self.stopped:
            return
        self.stopped = True
        self.remember_tree()
        self._terminate([p for p in self.started if p.role in ("supernode", "cli")])
        self.remember_tree()
        self._terminate([p for p in self.started if p.role == "superlink"])
        # detached children (SuperExec and the apps it spawned) watch their parent and exit by
        # themselves; give them the grace period, then kill what is left by pid and start time
        deadline = time.monotonic() + GRACE
        while time.monotonic() < deadline and self._leftovers():
            time.sleep(0.2)
        for pid in self._leftovers():
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        for p in self.started:
            self._kill_group(p.popen.pid)  # each was started as the leader of its own group
            p.log_file.close()

    def _leftovers(self) -> list[int]:
        return [pid for pid, start in self.seen.items() if (s := _proc_stat(pid)) is not None and s[1] == start]

    def print_logs(self, lines: int = 60) -> None:
        for path in sorted(self.logs.glob("*.log")):
            print(f"\n===== {path.name} (last {lines} lines) =====\n{_tail(path, lines)}", flush=True)


# ------------------------------------------------------------------------------- parties
def _write_parties(root: Path) -> dict[str, dict[str, Path]]:
    """Three parties, each with its own schema copy, data partition, policy and (future) ledger."""
    X, y, schema = load_embedded("wall_robot_navigation")
    label = schema.label.column
    assert label == "Class"
    rows = np.random.default_rng(20240604).permutation(len(X))
    parties = {}
    for (party_id, cap), part in zip(PARTIES.items(), np.array_split(rows, len(PARTIES)), strict=True):
        d = root / party_id
        d.mkdir(parents=True)
        paths = {"data": d / "data.csv", "schema": d / "schema.toml", "policy": d / "policy.toml",
                 "ledger": d / "ledger.sqlite"}
        schema.save(paths["schema"])
        X.iloc[part].assign(**{label: y.iloc[part].to_numpy()}).to_csv(paths["data"], index=False)
        policy = PartyPolicy(party_id=party_id, schema_fingerprint=schema.fingerprint, lifetime_epsilon_cap=cap,
                             max_release_epsilon=RELEASE_EPSILON, max_evaluation_epsilon=EVALUATION_EPSILON,
                             max_depth=8, max_trees=10, allow_exact_metrics=False, allow_seeded_randomness=False)
        paths["policy"].write_text(policy.to_toml(), encoding="utf-8")
        parties[party_id] = paths
    coordinator = root / "coordinator"
    coordinator.mkdir()
    schema.save(coordinator / "schema.toml")
    return parties


def _node_config(paths: dict[str, Path]) -> str:
    # Flower parses "k=v k=v" pairs as TOML values: strings are quoted (literal strings here)
    for p in paths.values():
        assert not any(c in str(p) for c in " '\"="), f"path unsuitable for --node-config: {p}"
    return " ".join(f"{key}-path='{paths[key]}'" for key in ("data", "schema", "policy", "ledger"))


def _entries(paths: dict[str, Path], party_id: str) -> list:
    return BudgetLedger(paths["ledger"], PARTIES[party_id]).entries()


# ---------------------------------------------------------------------------------- test
@pytest.fixture
def deployment(tmp_path, request) -> Deployment:
    for tool in ("flower-superlink", "flower-supernode", "flwr"):
        if not (BIN / tool).is_file():
            pytest.skip(f"{tool} is not installed next to {sys.executable}")
    home = tmp_path / "flwr-home"
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("FLWR_") and k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    env.update({
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "FLWR_HOME": str(home / "cli"),
        "FLWR_DISABLE_RUNTIME_DEPENDENCY_INSTALLATION": "1",
        "FLWR_TELEMETRY_ENABLED": "0",
        "FLWR_DISABLE_UPDATE_CHECK": "1",
        "PYTHONUNBUFFERED": "1",
    })
    dep = Deployment(root=tmp_path, env=env)
    request.addfinalizer(dep.stop)
    return dep


def test_three_parties_on_loopback_two_runs_and_an_exhausted_budget(deployment: Deployment, tmp_path):
    pyproject = REPO / "pyproject.toml"
    pyproject_before = pyproject.read_bytes()
    t_start = time.monotonic()
    try:
        _scenario(deployment, tmp_path)
    except BaseException:
        deployment.stop()  # flushes the logs
        deployment.print_logs()
        raise
    finally:
        deployment.stop()
        pyproject_after = pyproject.read_bytes()
        if pyproject_after != pyproject_before:
            pyproject.write_bytes(pyproject_before)  # never leave the repository modified
        assert pyproject_after == pyproject_before, "flwr run modified the repository's pyproject.toml"
    leftovers = deployment._leftovers()
    assert leftovers == [], f"Flower processes still running after the test: {leftovers}"
    print(f"\ndeployment test: {time.monotonic() - t_start:.1f} s")


def _scenario(dep: Deployment, tmp_path: Path) -> None:
    parties = _write_parties(tmp_path / "parties")
    schema_path = tmp_path / "parties" / "coordinator" / "schema.toml"
    home = Path(dep.env["FLWR_HOME"]).parent

    # ---- SuperLink: one HTTP listener (Fleet, Control and Runtime APIs) on 127.0.0.1
    link_port = _free_port()
    # 1.41 no longer starts the gRPC Fleet/Control servers (only behind FLWR_INTERNAL_GRPC_*,
    # removed from the environment); the deprecated address flags are still pinned to
    # loopback so that no listener can ever default to 0.0.0.0
    legacy_fleet, legacy_control = _free_port(), _free_port()
    dep.start("superlink", [
        str(BIN / "flower-superlink"), "--insecure", "--host", LOOPBACK, "--port", str(link_port),
        "--fleet-api-address", f"{LOOPBACK}:{legacy_fleet}", "--control-api-address", f"{LOOPBACK}:{legacy_control}",
        "--database", str(tmp_path / "superlink.db"), "--disable-runtime-dependency-installation",
    ], role="superlink", env={**dep.env, "FLWR_HOME": str(home / "superlink")})
    dep.wait_until(f"the SuperLink on {LOOPBACK}:{link_port}", lambda: _port_open(link_port), READY_TIMEOUT)

    # ---- the CLI's connection to it
    cli_home = Path(dep.env["FLWR_HOME"])
    cli_home.mkdir(parents=True, exist_ok=True)
    (cli_home / "config.toml").write_text(
        f'[superlink]\ndefault = "{CONNECTION}"\n\n'
        f'[superlink.{CONNECTION}]\naddress = "{LOOPBACK}:{link_port}"\ninsecure = true\n', encoding="utf-8")

    # ---- three SuperNodes, each with its own Runtime API port on 127.0.0.1 and its own home
    used = {link_port, legacy_fleet, legacy_control}
    for party_id, paths in parties.items():
        port = _free_port()
        while port in used:
            port = _free_port()
        used.add(port)
        dep.start(party_id, [
            str(BIN / "flower-supernode"), "--insecure", "--superlink", f"{LOOPBACK}:{link_port}",
            "--host", LOOPBACK, "--port", str(port), "--node-config", _node_config(paths),
        ], role="supernode", env={**dep.env, "FLWR_HOME": str(home / party_id)})

    def online() -> bool:
        code, out = dep.cli("supernode-ls", ["supernode", "ls", CONNECTION, "--format", "json"], timeout=20)
        if code != 0:
            return False
        try:
            nodes = json.loads(out[out.index("{"):])["nodes"]
        except (ValueError, KeyError):
            return False
        return sum(n.get("status") == "online" for n in nodes) >= len(parties)

    dep.wait_until("three SuperNodes online", online, READY_TIMEOUT, interval=1.0)
    tree = dep.remember_tree()
    listeners = _listening_sockets(list(tree))
    assert listeners, "no listening sockets found for the Flower processes"
    assert all(a.startswith(f"{LOOPBACK}:") for a in listeners), f"a listener is not on {LOOPBACK}: {listeners}"

    # ---- run 1: all three parties release
    report1, view1 = _run(dep, "run-1", schema_path, tmp_path / "out1")
    assert report1["status"] == "completed", report1
    outcomes = report1["parties"]
    assert len(outcomes) == 3 and all(p["status"] == "accepted" and p["reason"] == "" for p in outcomes), outcomes
    node_of = {p["party_id"]: p["node_id"] for p in outcomes}
    assert sorted(node_of) == sorted(PARTIES)
    assert report1["n_trees"] == 3 * TREES_PER_PARTY
    assert view1.forest.n_trees == 3 * TREES_PER_PARTY and sorted(view1.parties) == sorted(PARTIES)
    assert view1.manifest["run_id"] == report1["run_id"] and view1.manifest["rejections"] == []
    assert all(r.params.epsilon == RELEASE_EPSILON for r in view1.releases)
    evaluation = report1["federated_evaluation"]
    assert evaluation["parties"] == 3 and evaluation["refused"] == [] and evaluation["noised"] is True
    ledgers1 = {}
    for party_id, paths in parties.items():
        entries = _entries(paths, party_id)
        assert [(e.kind, e.epsilon, e.state) for e in entries] == [
            ("release", RELEASE_EPSILON, "released"), ("evaluation", EVALUATION_EPSILON, "released")], entries
        assert all(e.run_id == report1["run_id"] for e in entries)
        ledgers1[party_id] = entries

    # ---- run 2: C's lifetime cap is spent, it refuses before computing anything
    report2, view2 = _run(dep, "run-2", schema_path, tmp_path / "out2")
    assert report2["status"] == "completed", report2
    assert report2["run_id"] != report1["run_id"]
    by_node = {p["node_id"]: p for p in report2["parties"]}
    assert sorted(by_node) == sorted(node_of.values()), "the SuperNodes changed between the runs"
    refused = by_node[node_of["party-c"]]
    assert refused["status"] == "refused" and refused["reason"] == "budget_exhausted", refused
    for party_id in ("party-a", "party-b"):
        p = by_node[node_of[party_id]]
        assert p["status"] == "accepted" and p["reason"] == "" and p["party_id"] == party_id and p["n_trees"] == TREES_PER_PARTY, p
    assert report2["n_trees"] == 2 * TREES_PER_PARTY
    assert view2.forest.n_trees == 2 * TREES_PER_PARTY and sorted(view2.parties) == ["party-a", "party-b"]
    assert [r["reason"] for r in view2.manifest["rejections"]] == ["budget_exhausted"]
    assert report2["federated_evaluation"]["parties"] == 2

    assert _entries(parties["party-c"], "party-c") == ledgers1["party-c"], "party C spent budget in run 2"
    for party_id in ("party-a", "party-b"):
        entries = _entries(parties[party_id], party_id)
        releases = [e for e in entries if e.kind == "release"]
        assert [(e.epsilon, e.state) for e in releases] == [(RELEASE_EPSILON, "released")] * 2, entries
        assert [e.run_id for e in releases] == [report1["run_id"], report2["run_id"]]
        assert [e.kind for e in entries].count("evaluation") == 2
        assert BudgetLedger(parties[party_id]["ledger"], PARTIES[party_id]).remaining() == pytest.approx(0.0)
    # the first run's model is untouched by the second
    assert load_global_model(tmp_path / "out1" / "global-model.edprf").forest.n_trees == 3 * TREES_PER_PARTY


def _run(dep: Deployment, name: str, schema_path: Path, out: Path):
    run_config = " ".join([
        f"schema-path='{schema_path}'", f"output-dir='{out}'", f"epsilon={RELEASE_EPSILON}",
        f"trees-per-party={TREES_PER_PARTY}", "max-depth=4", "min-parties=2",
        f"evaluation-epsilon={EVALUATION_EPSILON}", "round-timeout=120.0", "node-wait-timeout=60.0",
    ])
    t0 = time.monotonic()
    code, output = dep.cli(name, ["run", str(REPO), CONNECTION, "--stream", "--run-config", run_config],
                           timeout=RUN_TIMEOUT)
    dep.remember_tree()
    assert code == 0, f"flwr run exited with {code}:\n{output[-4000:]}"
    report_path = out / "report.json"
    # `--stream` returns when the run ends; the ServerApp saved the report before that
    dep.wait_until(f"{report_path}", report_path.is_file, 10.0)
    report = json.loads(report_path.read_text())
    model_path = out / "global-model.edprf"
    assert model_path.is_file(), report
    print(f"{name}: {time.monotonic() - t0:.1f} s, flwr run output {len(output)} chars", flush=True)
    return report, load_global_model(model_path)
