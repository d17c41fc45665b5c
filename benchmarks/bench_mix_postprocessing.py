#!/usr/bin/env python
"""Can post-processing close issue 23's remaining gaps?  The marginals' weight in the mix and their temper.

A two-class model of the defaults predicts ``marginals ** w * trees ** (1 - w)`` (normalised), where the
marginals' probabilities are the softmax of ``log prior + temper * evidence``
(``edprf_core._marginals``).  Today ``w`` is the marginals' share of the rows (0.9 where the share rule
gives them a part) and ``temper`` is ``min(1, 2.5 / sqrt(d))``.  Both are post-processing of the releases:
any other public choice costs no ε and leaves every privacy argument as it is.  So before a new release is
designed, this benchmark asks whether some other ``(w, g)``, with the temper multiplied by ``g``, would meet
more of issue 23's goals:

- central: the nine two-class datasets of ``bench_rule_transfer.py``; per dataset, seed 0..9 and ε in
  {0.1, 0.5, 1, 2}, the defaults (``EDPRFClassifier(schema, epsilon=ε, random_state=seed)``) are fitted
  once on the training rows and scored on the test rows under every ``(w, g)`` of the grid; seeds 0..3
  also on their inner validation rows (the training rows split 75/25, ``_bench_common.inner_split``),
  where a choice would have to be made.  Goals as in ``bench_rule_transfer.py``: ROC AUC at least DP-EBM's,
  accuracy at least max(DP-EBM, label configuration) − 0.005, on means over seeds; the DP-EBM and label
  rows are read from ``results/rule_transfer.csv`` (run ``bench_rule_transfer.py`` first);
- federated: the two-class datasets of ``bench_federated_defaults.py``, 20 parties under Dirichlet 0.5,
  seeds 0..4, ε in {0.5, 1, 2}, the merged model of that benchmark (``merged_forest``) under the same grid;
  the goal is accuracy within 2 points of central, with central either under the same ``(w, g)`` or at
  today's.

Fits without a marginals part (the share rule's trees-only regime) score the same under every ``(w, g)``.
Seeded research noise: NOT DP releases.

    python benchmarks/bench_mix_postprocessing.py            # about 5 minutes on two cores

Output: ``results/mix_postprocessing.md`` (and ``.csv``).
"""

from __future__ import annotations

import itertools
import sys
import warnings
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _bench_common import RESULTS_DIR, Split, inner_split, make_split, party_rows, report_main
from _bench_datasets import load_any_dataset
from bench_feature_stumps import scores
from bench_federated_defaults import N_PARTIES, merged_forest, plan
from bench_rule_transfer import CSV as RULE_TRANSFER_CSV
from bench_rule_transfer import DATASETS, INNER_SEEDS, REFERENCES, TEST_SEEDS, cell_means

from edprf_core import DPForest, EDPRFClassifier
from edprf_core._marginals import MIX_SHARE_HIGH, marginal_proba, marginals_temper, mix_probabilities
from edprf_core.encoding import FeatureGrid, encode_features, encode_labels

WEIGHTS = (0.5, 0.75, 0.85, 0.9, 0.95, 1.0)
"""The marginals' weight ``w`` in the log-linear mix (today: the share of the rows, ``MIX_SHARE_HIGH``)."""
TEMPER_FACTORS = (0.5, 1.0, 1.5, 2.0, 3.0)
"""``g``: the temper is ``g * min(1, 2.5 / sqrt(d))`` (today: g = 1)."""
TODAY = (MIX_SHARE_HIGH, 1.0)
CENTRAL_EPSILONS = (0.1, 0.5, 1.0, 2.0)
FEDERATED_DATASETS = ("heart", "bank", "diabetes", "census", "credit")
FEDERATED_EPSILONS = (0.5, 1.0, 2.0)
FEDERATED_SEEDS = tuple(range(5))
PARTITION = "dirichlet-0.5"


def label(w: float, g: float) -> str:
    return f"w={w:g}, g={g:g}"


def grid_scores(forest: DPForest, split: Split) -> dict[tuple[float, float], tuple[float, float]]:
    """(accuracy, AUC) on ``split``'s test rows of ``forest`` under every ``(w, g)``: post-processing only."""
    truth = encode_labels(split.y_test, split.schema)
    if forest.marginals is None:
        today = scores(forest.predict_proba(split.X_test), truth)
        return {wg: today for wg in itertools.product(WEIGHTS, TEMPER_FACTORS)}
    trees = forest.trees_proba(split.X_test)
    codes = encode_features(split.X_test, split.schema, FeatureGrid.from_schema(split.schema, forest.marginals_bins))
    temper = marginals_temper(forest.marginals.n_features)
    out = {}
    for g in TEMPER_FACTORS:
        marginals = marginal_proba(forest.marginals, codes, temper=g * temper)
        for w in WEIGHTS:
            out[w, g] = scores(mix_probabilities(trees, marginals, w), truth)
    return out


def central_rows(name: str, data_dir: str) -> pd.DataFrame:
    """Rows in ``bench_rule_transfer``'s format, one model per ``(w, g)``: test rows and inner rows."""
    X, y, schema = load_any_dataset(name, data_dir)
    rows = []
    for seed in TEST_SEEDS:
        outer = make_split(X, y, schema, seed, dataset=name)
        stages = [("test", outer)] + ([("inner", inner_split(outer, seed))] if seed in INNER_SEEDS else [])
        for (stage, split), eps in itertools.product(stages, CENTRAL_EPSILONS):
            model = EDPRFClassifier(schema, epsilon=eps, random_state=seed).fit(split.X_train, split.y_train)
            for (w, g), (acc, auc) in grid_scores(model.forest_, split).items():
                rows.append(
                    {"part": "central", "stage": stage, "dataset": name, "epsilon": eps, "seed": seed}
                    | {"w": w, "g": g, "n_train": len(split.y_train)}
                    | {"n_features": schema.n_features, "accuracy": acc, "auc": auc}
                )
    print(f"central {name} done", file=sys.stderr, flush=True)
    return pd.DataFrame(rows)


def federated_rows(name: str, data_dir: str) -> pd.DataFrame:
    """The merged model of ``bench_federated_defaults.py`` (20 parties, Dirichlet 0.5) under every ``(w, g)``."""
    X, y, schema = load_any_dataset(name, data_dir)
    rows = []
    for seed in FEDERATED_SEEDS:
        split = make_split(X, y, schema, seed, dataset=name)
        parties = party_rows(split, PARTITION, N_PARTIES, seed)
        for eps in FEDERATED_EPSILONS:
            share, bins = plan(split, eps)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                forest = merged_forest(split, parties, eps, seed, share, bins)
            for (w, g), (acc, auc) in grid_scores(forest, split).items():
                rows.append(
                    {"part": "federated", "stage": "test", "dataset": name, "epsilon": eps, "seed": seed}
                    | {"w": w, "g": g, "accuracy": acc, "auc": auc}
                )
    print(f"federated {name} done", file=sys.stderr, flush=True)
    return pd.DataFrame(rows)


def central_cells(table: pd.DataFrame) -> pd.DataFrame:
    """Per (stage, dataset, ε, (w, g)): means and issue 23's goals (targets from ``rule_transfer.csv``)."""
    refs = pd.read_csv(RULE_TRANSFER_CSV)
    refs = refs[refs.model.isin(REFERENCES)]
    grid = {label(w, g): (w, g) for w, g in itertools.product(WEIGHTS, TEMPER_FACTORS)}
    central = table[table.part == "central"]
    central = central.assign(model=[label(w, g) for w, g in zip(central.w, central.g, strict=True)])
    cells = cell_means(pd.concat([central, refs], ignore_index=True))
    cells = cells[~cells.model.isin(REFERENCES)].copy()
    cells[["w", "g"]] = cells.model.map(grid).tolist()  # cell_means keeps the model's label only
    cells["goal margin"] = np.minimum(cells.auc - cells.target_auc, cells.accuracy - cells.target_accuracy)
    return cells


def federated_gaps(table: pd.DataFrame) -> pd.DataFrame:
    """Per (dataset, ε, (w, g)): federated − central accuracy in points, central at the same (w, g) and at today's."""
    keys = ["dataset", "epsilon", "w", "g"]
    fed = table[table.part == "federated"]
    central = table[(table.part == "central") & (table.stage == "test") & table.seed.isin(FEDERATED_SEEDS)]
    central = central[central.dataset.isin(fed.dataset.unique()) & central.epsilon.isin(FEDERATED_EPSILONS)]
    fed_mean = fed.groupby(keys).accuracy.mean()
    same = central.groupby(keys).accuracy.mean()
    today = central[(central.w == TODAY[0]) & (central.g == TODAY[1])].groupby(keys[:2]).accuracy.mean()
    out = pd.DataFrame({"federated": fed_mean, "central, same": same.reindex(fed_mean.index)}).reset_index()
    out["central, today"] = out.join(today.rename("t"), on=keys[:2]).t
    out["gap, same"] = 100 * (out.federated - out["central, same"])
    out["gap, today"] = 100 * (out.federated - out["central, today"])
    return out


def _grid_table(counts: pd.Series, total: int) -> list[str]:
    """A markdown table of ``counts`` indexed by (w, g): rows w, columns g; today's cell in bold."""
    lines = [
        "| w \\ g | " + " | ".join(f"{g:g}" for g in TEMPER_FACTORS) + " |",
        "|---" * (len(TEMPER_FACTORS) + 1) + "|",
    ]
    for w in WEIGHTS:
        cells = [f"**{counts[w, g]}**" if (w, g) == TODAY else str(counts[w, g]) for g in TEMPER_FACTORS]
        lines.append(f"| {w:g} | " + " | ".join(cells) + " |")
    return [*lines, "", f"(of {total} cells; today's rule in bold)", ""]


def report(table: pd.DataFrame) -> str:
    cells = central_cells(table)
    gaps = federated_gaps(table)
    n_central = cells[cells.stage == "test"].groupby(["dataset", "epsilon"]).ngroups
    n_fed = gaps.groupby(["dataset", "epsilon"]).ngroups
    lines = [
        "# Post-processing of the mix: the marginals' weight w and temper factor g (issue 23)",
        "",
        (
            "Command: `python benchmarks/bench_mix_postprocessing.py`. What and why: its docstring. One fit per "
            f"(dataset, seed, ε) scored under every (w, g); w = {TODAY[0]:g}, g = 1 is today's model. Seeded research "
            "noise, not DP releases."
        ),
        "",
        "## Central: cells meeting both goals, inner validation rows (seeds 0..3), where a choice is made",
        "",
        *_grid_table(cells[cells.stage == "inner"].groupby(["w", "g"]).meets.sum(), n_central),
        "## Central: cells meeting both goals, test rows (seeds 0..9)",
        "",
        *_grid_table(cells[cells.stage == "test"].groupby(["w", "g"]).meets.sum(), n_central),
        "## Federated (20 parties, Dirichlet 0.5, seeds 0..4): cells within 2 points of central",
        "",
        "Central at the same (w, g):",
        "",
        *_grid_table((gaps["gap, same"] >= -2.0).groupby([gaps.w, gaps.g]).sum(), n_fed),
        "Central at today's (w, g) (only the federated model post-processed otherwise):",
        "",
        *_grid_table((gaps["gap, today"] >= -2.0).groupby([gaps.w, gaps.g]).sum(), n_fed),
        "## The cells today's model misses, and the best any (w, g) of the grid reaches in each",
        "",
        (
            "Goal margin: min(AUC − DP-EBM's AUC, accuracy − accuracy target) on the test rows (central), or the "
            "gap + 2 points (federated); a cell is met when it is ≥ 0. The best (w, g) is picked per cell on the "
            "test rows: an upper bound on what any single public rule of (w, g) could do."
        ),
        "",
        "| setting | dataset | ε | today's margin | best margin on the grid | at (w, g) |",
        "|---|---|---|---|---|---|",
    ]
    test = cells[cells.stage == "test"]
    for (name, eps), group in test.groupby(["dataset", "epsilon"]):
        now = group[(group.w == TODAY[0]) & (group.g == TODAY[1])].iloc[0]
        if now.meets:
            continue
        best = group.loc[group["goal margin"].idxmax()]
        lines.append(
            f"| central | {name} | {eps:g} | {now['goal margin']:+.3f} | {best['goal margin']:+.3f} | "
            f"({best.w:g}, {best.g:g}) |"
        )
    for (name, eps), group in gaps.groupby(["dataset", "epsilon"]):
        now = group[(group.w == TODAY[0]) & (group.g == TODAY[1])].iloc[0]
        if now["gap, today"] >= -2.0:
            continue
        best = group.loc[group["gap, today"].idxmax()]
        lines.append(
            f"| federated | {name} | {eps:g} | {now['gap, today'] + 2:+.1f} points | "
            f"{best['gap, today'] + 2:+.1f} points | ({best.w:g}, {best.g:g}) |"
        )
    return "\n".join([*lines, *READING])


READING = [
    "",
    "Reading (the numbers are this file's):",
    "",
    (
        "- **Post-processing is flat; today's (w, g) stays.** On the inner rows, where a choice would be made, no "
        "point of the grid meets more than today's 26 cells (w = 0.9, the marginals' share of the rows; the fits "
        "carry the residual pass where its rule says); five others tie it. On the test rows four of those ties "
        "meet today's 29 and none more, and the mean AUC moves by less than 0.001. A public rule of (w, g) would be "
        "read off noise. (The runs before, on fits with a 75 % share, with 90 % and no pass, and with the pass's "
        "hand-set constants, read the same: at most one inner cell, fair at ε = 0.5, none on the test rows; fair "
        "at ε = 0.5 is now met by the pass, `residual_constants.md`.)"
    ),
    (
        "- **The misses are in what is released, not in how it is pooled.** Even picking the best (w, g) per cell "
        "on the test rows, an upper bound that no public rule reaches, leaves every central miss short: credit at "
        "ε ≥ 0.5 by 0.009 to 0.014 AUC, attrition at ε = 2 by 0.018, breast cancer's accuracy at ε ≤ 0.5 by 4 to "
        "5 points (its ranking leads DP-EBM's; its marginals, shrunk toward a class prior whose noise is about 10 "
        "points at ε = 0.5, put most rows in the majority class), heart's accuracy at ε = 0.1 by 1.7 points. Those "
        "need other releases: the label tree's single split where one strong feature carries the task, or "
        "statistics of feature pairs where DP-EBM's boosting models correlated features."
    ),
    (
        "- **Federated.** Over these five seeds today's model is within 2 points in 10 of 15 cells; credit at ε = 1 "
        "sits 0.1 point outside and credit at ε = 2 0.6 (the central model's residual pass widened credit's gap: "
        "a party's release has none). With central left as it is, one point of the grid, (1, 1), brings 11, and "
        "the best per-cell choice on the grid only just reaches the line on credit. With the same (w, g) applied "
        "to central too, g = 0.5 brings 11 or 12, but it meets at most 17 central cells on the inner rows against today's "
        "26. Heart (12 rows a party) stays at least 6 points behind at every point of the grid."
    ),
]


def compute(data_dir: str, jobs: int) -> pd.DataFrame:
    """Every dataset's central and federated rows, ``jobs`` datasets at a time."""
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        parts = [pool.submit(central_rows, name, data_dir) for name in DATASETS]
        parts += [pool.submit(federated_rows, name, data_dir) for name in FEDERATED_DATASETS]
        return pd.concat([part.result() for part in parts], ignore_index=True)


def main() -> None:
    report_main(__doc__.splitlines()[0], RESULTS_DIR / "mix_postprocessing.md", compute, report)


if __name__ == "__main__":
    main()
