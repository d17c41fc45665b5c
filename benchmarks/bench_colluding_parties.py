"""Two colluding hostile parties against N honest ones, and what tolerating two costs honest federations.

The merge's bounded influence (item 5 of ``edprf_core/_leaf_distribution.py``) compares each party with the
``(f+1)``-th largest; with the default ``f = 1`` (``tolerated-parties``) two colluders, each the other's reference,
are not held.  For N in {5, 9} honest parties plus two hostile ones, IID and Dirichlet 0.5 label skew, on diabetes,
wall robot and bank marketing: every party fits 2 trees at epsilon = 1 (leaf counts, depth from a DP count, at most
8; seeded research fits), the two hostile parties forge their own forests' counts the same way
(``tests/forged_releases.py``), and the merged forest is pooled with ``f = 1`` and ``f = 2``.

Goal (issue 20's, for a coalition of two), on the model that tolerates two:
``acc(N honest + 2 forged) >= acc(N honest) - max(0, acc(N honest) - acc(N - 2 honest)) - 0.02``, every accuracy
pooled with ``f = 2``.  Honest cost: ``acc(N honest, f = 1) - acc(N honest, f = 2)`` on the same forests.
Accuracies are means over seeds.

Usage: ``python benchmarks/bench_colluding_parties.py --seeds 3`` (``--jobs 2`` on two cores).
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _bench_common import DEFAULT_DATA_DIR, RESULTS_DIR, make_split, party_forests, party_rows, rows_of_jobs
from _bench_datasets import load_dataset

DATASETS = ("diabetes", "wall", "bank")
HONEST = (5, 9)
PARTITIONS = ("iid", "dirichlet-0.5")
ATTACKS = ("rarest-class", "majority-class", "copied-release", "inverted")
COLLUDERS = 2
EPSILON = 1.0
MARGIN = 0.02


def _accuracy(forest, X: pd.DataFrame, truth: np.ndarray) -> float:
    return float(np.mean(np.argmax(forest.predict_proba(X), axis=1) == truth))


def run_one(job: tuple[str, int, str, int, int, str]) -> list[dict]:
    """One federation: its honest accuracies under f = 1 and f = 2, and each attack's under both."""
    dataset, n_honest, partition, seed, trees, data_dir = job
    from edprf_core import merge_forests
    from edprf_core.encoding import encode_labels
    from tests.forged_releases import forge

    warnings.filterwarnings("ignore")
    t0 = time.perf_counter()
    X, y, schema = load_dataset(dataset, data_dir)
    split = make_split(X, y, schema, seed, dataset=dataset)
    truth = encode_labels(split.y_test, schema)
    parts = party_rows(split, partition, n_honest + COLLUDERS, seed)
    forests = party_forests(split, parts, seed, trees, EPSILON)
    honest, labels = forests[:n_honest], [f"p{i}" for i in range(n_honest)]
    base = {"dataset": dataset, "honest": n_honest, "partition": partition, "seed": seed}
    for f in (1, 2):
        base[f"honest_f{f}"] = _accuracy(merge_forests(honest, labels=labels, tolerated_parties=f), split.X_test, truth)
    drop = merge_forests(honest[COLLUDERS:], labels=labels[COLLUDERS:], tolerated_parties=2)
    base["drop_two_f2"] = _accuracy(drop, split.X_test, truth)
    reference = merge_forests(honest, labels=labels).predict_proba  # what a colluder aims against
    rows = []
    for attack in ATTACKS:
        others = [_copied(honest, forests[n_honest + k], k) for k in range(COLLUDERS)]
        if attack == "copied-release" and None in others:
            continue  # no honest release of the colluder's shape to copy in this federation (said in the report)
        forged = [
            forge(
                attack,
                forests[n_honest + k],
                honest_model=reference,
                own_rows=split.X_train.iloc[parts[n_honest + k]],
                other=others[k],
            )
            for k in range(COLLUDERS)
        ]
        names = [*labels, *(f"m{k}" for k in range(COLLUDERS))]
        row = base | {"attack": attack}
        for f in (1, 2):
            merged = merge_forests([*honest, *forged], labels=names, tolerated_parties=f)
            row[f"colluded_f{f}"] = _accuracy(merged, split.X_test, truth)
        rows.append(row)
    print(f"  {dataset} {partition} N={n_honest} seed {seed}: {time.perf_counter() - t0:.1f} s", flush=True)
    return rows


def _copied(honest: list, own, k: int):
    """The honest release colluder ``k`` copies: the first from the ``k``-th on whose marginals part has the shape
    of its own (each party's marginals share and bins follow its own DP count, so under label skew they differ)."""
    ours = own.parts[0][1]
    for h in honest[k:] + honest[:k]:
        theirs = h.parts[0][1]
        if (theirs.marginals_share > 0) == (ours.marginals_share > 0) and theirs.marginals_bins == ours.marginals_bins:
            return h
    return None


def write_report(df: pd.DataFrame, out: Path, command: str, seeds: list[int]) -> bool:
    """``colluding_parties.md`` and ``.csv`` in ``out``; whether every cell meets the goal with f = 2."""
    keys = ["dataset", "partition", "honest", "attack"]
    values = ["honest_f1", "honest_f2", "drop_two_f2", "colluded_f1", "colluded_f2"]
    cells = df.groupby(keys, sort=False)[values].mean().reset_index()
    cells["bound"] = cells["honest_f2"] - (cells["honest_f2"] - cells["drop_two_f2"]).clip(lower=0) - MARGIN
    cells["met"] = cells["colluded_f2"] >= cells["bound"]
    honest = df.drop_duplicates(["dataset", "partition", "honest", "seed"])
    cost = (honest["honest_f1"] - honest["honest_f2"]).groupby(
        [honest["dataset"], honest["partition"], honest["honest"]], sort=False
    )
    lines = [
        "# Two colluding parties against N honest ones: tolerated-parties 1 and 2",
        "",
        (f"Command: `{command}`. Seeds {seeds}; accuracies are means over seeds. {__doc__.split(chr(10) * 2)[1]}")
        .replace("\n", " ")
        .replace("``", "`"),  # the docstring's literals, as Markdown
        "",
        f"Cells meeting the goal with f = 2 (mean over seeds): {int(cells['met'].sum())} of {len(cells)}.",
        "",
        "## What tolerating two costs honest federations",
        "",
        "| dataset | partition | honest parties | accuracy, f = 1 | accuracy, f = 2 | cost (points) | worst seed |",
        "|---|---|---|---|---|---|---|",
    ]
    means = honest.groupby(["dataset", "partition", "honest"], sort=False)[["honest_f1", "honest_f2"]].mean()
    for (dataset, partition, n), r in means.iterrows():
        c = cost.get_group((dataset, partition, n))
        lines.append(
            f"| {dataset} | {partition} | {n} | {r['honest_f1']:.3f} | {r['honest_f2']:.3f} "
            f"| {100 * (r['honest_f1'] - r['honest_f2']):+.1f} | {100 * c.max():+.1f} |"
        )
    lines += [
        "",
        "## Two colluders",
        "",
        "| dataset | partition | honest parties | attack | honest (f = 2) | bound | colluded, f = 1 | colluded, f = 2 | met |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for _, r in cells.iterrows():
        lines.append(
            f"| {r['dataset']} | {r['partition']} | {r['honest']} | {r['attack']} | {r['honest_f2']:.3f} "
            f"| {r['bound']:.3f} | {r['colluded_f1']:.3f} | {r['colluded_f2']:.3f} | {'yes' if r['met'] else 'NO'} |"
        )
    out.mkdir(parents=True, exist_ok=True)
    (out / "colluding_parties.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    df.to_csv(out / "colluding_parties.csv", index=False)
    return bool(cells["met"].all())


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--datasets", default=",".join(DATASETS))
    p.add_argument("--honest", default=",".join(map(str, HONEST)), help="numbers of honest parties")
    p.add_argument("--partitions", default=",".join(PARTITIONS))
    p.add_argument("--trees", type=int, default=2, help="trees per party (default 2)")
    p.add_argument("--jobs", type=int, default=1)
    p.add_argument("--data-dir", default=str(DEFAULT_DATA_DIR))
    p.add_argument("--out", default=str(RESULTS_DIR))
    args = p.parse_args(argv)
    seeds = list(range(args.seeds))
    jobs = [
        (d, int(n), part, s, args.trees, args.data_dir)
        for d in args.datasets.split(",")
        for part in args.partitions.split(",")
        for n in args.honest.split(",")
        for s in seeds
    ]
    df = rows_of_jobs(run_one, jobs, args.jobs)
    command = "python benchmarks/bench_colluding_parties.py " + " ".join(argv if argv is not None else sys.argv[1:])
    met = write_report(df, Path(args.out), command.strip(), seeds)
    print((Path(args.out) / "colluding_parties.md").read_text(encoding="utf-8"))
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
