#!/usr/bin/env python
"""Accuracy benchmark of eDPRF (issue 2): grid, paper comparisons, public-depth rule, epsilon sweep.

Datasets: diabetes prediction (undersampled per seed to 7000/7000, as in the
eDPRF paper) and the UCI wall-following robot.  Each seed: stratified 80/20
split; every model is fitted on the 80 % and scored on the 20 %.  Seeds
0..N-1; a model's ``random_state`` is its seed.

Suites (``--suites``, default all):

- ``refcheck``: the configurations of the reference rows (:data:`REFERENCE_ROWS`), with
  the multiway paper configuration at ``max_depth`` 3..6 (to settle which
  depth convention the reference used), and the non-private / diffprivlib
  forests at 35 trees, ``max_depth`` 5 and 6.
- ``grid``: both split modes x depth 4..8 x trees {5, 11, 17, 35} x epsilon
  ({1} with ``--grid eps1``, the default; {0.1, 0.25, 0.5, 0.75, 1, 2} with
  ``--grid full``), each with the non-private scikit-learn forest and the
  diffprivlib forest at the same trees/depth (and epsilon).
- ``paper``: epsilon 1, 10 trees, ``max_depth`` 5 and 6: the layer schedules
  (harmonic / uniform / linear), the "tradition" variant (exponential
  mechanism + Laplace) and, for multiway, the paper's leaky stop-when-pure
  rule (NOT differentially private; labelled so).
- ``rule``: the public-depth rule (``edprf_core/_depth_rule.py``, ``edprf_core.shape.public_depth``) at epsilon 1 for each
  number of trees, with the constant ``c`` tuned on validation data of the
  same dataset and, as a check, the constant tuned on the other dataset.
- ``sweep``: epsilon in {0.1, ..., 2} at the public-rule configuration chosen
  on validation data (trees T* and constant c*), with references at the
  same trees/depth.

Tuning (needed by ``rule`` and ``sweep``) never looks at test rows: it uses
seed 0's training rows only, split 75/25 into inner-train / validation.

Outputs (``--out``, default ``benchmarks/results``; ``TAG`` = ``accuracy`` or
``accuracy_quick``): ``TAG.csv`` (one row per config x seed), ``TAG.md``
(means +- std), ``TAG_tuning.csv`` / ``TAG_tuning.json`` and PNG figures
``TAG_vs_depth_*.png``, ``TAG_vs_trees_*.png``, ``TAG_vs_epsilon_*.png``.
Progress goes to stderr.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import csv
import json
import math
import sys
import time
import warnings
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import asdict, dataclass, fields
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _bench_common import (
    DATASETS,
    DEFAULT_DATA_DIR,
    RESULTS_DIR,
    Progress,
    Split,
    cpu_info,
    estimate_fit_gb,
    inner_split,
    load_dataset,
    log,
    make_split,
    public_bounds,
    require_diabetes,
)

from edprf_core._depth_rule import DEFAULT_BINS, DEFAULT_C
from edprf_core.shape import branching_factor, public_depth

EPS_ALL = (0.1, 0.25, 0.5, 0.75, 1.0, 2.0)
DEPTHS = (4, 5, 6, 7, 8)
TREES = (5, 11, 17, 35)
MODES = ("binary", "multiway")
SUITES = ("refcheck", "grid", "paper", "rule", "sweep")
N_BINS = 5
TUNE_SPLIT_SEED = 0  # the one seed whose training rows are used for tuning
TUNE_C = (1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0)
TUNE_EPS = (0.1, 0.5, 1.0, 2.0)
TUNE_REPS = 3
TUNE_BINS = {"binary": (5, 10, 20), "multiway": (N_BINS,)}  # multiway stays the paper's 5 bins
RULE_TREES = (1, 2, 3, 5, 11, 17, 35)
RULE_MAX_DEPTH = {"binary": 12, "multiway": 8}
DATASET_TITLE = {"diabetes": "diabetes (7000/7000)", "wall": "wall robot"}

# Reference rows: accuracies (%) measured earlier with a separate research reimplementation of eDPRF, not this
# code (eps = 1, 10 seeds, stratified 80/20 splits), which the refcheck suite compares with: label -> (diabetes, wall)
REFERENCE_ROWS = {
    "rf35": ("90.4 ± 0.6", "97.8 ± 0.6"),
    "dpl35": ("84.0 ± 2.1", "60.8 ± 2.4"),
    "mw10_d6": ("80.4 ± 1.2", "61.8 ± 2.5"),
    "mw35_d6": ("77.1 ± 1.4", "49.0 ± 4.2"),
    "mw10_d4": ("85.4 ± 0.8", "73.2 ± 2.6"),
    "pure10_d6": ("85.4 ± 0.8", "70.4 ± 2.6"),
}


# --------------------------------------------------------------------------- configurations
@dataclass(frozen=True)
class Config:
    """One model configuration (without the seed).  ``split_seed`` None: split with the run's seed."""

    dataset: str
    method: str  # "edprf" | "sklearn" | "diffprivlib"
    max_depth: int
    n_trees: int
    epsilon: float = math.nan  # nan for the non-private forest
    mode: str = ""  # "binary" | "multiway" for edprf
    n_bins: int = N_BINS
    variant: str = "pf"
    schedule: str = "harmonic"
    stop_when_pure: bool = False
    depth_rule: str = "fixed"  # "fixed", or how the public rule chose the depth
    evaluation: str = "test"  # "test", or "validation" (tuning on seed 0's training rows)

    @property
    def dp(self) -> bool:
        return self.method != "sklearn" and not self.stop_when_pure

    def label(self) -> str:
        if self.method == "sklearn":
            return "sklearn RF (non-private)"
        if self.method == "diffprivlib":
            return "diffprivlib RF"
        name = f"eDPRF {self.mode}"
        if self.mode == "multiway" and self.n_bins == N_BINS:
            name += " (paper config)"
        if self.n_bins != N_BINS:
            name += f" {self.n_bins} bins"
        if self.variant != "pf":
            name += f" {self.variant}"
        if self.schedule != "harmonic":
            name += f" {self.schedule} schedule"
        if self.stop_when_pure:
            name += " stop-when-pure (NOT DP)"
        return name

    def est_gb(self, schema) -> float:
        if self.method != "edprf":
            return 0.3
        return estimate_fit_gb(schema, self.mode, self.n_bins, self.n_trees, self.max_depth)


def _ref(dataset: str, epsilon: float, d: int, t: int, evaluation: str = "test") -> list[Config]:
    return [
        Config(dataset, "sklearn", d, t, evaluation=evaluation),
        Config(dataset, "diffprivlib", d, t, epsilon=epsilon, evaluation=evaluation),
    ]


def _edprf(dataset: str, mode: str, d: int, t: int, eps: float = 1.0, **kw) -> Config:
    return Config(dataset, "edprf", d, t, epsilon=eps, mode=mode, **kw)


@dataclass(frozen=True)
class Plan:
    seeds: tuple[int, ...]
    grid_eps: tuple[float, ...]
    depths: tuple[int, ...]
    trees: tuple[int, ...]
    ref_trees: tuple[int, ...]
    ref_depths: tuple[int, ...]
    paper_depths: tuple[int, ...]
    tune_c: tuple[float, ...]
    tune_trees: tuple[int, ...]
    tune_eps: tuple[float, ...]
    tune_reps: int
    tune_bins: dict
    rule_trees: tuple[int, ...]
    sweep_eps: tuple[float, ...]


def make_plan(args: argparse.Namespace) -> Plan:
    if args.quick:
        return Plan(
            seeds=tuple(range(args.seeds or 2)),
            grid_eps=(1.0,),
            depths=(4, 6),
            trees=(5, 17),
            ref_trees=(10,),
            ref_depths=(5, 6),
            paper_depths=(6,),
            tune_c=(4.0, 16.0, 64.0),
            tune_trees=(1, 5),
            tune_eps=(1.0,),
            tune_reps=1,
            sweep_eps=(0.25, 1.0),
            tune_bins={"binary": (5, 10), "multiway": (N_BINS,)},
            rule_trees=(1, 5),
        )
    return Plan(
        seeds=tuple(range(args.seeds or 10)),
        grid_eps=EPS_ALL if args.grid == "full" else (1.0,),
        depths=DEPTHS,
        trees=TREES,
        ref_trees=(10, 35),
        ref_depths=(3, 4, 5, 6),
        paper_depths=(5, 6),
        tune_c=TUNE_C,
        tune_trees=RULE_TREES,
        tune_eps=TUNE_EPS,
        tune_reps=TUNE_REPS,
        sweep_eps=EPS_ALL,
        tune_bins=TUNE_BINS,
        rule_trees=RULE_TREES,
    )


def refcheck_configs(plan: Plan, datasets, modes) -> list[Config]:
    out: list[Config] = []
    for ds in datasets:
        for d in (5, 6):
            if d in plan.ref_depths:
                out += _ref(ds, 1.0, d, 35)
        if "multiway" in modes:
            for t in plan.ref_trees:
                for d in plan.ref_depths:
                    out.append(_edprf(ds, "multiway", d, t))
            for d in (5, 6):
                if d in plan.ref_depths:
                    out.append(_edprf(ds, "multiway", d, 10, stop_when_pure=True))
    return out


def grid_configs(plan: Plan, datasets, modes, choice: dict | None) -> list[Config]:
    """The grid; with a tuning result, binary mode also at the validation-chosen number of bins."""
    out: list[Config] = []
    for ds in datasets:
        extra = (choice or {}).get(f"{ds}/binary", {}).get("n_bins", N_BINS)
        for eps in plan.grid_eps:
            for t in plan.trees:
                for d in plan.depths:
                    out += [_edprf(ds, m, d, t, eps) for m in modes]
                    if "binary" in modes and extra != N_BINS:
                        out.append(_edprf(ds, "binary", d, t, eps, n_bins=extra))
                    out += _ref(ds, eps, d, t)
    return out


def paper_configs(plan: Plan, datasets, modes) -> list[Config]:
    out: list[Config] = []
    for ds in datasets:
        for m in modes:
            for d in plan.paper_depths:
                for sched in ("harmonic", "uniform", "linear"):
                    out.append(_edprf(ds, m, d, 10, schedule=sched))
                out.append(_edprf(ds, m, d, 10, variant="tradition"))
                if m == "multiway":
                    out.append(_edprf(ds, m, d, 10, stop_when_pure=True))
    return out


def rule_label(c: float, origin: str) -> str:
    return f"rule c={c:g} ({origin})"


def tuning_configs(plan: Plan, datasets, modes, schemas, n_inner: dict[str, int]) -> list[Config]:
    out: set[Config] = set()
    for ds in datasets:
        for m in modes:
            for nb in plan.tune_bins[m]:
                b = branching_factor(schemas[ds], m, nb)
                for t in plan.tune_trees:
                    for eps in plan.tune_eps:
                        for c in plan.tune_c:
                            d = public_depth(n_inner[ds], t, eps, c=c, branching=b, max_depth=RULE_MAX_DEPTH[m])
                            out.add(_edprf(ds, m, d, t, eps, n_bins=nb, evaluation="validation"))
    return sorted(out, key=_sort_key)


def _sort_key(c: Config):
    return (
        c.dataset,
        c.evaluation,
        c.method,
        c.mode,
        c.n_bins,
        c.epsilon if not math.isnan(c.epsilon) else -1,
        c.n_trees,
        c.max_depth,
        c.variant,
        c.schedule,
        c.stop_when_pure,
        c.depth_rule,
    )


# --------------------------------------------------------------------------- worker
_WORKER: dict = {}


def _init_worker(data_dir: str) -> None:
    _WORKER["data_dir"] = data_dir
    _WORKER["data"] = {}
    _WORKER["splits"] = {}


def _get_split(dataset: str, seed: int, evaluation: str) -> Split:
    key = (dataset, seed, evaluation)
    if key not in _WORKER["splits"]:
        if dataset not in _WORKER["data"]:
            _WORKER["data"][dataset] = load_dataset(dataset, _WORKER["data_dir"])
        X, y, schema = _WORKER["data"][dataset]
        if evaluation == "validation":
            split = inner_split(make_split(X, y, schema, TUNE_SPLIT_SEED, dataset=dataset), seed=TUNE_SPLIT_SEED)
        else:
            split = make_split(X, y, schema, seed, dataset=dataset)
        if len(_WORKER["splits"]) > 64:
            _WORKER["splits"].clear()
        _WORKER["splits"][key] = split
    return _WORKER["splits"][key]


def run_one(cfg: Config, seed: int, max_gb: float) -> dict:
    """Fit and score one configuration for one seed (runs in a worker process)."""
    split = _get_split(cfg.dataset, seed, cfg.evaluation)
    schema = split.schema
    row = {
        **asdict(cfg),
        "label": cfg.label(),
        "dp": cfg.dp,
        "seed": seed,
        "n_train": len(split.X_train),
        "n_test": len(split.X_test),
        "accuracy": math.nan,
        "fit_s": math.nan,
        "predict_s": math.nan,
        "status": "ok",
        "est_gb": 0.0,
    }
    est = cfg.est_gb(schema)
    row["est_gb"] = round(est, 2)
    if est > max_gb:
        row["status"] = f"skipped: estimated fit memory {est:.1f} GB > --max-gb {max_gb:g}"
        return row
    t0 = time.perf_counter()
    if cfg.method == "edprf":
        from edprf_core import PrivacyLeakWarning
        from edprf_core.research import PaperEDPRFClassifier

        model = PaperEDPRFClassifier(
            schema,
            epsilon=cfg.epsilon,
            n_trees=cfg.n_trees,
            max_depth=cfg.max_depth,
            split_mode=cfg.mode,
            n_bins=cfg.n_bins,
            schedule=cfg.schedule,
            variant=cfg.variant,
            leaf="label",  # this benchmark studies the paper's leaf mechanism (bench_probabilities.py: counts)
            exploit_monotonicity=False if cfg.mode == "multiway" else None,  # multiway = the paper's configuration
            stop_when_pure=cfg.stop_when_pure,
            random_state=seed,
        )
        with warnings.catch_warnings():
            if cfg.stop_when_pure:
                warnings.simplefilter("ignore", PrivacyLeakWarning)
            model.fit(split.X_train, split.y_train)
        t1 = time.perf_counter()
        pred = model.predict(split.X_test)
        acc = float(np.mean(pred == split.y_test.to_numpy()))
    else:
        Xtr, ytr, Xte, yte = split.numeric()
        if cfg.method == "sklearn":
            from sklearn.ensemble import RandomForestClassifier

            model = RandomForestClassifier(
                n_estimators=cfg.n_trees, max_depth=cfg.max_depth, n_jobs=1, random_state=seed
            )
        else:
            from diffprivlib.models import RandomForestClassifier as DPRandomForest

            lo, hi = public_bounds(schema)
            Xtr, Xte = np.clip(Xtr, lo, hi), np.clip(Xte, lo, hi)
            model = DPRandomForest(
                n_estimators=cfg.n_trees,
                epsilon=cfg.epsilon,
                bounds=(lo, hi),
                classes=np.arange(schema.n_classes),
                max_depth=cfg.max_depth,
                random_state=seed,
            )
        model.fit(Xtr, ytr)
        t1 = time.perf_counter()
        acc = float(np.mean(model.predict(Xte) == yte))
    row.update(accuracy=acc, fit_s=round(t1 - t0, 4), predict_s=round(time.perf_counter() - t1, 4))
    return row


def _describe(cfg: Config) -> str:
    eps = "" if math.isnan(cfg.epsilon) else f" eps={cfg.epsilon:g}"
    extra = "" if cfg.depth_rule == "fixed" else f" [{cfg.depth_rule}]"
    ev = " (validation)" if cfg.evaluation == "validation" else ""
    return f"{cfg.dataset} {cfg.label()} T={cfg.n_trees} d={cfg.max_depth}{eps}{extra}{ev}"


def run_all(jobs: list[tuple[Config, int]], args: argparse.Namespace, label: str) -> list[dict]:
    """Run ``(config, seed)`` jobs on a process pool of ``--jobs`` workers; progress on stderr."""
    rows: list[dict] = []
    progress = Progress(len(jobs), label)
    # biggest first, so the pool does not end on one long job
    order = sorted(jobs, key=lambda j: -j[0].est_gb(_SCHEMAS[j[0].dataset]))
    with ProcessPoolExecutor(max_workers=args.jobs, initializer=_init_worker, initargs=(str(args.data_dir),)) as ex:
        futures = {ex.submit(run_one, cfg, seed, args.max_gb): (cfg, seed) for cfg, seed in order}
        for fut in as_completed(futures):
            cfg, seed = futures[fut]
            row = fut.result()
            rows.append(row)
            if row["status"] == "ok":
                msg = f"acc {row['accuracy']:.4f} fit {row['fit_s']:.2f}s"
            else:
                msg = row["status"]
            progress.step(f"{_describe(cfg)} seed {seed}: {msg}")
    return rows


# --------------------------------------------------------------------------- tuning
def select_rule(tuning: pd.DataFrame, plan: Plan, datasets, modes, schemas, n_inner) -> dict:
    """(n_bins*, c*, T*) per (dataset, mode), from validation accuracy only.

    The chosen triple maximises the mean validation accuracy over the tuning
    epsilons (``plan.tune_eps``); a triple with a skipped point is not eligible.
    Ties go to fewer bins, a larger c (shallower trees) and fewer trees.
    """
    choice: dict = {}
    for ds in datasets:
        for m in modes:
            sub = tuning[(tuning.dataset == ds) & (tuning["mode"] == m)]
            acc = sub.groupby(["n_bins", "n_trees", "epsilon", "max_depth"]).accuracy.mean()

            def score(nb, c, t):
                b = branching_factor(schemas[ds], m, nb)
                vals = [
                    acc.get(
                        (nb, t, e, public_depth(n_inner[ds], t, e, c=c, branching=b, max_depth=RULE_MAX_DEPTH[m])),
                        np.nan,
                    )
                    for e in plan.tune_eps
                ]
                return float(np.mean(vals))  # nan if any point is missing/skipped

            table = {
                (nb, c, t): score(nb, c, t) for nb in plan.tune_bins[m] for c in plan.tune_c for t in plan.tune_trees
            }
            eligible = {k: v for k, v in table.items() if not np.isnan(v)}
            nb, c, t = max(eligible, key=lambda k: (round(eligible[k], 6), -k[0], k[1], -k[2]))
            by_c = {str(cc): table[(nb, cc, t)] for cc in plan.tune_c}
            by_t = {str(tt): table[(nb, c, tt)] for tt in plan.tune_trees}
            by_bins = {
                str(bb): max((v for (b2, _, _), v in eligible.items() if b2 == bb), default=np.nan)
                for bb in plan.tune_bins[m]
            }
            choice[f"{ds}/{m}"] = {
                "n_bins": nb,
                "c": c,
                "trees": t,
                "branching": branching_factor(schemas[ds], m, nb),
                "n_inner": n_inner[ds],
                "val_acc": eligible[(nb, c, t)],
                "val_acc_by_c": by_c,
                "val_acc_by_trees": by_t,
                "best_val_acc_by_bins": by_bins,
            }
    return choice


# --------------------------------------------------------------------------- report
def _fmt(values: pd.Series) -> str:
    v = values.dropna()
    if v.empty:
        return "–"
    return f"{100 * v.mean():.1f} ± {100 * v.std(ddof=1) if v.size > 1 else 0.0:.1f}"


class Results:
    def __init__(self, df: pd.DataFrame) -> None:
        self.df = df[df.evaluation == "test"].copy()
        self.df["epsilon"] = self.df["epsilon"].astype(float)

    def select(self, **kw) -> pd.DataFrame:
        d = self.df
        for k, v in kw.items():
            if isinstance(v, float) and math.isnan(v):
                d = d[d[k].isna()]
            else:
                d = d[d[k] == v]
        return d

    def cell(self, **kw) -> str:
        d = self.select(**kw)
        if d.empty:
            return "–"
        if (d.status != "ok").all():
            return f"skipped (mem ~{d.est_gb.iloc[0]:.0f} GB)"
        return _fmt(d.accuracy[d.status == "ok"])

    def n_seeds(self, **kw) -> int:
        d = self.select(**kw)
        return int((d.status == "ok").sum())


def _own_rule(d: pd.DataFrame) -> pd.DataFrame:
    return d[d.depth_rule.str.endswith("(own)")]


def edprf_kw(mode, d, t, eps=1.0, **kw):
    base = {
        "method": "edprf",
        "mode": mode,
        "max_depth": d,
        "n_trees": t,
        "epsilon": eps,
        "variant": "pf",
        "schedule": "harmonic",
        "stop_when_pure": False,
        "depth_rule": "fixed",
        "n_bins": N_BINS,
    }
    base.update(kw)
    return base


def ref_kw(method, d, t, eps=1.0):
    kw = {"method": method, "max_depth": d, "n_trees": t}
    kw["epsilon"] = math.nan if method == "sklearn" else eps
    return kw


def write_report(
    df: pd.DataFrame, choice: dict | None, plan: Plan, args, out: Path, tag: str, wall_time: float | None
) -> str:
    R = Results(df)
    datasets = [d for d in DATASETS if (R.df.dataset == d).any()]
    seeds = sorted(R.df.seed.unique())
    lines = [f"# eDPRF accuracy benchmark ({tag})", ""]
    lines.append(
        f"Accuracy on the 20 % test split, mean ± std over {len(seeds)} seeds "
        f"({', '.join(map(str, seeds))}) in %. Diabetes: undersampled per seed to 7000/7000, "
        "stratified 80/20 (11,200 train / 2,800 test). Wall robot: stratified 80/20 (4,364 / 1,092); "
        "its rows are a time series, so random splits are optimistic for every method. "
        "`max_depth` = split levels (scikit-learn convention; node layers = max_depth + 1). "
        "eDPRF multiway = the paper's configuration (5 bins, exploit_monotonicity=False); "
        "eDPRF binary = 5 bins (4 thresholds per continuous feature) or the number of bins chosen on validation "
        "data where stated, monotone noise scale (valid under add-remove). All eDPRF runs: harmonic schedule, "
        "parallel composition (each row in one tree), permute-and-flip, unless stated. "
        "References: scikit-learn RandomForestClassifier (non-private, same trees/depth) and diffprivlib "
        "RandomForestClassifier (same ε/trees/depth, bounds from the public schema, classes=arange(K))."
    )
    lines.append("")
    run_file = out / f"{tag}_run.json"
    if wall_time is not None:
        run = {
            "command": " ".join(sys.argv),
            "wall_time_min": round(wall_time / 60, 1),
            "machine": cpu_info(),
            "jobs": args.jobs,
            "max_gb": args.max_gb,
        }
        run_file.write_text(json.dumps(run, indent=2))
    elif run_file.is_file():
        run = json.loads(run_file.read_text())
    else:
        run = None
    if run:
        lines.append(
            f"Run: `{run['command']}`, wall time {run['wall_time_min']:.1f} min on {run['machine']} "
            f"(pool of {run['jobs']})."
        )
        lines.append("")
    skipped = R.df[R.df.status != "ok"]
    if not skipped.empty:
        cells = skipped.drop_duplicates(["dataset", "mode", "n_trees", "max_depth", "epsilon"])
        lines.append(
            "Skipped for memory (edprf_core's builder materialises a nodes × bins × classes histogram "
            f"per layer; cap --max-gb {run['max_gb'] if run else args.max_gb:g}): "
            + "; ".join(
                f"{r.dataset} {r['mode']} T={r.n_trees} d={r.max_depth} (~{r.est_gb:.0f} GB)"
                for _, r in cells.iterrows()
            )
            + "."
        )
        lines.append("")

    # refcheck
    if (
        R.select(method="edprf", mode="multiway", n_trees=10).shape[0]
        or R.select(method="sklearn", n_trees=35).shape[0]
    ):
        lines += [
            "## Reference check against the earlier reimplementation (ε = 1)",
            "",
            "| configuration | max_depth | diabetes | wall | reference (diabetes / wall) |",
            "|---|---|---|---|---|",
        ]
        rows = [
            ("non-private RF, 35 trees", [ref_kw("sklearn", d, 35) for d in (5, 6)], "rf35", "depth 6"),
            ("diffprivlib RF, 35 trees", [ref_kw("diffprivlib", d, 35) for d in (5, 6)], "dpl35", "depth 6"),
            ("eDPRF multiway, 10 trees", [edprf_kw("multiway", d, 10) for d in (5, 6)], "mw10_d6", "depth 6"),
            ("eDPRF multiway, 35 trees", [edprf_kw("multiway", d, 35) for d in (5, 6)], "mw35_d6", "depth 6"),
            ("eDPRF multiway, 10 trees", [edprf_kw("multiway", d, 10) for d in (3, 4)], "mw10_d4", "depth 4"),
            (
                "eDPRF multiway stop-when-pure (NOT DP), 10 trees",
                [edprf_kw("multiway", d, 10, stop_when_pure=True) for d in (5, 6)],
                "pure10_d6",
                "depth 6",
            ),
        ]
        for name, kws, ref, refdepth in rows:
            for kw in kws:
                cells = [R.cell(dataset=ds, **kw) for ds in ("diabetes", "wall")]
                if all(c == "–" for c in cells):
                    continue
                r = REFERENCE_ROWS[ref]
                lines.append(f"| {name} | {kw['max_depth']} | {cells[0]} | {cells[1]} | {r[0]} / {r[1]} ({refdepth}) |")
        lines.append("")

    # grid
    g = R.select(method="edprf", depth_rule="fixed", variant="pf", schedule="harmonic", stop_when_pure=False)
    grid_eps = sorted(g[g.n_trees.isin(plan.trees) & g.max_depth.isin(plan.depths)].epsilon.unique())
    for ds in datasets:
        extra = (choice or {}).get(f"{ds}/binary", {}).get("n_bins", N_BINS)
        extra_col = extra != N_BINS and not R.select(dataset=ds, method="edprf", n_bins=extra, depth_rule="fixed").empty
        for eps in grid_eps:
            sel = R.select(dataset=ds, method="edprf", epsilon=eps, depth_rule="fixed")
            if sel[sel.n_trees.isin(plan.trees) & sel.max_depth.isin(plan.depths)].empty:
                continue
            head = "| trees | max_depth | eDPRF binary, 5 bins |"
            head += f" eDPRF binary, {extra} bins (validation-chosen) |" if extra_col else ""
            head += " eDPRF multiway (paper) | sklearn RF (non-private) | diffprivlib RF |"
            lines += [f"## Grid: {DATASET_TITLE[ds]}, ε = {eps:g}", "", head, "|" + "---|" * (head.count("|") - 1)]
            for t in plan.trees:
                for d in plan.depths:
                    cells = [R.cell(dataset=ds, **edprf_kw("binary", d, t, eps))]
                    if extra_col:
                        cells.append(R.cell(dataset=ds, **edprf_kw("binary", d, t, eps, n_bins=extra)))
                    cells += [
                        R.cell(dataset=ds, **edprf_kw("multiway", d, t, eps)),
                        R.cell(dataset=ds, **ref_kw("sklearn", d, t)),
                        R.cell(dataset=ds, **ref_kw("diffprivlib", d, t, eps)),
                    ]
                    lines.append(f"| {t} | {d} | " + " | ".join(cells) + " |")
            lines.append("")

    # paper comparisons
    if not R.select(method="edprf", n_trees=10, variant="tradition").empty:
        lines += [
            "## Paper comparisons (ε = 1, 10 trees, 5 bins)",
            "",
            "| variant | max_depth | diabetes binary | diabetes multiway | wall binary | wall multiway |",
            "|---|---|---|---|---|---|",
        ]
        variants = [
            ("permute-and-flip, harmonic schedule (eDPRF)", {}),
            ("permute-and-flip, uniform schedule", {"schedule": "uniform"}),
            ("permute-and-flip, linear schedule", {"schedule": "linear"}),
            ("tradition (exponential mech. + Laplace), harmonic", {"variant": "tradition"}),
            ("stop-when-pure, harmonic (NOT DP: leaks via tree shape)", {"stop_when_pure": True}),
        ]
        for d in plan.paper_depths:
            for name, kw in variants:
                cells = [
                    R.cell(dataset=ds, **edprf_kw(m, d, 10, **kw))
                    for ds in ("diabetes", "wall")
                    for m in ("binary", "multiway")
                ]
                lines.append(f"| {name} | {d} | " + " | ".join(cells) + " |")
        lines.append("")

    # public rule
    if choice:
        lines += [
            "## Public-depth rule",
            "",
            (
                "Depth = the largest d with n·ε_leaf(d) / (T·b^d) ≥ c (expected rows per leaf × leaf budget; "
                "b = 2 for binary, the geometric mean of the code counts for multiway; n = the public training "
                "size, 11,200 diabetes / 4,364 wall). See `edprf_core/_depth_rule.py`. The number of bins, c and the number "
                f"of trees T* were chosen on a validation split (75/25) of seed {TUNE_SPLIT_SEED}'s training rows "
                f"only: the triple maximising the mean validation accuracy over ε ∈ {list(plan.tune_eps)} "
                f"(bins ∈ {list(plan.tune_bins.get('binary', ()))} for binary, 5 for multiway; c ∈ "
                f"{[float(c) for c in plan.tune_c]}; T ∈ {list(plan.tune_trees)}; {plan.tune_reps} fits per point). "
                "Test rows were never used for a choice."
            ),
            "",
            "| dataset / mode | bins* | c* | T* | validation acc. | by c (bins*, T*) | by T (bins*, c*) | best by bins |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for key, ch in choice.items():
            by_c = ", ".join(f"{float(c):g}: {100 * v:.1f}" for c, v in ch["val_acc_by_c"].items())
            by_t = ", ".join(f"{t}: {100 * v:.1f}" for t, v in ch["val_acc_by_trees"].items())
            by_b = ", ".join(f"{b}: {100 * v:.1f}" for b, v in ch["best_val_acc_by_bins"].items())
            lines.append(
                f"| {key} | {ch['n_bins']} | {ch['c']:g} | {ch['trees']} | {100 * ch['val_acc']:.1f} | "
                f"{by_c} | {by_t} | {by_b} |"
            )
        lines.append("")
        for ds in datasets:
            rule_rows = R.select(dataset=ds, method="edprf", epsilon=1.0)
            rule_rows = rule_rows[rule_rows.depth_rule != "fixed"]
            if rule_rows.empty:
                continue
            other = next(o for o in DATASETS if o != ds)
            co, cx, cm = (choice.get(k, {}) for k in (f"{ds}/binary", f"{other}/binary", f"{ds}/multiway"))
            lines += [
                f"### Public rule at ε = 1: {DATASET_TITLE[ds]}",
                "",
                (
                    f"| trees | binary, own ({co.get('n_bins', '–')} bins, c={co.get('c', '–')}) | "
                    f"binary, other dataset's ({cx.get('n_bins', '–')} bins, c={cx.get('c', '–')}) | "
                    f"binary, defaults ({DEFAULT_BINS} bins, c={DEFAULT_C:g}) | "
                    f"multiway, own (5 bins, c={cm.get('c', '–')}) | sklearn RF at the own binary depth | "
                    "diffprivlib RF at the own binary depth |"
                ),
                "|---|---|---|---|---|---|---|",
            ]
            for t in plan.rule_trees:
                cells = []
                for m, origin in (
                    ("binary", "own"),
                    ("binary", "other dataset"),
                    ("binary", "default"),
                    ("multiway", "own"),
                ):
                    r = rule_rows[
                        (rule_rows["mode"] == m)
                        & (rule_rows.n_trees == t)
                        & rule_rows.depth_rule.str.endswith(f"({origin})")
                    ]
                    if r.empty:
                        cells.append("–")
                    elif (r.status != "ok").all():
                        cells.append(f"d={int(r.max_depth.iloc[0])}: skipped (mem)")
                    else:
                        cells.append(f"d={int(r.max_depth.iloc[0])}: {_fmt(r.accuracy[r.status == 'ok'])}")
                rb = rule_rows[
                    (rule_rows["mode"] == "binary")
                    & (rule_rows.n_trees == t)
                    & rule_rows.depth_rule.str.endswith("(own)")
                ]
                if rb.empty:
                    cells += ["–", "–"]
                else:
                    db = int(rb.max_depth.iloc[0])
                    cells += [
                        R.cell(dataset=ds, **ref_kw("sklearn", db, t)),
                        R.cell(dataset=ds, **ref_kw("diffprivlib", db, t, 1.0)),
                    ]
                marker = " (T*)" if t == co.get("trees") else ""
                lines.append(f"| {t}{marker} | " + " | ".join(cells) + " |")
            lines.append("")

        # sweep
        for ds in datasets:
            sw = _own_rule(R.select(dataset=ds, method="edprf"))
            if sw.epsilon.nunique() < 2:
                continue
            cb, cm = choice.get(f"{ds}/binary"), choice.get(f"{ds}/multiway")
            desc = lambda ch: "–" if not ch else f"T* = {ch['trees']}, {ch['n_bins']} bins, c* = {ch['c']:g}"
            lines += [
                f"### ε sweep at the public-rule configuration: {DATASET_TITLE[ds]}",
                "",
                f"binary: {desc(cb)}; multiway: {desc(cm)}; references at the binary row's trees and depth.",
                "",
                "| ε | eDPRF binary (rule) | eDPRF multiway (rule) | diffprivlib RF | sklearn RF (non-private) |",
                "|---|---|---|---|---|",
            ]
            for eps in plan.sweep_eps:
                cells = []
                db = None
                for m, ch in (("binary", cb), ("multiway", cm)):
                    r = (
                        sw[
                            (sw["mode"] == m)
                            & (sw.n_trees == ch["trees"])
                            & (sw.epsilon == eps)
                            & (sw.n_bins == ch["n_bins"])
                        ]
                        if ch
                        else sw.iloc[:0]
                    )
                    if r.empty:
                        cells.append("–")
                        continue
                    d = int(r.max_depth.iloc[0])
                    if m == "binary":
                        db = d
                    ok = r[r.status == "ok"]
                    cells.append(f"d={d}: {_fmt(ok.accuracy)}" if len(ok) else f"d={d}: skipped (mem)")
                if db is not None:
                    cells += [
                        R.cell(dataset=ds, **ref_kw("diffprivlib", db, cb["trees"], eps)),
                        f"d={db}: " + R.cell(dataset=ds, **ref_kw("sklearn", db, cb["trees"])),
                    ]
                else:
                    cells += ["–", "–"]
                lines.append(f"| {eps:g} | " + " | ".join(cells) + " |")
            lines.append("")
    text = "\n".join(lines) + "\n"
    (out / f"{tag}.md").write_text(text)
    return text


def write_plots(df: pd.DataFrame, choice: dict | None, plan: Plan, out: Path, tag: str) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    R = Results(df)
    made: list[Path] = []
    styles = {
        "eDPRF binary": ("tab:blue", "o"),
        "eDPRF binary, tuned bins": ("tab:purple", "D"),
        "eDPRF multiway (paper)": ("tab:orange", "s"),
        "sklearn RF (non-private)": ("black", "^"),
        "diffprivlib RF": ("tab:green", "v"),
    }

    def series(ds, key, xs, kwf):
        m, s = [], []
        for x in xs:
            d = R.select(dataset=ds, **kwf(x))
            d = d[d.status == "ok"].accuracy
            m.append(100 * d.mean() if len(d) else np.nan)
            s.append(100 * d.std(ddof=1) if len(d) > 1 else np.nan)
        return np.array(m), np.array(s)

    def methods(d, t, eps=1.0, extra=N_BINS):
        return {
            "eDPRF binary": edprf_kw("binary", d, t, eps),
            "eDPRF binary, tuned bins": edprf_kw("binary", d, t, eps, n_bins=extra),
            "eDPRF multiway (paper)": edprf_kw("multiway", d, t, eps),
            "sklearn RF (non-private)": ref_kw("sklearn", d, t),
            "diffprivlib RF": ref_kw("diffprivlib", d, t, eps),
        }

    for ds in DATASETS:
        g = R.select(dataset=ds, method="edprf", epsilon=1.0, depth_rule="fixed")
        if g[g.n_trees.isin(plan.trees) & g.max_depth.isin(plan.depths)].empty:
            continue
        extra = (choice or {}).get(f"{ds}/binary", {}).get("n_bins", N_BINS)
        for axis in ("depth", "trees"):
            panels = plan.trees if axis == "depth" else plan.depths
            xs = plan.depths if axis == "depth" else plan.trees
            fig, axes = plt.subplots(1, len(panels), figsize=(3.4 * len(panels), 3.3), sharey=True, squeeze=False)
            for ax, p in zip(axes[0], panels):
                for name, (col, mk) in styles.items():
                    if name == "eDPRF binary, tuned bins" and extra == N_BINS:
                        continue
                    if axis == "depth":
                        m, s = series(ds, name, xs, lambda x: methods(x, p, extra=extra)[name])
                    else:
                        m, s = series(ds, name, xs, lambda x: methods(p, x, extra=extra)[name])
                    shown = {
                        "eDPRF binary": "eDPRF binary, 5 bins",
                        "eDPRF binary, tuned bins": f"eDPRF binary, {extra} bins",
                    }.get(name, name)
                    ax.errorbar(xs, m, yerr=s, color=col, marker=mk, capsize=2, label=shown)
                ax.set_title(f"{'trees' if axis == 'depth' else 'max_depth'} = {p}")
                ax.set_xlabel("max_depth" if axis == "depth" else "trees")
                ax.set_xticks(list(xs))
                ax.grid(alpha=0.3)
            axes[0][0].set_ylabel("test accuracy (%)")
            axes[0][-1].legend(fontsize=7, loc="best")
            fig.suptitle(f"{DATASET_TITLE[ds]}: accuracy vs {axis} (ε = 1, mean ± std over seeds)")
            made.append(_save_figure(fig, out / f"{tag}_vs_{axis}_{ds}.png"))
        if choice and f"{ds}/binary" in choice:
            sw = _own_rule(R.select(dataset=ds, method="edprf"))
            if sw.epsilon.nunique() < 2:
                continue
            fig, ax = plt.subplots(figsize=(5.5, 3.8))
            cb = choice[f"{ds}/binary"]
            xs = list(plan.sweep_eps)
            rule_depth = {}
            for m in ("binary", "multiway"):
                ch = choice.get(f"{ds}/{m}")
                if not ch:
                    continue
                mm, ss = [], []
                for e in xs:
                    r = sw[
                        (sw["mode"] == m)
                        & (sw.n_trees == ch["trees"])
                        & (sw.epsilon == e)
                        & (sw.n_bins == ch["n_bins"])
                        & (sw.status == "ok")
                    ]
                    mm.append(100 * r.accuracy.mean() if len(r) else np.nan)
                    ss.append(100 * r.accuracy.std(ddof=1) if len(r) > 1 else np.nan)
                    if m == "binary" and len(r):
                        rule_depth[e] = int(r.max_depth.iloc[0])
                col, mk = styles[f"eDPRF {m}" + (" (paper)" if m == "multiway" else "")]
                ax.errorbar(
                    xs,
                    mm,
                    yerr=ss,
                    color=col,
                    marker=mk,
                    capsize=2,
                    label=f"eDPRF {m}, public depth, T={ch['trees']}, {ch['n_bins']} bins",
                )
            for name in ("diffprivlib RF", "sklearn RF (non-private)"):
                mm, ss = [], []
                for e in xs:
                    d = rule_depth.get(e)
                    if d is None:
                        mm.append(np.nan), ss.append(np.nan)
                        continue
                    kw = ref_kw("diffprivlib" if name.startswith("diff") else "sklearn", d, cb["trees"], e)
                    r = R.select(dataset=ds, **kw)
                    r = r[r.status == "ok"].accuracy
                    mm.append(100 * r.mean() if len(r) else np.nan)
                    ss.append(100 * r.std(ddof=1) if len(r) > 1 else np.nan)
                col, mk = styles[name]
                ax.errorbar(xs, mm, yerr=ss, color=col, marker=mk, capsize=2, label=f"{name} (same T, depth)")
            ax.set_xscale("log")
            ax.set_xticks(xs)
            ax.set_xticklabels([f"{e:g}" for e in xs])
            ax.set_xlabel("ε")
            ax.set_ylabel("test accuracy (%)")
            ax.grid(alpha=0.3)
            ax.legend(fontsize=7)
            ax.set_title(f"{DATASET_TITLE[ds]}: accuracy vs ε")
            made.append(_save_figure(fig, out / f"{tag}_vs_epsilon_{ds}.png"))
    return made


def _save_figure(fig, path: Path) -> Path:
    import matplotlib.pyplot as plt

    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


# --------------------------------------------------------------------------- main
_SCHEMAS: dict = {}
COLUMNS = [f.name for f in fields(Config)] + [
    "label",
    "dp",
    "seed",
    "n_train",
    "n_test",
    "accuracy",
    "fit_s",
    "predict_s",
    "status",
    "est_gb",
]


def _config_key(cfg: Config) -> tuple:
    """Hashable identity of a configuration (NaN epsilon compares equal to NaN)."""
    return tuple(
        None if isinstance(v, float) and math.isnan(v) else (v.item() if hasattr(v, "item") else v)
        for v in (getattr(cfg, f.name) for f in fields(Config))
    )


def _write_csv(rows: list[dict], path: Path) -> None:
    rows = sorted(rows, key=lambda r: (_sort_key(Config(**{f.name: r[f.name] for f in fields(Config)})), r["seed"]))
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=COLUMNS)
        w.writeheader()
        w.writerows(rows)


def _read_csv(path: Path) -> pd.DataFrame:
    df = pd.read_csv(path)
    df["mode"] = df["mode"].fillna("")
    return df


def parse_only(values: list[str] | None) -> tuple[list[str], list[str]]:
    datasets, modes = set(), set()
    for v in values or []:
        for token in v.replace(",", " ").replace("/", " ").split():
            if token in DATASETS:
                datasets.add(token)
            elif token in MODES:
                modes.add(token)
            else:
                sys.exit(f"error: --only: unknown token {token!r}; use dataset names {DATASETS} and/or modes {MODES}")
    return ([d for d in DATASETS if d in datasets] or list(DATASETS), [m for m in MODES if m in modes] or list(MODES))


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--quick", action="store_true", help="small smoke run (2 seeds, few configs; < 2 minutes)")
    p.add_argument(
        "--grid", choices=("eps1", "full"), default="eps1", help="grid suite: epsilon 1 only (default) or all of 0.1..2"
    )
    p.add_argument("--suites", default=",".join(SUITES), help=f"comma-separated subset of {SUITES}")
    p.add_argument(
        "--only",
        action="append",
        metavar="DATASET/MODE",
        help="restrict to datasets (diabetes, wall) and/or modes (binary, multiway), e.g. wall/binary",
    )
    p.add_argument("--seeds", type=int, default=None, help="number of seeds (default 10; --quick: 2)")
    p.add_argument("--jobs", type=int, default=2, help="worker processes (default 2)")
    p.add_argument(
        "--max-gb",
        type=float,
        default=4.0,
        help="skip eDPRF configs whose estimated fit memory exceeds this (default 4 GB per worker)",
    )
    p.add_argument(
        "--data-dir",
        type=Path,
        default=DEFAULT_DATA_DIR,
        help=f"directory holding diabetes_prediction/diabetes_prediction_dataset.csv (default {DEFAULT_DATA_DIR})",
    )
    p.add_argument("--out", type=Path, default=RESULTS_DIR, help="output directory (default benchmarks/results)")
    p.add_argument("--tag", default=None, help="output file stem (default accuracy / accuracy_quick)")
    p.add_argument(
        "--resume",
        action="store_true",
        help="keep the rows of an existing TAG.csv and run only the missing config x seed pairs",
    )
    p.add_argument(
        "--reuse-tuning", action="store_true", help="use an existing TAG_tuning.json instead of tuning again"
    )
    p.add_argument("--report-only", action="store_true", help="rebuild Markdown and plots from an existing TAG.csv")
    args = p.parse_args(argv)

    tag = args.tag or ("accuracy_quick" if args.quick else "accuracy")
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    plan = make_plan(args)
    datasets, modes = parse_only(args.only)
    suites = [s.strip() for s in args.suites.split(",") if s.strip()]
    bad = [s for s in suites if s not in SUITES]
    if bad:
        sys.exit(f"error: unknown suites {bad}; choose from {SUITES}")
    if "diabetes" in datasets:
        require_diabetes(args.data_dir)

    if args.report_only:
        df = _read_csv(out / f"{tag}.csv")
        tuning_json = out / f"{tag}_tuning.json"
        choice = json.loads(tuning_json.read_text()) if tuning_json.is_file() else None
        print(write_report(df, choice, plan, args, out, tag, None))
        write_plots(df, choice, plan, out, tag)
        return

    start = time.perf_counter()
    splits0 = {}
    for ds in datasets:
        X, y, schema = load_dataset(ds, args.data_dir)
        _SCHEMAS[ds] = schema
        splits0[ds] = make_split(X, y, schema, TUNE_SPLIT_SEED, dataset=ds)
    n_train = {ds: len(s.X_train) for ds, s in splits0.items()}  # fixed by design: a public number
    n_inner = {ds: len(inner_split(s, TUNE_SPLIT_SEED).X_train) for ds, s in splits0.items()}
    log(
        f"bench_accuracy: tag={tag} datasets={datasets} modes={modes} suites={suites} seeds={len(plan.seeds)} "
        f"jobs={args.jobs} n_train={n_train}"
    )

    # stage 1: tuning of the public-depth rule on validation data
    choice = None
    tuning_json = out / f"{tag}_tuning.json"
    if {"rule", "sweep"} & set(suites) and args.reuse_tuning and tuning_json.is_file():
        choice = json.loads(tuning_json.read_text())
        log(f"stage 1/2: reusing the tuning result {tuning_json}")
    elif {"rule", "sweep"} & set(suites):
        tune = tuning_configs(plan, datasets, modes, _SCHEMAS, n_inner)
        jobs = [(cfg, 1000 + r) for cfg in tune for r in range(plan.tune_reps)]
        log(f"stage 1/2: tuning the public-depth rule on validation data ({len(jobs)} fits)")
        tuning_rows = run_all(jobs, args, "tune ")
        _write_csv(tuning_rows, out / f"{tag}_tuning.csv")
        choice = select_rule(_read_csv(out / f"{tag}_tuning.csv"), plan, datasets, modes, _SCHEMAS, n_inner)
        (out / f"{tag}_tuning.json").write_text(json.dumps(choice, indent=2))
        for k, v in choice.items():
            log(f"  public rule {k}: c* = {v['c']:g}, T* = {v['trees']}")

    # stage 2: test-set runs
    configs: list[Config] = []
    if "refcheck" in suites:
        configs += refcheck_configs(plan, datasets, modes)
    if "grid" in suites:
        configs += grid_configs(plan, datasets, modes, choice)
    if "paper" in suites:
        configs += paper_configs(plan, datasets, modes)
    if choice and "rule" in suites:
        for ds in datasets:
            other = next(o for o in DATASETS if o != ds)
            for m in modes:
                own = choice[f"{ds}/{m}"]
                origins = [("own", own)]
                if m == "binary" and f"{other}/binary" in choice:
                    origins.append(("other dataset", choice[f"{other}/binary"]))
                if m == "binary":
                    origins.append(("default", {"c": DEFAULT_C, "n_bins": DEFAULT_BINS, "branching": 2.0}))
                for origin, ch in origins:
                    for t in plan.rule_trees:
                        d = public_depth(
                            n_train[ds], t, 1.0, c=ch["c"], branching=ch["branching"], max_depth=RULE_MAX_DEPTH[m]
                        )
                        configs.append(
                            _edprf(ds, m, d, t, 1.0, n_bins=ch["n_bins"], depth_rule=rule_label(ch["c"], origin))
                        )
                        if m == "binary" and origin == "own":
                            configs += _ref(ds, 1.0, d, t)
    if choice and "sweep" in suites:
        for ds in datasets:
            for m in modes:
                ch = choice[f"{ds}/{m}"]
                for eps in plan.sweep_eps:
                    d = public_depth(
                        n_train[ds], ch["trees"], eps, c=ch["c"], branching=ch["branching"], max_depth=RULE_MAX_DEPTH[m]
                    )
                    configs.append(
                        _edprf(ds, m, d, ch["trees"], eps, n_bins=ch["n_bins"], depth_rule=rule_label(ch["c"], "own"))
                    )
                    if m == "binary":
                        configs += _ref(ds, eps, d, ch["trees"])
    configs = [c for c in dict.fromkeys(configs) if c.method != "edprf" or c.mode in modes]
    jobs = [(cfg, s) for cfg in configs for s in plan.seeds]
    previous: list[dict] = []
    if args.resume and (out / f"{tag}.csv").is_file():
        previous = _read_csv(out / f"{tag}.csv").to_dict("records")
        done = {(_config_key(Config(**{f.name: r[f.name] for f in fields(Config)})), int(r["seed"])) for r in previous}
        jobs = [(cfg, s) for cfg, s in jobs if (_config_key(cfg), s) not in done]
        log(f"--resume: {len(previous)} rows kept from {out / (tag + '.csv')}")
    log(f"stage 2/2: {len(configs)} configurations x {len(plan.seeds)} seeds; {len(jobs)} fits to run")
    rows = previous + run_all(jobs, args, "")
    _write_csv(rows, out / f"{tag}.csv")
    wall = time.perf_counter() - start
    df = _read_csv(out / f"{tag}.csv")
    text = write_report(df, choice, plan, args, out, tag, None if previous else wall)
    if previous:
        log(f"--resume: this run took {wall / 60:.1f} min; the report keeps the original run's metadata")
    plots = write_plots(df, choice, plan, out, tag)
    print(text)
    log(f"wrote {out / (tag + '.csv')}, {out / (tag + '.md')}, {len(plots)} plots; total {wall / 60:.1f} min")


if __name__ == "__main__":
    main()
