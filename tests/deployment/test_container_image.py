"""The container image of deploy/Dockerfile, built and run for real on 127.0.0.1.

The image comes from ``deploy/build-local-image.sh`` (no registry needed): a private Docker engine
with no bridge network (every container shares the host's network, so every service is bound to
127.0.0.1), a Debian base made with debootstrap, then ``docker build``.  It is reused when an image
was built from the same build context: its tag is ``edprf-fl:ctx-<SHA-256 of the files the build
reads>`` (the Dockerfile, its .dockerignore, the script and every file the .dockerignore admits).

From that image, as deploy/compose.yaml runs the coordinator and deploy/README.md runs a party:

- a SuperLink with TLS (certificates from ``edprf certs``), SuperNode authentication,
  ``--isolation process`` and a separate SuperExec container holding the shared secret;
- three demonstration parties laid out by ``deploy/make_demo_parties.py`` (data, policy, keys),
  each a SuperNode container with a read-only root filesystem and ``no-new-privileges``:
  ``hospital-a`` runs Flower's own ``flwr-clientapp``; ``hospital-b`` and ``hospital-c`` run the
  image's pinned launcher (``/opt/edprf/pinned/flwr-clientapp``, finding 10 of issue 13);
  ``hospital-b`` lists the hash of the bundle built from the image's ``/opt/edprf-app`` (which
  must equal the bundle of this repository: what a party builds from the source it reviewed),
  ``hospital-c`` only another release's hash;
- an operator container whose ``flwr`` registers the parties' keys and runs
  ``flwr run /opt/edprf-app`` (the runbook's command).

Checked: hospital-a and hospital-b contributed signed releases that the coordinator accepted, the
ServerApp (in the SuperExec container) wrote the model and report.json, the model's releases verify
against the parties' keys, both ledgers hold the release and the evaluation; hospital-c refused
the bundle (``client_error`` naming its hash, its ledger never created); nothing listens beyond
127.0.0.1; the launcher in the image is edprf_fl/_pinned_clientapp.py byte for byte.

Skips only when no Docker engine can start (dockerd missing, or failing: the reason and the last
lines of its log are in the skip message).  Every container it starts is removed, and the engine is
stopped if this test started it.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from edprf_fl.cli._certs import party_files
from edprf_fl.cli._main import main as edprf
from protocol import PartyKeyRegistry, SignatureStatus, load_global_model

from ._harness import (
    LOOPBACK,
    READY_TIMEOUT,
    RUN_TIMEOUT,
    FlowerProcessError,
    bundle_hash,
    free_port,
    json_result,
    listening_sockets,
    process_tree,
)
from .conftest import ledger_rows

pytestmark = [pytest.mark.deployment, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "deploy" / "build-local-image.sh"
STATE = Path(os.environ.get("EDPRF_DOCKER_STATE", "/tmp/edprf-docker"))
SOCK = f"unix://{STATE}/docker.sock"
BASE_TAG = os.environ.get("EDPRF_BASE_TAG", "edprf-local-base:bookworm")
IMAGE_REPO = "edprf-fl"
BUILD_TIMEOUT = 1800.0  # debootstrap and pip over a slow proxy
CONNECTION = "consortium"
PARTIES = ("hospital-a", "hospital-b", "hospital-c")
CONTRIBUTORS = ("hospital-a", "hospital-b")
CAUTIOUS = "hospital-c"  # trusts another release of the app only
PINNED = {"hospital-b": True, "hospital-c": False}  # party -> lists this bundle's hash
TREES = 2
STOP_GRACE = 15  # seconds `docker stop` waits before SIGKILL


# ----------------------------------------------------------------------------- engine and image
def _script(step: str, timeout: float, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["sh", str(SCRIPT), step],
        cwd=REPO,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def _tail(text: str, lines: int = 40) -> str:
    return "\n".join(text.splitlines()[-lines:])


@dataclass
class Engine:
    """The private Docker engine of deploy/build-local-image.sh, through a docker client."""

    client: str
    started_here: bool

    def __call__(self, *args: str, timeout: float = 120.0, check: bool = True) -> subprocess.CompletedProcess:
        done = subprocess.run(
            [self.client, "-H", SOCK, *args], capture_output=True, text=True, timeout=timeout, check=False
        )
        if check and done.returncode != 0:
            raise AssertionError(f"docker {' '.join(args)} failed ({done.returncode}):\n{done.stderr[-3000:]}")
        return done

    def has_image(self, tag: str) -> bool:
        return self("image", "inspect", tag, check=False).returncode == 0


def context_digest() -> str:
    """SHA-256 of what the image is built from: the Dockerfile, its .dockerignore, the build script
    and every file the .dockerignore admits (path and content of each)."""
    ignore = REPO / "deploy" / "Dockerfile.dockerignore"
    admitted = [
        line[1:].strip().rstrip("/") for line in ignore.read_text(encoding="utf-8").splitlines() if line.startswith("!")
    ]
    files = {REPO / "deploy" / "Dockerfile", ignore, SCRIPT}
    for name in admitted:
        path = REPO / name
        if path.is_dir():
            files.update(p for p in path.rglob("*") if p.is_file())
        else:
            files.add(path)
    digest = hashlib.sha256()
    for path in sorted(p for p in files if "__pycache__" not in p.parts and p.suffix != ".pyc"):
        digest.update(path.relative_to(REPO).as_posix().encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


_UNITS = {"B": 1, "kB": 1e3, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12}


def size_bytes(text: str) -> float:
    """Bytes of a size as docker writes and reads it (``1.376GB``, ``2GB``, ``0B``)."""
    text = text.strip()
    unit = text.lstrip("0123456789.")
    return float(text[: len(text) - len(unit)]) * _UNITS[unit]


#: What the build script keeps of the build cache after an image build (its setting, same default).
CACHE_KEEP = os.environ.get("EDPRF_BUILD_CACHE_KEEP", "2GB")


def keep_storage_bytes(text: str) -> float:
    """Bytes of a ``docker builder prune --keep-storage`` size: docker reads it in binary units (``2GB`` is
    2 GiB, go-units' RAMInBytes), while ``docker system df`` writes sizes in decimal ones (:func:`size_bytes`)."""
    text = text.strip()
    unit = text.lstrip("0123456789.")
    return float(text[: len(text) - len(unit)]) * 1024 ** "BKMGT".index(unit[:1].upper() or "B")


def build_cache_bytes(engine: Engine) -> float:
    """The size of the engine's build cache, from ``docker system df``."""
    rows = dict(
        line.split("\t")
        for line in engine("system", "df", "--format", "{{.Type}}\t{{.Size}}").stdout.splitlines()
        if "\t" in line
    )
    return size_bytes(rows["Build Cache"])


@pytest.fixture(scope="module")
def engine() -> Iterator[Engine]:
    client = shutil.which("docker")
    if shutil.which("dockerd") is None or client is None:
        pytest.skip("no Docker engine can start: dockerd/docker not installed (apt-get install docker.io)")
    running = subprocess.run([client, "-H", SOCK, "info"], capture_output=True, timeout=30, check=False)
    if running.returncode != 0:
        done = _script("engine", timeout=120)
        if done.returncode != 0:
            pytest.skip(
                f"no Docker engine can start: `deploy/build-local-image.sh engine` failed "
                f"({done.returncode}):\n{_tail(done.stdout + done.stderr, 20)}"
            )
    eng = Engine(client, started_here=running.returncode != 0)
    try:
        yield eng
    finally:
        if eng.started_here:
            stopped = _script("stop", timeout=120)
            assert stopped.returncode == 0, stopped.stdout + stopped.stderr


@pytest.fixture(scope="module")
def image(engine: Engine) -> str:
    """The image's tag: reused when built from the same context, else built by the script."""
    tag = f"{IMAGE_REPO}:ctx-{context_digest()[:16]}"
    if engine.has_image(tag):
        print(f"\nreusing {tag}", flush=True)
        return tag
    if shutil.which("debootstrap") is None and not engine.has_image(BASE_TAG):
        pytest.fail("debootstrap is not installed (apt-get install debootstrap): the base image cannot be made")
    timings = {}
    for step in ("base", "image"):
        if step == "base" and engine.has_image(BASE_TAG):
            continue
        t0 = time.monotonic()
        done = _script(step, timeout=BUILD_TIMEOUT, EDPRF_BASE_TAG=BASE_TAG, EDPRF_IMAGE_TAG=tag)
        timings[step] = time.monotonic() - t0
        assert done.returncode == 0, f"build-local-image.sh {step} failed:\n{_tail(done.stdout + done.stderr, 60)}"
    print(f"\nbuilt {tag}: " + ", ".join(f"{k} {v:.0f} s" for k, v in timings.items()), flush=True)
    if "image" in timings:  # the script bounds the build cache each build adds to
        cache = build_cache_bytes(engine)
        assert cache <= keep_storage_bytes(CACHE_KEEP), (
            f"the build cache holds {cache / 1e9:.2f} GB, expected at most {CACHE_KEEP} (binary: "
            f"{keep_storage_bytes(CACHE_KEEP) / 1e9:.2f} GB)"
        )
    # images of earlier contexts are never reused: free their space
    listed = engine("images", "--format", "{{.Repository}}:{{.Tag}}", IMAGE_REPO).stdout.split()
    stale = [t for t in listed if t.startswith(f"{IMAGE_REPO}:ctx-") and t != tag]
    if stale:
        engine("rmi", *stale, check=False)
    return tag


# ----------------------------------------------------------------------------- containers
@dataclass
class Containers:
    """Containers of one test: host network, the test's uid, ``root`` mounted at the same path."""

    engine: Engine
    image: str
    root: Path
    prefix: str = field(default_factory=lambda: f"edprf-test-{os.getpid()}-{time.monotonic_ns() % 10**9}")
    names: list[str] = field(default_factory=list)

    def run(self, name: str, argv: list[str], *, env: dict[str, str] | None = None, flags: tuple[str, ...] = ()) -> str:
        """Start ``argv`` in a new detached container; returns its full name."""
        full = f"{self.prefix}-{name}"
        env_flags = [f"--env={k}={v}" for k, v in (env or {}).items()]
        self.names.append(full)
        self.engine(
            "run",
            "--detach",
            f"--name={full}",
            f"--label=edprf-test={self.prefix}",
            "--network=host",
            f"--user={os.getuid()}:{os.getgid()}",
            f"--volume={self.root}:{self.root}",
            *flags,
            *env_flags,
            self.image,
            *argv,
        )
        return full

    def exec(self, name: str, argv: list[str], timeout: float = 60.0) -> tuple[int, str]:
        done = self.engine("exec", name, *argv, timeout=timeout, check=False)
        return done.returncode, done.stdout + done.stderr

    def running(self, name: str) -> bool:
        done = self.engine("inspect", "--format", "{{.State.Running}}", name, check=False)
        return done.stdout.strip() == "true"

    def pid(self, name: str) -> int:
        return int(self.engine("inspect", "--format", "{{.State.Pid}}", name).stdout.strip())

    def logs(self, name: str, lines: int = 60) -> str:
        done = self.engine("logs", "--tail", str(lines), name, check=False)
        return done.stdout + done.stderr

    def print_logs(self) -> None:
        for name in self.names:
            print(f"\n===== docker logs {name} =====\n{self.logs(name)}", flush=True)

    def remove_all(self) -> list[str]:
        """Stop SuperNodes first, then the rest (SIGTERM, SIGKILL after the grace period), remove
        every container of this test; returns the ones still listed afterwards."""
        label = f"label=edprf-test={self.prefix}"
        mine = self.engine("ps", "--all", "--quiet", "--filter", label, check=False).stdout.split()
        nodes = [n for n in self.names if "-hospital-" in n]
        coordinator = [n for n in self.names if n.endswith(("-superexec", "-superlink"))]
        for group in (nodes, coordinator):  # the cli container (`sleep`) is simply removed
            if group:
                self.engine("stop", f"--time={STOP_GRACE}", *group, timeout=STOP_GRACE + 60, check=False)
        if mine:
            self.engine("rm", "--force", "--volumes", *mine, timeout=120, check=False)
        return self.engine("ps", "--all", "--quiet", "--filter", label, check=False).stdout.split()


@pytest.fixture
def containers(engine: Engine, image: str, tmp_path: Path) -> Iterator[Containers]:
    box = Containers(engine, image, tmp_path)
    try:
        yield box
    finally:
        left = box.remove_all()
        assert left == [], f"containers left behind: {left}"


# ----------------------------------------------------------------------------- the federation
def _wait(what: str, condition, timeout: float, box: Containers, services: list[str]) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        dead = [s for s in services if not box.running(s)]
        if dead:
            raise AssertionError(f"containers exited early: {dead}\n" + "\n".join(box.logs(d) for d in dead))
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(1.0)


def _bundle_hash_in(box: Containers, cli: str) -> str:
    """SHA-256 of the app bundle `flwr run /opt/edprf-app` sends, computed inside the image."""
    program = (
        "import hashlib, pathlib, warnings; warnings.simplefilter('ignore'); "
        "from flwr.cli.build import build_fab_from_disk; "
        "print(hashlib.sha256(build_fab_from_disk(pathlib.Path('/opt/edprf-app'))).hexdigest())"
    )
    code, out = box.exec(cli, ["python", "-c", program])
    assert code == 0, out
    return out.strip().splitlines()[-1]


def test_the_image_runs_a_federation_on_loopback(containers: Containers, tmp_path: Path, capsys) -> None:
    t0 = time.monotonic()
    try:
        _federation(containers, tmp_path, capsys)
    except BaseException:
        containers.print_logs()
        raise
    print(f"container federation: {time.monotonic() - t0:.1f} s", flush=True)


def _federation(box: Containers, tmp_path: Path, capsys) -> None:
    local = tmp_path / "local"
    pki = local / "pki"
    # the runbook's files: the consortium PKI (edprf certs) and the demonstration parties
    assert edprf(["certs", "init", "--out", str(pki), "--ca-name", "edprf container test CA"]) == 0
    assert edprf(["certs", "server", "--out", str(pki), "--san", "IP:127.0.0.1"]) == 0
    made = subprocess.run(
        [sys.executable, str(REPO / "deploy" / "make_demo_parties.py"), "--local", str(local), *PARTIES],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert made.returncode == 0, made.stdout + made.stderr
    capsys.readouterr()
    coordinator = local / "coordinator"
    secret = local / "superexec.secret"
    secret.write_text(os.urandom(32).hex(), encoding="utf-8")
    secret.chmod(0o600)
    homes, out, ledgers = tmp_path / "flwr-home", tmp_path / "output", tmp_path / "ledgers"
    for d in (homes, out, ledgers):
        d.mkdir()

    used: set[int] = set()
    port = free_port(used)
    superlink = box.run(
        "superlink",
        [
            "flower-superlink",
            f"--ssl-ca-certfile={pki / 'ca.crt'}",
            f"--ssl-certfile={pki / 'server.pem'}",
            f"--ssl-keyfile={pki / 'server.key'}",
            "--enable-supernode-auth",
            "--isolation=process",
            f"--superexec-auth-secret-file={secret}",
            f"--host={LOOPBACK}",
            f"--port={port}",
            f"--database={tmp_path / 'superlink.db'}",
            "--disable-runtime-dependency-installation",
        ],
        env={"FLWR_HOME": str(homes / "superlink")},
        flags=("--security-opt=no-new-privileges:true",),
    )
    (homes / "cli").mkdir()
    (homes / "cli" / "config.toml").write_text(
        f'[superlink]\ndefault = "{CONNECTION}"\n\n[superlink.{CONNECTION}]\naddress = "{LOOPBACK}:{port}"\n'
        f'root-certificates = "{pki / "ca.crt"}"\n',
        encoding="utf-8",
    )
    cli = box.run("cli", ["sleep", "infinity"], env={"FLWR_HOME": str(homes / "cli")})
    superexec = box.run(
        "superexec",
        [
            "flower-superexec",
            f"--runtime-api-address={LOOPBACK}:{port}",
            f"--root-certificates={pki / 'ca.crt'}",
            f"--superexec-auth-secret-file={secret}",
        ],
        env={"FLWR_HOME": str(homes / "superexec")},
        flags=("--security-opt=no-new-privileges:true",),
    )
    services = [superlink, superexec, cli]

    def listed_nodes() -> list[dict] | None:
        """`flwr supernode ls`'s nodes, or None while the SuperLink does not answer (Flower's JSON
        mode exits 0 then too: json_result reads its "success")."""
        code, output = box.exec(cli, ["flwr", "supernode", "ls", CONNECTION, "--format", "json"], timeout=30)
        try:
            return list(json_result(code, output, "flwr supernode ls")["nodes"])
        except (FlowerProcessError, KeyError):
            return None

    def superlink_up() -> bool:
        return listed_nodes() is not None

    _wait("the SuperLink", superlink_up, READY_TIMEOUT, box, services)

    # the operator registers the parties' authentication keys
    node_of = {}
    for party in PARTIES:
        code, output = box.exec(
            cli,
            [
                "flwr",
                "supernode",
                "register",
                str(coordinator / "supernode-keys" / f"{party}.auth.key.pub"),
                CONNECTION,
                "--format",
                "json",
            ],
        )
        node_of[party] = int(json_result(code, output, f"registering {party}")["node-id"])

    # the pinned parties list the hash of the bundle built from the image's /opt/edprf-app
    bundle = _bundle_hash_in(box, cli)
    # a party builds the bundle from the source it reviewed: the same bytes as the image's
    assert bundle == bundle_hash(), "the image's /opt/edprf-app bundles differently from the repository"
    other_release = "0" * 64
    for party, trusts_this in PINNED.items():
        listed = [other_release, bundle] if trusts_this else [other_release]
        (local / "parties" / party / "trusted-apps.txt").write_text(
            "# reviewed releases\n" + "".join(f"{h}\n" for h in listed), encoding="utf-8"
        )

    for party in PARTIES:
        d = local / "parties" / party
        keys = party_files(d / "keys", party)
        config = (
            f"data-path='{d / 'data.csv'}' schema-path='{d / 'schema.toml'}' "
            f"policy-path='{d / 'policy.toml'}' ledger-path='{ledgers / party}.sqlite' "
            f"signing-key='{keys.signing_key}'"
        )
        env = {"FLWR_HOME": "/tmp/flwr-home"}  # on the tmpfs: the root filesystem is read-only
        if party in PINNED:
            env.update(
                {
                    "PATH": "/opt/edprf/pinned:/opt/edprf/bin:/usr/local/bin:/usr/bin:/bin",
                    "EDPRF_TRUSTED_APP_HASHES": str(d / "trusted-apps.txt"),
                }
            )
        services.append(
            box.run(
                party,
                [
                    "flower-supernode",
                    f"--superlink={LOOPBACK}:{port}",
                    f"--root-certificates={pki / 'ca.crt'}",
                    f"--auth-supernode-private-key={keys.auth_key}",
                    f"--host={LOOPBACK}",
                    f"--port={free_port(used)}",
                    f"--node-config={config}",
                ],
                env=env,
                flags=("--read-only", "--tmpfs=/tmp", "--tmpfs=/home/edprf", "--security-opt=no-new-privileges:true"),
            )
        )

    online: list[dict] = []

    def all_online() -> bool:
        online[:] = [n for n in listed_nodes() or [] if n.get("status") == "online"]
        return len(online) == len(PARTIES)

    _wait(f"{len(PARTIES)} SuperNodes online", all_online, READY_TIMEOUT, box, services)
    assert sorted(int(n["node-id"]) for n in online) == sorted(node_of.values())

    # every listener of every service (container processes are host processes) is on loopback
    listeners = listening_sockets(process_tree([box.pid(s) for s in services if s != cli]))
    assert f"{LOOPBACK}:{port}" in listeners, listeners
    assert all(a.startswith(f"{LOOPBACK}:") for a in listeners), f"a listener is not on {LOOPBACK}: {listeners}"

    run_config = " ".join(
        [
            f"schema-path='{coordinator / 'schema.toml'}'",
            f"keys-dir='{coordinator / 'party-keys'}'",
            f"output-dir='{out}'",
            f"test-data-path='{coordinator / 'test.csv'}'",
            "epsilon=1.0",
            f"n-trees={TREES}",
            "max-depth=4",
            "min-parties=2",
            f"expected-parties={len(PARTIES)}",
            "evaluation-epsilon=0.1",
            "evaluation-max-interval-width=1.0",
            "round-timeout=120.0",
        ]
    )
    t_run = time.monotonic()
    code, output = box.exec(
        cli, ["flwr", "run", "/opt/edprf-app", CONNECTION, "--stream", "--run-config", run_config], timeout=RUN_TIMEOUT
    )
    assert code == 0, output[-4000:]
    print(f"\nflwr run in the image: {time.monotonic() - t_run:.1f} s", flush=True)

    # the ServerApp (in the SuperExec container) wrote the report and the model
    report_path, model_path = out / "report.json", out / "global-model.edprf"
    _wait(str(report_path), report_path.is_file, 10.0, box, services)
    report = json.loads(report_path.read_text())
    assert report["status"] == "completed", report
    by_node = {int(p["node_id"]): p for p in report["parties"]}  # decimal strings (edprf-run-report/3)
    assert sorted(by_node) == sorted(node_of.values()), report["parties"]
    for party in CONTRIBUTORS:
        outcome = by_node[node_of[party]]
        assert outcome["party_id"] == party and outcome["status"] == "accepted" and outcome["signed"] is True, outcome
    cautious = by_node[node_of[CAUTIOUS]]
    assert cautious["status"] == "failed" and cautious["reason"] == "client_error", cautious
    assert "is not in the party's trusted list" in cautious["message"], cautious
    assert not (ledgers / f"{CAUTIOUS}.sqlite").exists(), "the refused bundle ran at the cautious party"

    assert model_path.is_file(), report
    keys = PartyKeyRegistry.from_directory(coordinator / "party-keys")
    model = load_global_model(model_path, keys)
    assert model.all_verified and sorted(model.parties) == sorted(CONTRIBUTORS)
    assert all(r.signature_status is SignatureStatus.VERIFIED for r in model.releases)
    assert model.forest.n_trees == len(CONTRIBUTORS) * TREES
    for party in CONTRIBUTORS:
        assert [r[1:4] for r in ledger_rows(ledgers / f"{party}.sqlite")] == [
            ("release", 1.0, "released"),
            ("evaluation", 0.1, "released"),
        ]

    # finding 10: the image carries the reviewed launcher unchanged
    code, output = box.exec(cli, ["sha256sum", "/opt/edprf/pinned/flwr-clientapp"])
    assert code == 0, output
    assert output.split()[0] == hashlib.sha256((REPO / "edprf_fl/_pinned_clientapp.py").read_bytes()).hexdigest()
