#!/usr/bin/env python
"""What the weight factor ``c = WEIGHT_CAP_FACTOR`` of the bounded pooling costs honest federations and buys against attacks.

Item 5 (b) of ``edprf_core/_leaf_distribution.py`` caps each part's class weight at ``c`` times the
2nd-largest weight of the class when the part's claimed size is plausible (<= 64 x the 2nd-largest size).
``c = 2`` lets an honest large party under label skew keep its say; ``bounded_influence_seeds_diagnosis.md``
found that a rotated copy of party 0's release scaled x8 (plausible size) misses the issue-20 goal by +0.032
with ``c = 2`` and +0.008 with ``c = 1``.  This script measures both sides for ``c`` in :data:`CAPS`, paired
on the seed (the same fitted forests; only the constant changes; it is patched in
``edprf_core._leaf_distribution`` around merging and predicting and restored after, and a fresh merged
forest is built per ``c`` since the merged forest caches its prior and label-shift factors).

Honest side (``--honest``): the federation path of ``bench_federated_defaults.py``: the split of
``_bench_common.make_split`` (stratified 80/20; diabetes undersampled 7000/7000), parties from
``party_rows(split, "dirichlet-<alpha>", P, seed)``, each party ``EDPRFClassifier(schema, epsilon=1,
n_trees=1, max_depth="auto", max_depth_cap=8, n_bins=20, marginals_share=s, marginals_bins=b)`` with the
coordinator's plan ``(s, b)`` for P parties, ``random_state = seed * 1000 + i``; ``merge_forests`` and its
``predict_proba``; accuracy of the argmax and ROC AUC (macro one-vs-rest for wall robot).

Attack side (``--attacks``): the fixture of ``tests/core/test_bounded_influence.py`` reseeded as in
``bounded_influence_seeds.py`` (wall robot, 1000 test rows, 5 IID parties, 2 trees, epsilon 1; seed 0 is the
test's fixture), the hostile part one of ``tests/forged_releases.ATTACKS`` or a probe (party 0's release with
counts rotated across classes and scaled x2 / x8 / x60, all of plausible size; the hostile party's own release
rotated x1000), or the honest
fifth party as reference.  Per ``c`` the honest model, the drop-one model, the goal and the forged release (the
``inverted*`` attacks read the honest model under that ``c``) are all computed under that ``c``:
``shortfall = acc_honest - max(0, acc_honest - acc_drop) - 0.02 - acc_merged`` (> 0: goal missed).

    python benchmarks/bounded_influence_cap.py --honest --datasets wall bank --seeds 5
    python benchmarks/bounded_influence_cap.py --attacks --seeds 20

Output: ``benchmarks/results/bounded_influence_cap_{honest,attacks}.csv`` and the report
``benchmarks/results/bounded_influence_cap.md`` (rebuilt from whichever CSVs exist; ``--report-only``).
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import contextlib
import sys
import time
import warnings
from concurrent.futures import ProcessPoolExecutor
from functools import cache
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT))

RESULTS = ROOT / "benchmarks" / "results"
CAPS = (1.0, 1.25, 1.5, 2.0)
BASE_CAP = 2.0
EPSILON = 1.0
PARTIES = (5, 20)
PARTITIONS = ("dirichlet-0.5", "dirichlet-0.1")
SLACK = 0.02
N_TEST = 1000
GOAL_TOLERANCE = 0.019
READING = "\n## Reading\n"


@contextlib.contextmanager
def weight_cap(c: float):
    """``edprf_core._leaf_distribution.WEIGHT_CAP_FACTOR = c`` for the block (read at call time by
    ``capped_part_weights``, the one place the cap is written), restored after."""
    import edprf_core._leaf_distribution as ld

    old = ld.WEIGHT_CAP_FACTOR
    ld.WEIGHT_CAP_FACTOR = c
    try:
        yield
    finally:
        ld.WEIGHT_CAP_FACTOR = old


def _binding(merged, c: float) -> tuple[float, float]:
    """(share of part x class weights the cap lowers, mean over classes of the largest part's capped share)."""
    from edprf_core._leaf_distribution import TOLERATED_PARTIES, capped_part_weights

    _, weights = merged._pooling_terms("log-linear", True)
    with weight_cap(c):
        capped = capped_part_weights(weights, TOLERATED_PARTIES)
    lowered = float(np.mean(capped < weights - 1e-9))
    share = capped / np.where(capped.sum(axis=0) > 0, capped.sum(axis=0), 1.0)
    return lowered, float(share.max(axis=0).mean())


# ---------------------------------------------------------------------------------------------- honest side


@cache
def _dataset(name: str, data_dir: str):
    from _bench_datasets import load_dataset

    return load_dataset(name, data_dir)


def _plan(split, n_parties: int) -> tuple[float, int]:
    """The coordinator's marginals share and grid for this consortium (``bench_federated_defaults.plan`` for P parties)."""
    from server import CoordinatorConfig

    config = {"schema-path": "schema.toml", "epsilon": EPSILON, "consortium-rows": len(split.y_train)}
    return CoordinatorConfig.from_run_config(config).marginals_plan(split.schema, n_parties)


def honest_job(job: tuple[str, int, str]) -> list[dict]:
    name, seed, data_dir = job
    from _bench_common import make_split, party_rows
    from bench_feature_stumps import scores

    from edprf_core import EDPRFClassifier, merge_forests
    from edprf_core.encoding import encode_labels

    warnings.filterwarnings("ignore")
    t0 = time.perf_counter()
    X, y, schema = _dataset(name, data_dir)
    split = make_split(X, y, schema, seed, dataset=name)
    truth = encode_labels(split.y_test, schema)
    rows = []
    for n_parties in PARTIES:
        share, bins = _plan(split, n_parties)
        for partition in PARTITIONS:
            forests, labels = [], []
            for i, idx in enumerate(party_rows(split, partition, n_parties, seed)):
                if len(idx) == 0:
                    continue
                clf = EDPRFClassifier(
                    schema,
                    epsilon=EPSILON,
                    n_trees=1,
                    max_depth="auto",
                    max_depth_cap=8,
                    n_bins=20,
                    marginals_share=share,
                    marginals_bins=bins if share else "auto",
                    random_state=seed * 1000 + i,
                ).fit(split.X_train.iloc[idx], split.y_train.iloc[idx])
                forests.append(clf.forest_)
                labels.append(f"p{i}")
            for c in CAPS:
                with weight_cap(c):
                    merged = merge_forests(forests, labels=labels)
                    acc, auc = scores(merged.predict_proba(split.X_test), truth)
                lowered, top_share = _binding(merged, c)
                rows.append(
                    {
                        "dataset": name,
                        "seed": seed,
                        "parties": n_parties,
                        "partition": partition,
                        "nonempty": len(forests),
                        "c": c,
                        "accuracy": acc,
                        "auc": auc,
                        "capped": lowered,
                        "top_share": top_share,
                    }
                )
    print(f"  honest {name} seed {seed}: {time.perf_counter() - t0:.1f} s", flush=True)
    return rows


# ---------------------------------------------------------------------------------------------- attack side


PROBE_SCALES = (2.0, 8.0, 60.0)
"""party 0's release, counts rotated, scaled by these (plausible sizes: at most 64 x the 2nd largest part)."""


def attack_job(seed: int) -> list[dict]:
    from dataclasses import replace

    from edprf_core import merge_forests
    from tests.forged_releases import ATTACKS, _with_counts, forge, seeded_federation

    warnings.filterwarnings("ignore")
    t0 = time.perf_counter()
    honest, own, own_rows, X_test, truth = seeded_federation(seed)  # the test's federation (N_TEST test rows)
    other = honest[0]
    labels = [f"p{i}" for i in range(4)]

    def acc(parts, names):
        return float((np.argmax(merge_forests(parts, labels=names).predict_proba(X_test), axis=1) == truth).mean())

    rotated = np.roll(other.trees.leaf_counts.astype(np.float64), 1, axis=1)
    probes = {
        f"probe-copied-x{s:g}": _with_counts(replace(other, parts=own.parts, _routing={}), rotated * s)
        for s in PROBE_SCALES
    }
    probes["probe-own-rotated-x1000"] = _with_counts(
        own, np.roll(own.trees.leaf_counts.astype(np.float64), 1, axis=1) * 1e3
    )
    out = []
    for c in CAPS:
        with weight_cap(c):
            all_honest = merge_forests(honest, labels=labels)
            acc_honest = float((np.argmax(all_honest.predict_proba(X_test), axis=1) == truth).mean())
            acc_drop = acc(honest[1:], labels[1:])
            goal = acc_honest - max(0.0, acc_honest - acc_drop) - SLACK
            parts = [("fifth", "reference", own)]
            for attack in ATTACKS:
                forged = forge(attack, own, honest_model=all_honest.predict_proba, own_rows=own_rows, other=other)
                parts.append((attack, "attack", forged))
            parts += [(name, "probe", part) for name, part in probes.items()]
            for name, kind, part in parts:
                a = acc([*honest, part], [*labels, "mallory"])
                out.append(
                    {
                        "seed": seed,
                        "c": c,
                        "part": name,
                        "kind": kind,
                        "acc_honest": acc_honest,
                        "acc_drop": acc_drop,
                        "goal": goal,
                        "acc_merged": a,
                        "shortfall": goal - a,
                    }
                )
    print(f"  attacks seed {seed}: {time.perf_counter() - t0:.1f} s", flush=True)
    return out


# ---------------------------------------------------------------------------------------------- report


def _mean_se(x: pd.Series) -> tuple[float, float]:
    return float(x.mean()), float(x.std(ddof=1) / np.sqrt(len(x))) if len(x) > 1 else float("nan")


def honest_report(df: pd.DataFrame) -> list[str]:
    base = df[df.c == BASE_CAP].set_index(["dataset", "seed", "parties", "partition"])
    lines = [
        "## Honest federations: the merged model at c against c = 2 (paired on the seed)",
        "",
        (
            "Difference `metric(c) - metric(c = 2)`, mean over seeds (se over seeds), in points (x100). "
            "`capped`: share of the part x class weights the cap lowers at that c; `top`: mean over classes of the "
            "largest part's share of the capped weights. Accuracy and AUC at c = 2 are absolute."
        ),
        "",
        "| dataset | parties | partition | seeds | acc c=2 | AUC c=2 | "
        + " | ".join(f"Δacc c={c:g} | ΔAUC c={c:g}" for c in CAPS if c != BASE_CAP)
        + " | capped c=1 / c=2 | top c=1 / c=2 |",
        "|---|---|---|---|---|---|" + "---|---|" * (len(CAPS) - 1) + "---|---|",
    ]
    for (name, parties, partition), g in df.groupby(["dataset", "parties", "partition"], sort=False):
        b = base.loc[(name, slice(None), parties, partition)]
        cells = [name, str(parties), partition, str(len(b)), f"{b.accuracy.mean():.4f}", f"{b.auc.mean():.4f}"]
        for c in CAPS:
            if c == BASE_CAP:
                continue
            gc = g[g.c == c].set_index("seed").sort_index()
            bb = b.reset_index().set_index("seed").loc[gc.index]
            for metric in ("accuracy", "auc"):
                m, se = _mean_se(100 * (gc[metric] - bb[metric]))
                cells.append(f"{m:+.2f} ({se:.2f})")
        g1, g2 = g[g.c == min(CAPS)], g[g.c == BASE_CAP]
        cells.append(f"{g1.capped.mean():.3f} / {g2.capped.mean():.3f}")
        cells.append(f"{g1.top_share.mean():.3f} / {g2.top_share.mean():.3f}")
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "Pooled over datasets and settings (cells weighted equally, se over seed x cell differences):", ""]
    lines += ["| c | Δacc (se) | ΔAUC (se) | worst cell Δacc | worst cell ΔAUC |", "|---|---|---|---|---|"]
    key = ["dataset", "seed", "parties", "partition"]
    for c in CAPS:
        if c == BASE_CAP:
            continue
        d = df[df.c == c].set_index(key)[["accuracy", "auc"]] - base[["accuracy", "auc"]]
        d = 100 * d.dropna()
        cell = d.groupby(level=["dataset", "parties", "partition"]).mean()
        ma, sa = _mean_se(d.accuracy)
        mu, su = _mean_se(d.auc)
        lines.append(
            f"| {c:g} | {ma:+.2f} ({sa:.2f}) | {mu:+.2f} ({su:.2f}) | {cell.accuracy.min():+.2f} | {cell.auc.min():+.2f} |"
        )
    return lines


def attack_report(df: pd.DataFrame) -> list[str]:
    seeds = sorted(df.seed.unique())
    lines = [
        f"## Attacks: mean shortfall against the issue-20 goal per c ({len(seeds)} seeds, {seeds[0]}..{seeds[-1]})",
        "",
        (
            "Mean shortfall (se over seeds) and misses; > 0: the goal missed on average. The test's tolerance for "
            f"the mean over seeds 0-9 is {GOAL_TOLERANCE}. `mean 0-9`: the test's reading (seeds 0-9 only)."
        ),
        "",
        "| part | "
        + " | ".join(f"c={c:g}" for c in CAPS)
        + " | "
        + " | ".join(f"mean 0-9 c={c:g}" for c in CAPS)
        + " |",
        "|---|" + "---|" * (2 * len(CAPS)),
    ]
    for part, g in df.groupby("part", sort=False):
        cells = []
        for c in CAPS:
            s = g[g.c == c].shortfall
            m, se = _mean_se(s)
            cells.append(f"{m:+.4f} ({se:.4f}) {int((s > 0).sum())}/{len(s)}")
        for c in CAPS:
            s = g[(g.c == c) & (g.seed < 10)].shortfall
            cells.append(f"{s.mean():+.4f}")
        kind = g.kind.iloc[0]
        label = part + (" (honest)" if kind == "reference" else " (probe)" if kind == "probe" else "")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    per = df.drop_duplicates(["seed", "c"])
    lines += [
        "",
        "The honest 4-party model per c (mean over seeds): "
        + ", ".join(
            f"c={c:g}: acc {per[per.c == c].acc_honest.mean():.4f}, goal {per[per.c == c].goal.mean():.4f}"
            for c in CAPS
        )
        + ".",
    ]
    # paired differences of the shortfall vs c = 2 for the probes
    lines += ["", "Shortfall difference vs c = 2, paired on the seed (mean (se)):", ""]
    lines += [
        "| part | " + " | ".join(f"c={c:g}" for c in CAPS if c != BASE_CAP) + " |",
        "|---|" + "---|" * (len(CAPS) - 1),
    ]
    for part, g in df.groupby("part", sort=False):
        b = g[g.c == BASE_CAP].set_index("seed").shortfall
        cells = []
        for c in CAPS:
            if c == BASE_CAP:
                continue
            d = g[g.c == c].set_index("seed").shortfall - b
            m, se = _mean_se(d.dropna())
            cells.append(f"{m:+.4f} ({se:.4f})")
        lines.append(f"| {part} | " + " | ".join(cells) + " |")
    return lines


def write_report(commands: list[str]) -> str:
    lines = [
        "# The weight factor c of the bounded pooling: honest cost against attack effect",
        "",
        "Script: `benchmarks/bounded_influence_cap.py` (see its docstring for the protocol). Commands:",
        "",
        *[f"    {c}" for c in commands],
        "",
    ]
    honest = RESULTS / "bounded_influence_cap_honest.csv"
    attacks = RESULTS / "bounded_influence_cap_attacks.csv"
    if honest.exists():
        lines += honest_report(pd.read_csv(honest)) + [""]
    if attacks.exists():
        lines += attack_report(pd.read_csv(attacks)) + [""]
    out = RESULTS / "bounded_influence_cap.md"
    # a hand-written "## Reading" section at the end of an existing report is kept
    previous = out.read_text(encoding="utf-8") if out.exists() else ""
    reading = previous[previous.index(READING) :] if READING in previous else ""
    text = "\n".join(lines).rstrip("\n") + "\n" + reading
    out.write_text(text, encoding="utf-8")
    return text


def main() -> None:
    from _bench_common import DEFAULT_DATA_DIR

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--honest", action="store_true", help="run the honest federations")
    parser.add_argument("--attacks", action="store_true", help="run the attack side")
    parser.add_argument("--datasets", nargs="+", default=["wall", "bank"], help="wall, bank, diabetes")
    parser.add_argument("--seeds", type=int, default=5, help="seeds 0 .. N-1")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--data-dir", default=str(DEFAULT_DATA_DIR))
    parser.add_argument("--append", action="store_true", help="add to the existing CSV (other datasets/seeds)")
    parser.add_argument("--report-only", action="store_true")
    parser.add_argument("--command", action="append", default=[], help="commands to cite in the report")
    args = parser.parse_args()
    RESULTS.mkdir(parents=True, exist_ok=True)

    def save(rows: list[dict], name: str) -> None:
        path = RESULTS / f"bounded_influence_cap_{name}.csv"
        df = pd.DataFrame(rows)
        if args.append and path.exists():
            df = pd.concat([pd.read_csv(path), df], ignore_index=True)
        df.to_csv(path, index=False, float_format="%.6f")

    if not args.report_only:
        with ProcessPoolExecutor(args.jobs) as pool:
            if args.honest:
                jobs = [(d, s, args.data_dir) for d in args.datasets for s in range(args.seeds)]
                save([r for batch in pool.map(honest_job, jobs) for r in batch], "honest")
            if args.attacks:
                save([r for batch in pool.map(attack_job, range(args.seeds)) for r in batch], "attacks")
    commands = args.command or ["python benchmarks/bounded_influence_cap.py " + " ".join(sys.argv[1:])]
    print(write_report(commands))


if __name__ == "__main__":
    main()
