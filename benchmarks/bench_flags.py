#!/usr/bin/env python
"""Quality flags (issue 12): false-positive rate among honest parties (IID and label-skewed), and power
against a party with shuffled labels as a function of its share of the rows.

Each run: a stratified 80/20 split of the data; the coordinator keeps 10 % of the training rows as its
validation data; the rest is split among N parties (IID, or Dirichlet label skew with ``--skew``
concentration); each party fits its default release (one tree, leaf counts, depth from a DP count,
20 bins, depth cap 8: the coordinator's defaults; epsilon = 1, seeded research randomness); the
coordinator merges them and runs ``server._contribution.party_contributions`` at level alpha.

- ``fpr``: no bad party; the flag rate over all party-runs, with a 95 % Clopper-Pearson interval.
- ``power``: one more party holds a share s of the rows with its labels shuffled (the honest parties
  split the rest, IID); the share of runs in which it is flagged, and the honest parties' flag rate.

The rule's constants (``LIFT_SHARE``, ``WEAK_SHARE_LIMIT``) were chosen on seeds 1000-1199; report on
other seeds (the default starts at 0).  For comparison the table also gives the previous rule
(leave-one-out t test of the vote's kappa, and kappa below half the median), computed from the same
runs' ``kappa_with_others``.

    python benchmarks/bench_flags.py --seeds 200 --power-seeds 100   # ~17 min on 2 cores

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

from _bench_common import DEFAULT_DATA_DIR, RESULTS_DIR, make_split
from _bench_datasets import load_dataset

SHARES = (0.01, 0.02, 0.05, 0.1, 0.2)
_DATA: dict = {}


def _previous_rule(kappa: np.ndarray, alpha: float) -> list[bool]:
    """The rule before issue 12's fix: leave-one-out t test of kappa and kappa below half the median."""
    from scipy import stats

    out = []
    for i in range(kappa.size):
        others = np.delete(kappa, i)
        if kappa.size < 4:
            out.append(False)
            continue
        spread = others.std(ddof=1)
        gap = kappa[i] - others.mean()
        p = (
            (0.0 if gap < 0 else 1.0)
            if spread == 0
            else stats.t.cdf(gap / (spread * np.sqrt(1 + 1 / others.size)), df=others.size - 1)
        )
        out.append(bool(p < alpha and kappa[i] < 0.5 * np.median(kappa)))
    return out


def run_one(job: tuple) -> tuple[list[bool], bool | None, list[bool], bool | None]:
    """(honest flags, bad party's flag or None) under the current rule, then the same under the previous one."""
    dataset, n_parties, seed, bad_share, skew, alpha, data_dir = job
    from edprf_core import EDPRFClassifier, merge_forests
    from edprf_core.encoding import encode_labels
    from edprf_fl.simulation import Partitioning, partition_rows
    from server._contribution import party_contributions

    warnings.filterwarnings("ignore")
    if dataset not in _DATA:
        _DATA[dataset] = load_dataset(dataset, data_dir)
    X, y, schema = _DATA[dataset]
    split = make_split(X, y, schema, seed, dataset=dataset)
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(split.y_train))
    n_val = len(order) // 10
    val, rest = order[:n_val], order[n_val:]
    y_train = split.y_train.to_numpy().copy()
    n_bad = round(bad_share * len(rest))
    bad_rows, rest = rest[:n_bad], rest[n_bad:]
    if skew > 0:
        parts = [
            rest[p]
            for p in partition_rows(
                split.X_train.iloc[rest], split.y_train.iloc[rest], n_parties, Partitioning("dirichlet", skew), rng
            )
        ]
    else:
        parts = np.array_split(rest, n_parties)
    if n_bad:
        y_train[bad_rows] = rng.permutation(y_train[bad_rows])
        parts.append(bad_rows)
    forests = []
    for i, rows in enumerate(parts):
        clf = EDPRFClassifier(
            schema, epsilon=1.0, n_trees=1, max_depth_cap=8, n_bins=20, random_state=seed * 100 + i, residual_pass=False
        )
        forests.append(clf.fit(split.X_train.iloc[rows], y_train[rows]).forest_)
    merged = merge_forests(forests, labels=[f"p{i}" for i in range(len(parts))])
    codes = merged.encode(split.X_train.iloc[val])
    predicted = np.argmax(merged.predict_proba(split.X_train.iloc[val]), axis=1)
    y_val = encode_labels(split.y_train.iloc[val], schema).astype(np.int64)
    out = party_contributions(merged, codes, y_val, alpha, global_predicted=predicted)
    flags = [c.flagged for c in out]
    old = _previous_rule(np.array([c.kappa_with_others for c in out]), alpha)
    if n_bad:
        return flags[:-1], flags[-1], old[:-1], old[-1]
    return flags, None, old, None


def _interval(k: int, n: int) -> str:
    from scipy import stats

    lo = stats.beta.ppf(0.025, k, n - k + 1) if k > 0 else 0.0
    hi = stats.beta.ppf(0.975, k + 1, n - k) if k < n else 1.0
    return f"{k}/{n} = {k / n:.3f} ({lo:.3f}-{hi:.3f})"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seeds", type=int, default=200, help="runs per no-bad-party setting")
    p.add_argument("--power-seeds", type=int, default=100, help="runs per bad-party share")
    p.add_argument("--first-seed", type=int, default=0)
    p.add_argument("--datasets", default="diabetes,wall")
    p.add_argument("--parties", default="5,10,20", help="honest parties")
    p.add_argument("--alpha", type=float, default=0.01)
    p.add_argument("--skew", type=float, default=0.5, help="Dirichlet concentration of the skewed setting")
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--shares", default=",".join(map(str, SHARES)), help="bad party's shares of the rows")
    p.add_argument("--power-target", type=float, default=0.8)
    p.add_argument("--data-dir", default=str(DEFAULT_DATA_DIR))
    p.add_argument("--out", default=str(RESULTS_DIR))
    args = p.parse_args(argv)
    t0 = time.perf_counter()
    shares = [float(v) for v in args.shares.split(",")]
    first = args.first_seed
    lines = [
        "# Quality flags (issue 12)",
        "",
        f"Command: `python benchmarks/bench_flags.py {' '.join(argv if argv is not None else sys.argv[1:])}`.",
        "",
        (
            f"Rule (`server/_contribution.py`): a party is flagged when its probability lift (how much more "
            f"probability its trees give the validation rows' true class than a label drawn at the rows' class "
            f"frequencies) is significantly below 0.1 x the other parties' median lift, one-sided level alpha = "
            f"{args.alpha:g}; inconclusive (no flag) when more than 15 % of the others are below 0.2 x their "
            "median.  Constants chosen on seeds 1000-1199; the runs below use seeds "
            f"{first}..{first + max(args.seeds, args.power_seeds) - 1}.  Epsilon = 1, one tree per party, leaf "
            "counts, depth from a DP count (cap 8), 20 bins.  95 % Clopper-Pearson intervals in parentheses.  "
            '"previous": the rule before (leave-one-out t test of the vote\'s kappa and kappa < half the median), '
            "on the same runs."
        ),
        "",
    ]
    fpr_rows = [
        "## Honest parties only: flag rate (false positives)",
        "",
        "| dataset | parties | partition | flagged, current rule | flagged, previous rule |",
        "|---|---|---|---|---|",
    ]
    pow_rows = [
        "## One party with shuffled labels (the others IID)",
        "",
        (
            "| dataset | honest parties | bad party's share | bad party flagged (power) | honest flagged | "
            "power, previous rule |"
        ),
        "|---|---|---|---|---|---|",
    ]
    smallest = [
        f"## Shares with power >= {args.power_target:g}",
        "",
        (
            "Tested shares of the shuffled party at which the current rule flags it in at least "
            f"{args.power_target:g} of the runs, and the smallest of them.  Power need not grow with the "
            "share: the rows are fixed, so a larger bad party leaves the honest ones fewer rows and weaker "
            "trees."
        ),
        "",
        "| dataset | honest parties | shares with power >= target | smallest |",
        "|---|---|---|---|",
    ]
    with ProcessPoolExecutor(args.jobs) as pool:
        for dataset in args.datasets.split(","):
            for n in (int(v) for v in args.parties.split(",")):
                for skew in (0.0, args.skew):
                    jobs = [
                        (dataset, n, s, 0.0, skew, args.alpha, args.data_dir) for s in range(first, first + args.seeds)
                    ]
                    honest, old = [], []
                    for flags, _, old_flags, _ in pool.map(run_one, jobs, chunksize=4):
                        honest += flags
                        old += old_flags
                    kind = "IID" if skew == 0 else f"Dirichlet {skew:g}"
                    fpr_rows.append(
                        f"| {dataset} | {n} | {kind} | {_interval(sum(honest), len(honest))} | "
                        f"{_interval(sum(old), len(old))} |"
                    )
                    print(fpr_rows[-1], file=sys.stderr, flush=True)
                powers = {}
                for share in shares:
                    jobs = [
                        (dataset, n, s, share, 0.0, args.alpha, args.data_dir)
                        for s in range(first, first + args.power_seeds)
                    ]
                    honest, bad, old_bad = [], [], []
                    for flags, flag_bad, _, old_flag_bad in pool.map(run_one, jobs, chunksize=4):
                        honest += flags
                        bad.append(flag_bad)
                        old_bad.append(old_flag_bad)
                    powers[share] = sum(bad) / len(bad)
                    pow_rows.append(
                        f"| {dataset} | {n} | {share:g} | {_interval(sum(bad), len(bad))} | "
                        f"{_interval(sum(honest), len(honest))} | {sum(old_bad) / len(old_bad):.2f} |"
                    )
                    print(pow_rows[-1], file=sys.stderr, flush=True)
                holding = [s for s in shares if powers[s] >= args.power_target]
                smallest.append(
                    f"| {dataset} | {n} | {', '.join(f'{s:g}' for s in holding) or 'none'} | "
                    f"{min(holding) if holding else '–'} |"
                )
    text = "\n".join(lines + fpr_rows + [""] + pow_rows + [""] + smallest)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "flags.md").write_text(text + f"\n\n{time.perf_counter() - t0:.0f} s on {args.jobs} processes.\n")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
