#!/usr/bin/env python
"""Does the marginals part over-predict the majority because its prior outweighs its shrunk evidence? (issue 23)

``intercept_oracle.md`` shows the defaults' one resolved accuracy miss, breast cancer at ε = 0.5, to be a
threshold: the fits rank well (AUC 0.965) and over-predict the majority class, and the oracle's shift is toward
the minority wherever it matters (cancer, heart at ε = 0.1, attrition, credit at ε = 0.1).  A cause suggested by
the estimator (``edprf_core._marginals.naive_bayes_tables``): each bin's class distribution is shrunk toward the
prior by a pseudo-count ``a`` (four noise scales per class), which scales a bin's log-ratio by about ``λ_b =
m_b / (m_b + a)`` (``m_b`` the bin's noisy mass), while the class log prior keeps its full weight.  With every
term attenuated by ``λ`` and the intercept not, the decision ``λ e + log prior > 0`` moves toward the majority by
a factor ``1 / λ``.  The candidates rescale the log prior alone, from the release alone (post-processing, no ε):

- ``defaults``: the library as it is (``EDPRFClassifier(schema, epsilon=ε)``, seeded);
- ``prior × λ``: the log prior times ``λ̄``, the mean over features of the mass-weighted ``λ_b``;
- ``prior × √λ``: the log prior times ``√λ̄`` (half the correction);
- ``prior × temper``: the log prior times the evidence's temper ``min(1, 2.5 / √d)``;
- ``no prior``: a flat prior;
- ``LDA intercept``: not a weight but the intercept a one-dimensional linear discriminant puts on the part's
  log-odds evidence ``s``, read off the release alone: per class, the mean and variance of each feature's term
  under that class's floored noisy histogram, summed over the features as if independent, then the threshold
  ``(mu_0 + mu_1) / 2 - sigma^2 log(pi_1 / pi_0) / (mu_1 - mu_0)`` (the defaults' prior where ``mu_1 <= mu_0``).

Each fit is made once and scored under each prior (the trees' part and a residual pass, where the rule runs one,
are unchanged: with a pass the part's tables come from the pass, not from this estimator).  Rows: the nine
two-class datasets of ``bench_rule_transfer.py``, ε in {0.1, 0.5, 1, 2}; inner validation rows of seeds 0..3
(each seed's training rows split 75/25) to choose on, test rows of seeds 0..9 to report; the goals' targets are
read from ``results/rule_transfer.csv`` (run ``bench_rule_transfer.py`` first).  A second table looks inside
breast cancer at ε = 0.5: per seed, the prior's log-odds and the mean tempered evidence on each class's test rows.
Seeded research runs, NOT DP releases.

    python benchmarks/bench_prior_weight.py            # about a minute on two cores

Output: ``results/prior_weight.md`` (and ``.csv``).
"""

from __future__ import annotations

import contextlib
import itertools
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.metrics import roc_auc_score

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _bench_common import RESULTS_DIR, inner_split, make_split, report_main, rows_of_jobs
from _bench_datasets import load_any_dataset
from bench_rule_transfer import CSV as RULE_TRANSFER_CSV
from bench_rule_transfer import DATASETS, INNER_SEEDS, TEST_SEEDS, cell_means

import edprf_core._marginals as marginals_module
from edprf_core import EDPRFClassifier
from edprf_core._encoding import FeatureGrid, encode_features
from edprf_core.encoding import encode_labels

EPSILONS = (0.1, 0.5, 1.0, 2.0)
MODELS = ("defaults", "prior × λ", "prior × √λ", "prior × temper", "no prior", "LDA intercept")
DIAGNOSIS = ("cancer", 0.5)
LIBRARY_TABLES = marginals_module.naive_bayes_tables


def attenuation(marginals: marginals_module.NoisyMarginals) -> float:
    """``λ̄``: the mean over features of ``sum_b w_b m_b / (m_b + a)``, ``m_b`` a bin's floored noisy mass, ``w_b``
    its share, ``a`` the estimator's pseudo-count (post-processing of the release)."""
    a = marginals_module.MARGINALS_SHRINKAGE * marginals.noise_scale * marginals.n_classes
    values = []
    for counts in marginals.counts:
        mass = np.maximum(counts, 0).astype(np.float64).sum(axis=1)
        weights = mass / mass.sum() if mass.sum() > 0 else np.full(len(mass), 1.0 / len(mass))
        values.append(float(weights @ (mass / (mass + a))))
    return float(np.mean(values))


def prior_weight(model: str, marginals: marginals_module.NoisyMarginals) -> float:
    if model == "prior × λ":
        return attenuation(marginals)
    if model == "prior × √λ":
        return attenuation(marginals) ** 0.5
    if model == "prior × temper":
        return marginals_module.marginals_temper(marginals.n_features)
    return 0.0 if model == "no prior" else 1.0


def lda_log_odds(marginals: marginals_module.NoisyMarginals, log_prior: np.ndarray, terms: tuple) -> float:
    """The ``LDA intercept`` candidate's class-1 log-odds intercept (two classes; post-processing of the release)."""
    temper = marginals_module.marginals_temper(marginals.n_features)
    mean, variance = np.zeros(2), np.zeros(2)
    for counts, table in zip(marginals.counts, terms, strict=True):
        term = temper * (table[:, 1] - table[:, 0])
        kept = np.maximum(counts, 0).astype(np.float64)
        rows = np.maximum(kept.sum(axis=0), 1.0)
        first, second = (kept * term[:, None]).sum(axis=0) / rows, (kept * term[:, None] ** 2).sum(axis=0) / rows
        mean += first
        variance += np.maximum(second - first**2, 0.0)
    prior_log_odds = float(log_prior[1] - log_prior[0])
    if mean[1] <= mean[0]:
        return prior_log_odds
    pooled = float(np.exp(log_prior) @ variance)
    return -float((mean[0] + mean[1]) / 2 - pooled * prior_log_odds / (mean[1] - mean[0]))


@contextlib.contextmanager
def weighted_prior(model: str) -> Iterator[None]:
    """The estimator's tables with the class log prior times :func:`prior_weight` (renormalised), or with the
    LDA intercept."""

    def tables(marginals: marginals_module.NoisyMarginals, **options: float) -> tuple:
        log_prior, terms = LIBRARY_TABLES(marginals, **options)
        if model == "LDA intercept":
            half = lda_log_odds(marginals, log_prior, terms) / 2
            scaled = np.array([-half, half])
        else:
            scaled = prior_weight(model, marginals) * log_prior
        return scaled - np.logaddexp.reduce(scaled), terms

    marginals_module.naive_bayes_tables = tables
    try:
        yield
    finally:
        marginals_module.naive_bayes_tables = LIBRARY_TABLES


def diagnosis_row(model: EDPRFClassifier, split, seed: int) -> dict:
    """Breast cancer at ε = 0.5, one seed: the prior's log-odds and the tempered evidence per true class."""
    forest, schema = model.forest_, split.schema
    codes = encode_features(split.X_test, schema, FeatureGrid.from_schema(schema, forest.marginals_bins))
    log_prior, evidence = marginals_module.marginal_evidence(forest.marginals, codes)
    tempered = marginals_module.marginals_temper(schema.n_features) * (evidence[:, 1] - evidence[:, 0])
    y = encode_labels(split.y_test, schema)
    return {
        "seed": seed,
        "prior log-odds": float(log_prior[1] - log_prior[0]),
        "evidence, class 0 rows": float(tempered[y == 0].mean()),
        "evidence, class 1 rows": float(tempered[y == 1].mean()),
        "λ̄": attenuation(forest.marginals),
        "predicted class 1": float((log_prior[1] - log_prior[0] + tempered > 0).mean()),
        "true class 1": float(y.mean()),
    }


def dataset_rows(job: tuple[str, str]) -> list[dict]:
    name, data_dir = job
    X, y, schema = load_any_dataset(name, data_dir)
    rows = []
    for seed in TEST_SEEDS:
        outer = make_split(X, y, schema, seed, dataset=name)
        stages = [("test", outer)] + ([("inner", inner_split(outer, seed))] if seed in INNER_SEEDS else [])
        for (stage, split), eps in itertools.product(stages, EPSILONS):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model = EDPRFClassifier(schema, epsilon=eps, random_state=seed).fit(split.X_train, split.y_train)
            y_test = encode_labels(split.y_test, schema)
            part = model.forest_.marginals
            base = {"dataset": name, "stage": stage, "epsilon": eps, "seed": seed}
            for candidate in MODELS:
                with weighted_prior(candidate):
                    proba = model.predict_proba(split.X_test)[:, 1]
                rows.append(
                    base
                    | {
                        "model": candidate,
                        "accuracy": float(((proba > 0.5).astype(int) == y_test).mean()),
                        "auc": float(roc_auc_score(y_test, proba)),
                        "weight": prior_weight(candidate, part) if part is not None else np.nan,
                    }
                )
            if stage == "test" and (name, eps) == DIAGNOSIS:
                rows.append(base | {"model": "diagnosis"} | diagnosis_row(model, split, seed))
    print(f"{name} done", file=sys.stderr, flush=True)
    return rows


def compute(data_dir: str, jobs: int) -> pd.DataFrame:
    return rows_of_jobs(dataset_rows, [(name, data_dir) for name in DATASETS], jobs)


def goal_cells(table: pd.DataFrame) -> pd.DataFrame:
    """Per (stage, dataset, ε, model): mean accuracy, AUC and prior weight, the targets, and whether both goals
    are met."""
    targets = cell_means(pd.read_csv(RULE_TRANSFER_CSV)).query("model == 'defaults'")
    targets = targets.set_index(["stage", "dataset", "epsilon"])[["target_accuracy", "target_auc"]]
    scored = table[table.model != "diagnosis"]
    means = scored.groupby(["stage", "dataset", "epsilon", "model"], sort=False)[["accuracy", "auc", "weight"]]
    cells = means.mean().reset_index().join(targets, on=["stage", "dataset", "epsilon"])
    cells["meets"] = (cells.accuracy >= cells.target_accuracy) & (cells.auc >= cells.target_auc)
    return cells


def report(table: pd.DataFrame) -> str:
    cells = goal_cells(table)
    counts = cells.groupby(["model", "stage"]).meets.sum().unstack("stage")
    means = cells.groupby(["model", "stage"])[["accuracy", "auc"]].mean().unstack("stage")
    lines = [
        "# The marginals' prior against its shrunk evidence (issue 23)",
        "",
        (
            "Command: `python benchmarks/bench_prior_weight.py`. What and why: its docstring. Inner validation rows "
            f"of seeds {INNER_SEEDS[0]}..{INNER_SEEDS[-1]} (to choose on), test rows of seeds {TEST_SEEDS[0]}.."
            f"{TEST_SEEDS[-1]}; goals per (dataset, ε) as in `rule_transfer.md`: AUC ≥ DP-EBM's, accuracy ≥ "
            "max(DP-EBM, label) − 0.005. Seeded research runs, not DP releases."
        ),
        "",
        (
            "| model | inner cells meeting both goals | test cells | mean inner accuracy | mean test accuracy | "
            "mean test AUC |"
        ),
        "|---|---|---|---|---|---|",
    ]
    for model in MODELS:
        lines.append(
            f"| {model} | {counts.loc[model, 'inner']} of 36 | {counts.loc[model, 'test']} of 36 | "
            f"{means.loc[model, ('accuracy', 'inner')]:.4f} | {means.loc[model, ('accuracy', 'test')]:.4f} | "
            f"{means.loc[model, ('auc', 'test')]:.4f} |"
        )
    lines += ["", "Test-row accuracy where a prior weight changes it by 0.5 point or more (✓: both goals met):", ""]
    lines += _changed_cells(cells[cells.stage == "test"])
    lines += ["", f"Inside {DIAGNOSIS[0]} at ε = {DIAGNOSIS[1]:g} (test rows, the defaults' marginals part):", ""]
    lines += _diagnosis(table[table.model == "diagnosis"])
    lines += READING
    return "\n".join(lines) + "\n"


def _changed_cells(cells: pd.DataFrame) -> list[str]:
    header = "| dataset | ε | weight λ̄ | target accuracy | " + " | ".join(MODELS) + " |"
    out = [header, "|" + "---|" * (4 + len(MODELS))]
    for (name, eps), group in cells.groupby(["dataset", "epsilon"], sort=False):
        group = group.set_index("model")
        accuracy = group.accuracy
        if (accuracy - accuracy["defaults"]).abs().max() < 0.005:
            continue

        def text(model: str, accuracy: pd.Series = accuracy, group: pd.DataFrame = group) -> str:
            return f"{accuracy[model]:.3f}" + (" ✓" if group.meets[model] else "")

        out.append(
            f"| {name} | {eps:g} | {group.weight['prior × λ']:.2f} | {group.target_accuracy.iloc[0]:.3f} | "
            + " | ".join(text(m) for m in MODELS)
            + " |"
        )
    return out


def _diagnosis(rows: pd.DataFrame) -> list[str]:
    columns = ["prior log-odds", "evidence, class 0 rows", "evidence, class 1 rows", "λ̄", "predicted class 1"]
    out = ["| seed | " + " | ".join(columns) + " |", "|" + "---|" * (1 + len(columns))]
    for row in rows.sort_values("seed").to_dict("records"):
        out.append(f"| {int(row['seed'])} | " + " | ".join(f"{row[c]:+.2f}" for c in columns) + " |")
    out.append(f"\nTrue share of class 1 on the test rows: {rows['true class 1'].mean():.2f}.")
    return out


READING = [
    "",
    "Reading (the numbers are this file's):",
    "",
    (
        "- **The prior is not the whole of cancer's threshold.** Every weight moves breast cancer at ε = 0.5 toward "
        "its target (0.816 to 0.850-0.879) and none reaches it (0.911); even a flat prior leaves the part "
        "predicting the majority too often. Its evidence is off-centre: the tempered evidence averages -1.16 to "
        "+0.03 on the malignant (class 0) test rows and +1.28 to +2.37 on the benign ones, so the midpoint sits on "
        "the majority's side before the prior adds its 0.3 to 0.8. The cause is the shrinkage's form: one "
        "pseudo-count for every bin (four noise scales a class, about 505 pseudo-rows a bin at ε = 0.5, against the part's 410 rows), and the "
        "minority's bins hold fewer rows, so they keep less of their log-ratio (λ̄ = 0.29 on average, the "
        "minority's bins less) than the majority's."
    ),
    (
        "- **Where the ranking is weak, the majority is the right answer.** Attrition (16 % minority, AUC 0.52 to "
        "0.71) loses 0.5 to 1.6 points of accuracy under the λ weight and its accuracy target at ε ≤ 1; a flat "
        "prior costs bank, census, credit and fair 3 to 12 points at ε = 0.1."
    ),
    (
        "- **Not adopted.** On the inner rows `prior × temper` meets 27 cells against the defaults' 26 (it gains "
        "cancer at ε = 1, which the test rows already meet), `prior × √λ` 26, `prior × λ` 24; on the test rows "
        "29 for the defaults, 28, 26 and 26 (the weights lose attrition at ε ≤ 1). One inner cell is within what "
        "the seeds decide (`goal_significance.md`), and the test rows go the other way: the library's estimator "
        "stays. Said plainly: this benchmark was written after `intercept_oracle.md`'s test rows were seen."
    ),
]


if __name__ == "__main__":
    report_main(__doc__.splitlines()[0], RESULTS_DIR / "prior_weight.md", compute, report)
