"""The marginals share rule chosen again on inner validation, through ``EDPRFClassifier`` itself (issue 23).

``bench_marginals.py`` chose the share rule with its own mix (its trees drew their own DP row count on their
rows, its marginals spent the whole ε).  The estimator draws one DP count on all rows, gives both parts
``ε - count_epsilon`` and reads each part's shape from its share of that count.  This benchmark repeats the
choice with the estimator: ``EDPRFClassifier(schema, epsilon=ε, random_state=seed, marginals_share=ρ)`` for
every ρ of ``bench_marginals.RHO_CHOICES`` on the inner validation splits of heart, bank, diabetes and the
wall robot (seeds 0-3, each seed's training rows split 75/25; no test row is read), then the two-regime rule of
best mean inner accuracy + ROC AUC (``bench_marginals.choose_rho``: ``low`` when ``n ε / d`` < threshold,
else ``high``; a constant for more than two classes).  It reports the inner table and whether the rule in
``edprf_core._marginals`` (``MIX_SHARE_LOW``, ``MIX_SHARE_HIGH``, ``MIX_SHARE_THRESHOLD``) is the one chosen.

Seeded research noise (not DP releases); the training size read by the rule is the inner split's, fixed by
the protocol (the estimator reads ``n_rows_public`` or a DP count).

    python benchmarks/bench_mix_rule.py            # about 2 minutes on one core
"""

from __future__ import annotations

import argparse
import itertools
import time
from pathlib import Path

import pandas as pd
from _bench_common import DEFAULT_DATA_DIR, RESULTS_DIR, log
from _bench_datasets import load_dataset
from bench_feature_stumps import scores
from bench_marginals import EPSILONS, INNER_SEEDS, MIX_DATASETS, RHO_CHOICES, choose_rho, inner_splits

from edprf_core import EDPRFClassifier
from edprf_core._marginals import MIX_SHARE_HIGH, MIX_SHARE_LOW, MIX_SHARE_THRESHOLD
from edprf_core.encoding import encode_labels


def estimator_sweep(splits: dict) -> pd.DataFrame:
    """Inner accuracy and ROC AUC of the estimator at every (dataset, inner seed, ε, ρ)."""
    rows = []
    for (name, seed), inner in splits.items():
        y_val = encode_labels(inner.y_test, inner.schema)
        for eps, rho in itertools.product(EPSILONS, RHO_CHOICES):
            clf = EDPRFClassifier(inner.schema, epsilon=eps, random_state=seed, marginals_share=rho)
            acc, auc = scores(clf.fit(inner.X_train, inner.y_train).predict_proba(inner.X_test), y_val)
            rows.append(
                {
                    "dataset": name,
                    "classes": inner.schema.n_classes,
                    "seed": seed,
                    "epsilon": eps,
                    "n_eps_d": len(inner.y_train) * eps / inner.schema.n_features,
                    "rho": rho,
                    "accuracy": acc,
                    "auc": auc,
                }
            )
    return pd.DataFrame(rows)


def report(sweep: pd.DataFrame, rules: pd.DataFrame, chosen, elapsed: float) -> str:
    library = (MIX_SHARE_LOW, MIX_SHARE_HIGH, MIX_SHARE_THRESHOLD)
    same = (chosen.rho_low, chosen.rho_high, chosen.threshold) == library and chosen.rho_multiclass == 0.0
    cells = sweep.groupby(["dataset", "epsilon", "rho"])[["accuracy", "auc", "n_eps_d"]].mean().reset_index()
    lines = [
        "# The marginals share rule, chosen again through the estimator (issue 23)",
        "",
        (
            f"Command: `python benchmarks/bench_mix_rule.py` ({elapsed:.0f} s). Inner validation only: seeds "
            f"{list(INNER_SEEDS)}, each seed's training rows split 75/25; `EDPRFClassifier(marginals_share=ρ)` with "
            "seeded research noise. What and why: the docstring of `benchmarks/bench_mix_rule.py`."
        ),
        "",
        f"Chosen: **{chosen.describe()}**.",
        (
            f"The library's rule (`edprf_core._marginals`): two classes: ρ = {MIX_SHARE_LOW:g} when n ε / d < "
            f"{MIX_SHARE_THRESHOLD:g}, else {MIX_SHARE_HIGH:g}; more classes: ρ = 0 — "
            + ("**the same**." if same else "**differs**.")
            + " The library takes the rule picked by issue 23's own criterion (the goal count) on nine datasets' "
            "inner rows, `rule_transfer_estimator.md`; this file's criterion (mean accuracy + AUC, four datasets) "
            "was the first choice."
        ),
        "",
        "## Inner accuracy / ROC AUC per ρ (mean over inner seeds)",
        "",
        "| dataset | ε | n ε / d | " + " | ".join(f"ρ = {r:g}" for r in RHO_CHOICES) + " |",
        "|---|---|---|" + "---|" * len(RHO_CHOICES),
    ]
    for (name, eps), cell in cells.groupby(["dataset", "epsilon"], sort=False):
        by_rho = cell.set_index("rho")
        values = " | ".join(f"{by_rho.accuracy[r]:.3f} / {by_rho.auc[r]:.3f}" for r in RHO_CHOICES)
        lines.append(f"| {name} | {eps:g} | {cell.n_eps_d.iloc[0]:.0f} | {values} |")
    best = rules.sort_values("score", ascending=False).head(8)
    lines += [
        "",
        "## Best two-class rules (mean inner accuracy + AUC over the 12 two-class cells)",
        "",
        "| ρ low | ρ high | threshold | score |",
        "|---|---|---|---|",
        *(f"| {r.rule[0]:g} | {r.rule[1]:g} | {r.rule[2]:g} | {r.score:.4f} |" for r in best.itertuples()),
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=str(DEFAULT_DATA_DIR))
    parser.add_argument("--out", default=str(RESULTS_DIR / "mix_rule.md"))
    args = parser.parse_args()
    start = time.perf_counter()
    datasets = {name: load_dataset(name, args.data_dir) for name in MIX_DATASETS}
    sweep = estimator_sweep(inner_splits(datasets, MIX_DATASETS, INNER_SEEDS))
    chosen, rules = choose_rho(sweep)
    text = report(sweep, rules, chosen, time.perf_counter() - start)
    Path(args.out).write_text(text)
    print(text)
    log(f"wrote {args.out}")


if __name__ == "__main__":
    main()
