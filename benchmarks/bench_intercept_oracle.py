#!/usr/bin/env python
"""Is a missed accuracy goal the model's ranking or its threshold? An intercept diagnosis (issue 23).

Issue 23's accuracy goal is missed on breast cancer at ε ≤ 0.5 while the same fits rank better than every other
model (ROC AUC 0.965 at ε = 0.5, DP-EBM 0.817): the ranking is there, the threshold is not.  This benchmark asks
how much of each dataset's accuracy a better intercept would give back, and whether a DP intercept could get it:

- ``defaults``: ``EDPRFClassifier(schema, epsilon=ε)`` as fitted (the library's defaults, seeded);
- ``oracle intercept``: the same fit's log-odds shifted by the one constant that maximises the log-likelihood of
  its own training rows, read off those rows without noise.  NOT private: a ceiling, not a candidate;
- ``DP intercept (sketch)``: the shift one damped Newton step would take from one noisy residual sum: ``S =
  sum_i (y_i - p_i)`` over the training rows with Laplace noise of scale ``1 / ε_int``, ``ε_int = 0.1 ε`` (a
  record moves ``S`` by at most 1), step ``S / (sum_i p_i (1 - p_i) + RESIDUAL_RIDGE)`` (the residual pass's
  damping).  A sketch of what a release would buy, not in the library: its ``ε_int`` would have to come out of
  the fit's budget, which is not modelled here (the fit keeps all of ε), so the sketch flatters it.

AUC is unchanged by a shift (a monotone map of the scores), so only accuracy is reported.  Rows: the nine
two-class datasets of ``bench_rule_transfer.py``, ε in {0.1, 0.5, 1, 2}, test rows of seeds 0..9; the goal's
accuracy target (the best of DP-EBM and the label configuration, minus 0.5 point) is read from
``results/rule_transfer.csv`` (run ``bench_rule_transfer.py`` first).  Seeded research runs, NOT DP releases.

    python benchmarks/bench_intercept_oracle.py            # about 3 minutes on two cores

Output: ``results/intercept_oracle.md`` (and ``.csv``).
"""

from __future__ import annotations

import itertools
import sys
import warnings
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.optimize import minimize_scalar
from scipy.special import expit, logit

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _bench_common import RESULTS_DIR, make_split, report_main
from _bench_datasets import load_any_dataset
from bench_rule_transfer import CSV as RULE_TRANSFER_CSV
from bench_rule_transfer import DATASETS, TEST_SEEDS, cell_means

from edprf_core import EDPRFClassifier
from edprf_core._residual_pass import RESIDUAL_RIDGE
from edprf_core.encoding import encode_labels

EPSILONS = (0.1, 0.5, 1.0, 2.0)
INTERCEPT_SHARE = 0.1
"""``ε_int / ε`` of the DP intercept sketch."""
MODELS = ("defaults", "oracle intercept", "DP intercept (sketch)")


def _logit(p: np.ndarray) -> np.ndarray:
    return logit(np.clip(p, 1e-12, 1 - 1e-12))


def oracle_shift(log_odds: np.ndarray, y: np.ndarray) -> float:
    """The constant added to ``log_odds`` that maximises the log-likelihood of labels ``y`` (non-private)."""

    def loss(shift: float) -> float:
        z = log_odds + shift
        return float(np.mean(np.logaddexp(0.0, z) - y * z))

    return float(minimize_scalar(loss, bounds=(-10.0, 10.0), method="bounded").x)


def dp_shift_sketch(log_odds: np.ndarray, y: np.ndarray, epsilon: float, rng: np.random.Generator) -> float:
    """One damped Newton step on the intercept from a residual sum with Laplace noise at ``epsilon``."""
    p = expit(log_odds)
    noisy = float(np.sum(y - p)) + rng.laplace(scale=1.0 / epsilon)
    return noisy / (float(np.sum(p * (1.0 - p))) + RESIDUAL_RIDGE)


def dataset_rows(name: str, data_dir: str) -> list[dict]:
    X, y, schema = load_any_dataset(name, data_dir)
    rows = []
    for seed, eps in itertools.product(TEST_SEEDS, EPSILONS):
        split = make_split(X, y, schema, seed, dataset=name)
        y_train, y_test = encode_labels(split.y_train, schema), encode_labels(split.y_test, schema)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = EDPRFClassifier(schema, epsilon=eps, random_state=seed).fit(split.X_train, split.y_train)
        train, test = _logit(model.predict_proba(split.X_train)[:, 1]), _logit(model.predict_proba(split.X_test)[:, 1])
        shifts = {
            "defaults": 0.0,
            "oracle intercept": oracle_shift(train, y_train),
            "DP intercept (sketch)": dp_shift_sketch(
                train, y_train, INTERCEPT_SHARE * eps, np.random.default_rng([seed, int(eps * 1000), 17])
            ),
        }
        for model_name, shift in shifts.items():
            accuracy = float(((test + shift > 0).astype(int) == y_test).mean())
            rows.append(
                {"dataset": name, "epsilon": eps, "seed": seed, "model": model_name, "shift": shift}
                | {"accuracy": accuracy}
            )
    print(f"{name} done", file=sys.stderr, flush=True)
    return rows


def compute(data_dir: str, jobs: int) -> pd.DataFrame:
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        parts = pool.map(dataset_rows, DATASETS, itertools.repeat(data_dir))
        return pd.DataFrame([row for part in parts for row in part])


def report(table: pd.DataFrame) -> str:
    targets = cell_means(pd.read_csv(RULE_TRANSFER_CSV)).query("stage == 'test' and model == 'defaults'")
    targets = targets.set_index(["dataset", "epsilon"])
    stats = table.groupby(["dataset", "epsilon", "model"], sort=False).agg(
        accuracy=("accuracy", "mean"), sd=("accuracy", "std"), shift=("shift", "mean"), shift_sd=("shift", "std")
    )
    lines = [
        "# Ranking or threshold? An intercept diagnosis of the defaults (issue 23)",
        "",
        (
            "Command: `python benchmarks/bench_intercept_oracle.py`. What and why: its docstring. Test rows, "
            f"mean ± sd over seeds {TEST_SEEDS[0]}..{TEST_SEEDS[-1]}; accuracy of the defaults as fitted, with the "
            "non-private oracle intercept, and with the DP intercept sketch (one noisy residual sum at 0.1 ε, "
            "not charged to the fit); ROC AUC (unchanged by a shift) and the accuracy target from "
            "`rule_transfer.csv`. Seeded research runs, not DP releases."
        ),
        "",
        "| dataset | ε | AUC | target accuracy | defaults | oracle intercept (shift) | DP intercept sketch (shift) |",
        "|---|---|---|---|---|---|---|",
    ]
    met = {m: 0 for m in MODELS}
    for (name, eps), group in stats.groupby(level=[0, 1], sort=False):
        group = group.droplevel([0, 1])
        goal = targets.loc[(name, eps)]
        cells = []
        for model in MODELS:
            row = group.loc[model]
            mark = "**" if row.accuracy >= goal.target_accuracy else ""
            met[model] += row.accuracy >= goal.target_accuracy
            text = f"{mark}{row.accuracy:.3f}{mark} ± {row.sd:.3f}"
            if model != "defaults":
                text += f" ({row['shift']:+.2f} ± {row.shift_sd:.2f})"
            cells.append(text)
        lines.append(f"| {name} | {eps:g} | {goal.auc:.3f} | {goal.target_accuracy:.3f} | " + " | ".join(cells) + " |")
    total = len(stats) // len(MODELS)
    lines += [
        "",
        "Bold: at or above the accuracy target. Cells meeting the accuracy target, of "
        + f"{total}: "
        + ", ".join(f"{model} {met[model]}" for model in MODELS)
        + ".",
        *READING,
    ]
    return "\n".join(lines) + "\n"


READING = [
    "",
    "Reading (the numbers are this file's):",
    "",
    (
        "- **Breast cancer at ε = 0.5 is a threshold, not a ranking.** The defaults rank its test rows at AUC 0.965 "
        "but classify 81.6 % ± 9.7 correctly, against a target of 91.1 %; the one constant the fit's own training "
        'rows ask for (a shift of −0.65 ± 0.41 in log-odds: the mix over-predicts class "1", scikit-learn\'s benign, the 63 % majority) gives 91.6 % '
        "± 3.1, over the target. Seed by seed the defaults fall to 69–77 % on five of the ten seeds, where the "
        "oracle stays at 86–92 %. At ε = 0.1 the oracle does not reach the target either (74.3 % against 76.0 %): "
        "there the ranking itself is weak (AUC 0.705)."
    ),
    (
        "- **A DP intercept does not pay at these sizes.** One noisy residual sum at 0.1 ε (455 training rows on "
        "cancer) moves cancer at ε = 0.5 from 81.6 % to 89.7 %, still under the target, and that is before its ε "
        "is taken from the fit. Elsewhere its noise costs more than the bias it removes: heart −4.8 points at "
        "ε = 0.5, and at ε = 0.1 cancer −12.8, attrition −9.2, heart −6.3, mroz −4.8. It meets the accuracy target "
        "in 28 cells against the defaults' 33. Not built."
    ),
    (
        "- **Everywhere else the threshold is already right.** On bank, census, diabetes, credit and fair the "
        "oracle's shift is within ±0.12 nats at ε ≥ 0.5 and moves accuracy by at most 0.2 point; the misses of "
        "those datasets in `rule_transfer_count.md` are ranking (AUC) misses, which no shift can change."
    ),
]


if __name__ == "__main__":
    report_main(__doc__.splitlines()[0], RESULTS_DIR / "intercept_oracle.md", compute, report)
