"""Simulated federations over a grid of settings, several seeds each: one row of metrics per run.

Every run of a sweep is a research run: parties draw their noise from seeds (NOT differentially private
against anyone who knows them), there is no evaluation round and no party hold-out.  The table and the
plots say so.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from edprf_fl import raise_if_interrupted

from ._progress import Progress, _quiet
from ._run import SimulationReport, run_simulation
from ._settings import MAX_SEED, SettingsError, SimulationSettings

__all__ = [
    "PROVENANCE_COLUMNS",
    "SWEEP_AXES",
    "data_file",
    "data_identity",
    "run_key",
    "run_sweep",
    "sweep_grid",
    "sweep_seeds",
    "sweep_table",
]

SWEEP_AXES = ("epsilon", "parties", "partition", "alpha", "max_depth", "n_trees")
"""The grid's axes, as ``sweep.csv`` and ``sweep.md`` name their columns.

``alpha`` (the Dirichlet concentration, the skew axis) applies to dirichlet partitions only: a configuration of
another partition holds ``""`` there and is not repeated for each alpha."""

_RESEARCH_RUN: Mapping[str, Any] = {"seeded_noise": True, "evaluation_epsilon": 0.0, "party_holdout": 0.0}
"""What every run of a sweep sets, whatever the base settings (and its ``seed``: :func:`sweep_seeds`)."""

_TABLE_COLUMNS = (
    ("federated_accuracy", "federated"),
    ("federated_roc_auc", "federated AUC"),
    ("central_accuracy", "central DP"),
    ("central_roc_auc", "central DP AUC"),  # review rev-research R10: on imbalanced data accuracy separates nothing
    ("party_alone_median_accuracy", "party alone (median)"),
    ("party_alone_median_roc_auc", "party alone AUC"),
    ("non_private_accuracy", "non-private"),
    ("majority_accuracy", "majority"),
)

_CENTRAL_RULE = (
    "'central DP' is the same seeded algorithm trained centrally on the pooled training rows, with the "
    "federation's epsilon and bins; at a fixed max_depth it is the federation's forest (parties x n_trees trees "
    "of that depth), at max_depth auto the estimator's own choice of trees and depth (often fewer, deeper trees), "
    "so the two are different central models ('central model': trees x depth; sweep.csv: central_n_trees, "
    "central_max_depth)."
)
"""What the ``central DP`` column is, at a fixed depth and at ``auto``."""

_RESEARCH_TEXT = (
    "Seeded research runs, NOT differentially private releases: each party drew its noise from a research "
    "seed, which removes the noise for anyone who knows it. An accuracy study only: epsilon is the budget each "
    "party was configured to spend. No evaluation round, no party hold-out. " + _CENTRAL_RULE
)
"""What every sweep's table opens with."""


def _research_note(rows: Sequence[Mapping[str, Any]]) -> str:
    """:data:`_RESEARCH_TEXT`, and the reason the runs' guarantee gives when their schema was drafted from data."""
    from edprf_core.forest import DRAFTED_REASON

    if any(r.get("schema_drafted") for r in rows):
        return f"{_RESEARCH_TEXT} Also NOT differentially private because {DRAFTED_REASON}."
    return _RESEARCH_TEXT


def sweep_seeds(seeds: int, seed_start: int = 0) -> range:
    """The seeds of each configuration's runs: ``seed_start .. seed_start + seeds - 1``.

    Raises
    ------
    SettingsError
        ``seeds`` below 1, ``seed_start`` below 0, or the last seed above a run's largest seed (``MAX_SEED``).
    """
    if not (isinstance(seeds, int) and seeds >= 1):
        raise SettingsError("{seeds}: expected an integer >= 1, got {value!r}", value=seeds)
    if not (isinstance(seed_start, int) and 0 <= seed_start and seed_start + seeds - 1 <= MAX_SEED):
        raise SettingsError(
            "{seed_start} {start} with {seeds} {n}: the seeds {start} .. {last} must lie in [0, {limit}]",
            start=seed_start,
            n=seeds,
            last=seed_start + seeds - 1,
            limit=MAX_SEED,
        )
    return range(seed_start, seed_start + seeds)


def sweep_grid(
    base: SimulationSettings, values: Mapping[str, Sequence[Any]], seeds: int = 1, seed_start: int = 0
) -> list[dict[str, Any]]:
    """Every combination of the axes' values (an axis not in ``values``: ``base``'s value), in order.

    Each combination is checked here, before anything runs: against the settings' rules, then against the
    schema (a release no simulated party's policy allows, :func:`check_release_size`), then against the
    data (read once): that, for each of the seeds :func:`sweep_seeds` gives the runs, its training
    rows can be split among its parties as its partition asks (the split and the partition depend on the seed:
    a column's rarest value may reach the training rows under one seed and not under another).

    Raises
    ------
    SettingsError
        A value out of its range (named by its setting), or seeds out of theirs.
    ValueError
        A configuration whose training rows cannot be split among its parties (the configuration named).
    """
    run_seeds = sweep_seeds(seeds, seed_start)
    axes = {axis: values.get(axis) or [getattr(base, axis)] for axis in SWEEP_AXES}
    combos = (dict(zip(SWEEP_AXES, combo)) for combo in itertools.product(*(axes[k] for k in SWEEP_AXES)))
    # alpha only for dirichlet partitions: an iid or column configuration once, not once per alpha
    unique = {
        tuple(c.items()): c
        for c in ({**c, "alpha": c["alpha"] if c["partition"] == "dirichlet" else ""} for c in combos)
    }
    configs = list(unique.values())
    for config in configs:
        _settings_of(base, config, seed=0)
    from ._prepare import check_release_size, load_simulation_data

    X, y, schema, _ = load_simulation_data(base)
    for config in configs:  # trees no party's policy would release: refused here, not after the first runs
        check_release_size(_settings_of(base, config, seed=0), schema)
    for seed in run_seeds:
        _check_partitions(base, configs, seed, X, y)
    return configs


def _check_partitions(
    base: SimulationSettings, configs: Sequence[Mapping[str, Any]], seed: int, X: Any, y: Any
) -> None:
    """Split the rows ``X``, ``y`` as each configuration's run with ``seed`` does (the axes do not change the
    split)."""
    from ._prepare import partition_training_rows, split_rows

    split = split_rows(_settings_of(base, configs[0], seed=seed), X, y)
    for parties, partition, alpha in dict.fromkeys((c["parties"], c["partition"], c.get("alpha", "")) for c in configs):
        settings = replace(base, parties=parties, partition=partition, seed=seed, **_alpha_setting(alpha))
        try:
            partition_training_rows(settings, split.X_train, split.y_train)
        except ValueError as exc:
            named = f", alpha {alpha:g}" if alpha != "" else ""
            raise ValueError(
                f"parties {parties}, partition {partition}{named}, seed {seed}: {exc} (checked before the first run)"
            ) from None


def _settings_of(base: SimulationSettings, config: Mapping[str, Any], seed: int) -> SimulationSettings:
    """One run of a sweep: ``config`` on ``base``, seeded noise, no evaluation round (:data:`_RESEARCH_RUN`)."""
    axes = {k: v for k, v in config.items() if k != "alpha"}
    return replace(base, **axes, **_alpha_setting(config.get("alpha", "")), **_RESEARCH_RUN, seed=seed)


def _alpha_setting(alpha: Any) -> dict[str, Any]:
    """``{"alpha": alpha}``, or nothing for a configuration without one (``""``: not a dirichlet partition)."""
    return {} if alpha in ("", None) else {"alpha": alpha}


def data_file(base: SimulationSettings) -> Path:
    """The file the runs of ``base`` read their rows from: ``--data``, else the embedded dataset's."""
    if base.data is not None:
        return Path(base.data)
    import edprf_core.datasets

    return Path(edprf_core.datasets.__file__).parent / f"{base.dataset}.csv.gz"


_CHUNK = 1 << 20


def _schema_fingerprint(base: SimulationSettings) -> str:
    """The fingerprint of the schema the runs of ``base`` read their data under."""
    from edprf_core import example_schema, load_schema

    return (load_schema(base.schema) if base.data is not None else example_schema(base.dataset)).fingerprint


def data_identity(base: SimulationSettings) -> tuple[str, str]:
    """``(data_sha256, schema_fingerprint)``: the SHA-256 of the data file's bytes (read in 1 MiB pieces: the file
    can be large, and a sweep hashes it once) and the schema's fingerprint, both ``sha256:<hex>``.

    What identifies a sweep's data by content (review rev-research2 N1, N2): a file changed in place, or re-exported
    with the same row count, has another hash; the same bytes at another path have the same.
    """
    import hashlib

    digest = hashlib.sha256()
    with data_file(base).open("rb") as fh:
        while piece := fh.read(_CHUNK):
            digest.update(piece)
    return "sha256:" + digest.hexdigest(), _schema_fingerprint(base)


def run_sweep(
    base: SimulationSettings,
    configs: Sequence[Mapping[str, Any]],
    seeds: int,
    out_dir: Path,
    *,
    seed_start: int = 0,
    progress: Progress = _quiet,
    record: Callable[[dict[str, Any]], object] | None = None,
    isolate_ray: Callable[..., object] | None = None,
    skip: Collection[tuple[tuple[Any, ...], int]] = (),
    data_sha256: str | None = None,
) -> list[dict[str, Any]]:
    """Run every configuration with the seeds ``seed_start .. seed_start + seeds - 1`` under ``out_dir/run-NNNN``;
    one row per run.

    ``NNNN`` is the run's place in the grid (configurations in order, each with its seeds in order), so a resumed
    sweep's runs take the directories an uninterrupted one's would.

    Research runs: parties draw their noise from seeds (NOT differentially private against anyone who
    knows them); each simulated party spends ``epsilon`` of its own, fresh ledger per run.

    Parameters
    ----------
    progress : callable
        Receives what the runs are (:data:`_RESEARCH_TEXT`), a line as the first run starts, a line per run
        as it finishes, and a warning for a run in which a party's release was not accepted.
    record : callable, optional
        Called with each run's row as soon as the run ends (``edprf sweep`` appends it to ``sweep.csv``, so
        that an interrupted sweep keeps its finished runs).
    skip : collection of (tuple, int)
        (configuration, seed) pairs not to run (``edprf sweep --resume``: those ``sweep.csv`` holds), each
        configuration as :func:`run_key` gives it.
    data_sha256 : str, optional
        The data file's hash (:func:`data_identity`), written in every row; None: hashed here, once.
    """
    import time

    from ._marks import dataset_note

    progress(_RESEARCH_TEXT)
    # the embedded time series, or its data from a file under its schema (review rev-research2 N9)
    if note := dataset_note(base.dataset if base.data is None else "", _schema_fingerprint(base)):
        progress(f"note: {note}")
    rows: list[dict[str, Any]] = []
    run_seeds = sweep_seeds(seeds, seed_start)
    if data_sha256 is None:
        data_sha256 = data_identity(base)[0]
    from ._sweep_files import settings_fingerprint

    identity = {"data_sha256": data_sha256, "settings_fingerprint": settings_fingerprint(base)}
    # each run's place in the grid (its directory's number), those to run
    todo = [
        (place, config, seed)
        for place, (config, seed) in enumerate(itertools.product(configs, run_seeds))
        if (run_key(base, config), seed) not in skip
    ]
    total, started = len(todo), time.perf_counter()
    if total:  # a run takes seconds to minutes: say the sweep is under way before the first one ends
        progress(f"starting run 1 of {total}; a line follows as each run finishes")
    for place, config, seed in todo:
        raise_if_interrupted()  # a Ctrl-C that a finalizer dropped in the previous run stops the sweep here
        run_dir = Path(out_dir) / f"run-{place:04d}"
        report = run_simulation(_settings_of(base, config, seed), run_dir, isolate_ray=isolate_ray)
        report.write_json(run_dir / "simulation.json")  # the run's record: its realised partition, baseline draws
        rows.append(
            {
                **config,
                "alpha": _alpha_of(base, config),
                "seed": seed,
                "run_dir": run_dir.name,
                **_metrics(report, identity),
            }
        )
        if record is not None:
            record(rows[-1])
        if len(rows) == 1 and report.rows_read is not None:  # the same data in every run: said once
            progress(f"      data: {report.rows_read.text()}")
            if note := report.rows_read.repeats_text():  # seed 0's split; sweep.csv has each run's count
                progress(f"      note: {note}")
        # wall time of the runs so far (baselines included, unlike a row's "seconds"), per run, times those left
        eta = (time.perf_counter() - started) / len(rows) * (total - len(rows))
        progress(
            f"[{len(rows)}/{total}] {dict(config)} seed {seed}: federated {rows[-1]['federated_accuracy']:.4f} "
            f"central {rows[-1]['central_accuracy']:.4f} (eta {eta:.0f} s)"
        )
        if rows[-1]["accepted"] < config["parties"]:
            progress(f"      warning: {_refusals(report)}; see {run_dir}")
        for line in getattr(report, "partition_warnings", []):
            progress(f"      {line} (see {run_dir / 'simulation.json'})")
    return rows


def run_key(base: SimulationSettings, config: Mapping[str, Any]) -> tuple[Any, ...]:
    """The values of the axes (:data:`SWEEP_AXES`, in order) that a run of ``config`` writes in its row: the key of a
    configuration among ``sweep.csv``'s rows (its alpha the base settings' when a dirichlet configuration has none)."""
    return tuple({**config, "alpha": _alpha_of(base, config)}.get(axis, "") for axis in SWEEP_AXES)


def _alpha_of(base: SimulationSettings, config: Mapping[str, Any]) -> float | str:
    """The Dirichlet concentration of a dirichlet configuration (its own, else ``base``'s); "" for the others."""
    if config["partition"] != "dirichlet":
        return ""
    return config.get("alpha") or base.alpha


def _refusals(report: SimulationReport) -> str:
    """``1/2 parties' releases accepted (party-0001: refused, budget_exhausted)``."""
    parties = report.federated["parties"]
    refused = [p for p in parties if p["status"] != "accepted"]
    named = ", ".join(f"{p['party_id'] or 'node ' + str(p['node_id'])}: {p['status']} {p['reason']}" for p in refused)
    return f"{len(parties) - len(refused)}/{len(parties)} parties' releases accepted ({named})"


def _metrics(report: SimulationReport, identity: Mapping[str, str] | None = None) -> dict[str, Any]:
    from edprf_core.forest import DRAFTED_REASON

    fed, base, nan = report.federated, report.baselines or {}, float("nan")
    ev = report.federated_metrics
    depths = sorted(p["max_depth"] for p in fed["parties"] if p.get("max_depth"))
    marginals = fed.get("marginals") or {}  # {} without the marginals part (more than two classes, say)
    central = base.get("central_edprf", {})
    return {
        "depths_used": " ".join(map(str, depths)),  # what each party grew (auto: its own)
        "federated_accuracy": ev.get("accuracy", nan),
        "federated_balanced_accuracy": ev.get("balanced_accuracy", nan),
        "federated_roc_auc": ev.get("roc_auc", nan),
        "federated_one_class": bool(ev.get("warning")),  # the global model predicts (nearly) one class
        "central_accuracy": base.get("central_edprf", {}).get("accuracy", nan),
        "central_roc_auc": base.get("central_edprf", {}).get("roc_auc", nan),
        "central_balanced_accuracy": central.get("balanced_accuracy", nan),
        "central_depth": base.get("central_edprf", {}).get("max_depth", ""),  # central_max_depth's older name
        # what the central model was: the federation's forest (parties x n_trees trees) at a fixed depth, the
        # estimator's own choice of trees and depth with max_depth auto (:data:`_CENTRAL_RULE`)
        "central_n_trees": base.get("central_edprf", {}).get("n_trees", ""),
        "central_max_depth": base.get("central_edprf", {}).get("max_depth", ""),
        # the marginals part (two classes): the share of each party's rows spent on one-way class histograms,
        # so the depth and trees axes act on the rest; each part alone on the central test rows (report.json)
        "marginals_share": marginals.get("share", 0.0),
        "marginals_bins": marginals.get("bins", ""),
        "federated_trees_alone_accuracy": marginals.get("test_accuracy_trees_alone", nan),
        "federated_marginals_alone_accuracy": marginals.get("test_accuracy_marginals_alone", nan),
        "central_marginals_share": central.get("marginals_share", ""),
        "central_residual_pass": central.get("residual_pass", ""),
        "party_alone_median_accuracy": base.get("party_alone_median", {}).get("accuracy", nan),
        "non_private_accuracy": base.get("non_private_rf", {}).get("accuracy", nan),
        "non_private_balanced_accuracy": base.get("non_private_rf", {}).get("balanced_accuracy", nan),
        "majority_accuracy": base.get("majority_class", {}).get("accuracy", nan),
        **_more_metrics(ev, base),
        "dataset": report.dataset,
        # the data's size as a paper reports it: rows read, left out by the schema's rules, used
        **(
            {
                "rows_read": report.rows_read.read,
                "rows_left_out": report.rows_read.left_out,
                "test_rows": report.rows_read.test_rows,
                "test_rows_repeated": report.rows_read.test_rows_repeated,
            }
            if report.rows_read is not None
            else {}
        ),
        "accepted": sum(p["status"] == "accepted" for p in fed["parties"]),
        # leaves where the merge's bounded influence counted less than half of a party's claim (report.json's
        # influence_cuts): a model change a paper should mention (review rev-research R11)
        "influence_cuts": len(fed.get("influence_cuts") or []),
        # the epsilon a party spent on its DP row count (max_depth auto; the largest), when report.json gives it
        "count_epsilon": max((p["count_epsilon"] for p in fed["parties"] if "count_epsilon" in p), default=""),
        **_partition_columns(report.realised_partition),
        "seeded_noise": report.settings.seeded_noise,  # always: research runs, NOT differentially private
        "schema_drafted": DRAFTED_REASON in (report.guarantee or ""),  # as the run's guarantee says
        "seconds": report.timings.federation_s,  # the federation alone (its name kept for older readers)
        "wall_seconds": report.timings.wall_s,  # the whole run: preparing, federation, baselines
        # what sweeps must share for their rows to make one table (edprf sweep-report, --resume)
        "schema_fingerprint": fed.get("schema_fingerprint", ""),
        # the data file's bytes (review rev-research2 N1, N2) and the settings beyond the grid (N8)
        "data_sha256": (identity or {}).get("data_sha256", ""),
        "settings_fingerprint": (identity or {}).get("settings_fingerprint", ""),
        **_provenance_columns(report),
    }


PROVENANCE_COLUMNS = ("edprf_version", "git_describe", "command")
"""``sweep.csv``'s record of the code and the command that made each row (review rev-research R13): the rows one
command wrote share them, and a resumed or extended sweep's rows say which command added them."""


def _provenance_columns(report: SimulationReport) -> dict[str, str]:
    """:data:`PROVENANCE_COLUMNS` of the run (``""`` where the report has no provenance, or no git revision)."""
    known = report.provenance.to_dict() if report.provenance is not None else {}
    return {name: known.get(name) or "" for name in PROVENANCE_COLUMNS}


_MODELS = (
    ("federated", None),
    ("central", "central_edprf"),
    ("party_alone_median", "party_alone_median"),
    ("non_private", "non_private_rf"),
    ("majority", "majority_class"),
)
"""Each model of a run: its prefix in sweep.csv, and its key among the baselines (None: the federated model)."""


def _more_metrics(federated: Mapping[str, Any], baselines: Mapping[str, Any]) -> dict[str, Any]:
    """For paper tables on imbalanced data (the simulation review): every model's macro F1 and Brier score, and
    the balanced accuracy and ROC AUC of the models that had none in the CSV; ``brier_scale`` says which Brier
    (two classes: the positive class's, 0-1; more: the sum over classes, 0-2).  NaN where a run has no such
    model (no baselines)."""
    nan, out = float("nan"), {}
    scale = ""
    for prefix, key in _MODELS:
        ev = federated if key is None else baselines.get(key, {})
        out[f"{prefix}_f1_macro"] = ev.get("f1_macro", nan)
        out[f"{prefix}_brier"] = ev.get("brier", ev.get("brier_multiclass", nan))
        scale = scale or ev.get("brier_scale", "")
        if key in ("party_alone_median", "non_private_rf", "majority_class"):
            out[f"{prefix}_roc_auc"] = ev.get("roc_auc", nan)
        if key in ("party_alone_median", "majority_class"):
            out[f"{prefix}_balanced_accuracy"] = ev.get("balanced_accuracy", nan)
    out["brier_scale"] = scale
    # the central baseline's row is its median draw of accuracy; the mean over its draws, for a paper's table
    draws = baselines.get("central_edprf", {}).get("accuracy_draws") or []
    out["central_accuracy_draws_mean"] = sum(draws) / len(draws) if draws else nan
    return out


def _partition_columns(partition: Mapping[str, Mapping[str, Any]] | None) -> dict[str, Any]:
    """The realised partition in a row: the smallest, median and largest party's rows, the parties holding one
    class (or none), and those with fewer training rows than classes (0 rows among them); "" when unrecorded."""
    import numpy as np

    names = ("party_rows_min", "party_rows_median", "party_rows_max", "single_class_parties", "starved_parties")
    if not partition:
        return dict.fromkeys(names, "")
    blocks = list(partition.values())
    sizes = [b["rows"] for b in blocks]
    single = sum(sum(1 for n in b["class_counts"].values() if n) <= 1 for b in blocks)
    starved = sum(
        (b["training_rows"] if b["training_rows"] is not None else b["expected_training_rows"]) < len(b["class_counts"])
        for b in blocks
    )
    return dict(zip(names, (min(sizes), float(np.median(sizes)), max(sizes), single, starved)))


def sweep_table(rows: Sequence[Mapping[str, Any]], configs: Sequence[Mapping[str, Any]]) -> str:
    """What the runs were (:func:`_research_note`), what a cell and its ± are, then the mean ± sample standard
    deviation over the seeds of each configuration (Markdown), with the central model's trees x depth and the
    mean and largest depth the parties grew; notes on configurations with refused parties or a one-class model."""
    low, n_seeds = seeds_per_cell(rows)
    with_alpha = any(c["partition"] == "dirichlet" for c in configs)
    keys = [k for k in SWEEP_AXES if k != "alpha" or with_alpha]
    extra = ["central model", "party depths (mean, max)", "accepted"]
    lines = [
        _research_note(rows),
        _spread_text(n_seeds, low),
        _DEPTHS_TEXT + (_AUTO_DEPTH_TEXT if any(c["max_depth"] == "auto" for c in configs) else ""),
        "",
        "| " + " | ".join([*keys, *(label for _, label in _TABLE_COLUMNS), *extra]) + " |",
        "|" + "---|" * (len(keys) + len(_TABLE_COLUMNS) + len(extra)),
    ]
    refused, one_class, starved, no_better, cut = [], [], [], [], []
    for config in configs:
        sel = [r for r in rows if all(r.get(k) == config[k] for k in SWEEP_AXES if k in config)]
        if not sel:  # a configuration no run of ``rows`` holds (an interrupted sweep's): no line
            continue
        cells = [str(sel[0][k]) for k in keys]
        cells += [_mean_and_spread([r[key] for r in sel], n_seeds) for key, _ in _TABLE_COLUMNS]
        cells.append(_central_model_text(sel))
        cells.append(_depths_text(sel))
        cells.append(_accepted_text([r["accepted"] for r in sel], config["parties"]))
        lines.append("| " + " | ".join(cells) + " |")
        if any(r["accepted"] < config["parties"] for r in sel):
            refused.append(_config_text(config))
        if any(r.get("federated_one_class") for r in sel):
            one_class.append(_config_text(config))
        elif any(_number(r.get("federated_accuracy")) <= _number(r.get("majority_accuracy")) for r in sel):
            no_better.append(_config_text(config))  # it predicts several classes, and still no better
        if any(_number(r.get("starved_parties")) > 0 for r in sel):
            starved.append(_config_text(config))
        if any(_number(r.get("influence_cuts")) > 0 for r in sel):
            cut.append(_config_text(config))
    # after the table, so that its header stays the fifth line
    lines += [f"\n{line}" for line in [*_rows_read_lines(rows), *_marginals_lines(rows), *_dataset_notes(rows)]]
    if refused:
        lines.append(
            f"\nWARNING: parties' releases were not accepted in runs of {'; '.join(refused)} (see 'accepted', "
            "and each run's report.json): those federated models hold fewer parties' trees."
        )
    if starved:
        lines.append(
            f"\nWARNING: in runs of {'; '.join(starved)} a party trains on fewer rows than there are classes, or on "
            "none (sweep.csv: starved_parties, party_rows_min; each run's simulation.json: realised_partition)."
        )
    if cut:
        lines.append(
            f"\nBounded influence counted less than half of a party's claim at some leaves in runs of {'; '.join(cut)} "
            "(sweep.csv: influence_cuts; each run's report.json: influence_cuts): those federated models are not the "
            "plain merge of the parties' releases."
        )
    if one_class:
        lines.append(
            f"\nThe federated model predicts (nearly) one class in runs of {'; '.join(one_class)}: "
            "no better than the majority class, whatever its accuracy."
        )
    if no_better:  # review rev-research R11: below the majority class while predicting several classes
        lines.append(
            f"\nThe federated model is no more accurate than always predicting the majority class in runs of "
            f"{'; '.join(no_better)} (sweep.csv: federated_accuracy, majority_accuracy, federated_balanced_accuracy)."
        )
    return "\n".join(lines)


_DEPTHS_TEXT = "'party depths': the mean and the largest depth the parties' trees grew, over the seeds' runs."
_AUTO_DEPTH_TEXT = (
    " At max_depth auto each party chooses its depth from a DP count of its own rows, so under unequal party sizes "
    "(a dirichlet partition) the big parties can grow deeper trees than an even split allows: one reason a "
    "dirichlet partition can beat iid with many parties."
)


def _dataset_notes(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """``Note (wall_robot_navigation): rows of this dataset are a time series; ...`` for each dataset it concerns."""
    from ._marks import dataset_note

    names = dict.fromkeys((str(r.get("dataset", "")), str(r.get("schema_fingerprint", ""))) for r in rows)
    notes = {name: note for name, schema in names if (note := dataset_note(name, schema))}
    return [f"Note ({name}): {note}" for name, note in notes.items()]


def _rows_read_lines(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """``Data: 303 rows read, 6 left out by the schema's rules, 297 used ...`` (none for rows without the counts), and
    a ``Duplicates:`` line when test rows repeat training rows."""
    from ._prepare import REPEATED_TEST_SHARE

    counts = sorted({(int(r["rows_read"]), int(r["rows_left_out"])) for r in rows if "rows_read" in r})
    if not counts:
        return []
    read, left_out = counts[0]
    repeats = [(_number(r.get("test_rows_repeated")), _number(r.get("test_rows"))) for r in rows if r.get("test_rows")]
    share = max((n / total for n, total in repeats), default=0.0)
    repeated = (
        [
            (
                f"Duplicates: up to {100 * share:.1f}% of a run's central test rows repeat a training row exactly (label "
                "included): every model's test score is optimistic, a non-private forest's most (sweep.csv: "
                "test_rows_repeated)."
            )
        ]
        if share > REPEATED_TEST_SHARE
        else []
    )
    if not left_out:
        return [f"Data: {read} rows read, all used (sweep.csv: rows_read, rows_left_out).", *repeated]
    return [
        (
            f"Data: {read} rows read, {left_out} left out by the schema's rules, {read - left_out} used: report "
            f"{read - left_out} as the data's size (each run's simulation.json: rows_read, with the rules that left "
            "rows out; sweep.csv: rows_read, rows_left_out)."
        ),
        *repeated,
    ]


def _marginals_lines(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """What the marginals part of two-class runs takes (none without one): the rows the depth and trees act on."""
    shares = sorted(
        {round(100 * float(r["marginals_share"]), 6) for r in rows if _number(r.get("marginals_share")) > 0}
    )
    if not shares:
        return []
    shown = f"{shares[0]:g}" if len(shares) == 1 else f"{shares[0]:g}-{shares[-1]:g}"  # not "90-90"
    text = (
        f"Marginals: on two classes each party spends {shown}% of its rows on one-way class histograms (the "
        "marginals part), so the depth and trees axes act on the rest only; the central model likewise, and it "
        "also runs the estimator's residual pass where its rule says so, which no federation can carry: part of "
        "the gap to central is that pass (sweep.csv: marginals_share, marginals_bins, federated_trees_alone_accuracy, "
        "federated_marginals_alone_accuracy, central_marginals_share, central_residual_pass)."
    )
    return [text]


def _number(value: Any) -> float:
    """``value`` as a float (``""``, None or text: 0)."""
    try:
        return float(value)
    except (TypeError, ValueError):
        return 0.0


def seeds_per_cell(rows: Sequence[Mapping[str, Any]]) -> tuple[int, int]:
    """The fewest and the most seeds a configuration of ``rows`` has (a report of sweeps of different grids, or of an
    interrupted sweep, has cells over different seeds: review rev-research2 N4); ``(0, 0)`` without rows."""
    counts: dict[tuple[Any, ...], set[Any]] = {}
    for r in rows:
        counts.setdefault(tuple(r.get(k, "") for k in SWEEP_AXES), set()).add(r["seed"])
    sizes = [len(seeds) for seeds in counts.values()]
    return (min(sizes), max(sizes)) if sizes else (0, 0)


def _spread_text(n_seeds: int, low: int | None = None) -> str:
    """What a cell holds, and what a central cell's ± is against a federated one's; ``low``: the fewest seeds of a
    cell, when cells differ (``2-4 seeds per cell``, each cell under the most saying its own n)."""
    from ._baselines import BASELINE_DRAWS, PARTY_ALONE_FITS

    draws = (
        f"'central DP' and 'party alone' are each the draw of median accuracy of {BASELINE_DRAWS} draws of their "
        f"noise per seed (party alone: fewer beyond {PARTY_ALONE_FITS // BASELINE_DRAWS} parties), their AUC that "
        "draw's (party alone AUC: the party and draw of median accuracy, not a median of the parties' AUCs); "
        "'federated' is one draw per seed"
    )
    if n_seeds == 1:
        return f"Cells: accuracy on the central test rows, one seed per configuration; {draws}. {_PAIRED_TEXT}"
    over = f"{n_seeds} seeds"
    mixed = ""
    if low is not None and low != n_seeds:
        over = f"the seeds of each cell, {low}-{n_seeds} seeds per cell"
        mixed = (
            f" A cell over fewer than {n_seeds} seeds says its own n, '(n = {low})', and one over a single seed has no "
            "±; cells over different seeds are not paired: compare them seed by seed only where their seeds match "
            "(sweep.csv: seed)."
        )
    return (
        f"Cells: accuracy on the central test rows, mean ± sample standard deviation over {over}; {draws}, "
        "so a central ± (of medians) understates how far one draw of its noise moves it, and a federated ± "
        f"includes it. A mean skips runs without a value (NaN): such a cell says over how many runs it is, "
        f"'(1 of {n_seeds} runs)'.{mixed} {_PAIRED_TEXT}"
    )


_PAIRED_TEXT = (
    "Paired runs: configurations run at the same seed share the split, the partition (for the same parties and "
    "partition) and each party's noise streams (a party's seed is the run's seed and its party id, whatever epsilon, "
    "depth or trees), so two configurations' runs at one seed are paired, not independent: compare them seed by "
    "seed (sweep.csv: seed, run_dir)."
)
"""What every sweep's table says of its runs across configurations."""


def _depths_text(rows: Sequence[Mapping[str, Any]]) -> str:
    """``4.2, 5``: the mean and the largest depth the parties grew over the runs' ``depths_used``; ``?`` without."""
    depths = [int(d) for r in rows for d in str(r.get("depths_used", "")).split()]
    if not depths:
        return "?"
    return f"{sum(depths) / len(depths):.1f}, {max(depths)}"


def _mean_and_spread(values: Sequence[float], n_seeds: int) -> str:
    """``0.8123 ± 0.0100`` (mean ± sample standard deviation), or ``0.8123`` with one seed; ``(2 of 3 runs)``
    after it when runs without a value (NaN) were skipped."""
    import numpy as np

    vals = np.array(values, dtype=float)
    finite = int(np.isfinite(vals).sum())
    mean = np.nanmean(vals) if finite else float("nan")
    # the mean skips runs without a value (NaN): say over how many of the cell's runs it is
    of = f" ({finite} of {len(vals)} runs)" if 0 < finite < len(vals) else ""
    # a cell over fewer seeds than the table's others (a report of other grids, an interrupted sweep): its own n
    of += f" (n = {len(vals)})" if len(vals) != n_seeds else ""
    if n_seeds == 1 or finite <= 1:  # one value, or none: no spread, not "± nan"
        return f"{mean:.4f}{of}"
    spread = np.nanstd(vals, ddof=1) if finite > 1 else float("nan")
    return f"{mean:.4f} ± {spread:.4f}{of}"


def _central_model_text(rows: Sequence[Mapping[str, Any]]) -> str:
    """``1 x 6``: the central model's trees x depth over the seeds (``5 x 4-6`` when the seeds' depths differ)."""
    return " x ".join(_range_text([r.get(key, "") for r in rows]) for key in ("central_n_trees", "central_max_depth"))


def _range_text(values: Sequence[Any]) -> str:
    """``6``, ``5-6`` over the seeds; ``?`` when no run recorded a value."""
    known = sorted(
        {str(v) for v in values if v not in ("", None)}, key=lambda v: (not v.isdigit(), int(v) if v.isdigit() else v)
    )
    if not known:
        return "?"
    return known[0] if len(known) == 1 else f"{known[0]}-{known[-1]}"


def _accepted_text(accepted: Sequence[int], parties: int) -> str:
    """``5/5``, or ``3-5/5`` when runs differ."""
    low, high = min(accepted, default=0), max(accepted, default=0)
    return f"{low}/{parties}" if low == high else f"{low}-{high}/{parties}"


def _config_text(config: Mapping[str, Any]) -> str:
    return ", ".join(f"{k} {config[k]}" for k in SWEEP_AXES if config.get(k, "") != "")
