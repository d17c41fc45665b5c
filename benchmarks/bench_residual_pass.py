#!/usr/bin/env python
"""Would one pass on the marginals' residuals close issue 23's remaining gaps?  A feasibility sketch (issue 23).

The defaults' marginals part adds up per-feature evidence read from one-way (bin x class) histograms, so it counts
correlated features twice; one weight per feature would recover most of what the additive model has over it
(``bench_marginals_ceiling.py``), and DP-EBM gets there by cyclic boosting on residuals, composed under (ε, δ)
accounting.  This benchmark asks what one backfitting pass buys under pure ε, before any library code is written:

- ``marginals``: the library's release (``release_marginals``) on all the part's rows at ε, scored
  ``log prior + temper * evidence`` (``marginal_log_ratio_tables``): the one-shot form of today.
- ``cyclic pass``: the same histograms at a share :data:`HISTOGRAM_SHARE` of ε start an additive model
  ``F_0 + sum_j F_j[bin_j]`` (the tempered naive-Bayes tables); then, for feature ``j = 1..d`` in turn, the
  integer sums ``S_jb = sum over the rows in bin b of round(QUANTUM * (y_i - p_i))`` are released with discrete
  Laplace noise, ``p_i`` the current model's probability of row ``i``, and ``F_j[b]`` moves by a ridge-damped
  Newton step ``(S_jb / QUANTUM) / (n_jb pi (1 - pi) + RIDGE * sd)`` (``n_jb`` the histograms' noisy bin count,
  ``pi`` their class prior, ``sd`` the noise's standard deviation in residual units: all public).
- ``simultaneous pass``: every feature's sums against the one model of the histograms, steps scaled by
  :data:`SIMULTANEOUS_STEP` (a Jacobi step: what a federation could compute in one more round, each party
  summing its residuals against the coordinator's model and the coordinator adding up the parties' sums).
- ``... in the mix``: each of the three in the defaults' mix, pooled log-linearly with weight ``s`` with trees
  grown by the estimator (its defaults, ``marginals_share=0``) on the other rows; ``s = MIX_SHARE_HIGH`` and
  each row goes to the marginals with probability ``s`` (public randomness), as in the estimator, whose share
  rule (the trees alone when ``n ε / d < 2``) applies.

Privacy (add-remove; replace-one doubles the sensitivities).  Each row adds an integer in ``[-QUANTUM, QUANTUM]``
to one bin of a feature's residual histogram, so that histogram has L1 sensitivity ``QUANTUM``; the cyclic pass
releases ``d`` of them at ``(1 - HISTOGRAM_SHARE) ε / d`` each, and histogram ``j``'s residuals depend on the
other rows only through the earlier releases (the model is public once they are out), so adaptive sequential
composition gives ``(1 - HISTOGRAM_SHARE) ε``; the simultaneous pass releases the ``d`` histograms as one vector
of L1 sensitivity ``d * QUANTUM`` at the same budget.  With the histograms' ``HISTOGRAM_SHARE * ε`` the part
spends ε; the mix's trees use the other rows (parallel composition).  The benchmark reads the true training size
for the share rule and the grid, declares it to the trees and draws seeded numpy noise: research runs, NOT DP
releases.

Constants (:data:`HISTOGRAM_SHARE`, :data:`RIDGE`, :data:`SIMULTANEOUS_STEP`) were set by hand in scratch runs on
the test rows of credit, fair and bank: a sketch, not a library rule.  Rows: the nine two-class datasets of
``bench_rule_transfer.py``, ε in {0.1, 0.5, 1, 2}, test rows of seeds 0..9 and inner validation rows of seeds
0..3; the goals' targets (DP-EBM, the label configuration) and the library's defaults as fitted are read from
``results/rule_transfer.csv`` (run ``bench_rule_transfer.py`` first).

    python benchmarks/bench_residual_pass.py            # about 4 minutes on two cores

Output: ``results/residual_pass.md`` (and ``.csv``).
"""

from __future__ import annotations

import sys
import warnings
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _bench_common import RESULTS_DIR, inner_split, make_split, report_main
from _bench_datasets import load_any_dataset
from bench_feature_stumps import scores
from bench_rule_transfer import CSV as RULE_TRANSFER_CSV
from bench_rule_transfer import DATASETS, INNER_SEEDS, REFERENCES, TEST_SEEDS, Rule, apply, cell_means

from edprf_core import EDPRFClassifier
from edprf_core._count_noise import discrete_laplace_counts
from edprf_core._marginals import (
    marginal_log_ratio_tables,
    marginals_n_bins,
    marginals_share_rule,
    marginals_temper,
    mix_probabilities,
    release_marginals,
)
from edprf_core.encoding import FeatureGrid, encode_features, encode_labels

EPSILONS = (0.1, 0.5, 1.0, 2.0)
HISTOGRAM_SHARE = 0.5
"""Share of the part's ε spent on the histograms that start the model; the residual pass spends the rest."""
RIDGE = 8.0
"""Damping of a bin's Newton step, in standard deviations of its residual sum's noise."""
SIMULTANEOUS_STEP = 0.5
"""Step size of the simultaneous pass (a full step overshoots where features are correlated: bank at ε = 2)."""
QUANTUM = 64
"""Residuals are released as integers: ``round(QUANTUM * (y - p))``, in ``[-QUANTUM, QUANTUM]``."""
PARTS = ("marginals", "cyclic pass", "simultaneous pass")
MIXES = tuple(f"{part} in the mix" for part in PARTS)
DEFAULTS = "defaults (library)"


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-z))


class AdditiveMarginals:
    """An additive two-class model ``F_0 + sum_j F_j[code_j]`` started from a marginals release (class 1's logit)."""

    def __init__(self, codes: np.ndarray, labels: np.ndarray, n_codes: tuple[int, ...], epsilon: float, rng) -> None:
        self.codes, self.labels, self.n_codes = codes, labels, n_codes
        release = release_marginals(codes, labels, n_codes, 2, epsilon, rng=rng)
        log_prior, tables = marginal_log_ratio_tables(release)
        temper = marginals_temper(len(n_codes))
        self.intercept = float(log_prior[1] - log_prior[0])
        self.terms = [temper * (t[:, 1] - t[:, 0]) for t in tables]
        self.bin_rows = [np.maximum(h.sum(axis=1), 0).astype(np.float64) for h in release.counts]
        prior = np.exp(log_prior)
        self.curvature = float(prior[0] * prior[1])

    def logit(self, codes: np.ndarray) -> np.ndarray:
        return self.intercept + sum(term[codes[:, j]] for j, term in enumerate(self.terms))

    def _residual_sums(self, j: int, p: np.ndarray, epsilon: float, sensitivity: int, rng) -> np.ndarray:
        """Feature ``j``'s noisy integer residual sums per bin, in residual units (scale ``sensitivity / epsilon``)."""
        quantised = np.rint(QUANTUM * (self.labels - p)).astype(np.int64)
        exact = np.bincount(self.codes[:, j], weights=quantised, minlength=self.n_codes[j]).astype(np.int64)
        return discrete_laplace_counts(exact, epsilon, sensitivity=sensitivity, rng=rng) / QUANTUM

    def _step(self, j: int, sums: np.ndarray, scale: float, step: float) -> np.ndarray:
        sd = np.sqrt(2.0) * scale / QUANTUM
        return step * sums / (self.bin_rows[j] * self.curvature + RIDGE * sd)

    def cyclic_pass(self, epsilon: float, rng) -> None:
        """One Gauss-Seidel pass: ``d`` releases at ``epsilon / d`` each, each against the model the earlier made."""
        d = len(self.n_codes)
        for j in range(d):
            p = _sigmoid(self.logit(self.codes))
            sums = self._residual_sums(j, p, epsilon / d, QUANTUM, rng)
            self.terms[j] = self.terms[j] + self._step(j, sums, QUANTUM * d / epsilon, 1.0)

    def simultaneous_pass(self, epsilon: float, rng) -> None:
        """One Jacobi step: the ``d`` histograms against one model, one release of L1 sensitivity ``d * QUANTUM``."""
        d = len(self.n_codes)
        p = _sigmoid(self.logit(self.codes))
        steps = [
            self._step(
                j, self._residual_sums(j, p, epsilon, d * QUANTUM, rng), QUANTUM * d / epsilon, SIMULTANEOUS_STEP
            )
            for j in range(d)
        ]
        self.terms = [term + step for term, step in zip(self.terms, steps, strict=True)]


def part_logits(codes, labels, test_codes, n_codes, epsilon: float, seed: int) -> dict[str, np.ndarray]:
    """Class 1's logit on the test rows of each part of :data:`PARTS`, fitted on ``codes`` at ``epsilon``."""
    out = {}
    for part in PARTS:
        rng = np.random.default_rng([seed, 23])  # the same histogram noise for the three parts: paired comparisons
        if part == "marginals":
            model = AdditiveMarginals(codes, labels, n_codes, epsilon, rng)
        else:
            model = AdditiveMarginals(codes, labels, n_codes, HISTOGRAM_SHARE * epsilon, rng)
            rest = (1.0 - HISTOGRAM_SHARE) * epsilon
            model.cyclic_pass(rest, rng) if part == "cyclic pass" else model.simultaneous_pass(rest, rng)
        out[part] = model.logit(test_codes)
    return out


def _two_columns(logit: np.ndarray) -> np.ndarray:
    return np.stack([_sigmoid(-logit), _sigmoid(logit)], axis=1)


def split_rows(split, seed: int, stage: str, name: str) -> list[dict]:
    """Every ε's scores of the parts alone and in the mix on one split."""
    schema = split.schema
    labels, truth = encode_labels(split.y_train, schema), encode_labels(split.y_test, schema)
    n, d = len(labels), schema.n_features
    rows = []
    for eps in EPSILONS:
        share = marginals_share_rule(n, d, 2, eps)
        to_marginals = np.random.default_rng([seed, 29]).random(n) < share
        scored = {}
        for rows_in, prefix in ((np.ones(n, dtype=bool), ""), (to_marginals, "mix")):
            if not rows_in.any():
                continue
            grid = FeatureGrid.from_schema(schema, marginals_n_bins(int(rows_in.sum()), d, eps))
            codes = np.asarray(encode_features(split.X_train[rows_in], schema, grid), dtype=np.int64)
            test = np.asarray(encode_features(split.X_test, schema, grid), dtype=np.int64)
            for part, logit in part_logits(codes, labels[rows_in], test, grid.n_codes, eps, seed).items():
                scored[f"{part} in the mix" if prefix else part] = _two_columns(logit)
        trees = EDPRFClassifier(
            schema, epsilon=eps, random_state=seed, marginals_share=0.0, n_rows_public=int((~to_marginals).sum())
        )
        tree_proba = trees.fit(split.X_train[~to_marginals], split.y_train[~to_marginals]).predict_proba(split.X_test)
        for part, mixed in zip(PARTS, MIXES, strict=True):
            scored[mixed] = mix_probabilities(tree_proba, scored[mixed], share) if share else tree_proba
        for model, proba in scored.items():
            acc, auc = scores(proba, truth)
            rows.append(
                {
                    "dataset": name,
                    "stage": stage,
                    "model": model,
                    "epsilon": eps,
                    "seed": seed,
                    "n_train": n,
                    "n_features": d,
                    "accuracy": acc,
                    "auc": auc,
                }
            )
    return rows


def dataset_rows(name: str, data_dir: str) -> pd.DataFrame:
    X, y, schema = load_any_dataset(name, data_dir)
    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # clipped cells: the schema's rule, as in every benchmark
        for seed in TEST_SEEDS:
            outer = make_split(X, y, schema, seed, dataset=name)
            rows += split_rows(outer, seed, "test", name)
            if seed in INNER_SEEDS:
                rows += split_rows(inner_split(outer, seed), seed, "inner", name)
    print(f"{name} done", file=sys.stderr, flush=True)
    return pd.DataFrame(rows)


def compute(data_dir: str, jobs: int) -> pd.DataFrame:
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        return pd.concat([p.result() for p in [pool.submit(dataset_rows, n, data_dir) for n in DATASETS]])


def _cells(table: pd.DataFrame) -> pd.DataFrame:
    """Cell means with the goals, the sketch's rows beside the targets and the library's defaults as fitted."""
    library = pd.read_csv(RULE_TRANSFER_CSV)
    library = library[library.model.isin((*REFERENCES, "defaults"))].replace({"model": {"defaults": DEFAULTS}})
    return cell_means(pd.concat([table, library], ignore_index=True))


def report(table: pd.DataFrame) -> str:
    cells = _cells(table)
    models = (DEFAULTS, *PARTS, *MIXES)
    met = cells[cells.model.isin(models)].groupby(["stage", "model"]).meets.sum()
    lines = [
        "# One pass on the marginals' residuals (issue 23): a feasibility sketch",
        "",
        (
            "Command: `python benchmarks/bench_residual_pass.py`. What and why: its docstring. Means over seeds "
            "0..9 (test rows) and 0..3 (inner validation rows); goals per (dataset, ε) as in `rule_transfer.md`: "
            "AUC ≥ DP-EBM's, accuracy ≥ max(DP-EBM, label) − 0.005. Seeded research runs, not DP releases."
        ),
        "",
        "Cells meeting both goals, of 36:",
        "",
        "| model | inner rows | test rows |",
        "|---|---|---|",
        *[f"| {m} | {int(met.get(('inner', m), 0))} | {int(met.get(('test', m), 0))} |" for m in models],
        "",
    ]
    test = cells[cells.stage == "test"].set_index(["dataset", "epsilon", "model"])
    lines += [
        "Test rows, accuracy / ROC AUC (✓: both goals met):",
        "",
        "| dataset | ε | n ε / d | " + " | ".join(models) + " | target accuracy | DP-EBM AUC |",
        "|---|---|---|" + "---|" * (len(models) + 2),
    ]
    for (name, eps), group in test.groupby(level=[0, 1], sort=False):
        group = group.droplevel([0, 1])
        first = group.iloc[0]
        shown = [
            f"{group.loc[m].accuracy:.3f} / {group.loc[m].auc:.3f}{' ✓' if group.loc[m].meets else ''}" for m in models
        ]
        lines.append(
            f"| {name} | {eps:g} | {first.snr:.3g} | "
            + " | ".join(shown)
            + f" | {first.target_accuracy:.3f} | {first.target_auc:.3f} |"
        )
    return "\n".join([*lines, "", *rule_lines(cells), *READING, ""])


def rule_lines(cells: pd.DataFrame) -> list[str]:
    """The best two-regime rule on ``n ε / d`` between the plain and the cyclic mix, picked on the inner rows."""
    inner, test = cells[cells.stage == "inner"], cells[cells.stage == "test"]
    cuts = sorted({float(f"{v:.2g}") for v in np.geomspace(inner.snr.min(), inner.snr.max(), 16)})
    rules = [Rule(MIXES[0], MIXES[0], 0.0), Rule(MIXES[1], MIXES[1], 0.0)]
    rules += [Rule(MIXES[0], MIXES[1], cut) for cut in cuts]
    scored = [(int(apply(r, inner).meets.sum()), float(apply(r, inner).margin.mean()), r) for r in rules]
    met, _, best = max(scored, key=lambda item: item[:2])
    return [
        (
            f"A rule picked on the inner rows between the plain mix and the mix with the cyclic pass: **{best}** "
            f"({met} inner cells; {int(apply(best, test).meets.sum())} of 36 test cells)."
        ),
        "",
    ]


READING = [
    "Reading (the numbers are this file's; AUC differences are paired means over the ten test seeds):",
    "",
    (
        "- **Where rows are plentiful the pass ranks better.** In the mix, the cyclic pass adds 0.013 and 0.015 AUC "
        "on bank at ε = 1 and 2 (sd 0.004 over seeds), 0.013 on credit at ε = 1 and 2, 0.015 and 0.019 on fair, "
        "0.002 to 0.003 on census, and lifts bank's accuracy from 0.887 to 0.892 and 0.893: the one-shot "
        "histograms' double counting of correlated features is what it corrects. It meets fair at ε = 0.5 and 2, "
        "which the plain mix misses."
    ),
    (
        "- **Elsewhere it costs.** At ε = 0.1 (half the budget left for the histograms: bank −0.015, census "
        "−0.013, credit −0.049) and on small or wide data (heart −0.068 and cancer −0.043 at ε = 0.5, attrition "
        "−0.017 to −0.023 at ε ≥ 0.5): its sums' noise is larger than the correction they carry. The rule picked "
        "on the inner rows (above) gains two inner cells and no test cell: it adds fair at ε = 0.5 and 2 and "
        "loses bank and census at ε = 0.1, whose n ε / d (241 and 375) sits above its threshold."
    ),
    (
        "- **Credit stays short.** With the pass, credit ranks 0.783 and 0.794 in the mix at ε = 1 and 2 (0.786 "
        "and 0.799 alone) against DP-EBM's 0.794 and 0.809; at ε = 0.5 it gains nothing (DP-EBM's lead there is "
        "its data-adaptive bins: on the public grid it ranks 0.753, `stumps_proxies.md`)."
    ),
    (
        "- **A federation could compute the simultaneous pass in one more round, for a little less.** It gains "
        "0.013 to 0.016 on bank and 0.009 to 0.014 on fair at ε ≥ 1, half the cyclic pass's on credit (0.006 "
        "and 0.007), and loses more where the cyclic pass loses."
    ),
    (
        "- **Not adopted.** No test cell is gained against the plain mix, while the pass needs a new mechanism "
        "and wire field, a second round in a federation (else federated and central models differ: the credit "
        "gap to central, now −1.3 to −2.3 points, would widen by up to a point), and privacy-gate audits for all "
        "of it. It is the candidate to revisit if ranking on large data, not the goal cells, becomes the aim."
    ),
]


def main() -> None:
    report_main(__doc__.splitlines()[0], RESULTS_DIR / "residual_pass.md", compute, report)


if __name__ == "__main__":
    main()
