"""Bias and coverage of the consortium's held-out accuracy from noised counts, with and without a hostile party.

Each cell simulates ``--reps`` federations with a known truth: party ``i`` holds
``n_i`` held-out rows, its correct count is Binomial(n_i, p_i), and it replies both
counts with the parties' own discrete Laplace noise (scale 2/ε, research sampler,
fixed seeds).  The truth is the row-weighted accuracy ``Σ n_i p_i / Σ n_i`` of the
honest parties.  ``max-party-rows`` is the largest honest ``n_i`` (what the consortium
would declare).  A hostile party, when present, replies

- ``box corner``: (0 correct of B + m), the most damaging reply inside the box a party
  of B held-out rows makes plausible (m: 12 noise scales);
- ``0 of 10^6``: the issue's attack, outside the box.

Columns: the coordinator's estimate (``server._evaluation.evaluation_summary``, the code
the coordinator runs) — its bias (mean minus truth, ± one simulation SE), coverage of
``ci95`` and of ``ci95_if_one_party_lied``, median interval width, the median reported
``max_one_party_shift`` — then the previous estimator at its defaults (each party clipped
to 0 <= correct <= total <= 1,000,000, then pooled) and whether the skip rule
(evaluation-max-interval-width 0.1) would have run the round at all.  Run::

    python benchmarks/bench_consortium_estimate.py [--reps 2000] [--quick]

and it writes ``benchmarks/results/consortium_estimate.md``.
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import numpy as np

from edprf_core.mechanisms import discrete_laplace_counts
from server import CoordinatorConfig
from server._consortium_estimate import noise_margin
from server._evaluation import evaluation_plan, evaluation_summary

OUT = Path(__file__).resolve().parent / "results" / "consortium_estimate.md"
LAYOUTS = {  # name: (held-out rows of each party, accuracy of each party) as functions of the party count
    "IID, 300 rows each": (lambda k: np.full(k, 300), lambda k: np.full(k, 0.8)),
    "small, 40 rows each, accuracies 0.65-0.95": (lambda k: np.full(k, 40), lambda k: np.linspace(0.65, 0.95, k)),
}
HOSTILE = {"none": None, "box corner (0 of B+m)": lambda b, m: (0, int(b + m)), "0 of 10^6": lambda b, m: (0, 10**6)}


PREVIOUS_BOUND = 1_000_000
"""The previous default of max-party-rows."""


READING = """
Reading (written with the table; figures move with the seeds only within the stated SE):

- Without a hostile party the estimate is unbiased within about 2 simulation SEs and the 95 % interval
  covers 0.94-0.97 wherever the skip rule lets the round run, and also in the small-party rows it
  skips; the previous estimator was 0.2 low for 5 or 20 parties of 40 rows at eps 0.1 (86-99 % of
  runs below the truth), the bias the issue reported.
- The one exception is 5 parties of 40 rows at eps 0.1 (noise sd 63 on a pooled total of 200): the
  ratio's bias correction is second-order only, and the estimate is 0.05 low; its interval is 0.85
  wide and the skip rule never runs that round.
- The issue's forged (0 of 10^6) is refused as implausible: rows equal to "none" within noise, where
  the previous defaults reported 0.0001-0.005.
- A forged reply inside the box moves the estimate by its share: e.g. 5 IID parties at eps 1,
  0.8 x 324 / (1,500 + 324) = 0.142; the plain interval (which assumes every party honest) then misses,
  the one-party interval covers 0.97-0.99.
"""


def _previous(correct: np.ndarray, total: np.ndarray, bound: int = PREVIOUS_BOUND) -> float:
    """The estimator before this change: every party clipped to 0 <= c <= t <= bound, then pooled."""
    t = np.clip(total, 0, bound)
    c = np.clip(correct, 0, t)
    return float(c.sum() / t.sum()) if t.sum() > 0 else float("nan")


def cell(k: int, layout: str, eps: float, hostile: str, reps: int, seed: int) -> dict:
    rows, acc = LAYOUTS[layout][0](k), LAYOUTS[layout][1](k)
    truth = float((rows * acc).sum() / rows.sum())
    bound = int(rows.max())
    cfg = CoordinatorConfig(schema_path="s.toml", evaluation_epsilon=eps, max_party_rows=bound)
    rng = np.random.default_rng(seed)
    correct = rng.binomial(np.broadcast_to(rows, (reps, k)), acc)
    noisy = discrete_laplace_counts(np.stack([correct, np.broadcast_to(rows, correct.shape)], -1), eps, 2, rng)
    forged = HOSTILE[hostile](bound, noise_margin(eps)) if HOSTILE[hostile] else None
    est, prev, cov, cov_robust, widths, shifts = [], [], 0, 0, [], []
    for r in range(reps):
        replies = [(i, {"correct": int(noisy[r, i, 0]), "total": int(noisy[r, i, 1])}, "") for i in range(k)]
        c_all, t_all = noisy[r, :, 0], noisy[r, :, 1]
        if forged is not None:
            replies.append((k, {"correct": forged[0], "total": forged[1]}, ""))
            c_all, t_all = np.append(c_all, forged[0]), np.append(t_all, forged[1])
        out = evaluation_summary(replies, [], cfg)
        est.append(out["accuracy_unclipped"])
        prev.append(_previous(c_all, t_all))
        lo, hi = out["ci95"]
        cov += lo <= truth <= hi
        widths.append(hi - lo)
        lo, hi = out["ci95_if_one_party_lied"]
        cov_robust += lo <= truth <= hi
        shifts.append(out["max_one_party_shift"] if out["max_one_party_shift"] is not None else math.inf)
    est, prev = np.array(est), np.array(prev)
    ok = np.isfinite(est)
    return {
        "parties": k,
        "layout": layout,
        "eps": eps,
        "hostile": hostile,
        "truth": truth,
        "bias": float(est[ok].mean() - truth),
        "se": float(est[ok].std() / math.sqrt(ok.sum())),
        "finite": float(ok.mean()),
        "coverage": cov / reps,
        "coverage_robust": cov_robust / reps,
        "width": float(np.median(widths)),
        "shift": float(np.median(shifts)),
        "previous_bias": float(np.nanmean(prev) - truth),
        "previous_below": float(np.mean(prev[np.isfinite(prev)] < truth)),
        "runs": evaluation_plan(cfg, k).send,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--reps", type=int, default=2000, help="federations per cell (default: %(default)s)")
    parser.add_argument("--quick", action="store_true", help="200 federations per cell, printed only")
    args = parser.parse_args()
    reps = 200 if args.quick else args.reps
    started = time.perf_counter()
    header = (
        "| parties | held-out rows | ε | hostile party | truth | bias (± SE) | coverage ci95 | coverage if one "
        "lied | median width | median one-party reach | previous estimator's bias (runs below truth) | "
        "skip rule runs it |"
    )
    lines = [header, "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    seed = 0
    for k in (5, 20):
        for layout in LAYOUTS:
            for eps in (0.1, 1.0):
                for hostile in HOSTILE:
                    seed += 1
                    c = cell(k, layout, eps, hostile, reps, seed)
                    lines.append(
                        f"| {k} | {layout} | {eps:g} | {hostile} | {c['truth']:.3f} | {c['bias']:+.4f} "
                        f"(± {c['se']:.4f}) | {c['coverage']:.3f} | {c['coverage_robust']:.3f} | {c['width']:.3f} | "
                        f"{c['shift']:.3f} | {c['previous_bias']:+.4f} ({c['previous_below']:.0%}) | "
                        f"{'yes' if c['runs'] else 'no'} |"
                    )
                    print(lines[-1], flush=True)
    elapsed = time.perf_counter() - started
    text = (
        f"# Consortium evaluation estimate: bias and coverage\n\n"
        f"`python benchmarks/bench_consortium_estimate.py --reps {reps}` ({reps} simulated federations per "
        f"row, fixed seeds, {elapsed:.0f} s). Truth: the honest parties' row-weighted accuracy. "
        "B = max-party-rows = the largest honest party's held-out rows; m = 12 noise scales. "
        "Bias: mean estimate (unclipped) minus truth; runs whose noisy total is not positive have no "
        "estimate and are left out of the mean. Coverage: share of 95 % intervals containing the truth (nominal 0.95). "
        "'if one lied': `ci95_if_one_party_lied`, the hull of the all-party and leave-one-out intervals. "
        "One-party reach: `max_one_party_shift`, the most any one reply inside its plausible box could move "
        "the estimate. Previous estimator: each party clipped to 0 <= correct <= total <= 1,000,000 (the previous "
        "default of max-party-rows) before pooling. "
        "Skip rule: whether evaluation-max-interval-width 0.1 lets the round run (it spends nothing "
        "otherwise).\n\n" + "\n".join(lines) + "\n" + READING
    )
    if not args.quick:
        OUT.write_text(text)
        print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
