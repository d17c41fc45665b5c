"""Inner-validation sweep of the tree count of the automatic shape rule (leaf counts).

For each dataset and outer seed ``s``: the benchmark's stratified 80/20 split
(``_bench_common.make_split``), then a stratified 75/25 split of the
*training* rows with the same seed (``inner_split``); models are fitted on
the inner 75 % and scored on the inner 25 %.  The outer test rows are never
read.  ``T = 0`` is the automatic rule; ``T = k`` forces ``k`` trees and lets
the rule choose the depth.  Used to choose ``MIN_COUNT_TREE_DEPTH`` in
``edprf_core/_depth_rule.py``.

Seeded runs are research, not DP releases.

Usage: ``python benchmarks/bench_count_trees.py --datasets bank,heart --eps 0.1,1 --seeds 3 --trees 0,1,2,4,8``
(one JSON line per fit on stdout, then the means over seeds).
"""

from __future__ import annotations

import argparse
import warnings
from collections import defaultdict

import numpy as np
from _bench_common import add_sweep_arguments, inner_validation_row, inner_validation_splits

from edprf_core import EDPRFClassifier


def sweep(dataset: str, eps_values: list[float], seeds: int, trees: list[int], data_dir: str) -> list[dict]:
    """Accuracy and ROC AUC (macro one-vs-rest for several classes) on the inner validation rows."""
    rows = []
    for seed, inner in inner_validation_splits(dataset, seeds, data_dir):
        schema = inner.schema
        for eps in eps_values:
            for t in trees:
                extra = {} if t == 0 else {"n_trees": t}
                model = EDPRFClassifier(schema, epsilon=eps, random_state=seed, leaf="counts", **extra)
                row = inner_validation_row(model, inner, dataset=dataset, seed=seed, eps=eps, forced_trees=t)
                rows.append(row)
    return rows


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_sweep_arguments(p)
    p.add_argument("--trees", default="0,1,2,4,8,16", help="forced tree counts; 0 = the automatic rule")
    args = p.parse_args()
    warnings.filterwarnings("ignore", category=UserWarning)
    rows = []
    for dataset in args.datasets.split(","):
        rows += sweep(
            dataset,
            [float(e) for e in args.eps.split(",")],
            args.seeds,
            [int(t) for t in args.trees.split(",")],
            args.data_dir,
        )
    groups = defaultdict(list)
    for r in rows:
        groups[(r["dataset"], r["eps"], r["forced_trees"])].append(r)
    print("dataset | eps | forced T | trees | depth | accuracy % | ROC AUC")
    for (dataset, eps, t), group in sorted(groups.items()):
        print(
            f"{dataset} | {eps} | {t} | {group[0]['trees']} | {group[0]['depth']} | "
            f"{100 * np.mean([r['accuracy'] for r in group]):.1f} | {np.mean([r['auc'] for r in group]):.3f}"
        )


if __name__ == "__main__":
    main()
