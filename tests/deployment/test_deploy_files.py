"""deploy/: compose files, Dockerfile and gateway, checked without Docker; with Docker where it works.

Without a Docker engine the compose files are checked as YAML, and every Flower command in them
is parsed by Flower 1.41's own argument parsers (a misspelt or removed flag fails here), its
``--node-config`` by Flower's parser and then by the party's :meth:`PartySetup.from_configs`.
``docker compose config`` and a bring-up run only where ``docker compose`` and a Docker engine are
available; otherwise those tests are skipped with the reason.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

from ._harness import REPO

DEPLOY = REPO / "deploy"
SECURE, INSECURE = DEPLOY / "compose.yaml", DEPLOY / "compose.insecure.yaml"
FLOWER_COMMANDS = ("flower-superlink", "flower-supernode", "flower-superexec")

pytestmark = pytest.mark.filterwarnings("ignore:'click.utils.get_:DeprecationWarning")  # typer, via flwr

yaml = pytest.importorskip("yaml", reason="PyYAML is not installed: the compose files are checked by docker only")


def _compose(path: Path) -> dict:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert isinstance(data, dict) and isinstance(data.get("services"), dict), path
    return data


def _flower_parser(command: str):
    if command == "flower-superlink":
        from flwr.superlink.cli.flower_superlink import _parse_args_run_superlink

        return _parse_args_run_superlink()
    if command == "flower-supernode":
        from flwr.supernode.cli.flower_supernode import _parse_args_run_supernode

        return _parse_args_run_supernode()
    from flwr.supercore.cli.flower_superexec import _parse_args

    return _parse_args()


def _parsed(service: dict):
    command = service["command"]
    assert isinstance(command, list) and command[0] in FLOWER_COMMANDS, command
    return _flower_parser(command[0]).parse_args(command[1:])


def _services_running(data: dict, command: str) -> dict[str, dict]:
    return {
        name: s
        for name, s in data["services"].items()
        if isinstance(s.get("command"), list) and s["command"] and s["command"][0] == command
    }


@pytest.mark.parametrize("path", [SECURE, INSECURE], ids=["secure", "insecure"])
def test_compose_files_parse_and_their_flower_commands_are_valid_for_flower_1_41(path):
    from flwr.common.config import parse_config_args

    from client import PartySetup

    data = _compose(path)
    for command in FLOWER_COMMANDS:
        assert _services_running(data, command), f"{path.name}: no service runs {command}"
    for name, service in data["services"].items():
        if service.get("command") and service["command"][0] in FLOWER_COMMANDS:
            args = _parsed(service)
            if service["command"][0] == "flower-supernode":
                node_config = parse_config_args([args.node_config])
                setup = PartySetup.from_configs(node_config, {})
                assert str(setup.ledger_path).startswith("/var/lib/edprf/"), (name, setup)
                assert str(setup.data_path).startswith("/party/"), (name, setup)
        for port in service.get("ports", []):
            assert str(port).startswith(("127.0.0.1:", "${EDPRF_FLEET_BIND:-127.0.0.1}:")), (name, port)


def test_secure_compose_has_tls_supernode_auth_and_keeps_parties_off_the_control_api():
    data = _compose(SECURE)
    assert "--insecure" not in SECURE.read_text(encoding="utf-8")
    ((link_name, link),) = _services_running(data, "flower-superlink").items()
    args = _parsed(link)
    assert args.ssl_ca_certfile and args.ssl_certfile and args.ssl_keyfile and not args.insecure
    assert args.enable_supernode_auth is True
    assert args.isolation == "process" and args.superexec_auth_secret_file
    assert args.runtime_dependency_install is False
    ((_, superexec),) = _services_running(data, "flower-superexec").items()
    sx = _parsed(superexec)
    assert sx.runtime_api_address == f"{link_name}:8000" and sx.root_certificates and not sx.insecure
    assert sx.superexec_auth_secret_file
    nodes = _services_running(data, "flower-supernode")
    assert len(nodes) >= 2
    for name, node in nodes.items():
        n = _parsed(node)
        assert n.superlink == "fleet-gateway:8443" and n.root_certificates and n.auth_supernode_private_key, name
        assert "signing-key=" in n.node_config, name
        assert name in n.auth_supernode_private_key and name in n.node_config, name
        assert node["networks"] == ["fleet"], f"{name} must not share a network with the SuperLink"
        assert node.get("read_only") is True
    assert link["networks"] == ["coordinator"] and "ports" not in link
    assert data["networks"]["coordinator"].get("internal") is True
    gateway = data["services"]["gateway"]
    assert set(gateway["networks"]) == {"coordinator", "fleet"}
    assert "fleet-gateway" in gateway["networks"]["fleet"]["aliases"]
    conf = (DEPLOY / "gateway" / "nginx.conf").read_text(encoding="utf-8")
    assert re.findall(r"location\s+(\S+)", conf) == ["/v1/fleet/", "/"]
    assert "return 403;" in conf and "proxy_ssl_verify on;" in conf and "listen 8443 ssl;" in conf
    cli_config = tomllib.loads((DEPLOY / "cli" / "flwr-config.toml").read_text(encoding="utf-8"))
    connection = cli_config["superlink"][cli_config["superlink"]["default"]]
    assert connection["address"] == f"{link_name}:8000" and connection["root-certificates"]
    assert set(data["secrets"]) == {"server-key", "superexec-secret"}


def test_insecure_compose_says_so_and_publishes_nothing():
    assert "insecure" in INSECURE.name
    header = INSECURE.read_text(encoding="utf-8").splitlines()[0]
    assert header.startswith("# INSECURE") and "local trials" in header
    data = _compose(INSECURE)
    assert all("ports" not in s for s in data["services"].values())
    assert all(net.get("internal") is True for net in data["networks"].values())


def test_dockerfile_installs_at_build_time_and_runs_as_a_non_root_user():
    text = (DEPLOY / "Dockerfile").read_text(encoding="utf-8")
    assert "ARG PYTHON_IMAGE=python:3.11-slim" in text and "FROM ${PYTHON_IMAGE}" in text
    runs = re.findall(r"^RUN (.*?)(?<!\\)$", text, flags=re.MULTILINE | re.DOTALL)
    # the image runs parties (Flower needed), with the verified versions, without Ray or matplotlib: every package
    # from the hash-checked lock (tests/test_deploy_lock.py checks its contents), the project without resolving
    assert any(
        "pip install --require-hashes --only-binary :all: --no-deps -r /src/deploy/requirements.lock" in r for r in runs
    )
    assert any("pip install --no-deps --no-build-isolation /src" in r and "pip check" in r for r in runs)
    assert "[federation]" not in " ".join(runs)
    users = re.findall(r"^USER (\S+)", text, flags=re.MULTILINE)
    assert users and users[-1].split(":")[0] not in ("root", "0")
    assert "FLWR_DISABLE_RUNTIME_DEPENDENCY_INSTALLATION=1" in text
    # the image holds every package setuptools installs, and nothing else of the repository
    copied = set(re.findall(r"^COPY (\w+) \./\1$", text, flags=re.MULTILINE))
    packages = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]["find"]["include"]
    assert copied == {p.rstrip("*") for p in packages}
    ignore = (DEPLOY / "Dockerfile.dockerignore").read_text().splitlines()
    assert ignore[ignore.index("*") + 1 :].count("!pyproject.toml") == 1
    assert {f"!{p}/" for p in copied} <= set(ignore)


def test_every_image_tag_the_deployment_names_is_the_project_version():
    """The compose files ran ``edprf-fl:0.1.0`` by default while the runbook built ``edprf-fl:0.2.1``: ``docker compose
    up`` after the documented build looked for an image nobody had built.  One version everywhere."""
    version = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    named = {
        path.name: set(re.findall(r"edprf-fl:(\d+\.\d+\.\d+)", path.read_text(encoding="utf-8")))
        for path in (SECURE, INSECURE, DEPLOY / "Dockerfile", DEPLOY / "README.md")
    }
    assert all(named.values()), named
    assert {name: tags for name, tags in named.items() if tags != {version}} == {}, version
    # the source release section 1 unpacks (and the directory name Flower refuses) is this version's too
    archives = set(re.findall(r"edprf_fl-(\d+\.\d+\.\d+)", (DEPLOY / "README.md").read_text(encoding="utf-8")))
    assert archives == {version}, archives


def _demo_script():
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_demo_parties", DEPLOY / "make_demo_parties.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_policy_template_holds_the_safe_defaults_and_the_demo_parties_are_valid(tmp_path, capsys):
    from dataclasses import asdict, replace

    from client import Party, PartyPolicy, PartySetup, load_policy
    from client._local_data import load_local_data
    from protocol import PartyKeyRegistry

    demo = _demo_script()
    local = tmp_path / "local"
    assert demo.main(["--local", str(local), "hospital-a", "hospital-b"]) == 0
    for party_id in ("hospital-a", "hospital-b"):
        d = local / "parties" / party_id
        policy = load_policy(d / "policy.toml")
        defaults = PartyPolicy(party_id=party_id, schema_fingerprint=policy.schema_fingerprint)
        assert asdict(policy) == asdict(replace(defaults, holdout_fraction=policy.holdout_fraction))
        assert policy.schema_fingerprint.startswith("sha256:") and policy.holdout_fraction == 0.2
        party = Party(
            PartySetup(
                d / "data.csv",
                d / "schema.toml",
                d / "policy.toml",
                d / "ledger.sqlite",
                d / "keys" / f"{party_id}.signing.pem",
            )
        )
        data = load_local_data(d / "data.csv", party.schema, policy.holdout_fraction, "00" * 16)
        assert len(data.X_train) > 1000
    assert sorted(PartyKeyRegistry.from_directory(local / "coordinator" / "party-keys")) == ["hospital-a", "hospital-b"]
    assert sorted(p.name for p in (local / "coordinator" / "supernode-keys").iterdir()) == [
        "hospital-a.auth.key.pub",
        "hospital-b.auth.key.pub",
    ]
    assert (local / "coordinator" / "test.csv").is_file()
    capsys.readouterr()
    assert demo.main(["--local", str(local), "hospital-a"]) == 1
    assert "already exist" in capsys.readouterr().err


# ------------------------------------------------------------------------ with Docker, where possible
def _docker_compose_status() -> tuple[bool, bool, str]:
    """(compose available, engine reachable, reason when not)."""
    docker = shutil.which("docker")
    if docker is None:
        return False, False, "no docker command on this machine"
    version = subprocess.run([docker, "compose", "version"], check=False, capture_output=True, text=True, timeout=30)
    compose = version.returncode == 0
    info = subprocess.run(
        [docker, "info", "--format", "{{.ServerVersion}}"], check=False, capture_output=True, text=True, timeout=30
    )
    engine = info.returncode == 0
    reasons = []
    if not compose:
        reasons.append(f"`docker compose version` fails ({(version.stderr or version.stdout).strip()[:120]})")
    if not engine:
        reasons.append(f"no Docker engine reachable ({(info.stderr or info.stdout).strip()[:160]})")
    return compose, engine, " ".join("; ".join(reasons).split())


def _local_layout(root: Path) -> dict[str, str]:
    """The files compose.yaml mounts, made as the runbook makes them (placeholders for data)."""
    from edprf_fl.cli._main import main

    local = root / "local"
    assert main(["certs", "init", "--out", str(local / "pki"), "--ca-name", "compose check"]) == 0
    assert (
        main(
            [
                "certs",
                "server",
                "--out",
                str(local / "pki"),
                "--san",
                "DNS:superlink",
                "--san",
                "DNS:fleet-gateway",
                "--san",
                "IP:127.0.0.1",
            ]
        )
        == 0
    )
    (local / "superexec.secret").write_text("0" * 64)
    assert _demo_script().main(["--local", str(local), "hospital-a", "hospital-b", "hospital-c"]) == 0
    return {"EDPRF_LOCAL": str(local)}


@pytest.mark.deployment
@pytest.mark.slow
@pytest.mark.parametrize("path", [SECURE, INSECURE], ids=["secure", "insecure"])
def test_docker_compose_config_accepts_the_files(path, tmp_path, capsys):
    compose, _, reason = _docker_compose_status()
    if not compose:
        pytest.skip(reason)
    env = _local_layout(tmp_path)
    capsys.readouterr()
    import os

    result = subprocess.run(
        ["docker", "compose", "-f", str(path), "config", "--quiet"],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **env},
    )
    assert result.returncode == 0, result.stderr


@pytest.mark.deployment
@pytest.mark.slow
def test_docker_compose_brings_up_the_coordinator(tmp_path, capsys):
    """Build the image and start SuperLink, SuperExec and gateway; list nodes through the cli service.

    Needs a Docker engine and the package index at build time; skipped otherwise."""
    compose, engine, reason = _docker_compose_status()
    if not (compose and engine):
        pytest.skip(reason)
    import os

    env = {**os.environ, **_local_layout(tmp_path), "EDPRF_UID": str(os.getuid()), "EDPRF_GID": str(os.getgid())}
    capsys.readouterr()
    base = ["docker", "compose", "-f", str(SECURE), "-p", f"edprf-test-{os.getpid()}"]
    try:
        for args, timeout in (
            (["build"], 1800),
            (["up", "-d", "--wait", "superlink", "superexec", "gateway"], 300),
            (["run", "--rm", "cli", "flwr", "supernode", "ls"], 120),
        ):
            result = subprocess.run(base + args, check=False, capture_output=True, text=True, timeout=timeout, env=env)
            assert result.returncode == 0, f"{' '.join(args)}:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    finally:
        subprocess.run(
            base + ["down", "-v", "--remove-orphans"], check=False, capture_output=True, timeout=300, env=env
        )


def test_pinned_clientapp_reads_a_list_of_sha256_and_refuses_anything_else(tmp_path):
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "pinned_clientapp", DEPLOY.parent / "edprf_fl" / "_pinned_clientapp.py"
    )
    pinned = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(pinned)
    good = tmp_path / "trusted.txt"
    good.write_text("# release 0.1.0\n" + "A" * 64 + "  # upper case is fine\n\n" + "0" * 64 + "\n")
    assert pinned.trusted_hashes(good) == {"a" * 64, "0" * 64}
    bad = tmp_path / "bad.txt"
    bad.write_text("sha256:" + "0" * 64 + "\n")
    with pytest.raises(ValueError, match="bad.txt:1: expected a hex SHA-256"):
        pinned.trusted_hashes(bad)
    text = (DEPLOY / "Dockerfile").read_text(encoding="utf-8")
    assert "edprf_fl/_pinned_clientapp.py /opt/edprf/pinned/flwr-clientapp" in text  # the package's launcher
    assert "!edprf_fl/" in (DEPLOY / "Dockerfile.dockerignore").read_text()
