"""Real Flower processes on 127.0.0.1 for tests: the package's process management plus test steps.

Shared by the deployment tests (``tests/deployment``, ``tests/federation/test_deployment.py``).
Starting, tracking and stopping Flower processes lives in :mod:`cli._flower_processes` (``edprf
consortium`` uses the same code); this module adds what only tests need:

- :func:`new_deployment`: a :class:`Deployment` for a fixture, stopped when the test ends;
- :func:`write_parties` / :func:`node_config`: parties on disk;
- :class:`Federation`: the package's federation plus `flwr run` of this repository and loading
  its report and model;
- :func:`run_guarded`: run a scenario, print the logs on failure, check nothing is left running.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from client import PartyPolicy
from edprf_core import load_embedded
from edprf_fl.cli._bundle_staging import staged_app
from edprf_fl.cli._flower_processes import (  # noqa: F401  (re-exported for the tests)
    BIN,
    FLOWER_TOOLS,
    GRACE,
    LOOPBACK,
    PORT_ATTEMPTS,
    READY_TIMEOUT,
    RUN_TIMEOUT,
    Deployment,
    FlowerProcessError,
    Started,
    Tls,
    command_line,
    flower_env,
    free_port,
    json_result,
    kill_group,
    listening_sockets,
    listens_on,
    missing_flower_tools,
    port_open,
    proc_stat,
    process_tree,
    tail,
)
from edprf_fl.cli._flower_processes import Federation as LocalFederation

REPO = Path(__file__).resolve().parents[2]


def new_deployment(tmp_path: Path, request) -> Deployment:
    """For a fixture: a :class:`Deployment` under ``tmp_path``, stopped when the test ends
    (skips the test when Flower's commands are not installed next to this Python)."""
    import pytest

    missing = missing_flower_tools()
    if missing:
        pytest.skip(f"{', '.join(missing)} not installed next to {sys.executable}")
    dep = Deployment(root=tmp_path, env=flower_env(tmp_path))
    request.addfinalizer(dep.stop)
    return dep


# ----------------------------------------------------------------------------- parties on disk
def write_parties(
    root: Path,
    caps: dict[str, float],
    *,
    release_epsilon: float,
    evaluation_epsilon: float,
    seed: int = 20240604,
    max_n_trees: int = 10,
) -> tuple[dict[str, dict[str, Path]], Path]:
    """Parties with their own schema copy, data partition, policy and (future) ledger, and the
    coordinator's schema; returns ({party: {data, schema, policy, ledger}}, coordinator schema path)."""
    X, y, schema = load_embedded("wall_robot_navigation")
    label = schema.label.column
    rows = np.random.default_rng(seed).permutation(len(X))
    parties = {}
    for (party_id, cap), part in zip(caps.items(), np.array_split(rows, len(caps)), strict=True):
        d = root / party_id
        d.mkdir(parents=True)
        paths = {
            "data": d / "data.csv",
            "schema": d / "schema.toml",
            "policy": d / "policy.toml",
            "ledger": d / "ledger.sqlite",
        }
        schema.save(paths["schema"])
        X.iloc[part].assign(**{label: y.iloc[part].to_numpy()}).to_csv(paths["data"], index=False)
        policy = PartyPolicy(
            party_id=party_id,
            schema_fingerprint=schema.fingerprint,
            lifetime_epsilon_cap=cap,
            max_release_epsilon=release_epsilon,
            max_evaluation_epsilon=evaluation_epsilon,
            max_depth=8,
            max_n_trees=max_n_trees,
            allow_exact_metrics=False,
            allow_seeded_randomness=False,
        )
        paths["policy"].write_text(policy.to_toml(), encoding="utf-8")
        parties[party_id] = paths
    coordinator = root / "coordinator"
    coordinator.mkdir()
    schema.save(coordinator / "schema.toml")
    return parties, coordinator / "schema.toml"


def node_config(paths: dict[str, Path], **extra: Any) -> str:
    """``--node-config``: Flower parses "k=v k=v" pairs as TOML values (strings quoted, literal here)."""
    items = {f"{key}-path": paths[key] for key in ("data", "schema", "policy", "ledger")}
    items.update({k.replace("_", "-"): v for k, v in extra.items()})
    for v in items.values():
        assert not any(c in str(v) for c in " '\"="), f"value unsuitable for --node-config: {v}"
    return " ".join(f"{k}='{v}'" for k, v in items.items())


# ----------------------------------------------------------------------------- a federation
class Federation(LocalFederation):
    """The package's federation, plus `flwr run` of this repository's app and its outputs."""

    def run(
        self, name: str, run_config: dict[str, Any], out: Path, *, stream: bool = True, timeout: float = RUN_TIMEOUT
    ) -> tuple[int, str]:
        """`flwr run` of this repository's app; returns (exit code, output)."""
        pairs = " ".join(
            f"{k}='{v}'" if isinstance(v, (str, Path)) else f"{k}={_toml(v)}"
            for k, v in {**run_config, "output-dir": out}.items()
        )
        with staged_app(str(REPO)) as app:  # as `edprf run` submits it (the checkout's .venv not listed)
            args = ["run", app, self.connection, "--run-config", pairs] + (["--stream"] if stream else [])
            return self.flwr(name, args, timeout=timeout)

    def run_and_load(self, name: str, run_config: dict[str, Any], out: Path, expect_model: bool = True):
        """`flwr run --stream`, then the report and the loaded global model (None when none is expected)."""
        from protocol import load_global_model

        t0 = time.monotonic()
        code, output = self.run(name, run_config, out)
        self.dep.remember_tree()
        assert code == 0, f"flwr run exited with {code}:\n{output[-4000:]}"
        report_path = out / "report.json"
        # `--stream` returns when the run ends; the ServerApp saved the report before that
        self.dep.wait_until(f"{report_path}", report_path.is_file, 10.0)
        report = json.loads(report_path.read_text())
        model_path = out / "global-model.edprf"
        print(f"{name}: {time.monotonic() - t0:.1f} s", flush=True)
        if not expect_model:
            assert report["status"] == "failed" and not model_path.exists(), report
            return report, None
        assert model_path.is_file(), report
        return report, load_global_model(model_path)


def bundle_hash() -> str:
    """SHA-256 of the app bundle `flwr run` makes of this repository (`flwr build` gives the same bytes)."""
    import hashlib
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # typer's and pathspec's, raised inside flwr
        from flwr.cli.build import build_fab_from_disk

        with staged_app(str(REPO)) as app:  # the same bytes as from REPO (tests/deployment/test_bundle_staging.py)
            return hashlib.sha256(build_fab_from_disk(Path(app))).hexdigest()


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value)


def _flwr_migrated(before: str, after: str) -> bool:
    """Whether `flwr` rewrote pyproject.toml: it moves ``[tool.flwr.federations]`` tables to
    ``$FLWR_HOME/config.toml`` and comments them out.  Other changes are people editing the file."""
    return (
        after != before
        and "tool.flwr.federations" in before
        and "tool.flwr.federations" in after
        and after.count("# [tool.flwr.federations") > before.count("# [tool.flwr.federations")
    )


def run_guarded(dep: Deployment, scenario: Callable[[], None]) -> float:
    """Run ``scenario``; on failure print the logs; always stop every process and check none is left.
    Fails (and undoes it) if `flwr run` migrated the repository's pyproject.toml; a concurrent edit
    by someone else is left alone.  Returns the seconds taken."""
    pyproject = REPO / "pyproject.toml"
    before = pyproject.read_text(encoding="utf-8")
    t0 = time.monotonic()
    try:
        scenario()
    except BaseException:
        dep.stop()  # flushes the logs
        dep.print_logs()
        raise
    finally:
        dep.stop()
        after = pyproject.read_text(encoding="utf-8")
        if _flwr_migrated(before, after):
            pyproject.write_text(before, encoding="utf-8")
            raise AssertionError("flwr run rewrote the repository's pyproject.toml (restored)")
    left = dep.leftovers()
    assert left == [], f"Flower processes still running after the test: {[(p, command_line(p)) for p in left]}"
    return time.monotonic() - t0
