"""Run one simulated federation end to end: workspace, federation, baselines; a typed report."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from edprf_core.count_text import count_text
from edprf_core.forest import large_epsilon_note
from edprf_fl import Provenance

from ._prepare import RowsRead, prepare_workspace
from ._progress import Progress, _quiet, seconds_text
from ._settings import SimulationSettings

__all__ = ["SimulationReport", "SimulationTimings", "run_simulation", "simulation_caveats"]


@dataclass(frozen=True)
class SimulationTimings:
    """Where the wall time of one run went, in seconds.

    ``baselines_s`` is None when the baselines were skipped; ``coordinator`` holds the coordinator's
    own phases as its report names them (``train_round_s``, ``evaluation_round_s``, ...).
    """

    prepare_s: float
    federation_s: float
    wall_s: float
    baselines_s: float | None = None
    coordinator: Mapping[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, float]:
        """The ``timings`` of ``simulation.json``: the phases, then ``coordinator_``-prefixed ones."""
        phases = {"prepare_s": self.prepare_s, "federation_s": self.federation_s}
        if self.baselines_s is not None:
            phases["baselines_s"] = self.baselines_s
        return phases | {f"coordinator_{k}": v for k, v in self.coordinator.items()}


@dataclass(frozen=True)
class SimulationReport:
    """What one simulated federation produced.

    settings : SimulationSettings
        What was asked.
    dataset : str
        The data's name.
    partition : str
        How rows were split, in words.
    depth : int or str
        ``settings.max_depth``, or with ``"auto"`` the depths the parties chose (``"auto (3-5 by party)"``).
    federated : dict
        The coordinator's report (``report.json`` as written): status, parties, central evaluation,
        federated evaluation, contributions, guarantee, model path...
    baselines : dict or None
        Metrics of the baselines by name (:func:`train_baselines`); None when skipped.
    timings : SimulationTimings
    realised_partition : dict or None
        Per party its rows, class counts and training rows (:func:`partition_summary`): exact counts of the
        researcher's own data, written to the owner-only ``simulation.json`` only, never sent anywhere.
    rows_read : RowsRead or None
        The rows read of the data, those the schema's rules left out (and why) and those used.
    provenance : Provenance or None
        The code's version and git revision and the command line that made the run (review rev-research R13);
        ``simulation.json`` opens with it.
    """

    settings: SimulationSettings
    dataset: str
    partition: str
    depth: int | str
    federated: dict[str, Any]
    baselines: dict[str, dict[str, Any]] | None
    timings: SimulationTimings
    realised_partition: dict[str, dict[str, Any]] | None = None
    rows_read: RowsRead | None = None
    provenance: Provenance | None = None

    @property
    def partition_warnings(self) -> list[str]:
        """A line per party that trains on 0 rows or fewer rows than classes (none without a recorded partition)."""
        from ._partition import partition_warnings

        return partition_warnings(self.realised_partition or {})

    @property
    def completed(self) -> bool:
        """Whether the coordinator built a global model."""
        return self.federated.get("status") == "completed"

    @property
    def federated_metrics(self) -> dict[str, Any]:
        """The global model's metrics on the central test rows (accuracy, ROC AUC, ... with 95% intervals)."""
        return self.federated.get("central_evaluation", {})

    @property
    def contributions(self) -> list[dict[str, Any]]:
        """Each party's contribution on the coordinator's validation data (empty without validation data)."""
        return self.federated.get("contributions") or []

    @property
    def guarantee(self) -> str | None:
        """The coordinator's statement of what the global model guarantees (None if it wrote none)."""
        return self.federated.get("guarantee")

    @property
    def not_dp_mark(self) -> str:
        """``seeded research run: NOT differentially private`` (``, drafted schema`` when the guarantee says its
        schema was drafted from data), ``drafted schema: NOT differentially private``, or ``""`` for a DP run: what
        heads the printed table and titles the plot."""
        from edprf_core.forest import DRAFTED_REASON

        from ._marks import not_dp_mark

        return not_dp_mark(self.settings.seeded_noise, DRAFTED_REASON in (self.guarantee or ""))

    @property
    def caveats(self) -> list[str]:
        """What this simulation treated as public or fixed that a deployment must not (part of its guarantee)."""
        return simulation_caveats(self.settings)

    def to_dict(self) -> dict[str, Any]:
        """The report as ``simulation.json`` holds it."""
        fed = self.federated
        # first: the code and the command that made the rest (review rev-research R13)
        out = {"provenance": self.provenance.to_dict()} if self.provenance is not None else {}
        out |= {
            "dataset": self.dataset,
            "parties": self.settings.parties,
            "partition": self.partition,
            "epsilon": self.settings.epsilon,
            "max_depth": self.depth,
            "n_trees": self.settings.n_trees,
            "split_mode": self.settings.split_mode,
            "seed": self.settings.seed,  # the split's, the partition's and the baselines' (and the noise's, seeded)
            # machine-readable: whether the parties drew their noise from research seeds (NOT differentially private)
            "seeded_noise": self.settings.seeded_noise,
            "not_dp": self.not_dp_mark,  # "" for a DP run, else what the printed table and plot say
            "engine": self.settings.engine,
            "federated": fed,
            "federation_seconds": self.timings.federation_s,
            "per_party_trees": {p["party_id"] or str(p["node_id"]): p["n_trees"] for p in fed["parties"]},
            "bytes_per_party": [p["release_bytes"] for p in fed["parties"]],
            "simulation_caveats": self.caveats,
        }
        if self.rows_read is not None:  # what a paper reports as the data's size: the rows used, and those left out
            out["rows_read"] = self.rows_read.to_dict()
        if self.realised_partition is not None:
            # exact counts of the researcher's own data in an owner-only file, never sent anywhere
            out["realised_partition"] = self.realised_partition
        if self.baselines is not None:
            out["baselines"] = self.baselines
        return out | {"timings": self.timings.to_dict(), "wall_seconds": self.timings.wall_s}

    def write_json(self, path: Path) -> None:
        """Write :meth:`to_dict` as indented JSON, readable by its owner only (mode 0600, whatever the umask): the
        coordinator's report is in it, which is owner-only itself."""
        from ._workspace import write_owner_only_text

        write_owner_only_text(Path(path), json.dumps(self.to_dict(), indent=2, default=str))


_SLOW_BASELINE_ROWS = 200_000
"""From this many training rows the baselines (the non-private forest above all) take minutes: the progress line says
how to skip them (scale review: 648,000 rows, 5 min of a 5.5-min run)."""


def simulation_caveats(settings: SimulationSettings) -> list[str]:
    """What a simulation with these settings treats as public or fixed that a deployment must not.

    The parties' exact row counts, read as public figures, are not among them: the model's guarantee states that
    itself (``protocol.SIMULATION_ROW_COUNTS_NOTE``, from the manifest's ``row_counts``), so it is said once.
    """
    seeded = (
        f"NOT differentially private as run: parties drew their noise from research seeds derived "
        f"from --seed {settings.seed}; anyone who knows the seed can remove the noise"
    )
    caveats = [seeded] if settings.seeded_noise else []
    if (large := large_epsilon_note(settings.epsilon)) and settings.seeded_noise:
        caveats.append(large)  # a DP run's guarantee ends with the note already; a seeded run's says NOT DP only
    default_cap = _default_release_epsilon()
    if settings.epsilon > default_cap:
        caveats.append(
            f"a party refuses a release above its policy's max-release-epsilon (default {default_cap:g}): a "
            f"deployment at epsilon {settings.epsilon:g} needs every party's policy to allow it"
        )
    return caveats


def _default_release_epsilon() -> float:
    """A party policy's default ``max-release-epsilon`` (the simulated parties' policies allow the run's)."""
    from dataclasses import fields

    from client import PartyPolicy

    return next(float(f.default) for f in fields(PartyPolicy) if f.name == "max_release_epsilon")


RAY_START_NOTE = (
    "      Ray starts its workers first (often 10-30 s, silent); its parties answer without a line each: the "
    "next line comes when the rounds end"
)
"""Said after ``[2/4]`` on the ray engine (the in-process engine says each party as it answers)."""


def run_simulation(
    settings: SimulationSettings,
    out_dir: Path,
    *,
    progress: Progress = _quiet,
    flower_logs: bool = False,
    isolate_ray: Callable[..., object] | None = None,
) -> SimulationReport:
    """Prepare the workspace, run the federation on ``settings.engine``, train the baselines.

    Privacy cost: each simulated party spends at most ``settings.epsilon`` on its release and
    ``settings.evaluation_epsilon`` on its noised held-out metrics, through its own ledger in the
    workspace (disjoint rows: parallel composition across parties).  The baselines are comparisons on
    the simulation's pooled rows, never released.

    Parameters
    ----------
    out_dir : Path
        Receives the workspace, the global model and the coordinator's report (an existing run there is
        not checked for: the caller chooses a fresh directory).
    progress : callable
        Receives the ``[1/4]`` ... ``[4/4]`` lines.
    flower_logs : bool
        Show Flower's own logs.
    isolate_ray : callable, optional
        Runs the Ray engine elsewhere: called as ``isolate_ray(simulate_federation, config, parties,
        flower_logs, "ray")`` (the command passes a child process that Ctrl-C stops with everything Ray
        started, inside a loopback-only network namespace).  The in-process engine starts no process and
        opens no socket: it always runs here.

    Raises
    ------
    RuntimeError
        When the coordinator wrote no report.
    """
    from server import REPORT_FILE

    from . import _engine

    out_dir = Path(out_dir)
    started = time.perf_counter()
    workspace = prepare_workspace(settings, out_dir, progress)
    prepare_s = time.perf_counter() - started
    from ._partition import partition_summary, partition_warnings

    # exact counts of the simulation's own rows, kept in this run's owner-only record (never sent anywhere)
    realised = partition_summary(
        workspace.y_train, workspace.parts, list(workspace.schema.classes), settings.party_holdout
    )
    for line in partition_warnings(realised):
        progress(f"      {line}")
    engine = settings.engine
    progress(
        f"[2/4] running the federation: {count_text(settings.parties, 'Flower ClientApp')} and "
        f"the ServerApp ({engine} engine) ..."
    )
    if engine == "ray":  # Ray's start is silent and its workers' rounds have no per-party line
        progress(RAY_START_NOTE)
    t0 = time.perf_counter()
    if isolate_ray is not None and engine == "ray":
        isolate_ray(_engine.simulate_federation, workspace.config, settings.parties, flower_logs, engine)
    else:
        _engine.simulate_federation(
            workspace.config, settings.parties, verbose=flower_logs, engine=engine, progress=progress
        )
    federation_s = time.perf_counter() - t0
    report_path = out_dir / REPORT_FILE
    if not report_path.is_file():
        raise RuntimeError(f"the coordinator wrote no report to {report_path}; rerun with --flower-logs")
    fed = json.loads(report_path.read_text())
    if engine != "in-process":  # the in-process grid said each one as its turn came
        for line in missed_timeout_lines(fed, workspace.config.round_timeout):
            progress(line)
    if fed.get("status") != "completed":  # no model: the caller says why (the report's guarantee and failure)
        progress(f"[3/4] federation failed after {federation_s:.1f} s")
    else:
        progress(
            f"[3/4] federation done in {federation_s:.1f} s: {count_text(fed['n_trees'], 'tree')} from "
            f"{count_text(sum(p['status'] == 'accepted' for p in fed['parties']), 'party', 'parties')}"
        )
    baselines, baselines_s = None, None
    if settings.baselines and fed.get("status") == "completed":  # a failed federation has no model to compare
        from ._baselines import train_baselines

        slow = len(workspace.X_train) >= _SLOW_BASELINE_ROWS
        progress(
            "[4/4] training the baselines: central eDPRF, each party alone, a non-private forest ..."
            + (
                f" (on {count_text(len(workspace.X_train), 'row')} this takes minutes; --no-baselines skips them)"
                if slow
                else ""
            )
        )
        t0 = time.perf_counter()
        baselines = train_baselines(settings, workspace, progress)
        baselines_s = time.perf_counter() - t0
        progress(f"      baselines trained in {seconds_text(baselines_s)}")
    timings = SimulationTimings(
        prepare_s=prepare_s,
        federation_s=federation_s,
        wall_s=time.perf_counter() - started,
        baselines_s=baselines_s,
        coordinator=dict(fed.get("timings", {})),
    )
    return SimulationReport(
        settings,
        workspace.dataset,
        workspace.partitioning.describe(),
        _depth_used(settings, fed),
        fed,
        baselines,
        timings,
        realised,
        workspace.rows_read,
        Provenance.current(),
    )


def missed_timeout_lines(fed: Mapping[str, Any], round_timeout: float) -> list[str]:
    """One progress line per party of the coordinator's report ``fed`` that sent no reply to its train request
    within ``round_timeout`` (the readiness round's no-replies are not among them)."""
    missed = [
        p.get("party_id") or f"node {p.get('node_id')}"
        for p in fed.get("parties", [])
        if p.get("status") == "no_reply" and p.get("reason") == "timeout" and not p.get("readiness_only")
    ]
    return [
        f"      {name} missed the round timeout ({seconds_text(round_timeout)}): its train request got no reply"
        for name in missed
    ]


def _depth_used(settings: SimulationSettings, fed: Mapping[str, Any]) -> int | str:
    if not settings.auto_depth:
        return settings.max_depth
    depths = sorted({p["max_depth"] for p in fed["parties"] if p.get("max_depth")})
    if len(depths) > 1:
        return f"auto ({depths[0]}-{depths[-1]} by party)"
    return f"auto ({depths[0] if depths else '-'})"
