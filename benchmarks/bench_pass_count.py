#!/usr/bin/env python
"""Would more backfitting passes at the same budget rank better than the library's one? (issue 23)

Credit's ROC AUC at ε ≥ 1 trails DP-EBM's by about 0.014 (``goal_significance.md``), which fits its additive model
by many rounds of cyclic boosting composed under (ε, δ).  The library's residual pass
(``edprf_core._residual_pass``) is one cyclic backfitting pass under pure ε.  Under pure ε more passes split the
same budget, each pass's sums get proportionally more noise, and the ridge-damped steps (damping in units of that
noise) move less: this benchmark measures whether the corrections still add up.

- ``1 pass`` (the library): histograms at ``RESIDUAL_HISTOGRAM_SHARE`` (0.6) of ε, one pass at the rest;
- ``k passes, share h``: histograms at ``h`` of ε, then ``k`` cyclic passes at ``(1 - h) ε / k`` each, every step
  the library's (``_Terms.step``: the same quantum, ridge and noise), each pass starting from the model the last
  one left; ``k`` in {2, 3}, ``h`` in {0.5, 0.6}.

Each is ε-DP on the part's rows by the pass's own argument (adaptive sequential composition over the ``k d``
releases).  The part alone is scored (its log-odds on the test rows; AUC only, the ranking the goal is about), on
all the training rows (no trees, no mix), on the public grid of ``marginals_n_bins``.  Rows: the (dataset, ε) cells
of the nine two-class datasets of ``bench_rule_transfer.py`` where the library's rule runs a pass (ε ≥ 0.5, n ε / d
≥ 220); inner validation rows of seeds 0..3 (to choose on) and test rows of seeds 0..9.  Seeded numpy noise:
research runs, NOT DP releases.

    python benchmarks/bench_pass_count.py            # about 20 seconds on two cores

Output: ``results/pass_count.md`` (and ``.csv``).
"""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.metrics import roc_auc_score

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _bench_common import RESULTS_DIR, inner_split, make_split, report_main, rows_of_jobs
from _bench_datasets import load_any_dataset
from bench_rule_transfer import DATASETS, INNER_SEEDS, TEST_SEEDS

from edprf_core._count_noise import discrete_laplace_counts
from edprf_core._encoding import FeatureGrid, encode_features
from edprf_core._marginals import MARGINALS_SHRINKAGE, marginals_n_bins, release_marginals
from edprf_core._residual_pass import (
    RESIDUAL_HISTOGRAM_SHARE,
    RESIDUAL_QUANTUM,
    _Terms,
    additive_terms,
    release_residual_pass,
    residual_pass_rule,
)
from edprf_core.encoding import encode_labels

EPSILONS = (0.5, 1.0, 2.0)
SETTINGS = {
    "1 pass (library)": (RESIDUAL_HISTOGRAM_SHARE, 1),
    "2 passes, share 0.6": (0.6, 2),
    "2 passes, share 0.5": (0.5, 2),
    "3 passes, share 0.5": (0.5, 3),
}


def passes_logit(codes, labels, test_codes, n_codes, epsilon, share, passes, rng) -> np.ndarray:
    """The part's class-1 log-odds of the test rows after ``passes`` cyclic passes (the library's steps).

    One pass is the library's ``release_residual_pass``.  It refuses histograms that already carry a pass, so more
    passes run its per-feature loop here (residual, quantum, bin sums, noise, ``_Terms.step``), each pass from
    the model the last one left; its clamp of the sums to the release range, which honest sums never reach, is
    left out.
    """
    marginals = release_marginals(codes, labels, n_codes, 2, share * epsilon, rng=rng)
    if passes == 1:
        model = release_residual_pass(codes, labels, marginals, (1 - share) * epsilon, rng=rng)
        log_prior, terms = additive_terms(model)
        intercept = float(log_prior[1] - log_prior[0])
    else:
        model = _Terms(marginals, MARGINALS_SHRINKAGE)
        pass_epsilon, d, quantum = (1 - share) * epsilon / passes, len(n_codes), RESIDUAL_QUANTUM
        logit = model.intercept + sum(term[codes[:, j]] for j, term in enumerate(model.terms))
        for _, j in itertools.product(range(passes), range(d)):
            residual = labels - 1.0 / (1.0 + np.exp(-logit))
            q = np.clip(np.rint(quantum * residual), -quantum, quantum).astype(np.int64)
            exact = np.bincount(codes[:, j], weights=q, minlength=n_codes[j]).astype(np.int64)
            noisy = discrete_laplace_counts(exact, pass_epsilon / d, model.sensitivity * quantum, rng=rng)
            logit = logit + model.step(j, noisy, pass_epsilon, quantum)[codes[:, j]]
        intercept, terms = model.intercept, model.terms
    return intercept + sum(term[test_codes[:, j]] for j, term in enumerate(terms))


def dataset_rows(job: tuple[str, str]) -> list[dict]:
    name, data_dir = job
    X, y, schema = load_any_dataset(name, data_dir)
    rows = []
    for seed in TEST_SEEDS:
        outer = make_split(X, y, schema, seed, dataset=name)
        stages = [("test", outer)] + ([("inner", inner_split(outer, seed))] if seed in INNER_SEEDS else [])
        for (stage, split), eps in itertools.product(stages, EPSILONS):
            n, d = len(split.y_train), schema.n_features
            if not residual_pass_rule(n, d, schema.n_classes, eps):
                continue
            grid = FeatureGrid.from_schema(schema, marginals_n_bins(n, d, eps))
            codes, test_codes = (
                encode_features(split.X_train, schema, grid),
                encode_features(split.X_test, schema, grid),
            )
            labels, truth = encode_labels(split.y_train, schema), encode_labels(split.y_test, schema)
            for model, (share, passes) in SETTINGS.items():
                rng = np.random.default_rng([seed, int(eps * 10), 31])
                logit = passes_logit(codes, labels, test_codes, grid.n_codes, eps, share, passes, rng)
                rows.append(
                    {"dataset": name, "stage": stage, "epsilon": eps, "seed": seed, "model": model}
                    | {"auc": float(roc_auc_score(truth, logit))}
                )
    print(f"{name} done", file=sys.stderr, flush=True)
    return rows


def compute(data_dir: str, jobs: int) -> pd.DataFrame:
    return rows_of_jobs(dataset_rows, [(name, data_dir) for name in DATASETS], jobs)


def report(table: pd.DataFrame) -> str:
    means = table.groupby(["stage", "dataset", "epsilon", "model"], sort=False).auc.mean().unstack("model")
    means = means[list(SETTINGS)]
    library = means["1 pass (library)"]
    lines = [
        "# More backfitting passes at the same budget (issue 23)",
        "",
        (
            "Command: `python benchmarks/bench_pass_count.py`. What and why: its docstring. The marginals part "
            f"alone, ROC AUC, means over inner rows of seeds {INNER_SEEDS[0]}..{INNER_SEEDS[-1]} and test rows of "
            f"seeds {TEST_SEEDS[0]}..{TEST_SEEDS[-1]}, in the cells where the library's rule runs a pass. Seeded "
            "research runs, not DP releases."
        ),
        "",
        "| model | inner cells above the library's | mean inner AUC change | test cells above | mean test AUC change |",
        "|---|---|---|---|---|",
    ]
    for model in list(SETTINGS)[1:]:
        change = means[model] - library
        inner, test = change.loc["inner"], change.loc["test"]
        lines.append(
            f"| {model} | {(inner > 0).sum()} of {len(inner)} | {inner.mean():+.4f} | {(test > 0).sum()} of "
            f"{len(test)} | {test.mean():+.4f} |"
        )
    lines += ["", "Per cell (AUC):", "", "| stage | dataset | ε | " + " | ".join(SETTINGS) + " |"]
    lines.append("|" + "---|" * (3 + len(SETTINGS)))
    for (stage, name, eps), row in means.iterrows():
        lines.append(f"| {stage} | {name} | {eps:g} | " + " | ".join(f"{v:.4f}" for v in row) + " |")
    lines += READING
    return "\n".join(lines) + "\n"


READING = [
    "",
    "Reading (the numbers are this file's):",
    "",
    (
        "- **One pass stays.** Splitting the pass's budget over two or three passes lowers the part's mean AUC on "
        "the inner rows (-0.0023 to -0.0055) and on the test rows (-0.0016 to -0.0035); the gains are within "
        "0.002 (bank, diabetes and census at ε = 2), the losses up to 0.02 (credit at ε = 2: 0.800 to 0.784-0.793 "
        "on the test rows, 0.810 to 0.788-0.801 on the inner ones). Under pure ε each pass's sums carry k times "
        "the noise, and the ridge damps each step by that noise: the later passes add less than the first one "
        "loses."
    ),
    (
        "- **What this says about credit.** DP-EBM reaches its ranking by many rounds whose noise composes under "
        "(ε, δ) (its privacy loss grows with the square root of the rounds); a pure-ε pass cannot be repeated that "
        "cheaply. Credit's AUC gap to DP-EBM at ε ≥ 1 (`goal_significance.md`) is not closed by more passes."
    ),
]


if __name__ == "__main__":
    report_main(__doc__.splitlines()[0], RESULTS_DIR / "pass_count.md", compute, report)
