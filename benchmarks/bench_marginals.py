#!/usr/bin/env python
"""Issue 23, accuracy part: a noise-aware model of DP one-way marginals, alone and mixed with the trees.

Not a library model: a measurement.  ``bench_feature_stumps.py`` found that a
plain DP naive Bayes (``naive_bayes_proba``) ranks best on heart disease at
ε >= 1 but collapses at ε = 0.1 and loses accuracy on bank marketing, and
that its handling of the noise (clip at 0, add one) and its untempered sum
looked like the cause rather than the release.  This benchmark keeps the
release (per-feature bin x class histograms of all training rows, noisy
counts) and replaces the estimation done after it:

- **marginals** (:func:`marginals_proba`): the ``d`` histograms at ε/d each
  (no separate class histogram: class totals are post-processing), each bin's
  class distribution shrunk toward the class totals' with a pseudo-count
  proportional to the noise scale ``d/ε``, and a tempered additive score.  Its
  constants (pseudo-count factor, temper, number of bins) are chosen on inner
  validation splits only (seeds 0-3, each seed's training rows split 75/25 by
  ``_bench_common.inner_split``; heart, bank, diabetes).
- **mix**: a fraction ``rho`` of the training rows to the marginals model,
  the rest to the default ``EDPRFClassifier`` trees (disjoint rows, each at
  the full ε: parallel composition, ε-DP), log-probabilities averaged with
  weights ``rho`` and ``1 - rho`` (``bench_feature_stumps.log_pool``); ``rho``
  in {0, 0.25, 0.5, 0.75} (0: today's trees alone), chosen on the same inner splits (wall robot
  included) as a public rule of ``n ε / d``.

Everything is then scored once on the test rows of seeds 0..9 with the split
protocol of ``bench_probabilities.py`` (``_bench_common.make_split``), next to
the stumps and the old naive Bayes (``bench_feature_stumps``' functions,
recomputed with the same seeds) and the eDPRF defaults, the label
configuration and DP-EBM (δ = 1e-6) read seed by seed from
``results/probabilities.csv`` and ``results/probabilities_reference.csv``.

The release and the estimator are the core library's (``edprf_core._marginals``:
``release_marginals``, ``marginal_evidence``, ``marginal_proba``; no estimator
or wire format yet), called with the same seeded draws as before they moved
there, so ``results/marginals.md`` is reproduced byte for byte apart from the
run time.  The noise is the seeded research approximation
(``discrete_laplace_counts`` with a Generator): research runs, NOT DP releases.

    python benchmarks/bench_marginals.py            # inner sweeps + 10 test seeds (~4 min on one core)
    python benchmarks/bench_marginals.py --quick    # 2 inner seeds, 3 test seeds, smaller grid (smoke test)

Output: ``results/marginals.md`` (``results/marginals_quick.md`` with ``--quick``).

Reuse from another script (the chosen constants are module-level)::

    from bench_marginals import marginals_n_bins, marginals_proba, mix_rho
    grid = FeatureGrid.from_schema(schema, n_bins=marginals_n_bins(n_train, schema.n_features, eps))
    proba = marginals_proba(codes, y, test_codes, grid, schema.n_classes, eps, seed)  # chosen defaults
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _bench_common import DEFAULT_DATA_DIR, RESULTS_DIR, inner_split, log, make_split
from _bench_datasets import load_dataset
from bench_feature_stumps import log_pool, naive_bayes_proba, pooling_exponent, scores, stump_forest

from edprf_core import EDPRFClassifier
from edprf_core._marginals import (
    MARGINALS_BINS_HIGH,
    MARGINALS_BINS_LOW,
    MARGINALS_BINS_THRESHOLD,
    MARGINALS_SHRINKAGE,
    MARGINALS_TEMPER_C,
    NoisyMarginals,
    marginal_evidence,
    marginal_proba,
    marginals_n_bins,  # noqa: F401 (re-exported: bench_marginals_federated and bench_stumps_proxies import it here)
    release_marginals,
)
from edprf_core.encoding import FeatureGrid, encode_features, encode_labels

EPSILONS = (0.1, 0.5, 1.0, 2.0)
INNER_SEEDS = (0, 1, 2, 3)
BINARY = ("heart", "bank", "diabetes")
MIX_DATASETS = ("heart", "bank", "diabetes", "wall")

BIN_CHOICES = (5, 10, 20)
SHRINKAGE_CHOICES = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0)
TEMPER_RULES = {f"{c:g}/sqrt(d)": c for c in (1.0, 1.5, 2.0, 2.5, 3.0, 3.5)}
"""Tempers tried as the public rule ``min(1, c / sqrt(d))``; constants are tried too (:data:`TEMPER_CONSTANTS`)."""
TEMPER_CONSTANTS = (0.25, 0.35, 0.5, 0.7, 1.0)
THRESHOLDS = (10.0, 30.0, 100.0, 300.0, 1000.0)
"""Thresholds on ``n ε / d`` (n: the model's training rows) tried for two-regime rules (bins, rho)."""
RHO_CHOICES = (0.0, 0.25, 0.5, 0.75)
"""Candidate fractions of rows for the marginals in the mix; 0 is today's trees on all rows (a candidate: a rule
may keep the trees where they win, e.g. the multiclass wall robot)."""

STUMPS_POOLING = (0.75, 0.5)
"""The stumps' (pooling exponent, leaf shrinkage) chosen on inner validation by ``bench_feature_stumps.py``
(``results/feature_stumps.md``); reused as is, not chosen again here."""
STUMPS_BINS = 5

# The chosen constants: inner validation, results/marginals.md (inner tables 1-3).  A run whose own choice differs
# says so in its report.
# The bins rule (MARGINALS_BINS_LOW/HIGH/THRESHOLD, marginals_n_bins), MARGINALS_SHRINKAGE and MARGINALS_TEMPER_C
# (the pseudo-count factor and the temper rule's constant) now live in edprf_core._marginals, with the release
# and DPMarginalsClassifier; imported above.  Here the rule reads the training size, which this benchmark's
# protocol fixes (hence public here); the estimator takes it from n_rows_public or a DP count.
MIX_RHO_LOW, MIX_RHO_HIGH, MIX_THRESHOLD = 0.25, 0.75, 10.0
"""Two classes: the mix gives ``MIX_RHO_LOW`` of the rows to the marginals when ``n ε / d < MIX_THRESHOLD``
(n: all training rows), else ``MIX_RHO_HIGH``."""
MIX_RHO_MULTICLASS = 0.0
"""More than two classes: the mix's fraction of rows for the marginals (chosen on the wall robot alone: 0, the
trees on all rows, won its inner cells)."""


def mix_rho(n_rows: int, n_features: int, n_classes: int, epsilon: float) -> float:
    """The chosen fraction of rows for the marginals in the mix (``n_rows``: all training rows; public only by this
    benchmark's protocol, see :func:`marginals_n_bins`)."""
    if n_classes > 2:
        return MIX_RHO_MULTICLASS
    return MIX_RHO_LOW if n_rows * epsilon / n_features < MIX_THRESHOLD else MIX_RHO_HIGH


def two_regime(low, high, threshold: float, n_eps_d: float):
    """``low`` when ``n ε / d < threshold``, else ``high``."""
    return low if n_eps_d < threshold else high


def noisy_marginals(
    codes: np.ndarray, y: np.ndarray, grid: FeatureGrid, n_classes: int, epsilon: float, seed: int
) -> NoisyMarginals:
    """The release of :func:`marginals_proba`: ``edprf_core._marginals.release_marginals`` (the ``d`` (bin x class)
    histograms, each noised at ``epsilon / d``), with seeded research noise.

    Privacy cost: ``epsilon`` (argument in ``release_marginals``' docstring).  NOT a DP release (seeded).
    """
    return release_marginals(codes, y, grid.n_codes, n_classes, epsilon, rng=np.random.default_rng(seed))


def marginal_terms(noisy: NoisyMarginals, test_codes: np.ndarray, shrinkage: float) -> tuple[np.ndarray, np.ndarray]:
    """``(log prior, evidence)`` from the noisy histograms (``edprf_core._marginals.marginal_evidence``):
    :func:`marginals_proba` scores ``log prior + temper * evidence``.  Post-processing only (no privacy cost)."""
    return marginal_evidence(noisy, test_codes, shrinkage=shrinkage)


def marginals_proba(
    codes: np.ndarray,
    y: np.ndarray,
    test_codes: np.ndarray,
    grid: FeatureGrid,
    n_classes: int,
    epsilon: float,
    seed: int,
    *,
    shrinkage: float = MARGINALS_SHRINKAGE,
    temper: float | None = None,
) -> np.ndarray:
    """Class probabilities of the test rows from the ``d`` noisy one-way (bin x class) histograms.

    Parameters
    ----------
    codes, y : training codes ``(n, d)`` on ``grid`` and labels ``0..n_classes-1``.
    test_codes : codes ``(n_test, d)`` of the rows to score, on the same grid.
    grid : the public ``FeatureGrid``; the chosen model's has ``marginals_n_bins(n, d, epsilon)`` bins.
    epsilon : float in (0, inf), the whole budget.
    seed : seeds the research noise (``discrete_laplace_counts`` with a Generator: NOT a DP release).
    shrinkage : float > 0, pseudo-count per cell in units of the noise scale ``d / ε``.
    temper : float > 0 or None, weight of the summed per-feature evidence; ``None``: the chosen rule
        :func:`marginals_temper` of ``d``.

    Returns
    -------
    ndarray ``(n_test, n_classes)``, rows summing to 1.

    Release and privacy cost.  The release is the ``d`` per-feature (bin x class) count histograms of ALL
    training rows, each with discrete Laplace noise of scale ``d / ε`` (budget ε/d each).  Under add/remove
    neighbours one record changes exactly one cell of each histogram by 1 (L1 sensitivity 1), so each
    histogram is ε/d-DP and the ``d`` of them are ε-DP by sequential composition.  There is no separate class
    histogram: everything below is post-processing of the noisy histograms, so the output is ε-DP.

    Estimation (post-processing).  Negative noisy counts are clipped at 0.  The class totals are the mean over
    features of each histogram's column sums (floored at 0); ``prior`` is their distribution after adding, to
    each class, the totals' noise standard deviation ``sqrt(2 * sum_j bins_j) / ε`` as a pseudo-count (a prior
    pulled toward uniform where the totals are noise).  Each bin's class
    distribution is ``(kept[b, c] + a * prior[c]) / (kept[b].sum() + a)`` with ``a = shrinkage * (d / ε) *
    n_classes``: a bin whose counts are small against the noise falls back to the prior, so it carries no
    evidence.  The score is ``log prior[c] + temper * sum_j log(p_j(c | bin_j) / prior[c])``, which is ``log
    prior + temper * sum_j log p_j(bin_j | c)`` up to a term that does not depend on the class (Bayes' rule per
    feature).  For two classes the ROC AUC does not depend on ``temper``; the accuracy does.
    """
    noisy = noisy_marginals(codes, y, grid, n_classes, epsilon, seed)
    return marginal_proba(noisy, test_codes, shrinkage=shrinkage, temper=temper)


def softmax(score: np.ndarray) -> np.ndarray:
    out = np.exp(score - score.max(axis=1, keepdims=True))
    return out / out.sum(axis=1, keepdims=True)


def temper_rule(c: float, d: int) -> float:
    """The public temper rule ``min(1, c / sqrt(d))``."""
    return min(1.0, c / np.sqrt(d))


# ---------------------------------------------------------------------------------------------------------------
# Inner validation


def encoded(split, grid: FeatureGrid):
    schema = split.schema
    return (
        encode_features(split.X_train, schema, grid),
        encode_labels(split.y_train, schema),
        encode_features(split.X_test, schema, grid),
        encode_labels(split.y_test, schema),
    )


def inner_splits(datasets: dict, names, seeds) -> dict:
    """``{(dataset, seed): inner split}`` for the given datasets and inner seeds."""
    out = {}
    for name in names:
        X, y, schema = datasets[name]
        for seed in seeds:
            out[name, seed] = inner_split(make_split(X, y, schema, seed, dataset=name), seed)
    return out


@dataclass(frozen=True)
class MarginalsSetting:
    """Constants of the marginals model: a two-regime bins rule, the shrinkage and the temper (label)."""

    bins_low: int
    bins_high: int
    bins_threshold: float
    shrinkage: float
    temper: str

    def n_bins(self, n_rows: int, n_features: int, epsilon: float) -> int:
        return two_regime(self.bins_low, self.bins_high, self.bins_threshold, n_rows * epsilon / n_features)

    def temper_for(self, n_features: int) -> float:
        return temper_value(self.temper, n_features)

    def describe(self) -> str:
        bins = (
            f"{self.bins_low} bins"
            if self.bins_low == self.bins_high
            else f"{self.bins_low} bins when n ε / d < {self.bins_threshold:g}, else {self.bins_high}"
        )
        return f"{bins}; shrinkage a = {self.shrinkage:g}; temper {self.temper}"


@dataclass(frozen=True)
class MixSetting:
    """The mix's fraction of rows for the marginals: a two-regime rule for two classes, a constant for more."""

    rho_low: float
    rho_high: float
    threshold: float
    rho_multiclass: float

    def rho(self, n_rows: int, n_features: int, n_classes: int, epsilon: float) -> float:
        if n_classes > 2:
            return self.rho_multiclass
        return two_regime(self.rho_low, self.rho_high, self.threshold, n_rows * epsilon / n_features)

    def describe(self) -> str:
        binary = (
            f"ρ = {self.rho_low:g}"
            if self.rho_low == self.rho_high
            else f"ρ = {self.rho_low:g} when n ε / d < {self.threshold:g}, else {self.rho_high:g}"
        )
        return f"two classes: {binary}; more classes: ρ = {self.rho_multiclass:g}"


def temper_value(label: str, d: int) -> float:
    return temper_rule(TEMPER_RULES[label], d) if label in TEMPER_RULES else float(label)


CHOSEN_MARGINALS = MarginalsSetting(
    MARGINALS_BINS_LOW,
    MARGINALS_BINS_HIGH,
    MARGINALS_BINS_THRESHOLD,
    MARGINALS_SHRINKAGE,
    f"{MARGINALS_TEMPER_C:g}/sqrt(d)",
)
CHOSEN_MIX = MixSetting(MIX_RHO_LOW, MIX_RHO_HIGH, MIX_THRESHOLD, MIX_RHO_MULTICLASS)


def rule_candidates(choices) -> list[tuple]:
    """Two-regime rules ``(low, high, threshold)``: constants first, then ``low < high`` at every threshold."""
    constant = [(c, c, THRESHOLDS[0]) for c in choices]
    return constant + [(lo, hi, t) for lo in choices for hi in choices if lo < hi for t in THRESHOLDS]


def apply_rule(cells: pd.DataFrame, column: str, rule: tuple) -> pd.DataFrame:
    """The rows of ``cells`` whose ``column`` is the one ``rule`` picks at that row's ``n_eps_d``."""
    low, high, threshold = rule
    return cells[cells[column] == np.where(cells.n_eps_d < threshold, low, high)]


def marginals_sweep(splits: dict, bins, shrinkages) -> pd.DataFrame:
    """Inner accuracy/AUC of the marginals per (bins, shrinkage, temper), binary datasets."""
    rows = []
    for (name, seed), inner in splits.items():
        if name not in BINARY:
            continue
        schema = inner.schema
        d = schema.n_features
        for n_bins in bins:
            grid = FeatureGrid.from_schema(schema, n_bins=n_bins)
            codes, y_train, test_codes, y_test = encoded(inner, grid)
            for eps in EPSILONS:
                noisy = noisy_marginals(codes, y_train, grid, 2, eps, seed)
                for m in shrinkages:
                    log_prior, evidence = marginal_terms(noisy, test_codes, m)
                    base = {"dataset": name, "seed": seed, "epsilon": eps, "n_eps_d": len(y_train) * eps / d}
                    for label in [*TEMPER_RULES, *(f"{t:g}" for t in TEMPER_CONSTANTS)]:
                        acc, auc = scores(softmax(log_prior + temper_value(label, d) * evidence), y_test)
                        rows.append(
                            {**base, "bins": n_bins, "shrinkage": m, "temper": label, "accuracy": acc, "auc": auc}
                        )
    return pd.DataFrame(rows)


def choose_marginals(sweep: pd.DataFrame) -> tuple[MarginalsSetting, pd.DataFrame]:
    """The (bins rule, shrinkage) of best mean inner AUC over (dataset, ε) cells, then the temper of best accuracy.

    Ties go to constant bins, then to the smaller threshold; for the temper, to the rules of ``d``.
    """
    keys = ["dataset", "epsilon", "bins", "shrinkage", "temper"]
    cells = sweep.groupby(keys, sort=False)[["accuracy", "auc", "n_eps_d"]].mean().reset_index()
    one_temper = cells[cells.temper == cells.temper.iloc[0]]  # the AUC does not depend on the temper
    candidates = []
    for m in sorted(sweep.shrinkage.unique()):
        for rule in rule_candidates(sorted(sweep.bins.unique())):
            auc = apply_rule(one_temper[one_temper.shrinkage == m], "bins", rule).auc.mean()
            candidates.append({"bins_rule": rule, "shrinkage": m, "auc": auc, "constant": rule[0] == rule[1]})
    table = pd.DataFrame(candidates)
    table["threshold"] = [r[2] for r in table.bins_rule]
    best = table.sort_values(["auc", "constant", "threshold"], ascending=[False, False, True]).iloc[0]
    picked = apply_rule(cells[cells.shrinkage == best.shrinkage], "bins", best.bins_rule)
    temper = picked.groupby("temper", sort=False).accuracy.mean().idxmax()
    setting = MarginalsSetting(*best.bins_rule, float(best.shrinkage), str(temper))
    return setting, table


def mix_proba(split, epsilon: float, seed: int, rho: float, setting: MarginalsSetting) -> np.ndarray:
    """Probabilities of the mix: ``rho`` of the training rows to the marginals, the rest to the default trees.

    The rows are split at random (seed ``2000 + seed``, as ``bench_feature_stumps``' mixing sweep); both models
    spend the full ε on disjoint rows (parallel composition: ε-DP).  The marginals' bins follow the public rule at
    ``round(rho * n)`` rows.
    """
    schema = split.schema
    d = schema.n_features
    if rho == 0:
        return (
            EDPRFClassifier(schema, epsilon=epsilon, random_state=seed, marginals_share=0.0)
            .fit(split.X_train, split.y_train)
            .predict_proba(split.X_test)
        )
    grid = FeatureGrid.from_schema(schema, n_bins=setting.n_bins(round(rho * len(split.y_train)), d, epsilon))
    codes, y_train, test_codes, _ = encoded(split, grid)
    mine = np.random.default_rng(2000 + seed).random(len(y_train)) < rho
    marg = marginals_proba(
        codes[mine],
        y_train[mine],
        test_codes,
        grid,
        schema.n_classes,
        epsilon,
        seed,
        shrinkage=setting.shrinkage,
        temper=setting.temper_for(d),
    )
    trees = EDPRFClassifier(schema, epsilon=epsilon, random_state=seed, marginals_share=0.0)
    trees.fit(split.X_train[~mine], split.y_train[~mine])
    return log_pool([(rho, marg), (1 - rho, trees.predict_proba(split.X_test))])


def mix_sweep(splits: dict, setting: MarginalsSetting) -> pd.DataFrame:
    rows = []
    for (name, seed), inner in splits.items():
        y_test = encode_labels(inner.y_test, inner.schema)
        for eps, rho in itertools.product(EPSILONS, RHO_CHOICES):
            acc, auc = scores(mix_proba(inner, eps, seed, rho, setting), y_test)
            r = len(inner.y_train) * eps / inner.schema.n_features
            k = inner.schema.n_classes
            rows.append(
                {"dataset": name, "classes": k, "seed": seed, "epsilon": eps, "n_eps_d": r, "rho": rho}
                | {"accuracy": acc, "auc": auc}
            )
    return pd.DataFrame(rows)


def choose_rho(sweep: pd.DataFrame) -> tuple[MixSetting, pd.DataFrame]:
    """Best mean inner accuracy + AUC: a two-regime rule on the two-class cells, a constant on the others.

    Ties go to the constant rule, then to the smaller threshold.
    """
    keys = ["dataset", "classes", "epsilon", "rho"]
    cells = sweep.groupby(keys)[["accuracy", "auc", "n_eps_d"]].mean().reset_index()
    cells["score"] = cells.accuracy + cells.auc
    binary, multi = cells[cells.classes == 2], cells[cells.classes > 2]
    candidates = []
    for rule in rule_candidates(RHO_CHOICES):
        score = apply_rule(binary, "rho", rule).score.mean()
        candidates.append({"rule": rule, "score": score, "constant": rule[0] == rule[1], "threshold": rule[2]})
    table = pd.DataFrame(candidates)
    best = table.sort_values(["score", "constant", "threshold"], ascending=[False, False, True]).iloc[0].rule
    rho_multi = float(multi.groupby("rho").score.mean().idxmax()) if len(multi) else best[1]
    return MixSetting(*best, rho_multi), table


# ---------------------------------------------------------------------------------------------------------------
# Test rows


def test_rows(datasets: dict, seeds: int, setting: MarginalsSetting, mix: MixSetting) -> pd.DataFrame:
    rows = []
    for name, (X, y, schema) in datasets.items():
        k, d = schema.n_classes, schema.n_features
        stump_grid = FeatureGrid.from_schema(schema, n_bins=STUMPS_BINS)
        for seed in range(seeds):
            split = make_split(X, y, schema, seed, dataset=name)
            codes5, y_train, test5, y_test = encoded(split, stump_grid)
            n = len(y_train)
            for eps in EPSILONS:

                def add(model: str, proba: np.ndarray) -> None:
                    acc, auc = scores(proba, y_test)
                    rows.append(
                        {"dataset": name, "model": model, "epsilon": eps, "seed": seed, "accuracy": acc, "auc": auc}
                    )

                with pooling_exponent(STUMPS_POOLING):
                    stumps = stump_forest(codes5, y_train, schema, stump_grid, eps, seed)
                    add("stumps", stumps.predict_proba(split.X_test))
                if k == 2:
                    add("naive-bayes", naive_bayes_proba(codes5, y_train, test5, stump_grid, k, eps, seed))
                grid = FeatureGrid.from_schema(schema, n_bins=setting.n_bins(n, d, eps))
                codes, _, test_codes, _ = encoded(split, grid)
                marg = marginals_proba(
                    codes,
                    y_train,
                    test_codes,
                    grid,
                    k,
                    eps,
                    seed,
                    shrinkage=setting.shrinkage,
                    temper=setting.temper_for(d),
                )
                add("marginals", marg)
                add("mix", mix_proba(split, eps, seed, mix.rho(n, d, k, eps), setting))
        log(f"test rows: {name} done")
    return pd.DataFrame(rows)


MODELS = ("edprf-counts", "edprf-label", "stumps", "naive-bayes", "marginals", "mix", "dp-ebm")
TITLES = {
    "edprf-counts": "defaults",
    "edprf-label": "label",
    "stumps": "stumps",
    "naive-bayes": "old NB",
    "marginals": "marginals",
    "mix": "mix",
    "dp-ebm": "DP-EBM",
}


def markdown_table(header: list[str], rows: list[list[str]]) -> list[str]:
    """The lines of a Markdown table."""
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)] + ["| " + " | ".join(r) + " |" for r in rows]


def goal_targets(cell: pd.DataFrame) -> tuple[float, float]:
    """(AUC, accuracy) targets of one (dataset, ε) cell of model means.

    Two classes (DP-EBM present): DP-EBM's AUC and max(DP-EBM, label) accuracy − 0.005; otherwise the
    defaults' AUC and accuracy (no lower than today).
    """
    if "dp-ebm" in cell.index:
        return cell.loc["dp-ebm", "auc"], max(
            cell.loc["dp-ebm", "accuracy"], cell.loc["edprf-label", "accuracy"]
        ) - 0.005
    return cell.loc["edprf-counts", "auc"], cell.loc["edprf-counts", "accuracy"]


def goal_tables(ours: pd.DataFrame, seeds: int) -> tuple[str, pd.DataFrame]:
    columns = ["dataset", "model", "epsilon", "seed", "accuracy", "auc"]
    others = pd.concat(
        [pd.read_csv(RESULTS_DIR / name) for name in ("probabilities.csv", "probabilities_reference.csv")]
    )
    keep = others.model.isin(["edprf-counts", "edprf-label", "dp-ebm"]) & (others.seed < seeds)
    others = others[keep & (others.status == "ok")][columns]  # DP-EBM is skipped on wall (binary only)
    grouped = pd.concat([ours, others]).groupby(["dataset", "epsilon", "model"])[["accuracy", "auc"]]
    mean, std = grouped.mean(), grouped.std(ddof=0)
    models = [m for m in MODELS if m in mean.index.get_level_values("model")]
    cells = mean.index.droplevel("model").unique()
    lines = []
    for metric, title in (("auc", "ROC AUC"), ("accuracy", "Accuracy")):
        rows = [
            [dataset, f"{eps:g}"]
            + [
                f"{mean.loc[key, metric]:.3f} ± {std.loc[key, metric]:.3f}" if key in mean.index else "–"
                for key in ((dataset, eps, m) for m in models)
            ]
            for dataset, eps in cells
        ]
        lines += ["", f"{title}, test rows, mean ± std over seeds (ddof 0):", ""]
        lines += markdown_table(["dataset", "ε", *(TITLES[m] for m in models)], rows)
    verdict, rows = [], []
    for dataset, eps in cells:
        cell = mean.loc[(dataset, eps)]
        auc_goal, acc_goal = goal_targets(cell)
        meeting = [
            m
            for m in models
            if m in cell.index
            and m != "dp-ebm"
            and cell.loc[m, "auc"] >= auc_goal
            and cell.loc[m, "accuracy"] >= acc_goal
        ]
        verdict += [{"dataset": dataset, "epsilon": eps, "model": m, "meets": m in meeting} for m in models]
        names = ", ".join(TITLES[m] for m in meeting) or "none"
        rows.append([dataset, f"{eps:g}", f"{auc_goal:.3f}", f"{acc_goal:.3f}", names])
    lines += [
        "",
        (
            "Goal check on the means. Binary: AUC ≥ DP-EBM's and accuracy ≥ max(DP-EBM, label) − 0.005. Wall robot "
            "(multiclass): AUC and accuracy ≥ today's defaults'."
        ),
        "",
    ]
    lines += markdown_table(["dataset", "ε", "AUC target", "accuracy target", "models meeting both"], rows)
    verdict = pd.DataFrame(verdict)
    counts = verdict.groupby("model", sort=False).meets.sum()
    summary = ", ".join(f"{TITLES[m]} {int(counts[m])}" for m in models if m != "dp-ebm")
    lines += ["", f"Cells meeting both goals, per model (of {len(cells)}): {summary}."]
    return "\n".join(lines) + "\n", verdict


def rule_lines(title: str, header: list[str], rows: list[list[str]]) -> list[str]:
    return ["", title, "", *markdown_table(header, rows)]


def inner_marginals_text(sweep: pd.DataFrame, setting: MarginalsSetting, rules: pd.DataFrame) -> str:
    one_temper = sweep[sweep.temper == sweep.temper.iloc[0]]
    auc = one_temper.groupby(["bins", "shrinkage"]).auc.mean().unstack("shrinkage")
    at_shrinkage = one_temper[one_temper.shrinkage == setting.shrinkage]
    per_cell = at_shrinkage.groupby(["dataset", "epsilon", "bins"]).agg(auc=("auc", "mean"), r=("n_eps_d", "mean"))
    per_cell = per_cell.unstack("bins")
    bins = list(per_cell["auc"].columns)
    lines = ["", "### Inner table 1: bins and shrinkage (mean inner ROC AUC; the AUC does not depend on the temper)"]
    lines += rule_lines(
        "Constant bins, mean over heart, bank, diabetes and ε:",
        ["bins", *(f"a = {m:g}" for m in auc.columns)],
        [[str(b), *(f"{v:.4f}" for v in row)] for b, row in auc.iterrows()],
    )
    lines += rule_lines(
        f"Per (dataset, ε) at a = {setting.shrinkage:g} (n: inner training rows):",
        ["dataset", "ε", "n ε / d", *(f"{b} bins" for b in bins)],
        [
            [name, f"{eps:g}", f"{row[('r', bins[0])]:.0f}", *(f"{row[('auc', b)]:.3f}" for b in bins)]
            for (name, eps), row in per_cell.iterrows()
        ],
    )
    lines += rule_lines(
        (
            "Bins rules (`low` bins when n ε / d < threshold, else `high`) x shrinkage, mean inner AUC over the 12 "
            "cells, best 10:"
        ),
        ["bins low", "bins high", "threshold", "a", "AUC"],
        [
            [str(r.bins_rule[0]), str(r.bins_rule[1]), "–" if r.constant else f"{r.threshold:g}", f"{r.shrinkage:g}"]
            + [f"{r.auc:.4f}"]
            for r in rules.sort_values("auc", ascending=False).head(10).itertuples()
        ],
    )
    picked = apply_rule(
        sweep[sweep.shrinkage == setting.shrinkage],
        "bins",
        (setting.bins_low, setting.bins_high, setting.bins_threshold),
    )
    acc = picked.groupby(["dataset", "temper"], sort=False).accuracy.mean().unstack("temper")
    overall = picked.groupby("temper", sort=False).accuracy.mean()
    lines += rule_lines(
        "### Inner table 2: temper (mean inner accuracy over ε, at the chosen bins rule and shrinkage)",
        ["dataset", *acc.columns],
        [[d, *(f"{v:.4f}" for v in row)] for d, row in acc.iterrows()]
        + [["**mean**", *(f"{overall[c]:.4f}" for c in acc.columns)]],
    )
    return "\n".join(lines) + "\n"


def inner_mix_text(sweep: pd.DataFrame, rule_table: pd.DataFrame, mix: MixSetting) -> str:
    cells = sweep.groupby(["dataset", "epsilon", "rho"])[["accuracy", "auc", "n_eps_d"]].mean()
    lines = ["", "### Inner table 3: the mix's rho (accuracy / ROC AUC, mean over inner seeds)"]
    lines += rule_lines(
        "ρ = 0 is the default trees on all the inner training rows: a candidate like the others (a rule may keep the trees where they win).",
        ["dataset", "ε", "n ε / d", *(f"ρ = {r:g}" for r in RHO_CHOICES)],
        [
            [name, f"{eps:g}", f"{group.n_eps_d.iloc[0]:.0f}"]
            + [f"{a:.3f} / {u:.3f}" for a, u in zip(group.accuracy, group.auc)]
            for (name, eps), group in cells.groupby(level=[0, 1])
        ],
    )
    lines += rule_lines(
        (
            "Two-class rho rules (`low` when n ε / d < threshold, else `high`), mean inner accuracy + AUC over the "
            "12 two-class cells, best 8 (wall robot: the constant rho of best mean accuracy + AUC over its 4 cells):"
        ),
        ["rho low", "rho high", "threshold", "score"],
        [
            [f"{r.rule[0]:g}", f"{r.rule[1]:g}", "–" if r.constant else f"{r.threshold:g}", f"{r.score:.4f}"]
            for r in rule_table.sort_values("score", ascending=False).head(8).itertuples()
        ],
    )
    lines += ["", f"Chosen: **{mix.describe()}**."]
    return "\n".join(lines) + "\n"


READING = """
## Reading (written for the 10-seed run above)

- **The release was not the problem, the estimation was.** The same kind of release as the old naive Bayes
  (one-way histograms of all rows), read with noise-aware post-processing, has the best ROC AUC of every model
  measured on bank at ε <= 1 (the mix's is 0.001 higher at ε = 2) and on heart at ε >= 0.5 (heart ε = 1: 0.873
  against 0.831 for the old naive Bayes, 0.819 for DP-EBM and 0.752 for the defaults), at least DP-EBM's AUC in
  all 12 two-class cells, and no
  longer collapses at ε = 0.1 (heart 0.643 against 0.496; bank accuracy 0.886-0.888 against 0.860-0.863).
  Alone it meets both goals in 9 of 12 two-class cells: it misses bank's accuracy at ε = 1 and 2 by 0.001-0.002
  (std over seeds 0.002-0.003) and heart's at ε = 0.1 (0.568 against 0.610), where n ε / d is about 2: each
  cell's noise scale (d/ε = 130) is half the training set, and no post-processing recovers that.
- **The mix meets both goals in all 12 two-class cells**, on the means: the trees keep most rows where the
  histograms are noise (ρ = 0.25 below n ε / d = 10: heart at ε <= 0.5) and carry bank's accuracy at high ε;
  the marginals carry the AUC. Some margins are thin: heart ε = 0.1 accuracy 0.613 against 0.610 (std 0.100),
  bank ε = 0.5 accuracy 0.890 against 0.887; on heart the seed-to-seed std (AUC 0.03-0.11, DP-EBM's up to
  0.20) is larger than most gaps, so heart's cells are not significant either way with 10 seeds.
- **Wall robot (4 classes): the mix is today's trees.** On the inner splits every ρ > 0 loses accuracy at
  ε = 0.1, 1 and 2 (ρ = 0.25 gains a point at ε = 0.5): one-way marginals cannot express the interactions the
  trees find there (ρ = 0.25 to 0.75 cost 3-14 points on the test rows in an earlier run of this script), and
  ρ = 0, the trees on all rows, wins the inner mean of accuracy + AUC: the rule for
  more than two classes is ρ = 0, so the mix meets wall's goal (no lower than today) by being today's model.
- **How firm the constants are.** They come from three two-class datasets and four inner seeds. The shrinkage
  has a flat optimum (a = 2-8 within 0.0015 of inner AUC). Few bins at small n ε / d and many at large holds
  on bank and diabetes (inner table 1, per cell), but heart prefers 20 bins to 5 at ε = 0.5 and 1 (n ε / d 7
  and 14); the bins threshold (300) and the mix's (10) fall between datasets, so each is in effect read off a
  few cells. The temper is the weakest choice: heart prefers about
  0.7 or more, bank about 0.5 (its accuracy is set by where the score crosses the 11.7 % prior), and
  min(1, 2.5 / sqrt(d)) is the compromise the inner mean picked; a rule of d alone cannot give both. AUC does
  not depend on it for two classes.
- Measured elsewhere: the stand-ins for the held-out credit and census data (`stumps_proxies.md`,
  `rule_transfer.md`) and the federated setting (`marginals_federated.md`). The release itself, with the exact
  OpenDP sampler, is `edprf_core.DPMarginalsClassifier` (these benchmark rows are seeded research draws).
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10, help="test seeds 0..SEEDS-1")
    parser.add_argument("--quick", action="store_true", help="2 inner seeds, at most 3 test seeds, a smaller grid")
    parser.add_argument("--data-dir", default=str(DEFAULT_DATA_DIR))
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    start = time.perf_counter()
    inner_seeds, bins, shrinkages, seeds = INNER_SEEDS, BIN_CHOICES, SHRINKAGE_CHOICES, args.seeds
    if args.quick:
        inner_seeds, bins, shrinkages, seeds = INNER_SEEDS[:2], (5, 10), (0.25, 1.0), min(args.seeds, 3)
    out = Path(args.out or RESULTS_DIR / ("marginals_quick.md" if args.quick else "marginals.md"))
    datasets = {name: load_dataset(name, args.data_dir) for name in MIX_DATASETS}
    splits = inner_splits(datasets, MIX_DATASETS, inner_seeds)
    sweep = marginals_sweep(splits, bins, shrinkages)
    setting, bins_rules = choose_marginals(sweep)
    log(f"marginals: {setting.describe()} ({time.perf_counter() - start:.0f} s)")
    mixes = mix_sweep(splits, setting)
    mix, rho_rules = choose_rho(mixes)
    log(f"mix: {mix.describe()} ({time.perf_counter() - start:.0f} s)")
    ours = test_rows(datasets, seeds, setting, mix)
    goals, _ = goal_tables(ours, seeds)
    elapsed = time.perf_counter() - start
    command = "python benchmarks/bench_marginals.py" + (" --quick" if args.quick else f" --seeds {seeds}")
    same = setting == CHOSEN_MARGINALS and mix == CHOSEN_MIX
    lines = [
        "# DP one-way marginals, noise-aware, alone and mixed with the trees (issue 23)",
        "",
        (
            f"Command: `{command}` ({elapsed:.0f} s on one core). What is measured and why: the docstring of "
            "`benchmarks/bench_marginals.py`; the model and its privacy argument: `marginals_proba`'s docstring. "
            f"Test rows: seeds 0..{seeds - 1}, the split protocol of `bench_probabilities.py`; defaults, label and "
            "DP-EBM (δ = 1e-6) read seed by seed from `results/probabilities.csv` / "
            "`results/probabilities_reference.csv`; stumps (pooling exponent 0.75, shrinkage 0.5, 5 bins) and the "
            "old naive Bayes (5 bins) recomputed with `bench_feature_stumps`' functions and seeds. Seeded research "
            "noise (not DP releases); the release and its estimator are the core library's "
            "`edprf_core._marginals`, public as `edprf_core.DPMarginalsClassifier` (central only: no wire format or default yet)."
        ),
        "",
        "## Chosen constants (inner validation only)",
        "",
        (
            f"Inner splits: seeds {list(inner_seeds)}, each seed's training rows split 75/25 "
            "(`_bench_common.inner_split`). Marginals: the (bins rule, shrinkage) of best mean inner ROC AUC over "
            "the (dataset, ε) cells of heart, bank and diabetes (inner table 1), then the temper of best mean inner "
            f"accuracy there (inner table 2): **{setting.describe()}** (a bin's pseudo-count is a · (d/ε) · k). "
            "Mix: the rules of best mean inner accuracy + AUC (inner table 3), the marginals in it with the "
            f"constants above: **{mix.describe()}**."
        ),
        "",
        (
            "The module constants of `bench_marginals.py` (what `marginals_proba`'s defaults, `marginals_n_bins` "
            "and `mix_rho` use) "
            + (
                "are this run's choices."
                if same
                else f"differ from this run's choices: {CHOSEN_MARGINALS}, {CHOSEN_MIX}."
            )
        ),
        inner_marginals_text(sweep, setting, bins_rules),
        inner_mix_text(mixes, rho_rules, mix),
        "## Test rows: the goal table",
        goals,
    ]
    if not args.quick and seeds == 10:
        lines.append(READING)
    out.write_text("\n".join(lines))
    print("\n".join(lines))
    log(f"wrote {out} in {elapsed:.0f} s")


if __name__ == "__main__":
    main()
