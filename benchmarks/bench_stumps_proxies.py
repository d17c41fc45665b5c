#!/usr/bin/env python
"""Does the stumps lead of ``bench_feature_stumps.py`` hold on binary data it was not read from? (issue 23)

The held-out census and credit datasets on which issue 23's goals will be
checked are not here.  Two public binary datasets that ship inside installed
packages stand in for them, read at run time (nothing is copied into the
project):

- ``fair``: the affairs survey of statsmodels (``statsmodels.datasets.fair``,
  6,366 rows, 8 ordinal features, label ``affairs > 0``); bounds from the
  survey's codebook (the coded ranges of each question);
- ``cancer``: the Wisconsin breast cancer data of scikit-learn
  (``load_breast_cancer``, 569 rows, 30 continuous features); bounds are the
  data's range widened by 10 % (a benchmark convenience, the same for every
  model: not how a party would declare them).

Models, per seed (stratified 80/20 split, 10 seeds) and ε in {0.1, 0.5, 1, 2}:
the eDPRF defaults; the public-feature stumps of ``bench_feature_stumps.py``
(pooling exponent 0.75 and leaf shrinkage 0.5, chosen there on inner validation); half trees / half
stumps; the candidate rule of ``feature_stumps.md`` (stumps when
``n ε / (10 d) >= 0.5``); DP-EBM (δ = 1e-6, the bounds above).  Seeded
research runs: NOT DP releases.

    python benchmarks/bench_stumps_proxies.py          # about 2 minutes; needs the bench extra

Output: ``results/stumps_proxies.md``.
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

from _bench_common import RESULTS_DIR
from bench_feature_stumps import (
    CELL_SNR_THRESHOLD,
    EPSILONS,
    N_BINS,
    cell_snr,
    log_pool,
    pooling_exponent,
    scores,
    stump_forest,
)
from sklearn.model_selection import train_test_split

from edprf_core import EDPRFClassifier
from edprf_core.encoding import FeatureGrid, encode_features, encode_labels
from edprf_core.schema import ContinuousFeature, LabelSpec, Schema
from edprf_core.shape import public_depth

STUMP_POOLING = (0.75, 0.5)
"""Pooling exponent and leaf shrinkage of the stumps, as chosen on inner validation by ``bench_feature_stumps.py``."""
FAIR_CODEBOOK = {
    "rate_marriage": (1.0, 5.0),
    "age": (17.5, 42.0),
    "yrs_married": (0.5, 23.0),
    "children": (0.0, 5.5),
    "religious": (1.0, 4.0),
    "educ": (9.0, 20.0),
    "occupation": (1.0, 6.0),
    "occupation_husb": (1.0, 6.0),
}


def fair() -> tuple[pd.DataFrame, pd.Series, dict[str, tuple[float, float]]]:
    import statsmodels.api as sm

    data = sm.datasets.fair.load_pandas().data
    return data[list(FAIR_CODEBOOK)], pd.Series(np.where(data.affairs > 0, "1", "0"), name="affair"), FAIR_CODEBOOK


def cancer() -> tuple[pd.DataFrame, pd.Series, dict[str, tuple[float, float]]]:
    from sklearn.datasets import load_breast_cancer

    data = load_breast_cancer(as_frame=True)
    X = data.data.rename(columns=lambda c: c.replace(" ", "_"))
    bounds = {c: (float(X[c].min()) * 0.9, float(X[c].max()) * 1.1) for c in X.columns}
    return X, pd.Series(data.target.astype(str).to_numpy(), name="malignant"), bounds


DATASETS = {"fair": fair, "cancer": cancer}


def run(name: str, seeds: int) -> pd.DataFrame:
    from interpret.privacy import DPExplainableBoostingClassifier

    X, y, bounds = DATASETS[name]()
    schema = Schema(
        tuple(ContinuousFeature(c, lo, hi) for c, (lo, hi) in bounds.items()),
        LabelSpec(str(y.name), ("0", "1")),
        name=name,
    )
    grid = FeatureGrid.from_schema(schema, N_BINS)
    lo, hi = np.array([b[0] for b in bounds.values()]), np.array([b[1] for b in bounds.values()])
    rows = []
    for seed in range(seeds):
        X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.2, stratify=y, random_state=seed)
        codes, labels, truth = (
            encode_features(X_train, schema, grid),
            encode_labels(y_train, schema),
            encode_labels(y_test, schema),
        )
        half = np.random.default_rng(1000 + seed).random(len(labels)) < 0.5
        for eps in EPSILONS:
            trees = EDPRFClassifier(schema, epsilon=eps, random_state=seed).fit(X_train, y_train).predict_proba(X_test)
            label = EDPRFClassifier(
                schema,
                epsilon=eps,
                random_state=seed,
                n_trees=1,
                n_bins=20,
                max_depth=public_depth(len(labels), 1, eps),
                leaf="label",
            )
            label_leaf = label.fit(X_train, y_train).predict_proba(X_test)
            with pooling_exponent(STUMP_POOLING):
                stumps = stump_forest(codes, labels, schema, grid, eps, seed).predict_proba(X_test)
                half_stumps = stump_forest(codes[~half], labels[~half], schema, grid, eps, seed).predict_proba(X_test)
            half_trees = EDPRFClassifier(schema, epsilon=eps, random_state=seed).fit(X_train[half], y_train[half])
            mixed = log_pool([(0.5, half_stumps), (0.5, half_trees.predict_proba(X_test))])
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                ebm = DPExplainableBoostingClassifier(
                    epsilon=eps,
                    delta=1e-6,
                    privacy_bounds=np.column_stack([lo, hi]),
                    feature_types=["continuous"] * len(lo),
                    random_state=seed,
                    n_jobs=1,
                ).fit(np.clip(X_train.to_numpy(), lo, hi), labels)
            dp_ebm = ebm.predict_proba(np.clip(X_test.to_numpy(), lo, hi))
            rule = stumps if cell_snr(len(labels), len(bounds), eps) >= CELL_SNR_THRESHOLD else trees
            for model, proba in (
                ("defaults", trees),
                ("label", label_leaf),
                ("stumps", stumps),
                ("half/half", mixed),
                ("rule", rule),
                ("DP-EBM", dp_ebm),
            ):
                acc, auc = scores(proba, truth)
                rows.append(
                    {"dataset": name, "model": model, "epsilon": eps, "seed": seed, "accuracy": acc, "auc": auc}
                )
    return pd.DataFrame(rows)


def report(table: pd.DataFrame, seeds: int) -> str:
    mean = table.groupby(["dataset", "epsilon", "model"], sort=False)[["accuracy", "auc"]].mean()
    models = list(dict.fromkeys(table.model))
    lines = [
        "# Public-feature stumps on two more binary datasets (issue 23)",
        "",
        (
            f"Command: `python benchmarks/bench_stumps_proxies.py --seeds {seeds}`. What and why: the docstring of "
            f"`benchmarks/bench_stumps_proxies.py`. Means over seeds 0..{seeds - 1}; accuracy / ROC AUC. `label` is the "
            "label-leaf configuration of `probabilities.md` (1 tree, 20 bins, public depth). Goals (issue 23): AUC at "
            "least DP-EBM's, accuracy at least max(DP-EBM, label) − 0.005."
        ),
        "",
        "| dataset | ε | " + " | ".join(models) + " | goals met by |",
        "|---|---|" + "---|" * (len(models) + 1),
    ]
    for (name, eps), group in mean.groupby(level=[0, 1], sort=False):
        group = group.droplevel([0, 1])
        cells = [f"{group.loc[m].accuracy:.3f} / {group.loc[m].auc:.3f}" for m in models]
        target = max(group.loc["DP-EBM"].accuracy, group.loc["label"].accuracy) - 0.005

        def meets(model: str, group: pd.DataFrame = group, target: float = target) -> str:
            row = group.loc[model]
            return "yes" if row.auc >= group.loc["DP-EBM"].auc and row.accuracy >= target else "no"

        winners = [m for m in ("defaults", "stumps", "half/half", "rule") if meets(m) == "yes"]
        lines.append(f"| {name} | {eps:g} | " + " | ".join(cells) + f" | {', '.join(winners) or 'none'} |")
    lines += [
        "",
        (
            "Reading: the candidate rule meets both goals in 2 of the 8 cells (`fair` at ε = 0.1, `cancer` at ε = 2), "
            "today's defaults in none. The stumps rank above DP-EBM on `cancer` at every ε, but at ε ≤ 1 their "
            "accuracy stays below the label configuration's (`cancer`: 30 features, about 15 rows per stump); on "
            "`fair` DP-EBM ranks above every eDPRF variant from ε = 0.5 (ordinal features with few levels, which 5 "
            "equal-width bins merge). Half trees / half stumps ranks above the defaults in every cell. No default "
            "was changed."
        ),
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--datasets", default=",".join(DATASETS))
    parser.add_argument("--out", default=str(RESULTS_DIR / "stumps_proxies.md"))
    args = parser.parse_args()
    table = pd.concat([run(name, args.seeds) for name in args.datasets.split(",")])
    text = report(table, args.seeds)
    Path(args.out).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
