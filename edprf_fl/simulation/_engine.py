"""Run the federation in this process: on the in-process engine (default) or on Flower's Ray engine."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from flwr.app import Context, Message
from flwr.clientapp import ClientApp
from flwr.serverapp import Grid, ServerApp

from client import handle_evaluate, handle_train
from edprf_fl import colour_flower_logs_on_terminals_only, keep_flower_telemetry_off
from server import REPORT_FILE, CoordinatorConfig, run_federation, summary_lines

from ._progress import Progress, _quiet
from ._settings import ENGINES

__all__ = ["ENGINES", "RAY_LOOPBACK_ENV", "RAY_LOOPBACK_INIT_ARGS", "simulate_federation"]

#: ``ray.init`` arguments of every simulation: Ray's node (GCS, raylet, object manager, workers) on
#: 127.0.0.1 and no dashboard.  ``flwr run`` simulations do not get them (pyproject.toml sets no Ray options; Flower
#: itself turns the dashboard off): there ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0``, in the command ``edprf simulate
#: --prepare-only`` prints, keeps Ray on 127.0.0.1 (:data:`RAY_LOOPBACK_ENV`).
RAY_LOOPBACK_INIT_ARGS: dict[str, Any] = {
    "_node_ip_address": "127.0.0.1",
    "include_dashboard": False,
    "dashboard_host": "127.0.0.1",
}
#: Environment of every simulation: Ray's node address for the processes Ray starts itself, and Ray's
#: single-machine mode, in which it takes 127.0.0.1 as this node's address as given.  Without it Ray 2.55 turns
#: ``_node_ip_address="127.0.0.1"`` into "a remotely reachable IP" by a route lookup towards 8.8.8.8:53
#: (a UDP connect, no packet: inside the engine child's loopback-only namespace it fails, and Ray printed
#: "Failed to determine local IP via external connectivity to: 8.8.8.8:53" into every run's output).
#: Read when Ray is imported: set before ``flwr.simulation`` is.
RAY_LOOPBACK_ENV: dict[str, str] = {"RAY_NODE_IP_ADDRESS": "127.0.0.1", "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}


class _DropRunSimulationDeprecation(logging.Filter):
    """``run_simulation`` is the in-process engine this package chose on purpose; its banner is noise."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "run_simulation" not in record.getMessage()


_log = logging.getLogger("edprf.coordinator")


def _client_app(run_config: Mapping[str, Any]) -> ClientApp:
    app = ClientApp()

    @app.train()
    def train(msg: Message, context: Context) -> Message:
        return handle_train(msg, context, run_config)

    @app.evaluate()
    def evaluate(msg: Message, context: Context) -> Message:
        return handle_evaluate(msg, context, run_config)

    return app


def _server_app(cfg: CoordinatorConfig) -> ServerApp:
    app = ServerApp()

    @app.main()
    def main(grid: Grid, context: Context) -> None:
        report = run_federation(grid, cfg, str(context.run_id))
        if not (Path(cfg.output_dir) / REPORT_FILE).is_file():  # it could not be written (a full disk): the run's
            for line in summary_lines(report):  # summary, said here, is its only record
                _log.warning("%s", line)
            raise ValueError(report.failure or "the coordinator wrote no report")

    return app


def simulate_federation(
    cfg: CoordinatorConfig,
    n_parties: int,
    verbose: bool = False,
    engine: str = "in-process",
    progress: Progress = _quiet,
) -> None:
    """Run one federated training (and evaluation) with ``n_parties`` simulated SuperNodes.

    The coordinator writes its model and report to ``cfg.output_dir``.  It waits
    for every party of the workspace (``CoordinatorConfig.parties_to_wait_for``)
    before sending requests: Flower's engine starts the ServerApp thread before
    it has registered every node, so starting at the first node seen would
    silently leave parties out (the in-process engine has every node from the start).

    ``engine`` is ``"in-process"`` (default: no Ray, far quicker to start:
    ``benchmarks/results/simulation_speed.md``)
    or ``"ray"`` (Flower's simulation engine, what ``flwr run`` uses).

    ``progress`` (in-process engine): how many parties have answered a round so far, and each party whose
    turn came after the round's timeout (:class:`~edprf_fl.simulation._in_process_engine.InProcessGrid`).
    """
    keep_flower_telemetry_off()  # Flower read the variable on import: it is told now, before it runs
    # plain log lines in a file or a pipe; but run_simulation(verbose_logging=True) (the ray engine with
    # --flower-logs) sets colored=True again itself, and its lines stay coloured
    colour_flower_logs_on_terminals_only()
    if engine not in ENGINES:
        raise ValueError(f"engine: expected one of {', '.join(ENGINES)}, got {engine!r}")
    server_app, client_app = _server_app(cfg), _client_app({"sim-dir": cfg.sim_dir})
    if engine == "in-process":
        from ._in_process_engine import run_in_process

        run_in_process(server_app, client_app, n_parties, progress=progress)
        return
    for name, value in RAY_LOOPBACK_ENV.items():  # before Ray is imported: it reads them then
        os.environ.setdefault(name, value)
    from flwr.simulation import run_simulation

    os.environ.setdefault("RAY_DEDUP_LOGS", "0")
    os.environ.setdefault("RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO", "0")
    flwr_log = logging.getLogger("flwr")
    if not any(isinstance(f, _DropRunSimulationDeprecation) for f in flwr_log.filters):
        flwr_log.addFilter(_DropRunSimulationDeprecation())
    if not verbose:
        flwr_log.setLevel(logging.WARNING)
    backend = {
        "client_resources": {"num_cpus": 1, "num_gpus": 0.0},
        "init_args": {
            "num_cpus": max(1, os.cpu_count() or 1),
            "logging_level": "error",
            "log_to_driver": verbose,
            **RAY_LOOPBACK_INIT_ARGS,
        },
    }
    run_simulation(
        server_app=server_app,
        client_app=client_app,
        num_supernodes=n_parties,
        backend_name="ray",
        backend_config=backend,
        verbose_logging=verbose,
    )
