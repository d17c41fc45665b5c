#!/usr/bin/env python
"""Two datasets no rule was tuned on: UCI Adult (census income) and German credit (issue 23).

Issue 23 checks its goals on a held-out census dataset and a held-out credit dataset.  Every rule and constant of
the library was picked on the inner rows of the nine datasets of ``bench_rule_transfer.py``; the two canonical
public datasets of those tasks, UCI Adult and UCI Statlog German credit (``_bench_standins.UNSEEN``: measured,
never tuned on), say how those picks fare on data they did not see.  They may be the very held-out datasets:
nothing here feeds a choice.

- central: the library's defaults (with the residual pass rule), ``share 0.9`` (the same marginals share, no
  pass), ``share 0.75`` (the share before this round), the trees alone, the label configuration, DP-EBM
  (δ = 1e-6), diffprivlib's random forest and scikit-learn's HistGB (non-private), as in
  ``bench_stumps_proxies.py``; ε in {0.1, 0.5, 1, 2}, test rows of seeds 0..9; issue 23's goals: ROC AUC at
  least DP-EBM's, accuracy at least max(DP-EBM, label) − 0.005;
- federated: 20 parties under Dirichlet 0.5 label skew and IID, ε in {0.5, 1, 2}, as in
  ``bench_federated_defaults.py`` (a party's release has no residual pass); the goal: accuracy within 2 points of
  the central defaults.

Seeded research runs, not DP releases.

    python benchmarks/bench_unseen.py            # about 6 minutes on two cores; downloads a 28 MB wheel once

Output: ``results/unseen.md`` (and ``.csv``).
"""

from __future__ import annotations

import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _bench_common import RESULTS_DIR, report_main
from _bench_standins import UNSEEN
from bench_federated_defaults import run as federated_run
from bench_stumps_proxies import goal_table
from bench_stumps_proxies import run as central_run

MODELS = (
    "defaults",
    "share 0.9",
    "share 0.75",
    "trees only",
    "label",
    "DP-EBM",
    "diffprivlib RF",
    "HistGB (non-private)",
)
CHECKED = ("defaults", "share 0.9", "share 0.75", "trees only")
"""The models whose goals are counted (DP-EBM and the label configuration set the targets)."""
SEEDS = 10


def _central(name: str) -> pd.DataFrame:
    return central_run(name, SEEDS, MODELS).assign(part="central")


def _federated(name: str, data_dir: str) -> pd.DataFrame:
    return federated_run(name, SEEDS, data_dir).assign(part="federated")


def compute(data_dir: str, jobs: int) -> pd.DataFrame:
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        parts = [pool.submit(_central, name) for name in UNSEEN]
        parts += [pool.submit(_federated, name, data_dir) for name in UNSEEN]
        return pd.concat([p.result() for p in parts], ignore_index=True)


def central_lines(table: pd.DataFrame) -> list[str]:
    goals = goal_table(table[table.part == "central"])
    lines = [
        "## Central: accuracy / ROC AUC on the test rows (means over seeds 0..9)",
        "",
        "| dataset | ε | " + " | ".join(MODELS) + " | target accuracy | goals met by |",
        "|---|---|" + "---|" * (len(MODELS) + 2),
    ]
    for (name, eps), group in goals.groupby(["dataset", "epsilon"], sort=False):
        group = group.set_index("model")
        cells = [f"{group.loc[m].accuracy:.3f} / {group.loc[m].auc:.3f}" for m in MODELS]
        winners = [m for m in CHECKED if group.loc[m].meets]
        target = group.iloc[0].target_accuracy
        lines.append(
            f"| {name} | {eps:g} | " + " | ".join(cells) + f" | {target:.3f} | {', '.join(winners) or 'none'} |"
        )
    counts = goals[goals.model.isin(CHECKED)].groupby("model").meets.sum()
    n_cells = goals.groupby(["dataset", "epsilon"]).ngroups
    lines += [
        "",
        f"Cells meeting both goals, of {n_cells}: " + ", ".join(f"{m} {int(counts[m])}" for m in CHECKED) + ".",
    ]
    return [*lines, ""]


def federated_lines(table: pd.DataFrame) -> list[str]:
    fed = table[table.part == "federated"]
    wide = fed.pivot_table(index=["dataset", "epsilon", "seed"], columns="model", values="accuracy")
    lines = [
        "## Federated: 20 parties, accuracy in points (gap = federated − central defaults, mean ± sd over seeds)",
        "",
        "| dataset | ε | central defaults | IID | gap | Dirichlet 0.5 | gap | trees only, Dirichlet 0.5 | gap |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    met = 0
    for (name, eps), rows in wide.groupby(level=[0, 1], sort=False):
        central = rows["defaults, central"]
        cells = [f"{100 * central.mean():.1f}"]
        for model in ("defaults, iid", "defaults, dirichlet-0.5", "trees only, dirichlet-0.5"):
            gap = 100 * (rows[model] - central)
            cells += [f"{100 * rows[model].mean():.1f}", f"{gap.mean():+.1f} ± {gap.std():.1f}"]
        met += int(100 * (rows["defaults, dirichlet-0.5"] - central).mean() >= -2.0)
        lines.append(f"| {name} | {eps:g} | " + " | ".join(cells) + " |")
    n_cells = wide.groupby(level=[0, 1]).ngroups
    return [*lines, "", f"Within 2 points of central under Dirichlet 0.5: {met} of {n_cells} cells.", ""]


def report(table: pd.DataFrame) -> str:
    lines = [
        "# Two datasets no rule was tuned on: UCI Adult and German credit (issue 23)",
        "",
        (
            "Command: `python benchmarks/bench_unseen.py`. What and why: its docstring and `_bench_standins.py` (where "
            "the data come from). Seeded research runs, not DP releases."
        ),
        "",
        *central_lines(table),
        *federated_lines(table),
        *READING,
    ]
    return "\n".join(lines) + "\n"


READING = [
    "Reading (the numbers are this file's):",
    "",
    (
        "- **The picks transfer.** The defaults meet both goals in 7 of the 8 central cells; without the residual "
        "pass (`share 0.9`) 4, with the share before the pass (`share 0.75`) 5. On Adult the pass is what the "
        "accuracy goal needed: against the label tree's 0.837, 0.839 and 0.844 at ε = 0.5, 1 and 2 the mix without "
        "it reaches 0.831, 0.833 and 0.835, with it 0.841, 0.845 and 0.847, and its ranking leads DP-EBM's at every "
        "ε (0.871 to 0.903 against 0.861 to 0.890). On German credit the defaults rank well above DP-EBM (0.668 to "
        "0.754 against 0.642 to 0.728 at ε ≥ 0.5)."
    ),
    (
        "- **The miss.** German credit at ε = 0.1 (800 training rows, 20 features) predicts worse than the majority "
        "class (0.678 against 0.70): the marginals' class prior, averaged from twenty histograms each at 0.1 / 20, "
        "is noisy by about 150 rows, and where every feature's evidence is noise the noisy prior decides the class; "
        "the trees alone predict the majority (0.701) but rank at 0.513, under DP-EBM's 0.518. (Adult at ε = 0.5, "
        "0.001 under its target while the pass started at ε = 1, is met since the pass's constants and rule were "
        "picked again on the nine datasets' inner rows, `residual_constants.md`: a pass from ε = 0.5.)"
    ),
    (
        "- **Forking paths, said plainly.** No rule or constant was picked on these two datasets, but they were "
        "not unseen by the person who chose what to build: a scratch run of them (3 and 10 seeds) showed the "
        "mix's accuracy on Adult at the label tree's edge before the residual pass was written, and the decision "
        "to put a pass in the library was taken knowing that. The pass's rule was then picked on the nine "
        "datasets' inner rows alone (`residual_pass.md`), and its constants later too (`residual_constants.md`; "
        "these two datasets' cells were read after that pick and before the library took it). Read these cells as "
        "checked, not as held out."
    ),
    (
        "- **Federated.** Adult stays within 2 points at ε = 1 and 2 (−1.5 and −1.4 under Dirichlet 0.5): a "
        "party's release has no pass, but 20 parties of about 1,800 rows keep the summed histograms informative. At "
        "ε = 0.5 it is −2.3 ± 0.7: the federation is where it was (81.8), but the central model it is measured "
        "against gained a point from its pass (83.1 to 84.1), which no party's release can carry. German credit "
        "(40 rows a party) is within 2 points at ε = 1 only, with a spread over seeds as large as the gap: like "
        "heart, a party's ε is spent on too few rows."
    ),
]


def main() -> None:
    report_main(__doc__.splitlines()[0], RESULTS_DIR / "unseen.md", compute, report)


if __name__ == "__main__":
    main()
