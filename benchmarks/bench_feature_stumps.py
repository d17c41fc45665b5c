#!/usr/bin/env python
"""Feasibility (issue 23): does a release of public-feature stumps rank like DP-EBM where our trees do not?

Not a library model: a measurement to decide what to build next.  The
question is whether the ROC AUC missing on heart disease (237 training rows)
and bank marketing comes from the *shape* of what a party releases (a few
deep trees whose splits permute-and-flip picks from little data) rather than
from pure ε-DP itself.

Two releases are measured, both on the public grid (5 bins, the paper's, and
the declared categories; fixed a priori):

- **stumps, pooled by the library**: ``d`` trees, tree ``j`` one multiway
  stump on feature ``j`` (a public choice: no split is selected, no split
  budget is spent), the rows split at random into ``d`` disjoint subsets, each
  stump's leaves the class counts of its subset released with discrete
  Laplace noise at the full ε.  Parallel composition: ε-DP (add/remove), the
  same argument as the forest's.  The stumps are assembled as a
  ``DPForest`` and pooled by ``predict_proba``'s default rule (log-linear
  pooling, shrinkage), with the pooling exponent ``e`` of ``T ** e``
  (:data:`edprf_core._leaf_distribution.POOLING_EXPONENT`, 0.25 for trees)
  and the leaf shrinkage pseudo-count ``m`` (``SHRINKAGE``, 8 for trees)
  chosen among ``e`` in {0.25, 0.5, 0.75, 1} and ``m`` in {0.5, 1, 2, 8} on
  inner validation splits only (seeds 0-3, each seed's training rows split
  75/25, ``_bench_common.inner_split``; mean accuracy over the binary datasets
  and ε, ROC AUC moving little with either for two classes), then scored once
  on the test rows.  (Stumps see about ``n / d`` rows each, so the trees'
  shrinkage pulls their leaves to the root and the pooled model towards the
  majority class.  The stumps' parameters record a harmonic depth-1 tree, so
  the library reads their leaf noise scale as 1.5/ε where it is 1/ε: the
  chosen pseudo-count absorbs that factor.)
- **naive Bayes**: the ``d + 1`` histograms (class x bin per feature, and the
  class counts) of all rows at ε/(d+1) each, sequential composition, add-one
  smoothing, product of the ratios.

The noise is the seeded research approximation (``discrete_laplace_counts``
with a Generator): research runs, NOT DP releases.  The split protocol is
``_bench_common.make_split`` (that of ``bench_probabilities.py``), so the
eDPRF defaults and DP-EBM are read, seed by seed, from
``results/probabilities.csv`` and ``results/probabilities_reference.csv``.

    python benchmarks/bench_feature_stumps.py            # 10 seeds, 4 datasets, and the exploration (~4 min)

Output: ``results/feature_stumps.md``.
"""

from __future__ import annotations

import argparse
import functools
import sys
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _bench_common import DEFAULT_DATA_DIR, RESULTS_DIR, Split, inner_split, make_split
from _bench_datasets import load_dataset
from sklearn.metrics import roc_auc_score

import edprf_core._forest as forest_module
from edprf_core import DPForest, EDPRFClassifier
from edprf_core.encoding import FeatureGrid, encode_features, encode_labels
from edprf_core.forest import MAX_LEAF_COUNT, ForestArrays
from edprf_core.mechanisms import discrete_laplace_counts

EPSILONS = (0.1, 0.5, 1.0, 2.0)
N_BINS = 5
EXPONENTS = (0.25, 0.5, 0.75, 1.0)
SHRINKAGES = (0.5, 1.0, 2.0, 8.0)
"""Pseudo-counts of the leaf shrinkage tried for the stumps (8, the trees', is the library's ``SHRINKAGE``)."""
POOLINGS = tuple((e, m) for e in EXPONENTS for m in SHRINKAGES)
INNER_SEEDS = (0, 1, 2, 3)
BINARY = ("heart", "bank", "diabetes")


def naive_bayes_proba(
    codes: np.ndarray,
    y: np.ndarray,
    test_codes: np.ndarray,
    grid: FeatureGrid,
    n_classes: int,
    epsilon: float,
    seed: int,
) -> np.ndarray:
    """Class probabilities from the d + 1 noisy histograms of all rows (each at epsilon / (d + 1))."""
    rng = np.random.default_rng(seed)
    d = codes.shape[1]
    share = epsilon / (d + 1)
    prior = discrete_laplace_counts(np.bincount(y, minlength=n_classes), share, rng=rng)
    logit = np.tile(np.log(np.maximum(prior, 0) + 1.0), (len(test_codes), 1))
    for j in range(d):
        counts = np.zeros((grid.n_codes[j], n_classes), dtype=np.int64)
        np.add.at(counts, (codes[:, j], y), 1)
        noisy = np.maximum(discrete_laplace_counts(counts, share, rng=rng), 0) + 1.0
        logit += np.log(noisy / noisy.sum(axis=0, keepdims=True))[test_codes[:, j]]
    proba = np.exp(logit - logit.max(axis=1, keepdims=True))
    return proba / proba.sum(axis=1, keepdims=True)


def stump_forest(codes: np.ndarray, y: np.ndarray, schema, grid: FeatureGrid, epsilon: float, seed: int) -> DPForest:
    """One multiway stump per feature (public), on disjoint random row subsets, noisy leaf counts at ``epsilon``."""
    rng = np.random.default_rng(seed)
    features = [j for j, n in enumerate(grid.n_codes) if n >= 2]
    subset = rng.permutation(len(y)) % len(features)
    k = schema.n_classes
    offsets, feature, first_child, leaf_class, counts = [0], [], [], [], []
    for t, j in enumerate(features):
        mine = subset == t
        table = np.zeros((grid.n_codes[j], k), dtype=np.int64)
        np.add.at(table, (codes[mine, j], y[mine]), 1)
        noisy = np.clip(discrete_laplace_counts(table, epsilon, rng=rng), 0, MAX_LEAF_COUNT)
        n = grid.n_codes[j]
        feature += [j] + [-1] * n
        first_child += [1] + [-1] * n
        leaf_class += [-1, *np.argmax(noisy, axis=1).tolist()]
        counts += [np.full((1, k), -1, dtype=np.int64), noisy]
        offsets.append(offsets[-1] + n + 1)
    trees = ForestArrays(
        np.asarray(offsets, dtype=np.int64),
        np.asarray(feature, dtype=np.int32),
        np.full(len(feature), -1, dtype=np.int32),
        np.asarray(first_child, dtype=np.int32),
        np.asarray(leaf_class, dtype=np.int32),
        np.concatenate(counts),
    )
    model = EDPRFClassifier(
        schema, epsilon=epsilon, split_mode="multiway", max_depth=1, n_trees=len(features), marginals_share=0.0
    )
    params = model._parameters(len(features), 1, 0.0, "fixed", N_BINS)
    return DPForest(
        schema=schema, grid_bins=N_BINS, split_mode="multiway", trees=trees, parts=(("local", params, len(features)),)
    )


def scores(proba: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    auc = roc_auc_score(y, proba[:, 1]) if proba.shape[1] == 2 else roc_auc_score(y, proba, multi_class="ovr")
    return float((proba.argmax(1) == y).mean()), float(auc)


def stump_scores(split: Split, grid: FeatureGrid, epsilon: float, seed: int) -> dict[float, tuple[float, float]]:
    """(accuracy, AUC) of the stump forest of one split, per pooling setting (exponent, shrinkage)."""
    schema = split.schema
    codes, labels = encode_features(split.X_train, schema, grid), encode_labels(split.y_train, schema)
    y_test = encode_labels(split.y_test, schema)
    out = {}
    for setting in POOLINGS:
        # the same seeded forest, built afresh: a forest keeps its shrunk leaves and pooling terms once computed
        forest = stump_forest(codes, labels, schema, grid, epsilon, seed)
        with pooling_exponent(setting):
            out[setting] = scores(forest.predict_proba(split.X_test), y_test)
    return out


def log_pool(weighted: list[tuple[float, np.ndarray]]) -> np.ndarray:
    """Class probabilities proportional to ``prod_i p_i ** w_i`` over the given (weight, probabilities) pairs."""
    score = sum(weight * np.log(np.clip(proba, 1e-12, 1)) for weight, proba in weighted)
    out = np.exp(score - score.max(axis=1, keepdims=True))
    return out / out.sum(axis=1, keepdims=True)


@contextmanager
def pooling_exponent(setting: float | tuple[float, float]):
    """``predict_proba`` pools with ``T ** exponent`` (and, given a pair, shrinks leaves with that pseudo-count)
    instead of the library's: a benchmark-only patch of ``edprf_core._forest``."""
    exponent, shrinkage = setting if isinstance(setting, tuple) else (setting, forest_module.SHRINKAGE)
    real, real_shrinkage = forest_module.log_linear_pool, forest_module.SHRINKAGE
    forest_module.log_linear_pool = functools.partial(real, exponent=exponent)
    forest_module.SHRINKAGE = shrinkage
    try:
        yield
    finally:
        forest_module.log_linear_pool, forest_module.SHRINKAGE = real, real_shrinkage


def choose_exponent(datasets: dict) -> tuple[tuple[float, float], pd.DataFrame]:
    """The (exponent, shrinkage) of best mean inner-validation accuracy over the binary datasets and ε."""
    rows = []
    for name, (X, y, schema) in datasets.items():
        if name not in BINARY:
            continue
        grid = FeatureGrid.from_schema(schema, n_bins=N_BINS)
        for seed in INNER_SEEDS:
            inner = inner_split(make_split(X, y, schema, seed, dataset=name), seed)
            for eps in EPSILONS:
                for setting, (acc, auc) in stump_scores(inner, grid, eps, seed).items():
                    rows.append({"dataset": name, "epsilon": eps, "setting": setting, "accuracy": acc, "auc": auc})
    table = pd.DataFrame(rows)
    best = table.groupby("setting").accuracy.mean().idxmax()
    return best, table


def run(datasets: dict, seeds: int) -> tuple[pd.DataFrame, tuple[float, float], pd.DataFrame]:
    exponent, inner = choose_exponent(datasets)
    rows = []
    for name, (X, y, schema) in datasets.items():
        grid = FeatureGrid.from_schema(schema, n_bins=N_BINS)
        for seed in range(seeds):
            split = make_split(X, y, schema, seed, dataset=name)
            codes = encode_features(split.X_train, schema, grid)
            test_codes = encode_features(split.X_test, schema, grid)
            y_train, y_test = encode_labels(split.y_train, schema), encode_labels(split.y_test, schema)
            for eps in EPSILONS:
                acc, auc = stump_scores(split, grid, eps, seed)[exponent]
                rows.append(
                    {"dataset": name, "model": "stumps", "epsilon": eps, "seed": seed, "accuracy": acc, "auc": auc}
                )
                if schema.n_classes == 2:
                    nb = naive_bayes_proba(codes, y_train, test_codes, grid, schema.n_classes, eps, seed)
                    acc, auc = scores(nb, y_test)
                    rows.append(
                        {
                            "dataset": name,
                            "model": "naive-bayes",
                            "epsilon": eps,
                            "seed": seed,
                            "accuracy": acc,
                            "auc": auc,
                        }
                    )
    return pd.DataFrame(rows), exponent, inner


def report(ours: pd.DataFrame, exponent: tuple[float, float], inner: pd.DataFrame, seeds: int) -> str:
    columns = ["dataset", "model", "epsilon", "seed", "accuracy", "auc"]
    others = pd.concat(
        [pd.read_csv(RESULTS_DIR / name) for name in ("probabilities.csv", "probabilities_reference.csv")]
    )
    others = others[others.model.isin(["edprf-counts", "edprf-label", "dp-ebm"]) & (others.seed < seeds)][columns]
    grouped = pd.concat([ours, others]).groupby(["dataset", "epsilon", "model"])[["accuracy", "auc"]]
    stats, spread = grouped.mean().unstack("model"), grouped.std(ddof=0).unstack("model")
    by_setting = inner.groupby(["dataset", "setting"]).accuracy.mean().unstack("setting")
    lines = [
        "# Public-feature stumps: a feasibility measurement (issue 23)",
        "",
        (
            f"Command: `python benchmarks/bench_feature_stumps.py --seeds {seeds}`. What is measured and why: the "
            "docstring of `benchmarks/bench_feature_stumps.py`. Test rows: seeds 0.."
            f"{seeds - 1}, the split protocol of `bench_probabilities.py`, whose rows give the eDPRF defaults, the label "
            "configuration and DP-EBM (δ = 1e-6) for the same seeds. Seeded research noise; no library change. Means "
            "over seeds."
        ),
        "",
        (
            f"Pooling exponent and leaf shrinkage of the stumps, chosen on inner validation splits (seeds "
            f"{list(INNER_SEEDS)}, training rows 75/25) by mean accuracy: **exponent {exponent[0]:g}, shrinkage "
            f"{exponent[1]:g}** (the trees': 0.25 and 8). Inner-validation accuracy (mean over ε):"
        ),
        "",
        "| dataset | " + " | ".join(f"e {e:g}, m {m:g}" for e, m in by_setting.columns) + " |",
        "|---|" + "---|" * len(by_setting.columns),
    ]
    lines += [f"| {d} | " + " | ".join(f"{v:.3f}" for v in row) + " |" for d, row in by_setting.iterrows()]
    lines += [
        "",
        (
            "Test rows, mean ± std over seeds (ddof 0). Goal check per cell (issue 23), on the means: AUC ≥ DP-EBM's, "
            "and accuracy ≥ max(DP-EBM, label) − 0.005."
        ),
        "",
        (
            "| dataset | ε | AUC stumps | AUC naive Bayes | AUC defaults | AUC DP-EBM | acc. stumps | acc. naive Bayes "
            "| acc. defaults | acc. label | acc. DP-EBM | stumps meet both |"
        ),
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for (dataset, eps), row in stats.iterrows():

        def value(metric: str, model: str) -> float:
            return float(row.get((metric, model), np.nan))

        def cell(metric: str, model: str) -> str:
            v = value(metric, model)
            sd = float(spread.loc[(dataset, eps)].get((metric, model), np.nan))
            return "–" if np.isnan(v) else f"{v:.3f} ± {sd:.3f}"

        auc_goal = value("auc", "dp-ebm")
        acc_goal = np.nanmax([value("accuracy", "dp-ebm"), value("accuracy", "edprf-label")]) - 0.005
        if np.isnan(auc_goal):  # multiclass: no lower than today
            meets = value("accuracy", "stumps") >= value("accuracy", "edprf-counts")
        else:
            meets = value("auc", "stumps") >= auc_goal and value("accuracy", "stumps") >= acc_goal
        lines.append(
            f"| {dataset} | {eps:g} | {cell('auc', 'stumps')} | {cell('auc', 'naive-bayes')} | "
            f"{cell('auc', 'edprf-counts')} | {cell('auc', 'dp-ebm')} | {cell('accuracy', 'stumps')} | "
            f"{cell('accuracy', 'naive-bayes')} | {cell('accuracy', 'edprf-counts')} | "
            f"{cell('accuracy', 'edprf-label')} | {cell('accuracy', 'dp-ebm')} | {'yes' if meets else 'no'} |"
        )
    lines += [
        "",
        (
            "Reading. The stumps rank at least as well as DP-EBM on bank at every ε, where the trees do not, so "
            "there the AUC gap is the shape of the release, not pure ε-DP; on heart they close most of it (0.811 "
            "against 0.752 for the trees and 0.819 for DP-EBM at ε = 1). They lose where interactions matter (wall "
            "robot, and the trees' accuracy on diabetes at ε = 2), and heart's accuracy at ε ≥ 1 is about one point "
            "short of the goal. A library rule would release stumps next to the trees (or choose between them by "
            "public quantities), pool them with their own exponent and shrinkage, and let the privacy gate know that "
            "a public split makes no selection; that is the next step, not done here."
        ),
    ]
    return "\n".join(lines) + "\n"


MIX_FRACTIONS = (0.0, 0.25, 0.5, 0.75, 1.0)
CELL_SNR_THRESHOLD = 0.5
"""The candidate rule's threshold on ``n * eps / (10 d)``: read off the inner-validation table (heart: trees win at
eps 0.1, where it is 0.14, stumps at eps 0.5, where it is 0.68), not tuned further."""


def cell_snr(n_rows: int, n_features: int, epsilon: float) -> float:
    """``n eps / (10 d)``: a stump cell's expected count over its noise scale, for about 5 bins and 2 classes."""
    return n_rows * epsilon / (10 * n_features)


def mixing_sweep(datasets: dict, exponent: tuple[float, float]) -> tuple[str, pd.DataFrame]:
    """Inner validation: a fraction ``rho`` of the training rows to the stumps, the rest to the default trees.

    The two models' log-probabilities are averaged with weights ``1 - rho`` and ``rho`` (each model on its own
    rows: parallel composition, ε-DP).  ``rho = 0`` is today's defaults, ``rho = 1`` the stumps alone.
    """
    rows = []
    for name, (X, y, schema) in datasets.items():
        grid = FeatureGrid.from_schema(schema, n_bins=N_BINS)
        for seed in INNER_SEEDS:
            inner = inner_split(make_split(X, y, schema, seed, dataset=name), seed)
            y_train, y_test = encode_labels(inner.y_train, schema), encode_labels(inner.y_test, schema)
            codes = encode_features(inner.X_train, schema, grid)
            draw = np.random.default_rng(2000 + seed).random(len(y_train))
            for eps in EPSILONS:
                for rho in MIX_FRACTIONS:
                    stumps = draw < rho
                    weighted = []
                    if (~stumps).any():
                        trees = EDPRFClassifier(schema, epsilon=eps, random_state=seed, marginals_share=0.0)
                        trees.fit(inner.X_train[~stumps], inner.y_train[~stumps])
                        weighted.append((1 - rho, trees.predict_proba(inner.X_test)))
                    if stumps.any():
                        with pooling_exponent(exponent):
                            forest = stump_forest(codes[stumps], y_train[stumps], schema, grid, eps, seed)
                            weighted.append((rho, forest.predict_proba(inner.X_test)))
                    acc, auc = scores(log_pool(weighted), y_test)
                    rows.append({"dataset": name, "epsilon": eps, "rho": rho, "accuracy": acc, "auc": auc})
    table = pd.DataFrame(rows).groupby(["dataset", "epsilon", "rho"])[["accuracy", "auc"]].mean()
    lines = [
        "",
        f"## Mixing trees and stumps (inner validation, seeds {list(INNER_SEEDS)})",
        "",
        mixing_sweep.__doc__.split("\n\n", 1)[1].replace("\n    ", "\n").strip(),
        "Accuracy / ROC AUC by the fraction of rows given to the stumps:",
        "",
        "| dataset | ε | " + " | ".join(f"ρ = {r:g}" for r in MIX_FRACTIONS) + " |",
        "|---|---|" + "---|" * len(MIX_FRACTIONS),
    ]
    for (name, eps), group in table.groupby(level=[0, 1]):
        cells = [f"{a:.3f} / {u:.3f}" for a, u in zip(group.accuracy, group.auc)]
        lines.append(f"| {name} | {eps:g} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n", table


def candidate_rule(ours: pd.DataFrame, seeds: int, datasets: dict) -> str:
    """What-if on the test rows: stumps for two-class tasks when ``cell_snr >= CELL_SNR_THRESHOLD``, else the trees."""
    others = pd.concat(
        [pd.read_csv(RESULTS_DIR / name) for name in ("probabilities.csv", "probabilities_reference.csv")]
    )
    others = others[others.seed < seeds]
    mean = pd.concat([ours, others]).groupby(["dataset", "epsilon", "model"])[["accuracy", "auc"]].mean()
    lines = [
        "",
        "## A candidate rule, checked on the test rows (not adopted)",
        "",
        (
            f"Stumps for two-class tasks when `n ε / (10 d) >= {CELL_SNR_THRESHOLD:g}` (n training rows, d features: "
            "a stump cell's expected count over its noise scale), the defaults otherwise. The threshold is read off "
            "the inner table above (heart: trees at ε = 0.1, stumps at ε = 0.5)."
        ),
        "",
        "| dataset | ε | n ε / (10 d) | chosen | accuracy | target | AUC | DP-EBM AUC | both goals | defaults meet |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    met = {"rule": 0, "defaults": 0, "cells": 0}
    for name, (X, y, schema) in datasets.items():
        if schema.n_classes != 2:
            continue
        n = round(len(y) * 0.8) if name != "diabetes" else 11200
        for eps in EPSILONS:
            snr = cell_snr(n, len(schema.features), eps)
            model = "stumps" if snr >= CELL_SNR_THRESHOLD else "edprf-counts"
            acc, auc = mean.loc[(name, eps, model)]
            target = max(mean.loc[(name, eps, m)].accuracy for m in ("dp-ebm", "edprf-label")) - 0.005
            ebm = mean.loc[(name, eps, "dp-ebm")].auc
            base = mean.loc[(name, eps, "edprf-counts")]
            ok, base_ok = acc >= target and auc >= ebm, base.accuracy >= target and base.auc >= ebm
            met["rule"] += ok
            met["defaults"] += base_ok
            met["cells"] += 1
            lines.append(
                f"| {name} | {eps:g} | {snr:.2f} | {model} | {acc:.3f} | {target:.3f} | {auc:.3f} | {ebm:.3f} | "
                f"{'yes' if ok else 'no'} | {'yes' if base_ok else 'no'} |"
            )
    lines += [
        "",
        (
            f"Both goals met in {met['rule']} of {met['cells']} binary cells under the rule, {met['defaults']} under "
            "today's defaults. Not adopted: it is one threshold read off one dataset, the held-out data are not here, "
            "and a library version needs the changes listed in the closing notes of issue 23."
        ),
    ]
    return "\n".join(lines) + "\n"


EXPLORE_SEEDS = 4
EXPLORE_PARTIES = 20


def explore(datasets: dict, exponent: tuple[float, float]) -> str:
    """Two looks at what a library rule could be, on the test rows of seeds 0-3 (used for no choice).

    - **half and half**: the eDPRF defaults fitted on a random half of the training rows, the stumps on the
      other half (parallel composition: ε-DP), their log-probabilities averaged;
    - **federated**: 20 parties under Dirichlet-0.5 label skew (``partition_rows``), each releasing its
      stumps (or, as today, one tree: the setting of ``bench_federation_cost.py``), merged and pooled by the
      default rule (bounded influence included).
    """
    from edprf_core import merge_forests
    from edprf_fl.simulation import Partitioning, partition_rows

    rows = []
    for name, (X, y, schema) in datasets.items():
        grid = FeatureGrid.from_schema(schema, n_bins=N_BINS)
        for seed in range(EXPLORE_SEEDS):
            split = make_split(X, y, schema, seed, dataset=name)
            y_train, y_test = encode_labels(split.y_train, schema), encode_labels(split.y_test, schema)
            codes = encode_features(split.X_train, schema, grid)
            half = np.random.default_rng(1000 + seed).random(len(y_train)) < 0.5
            with pooling_exponent(exponent):
                stumps = stump_forest(codes[~half], y_train[~half], schema, grid, 1.0, seed).predict_proba(split.X_test)
            trees = EDPRFClassifier(schema, epsilon=1.0, random_state=seed, marginals_share=0.0).fit(
                split.X_train[half], split.y_train[half]
            )
            acc, auc = scores(log_pool([(0.5, stumps), (0.5, trees.predict_proba(split.X_test))]), y_test)
            rows.append({"dataset": name, "setting": "half trees, half stumps (central)", "accuracy": acc, "auc": auc})
            parts = partition_rows(
                split.X_train,
                split.y_train,
                EXPLORE_PARTIES,
                Partitioning("dirichlet", 0.5, ""),
                np.random.default_rng(seed),
            )
            parts = [(i, r) for i, r in enumerate(parts) if len(r)]
            with pooling_exponent(exponent):
                merged = merge_forests(
                    [stump_forest(codes[r], y_train[r], schema, grid, 1.0, seed * 1000 + i) for i, r in parts]
                )
                acc, auc = scores(merged.predict_proba(split.X_test), y_test)
            rows.append({"dataset": name, "setting": "20 parties, stumps", "accuracy": acc, "auc": auc})
            merged = merge_forests(
                [
                    EDPRFClassifier(
                        schema,
                        epsilon=1.0,
                        n_trees=1,
                        max_depth_cap=8,
                        n_bins=20,
                        random_state=seed * 1000 + i,
                        marginals_share=0.0,
                    )
                    .fit(split.X_train.iloc[r], split.y_train.iloc[r])
                    .forest_
                    for i, r in parts
                ]
            )
            acc, auc = scores(merged.predict_proba(split.X_test), y_test)
            rows.append({"dataset": name, "setting": "20 parties, one tree each (today)", "accuracy": acc, "auc": auc})
    table = pd.DataFrame(rows).groupby(["dataset", "setting"], sort=False)[["accuracy", "auc"]].mean()
    lines = [
        "",
        f"## Exploration (ε = 1, test rows of seeds 0-{EXPLORE_SEEDS - 1}; used for no choice)",
        "",
        explore.__doc__.split("\n\n", 1)[1].replace("\n    ", "\n").strip(),
        "",
        "| dataset | setting | accuracy | ROC AUC |",
        "|---|---|---|---|",
    ]
    lines += [f"| {d} | {s} | {r.accuracy:.3f} | {r.auc:.3f} |" for (d, s), r in table.iterrows()]
    lines += [
        "",
        (
            "Half and half does not dominate (the stumps lose bank's AUC on half the rows, the trees lose wall's "
            "accuracy), and federated stumps help where parties hold few rows (heart, bank) but not everywhere "
            "(diabetes' AUC, wall): a rule needs its weighting chosen on inner validation, per regime."
        ),
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--datasets", default="heart,bank,diabetes,wall")
    parser.add_argument("--data-dir", default=str(DEFAULT_DATA_DIR))
    parser.add_argument("--out", default=str(RESULTS_DIR / "feature_stumps.md"))
    parser.add_argument(
        "--no-explore", action="store_true", help="skip the mixing sweep, the candidate rule and the exploration"
    )
    args = parser.parse_args()
    names = args.datasets.split(",")
    datasets = {name: load_dataset(name, args.data_dir) for name in names}  # read once, used by every section
    ours, exponent, inner = run(datasets, args.seeds)
    text = report(ours, exponent, inner, args.seeds)
    if not args.no_explore:
        sweep, _ = mixing_sweep(datasets, exponent)
        text += sweep + candidate_rule(ours, args.seeds, datasets) + explore(datasets, exponent)
    Path(args.out).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
