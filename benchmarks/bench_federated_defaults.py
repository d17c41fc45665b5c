#!/usr/bin/env python
"""The defaults through the library's federation path: 20 parties against central DP (issue 23).

Issue 23 asks that a federation of 20 parties under Dirichlet-0.5 label skew come within 2 points of
central DP.  ``marginals_federated.md`` measured the benchmark's own marginals; this benchmark measures
what a consortium now runs, through the library's code:

- the coordinator's plan (``server.CoordinatorConfig.marginals_plan``): one marginals share and grid for
  the consortium from its declared total size (``consortium-rows``, public by this protocol), the request's
  ε, the schema and the number of parties (the grid's rule reads the summed histograms' budget ε / √20);
- each party: ``EDPRFClassifier(schema, epsilon=ε, n_trees=1, max_depth="auto", max_depth_cap=8,
  n_bins=20, marginals_share=s, marginals_bins=b)`` on its rows (the setting of
  ``bench_federation_cost.py``: one tree per party, depth from its DP row count), i.e. a random share s of
  its rows release one-way histograms and the others grow the tree;
- the global model: ``edprf_core.merge_forests`` (the trees pooled with bounded influence, the histograms
  summed after each party's bound) and its ``predict_proba``;
- central: ``EDPRFClassifier(schema, epsilon=ε)`` (the defaults) on all training rows.

The trees alone (``marginals_share=0`` everywhere: the federation before the marginals part) are measured
alongside.  Partitions ``iid`` and ``dirichlet-0.5`` over 20 parties (``edprf_fl.simulation.partition_rows``,
seeded like ``bench_federation_cost.py``); the split protocol of ``bench_probabilities.py``.  Seeded
research noise: NOT DP releases.

    python benchmarks/bench_federated_defaults.py            # about 7 minutes on one core (10 seeds)

Output: ``results/federated_defaults.md`` (and ``.csv``).

Two choices of the federation path were made on inner validation splits of training rows only (seeds 0-3,
each seed's training rows split 75/25; the nine two-class datasets of ``bench_rule_transfer.py``; 20 parties,
Dirichlet 0.5; criterion: central goal cells of issue 23 plus federated cells within 2 points of central):

- the marginals' log-ratio tables divide by each feature's own class distribution, not by the class prior
  (``edprf_core._marginals.marginal_evidence``): central goal cells 23 against 24 of 36, federated cells
  within 2 points 14 against 9 of 27 (attrition at ε = 0.5: from 27 points behind central to level);
- the coordinator's grid rule reads ε / √(parties) (``CoordinatorConfig.marginals_plan``): federated cells
  within 2 points 16 against 14 (diabetes at ε = 0.5: 5.8 to 2.3 points behind).

A forged release's hold on the sum is bounded (``edprf_core._marginals_merge``); the column floor added with
the first choice keeps the bank forgery test's marginals within 2 points (``tests/core/test_marginals_federation.py``).
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _bench_common import DEFAULT_DATA_DIR, RESULTS_DIR, Split, make_split, party_rows, per_seed_table
from _bench_datasets import load_any_dataset
from bench_feature_stumps import scores

from edprf_core import EDPRFClassifier, merge_forests
from edprf_core.encoding import encode_labels
from server import CoordinatorConfig

DATASETS = ("heart", "bank", "diabetes", "wall", "census", "credit")
EPSILONS = (0.5, 1.0, 2.0)
PARTITIONS = ("iid", "dirichlet-0.5")
N_PARTIES = 20


def plan(split: Split, epsilon: float, share: float | None = None) -> tuple[float, int]:
    """The coordinator's marginals share and grid for this consortium (its declared size: the training rows),
    with ``marginals-share = share`` when given (else the rule's)."""
    config = {"schema-path": "schema.toml", "epsilon": epsilon, "consortium-rows": len(split.y_train)}
    if share is not None:
        config["marginals-share"] = share
    return CoordinatorConfig.from_run_config(config).marginals_plan(split.schema, N_PARTIES)


def federated(split: Split, parties: list[np.ndarray], epsilon: float, seed: int, share: float, bins: int):
    """The global model's probabilities on the test rows (:func:`merged_forest`)."""
    return merged_forest(split, parties, epsilon, seed, share, bins).predict_proba(split.X_test)


def merged_forest(split: Split, parties: list[np.ndarray], epsilon: float, seed: int, share: float, bins: int):
    """The global model: one forest per party (its trees and, if ``share``, its histograms), merged."""
    forests, names = [], []
    for i, rows in enumerate(parties):
        if len(rows) == 0:
            continue
        clf = EDPRFClassifier(
            split.schema,
            epsilon=epsilon,
            n_trees=1,
            max_depth="auto",
            max_depth_cap=8,
            n_bins=20,
            marginals_share=share,
            marginals_bins=bins if share else "auto",
            random_state=seed * 1000 + i,
        ).fit(split.X_train.iloc[rows], split.y_train.iloc[rows])
        forests.append(clf.forest_)
        names.append(f"p{i}")
    return merge_forests(forests, labels=names)


def run(name: str, seeds: int, data_dir: str) -> pd.DataFrame:
    X, y, schema = load_any_dataset(name, data_dir)
    rows = []
    for seed in range(seeds):
        split = make_split(X, y, schema, seed, dataset=name)
        truth = encode_labels(split.y_test, schema)
        for eps in EPSILONS:
            share, bins = plan(split, eps)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                central = EDPRFClassifier(schema, epsilon=eps, random_state=seed).fit(split.X_train, split.y_train)
                models = {"defaults, central": central.predict_proba(split.X_test)}
                for partition in PARTITIONS:
                    parties = party_rows(split, partition, N_PARTIES, seed)
                    models[f"defaults, {partition}"] = federated(split, parties, eps, seed, share, bins)
                    models[f"trees only, {partition}"] = federated(split, parties, eps, seed, 0.0, 0)
            for model, proba in models.items():
                acc, auc = scores(proba, truth)
                rows.append(
                    {"dataset": name, "epsilon": eps, "seed": seed, "model": model, "share": share, "bins": bins}
                    | {"accuracy": acc, "auc": auc}
                )
        print(f"{name}: seed {seed} done", file=sys.stderr, flush=True)
    return pd.DataFrame(rows)


def report(table: pd.DataFrame, seeds: int) -> str:
    mean = table.groupby(["dataset", "epsilon", "model"], sort=False).agg(
        accuracy=("accuracy", "mean"), auc=("auc", "mean"), share=("share", "first"), bins=("bins", "first")
    )
    lines = [
        "# The defaults through the federation path (issue 23)",
        "",
        (
            f"Command: `python benchmarks/bench_federated_defaults.py --seeds {seeds}`. What and why: its docstring. "
            f"{N_PARTIES} parties, means over seeds 0..{seeds - 1}; accuracy in points (ROC AUC, macro one-vs-rest "
            "for the wall robot); gap = federated − central defaults (issue 23's goal: within 2 points under "
            "Dirichlet 0.5). Seeded research noise, not DP releases."
        ),
        "",
        (
            "| dataset | ε | marginals share / bins | central defaults | defaults, IID | gap | defaults, Dirichlet 0.5 | "
            "gap | trees only, Dirichlet 0.5 | gap |"
        ),
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    met = total = 0
    for (name, eps), group in mean.groupby(level=[0, 1], sort=False):
        group = group.droplevel([0, 1])
        central = group.loc["defaults, central"]

        def cell(model: str) -> list[str]:
            row = group.loc[model]
            return [f"{100 * row.accuracy:.1f} ({row.auc:.3f})", f"{100 * (row.accuracy - central.accuracy):+.1f}"]

        gap = 100 * (group.loc["defaults, dirichlet-0.5"].accuracy - central.accuracy)
        met, total = met + (gap >= -2.0), total + 1
        share = f"{central.share:g} / {int(central.bins)}" if central.share else "0 (trees only)"
        lines.append(
            f"| {name} | {eps:g} | {share} | {100 * central.accuracy:.1f} ({central.auc:.3f}) | "
            + " | ".join(cell("defaults, iid") + cell("defaults, dirichlet-0.5") + cell("trees only, dirichlet-0.5"))
            + " |"
        )
    lines += ["", f"Within 2 points of central under Dirichlet 0.5: {met} of {total} (dataset, ε) cells.", *READING]
    return "\n".join(lines)


READING = [
    "",
    "Reading (the numbers are this file's, 10 seeds; gaps as mean ± sd over seeds):",
    "",
    (
        "- **Where the federation holds.** Bank, census and diabetes stay within 2 points of central at every ε; the "
        "marginals part is what gets census there (the trees alone fall 2.9, 2.0 and 1.2 points behind) and "
        "diabetes at ε = 0.5 (1.4 against 3.2): the summed histograms are those of all the parties' marginals "
        "rows, whatever the label skew, with √20 times one party's noise."
    ),
    (
        "- **Credit: central moved, the federation did not.** The central defaults run the residual pass where "
        "ε ≥ 0.5 and n ε / d ≥ 220 (`residual_pass.md`, `residual_constants.md`), which a party's release never "
        "carries; on credit (n ε / d = 249 and 497 at ε = 1 and 2) that lifts central accuracy from 77.7 and 77.8 "
        "to 77.8 and 78.8 points while the federated model is unchanged, so credit's gaps (−2.3 ± 1.5, −2.1 ± 0.8, "
        "−2.3 ± 1.2) all sit outside the line: 9 of 18 cells, against 11 before the pass (credit at ε = 1 and 2 "
        "were inside, −1.9 and −1.3). Bank's central gain (88.7 to 89.1, 89.2 and 89.2) stays within it (−0.5, "
        "−0.4, −0.4). Diabetes (−1.4 ± 0.6, −1.7 ± 0.4 at ε ≤ 1) varies by about half a point from seed to seed: "
        "its side of the line is not firm."
    ),
    (
        "- **Where it cannot.** Heart (237 training rows: 12 a party) and the wall robot (four classes, trees "
        "only: each party chooses its splits from about 220 rows) stay 12 to 22 points below central. Each party "
        "spends its whole ε on its own few rows; closing that gap needs statistics pooled before the noise "
        "(secure aggregation of the histograms, or splits chosen from pooled counts in a multi-round protocol)."
    ),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--datasets", default=",".join(DATASETS))
    parser.add_argument("--data-dir", default=str(DEFAULT_DATA_DIR))
    parser.add_argument("--out", default=str(RESULTS_DIR / "federated_defaults.md"))
    parser.add_argument("--report-only", action="store_true", help="rebuild the report from the CSV next to --out")
    args = parser.parse_args()
    table = per_seed_table(
        args.out,
        args.report_only,
        lambda: pd.concat([run(n, args.seeds, args.data_dir) for n in args.datasets.split(",")], ignore_index=True),
    )
    text = report(table, args.seeds)
    Path(args.out).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
