#!/usr/bin/env python
"""What limits a 20-party federation on the wall robot (issue 23: "within 2 points of central DP").

The federation of ``bench_federation_cost.py`` (each party: one tree, leaf
counts, its depth from a DP count of its own rows, the coordinator's 20-bin
grid; the coordinator pools the merged trees by the default rule) reaches
0.713 accuracy on the wall robot at epsilon 1 with 20 parties under
Dirichlet-0.5 label skew, against 0.908 for central DP on the pooled rows.
This script varies what each party releases, one factor at a time:

- the party's shape: forced depth, trees per party, bins of the grid;
- a federation-aware depth rule: the party's depth from ``N**alpha`` times its
  DP row count (``N`` the public number of parties; ``alpha = 0`` is today's
  rule, ``alpha = 1`` "as if the party held the whole federation's rows"),
  the count drawn as ``EDPRFClassifier`` draws it (5 % of epsilon);
- where the noise hurts: the layer schedule, and a research schedule
  ``leaf:<f>`` that gives the leaf layer the share ``f`` of the tree's epsilon
  and the split layers the rest (harmonic among them); with a large epsilon
  and ``f`` near 0 or 1 this isolates the leaf noise or the split noise;
- the pooling rule (log-linear, mean) and leaf labels instead of counts;
- an upper bound for a feature-selection round: the parties' trees on the
  ``k`` features a non-private forest ranks first (``oracle_features``);
- a simulated multi-round protocol: one shared tree grown by the parties'
  votes (``run_vote_protocol``).

Splits: ``--split inner`` (default) fits on 75 % of each outer seed's
training rows and scores on the other 25 % (``_bench_common.inner_split``,
same seed; the outer test rows are never read): use it for any choice.
``--split outer`` scores on the outer test rows of ``make_split`` (as
``bench_federation_cost.py``), for the check of a choice made on inner rows.

The research schedules ``leaf:<f>`` are registered in-process for this script
only (``research_schedules``); no party or coordinator accepts them.  Seeded
research runs: reproducible, NOT DP releases.

    python benchmarks/bench_federation_depth.py --preset noise --datasets wall --seeds 4
    python benchmarks/bench_federation_depth.py --configs '[{"parties": 20, "depth": 2, "bins": 10}]'

One JSON line per fit on stdout, then the means over seeds per configuration.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import json
import sys
import time
import warnings
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _bench_common import DEFAULT_DATA_DIR, inner_split, make_split
from _bench_datasets import load_dataset
from bench_federation_cost import _scores

import edprf_core._budget as budget_module
import edprf_core._depth_rule as depth_rule
import edprf_core._forest as forest_module
from edprf_core import EDPRFClassifier, merge_forests
from edprf_core.encoding import encode_labels
from edprf_core.mechanisms import discrete_laplace_counts
from edprf_core.research import PaperEDPRFClassifier
from edprf_core.shape import public_depth

COUNT_SHARE = 0.05
"""Share of a party's epsilon spent on its DP row count (``EDPRFClassifier``'s default)."""
DEPTH_CAP = 8
"""Deepest party tree, as in ``bench_federation_cost.py``."""


def _leaf_share_schedule(share: float) -> type:
    """A research layer schedule: the leaf layer gets ``share`` of the tree's epsilon, the splits the rest."""

    @dataclass(frozen=True)
    class LeafShare(budget_module.LayerSchedule):
        name: ClassVar[str] = f"leaf:{share:g}"

        def weights(self, n_layers: int) -> np.ndarray:
            if n_layers == 1:
                return np.ones(1)
            w = 1.0 / np.arange(n_layers - 1, 0, -1, dtype=np.float64)  # harmonic over the split layers
            return np.append((1.0 - share) * w / w.sum(), share)

    return LeafShare


@contextmanager
def research_schedules(names: set[str]):
    """Register the ``leaf:<f>`` schedules among ``names`` for the duration of the block, then remove them."""
    from sklearn.utils._param_validation import StrOptions

    extra = {n: _leaf_share_schedule(float(n.split(":", 1)[1])) for n in names if n.startswith("leaf:")}
    saved = (dict(budget_module._SCHEDULES), dict(depth_rule._SCHEDULES), forest_module.SCHEDULES)
    constraints = PaperEDPRFClassifier._parameter_constraints
    try:
        budget_module._SCHEDULES.update(extra)
        depth_rule._SCHEDULES.update(extra)
        forest_module.SCHEDULES = tuple(forest_module.SCHEDULES) + tuple(extra)
        PaperEDPRFClassifier._parameter_constraints = {
            **constraints,
            "schedule": [StrOptions(set(forest_module.SCHEDULES))],
        }
        yield
    finally:
        budget_module._SCHEDULES.clear()
        budget_module._SCHEDULES.update(saved[0])
        depth_rule._SCHEDULES.clear()
        depth_rule._SCHEDULES.update(saved[1])
        forest_module.SCHEDULES = saved[2]
        PaperEDPRFClassifier._parameter_constraints = constraints


def _partition(split, n_parties: int, partition: str, seed: int) -> list[np.ndarray]:
    from edprf_fl.simulation import Partitioning, partition_rows

    how = (
        Partitioning("iid", 0.5, "")
        if partition == "iid"
        else Partitioning("dirichlet", float(partition.split("-")[1]), "")
    )
    return partition_rows(split.X_train, split.y_train, n_parties, how, np.random.default_rng(seed))


def _party_depth(n_rows: int, n_parties: int, alpha: float, trees: int, eps: float, rng: np.random.Generator) -> int:
    """Depth from ``N**alpha`` times a DP count of the party's rows (the count spends ``COUNT_SHARE * eps``)."""
    estimate = int(discrete_laplace_counts(np.array([n_rows]), COUNT_SHARE * eps, 1, rng=rng)[0])
    size = max(1, estimate) * float(n_parties) ** alpha
    return public_depth(size, trees, (1.0 - COUNT_SHARE) * eps, max_depth=DEPTH_CAP)


def oracle_feature_split(split, k: int):
    """``split`` restricted to the ``k`` features a NON-private random forest ranks first on its training rows.

    An upper bound for any protocol round that selects features before the
    trees are grown (e.g. a DP vote on features): the selection here is exact
    and costs nothing, which no DP round can do.
    """
    import dataclasses

    from sklearn.ensemble import RandomForestClassifier

    schema = split.schema
    names = [f.name for f in schema.features]
    numeric = split.X_train[names].apply(lambda c: c.astype("category").cat.codes if c.dtype == object else c)
    ranking = RandomForestClassifier(100, random_state=0, n_jobs=1).fit(numeric, split.y_train).feature_importances_
    keep = [schema.features[i] for i in sorted(np.argsort(-ranking)[:k])]
    kept = [f.name for f in keep]
    return dataclasses.replace(
        split,
        X_train=split.X_train[kept],
        X_test=split.X_test[kept],
        schema=dataclasses.replace(schema, features=tuple(keep)),
    )


def run_config(split, seed: int, cfg: dict) -> dict:
    """Fit one federation (or the central model) described by ``cfg`` on ``split``; score its test rows."""
    if "oracle_features" in cfg:
        split = oracle_feature_split(split, int(cfg["oracle_features"]))
    schema = split.schema
    truth = encode_labels(split.y_test, schema)
    eps = float(cfg.get("eps", 1.0))
    if cfg.get("protocol") == "vote":
        return run_vote_protocol(split, seed, cfg)
    if cfg.get("central"):
        clf = EDPRFClassifier(schema, epsilon=eps, random_state=seed).fit(split.X_train, split.y_train)
        acc, _, auc = _scores(truth, clf.predict_proba(split.X_test))
        return {"accuracy": acc, "roc_auc": auc, "depth_median": float(clf.max_depth_)}
    n_parties = int(cfg.get("parties", 20))
    trees = int(cfg.get("trees", 1))
    forests, depths = [], []
    for i, rows in enumerate(_partition(split, n_parties, cfg.get("partition", "dirichlet-0.5"), seed)):
        if len(rows) == 0:
            continue
        party_seed = seed * 1000 + i
        depth, party_eps = cfg.get("depth", "auto"), eps
        if "alpha" in cfg:
            rng = np.random.default_rng([party_seed, 7])
            depth = _party_depth(len(rows), n_parties, float(cfg["alpha"]), trees, eps, rng)
            party_eps = (1.0 - COUNT_SHARE) * eps  # the count above spent the rest
        clf = PaperEDPRFClassifier(
            schema,
            epsilon=party_eps,
            n_trees=trees,
            max_depth=depth,
            max_depth_cap=DEPTH_CAP,
            n_bins=int(cfg.get("bins", 20)),
            leaf=cfg.get("leaf", "counts"),
            schedule=cfg.get("schedule", "harmonic"),
            random_state=party_seed,
        ).fit(split.X_train.iloc[rows], split.y_train.iloc[rows])
        forests.append(clf.forest_)
        depths.append(clf.max_depth_)
    merged = merge_forests(forests, labels=[f"p{i}" for i in range(len(forests))])
    acc, _, auc = _scores(truth, merged.predict_proba(split.X_test, pooling=cfg.get("pooling", "log-linear")))
    return {"accuracy": acc, "roc_auc": auc, "depth_median": float(np.median(depths))}


# ---------------------------------------------------------------- shared-structure protocol (simulation)
def _candidates(grid) -> list[tuple[int, int, bool]]:
    """Binary split candidates on the public grid: ``(feature, threshold or category, categorical)``."""
    out: list[tuple[int, int, bool]] = []
    for j, (k, categorical) in enumerate(zip(grid.n_codes, grid.is_categorical)):
        if categorical:
            out += [(j, v, True) for v in range(k if k > 2 else 1)]
        else:
            out += [(j, t, False) for t in range(1, k)]
    return out


def _goes_left(codes: np.ndarray, cand: tuple[int, int, bool]) -> np.ndarray:
    j, t, categorical = cand
    return codes[:, j] == t if categorical else codes[:, j] < t


def _gini_utilities(codes: np.ndarray, y: np.ndarray, n_classes: int, cands: list) -> np.ndarray:
    """Weighted-Gini utility of every candidate (``sum_child sum_k n_ck**2 / n_c - n``; sensitivity 2)."""
    total = np.bincount(y, minlength=n_classes).astype(float)
    u = np.empty(len(cands))
    for i, cand in enumerate(cands):
        left = np.bincount(y[_goes_left(codes, cand)], minlength=n_classes).astype(float)
        right = total - left
        nl, nr = left.sum(), right.sum()
        u[i] = (left @ left / nl if nl else 0.0) + (right @ right / nr if nr else 0.0) - y.size
    return u


def run_vote_protocol(split, seed: int, cfg: dict) -> dict:
    """A multi-round protocol, simulated: ONE shared tree grown layer by layer by the parties' votes.

    Round ``k`` (one per split layer): every party runs report-noisy-max with
    exponential noise of scale ``2 / eps_k`` (permute-and-flip's equivalent for
    a monotone utility of sensitivity 2) over the candidates of each node of
    the shared tree on its own rows and sends its choice; the coordinator
    takes the plurality (ties at random) and broadcasts the layer.  Last
    round: every party releases discrete-Laplace leaf counts of the shared
    leaves at the leaf budget; the coordinator sums them.  Harmonic schedule,
    so each party spends ``eps`` per record (its rows reach one node per
    layer).  Research code: not a library protocol.
    """
    from edprf_core._budget import HarmonicSchedule
    from edprf_core.encoding import FeatureGrid, encode_features

    schema = split.schema
    k, eps, depth = schema.n_classes, float(cfg.get("eps", 1.0)), int(cfg["depth"])
    grid = FeatureGrid.from_schema(schema, int(cfg.get("bins", 20)))
    codes, labels = encode_features(split.X_train, schema, grid), encode_labels(split.y_train, schema)
    parts = _partition(split, int(cfg.get("parties", 20)), cfg.get("partition", "dirichlet-0.5"), seed)
    data = [(codes[r], labels[r]) for r in parts if len(r)]
    cands, rng = _candidates(grid), np.random.default_rng([seed, 11])
    eps_layer = HarmonicSchedule().layer_budgets(eps, depth + 1)
    node = [np.zeros(y.size, dtype=np.int64) for _, y in data]
    chosen: list[list[int]] = []
    for layer in range(depth):
        picks = []
        for n in range(2**layer):
            votes = np.zeros(len(cands))
            for (c, y), at in zip(data, node):
                u = _gini_utilities(c[at == n], y[at == n], k, cands)
                votes[np.argmax(u + rng.exponential(2.0 / eps_layer[layer], size=u.size))] += 1
            picks.append(int(rng.choice(np.flatnonzero(votes == votes.max()))))
        chosen.append(picks)
        for p, (c, _) in enumerate(data):
            left = np.zeros(c.shape[0], dtype=bool)
            for n, pick in enumerate(picks):
                m = node[p] == n
                left[m] = _goes_left(c[m], cands[pick])
            node[p] = 2 * node[p] + ~left
    eps_leaf = HarmonicSchedule().leaf_budget(eps, depth + 1, depth + 1)
    counts = np.zeros((2**depth, k))
    for (_, y), at in zip(data, node):
        exact = np.zeros((2**depth, k), dtype=np.int64)
        np.add.at(exact, (at, y), 1)
        counts += discrete_laplace_counts(exact, eps_leaf, 1, rng=rng)
    test = encode_features(split.X_test, schema, grid)
    at = np.zeros(test.shape[0], dtype=np.int64)
    for picks in chosen:
        left = np.zeros(test.shape[0], dtype=bool)
        for n, pick in enumerate(picks):
            m = at == n
            left[m] = _goes_left(test[m], cands[pick])
        at = 2 * at + ~left
    counts = np.clip(counts, 0, None)
    prior = counts.sum(0) / max(counts.sum(), 1.0)
    proba = (counts + prior) / (counts.sum(1, keepdims=True) + 1.0)  # one pseudo-row of the pooled prior
    acc, _, auc = _scores(encode_labels(split.y_test, schema), proba[at])
    return {"accuracy": acc, "roc_auc": auc, "depth_median": float(depth)}


def _dirichlet(configs: list[dict]) -> list[dict]:
    return [{"parties": 20, "partition": "dirichlet-0.5"} | c for c in configs]


PRESETS: dict[str, list[dict]] = {
    # forced shapes of every party (harmonic schedule): the ceiling of any per-party shape
    "shape": _dirichlet(
        [{"central": True}, {}]
        + [{"depth": d, "trees": t, "bins": b} for d in range(1, 9) for t in (1, 2, 3) for b in (10, 20)]
    ),
    # federation-aware depth: depth from N**alpha x the party's DP row count
    "rule": [
        {"parties": 20, "partition": p, "alpha": a}
        for p in ("iid", "dirichlet-0.5")
        for a in (-0.5, -0.25, 0.0, 0.25, 0.5, 1.0)
    ],
    # leaf noise against split noise: a large epsilon, almost all of it on the splits (leaf:0.02) or the leaves
    "noise": _dirichlet(
        [{"central": True}]
        + [
            {"eps": e, "schedule": s, "depth": d, "bins": b}
            for e, s in ((1.0, "harmonic"), (50.0, "leaf:0.02"), (50.0, "leaf:0.98"))
            for d in (2, 3, 4, 6)
            for b in (10, 20)
        ]
        + [{"eps": e, "depth": d, "bins": 10} for e in (2.0, 5.0, 20.0) for d in ("auto", 4, 6)]
    ),
    # budget schedules, pooling and leaf outputs at small depths
    "schedule": _dirichlet(
        [{"schedule": s, "depth": d, "bins": 10} for s in ("harmonic", "uniform", "leaf:0.3") for d in (2, 3, 4)]
        + [{"pooling": "mean"}, {"leaf": "label", "depth": 3}]
    ),
    # the ceiling of selecting features first (exactly, non-privately), then today's per-party trees
    "features": _dirichlet(
        [{"central": True, "oracle_features": k} for k in (2, 4, 8)]
        + [{"oracle_features": k} | c for k in (2, 4, 8) for c in ({}, {"bins": 10}, {"depth": 4, "bins": 10})]
    ),
    # the shared-structure voting protocol (run_vote_protocol), against the same central model
    "vote": _dirichlet(
        [{"central": True}]
        + [{"protocol": "vote", "depth": d, "bins": b} for d in (2, 3, 4, 6) for b in (10, 20)]
        + [{"protocol": "vote", "depth": 4, "bins": 10, "eps": e} for e in (5.0, 50.0)]
        + [{"protocol": "vote", "parties": 1, "depth": 6, "bins": 10}]
    ),
}


def seeded_splits(datasets: str, seeds: int, split: str, data_dir: str):
    """``(dataset, seed, split)`` for each comma-separated dataset and outer seed ``0..seeds-1``: the outer split
    (``make_split``), or with ``split == "inner"`` its inner validation split of the training rows."""
    for dataset in datasets.split(","):
        X, y, schema = load_dataset(dataset, data_dir)
        for seed in range(seeds):
            outer = make_split(X, y, schema, seed, dataset=dataset)
            yield dataset, seed, inner_split(outer, seed) if split == "inner" else outer


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--preset", choices=sorted(PRESETS), default=None)
    p.add_argument("--configs", default=None, help="JSON list of configurations (keys: see run_config)")
    p.add_argument("--datasets", default="wall")
    p.add_argument("--seeds", type=int, default=4, help="outer seeds 0..n-1")
    p.add_argument("--split", choices=("inner", "outer"), default="inner")
    p.add_argument("--data-dir", default=str(DEFAULT_DATA_DIR))
    p.add_argument("--csv", default=None, help="also write the per-fit rows to this CSV")
    args = p.parse_args(argv)
    warnings.filterwarnings("ignore")
    configs = json.loads(args.configs) if args.configs else PRESETS[args.preset or "rule"]
    rows = []
    with research_schedules({str(c.get("schedule", "")) for c in configs}):
        for dataset, seed, split in seeded_splits(args.datasets, args.seeds, args.split, args.data_dir):
            for cfg in configs:
                t0 = time.perf_counter()
                row = {"dataset": dataset, "split": args.split, "seed": seed, "config": json.dumps(cfg)}
                row |= run_config(split, seed, cfg) | {"seconds": round(time.perf_counter() - t0, 2)}
                print(json.dumps(row), flush=True)
                rows.append(row)
    df = pd.DataFrame(rows)
    if args.csv:
        df.to_csv(args.csv, index=False)
    means = df.groupby(["dataset", "config"], sort=False)[["accuracy", "roc_auc", "depth_median"]].mean()
    with pd.option_context("display.max_rows", None, "display.width", 200, "display.max_colwidth", 100):
        print(means.round(3).to_string(), file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
