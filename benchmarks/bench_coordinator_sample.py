"""What a coordinator's own labelled sample would buy a federation: its splits, the parties' leaf counts.

Issue 23 asks for federations of 20 parties (Dirichlet 0.5 skew) within 2 points of central DP.
``federation_depth.md`` (section 3) found that the parties' split selection, not their leaf noise,
loses the accuracy: with near-exact splits, leaf counts at epsilon 1 per party, summed over 20
parties, reach central DP on the wall robot. This script asks the question that follows: if the
coordinator holds a small labelled sample of its own (``m`` rows of the same population, never a
party's), and grows the trees' structure on it in the clear, how large must ``m`` be?

Simulated protocol (research code, not a library protocol):

1. The coordinator grows ``T`` trees of depth ``D`` on its ``m`` rows, greedily by weighted Gini on the
   public grid (each tree on a bootstrap of the sample, ``sqrt`` of the features per node, as a random
   forest does); an empty node takes a random candidate. ``m = 0`` gives totally random structures.
2. Each party sends each of its rows to one of the ``T`` trees at random and releases every tree's
   leaf class counts with discrete Laplace noise at its whole epsilon (sensitivity 1 under add/remove;
   parallel composition across trees and leaves; the structure is the coordinator's, so no split
   and no row count is paid for). The coordinator sums the counts over the parties and adds its own
   sample's exact counts (its own data, which this guarantee does not cover).
3. Prediction: per tree, the clipped counts plus one pseudo-row of the pooled prior; the trees'
   distributions pooled log-linearly.

Configuration keys (``run_sample``): ``sample`` (m), ``depth``, ``trees``, ``bins`` (10), ``eps`` (1),
``parties`` (20), ``sample_skew`` (class shares of the sample drawn from Dirichlet of that value),
``coordinator_counts`` (false: the sample's own counts left out, the parties' alone on its splits) and
``party_counts`` (false: no party, the sample alone: what the parties add is the difference).

Parties train on the inner training rows less the coordinator's sample; the central reference
(``EDPRFClassifier`` defaults) and today's federation (one tree a party, auto depth: ``run_config``
of ``bench_federation_depth.py``) train on all inner training rows. Scored on the inner validation
rows (outer test rows untouched; ``--split outer`` reads them, once, for the configurations chosen
on the inner rows). Seeded research noise, not DP releases.

    python benchmarks/bench_coordinator_sample.py --datasets wall,heart,diabetes,bank --seeds 4
    python benchmarks/bench_coordinator_sample.py --split outer --configs '[...]'
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _bench_common import DEFAULT_DATA_DIR
from bench_federation_cost import _scores
from bench_federation_depth import _candidates, _gini_utilities, _goes_left, _partition, run_config, seeded_splits

from edprf_core.encoding import FeatureGrid, encode_features, encode_labels
from edprf_core.mechanisms import discrete_laplace_counts

Tree = list[list[int]]
"""A full binary tree: per layer, the candidate index chosen at each of its ``2**layer`` nodes."""


def grow(codes: np.ndarray, y: np.ndarray, k: int, cands: list, depth: int, rng: np.random.Generator) -> Tree:
    """Greedy weighted-Gini tree of ``depth`` on the coordinator's rows, ``sqrt`` of the features per node."""
    n_features = codes.shape[1]
    per_node = max(1, round(float(np.sqrt(n_features))))
    feature_of = np.array([c[0] for c in cands])
    at = np.zeros(y.size, dtype=np.int64)
    tree: Tree = []
    for layer in range(depth):
        picks = []
        for n in range(2**layer):
            allowed = np.flatnonzero(np.isin(feature_of, rng.choice(n_features, per_node, replace=False)))
            rows = at == n
            if not rows.any():
                picks.append(int(rng.choice(allowed)))
                continue
            u = _gini_utilities(codes[rows], y[rows], k, [cands[i] for i in allowed])
            picks.append(int(allowed[rng.choice(np.flatnonzero(u == u.max()))]))
        tree.append(picks)
        at = route_layer(codes, at, picks, cands)
    return tree


def route_layer(codes: np.ndarray, at: np.ndarray, picks: list[int], cands: list) -> np.ndarray:
    left = np.zeros(codes.shape[0], dtype=bool)
    for n, pick in enumerate(picks):
        m = at == n
        left[m] = _goes_left(codes[m], cands[pick])
    return 2 * at + ~left


def leaves(codes: np.ndarray, tree: Tree, cands: list) -> np.ndarray:
    at = np.zeros(codes.shape[0], dtype=np.int64)
    for picks in tree:
        at = route_layer(codes, at, picks, cands)
    return at


def exact_counts(at: np.ndarray, y: np.ndarray, n_leaves: int, k: int) -> np.ndarray:
    out = np.zeros((n_leaves, k), dtype=np.int64)
    np.add.at(out, (at, y), 1)
    return out


def draw_sample(labels: np.ndarray, m: int, k: int, skew: float | None, rng: np.random.Generator) -> np.ndarray:
    """``m`` training rows for the coordinator: uniformly, or with class shares drawn from Dirichlet(``skew``)."""
    if skew is None or m == 0:
        return rng.choice(labels.size, m, replace=False)
    wanted = rng.multinomial(m, rng.dirichlet(np.full(k, float(skew))))
    parts = [
        rng.choice(np.flatnonzero(labels == c), min(n, int(np.sum(labels == c))), replace=False)
        for c, n in enumerate(wanted)
    ]
    return np.concatenate(parts)


def run_sample(split, seed: int, cfg: dict) -> dict:
    schema = split.schema
    k, eps, depth, n_trees = schema.n_classes, float(cfg.get("eps", 1.0)), int(cfg["depth"]), int(cfg["trees"])
    grid = FeatureGrid.from_schema(schema, int(cfg.get("bins", 10)))
    codes, labels = encode_features(split.X_train, schema, grid), encode_labels(split.y_train, schema)
    rng = np.random.default_rng([seed, 23])
    m = int(cfg["sample"])
    sample = draw_sample(labels, m, k, cfg.get("sample_skew"), rng)
    rest = np.setdiff1d(np.arange(labels.size), sample)
    cands = _candidates(grid)
    trees = []
    for _ in range(n_trees):
        boot = rng.choice(sample, m, replace=True) if m else sample
        trees.append(grow(codes[boot], labels[boot], k, cands, depth, rng))
    # parties: the Dirichlet partition of the rows outside the coordinator's sample
    rest_split = type(split)(split.X_train.iloc[rest], split.y_train.iloc[rest], split.X_test, split.y_test, schema)
    parts = [rest[r] for r in _partition(rest_split, int(cfg.get("parties", 20)), "dirichlet-0.5", seed) if len(r)]
    n_leaves = 2**depth
    summed = np.zeros((n_trees, n_leaves, k))
    if cfg.get("coordinator_counts", True):  # the coordinator's own rows' exact counts
        for t, tree in enumerate(trees):
            summed[t] += exact_counts(leaves(codes[sample], tree, cands), labels[sample], n_leaves, k)
    if not cfg.get("party_counts", True):  # the coordinator's sample alone: what the parties add, by difference
        parts = []
    for rows in parts:
        which = rng.integers(n_trees, size=rows.size)  # each row to one tree: parallel composition
        for t, tree in enumerate(trees):
            mine = rows[which == t]
            exact = exact_counts(leaves(codes[mine], tree, cands), labels[mine], n_leaves, k)
            summed[t] += discrete_laplace_counts(exact, eps, 1, rng=rng)
    test = encode_features(split.X_test, schema, grid)
    log_p = np.zeros((test.shape[0], k))
    for t, tree in enumerate(trees):
        counts = np.clip(summed[t], 0, None)
        prior = counts.sum(0) / max(counts.sum(), 1.0)
        proba = (counts + prior) / (counts.sum(1, keepdims=True) + 1.0)
        log_p += np.log(np.maximum(proba[leaves(test, tree, cands)], 1e-12))
    proba = np.exp(log_p - log_p.max(1, keepdims=True))
    proba /= proba.sum(1, keepdims=True)
    acc, _, auc = _scores(encode_labels(split.y_test, schema), proba)
    return {"accuracy": acc, "roc_auc": auc}


def configs_for(n_train: int) -> list[dict]:
    out: list[dict] = [{"central": True}, {"parties": 20, "partition": "dirichlet-0.5"}]
    for m in (0, 25, 50, 100, 200, 400):
        if m > n_train // 2:
            continue
        out += [{"sample": m, "depth": d, "trees": t} for d in (4, 6) for t in (1, 10)]
        if m:  # a coordinator's sample whose class shares are as skewed as a party's
            out.append({"sample": m, "depth": 6, "trees": 10, "sample_skew": 0.5})
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--datasets", default="wall,heart,diabetes,bank")
    p.add_argument("--seeds", type=int, default=4, help="outer seeds 0..n-1")
    p.add_argument(
        "--split", choices=("inner", "outer"), default="inner", help="score on (default) inner validation rows"
    )
    p.add_argument("--configs", default=None, help="JSON list of configurations instead of the scan (keys: run_sample)")
    p.add_argument("--data-dir", default=str(DEFAULT_DATA_DIR))
    p.add_argument("--csv", default=None, help="also write the per-fit rows to this CSV")
    args = p.parse_args(argv)
    warnings.filterwarnings("ignore")
    rows = []
    for dataset, seed, split in seeded_splits(args.datasets, args.seeds, args.split, args.data_dir):
        for cfg in json.loads(args.configs) if args.configs else configs_for(len(split.y_train)):
            t0 = time.perf_counter()
            scores = run_sample(split, seed, cfg) if "sample" in cfg else run_config(split, seed, cfg)
            row = {"dataset": dataset, "split": args.split, "seed": seed, "config": json.dumps(cfg)}
            row |= {"accuracy": scores["accuracy"], "roc_auc": scores["roc_auc"]}
            row["seconds"] = round(time.perf_counter() - t0, 2)
            print(json.dumps(row), flush=True)
            rows.append(row)
    df = pd.DataFrame(rows)
    if args.csv:
        df.to_csv(args.csv, index=False)
    means = df.groupby(["dataset", "config"], sort=False)[["accuracy", "roc_auc"]].mean()
    with pd.option_context("display.max_rows", None, "display.width", 200, "display.max_colwidth", 100):
        print(means.round(3).to_string(), file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
