"""Simulated federations on one machine: partition a dataset, run parties and coordinator on Flower.

Typed inputs and outputs: :class:`SimulationSettings` (validated at construction) in,
:class:`PreparedWorkspace` and :class:`SimulationReport` out::

    from edprf_fl.simulation import SimulationSettings, run_simulation

    report = run_simulation(SimulationSettings(parties=3, max_depth=4, seeded_noise=True), out_dir)
    report.federated["central_evaluation"]["accuracy"]

The names that need Flower or pandas (the engine, the partition, the workspace writer) are imported on
first use, so that settings are checked before any heavy import.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._baselines import raw_features, train_baselines
from ._plot import plot_report, plot_sweep
from ._prepare import PreparedWorkspace, held_out_rows_bound, load_simulation_data, prepare_workspace
from ._run import SimulationReport, SimulationTimings, run_simulation, simulation_caveats
from ._settings import (
    AUTO_DEPTH_CAP,
    ENGINES,
    LEAVES,
    MAX_DEPTH_LIMIT,
    PARTITIONS,
    SPLIT_MODES,
    SettingsError,
    SimulationSettings,
)
from ._summary import contribution_table, cost_lines, evaluation_line, report_lines, results_table, timing_line
from ._sweep import SWEEP_AXES, run_sweep, sweep_grid, sweep_table

if TYPE_CHECKING:
    from ._engine import simulate_federation
    from ._partition import Partitioning, partition_rows
    from ._workspace import write_workspace

__all__ = [
    "AUTO_DEPTH_CAP",
    "ENGINES",
    "LEAVES",
    "MAX_DEPTH_LIMIT",
    "PARTITIONS",
    "SPLIT_MODES",
    "SWEEP_AXES",
    "Partitioning",
    "PreparedWorkspace",
    "SettingsError",
    "SimulationReport",
    "SimulationSettings",
    "SimulationTimings",
    "contribution_table",
    "cost_lines",
    "evaluation_line",
    "held_out_rows_bound",
    "load_simulation_data",
    "partition_rows",
    "plot_report",
    "plot_sweep",
    "prepare_workspace",
    "raw_features",
    "report_lines",
    "results_table",
    "run_simulation",
    "run_sweep",
    "simulate_federation",
    "simulation_caveats",
    "sweep_grid",
    "sweep_table",
    "timing_line",
    "train_baselines",
    "write_workspace",
]

_LAZY = {
    "simulate_federation": "._engine",
    "Partitioning": "._partition",
    "partition_rows": "._partition",
    "write_workspace": "._workspace",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
