#!/usr/bin/env python
"""Does the stumps lead of ``bench_feature_stumps.py`` hold on binary data it was not read from? (issue 23)

The held-out census and credit datasets on which issue 23's goals will be
checked are not here.  Six public binary datasets stand in for them, read at
run time from installed packages (nothing is copied into the project); what
they are and how their schemas were declared: ``_bench_standins.py``.  Two of
them are a credit-scoring and a census dataset of the same kind as the
held-out ones (``credit``, ``census``).

Models, per seed (stratified 80/20 split, 10 seeds) and ε in {0.1, 0.5, 1, 2}:
the eDPRF defaults; the label configuration of ``probabilities.md``; the
public-feature stumps of ``bench_feature_stumps.py`` (pooling exponent 0.75
and leaf shrinkage 0.5, chosen there on inner validation); half trees / half
stumps; the candidate rule of ``feature_stumps.md`` (stumps when
``n ε / (10 d) >= 0.5``); DP-EBM (δ = 1e-6, the declared bounds and category
lists, as in ``bench_probabilities.py``); DP-EBM on the public grid's bin
codes at 5 and at 32 equal-width bins (ordinal levels, categoricals nominal;
it still spends its default 10 % of ε on binning those levels): a diagnostic
of how much of DP-EBM's lead comes from its data-adaptive private bins, which
the project's invariant 2 rules out for a party; and, when ``bench_marginals.py`` is
present, its DP marginals model and its mix with the trees, with the constants
``bench_marginals.py`` chose on the inner validation rows of heart, bank and
diabetes.  Seeded research
runs: NOT DP releases.

Per-seed rows are kept in ``results/stumps_proxies.csv``; a rerun fits only the
(dataset, model) pairs asked for with ``--models`` and reuses the others.

    python benchmarks/bench_stumps_proxies.py          # about 15 minutes on one core; needs the bench extra

Output: ``results/stumps_proxies.md`` and ``results/stumps_proxies.csv``.
"""

from __future__ import annotations

import argparse
import functools
import sys
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _bench_common import RESULTS_DIR, Split, make_split
from _bench_standins import STANDINS, load_standin
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
from bench_probabilities import DPEBM_DELTA, Job, _fit_reference

from edprf_core import CategoricalFeature, EDPRFClassifier
from edprf_core.encoding import FeatureGrid, encode_features, encode_labels
from edprf_core.shape import public_depth

STUMP_POOLING = (0.75, 0.5)
"""Pooling exponent and leaf shrinkage of the stumps, as chosen on inner validation by ``bench_feature_stumps.py``."""
CSV = RESULTS_DIR / "stumps_proxies.csv"
MODELS = (
    "defaults",
    "trees only",
    "label",
    "stumps",
    "half/half",
    "stumps 1/4 + trees 3/4",
    "stumps 3/4 + trees 1/4",
    "rule",
    "DP-EBM",
    "DP-EBM on 5 public bins",
    "DP-EBM on 32 public bins",
    "marginals",
    "marginals+trees",
    "share 0.25",
    "share 0.5",
    "share 0.75",
    "share 0.9",
    "share 0.95",
    "diffprivlib RF",
    "HistGB (non-private)",
)
"""``share r``: ``EDPRFClassifier(marginals_share=r)``, the estimator with its marginals part on a share ``r`` of
the rows (``trees only`` is ``r = 0``)."""


ESTIMATOR_SHARES = (0.25, 0.5, 0.75, 0.9, 0.95)
"""The marginals shares ``r`` of the ``share r`` models (``EDPRFClassifier(marginals_share=r)``)."""
COUNT_SHARES = (0.02, 0.1, 0.2)
"""``count c``: the defaults with ``EDPRFClassifier(count_epsilon_share=c)`` (the library's 0.05 is ``defaults``)."""


class SeedModels:
    """The models of one (dataset, seed, ε): each ``proba(name)`` fits on the split's training rows once."""

    def __init__(self, split: Split, grid: FeatureGrid, epsilon: float, seed: int) -> None:
        self.split, self.grid, self.eps, self.seed = split, grid, epsilon, seed
        schema = split.schema
        self.codes = encode_features(split.X_train, schema, grid)
        self.labels = encode_labels(split.y_train, schema)
        self.test_codes = encode_features(split.X_test, schema, grid)
        self.draw = np.random.default_rng(1000 + seed).random(len(self.labels))  # public: which rows go where
        self._cache: dict[str, np.ndarray] = {}
        self._fits: dict[str, Callable[[], np.ndarray]] = {
            "defaults": self._defaults,
            "trees only": self._trees,
            "label": self._label,
            "stumps": self._stumps,
            "half/half": functools.partial(self._mix, 0.5),
            "stumps 1/4 + trees 3/4": functools.partial(self._mix, 0.25),
            "stumps 3/4 + trees 1/4": functools.partial(self._mix, 0.75),
            "rule": self._rule,
            "DP-EBM": functools.partial(self._reference, "dp-ebm"),
            "DP-EBM on 5 public bins": functools.partial(self._dp_ebm_public_bins, 5),
            "DP-EBM on 32 public bins": functools.partial(self._dp_ebm_public_bins, 32),
            "marginals": self._marginals,
            "marginals+trees": self._marginals_mix,
            **{f"share {r:g}": functools.partial(self._defaults, marginals_share=r) for r in ESTIMATOR_SHARES},
            **{f"count {c:g}": functools.partial(self._defaults, count_epsilon_share=c) for c in COUNT_SHARES},
            "diffprivlib RF": functools.partial(self._reference, "diffprivlib-rf"),
            "HistGB (non-private)": functools.partial(self._reference, "sklearn-hgb"),
        }

    def proba(self, name: str) -> np.ndarray:
        if name not in self._cache:
            self._cache[name] = self._fits[name]()
        return self._cache[name]

    def _trees(self, rows: np.ndarray | slice = slice(None)) -> np.ndarray:
        s = self.split
        model = EDPRFClassifier(s.schema, epsilon=self.eps, random_state=self.seed, marginals_share=0.0)
        return model.fit(s.X_train[rows], s.y_train[rows]).predict_proba(s.X_test)

    def _defaults(self, **changed: float) -> np.ndarray:
        """The library's defaults (two classes: the trees and the marginals part, ``marginals_share="auto"``), with the
        estimator parameters ``changed`` (``marginals_share``, ``count_epsilon_share``) set otherwise."""
        s = self.split
        model = EDPRFClassifier(s.schema, epsilon=self.eps, random_state=self.seed, **changed)
        return model.fit(s.X_train, s.y_train).predict_proba(s.X_test)

    def _label(self) -> np.ndarray:
        s = self.split
        depth = public_depth(len(self.labels), 1, self.eps)
        model = EDPRFClassifier(
            s.schema,
            epsilon=self.eps,
            random_state=self.seed,
            n_trees=1,
            n_bins=20,
            max_depth=depth,
            leaf="label",
            marginals_share=0.0,
        )
        return model.fit(s.X_train, s.y_train).predict_proba(s.X_test)

    def _stump_proba(self, rows: np.ndarray | slice) -> np.ndarray:
        with pooling_exponent(STUMP_POOLING):
            forest = stump_forest(
                self.codes[rows], self.labels[rows], self.split.schema, self.grid, self.eps, self.seed
            )
            return forest.predict_proba(self.split.X_test)

    def _stumps(self) -> np.ndarray:
        return self._stump_proba(slice(None))

    def _mix(self, rho: float) -> np.ndarray:
        """A fraction ``rho`` of the rows to the stumps, the rest to the default trees (parallel composition: ε-DP);
        log-probabilities averaged with weights ``rho`` and ``1 - rho``."""
        trees = self.draw < 1 - rho
        return log_pool([(rho, self._stump_proba(~trees)), (1 - rho, self._trees(trees))])

    def _rule(self) -> np.ndarray:
        snr = cell_snr(len(self.labels), self.split.schema.n_features, self.eps)
        return self.proba("stumps") if snr >= CELL_SNR_THRESHOLD else self.proba("trees only")

    def _reference(self, model: str) -> np.ndarray:
        """A reference model of ``bench_probabilities.py``: DP-EBM, diffprivlib's RF (35 trees, depth 6, ε-DP, the
        schema's bounds) or scikit-learn's HistGB (non-private, the same at every ε)."""
        proba, _, _ = _fit_reference(Job(self.split.schema.name, model, self.eps, self.seed), self.split)
        return proba

    def _dp_ebm_public_bins(self, n_bins: int) -> np.ndarray:
        """DP-EBM on the public grid's bin codes (ordinal levels; categoricals nominal): no data-adaptive bins."""
        from interpret.privacy import DPExplainableBoostingClassifier

        schema = self.split.schema
        grid = FeatureGrid.from_schema(schema, n_bins)
        types = [
            "nominal" if isinstance(f, CategoricalFeature) else [str(i) for i in range(grid.n_codes[j])]
            for j, f in enumerate(schema.features)
        ]

        def frame(X: pd.DataFrame) -> pd.DataFrame:
            codes = encode_features(X, schema, grid)
            return pd.DataFrame({f.name: codes[:, j].astype(str) for j, f in enumerate(schema.features)})

        model = DPExplainableBoostingClassifier(
            feature_types=types, epsilon=self.eps, delta=DPEBM_DELTA, random_state=self.seed, n_jobs=1
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # its note on the fixed random_state: seeded on purpose
            model.fit(frame(self.split.X_train), self.labels)
        return model.predict_proba(frame(self.split.X_test))

    def _marginals(self) -> np.ndarray:
        from bench_marginals import marginals_n_bins, marginals_proba

        schema = self.split.schema
        n_bins = marginals_n_bins(len(self.labels), schema.n_features, self.eps)
        grid = FeatureGrid.from_schema(schema, n_bins=n_bins)
        codes, test_codes = (
            encode_features(self.split.X_train, schema, grid),
            encode_features(self.split.X_test, schema, grid),
        )
        return marginals_proba(codes, self.labels, test_codes, grid, schema.n_classes, self.eps, self.seed)

    def _marginals_mix(self) -> np.ndarray:
        from bench_marginals import CHOSEN_MARGINALS, mix_proba, mix_rho

        schema = self.split.schema
        rho = mix_rho(len(self.labels), schema.n_features, schema.n_classes, self.eps)
        return mix_proba(self.split, self.eps, self.seed, rho, CHOSEN_MARGINALS)


def model_scores(split: Split, grid: FeatureGrid, seed: int, models: tuple[str, ...]):
    """Yield ``(ε, model, accuracy, ROC AUC)`` of every model of ``models`` on ``split``'s test rows, at every ε."""
    truth = encode_labels(split.y_test, split.schema)
    for eps in EPSILONS:
        fitted = SeedModels(split, grid, eps, seed)
        for model in models:
            acc, auc = scores(fitted.proba(model), truth)
            yield eps, model, acc, auc


def run(name: str, seeds: int, models: tuple[str, ...]) -> pd.DataFrame:
    X, y, schema = load_standin(name)
    grid = FeatureGrid.from_schema(schema, N_BINS)
    rows = []
    for seed in range(seeds):
        split = make_split(X, y, schema, seed, dataset=name)
        for eps, model, acc, auc in model_scores(split, grid, seed, models):
            rows.append({"dataset": name, "model": model, "epsilon": eps, "seed": seed, "accuracy": acc, "auc": auc})
        print(f"{name}: seed {seed} done", file=sys.stderr, flush=True)
    return pd.DataFrame(rows)


CANDIDATES = ("defaults", "trees only", "stumps", "half/half", "rule", "marginals", "marginals+trees")
"""The models whose goals are checked (DP-EBM and the label configuration set the targets)."""


READING = [
    "",
    "Reading (the numbers are this file's):",
    "",
    (
        "- **The DP marginals carry over to data they were not tuned on.** Their constants were chosen on inner rows "
        "of heart, bank and diabetes only; on these six datasets the marginals meet both goals in 14 of 24 cells and "
        "their mix with the trees in 13, against 2 for the trees alone (the defaults before the marginals part) "
        "and 4 for the stumps. The library's defaults, which hold a marginals part on 90 % of the rows of two-class "
        "tasks (`rule_transfer_estimator.md`) and, at ε ≥ 0.5 with n ε / d ≥ 220, a residual pass on it "
        "(`residual_pass.md`, `residual_constants.md`), meet 18 (`share 0.9`, the same share without the pass, 16; "
        "`share 0.75`, the defaults before the pass, 14): census, fair and mroz at every ε, attrition at ε ≤ 1, "
        "credit at ε = 0.1, cancer at ε ≥ 1."
    ),
    (
        "- **Where they still miss.** Credit at ε ≥ 0.5 (AUC 0.765, 0.780 and 0.794 against DP-EBM's 0.774, 0.794 "
        "and 0.809); breast cancer's accuracy at ε ≤ 0.5, where the label configuration reaches 0.77 and 0.92 with "
        "30 features and 455 rows (at ε = 0.1, n ε / d = 1.5 sits under the rule's threshold and the DP row count "
        "decides); and attrition at ε = 2 (0.714 against 0.732)."
    ),
    (
        "- **The other references.** diffprivlib's random forest (35 trees, depth 6, ε-DP on the schema's bounds) "
        "ranks below the defaults in 21 of 24 cells; it ranks better at ε = 0.1 on attrition and cancer (0.572 and "
        "0.817 against 0.516 and 0.705) and ties at ε = 0.5 on cancer (0.965). scikit-learn's HistGB, "
        "non-private, is the ceiling (census 0.814, credit 0.821 AUC)."
    ),
    (
        "- **Bins are not the whole of DP-EBM's lead.** Restricted to the public grid (its binning budget then spent "
        "on the declared levels only), DP-EBM still ranks credit at 0.793 and 0.799 (ε = 1 and 2, 5 bins), above "
        "every eDPRF variant: its cyclic boosting on residuals, composed under (ε, δ) accounting over many rounds, "
        "models correlated features that one-shot pure ε-DP marginals count twice; the library's single pass under "
        "pure ε recovers part of it (`share 0.9` ranks 0.775 and 0.782 without it, the defaults 0.780 and 0.794 with "
        "it). On census the 5 public "
        "bins cost DP-EBM 0.013 to 0.015 AUC."
    ),
]


def goal_table(table: pd.DataFrame) -> pd.DataFrame:
    """Per (dataset, ε, model): mean accuracy and AUC over seeds, the targets, and whether both goals are met."""
    mean = table.groupby(["dataset", "epsilon", "model"], sort=False)[["accuracy", "auc"]].mean().reset_index()
    ref = mean.pivot_table(index=["dataset", "epsilon"], columns="model", values=["accuracy", "auc"])
    target_acc = np.maximum(ref[("accuracy", "DP-EBM")], ref[("accuracy", "label")]) - 0.005
    mean = mean.join(target_acc.rename("target_accuracy"), on=["dataset", "epsilon"])
    mean = mean.join(ref[("auc", "DP-EBM")].rename("target_auc"), on=["dataset", "epsilon"])
    mean["meets"] = (mean.accuracy >= mean.target_accuracy) & (mean.auc >= mean.target_auc)
    return mean


def report(table: pd.DataFrame) -> str:
    seeds = sorted(table.seed.unique())
    goals = goal_table(table)
    models = [m for m in MODELS if m in set(goals.model)]
    checked = [m for m in CANDIDATES if m in models]
    lines = [
        "# Stand-ins for the held-out census and credit data (issue 23)",
        "",
        (
            f"Command: `python benchmarks/bench_stumps_proxies.py --seeds {len(seeds)}`. What and why: the docstrings of "
            "`benchmarks/bench_stumps_proxies.py` and `benchmarks/_bench_standins.py`. Means over seeds "
            f"{seeds[0]}..{seeds[-1]}; accuracy / ROC AUC. `label` is the label-leaf configuration of `probabilities.md` "
            "(1 tree, 20 bins, public depth). Goals (issue 23): AUC at least DP-EBM's, accuracy at least "
            "max(DP-EBM, label) − 0.005. Seeded research runs, not DP releases."
        ),
        "",
        "| dataset | ε | " + " | ".join(models) + " | goals met by |",
        "|---|---|" + "---|" * (len(models) + 1),
    ]
    for (name, eps), group in goals.groupby(["dataset", "epsilon"], sort=False):
        group = group.set_index("model")
        cells = [f"{group.loc[m].accuracy:.3f} / {group.loc[m].auc:.3f}" if m in group.index else "–" for m in models]
        winners = [m for m in checked if group.loc[m].meets]
        lines.append(f"| {name} | {eps:g} | " + " | ".join(cells) + f" | {', '.join(winners) or 'none'} |")
    n_cells = goals.groupby(["dataset", "epsilon"]).ngroups
    counts = goals[goals.model.isin(checked)].groupby("model", sort=False).meets.sum()
    lines += [
        "",
        "Cells (dataset, ε) in which a model meets both goals, of "
        + f"{n_cells}: "
        + ", ".join(f"{m} {int(counts[m])}" for m in checked)
        + ".",
        *READING,
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--datasets", default=",".join(STANDINS))
    parser.add_argument("--models", default=",".join(MODELS), help="models to fit; the others are read from the CSV")
    parser.add_argument("--out", default=str(RESULTS_DIR / "stumps_proxies.md"))
    parser.add_argument("--csv", default=str(CSV), help="per-seed rows, read and rewritten")
    args = parser.parse_args()
    csv = Path(args.csv)
    models = tuple(filter(None, args.models.split(",")))  # empty: report the CSV's rows only
    unknown = sorted(set(models) - set(MODELS))
    if unknown:
        parser.error(f"--models: unknown {unknown}; expected some of {list(MODELS)}")
    kept = pd.read_csv(csv) if csv.exists() else pd.DataFrame(columns=["dataset", "model", "seed"])
    fresh = pd.concat([kept.iloc[:0]] + [run(name, args.seeds, models) for name in args.datasets.split(",") if models])
    stale = kept.set_index(["dataset", "model"]).index.isin(fresh.set_index(["dataset", "model"]).index)
    table = pd.concat([kept[~stale], fresh], ignore_index=True)
    table = table[table.seed < args.seeds]
    table.sort_values(["dataset", "model", "epsilon", "seed"]).to_csv(csv, index=False, float_format="%.6f")
    text = report(table)
    Path(args.out).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
