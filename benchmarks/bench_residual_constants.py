#!/usr/bin/env python
"""The residual pass's two hand-set constants, picked again on inner validation rows only (issue 23).

``RESIDUAL_HISTOGRAM_SHARE`` (the histograms' share of the part's budget when a pass follows) and
``RESIDUAL_RIDGE`` (the damping of each bin's Newton step, in standard deviations of its sum's noise) were set by
hand in scratch runs on test rows of credit, fair and bank (``bench_residual_pass.py`` says so); issue 23 asks that
every constant be tuned on inner validation splits of training rows only.  This benchmark picks them that way,
jointly with the pass's public rule:

- for every ``(share, ridge)`` on the grid :data:`SHARES` x :data:`RIDGES`, the mix with the cyclic pass and the
  mix without (``bench_residual_pass.split_rows``: the library's histograms, pass and mix, the estimator's trees on
  the other rows) is fitted on the inner validation rows (seeds 0..3, each seed's training rows split 75/25) of
  the nine two-class datasets of ``bench_rule_transfer.py``, ε in {0.1, 0.5, 1, 2};
- for each pair, ``bench_residual_pass.picked_rule`` picks the rule (a pass when ε >= e and n ε / d >= τ) as the
  library's was picked: most cells meeting issue 23's two goals, ties broken by the mean AUC margin over DP-EBM;
- the triple ``(share, ridge, rule)`` with the most inner cells, ties broken by the mean AUC margin, is the pick.
  The test rows are not read.

The ridge is a module constant of ``edprf_core._residual_pass`` that both the release and the replay read; the
grid sets it for the duration of each fit and score (a research override; a release carries no ridge, so a model
is always replayed with the library's).  Seeded research runs, NOT DP releases.

    python benchmarks/bench_residual_constants.py          # about 5 minutes on two cores

Output: ``results/residual_constants.md`` (and ``.csv``, the per-seed inner rows).
"""

from __future__ import annotations

import contextlib
import itertools
import sys
import warnings
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _bench_common import RESULTS_DIR, inner_split, make_split, report_main
from _bench_datasets import load_any_dataset
from bench_residual_pass import MIXES, picked_rule, split_rows, with_rule
from bench_rule_transfer import CSV as RULE_TRANSFER_CSV
from bench_rule_transfer import DATASETS, INNER_SEEDS, REFERENCES, cell_means

import edprf_core._residual_pass as residual_pass
from edprf_core._residual_pass import (
    RESIDUAL_HISTOGRAM_SHARE,
    RESIDUAL_MIN_EPSILON,
    RESIDUAL_RIDGE,
    RESIDUAL_THRESHOLD,
)

SHARES = (0.3, 0.4, 0.5, 0.6, 0.7)
RIDGES = (2.0, 4.0, 8.0, 16.0, 32.0)
PARTS = ("marginals", "cyclic pass")


@contextlib.contextmanager
def ridge(value: float):
    """``RESIDUAL_RIDGE`` set to ``value`` inside the block (release and replay both read the module's)."""
    kept = residual_pass.RESIDUAL_RIDGE
    residual_pass.RESIDUAL_RIDGE = value
    try:
        yield
    finally:
        residual_pass.RESIDUAL_RIDGE = kept


def dataset_rows(name: str, data_dir: str) -> list[dict]:
    X, y, schema = load_any_dataset(name, data_dir)
    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # clipped cells: the schema's rule, as in every benchmark
        for seed in INNER_SEEDS:
            inner = inner_split(make_split(X, y, schema, seed, dataset=name), seed)
            # the mix without a pass depends on neither constant (its own seeded noise): fitted once per seed
            without = split_rows(inner, seed, "inner", name, PARTS[:1], alone=False)
            for share, damping in itertools.product(SHARES, RIDGES):
                with ridge(damping):
                    fitted = split_rows(inner, seed, "inner", name, PARTS[1:], share, alone=False)
                both = sorted(without + fitted, key=lambda row: row["epsilon"])  # split_rows' order: ε, then part
                rows += [row | {"share": share, "ridge": damping} for row in both]
    print(f"{name} done", file=sys.stderr, flush=True)
    return rows


def compute(data_dir: str, jobs: int) -> pd.DataFrame:
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        parts = pool.map(dataset_rows, DATASETS, itertools.repeat(data_dir))
        return pd.DataFrame([row for part in parts for row in part])


def picks(table: pd.DataFrame) -> pd.DataFrame:
    """Per ``(share, ridge)``: the rule picked on the inner rows, its inner cells and mean AUC margin."""
    references = pd.read_csv(RULE_TRANSFER_CSV)
    references = references[(references.stage == "inner") & references.model.isin(REFERENCES)]
    out = []
    for (share, damping), group in table.groupby(["share", "ridge"]):
        cells = cell_means(pd.concat([group.drop(columns=["share", "ridge"]), references], ignore_index=True))
        e, tau = picked_rule(cells)
        chosen = with_rule(cells, e, tau)
        out.append(
            {
                "share": share,
                "ridge": damping,
                "min_epsilon": e,
                "threshold": tau,
                "cells": int(chosen.meets.sum()),
                "margin": float(chosen.margin.mean()),
                "without_pass": int(cells[cells.model == MIXES[0]].meets.sum()),
            }
        )
    return pd.DataFrame(out).sort_values(["cells", "margin"], ascending=False, ignore_index=True)


def report(table: pd.DataFrame) -> str:
    ranked = picks(table)
    best = ranked.iloc[0]
    library = (RESIDUAL_HISTOGRAM_SHARE, RESIDUAL_RIDGE, RESIDUAL_MIN_EPSILON, RESIDUAL_THRESHOLD)
    picked = (best.share, best.ridge, best.min_epsilon, best.threshold)
    verdict = "the library's" if picked == library else "NOT the library's"
    lines = [
        "# The residual pass's histogram share and ridge, picked on inner rows (issue 23)",
        "",
        (
            "Command: `python benchmarks/bench_residual_constants.py`. What and why: its docstring. Inner validation "
            f"rows only (seeds {INNER_SEEDS[0]}..{INNER_SEEDS[-1]}), nine binary datasets, ε in {{0.1, 0.5, 1, 2}}; "
            "per (share, ridge) the pass's rule picked as the library's was; cells: (dataset, ε) meeting both goals "
            "of 36; margin: mean AUC over DP-EBM's. Seeded research runs, not DP releases."
        ),
        "",
        (
            f"Picked: **histogram share {best.share:g}, ridge {best.ridge:g}, a pass when ε >= {best.min_epsilon:g} "
            f"and n ε / d >= {best.threshold:g}** ({verdict}: share {library[0]:g}, ridge {library[1]:g}, ε >= "
            f"{library[2]:g}, n ε / d >= {library[3]:g}); {int(best.cells)} inner cells, margin {best.margin:+.4f}."
        ),
        "",
        "| histogram share | ridge | rule picked | inner cells | mean AUC margin | cells without a pass |",
        "|---|---|---|---|---|---|",
    ]
    for row in ranked.itertuples():
        mark = "**" if (row.share, row.ridge) == library[:2] else ""
        lines.append(
            f"| {mark}{row.share:g}{mark} | {mark}{row.ridge:g}{mark} | ε >= {row.min_epsilon:g}, "
            f"n ε / d >= {row.threshold:g} | {row.cells} | {row.margin:+.4f} | {row.without_pass} |"
        )
    return "\n".join([*lines, "", "Bold: the library's constants.", *READING]) + "\n"


READING = [
    "",
    "Reading (the numbers are this file's, and where said, of `rule_transfer_count.md` and `unseen.md`):",
    "",
    (
        "- **The grid is flat near the top.** Twenty-three of the twenty-five pairs meet 27 or 28 inner cells, and "
        "the mean AUC margins of the six pairs at 28 lie within 0.0005 of each other: the constants matter little "
        "inside this range. The pairs at 28 all take a pass from ε = 0.5, where the hand-set pair's rule started "
        "at ε = 1; the cell they add is the fair survey at ε = 0.5 (inner accuracy 0.709 against a target of "
        "0.708, a thin margin)."
    ),
    (
        "- **The library takes the pick.** Histogram share 0.6 (was 0.5), ridge 8 (unchanged), a pass from "
        "ε = 0.5 (was 1) at the same n ε / d ≥ 220. The test rows were read only after the pick: through the "
        "estimator the defaults meet 29 of 36 test cells (28 before; fair at ε = 0.5 added, "
        "`rule_transfer_count.md`), and on UCI Adult, never tuned on, a pass at ε = 0.5 lifts accuracy over its "
        "target (`unseen.md`). Through the estimator, whose DP row count and row split differ from this "
        "benchmark's sketch of the mix, the inner rows count 26 cells before and after."
    ),
]


if __name__ == "__main__":
    report_main(__doc__.splitlines()[0], RESULTS_DIR / "residual_constants.md", compute, report)
