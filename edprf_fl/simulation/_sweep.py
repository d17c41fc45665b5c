"""Simulated federations over a grid of settings, several seeds each: one row of metrics per run."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from edprf_fl import raise_if_interrupted

from ._prepare import Progress, _quiet
from ._run import SimulationReport, run_simulation
from ._settings import SimulationSettings

__all__ = ["SWEEP_AXES", "run_sweep", "sweep_grid", "sweep_table"]

SWEEP_AXES = ("epsilon", "parties", "partition", "max_depth", "n_trees")
"""The grid's axes, as ``sweep.csv`` and ``sweep.md`` name their columns."""

_TABLE_COLUMNS = (
    ("federated_accuracy", "federated"),
    ("federated_roc_auc", "federated AUC"),
    ("central_accuracy", "central DP"),
    ("party_alone_median_accuracy", "party alone (median)"),
    ("non_private_accuracy", "non-private"),
    ("majority_accuracy", "majority"),
)


def sweep_grid(base: SimulationSettings, values: Mapping[str, Sequence[Any]]) -> list[dict[str, Any]]:
    """Every combination of the axes' values (an axis not in ``values``: ``base``'s value), in order.

    Each combination is checked against the settings' rules here, before anything runs.
    """
    axes = {axis: values.get(axis) or [getattr(base, axis)] for axis in SWEEP_AXES}
    configs = [dict(zip(SWEEP_AXES, combo)) for combo in itertools.product(*(axes[k] for k in SWEEP_AXES))]
    for config in configs:
        _settings_of(base, config, seed=0)
    return configs


def _settings_of(base: SimulationSettings, config: Mapping[str, Any], seed: int) -> SimulationSettings:
    """One run of a sweep: research seeds (reproducible noise, numpy backend), no evaluation round."""
    changes = dict(config)
    return replace(base, **changes, seed=seed, seeded_noise=True, evaluation_epsilon=0.0, party_holdout=0.0)


def run_sweep(
    base: SimulationSettings,
    configs: Sequence[Mapping[str, Any]],
    seeds: int,
    out_dir: Path,
    *,
    progress: Progress = _quiet,
    isolate_ray: Callable[..., object] | None = None,
) -> list[dict[str, Any]]:
    """Run every configuration with seeds ``0 .. seeds - 1`` under ``out_dir/run-NNNN``; one row per run.

    Research runs: parties draw their noise from seeds (NOT differentially private against anyone who
    knows them); each simulated party spends ``epsilon`` of its own, fresh ledger per run.
    """
    import time

    rows: list[dict[str, Any]] = []
    total, started = len(configs) * seeds, time.perf_counter()
    for config in configs:
        for seed in range(seeds):
            raise_if_interrupted()  # a Ctrl-C that a finalizer dropped in the previous run stops the sweep here
            report = run_simulation(
                _settings_of(base, config, seed), Path(out_dir) / f"run-{len(rows):04d}", isolate_ray=isolate_ray
            )
            rows.append({**config, "seed": seed, **_metrics(report)})
            eta = (time.perf_counter() - started) / len(rows) * (total - len(rows))
            progress(
                f"[{len(rows)}/{total}] {dict(config)} seed {seed}: federated {rows[-1]['federated_accuracy']:.4f} "
                f"central {rows[-1]['central_accuracy']:.4f} (eta {eta:.0f} s)"
            )
    return rows


def _metrics(report: SimulationReport) -> dict[str, Any]:
    fed, base, nan = report.federated, report.baselines or {}, float("nan")
    ev = report.federated_metrics
    depths = sorted(p["max_depth"] for p in fed["parties"] if p.get("max_depth"))
    return {
        "depths_used": " ".join(map(str, depths)),  # what each party grew (auto: its own)
        "federated_accuracy": ev.get("accuracy", nan),
        "federated_balanced_accuracy": ev.get("balanced_accuracy", nan),
        "federated_roc_auc": ev.get("roc_auc", nan),
        "central_accuracy": base.get("central_edprf", {}).get("accuracy", nan),
        "central_roc_auc": base.get("central_edprf", {}).get("roc_auc", nan),
        "central_depth": base.get("central_edprf", {}).get("max_depth", ""),
        "party_alone_median_accuracy": base.get("party_alone_median", {}).get("accuracy", nan),
        "non_private_accuracy": base.get("non_private_rf", {}).get("accuracy", nan),
        "majority_accuracy": base.get("majority_class", {}).get("accuracy", nan),
        "accepted": sum(p["status"] == "accepted" for p in fed["parties"]),
        "seconds": report.timings.federation_s,
    }


def sweep_table(rows: Sequence[Mapping[str, Any]], configs: Sequence[Mapping[str, Any]]) -> str:
    """Mean ± standard deviation over the seeds of each configuration (Markdown)."""
    import numpy as np

    lines = [
        "| " + " | ".join(SWEEP_AXES) + " | " + " | ".join(label for _, label in _TABLE_COLUMNS) + " |",
        "|" + "---|" * (len(SWEEP_AXES) + len(_TABLE_COLUMNS)),
    ]
    for config in configs:
        sel = [r for r in rows if all(r[k] == config[k] for k in SWEEP_AXES)]
        cells = []
        for key, _ in _TABLE_COLUMNS:
            vals = np.array([r[key] for r in sel], dtype=float)
            cells.append(f"{np.nanmean(vals):.4f} ± {np.nanstd(vals):.4f}")
        lines.append("| " + " | ".join(str(config[k]) for k in SWEEP_AXES) + " | " + " | ".join(cells) + " |")
    return "\n".join(lines)
