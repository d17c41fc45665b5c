"""One hostile party against N honest ones: the goal of issue 20 (bounded influence).

For N in {2, 4, 9} honest parties plus one hostile party, on diabetes, wall robot and bank
marketing, and for every attack of ``tests/forged_releases.py`` (a release with honest shapes
and parameters, so it conforms and can be signed, whose leaf counts are forged), the global
model's accuracy must be no worse than the N honest parties' model minus what dropping one
honest party costs, minus 2 points:

    acc(N honest + hostile) >= acc(N honest) - max(0, acc(N honest) - acc(N - 1 honest)) - 0.02

Each seed splits the rows 80/20 (stratified), deals the training rows IID to N + 1 parties
(the hostile party gets an equal share: it fits its own forest with the requested parameters
and then forges the counts) and fits every party with ``EDPRFClassifier`` at epsilon = 1
(leaf counts, depth chosen from a DP count, at most 8; seeded research fits).  The forests are
merged with ``merge_forests`` (what the coordinator does with accepted releases) and pooled by
the default rule; "unbounded" is the same model pooled without the bound of item 5
(``tolerated_parties=0``, the rule before issue 20).  Accuracies are means over seeds.

Usage: ``python benchmarks/bench_hostile_party.py --seeds 3``.  ``--honest-cost CSV`` appends, from a
``bench_federation_cost.py --quick`` run (which also pools each federation without the bound), what the
bound costs honest federations: accuracy and ROC AUC, bounded against unbounded on the same forests.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import sys
import time
import warnings
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _bench_common import DEFAULT_DATA_DIR, RESULTS_DIR, make_split
from _bench_datasets import load_dataset

DATASETS = ("diabetes", "wall", "bank")
HONEST = (2, 4, 9)
EPSILON = 1.0
MARGIN = 0.02


def _accuracy(forest, X, truth, tolerated: int | None = None) -> float:
    proba = forest.predict_proba(X, tolerated_parties=tolerated)
    return float(np.mean(np.argmax(proba, axis=1) == truth))


def run_one(job: tuple[str, int, int, int, str]) -> list[dict]:
    dataset, n_honest, seed, trees, data_dir = job
    from edprf_core import EDPRFClassifier, merge_forests
    from edprf_core.encoding import encode_labels
    from edprf_fl.simulation import Partitioning, partition_rows
    from tests.forged_releases import ATTACKS, forge

    warnings.filterwarnings("ignore")
    X, y, schema = load_dataset(dataset, data_dir)
    split = make_split(X, y, schema, seed, dataset=dataset)
    truth = encode_labels(split.y_test, schema)
    parts = partition_rows(
        split.X_train, split.y_train, n_honest + 1, Partitioning("iid", 0.5, ""), np.random.default_rng(seed)
    )
    t0 = time.perf_counter()
    forests = [
        EDPRFClassifier(
            schema,
            epsilon=EPSILON,
            n_trees=trees,
            max_depth="auto",
            max_depth_cap=8,
            n_bins=20,
            random_state=seed * 1000 + i,
        )
        .fit(split.X_train.iloc[rows], split.y_train.iloc[rows])
        .forest_
        for i, rows in enumerate(parts)
    ]
    honest, own = forests[:n_honest], forests[n_honest]
    labels = [f"p{i}" for i in range(n_honest)]
    all_honest = merge_forests(honest, labels=labels)
    drop_one = merge_forests(honest[1:], labels=labels[1:])
    acc_honest = _accuracy(all_honest, split.X_test, truth)
    acc_drop = _accuracy(drop_one, split.X_test, truth)
    own_rows = split.X_train.iloc[parts[n_honest]]
    base = {
        "dataset": dataset,
        "honest": n_honest,
        "seed": seed,
        "honest_accuracy": acc_honest,
        "drop_one_accuracy": acc_drop,
    }
    rows = []
    for attack in ATTACKS:
        forged = forge(attack, own, honest_model=all_honest.predict_proba, own_rows=own_rows, other=honest[0])
        merged = merge_forests([*honest, forged], labels=[*labels, "mallory"])
        rows.append(
            base
            | {
                "attack": attack,
                "accuracy": _accuracy(merged, split.X_test, truth),
                "unbounded_accuracy": _accuracy(merged, split.X_test, truth, tolerated=0),
            }
        )
    print(f"  {dataset} N={n_honest} seed {seed}: {time.perf_counter() - t0:.1f} s", flush=True)
    return rows


def write_report(df: pd.DataFrame, out: Path, command: str, seeds: list[int]) -> bool:
    cells = (
        df.groupby(["dataset", "honest", "attack"], sort=False)[
            ["honest_accuracy", "drop_one_accuracy", "accuracy", "unbounded_accuracy"]
        ]
        .mean()
        .reset_index()
    )
    cells["bound"] = (
        cells["honest_accuracy"] - (cells["honest_accuracy"] - cells["drop_one_accuracy"]).clip(lower=0) - MARGIN
    )
    cells["met"] = cells["accuracy"] >= cells["bound"]
    worst = df.assign(
        bound=df["honest_accuracy"] - (df["honest_accuracy"] - df["drop_one_accuracy"]).clip(lower=0) - MARGIN
    )
    worst_gap = (
        (worst["accuracy"] - worst["bound"])
        .groupby([worst["dataset"], worst["honest"], worst["attack"]], sort=False)
        .min()
    )
    lines = [
        "# One hostile party against N honest ones (issue 20)",
        "",
        (
            f"Command: `{command}`. Seeds {seeds}; accuracies are means over seeds. epsilon = {EPSILON:g} per "
            "party, leaf counts, depth from a DP count (at most 8), IID parties of equal size; seeded research "
            "fits (reproducible, not DP releases). The hostile party fits its own forest with the same "
            "parameters on its share and forges the counts (tests/forged_releases.py): the release conforms "
            'and would be signed. Goal: accuracy >= honest - max(0, honest - drop one) - 0.02 ("bound"). '
            '"unbounded" pools the same forests by the rule before issue 20 (no clip, no cap). '
            '"worst seed" is the smallest (accuracy - bound) over seeds.'
        ),
        "",
        f"Cells meeting the goal (mean over seeds): {int(cells['met'].sum())} of {len(cells)}.",
        "",
    ]
    for dataset, table in cells.groupby("dataset", sort=False):
        lines += [
            f"## {dataset}",
            "",
            "| honest parties | attack | honest | drop one | bound | with hostile | met | worst seed | unbounded |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for _, r in table.iterrows():
            gap = worst_gap[(dataset, r["honest"], r["attack"])]
            lines.append(
                f"| {r['honest']} | {r['attack']} | {r['honest_accuracy']:.3f} | {r['drop_one_accuracy']:.3f} "
                f"| {r['bound']:.3f} | {r['accuracy']:.3f} | {'yes' if r['met'] else 'NO'} | {gap:+.3f} "
                f"| {r['unbounded_accuracy']:.3f} |"
            )
        lines.append("")
    out.mkdir(parents=True, exist_ok=True)
    (out / "hostile_party.md").write_text("\n".join(lines), encoding="utf-8")
    df.to_csv(out / "hostile_party.csv", index=False)
    return bool(cells["met"].all())


def honest_cost_section(csv: Path) -> list[str]:
    """Markdown: bounded against unbounded pooling of the same honest federations (bench_federation_cost --quick)."""
    df = pd.read_csv(csv)
    pair = df[df.model.isin(["federated", "federated, unbounded (before issue 20)"])]
    g = pair.groupby(["dataset", "partition", "parties", "model"])[["accuracy", "roc_auc"]].mean().unstack("model")
    sd = (
        df[df.model == "federated, unbounded (before issue 20)"]
        .groupby(["dataset", "partition", "parties"])[["accuracy", "roc_auc"]]
        .std()
    )
    seeds = sorted(int(x) for x in df.seed.unique())
    unbounded = "federated, unbounded (before issue 20)"
    diff = (g[("accuracy", "federated")] - g[("accuracy", unbounded)]).abs()
    diff_auc = (g[("roc_auc", "federated")] - g[("roc_auc", unbounded)]).abs()
    mild = diff[diff.index.get_level_values("partition") != "dirichlet-0.1"].max()
    inside = (diff <= sd["accuracy"].reindex(diff.index).fillna(0.0)) & (
        diff_auc <= sd["roc_auc"].reindex(diff.index).fillna(0.0)
    )
    outside = [f"{d} {p} {n} parties" for (d, p, n), ok in inside.items() if not ok]
    per_seed = pair.pivot_table(index=["dataset", "partition", "parties", "seed"], columns="model", values="accuracy")
    paired = (per_seed["federated"] - per_seed[unbounded]).groupby(level=[0, 1, 2])
    change, change_sd = paired.mean(), paired.std()
    lines = [
        "## Honest federations: what the bound costs",
        "",
        (
            f"From `python benchmarks/bench_federation_cost.py --quick --seeds {len(seeds)} --data-dir "
            "/work/shared/data` "
            f"(written to `results/federation_cost_quick.csv`; seeds {seeds}, one tree per party, the same forests "
            "pooled both ways; std over those seeds of the unbounded rule). IID and Dirichlet 0.5: "
            f"the bound changes mean accuracy by at most {100 * mild:.1f} points. In {int(inside.sum())} of "
            f"{len(diff)} settings both the accuracy and the ROC AUC change are within one std; outside: "
            f"{', '.join(outside) if outside else 'none'}. Under Dirichlet 0.1 (each class at about one party) "
            "the bound still costs accuracy on average (within one std, which is large there): a party that "
            "alone holds a class looks like a hostile party claiming it, so its extreme log ratios are "
            "clipped; its class weight keeps up to 2x the cap when its claimed size is plausible "
            '(edprf_core/_leaf_distribution.py, item 5). "change" is the accuracy change per seed '
            "(bounded - unbounded, same forests), mean and std over seeds."
        ),
        "",
        (
            "| dataset | partition | parties | accuracy bounded | unbounded | std | change (std) "
            "| ROC AUC bounded | unbounded | std |"
        ),
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for (dataset, partition, parties), r in g.iterrows():
        s = sd.loc[(dataset, partition, parties)]
        unbounded = "federated, unbounded (before issue 20)"
        lines.append(
            f"| {dataset} | {partition} | {parties} | {r[('accuracy', 'federated')]:.3f} | "
            f"{r[('accuracy', unbounded)]:.3f} | {s['accuracy']:.3f} | "
            f"{change[(dataset, partition, parties)]:+.3f} ({change_sd[(dataset, partition, parties)]:.3f}) | "
            f"{r[('roc_auc', 'federated')]:.3f} | {r[('roc_auc', unbounded)]:.3f} | {s['roc_auc']:.3f} |"
        )
    return [*lines, ""]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--datasets", default=",".join(DATASETS))
    p.add_argument("--honest", default=",".join(map(str, HONEST)), help="numbers of honest parties")
    p.add_argument("--trees", type=int, default=2, help="trees per party (default 2)")
    p.add_argument("--jobs", type=int, default=1)
    p.add_argument("--data-dir", default=str(DEFAULT_DATA_DIR))
    p.add_argument("--out", default=str(RESULTS_DIR))
    p.add_argument(
        "--honest-cost",
        type=Path,
        default=None,
        help="federation_cost_quick.csv of a bench_federation_cost.py --quick run to append",
    )
    p.add_argument(
        "--report-only",
        type=Path,
        default=None,
        help="rewrite the report from this hostile_party.csv instead of running",
    )
    args = p.parse_args(argv)
    seeds = list(range(args.seeds))
    out = Path(args.out)
    if args.report_only is not None:
        df = pd.read_csv(args.report_only)
        seeds = sorted(int(x) for x in df.seed.unique())
        command = f"python benchmarks/bench_hostile_party.py --seeds {len(seeds)} --data-dir {args.data_dir}"
        met = write_report(df, out, command, seeds)
        if args.honest_cost is not None:
            with (out / "hostile_party.md").open("a", encoding="utf-8") as fh:
                fh.write("\n".join(honest_cost_section(args.honest_cost)))
        return 0 if met else 1
    jobs = [
        (d, int(n), s, args.trees, args.data_dir)
        for d in args.datasets.split(",")
        for n in args.honest.split(",")
        for s in seeds
    ]
    if args.jobs > 1:
        with ProcessPoolExecutor(args.jobs) as pool:
            results = list(pool.map(run_one, jobs))
    else:
        results = [run_one(j) for j in jobs]
    df = pd.DataFrame([r for rows in results for r in rows])
    command = "python benchmarks/bench_hostile_party.py " + " ".join(argv if argv is not None else sys.argv[1:])
    met = write_report(df, out, command.strip(), seeds)
    if args.honest_cost is not None:
        with (out / "hostile_party.md").open("a", encoding="utf-8") as fh:
            fh.write("\n".join(honest_cost_section(args.honest_cost)))
    print((out / "hostile_party.md").read_text(encoding="utf-8"))
    return 0 if met else 1


if __name__ == "__main__":
    raise SystemExit(main())
