"""Cost of the exact (OpenDP) mechanism backend against the numpy backend, in the same process.

One party's release: one binary tree of depth 9 with 20 bins, fitted on the 100,000 rows of
the diabetes prediction data (read once, encoded inside each fit as a party does).  Reports
the median fit time of each backend over repeats and their ratio, and the accuracy of both
on the same rows (a sanity check, not an evaluation).

    python benchmarks/bench_exact_sampler.py [--repeats 7] [--data-dir ../shared/data]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._bench_common import DEFAULT_DATA_DIR, require_diabetes
from edprf_core import example_schema
from edprf_core.datasets import read_csv
from edprf_core.research import PaperEDPRFClassifier


def _fit_seconds(X, y, schema, sampler: str, depth: int) -> tuple[float, float]:
    seed = None if sampler == "exact" else 0
    t0 = time.perf_counter()
    clf = PaperEDPRFClassifier(
        schema, epsilon=1.0, n_trees=1, max_depth=depth, n_bins=20, sampler=sampler, random_state=seed
    ).fit(X, y)
    return time.perf_counter() - t0, clf.score(X, y)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--depth", type=int, default=9)
    p.add_argument("--data-dir", default=str(DEFAULT_DATA_DIR))
    args = p.parse_args(argv)
    schema = example_schema("diabetes_prediction")
    X, y = read_csv(require_diabetes(args.data_dir), schema)
    times: dict[str, list[float]] = {"numpy": [], "exact": []}
    scores: dict[str, list[float]] = {"numpy": [], "exact": []}
    _fit_seconds(X, y, schema, "exact", args.depth)  # warm-up: imports, OpenDP library load
    for _ in range(args.repeats):
        for sampler in ("numpy", "exact"):  # interleaved, so drift hits both
            seconds, score = _fit_seconds(X, y, schema, sampler, args.depth)
            times[sampler].append(seconds)
            scores[sampler].append(score)
    ratios = [e / n for e, n in zip(times["exact"], times["numpy"])]
    print(f"one binary tree, depth {args.depth}, 20 bins, {len(X)} rows, {args.repeats} repeats (median [min, max])")
    for sampler in ("numpy", "exact"):
        t = times[sampler]
        print(
            f"  {sampler:5s}: fit {statistics.median(t):.3f} s [{min(t):.3f}, {max(t):.3f}], "
            f"training accuracy {statistics.median(scores[sampler]):.4f}"
        )
    print(f"  exact / numpy: {statistics.median(ratios):.2f}x [{min(ratios):.2f}, {max(ratios):.2f}]")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
