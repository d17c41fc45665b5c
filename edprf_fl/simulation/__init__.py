"""Simulated federations on one machine: partition a dataset, run parties and coordinator on Flower.

Typed inputs and outputs: :class:`SimulationSettings` (validated at construction) in,
:class:`PreparedWorkspace` and :class:`SimulationReport` out::

    from edprf_fl.simulation import SimulationSettings, run_simulation

    report = run_simulation(SimulationSettings(parties=3, max_depth=4, seeded_noise=True), out_dir)
    report.federated["central_evaluation"]["accuracy"]

Every name is imported on first use (from the submodule that defines it), so that importing this package
costs nothing: the ``edprf`` parser reads the settings' defaults and choice lists (:data:`SETTING_DEFAULTS`,
:data:`ENGINES`, ...) from a standard-library module, and wrong settings are refused before Flower loads.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._baselines import BASELINE_DRAWS, raw_features, train_baselines
    from ._engine import simulate_federation
    from ._marks import dataset_note
    from ._partition import Partitioning, partition_rows
    from ._plot import NO_PLOT_TEXT, plot_report, plot_sweep
    from ._prepare import PreparedWorkspace, held_out_rows_bound, load_simulation_data, prepare_workspace
    from ._progress import PROGRESS_EVERY, Progress, Throttle, file_text, quiet, seconds_text, size_text, stage
    from ._run import SimulationReport, SimulationTimings, run_simulation, simulation_caveats
    from ._setting_fields import ENGINES, LEAVES, PARTITIONS, SETTING_DEFAULTS, SPLIT_MODES
    from ._settings import AUTO_DEPTH_CAP, MAX_DEPTH_LIMIT, SettingsError, SimulationSettings
    from ._summary import (
        CONTRIBUTIONS_FILE,
        contribution_table,
        contributions_markdown,
        cost_lines,
        evaluation_line,
        report_lines,
        results_table,
        timing_line,
    )
    from ._sweep import SWEEP_AXES, data_file, data_identity, run_key, run_sweep, sweep_grid, sweep_table
    from ._sweep_files import (
        SweepRecord,
        config_key,
        drop_torn_last_row,
        incomplete_last_line,
        read_record,
        read_sweep_rows,
        settings_fingerprint,
        sweep_lock,
        torn_last_row,
        unfinished_run_dirs,
        write_record,
    )
    from ._sweep_report import (
        SweepRows,
        code_texts,
        combine_sweeps,
        grid_size,
        interrupted_lines,
        mixed_code_error,
        read_sweep,
        sweep_configs,
        sweep_markdown,
        sweep_notes,
    )
    from ._workspace import write_workspace

__all__ = [
    "AUTO_DEPTH_CAP",
    "BASELINE_DRAWS",
    "CONTRIBUTIONS_FILE",
    "ENGINES",
    "LEAVES",
    "MAX_DEPTH_LIMIT",
    "NO_PLOT_TEXT",
    "PARTITIONS",
    "PROGRESS_EVERY",
    "SETTING_DEFAULTS",
    "SPLIT_MODES",
    "SWEEP_AXES",
    "Partitioning",
    "PreparedWorkspace",
    "Progress",
    "SettingsError",
    "SimulationReport",
    "SimulationSettings",
    "SimulationTimings",
    "SweepRecord",
    "SweepRows",
    "Throttle",
    "code_texts",
    "combine_sweeps",
    "config_key",
    "contribution_table",
    "contributions_markdown",
    "cost_lines",
    "data_file",
    "data_identity",
    "dataset_note",
    "drop_torn_last_row",
    "evaluation_line",
    "file_text",
    "grid_size",
    "held_out_rows_bound",
    "incomplete_last_line",
    "interrupted_lines",
    "load_simulation_data",
    "mixed_code_error",
    "partition_rows",
    "plot_report",
    "plot_sweep",
    "prepare_workspace",
    "quiet",
    "raw_features",
    "read_record",
    "read_sweep",
    "read_sweep_rows",
    "report_lines",
    "results_table",
    "run_key",
    "run_simulation",
    "run_sweep",
    "seconds_text",
    "settings_fingerprint",
    "simulate_federation",
    "simulation_caveats",
    "size_text",
    "stage",
    "sweep_configs",
    "sweep_grid",
    "sweep_lock",
    "sweep_markdown",
    "sweep_notes",
    "sweep_table",
    "timing_line",
    "torn_last_row",
    "train_baselines",
    "unfinished_run_dirs",
    "write_record",
    "write_workspace",
]

_HOMES = {
    "BASELINE_DRAWS": "._baselines",
    "raw_features": "._baselines",
    "train_baselines": "._baselines",
    "simulate_federation": "._engine",
    "dataset_note": "._marks",
    "Partitioning": "._partition",
    "partition_rows": "._partition",
    "NO_PLOT_TEXT": "._plot",
    "plot_report": "._plot",
    "plot_sweep": "._plot",
    "PreparedWorkspace": "._prepare",
    "held_out_rows_bound": "._prepare",
    "load_simulation_data": "._prepare",
    "prepare_workspace": "._prepare",
    "PROGRESS_EVERY": "._progress",
    "Progress": "._progress",
    "Throttle": "._progress",
    "file_text": "._progress",
    "quiet": "._progress",
    "seconds_text": "._progress",
    "size_text": "._progress",
    "stage": "._progress",
    "SimulationReport": "._run",
    "SimulationTimings": "._run",
    "run_simulation": "._run",
    "simulation_caveats": "._run",
    "ENGINES": "._setting_fields",
    "LEAVES": "._setting_fields",
    "PARTITIONS": "._setting_fields",
    "SETTING_DEFAULTS": "._setting_fields",
    "SPLIT_MODES": "._setting_fields",
    "AUTO_DEPTH_CAP": "._settings",
    "MAX_DEPTH_LIMIT": "._settings",
    "SettingsError": "._settings",
    "SimulationSettings": "._settings",
    "CONTRIBUTIONS_FILE": "._summary",
    "contribution_table": "._summary",
    "contributions_markdown": "._summary",
    "cost_lines": "._summary",
    "evaluation_line": "._summary",
    "report_lines": "._summary",
    "results_table": "._summary",
    "timing_line": "._summary",
    "SWEEP_AXES": "._sweep",
    "data_file": "._sweep",
    "data_identity": "._sweep",
    "run_key": "._sweep",
    "run_sweep": "._sweep",
    "sweep_grid": "._sweep",
    "sweep_table": "._sweep",
    "SweepRecord": "._sweep_files",
    "config_key": "._sweep_files",
    "drop_torn_last_row": "._sweep_files",
    "incomplete_last_line": "._sweep_files",
    "read_record": "._sweep_files",
    "read_sweep_rows": "._sweep_files",
    "sweep_lock": "._sweep_files",
    "torn_last_row": "._sweep_files",
    "unfinished_run_dirs": "._sweep_files",
    "write_record": "._sweep_files",
    "SweepRows": "._sweep_report",
    "combine_sweeps": "._sweep_report",
    "read_sweep": "._sweep_report",
    "sweep_configs": "._sweep_report",
    "sweep_markdown": "._sweep_report",
    "sweep_notes": "._sweep_report",
    "grid_size": "._sweep_report",
    "interrupted_lines": "._sweep_report",
    "code_texts": "._sweep_report",
    "mixed_code_error": "._sweep_report",
    "settings_fingerprint": "._sweep_files",
    "write_workspace": "._workspace",
}
"""Each public name and the submodule that defines it (imported by :func:`__getattr__` on first use)."""


def __getattr__(name: str) -> Any:
    """Import ``name`` from its submodule on first use, and keep it here for the next."""
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_HOMES[name], __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
