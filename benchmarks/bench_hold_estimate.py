"""Prediction cost per held-out row, tree and level on distinct rows, against the party check's constants.

``edprf party check`` estimates how long a party's evaluation of the largest model its policy admits takes
(``client._hold_estimate``): held-out rows x (trees x (depth + 1) + parts x classes) x
``PREDICT_SECONDS_PER_STEP``, plus ``COMPILE_SECONDS`` for the model's routing tables (built lazily, inside the
hold), plus the read.  Prediction works on a file's *distinct* rows (``np.unique`` of the codes), so the
coordinator's worst case is a file whose rows are all distinct at a fine grid: this script measures that (rows
drawn uniformly within the wall robot's public bounds, every one distinct, at 64 bins, the default
``max-n-bins``), full-depth count trees, one core.  Review rev-s63 R1 found the first constant (2e-9, calibrated on
repeated rows) 2-3x low.

    python benchmarks/bench_hold_estimate.py            # about a minute

Output: ``results/hold_estimate.{md,json}``; ``tests/federation/test_party_check.py`` checks that the constants
stay above the measured maxima.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from client._hold_estimate import COMPILE_SECONDS, PREDICT_SECONDS_PER_STEP
from edprf_core import EDPRFClassifier, load_embedded

RESULTS = Path(__file__).resolve().parent / "results"
SHAPES = ((200, 8), (1000, 8), (1000, 6), (2000, 8))
"""(trees, depth) of the models measured: 51,000 to 1,022,000 nodes, within the default policy's limits."""
ROWS = (5_000, 20_000)


def distinct_rows(schema, n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({f.name: rng.uniform(f.lower, f.upper, n) for f in schema.features})


def main() -> int:
    warnings.filterwarnings("ignore")
    X, y, schema = load_embedded("wall_robot_navigation")
    rows_out, per_step, compile_s = [], [], []
    for trees, depth in SHAPES:
        clf = EDPRFClassifier(
            schema, epsilon=1.0, n_trees=trees, max_depth=depth, n_bins=64, split_mode="binary", random_state=0
        ).fit(X, y)
        forest = clf.forest_
        t0 = time.perf_counter()
        forest.predict_proba(distinct_rows(schema, 10, 99))  # compiles the routing tables once
        first = time.perf_counter() - t0
        compile_s.append(first)
        for n in ROWS:
            data = distinct_rows(schema, n, n)
            runs = []
            for _ in range(3):
                t0 = time.perf_counter()
                forest.predict_proba(data)
                runs.append(time.perf_counter() - t0)
            t = float(np.median(runs))
            steps = n * (trees * (depth + 1) + schema.n_classes)
            per_step.append(t / steps)
            rows_out.append(
                f"| {trees} | {depth} | {forest.trees.n_nodes:,} | {n:,} | {t:.3f} | {t / steps:.2e} | {first:.2f} |"
            )
            print(rows_out[-1], flush=True)
    measured = {"max_seconds_per_step": max(per_step), "max_first_call_seconds": max(compile_s)}
    (RESULTS / "hold_estimate.json").write_text(json.dumps(measured, indent=2) + "\n")
    lines = [
        "# Prediction cost on distinct rows, against the party check's hold estimate",
        "",
        (
            "Command: `python benchmarks/bench_hold_estimate.py`. What and why: its docstring. Median of 3 runs, one core; "
            "the first call (which compiles the routing tables, as a party's evaluation does inside its hold) timed "
            "separately on 10 rows."
        ),
        "",
        "| trees | depth | nodes | distinct rows | predict (s) | s per row x step | first call (s) |",
        "|---|---|---|---|---|---|---|",
        *rows_out,
        "",
        (
            f"Largest per-step cost measured: {measured['max_seconds_per_step']:.2e} s; "
            f"`client._hold_estimate.PREDICT_SECONDS_PER_STEP` = {PREDICT_SECONDS_PER_STEP:.0e} "
            f"({PREDICT_SECONDS_PER_STEP / measured['max_seconds_per_step']:.1f}x). Largest first call: "
            f"{measured['max_first_call_seconds']:.2f} s; `COMPILE_SECONDS` = {COMPILE_SECONDS:.1f}. "
            "`tests/federation/test_party_check.py` keeps both constants at or above these (`hold_estimate.json`)."
        ),
        "",
    ]
    (RESULTS / "hold_estimate.md").write_text("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
