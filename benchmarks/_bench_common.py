"""Shared helpers of the benchmarks: datasets, splits, reference encodings, progress.

Datasets
--------
- ``diabetes``: the Kaggle diabetes prediction dataset, read from
  ``<data-dir>/diabetes_prediction/diabetes_prediction_dataset.csv`` (licence
  unknown: it is never copied into the repository).  For accuracy runs it is
  undersampled per seed to 7000 rows of each class, as in the eDPRF paper.
- ``wall``: the UCI wall-following robot data embedded in ``edprf_core``.

Reference models (scikit-learn, diffprivlib) see a numeric matrix: continuous
features as floats, categorical features as the integer index of the value in
the schema's declared category list.  diffprivlib additionally gets the data
clipped to, and ``bounds`` taken from, the public schema (never the data).
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from edprf_core import (
    CategoricalFeature,
    ContinuousFeature,
    Schema,
    SeededNoiseWarning,
    example_schema,
    load_embedded,
)
from edprf_core.datasets import read_csv
from edprf_core.encoding import FeatureGrid, encode_labels

# the benchmarks are seeded research runs (every table says so): the warning a seeded fit gives a library user
# would repeat on every fit
warnings.simplefilter("ignore", SeededNoiseWarning)

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATA_DIR = REPO_ROOT.parent / "shared" / "data"
RESULTS_DIR = Path(__file__).resolve().parent / "results"
DIABETES_RELPATH = Path("diabetes_prediction") / "diabetes_prediction_dataset.csv"
DATASETS = ("diabetes", "wall")
DIABETES_PER_CLASS = 7000


def diabetes_path(data_dir: str | Path) -> Path:
    return Path(data_dir) / DIABETES_RELPATH


def require_diabetes(data_dir: str | Path) -> Path:
    """Path of the diabetes CSV, or exit with a clear message when it is absent."""
    path = diabetes_path(data_dir)
    if not path.is_file():
        sys.exit(
            f"error: the diabetes dataset is not at {path}.\n"
            "  It is not shipped with the project (licence unknown). Download\n"
            "  diabetes_prediction_dataset.csv (Kaggle, iammustafatz/diabetes-prediction-dataset) and either\n"
            f"  put it at {DIABETES_RELPATH} under the default data dir ({DEFAULT_DATA_DIR})\n"
            "  or pass --data-dir DIR; or run only the wall data with --only wall."
        )
    return path


def load_dataset(name: str, data_dir: str | Path) -> tuple[pd.DataFrame, pd.Series, Schema]:
    """Full feature frame, labels and public schema of a dataset."""
    if name == "wall":
        return load_embedded("wall_robot_navigation")
    if name == "diabetes":
        schema = example_schema("diabetes_prediction")
        X, y = read_csv(require_diabetes(data_dir), schema)  # labels as read: text
        y = pd.Series(np.asarray(schema.classes)[encode_labels(y, schema)], name=y.name)  # the declared classes
        return X, y, schema
    raise ValueError(f"unknown dataset {name!r}; expected one of {DATASETS}")


def undersample(y: pd.Series, per_class: int, seed: int) -> np.ndarray:
    """Row positions: ``per_class`` random rows of each class (seeded), in random order."""
    rng = np.random.default_rng(seed)
    parts = []
    for cls in sorted(pd.unique(y)):
        pos = np.flatnonzero(y.to_numpy() == cls)
        parts.append(rng.choice(pos, size=min(per_class, pos.size), replace=False))
    idx = np.concatenate(parts)
    rng.shuffle(idx)
    return idx


@dataclass
class Split:
    """One seed's train/test split, in the forms every model needs."""

    X_train: pd.DataFrame
    y_train: pd.Series
    X_test: pd.DataFrame
    y_test: pd.Series
    schema: Schema

    def numeric(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(X_train, y_train, X_test, y_test) for scikit-learn: codes for categoricals, labels 0..K-1."""
        return (
            numeric_matrix(self.X_train, self.schema),
            encode_labels(self.y_train, self.schema),
            numeric_matrix(self.X_test, self.schema),
            encode_labels(self.y_test, self.schema),
        )


def make_split(
    X: pd.DataFrame, y: pd.Series, schema: Schema, seed: int, *, dataset: str, test_size: float = 0.2
) -> Split:
    """Stratified 80/20 split for ``seed`` (diabetes: undersampled to 7000/7000 first, with the same seed)."""
    from sklearn.model_selection import train_test_split

    if dataset == "diabetes":
        idx = undersample(y, DIABETES_PER_CLASS, seed)
        X, y = X.iloc[idx].reset_index(drop=True), y.iloc[idx].reset_index(drop=True)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=test_size, stratify=y, random_state=seed)
    return Split(Xtr, ytr, Xte, yte, schema)


def per_seed_table(out: str | Path, report_only: bool, compute: Callable[[], pd.DataFrame]) -> pd.DataFrame:
    """A benchmark's per-seed table, kept in the CSV next to its report ``out``: computed by ``compute`` and written
    there unless ``report_only`` (``--report-only``), then read back from it, so that a report is always built from
    the rounded figures its CSV holds (a goal cell on the edge reads the same in both paths)."""
    csv = Path(out).with_suffix(".csv")
    if not report_only:
        compute().to_csv(csv, index=False, float_format="%.6f")
    return pd.read_csv(csv)


def report_main(
    description: str,
    default_out: Path,
    compute: Callable[[str, int], pd.DataFrame],
    report: Callable[[pd.DataFrame], str],
) -> None:
    """The command line of a benchmark whose per-seed table is kept beside its report (:func:`per_seed_table`):
    ``--data-dir``, ``--jobs`` (worker processes, passed to ``compute(data_dir, jobs)``), ``--out`` and
    ``--report-only``; writes ``report(table)`` to ``--out`` and prints it."""
    import argparse

    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--data-dir", default=str(DEFAULT_DATA_DIR))
    parser.add_argument("--jobs", type=int, default=2, help="worker processes (default 2)")
    parser.add_argument("--out", default=str(default_out))
    parser.add_argument("--report-only", action="store_true", help="rebuild the report from the CSV next to --out")
    args = parser.parse_args()
    table = per_seed_table(args.out, args.report_only, lambda: compute(args.data_dir, args.jobs))
    text = report(table)
    Path(args.out).write_text(text)
    print(text)


def rows_of_jobs(run_one: Callable[[tuple], list[dict]], jobs: list[tuple], n_jobs: int) -> pd.DataFrame:
    """Every row ``run_one`` returns for each of ``jobs``, in the jobs' order, in one frame; with ``n_jobs > 1`` in
    that many processes (``run_one`` then a module-level function)."""
    if n_jobs > 1:
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(n_jobs) as pool:
            results = list(pool.map(run_one, jobs))
    else:
        results = [run_one(job) for job in jobs]
    return pd.DataFrame([row for rows in results for row in rows])


def party_rows(split: Split, partition: str, n_parties: int, seed: int) -> list[np.ndarray]:
    """The training rows of ``split`` cut into ``n_parties`` parties (``edprf_fl.simulation.partition_rows``):
    ``partition`` is ``"iid"`` or ``"dirichlet-<alpha>"`` (label skew), drawn from ``default_rng(seed)``."""
    from edprf_fl.simulation import Partitioning, partition_rows

    how = (
        Partitioning("iid", 0.5, "")
        if partition == "iid"
        else Partitioning("dirichlet", float(partition.split("-")[1]), "")
    )
    return list(partition_rows(split.X_train, split.y_train, n_parties, how, np.random.default_rng(seed)))


def party_forests(split: Split, parts: list[np.ndarray], seed: int, trees: int, epsilon: float = 1.0) -> list:
    """Each party's released forest for the hostile-party benchmarks: ``trees`` trees at ``epsilon`` on its rows
    of ``split`` (leaf counts, depth from a DP count, at most 8, 20 bins, no residual pass: a party's release holds
    histograms only), seeded ``seed * 1000 + party`` (research fits, not DP releases)."""
    from edprf_core import EDPRFClassifier

    return [
        EDPRFClassifier(
            split.schema,
            epsilon=epsilon,
            n_trees=trees,
            max_depth="auto",
            max_depth_cap=8,
            n_bins=20,
            random_state=seed * 1000 + i,
            residual_pass=False,
        )
        .fit(split.X_train.iloc[rows], split.y_train.iloc[rows])
        .forest_
        for i, rows in enumerate(parts)
    ]


def inner_split(split: Split, seed: int, val_size: float = 0.25) -> Split:
    """Validation split carved from the training rows only (for tuning; the test rows are not touched)."""
    from sklearn.model_selection import train_test_split

    Xtr, Xva, ytr, yva = train_test_split(
        split.X_train, split.y_train, test_size=val_size, stratify=split.y_train, random_state=seed
    )
    return Split(Xtr, ytr, Xva, yva, split.schema)


def validation_scores(model, split: Split) -> tuple[float, float]:
    """Accuracy of the argmax and ROC AUC (macro one-vs-rest for several classes) of a fitted model on ``split``'s test rows."""
    from sklearn.metrics import roc_auc_score

    proba = model.predict_proba(split.X_test)
    index = {str(c): i for i, c in enumerate(model.classes_)}
    truth = np.array([index[str(v)] for v in split.y_test.to_numpy()])
    auc = roc_auc_score(truth, proba[:, 1]) if proba.shape[1] == 2 else roc_auc_score(truth, proba, multi_class="ovr")
    return float((proba.argmax(1) == truth).mean()), float(auc)


def inner_validation_splits(dataset: str, seeds: int, data_dir: str):
    """Yield ``(seed, inner)`` for seeds ``0..seeds-1``: the benchmark split's training rows split 75/25 (:func:`inner_split`)."""
    from _bench_datasets import load_dataset

    X, y, schema = load_dataset(dataset, data_dir)
    for seed in range(seeds):
        yield seed, inner_split(make_split(X, y, schema, seed, dataset=dataset), seed)


def inner_validation_row(model, inner: Split, **fields) -> dict:
    """Fit ``model`` on ``inner``'s training rows, score it on its validation rows, print and return one JSON row.

    The row holds ``fields``, the shape the automatic rule chose (trees, depth, bins), the training size,
    the accuracy and the ROC AUC (:func:`validation_scores`).
    """
    accuracy, auc = validation_scores(model.fit(inner.X_train, inner.y_train), inner)
    row = {
        **fields,
        "trees": model.privacy_.n_trees,
        "depth": model.privacy_.max_depth,
        "bins": model.privacy_.n_bins,
        "n_rows": len(inner.X_train),
        "accuracy": accuracy,
        "auc": auc,
    }
    print(json.dumps(row), flush=True)
    return row


def add_sweep_arguments(parser) -> None:
    """The options every inner-validation sweep shares: datasets, ε values, seeds, data folder."""
    from _bench_datasets import DATASETS

    parser.add_argument("--datasets", default=",".join(DATASETS))
    parser.add_argument("--eps", default="0.1,0.5,1,2")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--data-dir", default=str(DEFAULT_DATA_DIR))


def numeric_matrix(X: pd.DataFrame, schema: Schema) -> np.ndarray:
    """Float matrix in schema order: continuous as is, categoricals as their declared index."""
    out = np.empty((len(X), schema.n_features), dtype=np.float64)
    for j, f in enumerate(schema.features):
        col = X[f.name]
        if isinstance(f, CategoricalFeature):
            if isinstance(f.categories[0], str):
                mapping = {str(c): i for i, c in enumerate(f.categories)}
                codes = col.astype(str).map(mapping)
            else:
                mapping = {float(c): i for i, c in enumerate(f.categories)}
                codes = pd.to_numeric(col).astype(float).map(mapping)
            if codes.isna().any():
                raise ValueError(f"column {f.name!r}: values outside the declared categories")
            out[:, j] = codes.to_numpy(dtype=np.float64)
        else:
            out[:, j] = pd.to_numeric(col).to_numpy(dtype=np.float64)
    return out


def public_bounds(schema: Schema) -> tuple[np.ndarray, np.ndarray]:
    """diffprivlib ``bounds`` from the schema: declared [lower, upper], categoricals [0, k-1]."""
    lo, hi = [], []
    for f in schema.features:
        if isinstance(f, ContinuousFeature):
            lo.append(f.lower), hi.append(f.upper)
        else:
            lo.append(0.0), hi.append(float(len(f.categories) - 1))
    return np.asarray(lo), np.asarray(hi)


def estimate_fit_gb(schema: Schema, split_mode: str, n_bins: int, n_trees: int, max_depth: int) -> float:
    """Rough upper bound of the peak memory of ``EDPRFClassifier.fit`` in GB.

    The builder materialises a (nodes x feature-bins x classes) float64 histogram
    for every layer, including the last one (and an int64 copy while
    converting).  Calibrated against measured peak RSS (wall multiway depth 6,
    35 trees: 3.4 GB measured, 3.7 GB estimated).
    """
    grid = FeatureGrid.from_schema(schema, n_bins)
    n_codes = sorted(grid.n_codes, reverse=True)
    total_bins = sum(grid.n_codes)
    peak_nodes = 0.0
    for layer in range(1, max_depth + 2):
        if split_mode == "binary":
            per_tree = 2.0 ** (layer - 1)
        else:
            per_tree = float(math.prod(n_codes[: layer - 1]))
        peak_nodes = max(peak_nodes, per_tree * n_trees)
    return 1.6 * peak_nodes * total_bins * schema.n_classes * 8 / 1e9 + 0.35


class Progress:
    """Progress lines on stderr: count, percentage, elapsed and remaining time."""

    def __init__(self, total: int, label: str = "") -> None:
        self.total, self.done, self.label = total, 0, label
        self.start = time.perf_counter()

    def step(self, message: str) -> None:
        self.done += 1
        elapsed = time.perf_counter() - self.start
        eta = elapsed / self.done * (self.total - self.done)
        print(
            f"[{self.label}{self.done:>5}/{self.total}] {100 * self.done / self.total:5.1f}% "
            f"elapsed {_hms(elapsed)} eta {_hms(eta)} | {message}",
            file=sys.stderr,
            flush=True,
        )


def _hms(seconds: float) -> str:
    s = round(seconds)
    return f"{s // 3600:d}:{s % 3600 // 60:02d}:{s % 60:02d}"


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def cpu_info() -> str:
    try:
        with open("/proc/cpuinfo") as fh:
            model = next(line.split(":", 1)[1].strip() for line in fh if line.startswith("model name"))
    except (OSError, StopIteration):
        model = "unknown CPU"
    return f"{model}, {os.cpu_count()} logical CPUs"
