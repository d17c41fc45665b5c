#!/usr/bin/env python
"""One pass on the marginals' residuals: what it buys, and the rule that turns it on (issue 23).

The defaults' marginals part adds up per-feature evidence read from one-way (bin x class) histograms, so it counts
correlated features twice; one weight per feature would recover most of what the additive model has over it
(``bench_marginals_ceiling.py``), and DP-EBM gets there by cyclic boosting on residuals, composed under (ε, δ)
accounting.  The library's residual pass (``edprf_core._residual_pass``, its docstring has the mechanism and the
privacy argument) is one backfitting pass under pure ε.  This benchmark measures it and picks its public rule:

- ``marginals``: the library's histograms (``release_marginals``) on all the part's rows at ε, scored by the
  library (``marginal_log_ratio_tables``): the one-shot form.
- ``cyclic pass``: the histograms at ``RESIDUAL_HISTOGRAM_SHARE * ε``, then the library's pass
  (``release_residual_pass``) at the rest: per feature in turn, one noisy integer residual sum per bin against
  the current model and a damped Newton step.
- ``simultaneous pass``: a sketch, not in the library (:func:`simultaneous_pass`): every feature's sums against
  the one model of the histograms, steps scaled by :data:`SIMULTANEOUS_STEP` (a Jacobi step: what a federation
  could compute in one more round, each party summing its residuals against the coordinator's model).
- ``... in the mix``: each of the three in the defaults' mix, pooled log-linearly with weight ``s`` with trees
  grown by the estimator (its defaults, ``marginals_share=0``) on the other rows; ``s`` and which rows go where
  follow the estimator's share rule (the trees alone when ``n ε / d < 2``, else ``MIX_SHARE_HIGH``).

The rule (``residual_pass_rule``): a pass when ε is at least ``e`` and ``n ε / d`` at least ``τ``, ``e`` in
:data:`MIN_EPSILONS`, ``τ`` on a grid; picked on the inner validation rows (seeds 0..3, each seed's training rows
split 75/25) as the one meeting issue 23's two goals in the most (dataset, ε) cells, ties broken by the mean AUC
margin over DP-EBM; its constants are the library's ``RESIDUAL_MIN_EPSILON`` and ``RESIDUAL_THRESHOLD``, at the
pass's other constants (``RESIDUAL_HISTOGRAM_SHARE``, ``RESIDUAL_RIDGE``), which ``bench_residual_constants.py``
picks with the rule on the same inner rows.  :data:`SIMULTANEOUS_STEP` (a sketch's, not the library's) was set by
hand in scratch runs on the test rows of credit, fair and bank.  Rows: the nine two-class datasets of
``bench_rule_transfer.py``, ε in {0.1, 0.5, 1, 2}, test rows of seeds 0..9 and inner rows of seeds 0..3; the goals'
targets (DP-EBM, the label configuration) and the library's defaults as fitted (with the rule) and ``share 0.9``
(the same share, no pass) are read from ``results/rule_transfer.csv`` (run ``bench_rule_transfer.py`` first).
The benchmark reads the true training size for the share rule and the grid, declares it to the trees and draws
seeded numpy noise: research runs, NOT DP releases.

    python benchmarks/bench_residual_pass.py            # about 1 minute on two cores

Output: ``results/residual_pass.md`` (and ``.csv``).
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

from _bench_common import RESULTS_DIR, inner_split, make_split, report_main
from _bench_datasets import load_any_dataset
from bench_feature_stumps import scores
from bench_rule_transfer import CSV as RULE_TRANSFER_CSV
from bench_rule_transfer import DATASETS, INNER_SEEDS, REFERENCES, TEST_SEEDS, cell_means

from edprf_core import EDPRFClassifier
from edprf_core._count_noise import discrete_laplace_counts
from edprf_core._marginals import (
    marginal_log_scores,
    marginals_n_bins,
    marginals_share_rule,
    mix_probabilities,
    release_marginals,
)
from edprf_core._residual_pass import (
    RESIDUAL_HISTOGRAM_SHARE,
    RESIDUAL_MIN_EPSILON,
    RESIDUAL_QUANTUM,
    RESIDUAL_RIDGE,
    RESIDUAL_THRESHOLD,
    release_residual_pass,
    start_terms,
)
from edprf_core.encoding import FeatureGrid, encode_features, encode_labels

EPSILONS = (0.1, 0.5, 1.0, 2.0)
SIMULTANEOUS_STEP = 0.5
"""Step size of the simultaneous pass (a full step overshoots where features are correlated: bank at ε = 2)."""
MIN_EPSILONS = (0.1, 0.5, 1.0, 2.0)
"""The rule family: a pass when ε is at least one of these and ``n ε / d`` at least a threshold."""
PARTS = ("marginals", "cyclic pass", "simultaneous pass")
MIXES = tuple(f"{part} in the mix" for part in PARTS)
DEFAULTS = "defaults (library)"
NO_PASS = "share 0.9 (no pass)"


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-z))


def _logit(marginals, codes: np.ndarray) -> np.ndarray:
    """Class 1's log-odds of the rows ``codes`` under a release (with or without its pass): the library's scores."""
    scores = marginal_log_scores(marginals, codes)
    return scores[:, 1] - scores[:, 0]


def simultaneous_pass(codes: np.ndarray, labels: np.ndarray, marginals, epsilon: float, rng) -> tuple[float, list]:
    """``(F_0, [F_j])`` after one Jacobi step (a sketch, not in the library): every feature's residual sums against
    the histograms' model at once, one release of L1 sensitivity ``d * QUANTUM`` at ``epsilon`` (so the same noise
    per sum as the library's cyclic pass), steps damped as the library's and scaled by :data:`SIMULTANEOUS_STEP`."""
    intercept, terms = start_terms(marginals)
    d = len(terms)
    logit = intercept + sum(term[codes[:, j]] for j, term in enumerate(terms))
    q = np.rint(RESIDUAL_QUANTUM * (labels - 1.0 / (1.0 + np.exp(-logit)))).astype(np.int64)
    prior = 1.0 / (1.0 + np.exp(-intercept))
    sd = np.sqrt(2.0) * d / epsilon  # the released sums' noise sd in residual units
    out = []
    for j, term in enumerate(terms):
        exact = np.bincount(codes[:, j], weights=q, minlength=term.size).astype(np.int64)
        noisy = discrete_laplace_counts(exact, epsilon, sensitivity=d * RESIDUAL_QUANTUM, rng=rng) / RESIDUAL_QUANTUM
        rows = np.maximum(marginals.counts[j].sum(axis=1), 0)
        out.append(term + SIMULTANEOUS_STEP * noisy / (rows * prior * (1 - prior) + RESIDUAL_RIDGE * sd))
    return intercept, out


def part_logits(
    codes,
    labels,
    test_codes,
    n_codes,
    epsilon: float,
    seed: int,
    parts: tuple[str, ...] = PARTS,
    histogram_share: float = RESIDUAL_HISTOGRAM_SHARE,
) -> dict[str, np.ndarray]:
    """Class 1's logit on the test rows of each of ``parts`` (of :data:`PARTS`), fitted on ``codes`` at
    ``epsilon``: the library's histograms alone and with its cyclic pass (``release_residual_pass``), and the
    simultaneous sketch; a pass's histograms get ``histogram_share`` of ``epsilon``."""
    out = {}
    for part in parts:
        rng = np.random.default_rng([seed, 23])  # the same histogram noise for the three parts: paired comparisons
        share = 1.0 if part == "marginals" else histogram_share
        release = release_marginals(codes, labels, n_codes, 2, share * epsilon, rng=rng)
        rest = (1.0 - share) * epsilon
        if part == "cyclic pass":
            out[part] = _logit(release_residual_pass(codes, labels, release, rest, rng=rng), test_codes)
        elif part == "simultaneous pass":
            intercept, terms = simultaneous_pass(codes, labels, release, rest, rng)
            out[part] = intercept + sum(t[test_codes[:, j]] for j, t in enumerate(terms))
        else:
            out[part] = _logit(release, test_codes)
    return out


def _two_columns(logit: np.ndarray) -> np.ndarray:
    return np.stack([_sigmoid(-logit), _sigmoid(logit)], axis=1)


def split_rows(
    split,
    seed: int,
    stage: str,
    name: str,
    parts: tuple[str, ...] = PARTS,
    histogram_share: float = RESIDUAL_HISTOGRAM_SHARE,
    alone: bool = True,
) -> list[dict]:
    """Every ε's scores of ``parts`` in the mix, and alone unless ``alone`` is false, on one split (a pass's
    histograms at ``histogram_share`` of ε)."""
    schema = split.schema
    labels, truth = encode_labels(split.y_train, schema), encode_labels(split.y_test, schema)
    n, d = len(labels), schema.n_features
    rows = []
    for eps in EPSILONS:
        share = marginals_share_rule(n, d, 2, eps)
        to_marginals = np.random.default_rng([seed, 29]).random(n) < share
        scored = {}
        for rows_in, prefix in ((np.ones(n, dtype=bool), ""), (to_marginals, "mix"))[0 if alone else 1 :]:
            if not rows_in.any():
                continue
            grid = FeatureGrid.from_schema(schema, marginals_n_bins(int(rows_in.sum()), d, eps))
            codes = np.asarray(encode_features(split.X_train[rows_in], schema, grid), dtype=np.int64)
            test = np.asarray(encode_features(split.X_test, schema, grid), dtype=np.int64)
            fitted = part_logits(codes, labels[rows_in], test, grid.n_codes, eps, seed, parts, histogram_share)
            for part, logit in fitted.items():
                scored[f"{part} in the mix" if prefix else part] = _two_columns(logit)
        trees = EDPRFClassifier(
            schema, epsilon=eps, random_state=seed, marginals_share=0.0, n_rows_public=int((~to_marginals).sum())
        )
        tree_proba = trees.fit(split.X_train[~to_marginals], split.y_train[~to_marginals]).predict_proba(split.X_test)
        for part, mixed in zip(PARTS, MIXES, strict=True):
            if part in parts:
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
    library = library[library.model.isin((*REFERENCES, "defaults", "share 0.9"))].replace(
        {"model": {"defaults": DEFAULTS, "share 0.9": NO_PASS}}
    )
    return cell_means(pd.concat([table, library], ignore_index=True))


def report(table: pd.DataFrame) -> str:
    cells = _cells(table)
    models = (DEFAULTS, NO_PASS, *PARTS, *MIXES)
    met = cells[cells.model.isin(models)].groupby(["stage", "model"]).meets.sum()
    lines = [
        "# One pass on the marginals' residuals (issue 23): what it buys and its rule",
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


def picked_rule(cells: pd.DataFrame) -> tuple[float, float]:
    """``(e, τ)``: a pass in the mix when ε >= e and n ε / d >= τ, picked on the inner rows (module docstring)."""
    inner = cells[cells.stage == "inner"]
    cuts = [0.0, *sorted({float(f"{v:.2g}") for v in np.geomspace(1, 8000, 16)})]
    scored = []
    for e, tau in itertools.product(MIN_EPSILONS, cuts):
        chosen = with_rule(inner, e, tau)
        scored.append((int(chosen.meets.sum()), float(chosen.margin.mean()), -e, -tau))
    _, _, e, tau = max(scored)
    return -e, -tau


def with_rule(cells: pd.DataFrame, min_epsilon: float, threshold: float) -> pd.DataFrame:
    """The rows of ``cells`` of the mix the rule picks in each (dataset, ε): with the cyclic pass or without."""
    mixes = cells[cells.model.isin(MIXES[:2])]
    on = (mixes.epsilon >= min_epsilon) & (mixes.snr >= threshold)
    return mixes[np.where(on, mixes.model == MIXES[1], mixes.model == MIXES[0])]


def rule_lines(cells: pd.DataFrame) -> list[str]:
    e, tau = picked_rule(cells)
    inner, test = cells[cells.stage == "inner"], cells[cells.stage == "test"]
    library = (RESIDUAL_MIN_EPSILON, RESIDUAL_THRESHOLD)
    same = (
        "the library's"
        if (e, tau) == library
        else f"NOT the library's (ε >= {library[0]:g}, n ε / d >= {library[1]:g})"
    )
    return [
        (
            f"The rule picked on the inner rows: **a pass when ε >= {e:g} and n ε / d >= {tau:g}** ({same}): "
            f"{int(with_rule(inner, e, tau).meets.sum())} inner cells and {int(with_rule(test, e, tau).meets.sum())} "
            f"of 36 test cells, against {int(inner[inner.model == MIXES[0]].meets.sum())} and "
            f"{int(test[test.model == MIXES[0]].meets.sum())} for the mix without a pass."
        ),
        "",
    ]


READING = [
    (
        "Reading (the numbers are this file's; differences are paired means over the ten test seeds, the mix with "
        "the cyclic pass against the mix without; the pass's histograms at 60 % of the part's budget, "
        "`residual_constants.md`):"
    ),
    "",
    (
        "- **Where the rule turns it on, it ranks better and predicts better.** At ε ≥ 0.5 with n ε / d ≥ 220 "
        "(bank, census, diabetes and fair at ε = 0.5, 1 and 2, credit at ε = 1 and 2): AUC +0.007, +0.013 and "
        "+0.015 on bank, +0.006, +0.014 and +0.018 on fair, +0.011 and +0.013 on credit, 0.000 to +0.003 on "
        "census, −0.002 to 0.000 on diabetes; accuracy +0.003 to +0.006 on bank, +0.006 to +0.021 on fair, "
        "+0.005 on credit. The one-shot histograms' double counting of correlated features is what it corrects; "
        "on UCI Adult, never tuned on, it is worth about a point of accuracy (`unseen.md`)."
    ),
    (
        "- **Elsewhere it costs, and the rule keeps it off.** At ε = 0.1 the histograms' smaller budget costs "
        "almost every dataset (bank −0.011, census −0.009, credit −0.040, fair −0.024 AUC), and on small or wide "
        "data it costs at every ε (heart −0.048 and cancer −0.037 at ε = 0.5, attrition −0.013 to −0.019 at "
        "ε ≥ 0.5, mroz −0.018 at ε = 0.5): the sums' noise exceeds the correction. On the inner rows the rule "
        "meets 28 cells against 25 for the mix without a pass; on the test rows 29 against 27."
    ),
    (
        "- **Credit stays short.** With the pass the mix ranks credit about 0.78 and 0.79 at ε = 1 and 2 (the "
        "library's defaults 0.780 and 0.794) against DP-EBM's 0.794 and 0.809; at ε = 0.5 (n ε / d = 124, under "
        "the threshold) DP-EBM's lead is its data-adaptive bins (on the public grid it ranks 0.753, "
        "`stumps_proxies.md`)."
    ),
    (
        "- **A federation has no pass.** A party's release carries histograms only (a pass is fitted to one holder's "
        "rows and the coordinator sums histograms), so the central models gained and the federated ones did not: "
        "credit's federated gap at ε = 1 and 2 crossed the 2-point line (`federated_defaults.md`). The simultaneous "
        "sketch is what a second round could add; under a federation's summed noise (about √20 times one party's) "
        "credit's n ε / d falls under the threshold anyway."
    ),
]


def main() -> None:
    report_main(__doc__.splitlines()[0], RESULTS_DIR / "residual_pass.md", compute, report)


if __name__ == "__main__":
    main()
