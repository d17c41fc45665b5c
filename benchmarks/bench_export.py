#!/usr/bin/env python
"""Throughput of the exported ONNX model in onnxruntime against scikit-learn's RandomForestClassifier (issue 21).

One eDPRF forest (leaf counts, log-linear pooling, binary splits, 20 bins; on a
two-class dataset with the default marginals part, so its graph has two inputs) and
one scikit-learn RandomForestClassifier with the same number of trees and the
same max_depth are fitted on the same rows; then, in this process, alternating
rounds time ``predict_proba`` on the same rows:

- ``onnxruntime (codes)``: the exported graph on the schema's codes (what a
  serving process that already holds codes pays; both grids' with a marginals part);
- ``onnxruntime (codes, + support)``: the same, asking for all four outputs (``probabilities`` and the
  per-row support flags ``support_low``, ``support_low_features``, ``support_low_leaf_share``);
- ``onnxruntime (encoding + graph)``: ``onnx_inputs`` (``encode_features`` per grid) on the raw frame, then
  the graph;
- ``eDPRF predict_proba``: the package on the raw frame (for reference);
- ``scikit-learn``: ``predict_proba`` on a prepared float matrix (categoricals as
  their declared index, prepared once outside the timing), ``n_jobs=1``.

onnxruntime runs with one intra-op and one inter-op thread.  Reported: the
median of ``--repeats`` runs, rows/s = rows / median, and the ratio of rows/s
against scikit-learn (above 1: faster than scikit-learn).  Writes
``benchmarks/results/export.md`` (or ``--out``) and prints it.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import gc
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _bench_common import DEFAULT_DATA_DIR, RESULTS_DIR, cpu_info, load_dataset, log, numeric_matrix
from bench_speed import load_average

DATASETS = ("diabetes", "bank", "wall")


def _load(name: str, data_dir: Path):
    if name == "bank":
        from edprf_core import load_embedded

        return load_embedded("bank_marketing")
    return load_dataset(name, data_dir)


def _median_times(fns: dict, repeats: int) -> dict[str, list[float]]:
    """Each function once per round, ``repeats`` rounds (alternating: both sides see the same load)."""
    times: dict[str, list[float]] = {k: [] for k in fns}
    for i in range(repeats):
        for name, fn in fns.items():
            gc.collect()
            t0 = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t0)
        log(f"  round {i + 1}/{repeats}: " + ", ".join(f"{k} {v[-1]:.3f} s" for k, v in times.items()))
    return times


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--data-dir",
        type=Path,
        default=DEFAULT_DATA_DIR,
        help=f"directory holding the shared datasets (default {DEFAULT_DATA_DIR})",
    )
    p.add_argument("--dataset", choices=DATASETS, default="diabetes")
    p.add_argument("--trees", type=int, default=100)
    p.add_argument("--max-depth", type=int, default=6)
    p.add_argument("--rows", type=int, default=None, help="use only the first N rows (quick runs)")
    p.add_argument("--repeats", type=int, default=5, help="runs per measurement; the median is reported (default 5)")
    p.add_argument("--out", type=Path, default=RESULTS_DIR / "export.md")
    args = p.parse_args(argv)

    import onnxruntime as ort
    from sklearn import __version__ as skl_version
    from sklearn.ensemble import RandomForestClassifier

    from edprf_core import EDPRFClassifier
    from edprf_core.encoding import encode_labels
    from edprf_core.export import encoding_spec, forest_to_onnx, onnx_inputs

    X, y, schema = _load(args.dataset, args.data_dir)
    if args.rows:
        X, y = X.iloc[: args.rows].reset_index(drop=True), y.iloc[: args.rows].reset_index(drop=True)
    n, T, d = len(X), args.trees, args.max_depth
    log(f"bench_export: {args.dataset}, {n} rows, {T} trees, max_depth {d}, {args.repeats} repeats")
    Xn = numeric_matrix(X, schema)
    yn = encode_labels(y, schema)
    clf = EDPRFClassifier(schema, epsilon=1.0, n_trees=T, max_depth=d, n_bins=20, random_state=0).fit(X, y)
    forest = clf.forest_
    sk = RandomForestClassifier(n_estimators=T, max_depth=d, n_jobs=1, random_state=0).fit(Xn, yn)
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    t0 = time.perf_counter()
    model = forest_to_onnx(forest)
    t_export = time.perf_counter() - t0
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    spec = encoding_spec(forest)
    feed = onnx_inputs(X, spec)  # codes (and, with a marginals part, the codes on its grid)
    got = session.run(["probabilities"], feed)[0]
    gap = float(np.max(np.abs(got - forest.predict_proba(X))))
    from edprf_core.prediction import row_support

    _, low, low_features, share = session.run(None, feed)
    support = row_support(forest, X)
    support_equal = (
        np.array_equal(low, support.low)
        and np.array_equal(low_features, support.low_features)
        and np.array_equal(share, support.low_leaf_share, equal_nan=True)
    )
    forest.predict_proba(X)  # compiles the routing table before the timing

    fns = {
        "onnxruntime (codes)": lambda: session.run(["probabilities"], feed),
        "onnxruntime (codes, + support)": lambda: session.run(None, feed),
        "onnxruntime (encoding + graph)": lambda: session.run(["probabilities"], onnx_inputs(X, spec)),
        "eDPRF predict_proba": lambda: forest.predict_proba(X),
        "scikit-learn": lambda: sk.predict_proba(Xn),
    }
    load_before = load_average()
    times = _median_times(fns, args.repeats)
    medians = {k: statistics.median(v) for k, v in times.items()}
    sk_rate = n / medians["scikit-learn"]
    head = "| predict_proba | median (s) | rows/s | rows/s ratio vs scikit-learn |"
    passed = forest.marginals is not None and forest.marginals.residual_pass is not None
    mix = (
        f", mixed with a marginals part of share {forest.marginals_share:g} on {forest.marginals_bins} bins"
        + (" (with its residual pass: the graph gathers the fitted terms)" if passed else "")
        + ": the graph takes its codes as a second input"
        if forest.marginals is not None
        else ""
    )
    lines = [
        "# Throughput of the exported ONNX model",
        "",
        (
            f"Machine: {cpu_info()}; Python {platform.python_version()}, numpy {np.__version__}, onnxruntime "
            f"{ort.__version__}, scikit-learn {skl_version}. Dataset {args.dataset}, {n:,} rows; {T} trees, "
            f"max_depth {d} on both sides (eDPRF: leaf counts, log-linear pooling, binary splits, 20 bins, "
            f"epsilon 1{mix}). Median of {args.repeats} alternating runs in one process, one thread each. Ratio above 1: "
            "faster than scikit-learn."
        ),
        "",
        f"Command: `python benchmarks/bench_export.py {' '.join(argv if argv is not None else sys.argv[1:])}`",
        "",
        head,
        "|---|---|---|---|",
    ]
    for name, med in medians.items():
        rate = n / med
        lines.append(f"| {name} | {med:.4f} | {rate:,.0f} | {rate / sk_rate:.2f}x |")
    lines += [
        "",
        f"- Largest gap between the graph's probabilities and `predict_proba` on these rows: {gap:.1e}.",
        (
            f"- The graph's support outputs equal `row_support`'s on these rows: {support_equal} "
            f"({int(support.low.sum()):,} rows low)."
        ),
        f"- Building the graph (`forest_to_onnx`): {t_export:.2f} s, {model.ByteSize() / 1e6:.2f} MB.",
        (
            "- scikit-learn's float matrix was prepared once outside the timing; ours on codes likewise "
            "(`onnxruntime (codes)`); `encoding + graph` includes the schema encoding of the raw frame."
        ),
    ]
    lines.append(
        f"- Load average (1/5/15 min) before the runs: {load_before}; after: {load_average()} (the machine "
        "is shared: runs alternate so every side sees the same load)."
    )
    for name, ts in times.items():
        lines.append(f"- {name}: runs " + ", ".join(f"{x:.4f}" for x in ts) + " s")
    text = "\n".join(lines) + "\n"
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
