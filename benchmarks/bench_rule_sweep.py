"""Inner-validation sweep of the automatic rule's constants (issue 23: the accuracy and ranking goals).

For each dataset and outer seed ``s``: the benchmark's stratified 80/20 split
(``_bench_common.make_split``), then a stratified 75/25 split of the
*training* rows with the same seed (``inner_split``); models are fitted on the
inner 75 % and scored on the inner 25 %.  The outer test rows are never read.

Each configuration is a JSON object: estimator parameters (``n_trees``,
``n_bins``, ...) plus research knobs that temporarily replace module constants
of ``edprf_core`` for the duration of one fit and are restored afterwards:
``min_depth`` (``MIN_COUNT_TREE_DEPTH``), ``c`` (the depth rule's constant),
``rows_per_tree`` (``ROWS_PER_COUNT_TREE``), ``shrinkage`` (``SHRINKAGE``) and
``pooling_exponent`` (the log-linear pooling exponent of ``predict_proba``);
``rows_eps_per_threshold`` sets ``n_bins`` by :func:`bins_per_threshold_rule`
(a candidate bin rule that ``results/rule_sweep.md`` rejects).  The knobs are
for this sweep only; a federation never sees them.

Seeded runs are research, not DP releases.

Usage::

    python benchmarks/bench_rule_sweep.py --datasets bank,diabetes --eps 0.5 --seeds 3 \\
        --configs '[{}, {"n_bins": 10}, {"min_depth": 6}]'

(one JSON line per fit on stdout, then the means over seeds.)
"""

from __future__ import annotations

import argparse
import json
import warnings
from collections import defaultdict
from contextlib import contextmanager

import numpy as np
from _bench_common import add_sweep_arguments, inner_validation_row, inner_validation_splits

import edprf_core._depth_rule as depth_rule
import edprf_core._forest as forest_module
from edprf_core import EDPRFClassifier

KNOBS = ("min_depth", "c", "rows_per_tree", "shrinkage", "pooling_exponent", "rows_eps_per_threshold")
BIN_CHOICES = (3, 5, 10, 20)


def bins_per_threshold_rule(schema, n_rows: float, epsilon: float, k: float) -> int:
    """Most bins ``b`` in BIN_CHOICES with ``n * eps / (n_continuous * (b - 1)) >= k`` (else the fewest).

    ``n_continuous``: continuous features without declared edges (public schema); ``n`` the declared
    size (here the inner training size), ``eps`` the forest's share (95 % after the DP count).
    """
    free = sum(1 for f in schema.features if hasattr(f, "edges") and getattr(f, "edges", None) is None)
    best = BIN_CHOICES[0]
    for b in BIN_CHOICES:
        if free == 0 or n_rows * epsilon / (free * (b - 1)) >= k:
            best = b
    return best


@contextmanager
def research_constants(knobs: dict):
    """Replace the named module constants for one fit, then restore them."""
    saved = (
        depth_rule.MIN_COUNT_TREE_DEPTH,
        depth_rule.ROWS_PER_COUNT_TREE,
        dict(depth_rule.public_shape.__kwdefaults__),
        forest_module.SHRINKAGE,
        forest_module.log_linear_pool.__defaults__,
    )
    try:
        if "min_depth" in knobs:
            depth_rule.MIN_COUNT_TREE_DEPTH = int(knobs["min_depth"])
        if "rows_per_tree" in knobs:
            depth_rule.ROWS_PER_COUNT_TREE = float(knobs["rows_per_tree"])
        if "c" in knobs:
            depth_rule.public_shape.__kwdefaults__["c"] = float(knobs["c"])
        if "shrinkage" in knobs:
            forest_module.SHRINKAGE = float(knobs["shrinkage"])
        if "pooling_exponent" in knobs:
            forest_module.log_linear_pool.__defaults__ = (float(knobs["pooling_exponent"]),)
        yield
    finally:
        (
            depth_rule.MIN_COUNT_TREE_DEPTH,
            depth_rule.ROWS_PER_COUNT_TREE,
            kwdefaults,
            forest_module.SHRINKAGE,
            forest_module.log_linear_pool.__defaults__,
        ) = saved
        depth_rule.public_shape.__kwdefaults__.update(kwdefaults)


def sweep(dataset: str, eps_values: list[float], seeds: int, configs: list[dict], data_dir: str) -> list[dict]:
    """Accuracy and ROC AUC (macro one-vs-rest for several classes) on the inner validation rows."""
    rows = []
    for seed, inner in inner_validation_splits(dataset, seeds, data_dir):
        schema = inner.schema
        for eps in eps_values:
            for config in configs:
                knobs = {k: v for k, v in config.items() if k in KNOBS}
                params = {k: v for k, v in config.items() if k not in KNOBS}
                if "rows_eps_per_threshold" in knobs:
                    k = float(knobs["rows_eps_per_threshold"])
                    params["n_bins"] = bins_per_threshold_rule(schema, len(inner.X_train), 0.95 * eps, k)
                with research_constants(knobs):
                    model = EDPRFClassifier(schema, epsilon=eps, random_state=seed, leaf="counts", **params)
                    row = inner_validation_row(
                        model, inner, dataset=dataset, seed=seed, eps=eps, config=json.dumps(config, sort_keys=True)
                    )
                rows.append(row)
    return rows


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_sweep_arguments(p)
    p.add_argument("--configs", default="[{}]", help="JSON list of configurations; {} = the defaults")
    args = p.parse_args()
    configs = json.loads(args.configs)
    if not isinstance(configs, list) or not all(isinstance(c, dict) for c in configs):
        raise SystemExit("error: --configs must be a JSON list of objects, e.g. '[{}, {\"n_bins\": 10}]'")
    warnings.filterwarnings("ignore", category=UserWarning)
    rows = []
    for dataset in args.datasets.split(","):
        rows += sweep(dataset, [float(e) for e in args.eps.split(",")], args.seeds, configs, args.data_dir)
    groups = defaultdict(list)
    for r in rows:
        groups[(r["dataset"], r["eps"], r["config"])].append(r)
    print("dataset | eps | configuration | trees | depth | bins | accuracy % | ROC AUC | seeds")
    for (dataset, eps, config), group in sorted(groups.items()):
        print(
            f"{dataset} | {eps:g} | {config} | {group[0]['trees']} | {group[0]['depth']} | {group[0]['bins']} | "
            f"{100 * np.mean([r['accuracy'] for r in group]):.2f} | {np.mean([r['auc'] for r in group]):.4f} | "
            f"{len(group)}"
        )


if __name__ == "__main__":
    main()
