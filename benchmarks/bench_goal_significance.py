#!/usr/bin/env python
"""Which of issue 23's missed goal cells can ten seeds tell from a tie? A paired reading of the kept tables.

Issue 23's goals are on means over ten seeds: ROC AUC at least DP-EBM's, accuracy at least the best of DP-EBM and
the label configuration minus 0.5 point, and a federation of 20 parties under Dirichlet 0.5 within 2 points of
central.  A mean over ten seeds carries the seeds' spread: where the defaults and the reference are level, a cell
falls on either side of its line about half the time.  This reading separates, per goal and per (dataset, ε), the
misses the seeds resolve from those they do not.

Per cell, the per-seed margins ``D_s`` are paired on the seed (every model of a seed is fitted and scored on that
seed's split):

- AUC goal: ``D_s = AUC(defaults) - AUC(DP-EBM)``;
- accuracy goal: ``D_s = acc(defaults) - acc(R) + 0.005`` with ``R`` whichever of DP-EBM and the label configuration
  has the higher mean (the target's own choice; taking the max of two noisy means makes the target slightly
  optimistic, which only makes a "met" harder);
- federated goal: ``D_s = acc(defaults, Dirichlet 0.5) - acc(defaults, central) + 0.02``.

Reported: the mean margin, its 95 % t-interval over the seeds, the exact two-sided sign-flip p-value of a zero mean
(all ``2^n`` sign patterns of the ``D_s``), and a verdict: **met** (the whole interval above 0), **tie** (the
interval holds 0; the goal as the issue counts it, on the mean, is met when the mean is above the line), or
**missed** (the whole interval below 0).  For a tie, the seeds a z-interval would need to
exclude 0 if the mean and spread stayed as they are (``ceil((1.96 sd / |mean|)^2)``).  No multiplicity adjustment:
with ten seeds the smallest sign-flip p-value is 2/1024, so over the hundred cells read any adjustment would call
every cell a tie, a 17-point federated gap included; the verdicts are per cell, at the 95 % level.

The report then gives the goals as the issue counts them (cells meeting every goal on the means), and for each
(dataset, goal) missed on the mean what limits it and which report measures that (:data:`LIMITS`, written from
those reports; a miss without an entry says "not analysed").

Reads ``results/rule_transfer.csv`` (nine binary datasets, test rows, seeds 0..9), ``results/unseen.csv`` (Adult
and German, central and federated) and ``results/federated_defaults.csv`` (six datasets, federated); fits nothing.
Rerun those benchmarks first when their paths change.

    python benchmarks/bench_goal_significance.py           # a few seconds

Output: ``results/goal_significance.md`` (and ``.csv``, one row per goal cell).
"""

from __future__ import annotations

import argparse
import itertools
import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _bench_common import RESULTS_DIR

RULE_TRANSFER_CSV = RESULTS_DIR / "rule_transfer.csv"
UNSEEN_CSV = RESULTS_DIR / "unseen.csv"
FEDERATED_CSV = RESULTS_DIR / "federated_defaults.csv"
OUT = RESULTS_DIR / "goal_significance.md"

ACCURACY_SLACK = 0.005
"""Issue 23's accuracy goal: at least the best reference minus 0.5 point."""
FEDERATED_SLACK = 0.02
"""Issue 23's federated goal: within 2 points of central."""
LEVEL = 0.95
VERDICTS = ("met", "tie, mean above the line", "tie, mean below the line", "missed")


def sign_flip_p(margins: np.ndarray) -> float:
    """Exact two-sided p-value of a zero mean: the share of the ``2^n`` sign patterns whose |mean| is at least the
    observed one (the margins' distribution symmetric about 0 under the null)."""
    n = len(margins)
    if n > 16:
        raise ValueError(f"exact sign flips enumerate 2^n patterns: expected at most 16 seeds, got {n}")
    signs = np.array(list(itertools.product((1.0, -1.0), repeat=n)))
    means = np.abs(signs @ margins) / n
    return float(np.mean(means >= abs(margins.mean()) - 1e-12))


def read_margins(margins: np.ndarray) -> dict:
    """Mean, spread, interval, p-value and verdict of one cell's paired per-seed margins."""
    n = len(margins)
    mean, sd = float(margins.mean()), float(margins.std(ddof=1))
    half = float(stats.t.ppf(0.5 + LEVEL / 2, n - 1)) * sd / math.sqrt(n)
    if mean - half > 0:
        verdict = "met"
    elif mean >= 0:
        verdict = "tie, mean above the line"
    elif mean + half >= 0:
        verdict = "tie, mean below the line"
    else:
        verdict = "missed"
    needed = math.ceil((1.96 * sd / abs(mean)) ** 2) if verdict.startswith("tie") and mean != 0 else None
    return {
        "seeds": n,
        "margin": mean,
        "sd": sd,
        "low": mean - half,
        "high": mean + half,
        "p_sign_flip": sign_flip_p(margins),
        "verdict": verdict,
        "seeds_to_resolve": needed,
    }


def _paired(frame: pd.DataFrame, ours: str, reference: str, value: str) -> np.ndarray:
    wide = frame.pivot_table(index="seed", columns="model", values=value)
    both = wide[[ours, reference]].dropna()
    return (both[ours] - both[reference]).to_numpy()


def central_cells(table: pd.DataFrame, source: str) -> list[dict]:
    """The AUC and accuracy goal cells of the defaults, per (dataset, ε), from a per-seed central table."""
    rows = []
    for (name, eps), cell in table.groupby(["dataset", "epsilon"], sort=False):
        means = cell.groupby("model")["accuracy"].mean()
        best = "DP-EBM" if means["DP-EBM"] >= means["label"] else "label"
        goals = (
            ("AUC", "DP-EBM", _paired(cell, "defaults", "DP-EBM", "auc")),
            ("accuracy", best, _paired(cell, "defaults", best, "accuracy") + ACCURACY_SLACK),
        )
        for goal, reference, margins in goals:
            rows.append(
                {"source": source, "dataset": name, "epsilon": eps, "goal": goal, "reference": reference}
                | read_margins(margins)
            )
    return rows


def federated_cells(table: pd.DataFrame, source: str) -> list[dict]:
    """The federated goal cells (accuracy within 2 points of central under Dirichlet 0.5), per (dataset, ε)."""
    rows = []
    for (name, eps), cell in table.groupby(["dataset", "epsilon"], sort=False):
        margins = _paired(cell, "defaults, dirichlet-0.5", "defaults, central", "accuracy") + FEDERATED_SLACK
        rows.append(
            {"source": source, "dataset": name, "epsilon": eps, "goal": "federated", "reference": "central"}
            | read_margins(margins)
        )
    return rows


def compute() -> pd.DataFrame:
    rule = pd.read_csv(RULE_TRANSFER_CSV).query("stage == 'test'")
    unseen = pd.read_csv(UNSEEN_CSV)
    cells = [
        *central_cells(rule, "nine datasets"),
        *central_cells(unseen[unseen.part == "central"], "Adult, German"),
        *federated_cells(pd.read_csv(FEDERATED_CSV), "six datasets, federated"),
        *federated_cells(unseen[unseen.part == "federated"], "Adult, German, federated"),
    ]
    return pd.DataFrame(cells)


LIMITS = {
    ("credit", "AUC"): (
        (
            "at ε = 0.5 DP-EBM's data-adaptive bins, which invariant 2 rules out for a party (on the public grid it "
            "ranks 0.753); at ε ≥ 1 its many-round boosting under (ε, δ), of which the one pure-ε residual pass "
            "recovers part (more passes at the same budget rank worse)"
        ),
        "`stumps_proxies.md`, `marginals_ceiling.md`, `residual_pass.md`, `pass_count.md`",
    ),
    ("cancer", "accuracy"): (
        (
            "at ε = 0.5 the threshold, not the ranking (AUC 0.965; a non-private intercept would meet the goal, a DP "
            "one costs more cells than it gains; the marginals' evidence leans to the majority, whose bins the "
            "shrinkage keeps more of, and reweighting the prior alone costs attrition more than it gives cancer); "
            "at ε = 0.1 the ranking itself (n ε / d = 1.5)"
        ),
        "`intercept_oracle.md`, `prior_weight.md`",
    ),
    ("heart", "accuracy"): (
        (
            "237 rows at ε = 0.1: the DP row count straddles the share rule's threshold (n ε / d = 1.8); declaring "
            "`n_rows_public` takes the count out"
        ),
        "`rule_transfer_count.md`",
    ),
    ("attrition", "AUC"): (
        "n ε / d = 78, under the residual pass's threshold, where the pass's noise costs more than it corrects",
        "`residual_pass.md`",
    ),
    ("german", "accuracy"): (
        (
            "800 rows, 20 features at ε = 0.1: the class prior, averaged from twenty histograms at 0.1 / 20 each, is "
            "noisy by about 150 rows"
        ),
        "`unseen.md`",
    ),
    ("heart", "federated"): (
        (
            "about 12 rows a party: each party spends its whole ε on a dozen rows; closing it needs statistics "
            "pooled before the noise (secure aggregation, or a multi-round protocol); at ε 1 the parties' counts "
            "add nothing even on splits from a coordinator's own sample, and 50 exact rows alone match central DP; "
            "histograms summed before one noise would meet the line at every ε (a ceiling: +1.5, -1.2, -0.7), but "
            "need exact noise shares and validity proofs this project does not have"
        ),
        "`federated_defaults.md`, `federation_depth.md`, `coordinator_sample.md`, `secure_sum_ceiling.md`",
    ),
    ("wall", "federated"): (
        (
            "four classes, trees only, splits chosen from about 220 rows a party; the same remedy as heart's "
            "(at ε 1, on splits from a 400-row coordinator sample the parties' counts reach 3.6 points under central); "
            "summing histograms before the noise does not move it (trees only)"
        ),
        "`federation_depth.md`, `coordinator_sample.md`, `secure_sum_ceiling.md`",
    ),
    ("credit", "federated"): (
        (
            "the summed histograms carry about √20 times one party's noise, and at ε ≥ 1 the central model also runs a "
            "residual pass a party's release cannot carry; summed before one noise they would come within 1.1 points "
            "(a ceiling)"
        ),
        "`federated_defaults.md`, `federated_share.md`, `secure_sum_ceiling.md`",
    ),
    ("adult", "federated"): (
        "at ε = 0.5 the central model gained a point from its residual pass, which a party's release cannot carry",
        "`unseen.md`",
    ),
    ("german", "federated"): ("40 rows a party", "`unseen.md`"),
}
"""What limits each (dataset, goal) missed on the mean, and where it is measured (written from those reports)."""


def mean_counts(table: pd.DataFrame) -> pd.DataFrame:
    """Per source: (dataset, ε) cells meeting every goal on the mean (issue 23's count) and cells in all."""
    cells = table.groupby(["source", "dataset", "epsilon"], sort=False).margin.min().ge(0)
    return cells.groupby(level="source", sort=False).agg(["sum", "size"])


def _points(value: float, goal: str) -> str:
    return f"{value:+.3f}" if goal == "AUC" else f"{100 * value:+.2f}"


def report(table: pd.DataFrame) -> str:
    counts = table.groupby(["source", "goal"], sort=False).verdict.value_counts().unstack(fill_value=0)
    counts = counts.reindex(columns=list(VERDICTS), fill_value=0)
    lines = [
        "# Issue 23's goal cells: which misses do ten seeds resolve?",
        "",
        (
            "Command: `python benchmarks/bench_goal_significance.py`. What and why: its docstring. Per-seed margins "
            "paired on the seed, read from `rule_transfer.csv`, `unseen.csv` and `federated_defaults.csv` (test "
            f"rows, seeds 0..9). Margin: defaults − goal line (AUC; accuracy in points); {LEVEL:.0%} t-interval over "
            "the seeds; exact sign-flip p-value of a zero mean. Seeded research runs, not DP releases."
        ),
        "",
        "| cells | goal | " + " | ".join(VERDICTS) + " |",
        "|---|---|" + "---|" * len(VERDICTS),
    ]
    for (source, goal), row in counts.iterrows():
        lines.append(f"| {source} | {goal} | " + " | ".join(str(int(row[v])) for v in VERDICTS) + " |")
    lines += [
        "",
        (
            "The cells whose mean is under their line (the issue's count of misses), worst interval first "
            "(margin: AUC, or accuracy in points):"
        ),
        "",
        "| cells | dataset | ε | goal | against | margin | 95 % interval | p (sign flip) | verdict | seeds to resolve |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    below = table[table.margin < 0].sort_values("high")
    for row in below.itertuples():
        needed = "" if pd.isna(row.seeds_to_resolve) else f"{int(row.seeds_to_resolve)}"
        lines.append(
            f"| {row.source} | {row.dataset} | {row.epsilon:g} | {row.goal} | {row.reference} | "
            f"{_points(row.margin, row.goal)} | [{_points(row.low, row.goal)}, {_points(row.high, row.goal)}] | "
            f"{row.p_sign_flip:.3f} | {row.verdict} | {needed} |"
        )
    lines += [
        "",
        "## Where the goals stand, as the issue counts them (on the means), and what limits each miss",
        "",
        "| cells | (dataset, ε) cells meeting every goal |",
        "|---|---|",
    ]
    lines += [
        f"| {source} | {int(row['sum'])} of {int(row['size'])} |" for source, row in mean_counts(table).iterrows()
    ]
    lines += ["", "| dataset | goal | ε missed on the mean | what limits it | measured in |", "|---|---|---|---|---|"]
    for (name, goal), group in below.groupby(["dataset", "goal"], sort=False):
        limit, source = LIMITS.get((name, goal), ("not analysed", "–"))
        missed = ", ".join(f"{e:g}" for e in sorted(group.epsilon.unique()))
        lines.append(f"| {name} | {goal} | {missed} | {limit} | {source} |")
    lines += READING
    return "\n".join(lines) + "\n"


READING = [
    "",
    "Reading (the numbers are this file's):",
    "",
    (
        "- **Three central misses are resolved by the seeds; the rest are ties.** Of the nine datasets' 72 goal "
        "checks (36 cells, two goals each), the seeds put 42 above the line, 3 below it, and leave 27 undecided: 23 "
        "with the mean above and 4 with the mean below. The three resolved misses: credit's ranking at ε = 1 and 2 "
        "(AUC −0.014 [−0.027, −0.002] and −0.014 [−0.026, −0.003] against DP-EBM) and breast cancer's accuracy at "
        "ε = 0.5 (−9.5 points [−17.3, −1.7] against the label configuration, a threshold miss: "
        "`intercept_oracle.md`). The four others under the line (heart and cancer accuracy at ε = 0.1, credit AUC "
        "at ε = 0.5, attrition AUC at ε = 2) have intervals that reach well above it; telling them from a tie "
        "would take 18 to 84 seeds at their present spread."
    ),
    (
        "- **Adult and German: no resolved miss.** German's accuracy at ε = 0.1 (−1.2 points) is a tie; so are 7 "
        "of the 15 checks met on the mean."
    ),
    (
        "- **Federated: heart and the wall robot are real gaps, the rest is on the line.** Heart and the wall robot "
        "miss the 2-point line by 10 to 18 points at every ε, intervals far below it (parties of a dozen to a few "
        "hundred rows: `federation_depth.md`). Credit's three cells are 0.1 to 0.3 point beyond the line with "
        "intervals of about ±0.6 to ±1.1 point (75 to 187 seeds to tell); German's two and Adult's at ε = 0.5 "
        "(−0.3 point, where the central model it is measured against gained a point from a pass no party can "
        "carry) are ties too."
    ),
    (
        "- **The count on means moves with the seeds.** The issue counts a cell on its mean. By that count the nine "
        "datasets meet 29 of 36 cells (`rule_transfer_count.md`), but 23 of the checks behind it are ties with "
        "the mean above the line and 4 with the mean below: another ten seeds could move that count by several "
        "cells either way. What an analyst can rely on is the resolved part: 42 checks won, 3 lost."
    ),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(OUT))
    args = parser.parse_args()
    table = compute()
    table.to_csv(Path(args.out).with_suffix(".csv"), index=False, float_format="%.6f")
    text = report(table)
    Path(args.out).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
