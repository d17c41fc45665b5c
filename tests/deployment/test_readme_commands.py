"""deploy/README.md's commands, as written: run on 127.0.0.1, and every `edprf` line parsed.

- The blocks marked ``<!-- readme-test: NAME -->`` (sections 2 to 5: a coordinator without Docker,
  one party, a run, reading the outputs) run in order with bash, with ``/srv/edprf/...`` replaced by
  temporary directories and the ports 9093/9094 by free ports; the long-running ones (SuperLink,
  SuperExec, SuperNode) are started in the background and stopped at the end, and nothing may be
  left running.  The run must complete, name the party by its id, and charge its ledger.
- Every `edprf ...` command anywhere in the README (also the Docker appendix) is parsed by the
  `edprf` parser: a misspelt or removed subcommand or option fails here.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess

import pytest

from edprf_fl.cli._main import build_parser

from ._harness import REPO, Federation, free_port, port_open, run_guarded
from .conftest import ledger_rows

README = REPO / "deploy" / "README.md"
_BLOCK = re.compile(r"<!-- readme-test: ([a-z-]+) -->\n```bash\n(.*?)```", re.DOTALL)
LONG_RUNNING = {"superlink": "superlink", "superexec": "superexec", "supernode": "supernode"}


def readme_blocks() -> dict[str, str]:
    """The marked bash blocks of the README, by name, in order."""
    return dict(_BLOCK.findall(README.read_text(encoding="utf-8")))


def _bash_lines(text: str) -> list[str]:
    """Commands of every ```bash block, continuation lines joined."""
    lines = []
    for block in re.findall(r"```bash\n(.*?)```", text, re.DOTALL):
        lines += block.replace("\\\n", " ").splitlines()
    return lines


def test_every_edprf_command_in_the_readme_parses():
    parser = build_parser()
    checked = 0
    for line in _bash_lines(README.read_text(encoding="utf-8")):
        code = line.split("#", 1)[0] if not line.lstrip().startswith("python3") else ""
        try:
            tokens = shlex.split(code)
        except ValueError:
            continue
        if "edprf" not in tokens:
            continue
        args = tokens[tokens.index("edprf") + 1 :]
        args = [a for a in args if a not in ("||", "true")]
        if not args or args[0].startswith("-"):
            continue
        try:
            parser.parse_args(args)
        except SystemExit as exc:
            pytest.fail(f"deploy/README.md: `edprf {' '.join(args)}` is not a valid command (exit {exc.code})")
        checked += 1
    assert checked >= 15, checked


def test_the_documented_blocks_are_marked():
    assert list(readme_blocks()) == [
        "coordinator",
        "superlink",
        "superexec",
        "connection",
        "party-keys",
        "register",
        "party-setup",
        "supernode",
        "run",
        "read",
    ]


@pytest.mark.deployment
@pytest.mark.slow
def test_the_readme_runs_top_to_bottom_on_loopback(deployment, tmp_path):
    dep = deployment
    fed = Federation(dep, connection="consortium")  # the README's connection name: for `flwr supernode ls`
    superlink_port, supernode_port = free_port(fed.used_ports), free_port(fed.used_ports)
    coord, party = tmp_path / "srv" / "coordinator", tmp_path / "srv" / "hospital-a"
    env = {**dep.env, "COORD": str(coord), "PARTY": str(party), "EDPRF_SRC": str(REPO)}

    def script(text: str) -> str:
        text = text.replace("/srv/edprf/coordinator", str(coord)).replace("/srv/edprf/hospital-a", str(party))
        return text.replace("9093", str(superlink_port)).replace("9094", str(supernode_port))

    outputs: dict[str, str] = {}

    def scenario() -> None:
        for name, text in readme_blocks().items():
            if name in LONG_RUNNING:
                dep.start(
                    f"readme-{name}", ["bash", "-c", "exec " + script(text).strip()], role=LONG_RUNNING[name], env=env
                )
                if name == "superlink":
                    dep.wait_until("the SuperLink's port", lambda: port_open(superlink_port), 60.0)
                if name == "supernode":
                    fed.port = superlink_port
                    fed.wait_online(1)
                continue
            proc = subprocess.run(
                ["bash", "-euo", "pipefail", "-c", script(text)],
                capture_output=True,
                text=True,
                env=env,
                cwd=tmp_path,
                timeout=400,
                check=False,
            )
            outputs[name] = proc.stdout + proc.stderr
            dep.remember_tree()
            assert proc.returncode == 0, f"README block {name!r} failed ({proc.returncode}):\n{outputs[name][-4000:]}"

    run_guarded(dep, scenario)
    out = coord / "outputs" / "2026-01-run-1"
    report = json.loads((out / "report.json").read_text())
    assert report["status"] == "completed", report
    [party_outcome] = report["parties"]
    assert party_outcome["party_id"] == "hospital-a" and party_outcome["status"] == "accepted"
    assert party_outcome["signed"] and party_outcome["sampler"] == "exact"
    assert "edprf run: run" in outputs["run"] and "completed" in outputs["run"]
    assert "hospital-a: no problem found" in outputs["party-setup"]
    assert "TLS handshake verified with ca.crt" in outputs["party-setup"]  # party check --superlink, real SuperLink
    assert "schema fingerprint: sha256:" in outputs["party-setup"]
    assert "party hospital-a" in outputs["read"], outputs["read"][-2000:]
    rows = ledger_rows(party / "ledger.sqlite")
    assert [(kind, eps, state) for _, kind, eps, state, _ in rows] == [("release", 1.0, "released")]
    supernode_log = (tmp_path / "logs" / "readme-supernode.log").read_text(errors="replace")
    assert "party check of hospital-a: no problem found" in supernode_log
    for secret in (
        coord / "pki" / "ca.key",
        coord / "pki" / "server.key",
        coord / "superexec.secret",
        party / "keys" / "hospital-a.auth.key",
        party / "keys" / "hospital-a.signing.pem",
    ):
        assert secret.stat().st_mode & 0o077 == 0, secret
