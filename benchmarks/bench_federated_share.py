#!/usr/bin/env python
"""Would a larger marginals share close the federated gap? The coordinator's share on inner rows (issue 23).

In a federation the trees part is each party's own: one tree per party on its share of that party's rows, while
the marginals part is the sum of every party's histograms.  So the trees could be worth less to a federation than
to a single data holder, and the coordinator might do better asking every party for a larger marginals share than
the central rule's 0.9.  This benchmark measures that on the inner validation rows (seeds 0..3, each seed's
training rows split 75/25), the rows a constant may be chosen on:

- ``central``: ``EDPRFClassifier(schema, epsilon=ε)`` (the defaults) on the inner training rows;
- ``federated, share s``: the path of ``bench_federated_defaults.py`` (the coordinator's plan for the share ``s``
  from ``CoordinatorConfig.marginals_plan``, one forest per party, ``merge_forests``), 20 parties under
  Dirichlet-0.5 label skew, with ``s`` the rule's (``rule``: 0.9 for two classes above ``n ε / d = 2``), 0.95 or
  0.98 (a share below 1: each party keeps some rows for its tree).

Criterion: issue 23's federated goal, the federated accuracy within 2 points of central.  Rows: the nine two-class
datasets of ``bench_rule_transfer.py``, ε in {0.5, 1, 2}.  Seeded research noise, NOT DP releases.

    python benchmarks/bench_federated_share.py            # about 4 minutes on two cores

Output: ``results/federated_share.md`` (and ``.csv``).
"""

from __future__ import annotations

import itertools
import sys
import warnings
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _bench_common import RESULTS_DIR, inner_split, make_split, party_rows, report_main
from _bench_datasets import load_any_dataset
from bench_feature_stumps import scores
from bench_federated_defaults import N_PARTIES, merged_forest, plan
from bench_rule_transfer import DATASETS, INNER_SEEDS

from edprf_core import EDPRFClassifier
from edprf_core.encoding import encode_labels

EPSILONS = (0.5, 1.0, 2.0)
SHARES = (None, 0.95, 0.98)
"""The coordinator's ``marginals-share``: ``None`` is ``"auto"`` (the rule's)."""
PARTITION = "dirichlet-0.5"


def share_name(share: float | None) -> str:
    return "federated, share rule" if share is None else f"federated, share {share:g}"


def dataset_rows(name: str, data_dir: str) -> list[dict]:
    X, y, schema = load_any_dataset(name, data_dir)
    rows = []
    for seed, eps in itertools.product(INNER_SEEDS, EPSILONS):
        inner = inner_split(make_split(X, y, schema, seed, dataset=name), seed)
        truth = encode_labels(inner.y_test, schema)
        parties = party_rows(inner, PARTITION, N_PARTIES, seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            central = EDPRFClassifier(schema, epsilon=eps, random_state=seed).fit(inner.X_train, inner.y_train)
            models = {"central": (central.predict_proba(inner.X_test), None, None)}
            for share in SHARES:
                s, bins = plan(inner, eps, share)
                forest = merged_forest(inner, parties, eps, seed, s, bins)
                models[share_name(share)] = (forest.predict_proba(inner.X_test), s, bins)
        for model, (proba, s, bins) in models.items():
            accuracy, auc = scores(proba, truth)
            rows.append(
                {"dataset": name, "epsilon": eps, "seed": seed, "model": model, "share": s, "bins": bins}
                | {"accuracy": accuracy, "auc": auc}
            )
    print(f"{name} done", file=sys.stderr, flush=True)
    return rows


def compute(data_dir: str, jobs: int) -> pd.DataFrame:
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        parts = pool.map(dataset_rows, DATASETS, itertools.repeat(data_dir))
        return pd.DataFrame([row for part in parts for row in part])


def report(table: pd.DataFrame) -> str:
    mean = table.groupby(["dataset", "epsilon", "model"], sort=False)[["accuracy", "auc"]].mean()
    federated = [share_name(s) for s in SHARES]
    lines = [
        "# The coordinator's marginals share in a federation, on inner rows (issue 23)",
        "",
        (
            "Command: `python benchmarks/bench_federated_share.py`. What and why: its docstring. Inner validation "
            f"rows, means over seeds {INNER_SEEDS[0]}..{INNER_SEEDS[-1]}; {N_PARTIES} parties, Dirichlet 0.5; "
            "accuracy in points (ROC AUC), gap = federated − central defaults (issue 23's goal: within 2 points). "
            "Seeded research noise, not DP releases."
        ),
        "",
        "| dataset | ε | central defaults | " + " | ".join(f"{m} | gap" for m in federated) + " |",
        "|---|---|---|" + "---|---|" * len(federated),
    ]
    within = {m: 0 for m in federated}
    for (name, eps), group in mean.groupby(level=[0, 1], sort=False):
        group = group.droplevel([0, 1])
        central = group.loc["central"]
        cells = []
        for model in federated:
            row = group.loc[model]
            gap = 100 * (row.accuracy - central.accuracy)
            within[model] += gap >= -2.0
            cells += [f"{100 * row.accuracy:.1f} ({row.auc:.3f})", f"{gap:+.1f}"]
        lines.append(
            f"| {name} | {eps:g} | {100 * central.accuracy:.1f} ({central.auc:.3f}) | " + " | ".join(cells) + " |"
        )
    n_cells = len(mean) // (len(federated) + 1)
    lines += [
        "",
        f"Within 2 points of central, of {n_cells} cells: "
        + ", ".join(f"{m.removeprefix('federated, ')} {within[m]}" for m in federated)
        + ".",
        *READING,
    ]
    return "\n".join(lines) + "\n"


READING = [
    "",
    "Reading (the numbers are this file's):",
    "",
    (
        "- **The share is not what keeps a federation from central.** Each share leaves 16 of the 27 cells within "
        "2 points. Moving from 0.9 to 0.95 or 0.98 changes a cell's accuracy by at most 1.3 points (mroz at "
        "ε = 0.5), and ROC AUC by at most 0.024 (heart at ε = 2); no cell crosses the line. The rule's 0.9 stays."
    ),
    (
        "- **Credit's gap is the summed histograms' noise.** At ε = 0.5 and 1, credit stays 2.1 to 2.9 points "
        "behind whatever the share, and a larger share makes it a little worse (−2.7 to −2.9 at ε = 0.5). The "
        "marginals' sum carries √20 times one release's noise, and a larger share only gives that sum more rows. "
        "A party's tree adds something the noisy sum lacks."
    ),
    (
        "- **The small datasets stay far behind.** Heart (177 inner training rows, about 9 a party), cancer (341) "
        "and mroz (451) are 2.6 to 28 points behind at every share. There each party spends its whole ε on a "
        "few dozen rows; only statistics pooled before the noise (secure aggregation) could close that."
    ),
]


if __name__ == "__main__":
    report_main(__doc__.splitlines()[0], RESULTS_DIR / "federated_share.md", compute, report)
