#!/usr/bin/env python
"""Quality flags (issue 12): false-positive rate among honest IID parties, and power against a party
with shuffled labels as a function of its share of the rows.

Each run: a stratified 80/20 split of the data; the coordinator keeps 10 % of the training rows as its
validation data; the rest is split among N parties (IID); each party fits its default release
(one tree, leaf counts, depth from a DP count; epsilon = 1, seeded research randomness); the coordinator
merges them and runs ``server._contribution.party_contributions`` at level alpha.

- ``fpr``: no bad party; the flag rate over all party-runs, with a 95 % Clopper-Pearson interval.
- ``power``: the last party's labels are shuffled and it holds a share s of the rows; the share of runs
  in which it is flagged, and the honest parties' flag rate in the same runs.

    python benchmarks/bench_flags.py --seeds 60        # ~5 min on 2 cores

Writes ``results/flags.md``.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import sys
import time
import warnings
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _bench_common import DEFAULT_DATA_DIR, RESULTS_DIR, make_split  # noqa: E402
from _bench_datasets import load_dataset  # noqa: E402

SHARES = (0.02, 0.05, 0.1, 0.2)


def run_one(job: tuple[str, int, int, float, float, str]) -> tuple[list[bool], bool | None]:
    """(flags of the honest parties, flag of the bad party or None)."""
    dataset, n_parties, seed, bad_share, alpha, data_dir = job
    from edprf_core import EDPRFClassifier, encode_labels, merge_forests
    from server._contribution import party_contributions

    warnings.filterwarnings("ignore")
    X, y, schema = load_dataset(dataset, data_dir)
    split = make_split(X, y, schema, seed, dataset=dataset)
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(split.y_train))
    n_val = len(order) // 10
    val, rest = order[:n_val], order[n_val:]
    if bad_share > 0:
        n_bad = int(round(bad_share * len(rest)))
        parts = np.array_split(rest[n_bad:], n_parties - 1) + [rest[:n_bad]]
    else:
        parts = np.array_split(rest, n_parties)
    y_train = split.y_train.to_numpy().copy()
    if bad_share > 0:
        y_train[parts[-1]] = rng.permutation(y_train[parts[-1]])
    forests = []
    for i, rows in enumerate(parts):
        clf = EDPRFClassifier(schema, epsilon=1.0, n_estimators=1, max_depth_cap=8, n_bins=20,
                              random_state=seed * 100 + i)
        forests.append(clf.fit(split.X_train.iloc[rows], y_train[rows]).forest_)
    merged = merge_forests(forests, labels=[f"p{i}" for i in range(n_parties)])
    codes = merged.encode(split.X_train.iloc[val])
    out = party_contributions(merged, codes, encode_labels(split.y_train.iloc[val], schema).astype(np.int64), alpha)
    flags = [c.flagged for c in out]
    if bad_share > 0:
        return flags[:-1], flags[-1]
    return flags, None


def _interval(k: int, n: int) -> str:
    from scipy import stats

    lo = stats.beta.ppf(0.025, k, n - k + 1) if k > 0 else 0.0
    hi = stats.beta.ppf(0.975, k + 1, n - k) if k < n else 1.0
    return f"{k}/{n} = {k / n:.3f} (95% CI {lo:.3f}-{hi:.3f})"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seeds", type=int, default=60)
    p.add_argument("--datasets", default="wall,diabetes")
    p.add_argument("--parties", default="5,10")
    p.add_argument("--alpha", type=float, default=0.01)
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--shares", default=",".join(map(str, SHARES)), help="bad party's shares of the rows")
    p.add_argument("--data-dir", default=str(DEFAULT_DATA_DIR))
    p.add_argument("--out", default=str(RESULTS_DIR))
    args = p.parse_args(argv)
    t0 = time.perf_counter()
    lines = ["# Quality flags (issue 12)", "",
             f"Command: `python benchmarks/bench_flags.py {' '.join(argv or sys.argv[1:])}`. Level alpha = "
             f"{args.alpha:g}; leave-one-out t test of each party's chance-corrected agreement with the others, "
             "and kappa below half the median (`server/_contribution.py`). IID parties, epsilon = 1, default releases, seeds 0.."
             f"{args.seeds - 1}. 95 % Clopper-Pearson intervals.", "",
             "| dataset | parties | bad party's share | honest parties flagged (FPR) | bad party flagged (power) |",
             "|---|---|---|---|---|"]
    with ProcessPoolExecutor(args.jobs) as pool:
        for dataset in args.datasets.split(","):
            for n in (int(v) for v in args.parties.split(",")):
                for share in (0.0, *(float(v) for v in args.shares.split(","))):
                    jobs = [(dataset, n, seed, share, args.alpha, args.data_dir) for seed in range(args.seeds)]
                    honest, bad = [], []
                    for flags, flag_bad in pool.map(run_one, jobs):
                        honest += flags
                        if flag_bad is not None:
                            bad.append(flag_bad)
                    power = _interval(sum(bad), len(bad)) if bad else "–"
                    lines.append(f"| {dataset} | {n} | {share:g} | {_interval(sum(honest), len(honest))} | {power} |")
                    print(lines[-1], file=sys.stderr, flush=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "flags.md").write_text("\n".join(lines) + f"\n\n{time.perf_counter() - t0:.0f} s on 2 processes.\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
