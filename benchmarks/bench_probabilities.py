#!/usr/bin/env python
"""Probability benchmark (issue 9): accuracy, ROC AUC, log loss, Brier score and calibration of DP classifiers.

What a clinician or a credit officer acts on is a probability, so every model
is scored on its ``predict_proba`` output, not only on its hard labels.

Protocol
--------
Datasets (``benchmarks/_bench_datasets.py``): diabetes prediction (undersampled
per seed to 7000/7000), bank marketing (embedded, without ``duration``), the
wall-following robot (embedded, 4 classes) and heart disease Cleveland
(``num > 0``).  For each seed 0..N-1: stratified 80/20 split with that seed
(``_bench_common.make_split``); every model is fitted on the 80 % with
``random_state`` = seed and scored on the 20 %.  Bounds, bins, categories and
classes come from the project's public schemas, never from the data.

Models (``--models``)
---------------------
- ``edprf-counts``: ``EDPRFClassifier(schema, epsilon=eps, random_state=seed,
  leaf="counts")``, everything else at the defaults (plus ``--edprf-kwargs``).
  Skipped, with a message, while the estimator has no ``leaf`` parameter.
- ``edprf-trees``: as ``edprf-counts`` with ``marginals_share=0``: the trees
  alone, which were the defaults before the marginals part.
- ``edprf-label``: the configuration recommended before leaf counts: binary
  splits, 20 bins, one tree, ``max_depth = public_depth(n_train, 1, eps)``
  (trees only: ``marginals_share=0``)
  (the training size is fixed by the protocol, hence public), and
  ``leaf="label"`` when that parameter exists.
- ``dp-ebm``: InterpretML's ``DPExplainableBoostingClassifier(epsilon=eps,
  delta=1e-6)``, (ε, δ)-DP, with the schema's bounds as ``privacy_bounds`` and
  the declared category lists as feature types (nothing about the domain is
  read from the data; DP-EBM still spends 10 % of ε on its private binning).
  Binary tasks only (the library refuses multiclass).
- ``diffprivlib-rf``: ``diffprivlib.models.RandomForestClassifier`` with 35
  trees and ``max_depth`` 6 (the ``refcheck`` configuration of
  ``bench_accuracy.py``), ``bounds`` from the schema, ``classes=arange(K)``,
  data clipped to the bounds.
- ``sklearn-rf`` / ``sklearn-hgb``: non-private ceilings (scikit-learn
  defaults; HistGradientBoosting gets the schema's categorical mask).
- ``majority``: the training prior as the probability of every test row.

Metrics: accuracy (argmax of the probabilities), ROC AUC (binary; macro
one-vs-rest for the wall robot), log loss (scikit-learn: probabilities clipped
to [2.2e-16, 1 - 2.2e-16], so a hard wrong 0/1 prediction costs 36.04 nats),
Brier score (binary: mean (p - y)^2; multiclass: mean sum over classes), and
for binary tasks the expected calibration error (10 equal-width bins of the
positive-class probability) with the per-bin sums kept for the reliability
diagram.

Outputs (``--out``, default ``benchmarks/results``; ``TAG`` = ``probabilities``
or ``probabilities_quick``): ``TAG.csv`` (one row per dataset x model x ε x
seed; the non-private models once per seed with an empty ε), ``TAG.md``,
``TAG_calibration_diabetes.png``.  Reference rows (every model but
``edprf-*``) are cached in ``probabilities_reference.csv`` and reused unless
``--recompute-references`` (a row is reused only when its settings string,
which includes the library versions, matches).  Rows of an existing
``TAG.csv`` that this run does not refit (other models, datasets, ε or seeds)
are kept unless ``--fresh``, so ``--models edprf-counts`` adds that column
without rerunning the others.

Privacy of the benchmark itself: all runs are seeded for reproducibility.  A
seeded run is research, not a DP release (its noise is predictable); the
guarantees quoted are those of the mechanisms run with fresh randomness.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import json
import logging
import math
import sys
import time
import warnings
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _bench_common import (
    DEFAULT_DATA_DIR,
    RESULTS_DIR,
    Progress,
    Split,
    cpu_info,
    log,
    make_split,
    public_bounds,
    require_diabetes,
)
from _bench_datasets import DATASET_TITLE, DATASETS, HEART_RELPATH, load_dataset

from edprf_core import CategoricalFeature, Schema
from edprf_core.encoding import encode_labels
from edprf_core.shape import public_depth

EPS_ALL = (0.1, 0.5, 1.0, 2.0)
N_SEEDS = 10
MODELS = (
    "edprf-counts",
    "edprf-trees",
    "edprf-label",
    "dp-ebm",
    "diffprivlib-rf",
    "sklearn-rf",
    "sklearn-hgb",
    "majority",
)
EDPRF_MODELS = ("edprf-counts", "edprf-trees", "edprf-label")
REFERENCE_MODELS = tuple(m for m in MODELS if m not in EDPRF_MODELS)
NON_PRIVATE = ("sklearn-rf", "sklearn-hgb", "majority")
DPEBM_DELTA = 1e-6
DPL_TREES, DPL_DEPTH = 35, 6
LABEL_BINS = 20
N_CAL_BINS = 10
AUC_TARGETS = {"diabetes": 0.94, "bank": 0.745}
HEADLINE_EPS = 1.0
CALIBRATION_MODELS = ("edprf-counts", "edprf-label", "dp-ebm")
REFERENCE_CACHE = "probabilities_reference.csv"
PROTOCOL = "split=_bench_common.make_split(80/20 stratified; diabetes 7000/7000 per seed)"
MODEL_TITLE = {
    "edprf-counts": "eDPRF, leaf counts (defaults)",
    "edprf-trees": "eDPRF, trees only (the defaults before the marginals part)",
    "edprf-label": "eDPRF, leaf label (1 tree, 20 bins, public depth)",
    "dp-ebm": f"DP-EBM (δ = {DPEBM_DELTA:g})",
    "diffprivlib-rf": f"diffprivlib RF ({DPL_TREES} trees, depth {DPL_DEPTH})",
    "sklearn-rf": "sklearn RF (non-private)",
    "sklearn-hgb": "sklearn HistGB (non-private)",
    "majority": "majority / prior",
}
GUARANTEE = {
    "edprf-counts": "ε-DP",
    "edprf-trees": "ε-DP",
    "edprf-label": "ε-DP",
    "dp-ebm": "(ε, δ)-DP",
    "diffprivlib-rf": "ε-DP",
    "sklearn-rf": "non-private",
    "sklearn-hgb": "non-private",
    "majority": "non-private",
}
COLUMNS = [
    "dataset",
    "model",
    "epsilon",
    "delta",
    "guarantee",
    "seed",
    "n_train",
    "n_test",
    "n_classes",
    "accuracy",
    "auc",
    "log_loss",
    "brier",
    "ece",
    "fit_s",
    "predict_s",
    "status",
    "settings",
    "reliability",
]
COST = {
    "sklearn-rf": 8.0,
    "dp-ebm": 3.0,
    "sklearn-hgb": 2.0,
    "diffprivlib-rf": 2.0,
    "edprf-counts": 2.0,
    "edprf-trees": 2.0,
    "edprf-label": 1.0,
    "majority": 0.01,
}
DATASET_COST = {"bank": 4.0, "diabetes": 1.5, "wall": 1.0, "heart": 0.05}

logger = logging.getLogger("bench_probabilities")


class Skip(Exception):
    """A model that cannot run on a dataset (the reason goes to the row's status)."""


# --------------------------------------------------------------------------- jobs
@dataclass(frozen=True)
class Job:
    """One fit: ``epsilon`` is NaN for the non-private models (one job per seed)."""

    dataset: str
    model: str
    epsilon: float
    seed: int

    @property
    def key(self) -> tuple[str, str, str, int]:
        return (self.dataset, self.model, eps_key(self.epsilon), self.seed)

    @property
    def cost(self) -> float:
        return COST[self.model] * DATASET_COST[self.dataset]

    def describe(self) -> str:
        eps = "" if math.isnan(self.epsilon) else f" eps={self.epsilon:g}"
        return f"{self.dataset} {self.model}{eps} seed {self.seed}"


def eps_key(epsilon: float) -> str:
    return "" if epsilon is None or (isinstance(epsilon, float) and math.isnan(epsilon)) else f"{float(epsilon):g}"


def make_jobs(datasets, models, eps_values, seeds) -> list[Job]:
    jobs = []
    for ds in datasets:
        for m in models:
            for seed in seeds:
                if m in NON_PRIVATE:
                    jobs.append(Job(ds, m, math.nan, seed))
                else:
                    jobs.extend(Job(ds, m, float(e), seed) for e in eps_values)
    return jobs


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "absent"


def reference_settings(model: str) -> str:
    """What a cached reference row must match to be reused: configuration and library versions."""
    sk = f"scikit-learn {_version('scikit-learn')}"
    text = {
        "dp-ebm": f"DPExplainableBoostingClassifier(delta={DPEBM_DELTA:g}, privacy_bounds=schema, "
        f"feature_types=declared categories, n_jobs=1, other defaults); interpret-core "
        f"{_version('interpret-core')}; {sk}",
        "diffprivlib-rf": f"diffprivlib RandomForestClassifier(n_estimators={DPL_TREES}, max_depth={DPL_DEPTH}, "
        f"bounds=schema, classes=arange(K), clipped); diffprivlib {_version('diffprivlib')}; {sk}",
        "sklearn-rf": f"RandomForestClassifier(defaults, n_jobs=1); {sk}",
        "sklearn-hgb": f"HistGradientBoostingClassifier(defaults, categorical_features=schema mask); {sk}",
        "majority": "training prior",
    }[model]
    return f"{text}; {PROTOCOL}"


# --------------------------------------------------------------------------- worker
_WORKER: dict = {}


def _init_worker(data_dir: str, edprf_kwargs: dict) -> None:
    logging.getLogger("interpret").setLevel(logging.WARNING)  # its INFO lines (library loading) are noise here
    _WORKER.update(data_dir=data_dir, edprf_kwargs=edprf_kwargs, data={}, splits={})


def _get_split(dataset: str, seed: int) -> Split:
    key = (dataset, seed)
    if key not in _WORKER["splits"]:
        if dataset not in _WORKER["data"]:
            _WORKER["data"][dataset] = load_dataset(dataset, _WORKER["data_dir"])
        X, y, schema = _WORKER["data"][dataset]
        if len(_WORKER["splits"]) > 16:
            _WORKER["splits"].clear()
        _WORKER["splits"][key] = make_split(X, y, schema, seed, dataset=dataset)
    return _WORKER["splits"][key]


def _has_leaf_parameter() -> bool:
    from edprf_core import EDPRFClassifier

    return "leaf" in EDPRFClassifier().get_params()


def _fit_edprf(job: Job, split: Split) -> tuple[np.ndarray, float, float, str]:
    from edprf_core import EDPRFClassifier

    has_leaf = _has_leaf_parameter()
    trees_only = {"marginals_share": 0.0} if "marginals_share" in EDPRFClassifier().get_params() else {}
    if job.model == "edprf-counts":
        if not has_leaf:
            raise Skip("EDPRFClassifier has no `leaf` parameter in this version")
        kwargs = {"leaf": "counts", **_WORKER["edprf_kwargs"]}
    elif job.model == "edprf-trees":
        if not trees_only:
            raise Skip("EDPRFClassifier has no marginals part in this version (edprf-counts is trees only)")
        kwargs = {"leaf": "counts", **trees_only}
    else:
        kwargs = {
            "split_mode": "binary",
            "n_bins": LABEL_BINS,
            "n_trees": 1,
            "max_depth": public_depth(len(split.X_train), 1, job.epsilon),
        }
        if has_leaf:
            kwargs["leaf"] = "label"
        kwargs.update(trees_only)  # today's label configuration: trees only
    model = EDPRFClassifier(split.schema, epsilon=job.epsilon, random_state=job.seed, **kwargs)
    t0 = time.perf_counter()
    model.fit(split.X_train, split.y_train)
    t1 = time.perf_counter()
    proba = model.predict_proba(split.X_test)
    t2 = time.perf_counter()
    p = model.privacy_
    settings = (
        f"kwargs={json.dumps(kwargs, sort_keys=True)}; fitted: trees={p.n_trees} max_depth={p.max_depth} "
        f"n_bins={p.n_bins} split_mode={p.split_mode} sampler={p.sampler}"
    )
    return proba, t1 - t0, t2 - t1, settings


def _dpebm_frame(A: np.ndarray, schema: Schema) -> pd.DataFrame:
    """Continuous columns as floats, categoricals as the text of their declared index (DP-EBM's category list)."""
    cols = {}
    for j, f in enumerate(schema.features):
        cols[f.name] = A[:, j].astype(np.int64).astype(str) if isinstance(f, CategoricalFeature) else A[:, j]
    return pd.DataFrame(cols)


def _fit_reference(job: Job, split: Split) -> tuple[np.ndarray, float, float]:
    schema = split.schema
    K = schema.n_classes
    Xtr, ytr, Xte, _ = split.numeric()
    if job.model == "majority":
        t0 = time.perf_counter()
        prior = np.bincount(ytr, minlength=K) / len(ytr)
        t1 = time.perf_counter()
        return np.tile(prior, (len(Xte), 1)), t1 - t0, 0.0
    lo, hi = public_bounds(schema)
    if job.model == "dp-ebm":
        if K != 2:
            raise Skip("DPExplainableBoostingClassifier supports binary classification only")
        from interpret.privacy import DPExplainableBoostingClassifier

        types = [
            [str(i) for i in range(len(f.categories))] if isinstance(f, CategoricalFeature) else "continuous"
            for f in schema.features
        ]
        bounds = np.column_stack([lo, hi])
        model = DPExplainableBoostingClassifier(
            feature_names=list(schema.feature_names),
            feature_types=types,
            epsilon=job.epsilon,
            delta=DPEBM_DELTA,
            privacy_bounds=bounds,
            random_state=job.seed,
            n_jobs=1,
        )
        Xtr_f, Xte_f = _dpebm_frame(np.clip(Xtr, lo, hi), schema), _dpebm_frame(np.clip(Xte, lo, hi), schema)
        t0 = time.perf_counter()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            model.fit(Xtr_f, ytr)
        t1 = time.perf_counter()
        for w in caught:
            text = str(w.message)
            if "fixed random_state" in text:
                continue  # seeded on purpose: a reproducible research run (see the module docstring)
            if "privacy violation" in text.lower():
                raise RuntimeError(f"DP-EBM reported a privacy problem: {text}")
            logger.warning("dp-ebm: %s", text)
        if list(model.classes_) != [0, 1]:
            raise RuntimeError(f"DP-EBM classes {model.classes_!r}, expected [0, 1]")
        proba = model.predict_proba(Xte_f)
        return proba, t1 - t0, time.perf_counter() - t1
    if job.model == "diffprivlib-rf":
        from diffprivlib.models import RandomForestClassifier as DPRandomForest

        model = DPRandomForest(
            n_estimators=DPL_TREES,
            epsilon=job.epsilon,
            bounds=(lo, hi),
            classes=np.arange(K),
            max_depth=DPL_DEPTH,
            random_state=job.seed,
            n_jobs=1,
        )
        Xtr, Xte = np.clip(Xtr, lo, hi), np.clip(Xte, lo, hi)
    elif job.model == "sklearn-rf":
        from sklearn.ensemble import RandomForestClassifier

        model = RandomForestClassifier(n_jobs=1, random_state=job.seed)
    elif job.model == "sklearn-hgb":
        from sklearn.ensemble import HistGradientBoostingClassifier

        mask = np.array([isinstance(f, CategoricalFeature) for f in schema.features])
        model = HistGradientBoostingClassifier(categorical_features=mask, random_state=job.seed)
    else:
        raise ValueError(f"unknown model {job.model!r}")
    t0 = time.perf_counter()
    model.fit(Xtr, ytr)
    t1 = time.perf_counter()
    proba = model.predict_proba(Xte)
    if proba.shape[1] != K:
        raise RuntimeError(f"{job.model}: predict_proba has {proba.shape[1]} columns, expected {K}")
    return proba, t1 - t0, time.perf_counter() - t1


def probability_metrics(y: np.ndarray, proba: np.ndarray, n_classes: int) -> dict:
    """Accuracy, ROC AUC, log loss, Brier score; binary tasks also ECE and the reliability sums.

    ``proba`` must be a probability matrix (rows in [0, 1] summing to 1, up to
    rounding).  Reliability: 10 equal-width bins of the positive-class
    probability; per bin [count, sum of probabilities, number of positives].
    """
    from sklearn.metrics import brier_score_loss, log_loss, roc_auc_score

    proba = np.asarray(proba, dtype=np.float64)
    if proba.shape != (len(y), n_classes) or not np.all(np.isfinite(proba)):
        raise ValueError(f"probabilities of shape {proba.shape} (expected {(len(y), n_classes)}) or not finite")
    if proba.min() < -1e-9 or np.abs(proba.sum(axis=1) - 1).max() > 1e-6:
        raise ValueError("probabilities outside [0, 1] or rows not summing to 1")
    proba = np.clip(proba, 0.0, 1.0)
    proba /= proba.sum(axis=1, keepdims=True)
    labels = np.arange(n_classes)
    out = {
        "accuracy": float(np.mean(np.argmax(proba, axis=1) == y)),
        "log_loss": float(log_loss(y, proba, labels=labels)),
        "brier": float(brier_score_loss(y, proba, labels=labels)),
        "ece": math.nan,
        "reliability": "",
    }
    if n_classes == 2:
        out["auc"] = float(roc_auc_score(y, proba[:, 1]))
        p = proba[:, 1]
        idx = np.minimum((p * N_CAL_BINS).astype(np.int64), N_CAL_BINS - 1)
        count = np.bincount(idx, minlength=N_CAL_BINS)
        sum_p = np.bincount(idx, weights=p, minlength=N_CAL_BINS)
        sum_y = np.bincount(idx, weights=(y == 1).astype(np.float64), minlength=N_CAL_BINS)
        out["ece"] = float(np.abs(sum_p - sum_y).sum() / len(y))
        out["reliability"] = json.dumps([[int(c), round(float(s), 6), int(k)] for c, s, k in zip(count, sum_p, sum_y)])
    else:
        out["auc"] = float(roc_auc_score(y, proba, multi_class="ovr", average="macro", labels=labels))
    return out


def run_one(job: Job) -> dict:
    """Fit and score one job (runs in a worker process)."""
    split = _get_split(job.dataset, job.seed)
    schema = split.schema
    K = schema.n_classes
    row = {c: math.nan for c in COLUMNS}
    row.update(
        dataset=job.dataset,
        model=job.model,
        epsilon=job.epsilon,
        seed=job.seed,
        delta=(DPEBM_DELTA if job.model == "dp-ebm" else (math.nan if job.model in NON_PRIVATE else 0.0)),
        guarantee=GUARANTEE[job.model],
        n_train=len(split.X_train),
        n_test=len(split.X_test),
        n_classes=K,
        status="ok",
        settings="",
        reliability="",
    )
    try:
        if job.model in EDPRF_MODELS:
            proba, fit_s, pred_s, settings = _fit_edprf(job, split)
        else:
            proba, fit_s, pred_s = _fit_reference(job, split)
            settings = reference_settings(job.model)
    except Skip as exc:
        row["status"] = f"skipped: {exc}"
        return row
    y_test = encode_labels(split.y_test, schema)
    metrics = probability_metrics(y_test, proba, K)
    if job.model == "majority":
        metrics["auc"] = 0.5  # constant scores: 0.5 by definition
    row.update(metrics, fit_s=round(fit_s, 4), predict_s=round(pred_s, 4), settings=settings)
    return row


# --------------------------------------------------------------------------- running and caching
def _read_csv(path: Path) -> pd.DataFrame:
    if not path.is_file():
        return pd.DataFrame(columns=COLUMNS)
    frame = pd.read_csv(
        path,
        dtype={"status": str, "settings": str, "reliability": str, "guarantee": str},
        keep_default_na=False,
        na_values={c: [""] for c in COLUMNS if c not in ("status", "settings", "reliability")},
    )
    for c in ("status", "settings", "reliability", "guarantee"):
        frame[c] = frame[c].fillna("")
    return frame[COLUMNS]


def _row_key(row) -> tuple[str, str, str, int]:
    return (row["dataset"], row["model"], eps_key(row["epsilon"]), int(row["seed"]))


def _write_csv(rows: list[dict] | pd.DataFrame, path: Path) -> None:
    frame = pd.DataFrame(rows, columns=COLUMNS) if not isinstance(rows, pd.DataFrame) else rows
    if not frame.empty:
        frame = (
            frame.assign(_e=frame.epsilon.fillna(-1.0))
            .sort_values(
                ["dataset", "model", "_e", "seed"],
                key=lambda s: s.map(_sort_rank) if s.name in ("dataset", "model") else s,
            )
            .drop(columns="_e")
        )
    tmp = path.with_suffix(".csv.tmp")
    frame.to_csv(tmp, index=False, na_rep="")
    tmp.replace(path)


def _sort_rank(value: str) -> int:
    order = {**{d: i for i, d in enumerate(DATASETS)}, **{m: i for i, m in enumerate(MODELS)}}
    return order.get(value, 99)


def run_jobs(jobs: list[Job], args: argparse.Namespace, cache_path: Path, cache: dict) -> list[dict]:
    """Run the jobs on a process pool; reference rows go to the cache file as they finish."""
    rows: list[dict] = []
    if not jobs:
        return rows
    progress = Progress(len(jobs), "prob ")
    order = sorted(jobs, key=lambda j: -j.cost)  # longest first, so the pool does not end on one long job
    with ProcessPoolExecutor(
        max_workers=args.jobs, initializer=_init_worker, initargs=(str(args.data_dir), args.edprf_kwargs)
    ) as ex:
        futures = {ex.submit(run_one, job): job for job in order}
        for fut in as_completed(futures):
            job = futures[fut]
            row = fut.result()
            rows.append(row)
            if job.model in REFERENCE_MODELS and row["status"] == "ok":
                cache[job.key] = row
                _write_csv(list(cache.values()), cache_path)
            if row["status"] == "ok":
                msg = (
                    f"acc {row['accuracy']:.4f} auc {row['auc']:.4f} logloss {row['log_loss']:.4f} "
                    f"brier {row['brier']:.4f} fit {row['fit_s']:.2f}s"
                )
            else:
                msg = row["status"]
            progress.step(f"{job.describe()}: {msg}")
    return rows


# --------------------------------------------------------------------------- report
def _mean_std(values: pd.Series, digits: int = 3, scale: float = 1.0) -> str:
    v = values.dropna().astype(float) * scale
    if v.empty:
        return "–"
    if len(v) == 1:
        return f"{v.iloc[0]:.{digits}f}"
    return f"{v.mean():.{digits}f} ± {v.std(ddof=1):.{digits}f}"


def _rows_at(df: pd.DataFrame, dataset: str, model: str, epsilon: float) -> pd.DataFrame:
    sub = df[(df.dataset == dataset) & (df.model == model) & (df.status == "ok")]
    if model in NON_PRIVATE:
        return sub
    return sub[np.isclose(sub.epsilon.astype(float), epsilon)]


def _status_note(df: pd.DataFrame, dataset: str, model: str) -> str:
    sub = df[(df.dataset == dataset) & (df.model == model) & (df.status != "ok")]
    return sub.status.iloc[0] if not sub.empty else ""


def headline(df: pd.DataFrame, datasets: list[str], models: list[str], eps: float) -> list[str]:
    binary = [d for d in datasets if int(df[df.dataset == d].n_classes.max()) == 2]
    lines = [
        f"## Headline at ε = {eps:g}: ROC AUC against the issue's targets",
        "",
        (
            "Mean ± std over seeds.  Targets: AUC diabetes ≥ 0.94, bank ≥ 0.745, and AUC ≥ DP-EBM's on every "
            "binary dataset (compared on means; the paired per-seed differences are in the next table)."
        ),
        "",
    ]
    head = ["model"] + [f"AUC {d}" for d in datasets] + ["diabetes ≥ 0.94", "bank ≥ 0.745", "≥ DP-EBM (binary)"]
    lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    ebm = {d: _rows_at(df, d, "dp-ebm", eps).auc.mean() for d in binary}
    for m in models:
        cells = [MODEL_TITLE[m]]
        for d in datasets:
            sub = _rows_at(df, d, m, eps)
            cells.append(_mean_std(sub.auc) if not sub.empty else ("n/a" if _status_note(df, d, m) else "–"))
        if m in EDPRF_MODELS and not df[(df.model == m) & (df.status == "ok")].empty:
            for d in ("diabetes", "bank"):
                sub = _rows_at(df, d, m, eps)
                cells.append("–" if sub.empty else ("**yes**" if sub.auc.mean() >= AUC_TARGETS[d] else "no"))
            checks = []
            for d in binary:
                sub = _rows_at(df, d, m, eps)
                if sub.empty or math.isnan(ebm[d]):
                    continue
                checks.append(f"{d} {'yes' if sub.auc.mean() >= ebm[d] else 'no'}")
            cells.append(", ".join(checks) if checks else "–")
        else:
            cells += ["", "", ""]
        lines.append("| " + " | ".join(cells) + " |")
    # paired differences against DP-EBM (same split and seed)
    pairs = []
    for m in EDPRF_MODELS:
        for d in binary:
            a = _rows_at(df, d, m, eps).set_index("seed").auc
            b = _rows_at(df, d, "dp-ebm", eps).set_index("seed").auc
            common = a.index.intersection(b.index)
            if len(common) == 0:
                continue
            diff = (a.loc[common] - b.loc[common]).astype(float)
            pairs.append(
                f"| {MODEL_TITLE[m]} | {d} | {diff.mean():+.3f} ± {diff.std(ddof=1) if len(diff) > 1 else 0:.3f}"
                f" | {int((diff >= 0).sum())}/{len(diff)} |"
            )
    if pairs:
        lines += [
            "",
            f"Paired AUC difference against DP-EBM at ε = {eps:g} (same split and seed):",
            "",
            "| model | dataset | mean Δ AUC ± std | seeds with Δ ≥ 0 |",
            "|---|---|---|---|",
            *pairs,
        ]
    return lines


def goal_table(df: pd.DataFrame, datasets: list[str], eps_values: list[float]) -> list[str]:
    """Issue 23's central goals per binary dataset and ε, on means over seeds.

    Accuracy of the defaults at least max(DP-EBM, leaf-label configuration) − 0.5 point; ROC AUC at least DP-EBM's.
    """
    binary = [d for d in datasets if int(df[df.dataset == d].n_classes.max()) == 2]
    lines = [
        "## Goals of issue 23 (defaults, central, means over seeds)",
        "",
        (
            "Accuracy target: max(DP-EBM, eDPRF leaf label) − 0.5 point; ROC AUC target: DP-EBM's.  "
            "Mean over the seeds of each column (the per-dataset tables give the spread)."
        ),
        "",
        "| dataset | ε | accuracy % | target % | accuracy met | ROC AUC | DP-EBM AUC | AUC met |",
        "|---|---|---|---|---|---|---|---|",
    ]

    def mean(dataset: str, model: str, eps: float, column: str) -> float:
        rows = _rows_at(df, dataset, model, eps)
        return float(rows[column].astype(float).mean()) if not rows.empty else math.nan

    for d in binary:
        for eps in eps_values:
            acc, auc = 100 * mean(d, "edprf-counts", eps, "accuracy"), mean(d, "edprf-counts", eps, "auc")
            if math.isnan(acc):
                continue
            refs = [100 * mean(d, m, eps, "accuracy") for m in ("dp-ebm", "edprf-label")]
            refs = [r for r in refs if not math.isnan(r)]
            target = max(refs) - 0.5 if refs else math.nan
            ebm_auc = mean(d, "dp-ebm", eps, "auc")
            acc_ok = "–" if math.isnan(target) else ("**yes**" if acc >= target else "no")
            auc_ok = "–" if math.isnan(ebm_auc) else ("**yes**" if auc >= ebm_auc else "no")
            lines.append(
                f"| {d} | {eps:g} | {acc:.2f} | {target:.2f} | {acc_ok} | {auc:.3f} | {ebm_auc:.3f} | {auc_ok} |"
            )
    return lines + WHAT_LIMITS


WHAT_LIMITS = [
    "",
    (
        'The defaults now include the marginals part on two-class tasks (`EDPRFClassifier(marginals_share="auto")`: '
        "a random 90 % of the rows release DP one-way marginals instead of growing trees, pooled with the trees, "
        "when n ε / d ≥ 2, n the DP row count; below, and with more classes, the trees alone), and at ε ≥ 0.5 with "
        "n ε / d ≥ 220 a residual pass on those rows (`residual_pass.md`, `residual_constants.md`). `eDPRF, trees only` is the defaults "
        "before the marginals part. The defaults meet both goals in 11 of the 12 binary cells above (10 before "
        "this round, with a 75 % share, which missed bank's AUC at ε = 0.1: 0.722 against 0.723), the trees alone "
        "in 5; the wall robot is unchanged. The pass lifts bank at ε = 0.5, 1 and 2 (AUC 0.756, 0.765 and 0.770, "
        "accuracy 89.1, 89.2 and 89.2 against the 88.7 target). Over nine binary datasets, six of them stand-ins for the held-out "
        "data, the defaults as fitted meet 29 of 36 cells and the trees alone 7 (`rule_transfer_count.md`); on "
        "UCI Adult and German credit, never tuned on, 7 of 8 (`unseen.md`)."
    ),
    "",
    "What limits the goals missed (each from its own benchmark):",
    "",
    (
        "- **Heart accuracy at ε = 0.1** (237 training rows, n ε / d = 1.8, just under the rule's threshold 2): the "
        "trees alone meet the cell, but the estimator reads n from its DP row count, whose noise at this budget puts "
        "4 of the 10 seeds above the threshold, where the marginals' counts are mostly noise; declaring "
        "`n_rows_public` gives the trees alone."
    ),
    (
        "- **Held-out-like data**: the credit-scoring stand-in at ε ≥ 0.5 stays below DP-EBM's ranking (0.765 to "
        "0.794 against 0.774 to 0.809), and on small, wide data (cancer) the single label tree stays more accurate "
        "at ε ≤ 0.5 (`stumps_proxies.md`); on German credit at ε = 0.1 the noisy class prior puts accuracy under "
        "the majority class's (`unseen.md`)."
    ),
    (
        "- **Federated, 20 parties, Dirichlet 0.5, within 2 points**: met in 9 of 18 cells (bank, census and "
        "diabetes at every ε; `federated_defaults.md`); credit's gaps (−2.1 to −2.3) grew because the central "
        "model's residual pass, which a party's release does not carry, lifted central; heart (12 rows a party) "
        "and wall (splits from about 220 rows a party) stay 12 to 20 points below central: closing that needs "
        "splits chosen from statistics pooled across parties, i.e. a multi-round protocol, or secure aggregation "
        "of the histograms."
    ),
]


def dataset_tables(df: pd.DataFrame, dataset: str, models: list[str], eps_values: list[float]) -> list[str]:
    sub = df[df.dataset == dataset]
    if sub.empty:
        return []
    n_train, n_test = int(sub.n_train.iloc[0]), int(sub.n_test.iloc[0])
    K = int(sub.n_classes.max())
    lines = [
        f"## {DATASET_TITLE[dataset]}",
        "",
        f"{n_train:,} training / {n_test:,} test rows per seed, {K} classes"
        + (" (AUC: macro one-vs-rest; Brier: sum over classes, range [0, 2]; no ECE)." if K > 2 else "."),
    ]
    notes = {m: _status_note(df, dataset, m) for m in models}
    notes = {m: n for m, n in notes.items() if n and _rows_at(df, dataset, m, eps_values[0]).empty}
    if notes:
        lines += [""] + [f"- {MODEL_TITLE[m]}: {n}" for m, n in notes.items()]
    for eps in eps_values:
        lines += [
            "",
            f"### ε = {eps:g}",
            "",
            "| model | guarantee | accuracy % | ROC AUC | log loss | Brier | ECE | fit s | seeds |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for m in models:
            rows = _rows_at(df, dataset, m, eps)
            if rows.empty:
                continue
            guarantee = GUARANTEE[m] + (" (ε-independent)" if m in NON_PRIVATE else "")
            lines.append(
                f"| {MODEL_TITLE[m]} | {guarantee} | {_mean_std(rows.accuracy, 1, 100)} | "
                f"{_mean_std(rows.auc)} | {_mean_std(rows.log_loss)} | {_mean_std(rows.brier)} | "
                f"{_mean_std(rows.ece) if K == 2 else '–'} | {rows.fit_s.astype(float).mean():.2f} | "
                f"{len(rows)} |"
            )
    return lines + [""]


def pooled_reliability(df: pd.DataFrame, dataset: str, model: str, eps: float) -> np.ndarray | None:
    """Per-bin [count, sum p, positives] summed over seeds, or None when there are no rows."""
    rows = _rows_at(df, dataset, model, eps)
    rows = rows[rows.reliability.astype(str) != ""]
    if rows.empty:
        return None
    return np.sum([np.asarray(json.loads(r), dtype=np.float64) for r in rows.reliability], axis=0)


def calibration_plot(df: pd.DataFrame, path: Path, dataset: str = "diabetes", eps: float = HEADLINE_EPS) -> bool:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    curves = {m: pooled_reliability(df, dataset, m, eps) for m in CALIBRATION_MODELS}
    curves = {m: r for m, r in curves.items() if r is not None}
    if not curves:
        return False
    fig, (ax, axh) = plt.subplots(2, 1, figsize=(6.4, 7.2), sharex=True, gridspec_kw={"height_ratios": [3, 1.3]})
    ax.plot([0, 1], [0, 1], color="0.6", lw=1, ls="--", label="perfect calibration")
    width = 1.0 / N_CAL_BINS / (len(curves) + 1)
    for i, (m, r) in enumerate(curves.items()):
        count, sum_p, pos = r[:, 0], r[:, 1], r[:, 2]
        nz = count > 0
        ece = float(np.abs(sum_p - pos).sum() / count.sum())
        n_seeds = len(_rows_at(df, dataset, m, eps))
        ax.plot(
            sum_p[nz] / count[nz],
            pos[nz] / count[nz],
            marker="o",
            color=f"C{i}",
            label=f"{MODEL_TITLE[m]}: ECE {ece:.3f} ({n_seeds} seeds)",
        )
        left = np.arange(N_CAL_BINS) / N_CAL_BINS + (i + 0.5) * width
        axh.bar(left, count / count.sum(), width=width, align="edge", label=m, color=f"C{i}")
    ax.set_ylabel("observed share of positives")
    ax.set_xlim(0, 1), ax.set_ylim(0, 1)
    ax.set_title(
        f"Reliability, {DATASET_TITLE[dataset]}, ε = {eps:g}\n"
        f"{N_CAL_BINS} equal-width bins of P(positive), test rows pooled over seeds"
    )
    ax.legend(fontsize=7.5, loc="upper left")
    axh.set_yscale("log")
    axh.set_ylabel("share of test rows")
    axh.set_xlabel("predicted probability of the positive class")
    axh.legend(fontsize=7, loc="upper center", ncol=len(curves))
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)
    return True


def write_report(df: pd.DataFrame, out: Path, tag: str, meta: dict) -> None:
    datasets = [d for d in DATASETS if d in set(df.dataset)]
    models = [m for m in MODELS if m in set(df.model)]
    eps_values = sorted({float(e) for e in df.epsilon.dropna()})
    seeds = sorted({int(s) for s in df.seed})
    lines = [
        "# Probability benchmark (issue 9)",
        "",
        (
            f"All rows of `{tag}.csv`: seeds {', '.join(map(str, seeds))}; ε ∈ "
            f"{{{', '.join(f'{e:g}' for e in eps_values)}}}.  Last command: "
            f"`{meta.get('command', 'benchmarks/bench_probabilities.py')}` on {meta.get('cpu', cpu_info())} "
            f"({meta.get('fits_run', '?')} fits run, {meta.get('fits_reused', '?')} reference rows reused from "
            f"`{REFERENCE_CACHE}`)."
        ),
        "",
        (
            "Protocol: per seed, a stratified 80/20 split with that seed (diabetes first undersampled to 7000/7000 "
            "with the same seed); every model is fitted on the 80 % with `random_state` = seed and scored on the 20 %. "
            "Bounds, bins, categories and classes come from the project's public schemas. Heart disease: the 6 rows "
            "with `?` are dropped by the schema's rule (missing = refuse), binary target num > 0."
        ),
        "",
        (
            "Metrics, all from `predict_proba`: accuracy of the argmax; ROC AUC (wall robot: macro one-vs-rest); "
            "log loss (scikit-learn clips probabilities to [2.2e-16, 1 − 2.2e-16]: a confident wrong 0/1 prediction "
            "costs 36.04 nats, so models that output hard 0/1 probabilities, like a single eDPRF tree with label "
            "leaves, get large log losses); Brier score (binary: mean (p − y)², multiclass: mean of the sum over "
            "classes); ECE: expected calibration error over 10 equal-width bins of P(positive), binary tasks only. "
            "Fit times are single-threaded (OMP_NUM_THREADS=1, n_jobs=1), two processes in parallel."
        ),
        "",
        "Models:",
        '- **eDPRF, leaf counts**: `EDPRFClassifier(schema, epsilon=ε, random_state=seed, leaf="counts")`, all '
        "else default" + (f", plus `{json.dumps(meta['edprf_kwargs'])}`" if meta.get("edprf_kwargs") else "") + ".",
        (
            "- **eDPRF, leaf label**: binary splits, 20 bins, 1 tree, `max_depth = public_depth(n_train, 1, ε)` "
            '(the training size is fixed by the protocol, hence public), `leaf="label"` where available: its '
            "probabilities are one tree's vote, i.e. 0 or 1."
        ),
        (
            f"- **DP-EBM**: InterpretML `DPExplainableBoostingClassifier(epsilon=ε, delta={DPEBM_DELTA:g})`, "
            f"(ε, δ)-DP with δ = {DPEBM_DELTA:g} (not pure ε-DP), `privacy_bounds` from the schema and the declared "
            "category lists as feature types (no domain read from the data); it spends 10 % of ε on private "
            "binning. It supports binary tasks only, so it has no wall-robot column."
        ),
        (
            f"- **diffprivlib RF**: `RandomForestClassifier(n_estimators={DPL_TREES}, max_depth={DPL_DEPTH}, epsilon=ε, "
            "bounds=<schema>, classes=arange(K))`, data clipped to the bounds (the `refcheck` configuration "
            "of `bench_accuracy.py`), ε-DP."
        ),
        (
            "- **sklearn RF / HistGB**: non-private ceilings, scikit-learn defaults (categoricals as declared codes; "
            "HistGB told which features are categorical)."
        ),
        (
            "- **majority / prior**: the training class shares as every test row's probabilities (AUC 0.5 by "
            "definition)."
        ),
        "",
        (
            "All DP runs are seeded for reproducibility: a seeded run is research, **not a DP release** (its noise is "
            "predictable). The guarantees listed are those of the same mechanisms run with fresh randomness."
        ),
        "",
        f"Library versions: {meta.get('versions', '')}.",
        "",
    ]
    if "edprf-counts" not in models and not _has_leaf_parameter():
        meta = {
            **meta,
            "notes": [
                *meta.get("notes", []),
                (
                    "edprf-counts has no rows: EDPRFClassifier has no `leaf` "
                    "parameter in this version (the leaf-count configuration has not landed)"
                ),
            ],
        }
    if meta.get("notes"):
        lines += ["Notes of this run:", ""] + [f"- {n}" for n in meta["notes"]] + [""]
    if HEADLINE_EPS in eps_values:
        lines += headline(df, datasets, models, HEADLINE_EPS) + [""]
    if "edprf-counts" in models:
        lines += goal_table(df, datasets, eps_values) + [""]
    cal = out / f"{tag}_calibration_diabetes.png"
    if cal.exists():
        lines += [f"Calibration (diabetes, ε = 1, pooled over seeds): `{cal.name}`.", ""]
    for d in datasets:
        lines += dataset_tables(df, d, models, eps_values)
    (out / f"{tag}.md").write_text("\n".join(lines))


# --------------------------------------------------------------------------- main
def _csv_list(text: str, allowed: tuple[str, ...], what: str) -> list[str]:
    items = [t.strip() for t in text.split(",") if t.strip()]
    bad = [t for t in items if t not in allowed]
    if bad:
        raise SystemExit(f"error: unknown {what} {bad}; choose from {', '.join(allowed)}")
    return items


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--seeds", type=int, default=None, help=f"seeds 0..N-1 (default {N_SEEDS}; --quick: 2)")
    p.add_argument("--eps", default=None, help="comma-separated ε values (default 0.1,0.5,1,2; --quick: 1)")
    p.add_argument("--datasets", default=",".join(DATASETS), help=f"comma-separated subset of {','.join(DATASETS)}")
    p.add_argument("--models", default=",".join(MODELS), help=f"comma-separated subset of {','.join(MODELS)}")
    p.add_argument("--jobs", type=int, default=2, help="worker processes (default 2)")
    p.add_argument("--quick", action="store_true", help="2 seeds, ε = 1; writes probabilities_quick.*")
    p.add_argument(
        "--data-dir",
        type=Path,
        default=DEFAULT_DATA_DIR,
        help="folder with diabetes_prediction/ and heart_disease_cleveland/ (default: <repo>/../shared/data)",
    )
    p.add_argument("--out", type=Path, default=RESULTS_DIR, help="output folder (default benchmarks/results)")
    p.add_argument(
        "--recompute-references",
        action="store_true",
        help=f"refit the reference models instead of reusing {REFERENCE_CACHE}",
    )
    p.add_argument(
        "--edprf-kwargs",
        default="{}",
        help="JSON object of extra EDPRFClassifier parameters for edprf-counts, e.g. '{\"n_trees\": 5}'",
    )
    p.add_argument(
        "--fresh", action="store_true", help="do not keep the rows of an existing TAG.csv that this run does not refit"
    )
    p.add_argument("--report-only", action="store_true", help="rebuild TAG.md and the plot from TAG.csv")
    args = p.parse_args(argv)
    try:
        args.edprf_kwargs = json.loads(args.edprf_kwargs)
    except json.JSONDecodeError as exc:
        raise SystemExit(f"error: --edprf-kwargs is not JSON: {exc}") from None
    if not isinstance(args.edprf_kwargs, dict):
        raise SystemExit("error: --edprf-kwargs must be a JSON object")
    args.datasets = _csv_list(args.datasets, DATASETS, "datasets")
    args.models = _csv_list(args.models, MODELS, "models")
    default_eps = "1" if args.quick else ",".join(f"{e:g}" for e in EPS_ALL)
    try:
        args.eps = [float(e) for e in (args.eps or default_eps).split(",") if e.strip()]
    except ValueError:
        raise SystemExit(f"error: --eps must be comma-separated numbers, got {args.eps!r}") from None
    if not args.eps or any(e <= 0 or not math.isfinite(e) for e in args.eps):
        raise SystemExit("error: every ε must be a positive finite number")
    args.seeds = tuple(range(args.seeds if args.seeds is not None else (2 if args.quick else N_SEEDS)))
    args.tag = "probabilities_quick" if args.quick else "probabilities"
    if args.jobs < 1:
        raise SystemExit("error: --jobs must be at least 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(message)s", stream=sys.stderr)
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    csv_path = out / f"{args.tag}.csv"
    meta_path = out / f"{args.tag}_run.json"
    if args.report_only:
        df = _read_csv(csv_path)
        meta = json.loads(meta_path.read_text()) if meta_path.is_file() else {}
        calibration_plot(df, out / f"{args.tag}_calibration_diabetes.png")
        write_report(df, out, args.tag, meta)
        log(f"wrote {out / (args.tag + '.md')}")
        return 0
    if "diabetes" in args.datasets:
        require_diabetes(args.data_dir)
    if "heart" in args.datasets and not (args.data_dir / HEART_RELPATH).is_file():
        sys.exit(f"error: {args.data_dir / HEART_RELPATH} not found; pass --data-dir or leave out heart")

    notes = []
    models = list(args.models)
    if "edprf-counts" in models and not _has_leaf_parameter():
        logger.warning(
            "edprf-counts skipped: EDPRFClassifier has no `leaf` parameter in this version "
            "(the leaf-count configuration has not landed)"
        )
        models.remove("edprf-counts")
    if args.edprf_kwargs:
        notes.append(f"--edprf-kwargs {json.dumps(args.edprf_kwargs)} (edprf-counts only)")

    jobs = make_jobs(args.datasets, models, args.eps, args.seeds)
    cache_path = out / REFERENCE_CACHE
    cache: dict = {}
    if cache_path.is_file():
        cache = {_row_key(r): r for r in _read_csv(cache_path).to_dict("records")}
    settings = {m: reference_settings(m) for m in REFERENCE_MODELS}
    reused, todo = [], []
    for job in jobs:
        hit = cache.get(job.key)
        if (
            job.model in REFERENCE_MODELS
            and not args.recompute_references
            and hit is not None
            and hit["settings"] == settings[job.model]
        ):
            reused.append(hit)
        else:
            todo.append(job)
    log(
        f"{len(jobs)} fits: {len(reused)} reference rows reused from {cache_path.name}, {len(todo)} to run "
        f"on {args.jobs} processes"
    )
    t0 = time.perf_counter()
    new_rows = run_jobs(todo, args, cache_path, cache)
    elapsed = time.perf_counter() - t0

    rows = reused + new_rows
    if not args.fresh and csv_path.is_file():
        old = _read_csv(csv_path)
        fresh_keys = {_row_key(r) for r in rows}
        kept = [r for r in old.to_dict("records") if _row_key(r) not in fresh_keys]
        if kept:
            log(f"kept {len(kept)} rows of other fits from {csv_path.name} (use --fresh to drop them)")
        rows = kept + rows
    df = pd.DataFrame(rows, columns=COLUMNS)
    _write_csv(df, csv_path)
    df = _read_csv(csv_path)
    versions = ", ".join(f"{p} {_version(p)}" for p in ("numpy", "scikit-learn", "diffprivlib", "interpret-core"))
    meta = {
        "command": "python benchmarks/bench_probabilities.py " + " ".join(sys.argv[1:] if argv is None else argv),
        "cpu": cpu_info(),
        "versions": versions,
        "notes": notes,
        "edprf_kwargs": args.edprf_kwargs,
        "elapsed_s": round(elapsed, 1),
        "fits_run": len(new_rows),
        "fits_reused": len(reused),
    }
    meta_path.write_text(json.dumps(meta, indent=2, ensure_ascii=False))
    calibration_plot(df, out / f"{args.tag}_calibration_diabetes.png")
    write_report(df, out, args.tag, meta)
    log(f"wrote {csv_path}, {out / (args.tag + '.md')} ({len(new_rows)} fits in {elapsed:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
