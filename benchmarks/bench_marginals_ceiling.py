#!/usr/bin/env python
"""How far can one-way marginals go?  Non-private ceilings of the defaults' marginals part (issue 23).

The defaults' marginals part is a naive-Bayes-like model: it adds up per-feature class evidence read from
one-way (bin x class) histograms.  Less noise (more ε, more rows) brings it toward the same model fitted on
exact counts, and no further.  This benchmark measures that ceiling, without noise, on the nine two-class
datasets of ``bench_rule_transfer.py`` (seeds 0..9, the test rows of ``_bench_common.make_split``), next to
two models of the same additive form that a different release would be needed for:

- ``naive Bayes``: the marginals' model on exact counts (per-feature class frequencies with one pseudo-row
  per cell); its ROC AUC does not depend on the temper.
- ``weighted naive Bayes``: the same per-feature evidence with one weight per feature (and an intercept)
  fitted by logistic regression on the training rows: what per-feature weights would add, that is what
  undoing the double counting of correlated features is worth.
- ``additive``: logistic regression on the one-hot codes (one free value per bin), the form DP-EBM's
  main-effect model has.

Each is fitted on the marginals' two public grids (5 and 20 bins per continuous feature, the two choices of
``marginals_n_bins``), the naive-Bayes models with 1, 4, 16 and 64 pseudo-rows per bin; a dataset's ceiling is
the best setting's mean over seeds (picked on the test rows: optimistic, as a ceiling should be).  The pseudo-
rows matter: with next to none, an empty (bin, class) cell gives a feature near-infinite evidence (the marginals'
own estimator at ε = 10^6 ranks credit at about 0.77).  The DP rows beside it, the
library's defaults and DP-EBM (δ = 1e-6) at ε in {0.1, 0.5, 1, 2}, are read from ``results/rule_transfer.csv``
(test rows, seeds 0..9; run ``bench_rule_transfer.py`` first).  Nothing here is a DP release: the ceilings read
exact counts.

    python benchmarks/bench_marginals_ceiling.py            # about 2 minutes on two cores

Output: ``results/marginals_ceiling.md`` (and ``.csv``).
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

from _bench_common import RESULTS_DIR, make_split, report_main
from _bench_datasets import load_any_dataset
from bench_rule_transfer import CSV as RULE_TRANSFER_CSV
from bench_rule_transfer import DATASETS, TEST_SEEDS

from edprf_core._marginals import MARGINALS_BINS_HIGH, MARGINALS_BINS_LOW
from edprf_core.encoding import FeatureGrid, encode_features, encode_labels

CEILINGS = ("naive Bayes", "weighted naive Bayes", "additive")
GRIDS = (MARGINALS_BINS_LOW, MARGINALS_BINS_HIGH)
PSEUDO_ROWS = (1.0, 4.0, 16.0, 64.0)
"""Pseudo-rows per bin toward the class distribution (the DP marginals scale theirs with the noise: 4 t K, ``t`` the
noise scale; e.g. 52 on credit at ε = 2)."""
EPSILONS = (0.1, 0.5, 1.0, 2.0)
DP_MODELS = ("defaults", "DP-EBM")


def evidence(
    codes_train: np.ndarray, y_train: np.ndarray, codes: np.ndarray, n_codes: tuple[int, ...], pseudo: float
) -> np.ndarray:
    """Per-feature naive-Bayes evidence ``logit p_j(1 | bin)`` of the rows ``codes``, shape (n, d), from exact
    training counts, each bin's class distribution shrunk toward the training rows' class distribution by
    ``pseudo`` pseudo-rows (the marginals' estimator, with exact counts and a fixed pseudo-count)."""
    prior = np.bincount(y_train, minlength=2) / len(y_train)
    columns = []
    for j, k in enumerate(n_codes):
        counts = np.stack([np.bincount(codes_train[y_train == c, j], minlength=k) for c in (0, 1)], axis=1)
        given_bin = (counts + pseudo * prior) / (counts.sum(axis=1, keepdims=True) + pseudo)
        columns.append(np.log(given_bin[:, 1] / given_bin[:, 0])[codes[:, j]])
    return np.stack(columns, axis=1)


def ceiling_scores(codes_train, y_train, codes_test, y_test, n_codes) -> list[tuple[str, float, float]]:
    """``(model, pseudo-count, ROC AUC on the test rows)`` of the three non-private models of the module docstring
    (the two naive-Bayes models once per pseudo-count of :data:`PSEUDO_ROWS`; the additive model has none: nan)."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import roc_auc_score
    from sklearn.preprocessing import OneHotEncoder

    out = []
    for pseudo in PSEUDO_ROWS:
        e_train = evidence(codes_train, y_train, codes_train, n_codes, pseudo)
        e_test = evidence(codes_train, y_train, codes_test, n_codes, pseudo)
        weighted = LogisticRegression(max_iter=2000).fit(e_train, y_train)
        out.append(("naive Bayes", pseudo, roc_auc_score(y_test, e_test.sum(axis=1))))
        out.append(("weighted naive Bayes", pseudo, roc_auc_score(y_test, weighted.decision_function(e_test))))
    onehot = OneHotEncoder(categories=[np.arange(k) for k in n_codes]).fit(codes_train)
    additive = LogisticRegression(max_iter=2000).fit(onehot.transform(codes_train), y_train)
    out.append(("additive", np.nan, roc_auc_score(y_test, additive.decision_function(onehot.transform(codes_test)))))
    return out


def dataset_rows(name: str, data_dir: str) -> pd.DataFrame:
    X, y, schema = load_any_dataset(name, data_dir)
    rows = []
    for seed, n_bins in itertools.product(TEST_SEEDS, GRIDS):
        split = make_split(X, y, schema, seed, dataset=name)
        grid = FeatureGrid.from_schema(schema, n_bins)
        codes_train = np.asarray(encode_features(split.X_train, schema, grid), dtype=np.int64)
        codes_test = np.asarray(encode_features(split.X_test, schema, grid), dtype=np.int64)
        y_train, y_test = encode_labels(split.y_train, schema), encode_labels(split.y_test, schema)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # clipped cells: the schema's rule, as in every benchmark
            scores = ceiling_scores(codes_train, y_train, codes_test, y_test, grid.n_codes)
        for model, pseudo, auc in scores:
            rows.append({"dataset": name, "seed": seed, "n_bins": n_bins, "pseudo": pseudo, "model": model, "auc": auc})
    print(f"{name} done", file=sys.stderr, flush=True)
    return pd.DataFrame(rows)


def compute(data_dir: str, jobs: int) -> pd.DataFrame:
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        return pd.concat([p.result() for p in [pool.submit(dataset_rows, n, data_dir) for n in DATASETS]])


def summary(table: pd.DataFrame) -> pd.DataFrame:
    """Per dataset: each ceiling (the best setting's mean and sd over seeds, the setting picked on the test rows
    themselves: an optimistic ceiling) and the DP models' mean AUC per ε."""
    table = table.fillna({"pseudo": -1.0})  # the additive model's "no pseudo-count", a groupby key
    by_setting = table.groupby(["dataset", "model", "n_bins", "pseudo"]).auc.agg(["mean", "std"]).reset_index()
    best = by_setting.loc[by_setting.groupby(["dataset", "model"])["mean"].idxmax()].set_index(["dataset", "model"])
    dp = pd.read_csv(RULE_TRANSFER_CSV)
    dp = dp[(dp.stage == "test") & dp.model.isin(DP_MODELS)]
    dp_mean = dp.groupby(["dataset", "model", "epsilon"]).auc.mean()
    rows = []
    for name in DATASETS:
        row = {"dataset": name}
        for model in CEILINGS:
            row[model] = best.loc[(name, model), "mean"]
            row[f"{model} sd"] = best.loc[(name, model), "std"]
            pseudo = best.loc[(name, model), "pseudo"]
            row[f"{model} setting"] = f"{int(best.loc[(name, model), 'n_bins'])} bins" + (
                f", {pseudo:g} pseudo-rows" if pseudo >= 0 else ""
            )
        for model, eps in itertools.product(DP_MODELS, EPSILONS):
            row[f"{model} {eps:g}"] = dp_mean.get((name, model, eps), np.nan)
        rows.append(row)
    return pd.DataFrame(rows)


def report(table: pd.DataFrame) -> str:
    s = summary(table)
    eps_text = ", ".join(f"{e:g}" for e in EPSILONS)
    lines = [
        "# Non-private ceilings of the marginals part (issue 23)",
        "",
        (
            "Command: `python benchmarks/bench_marginals_ceiling.py`. What and why: its docstring. ROC AUC on the test "
            "rows, mean ± sd over seeds 0..9; each ceiling at its best setting over the marginals' two grids and "
            "the pseudo-counts (in brackets; picked on these test rows, so the ceilings lean high). The DP rows are means from `rule_transfer.csv` (test rows, the same seeds and splits)."
        ),
        "",
        (
            "| dataset | naive Bayes (exact counts) | weighted naive Bayes | additive (one-hot) | "
            f"defaults, ε = {eps_text} | DP-EBM, ε = {eps_text} | ε where DP-EBM is above the naive-Bayes ceiling |"
        ),
        "|---|---|---|---|---|---|---|",
    ]
    for _, r in s.iterrows():
        ceilings = [f"{r[m]:.3f} ± {r[f'{m} sd']:.3f} ({r[f'{m} setting']})" for m in CEILINGS]
        dp = [" / ".join(f"{r[f'{m} {e:g}']:.3f}" for e in EPSILONS) for m in DP_MODELS]
        above = [f"{e:g}" for e in EPSILONS if r[f"DP-EBM {e:g}"] > r["naive Bayes"]]
        lines.append(f"| {r.dataset} | " + " | ".join([*ceilings, *dp, ", ".join(above) or "none"]) + " |")
    return "\n".join([*lines, "", *READING, ""])


READING = [
    "Reading (the numbers are this file's):",
    "",
    (
        "- **Where DP-EBM ranks above the naive-Bayes ceiling, no budget closes the gap through the marginals.** That "
        "is credit at ε = 1 and 2 (DP-EBM 0.794 and 0.809 against a ceiling of 0.790) and fair at ε = 2 (0.733 "
        "against 0.727): those misses of `stumps_proxies.md` are the model's form, not its noise. The other misses "
        "on AUC are noise: credit at ε = 0.5 (defaults 0.756, DP-EBM 0.774, ceiling 0.790) and attrition at ε = 2 "
        "(0.701, 0.732, 0.795). The defaults' trees can add what the form lacks, and do so slightly where rows "
        "are many (census 0.808 and fair 0.729 at ε = 2, above their ceilings of 0.806 and 0.727)."
    ),
    (
        "- **Per-feature weights would be worth the most.** Weighted naive Bayes (one weight per feature) recovers "
        "most of the distance from naive Bayes to the additive model (credit 0.790, 0.816, 0.826; attrition 0.795, "
        "0.833, 0.842; fair 0.727, 0.749, 0.753): the loss is the double counting of correlated features, which the "
        "temper (one weight for all features) cannot undo."
    ),
    (
        "- **Learning those weights under pure ε is the open part.** A scratch trial (not in this file; issue 23's "
        "closing note gives it) kept 30 % of the training rows apart from the histograms and learned the weights "
        "there by cyclic one-coordinate Newton steps, each on its own disjoint group of rows (parallel composition) "
        "with a discrete Laplace gradient. On credit (5 seeds of its own 75/25 splits) it gained 0.013 AUC over the "
        "marginals alone at ε = 2 and nothing at ε ≤ 1: the groups are too small for their noise."
    ),
]


def main() -> None:
    report_main(__doc__.splitlines()[0], RESULTS_DIR / "marginals_ceiling.md", compute, report)


if __name__ == "__main__":
    main()
