#!/usr/bin/env python
"""Throughput and memory of ``edprf predict`` against scikit-learn's RandomForestClassifier (issue 21).

A global model of ``--parties`` parties (``--trees`` trees in all, ``--depth`` levels; seeded fits, signed
releases merged by ``protocol.build_global_model``) and a scikit-learn forest of the same tree count and
depth (``n_jobs=1``) trained on the same rows.  Measured in this process, alternating, median of
``--repeats`` runs each; rates in rows per second:

1. ``edprf predict`` as a whole: the command in a child process (interpreter start, imports, loading and
   verifying the model, reading the CSV in chunks, per-row statuses, writing the CSV);
2. scikit-learn file to file, the same job in this process: ``pandas.read_csv``, the categorical columns
   coded, ``predict_proba``, ``DataFrame.to_csv`` (no per-row status, no start-up);
3. in process, data in memory: ``load_classifier(...).predict_proba(DataFrame)`` against
   ``RandomForestClassifier.predict_proba`` on a prepared float matrix.

Ratio = scikit-learn's time / ours (above 1: ours faster).  Then the peak resident memory (``ru_maxrss``
of the child) of ``edprf predict`` on ``--rows`` and on ``--big-rows`` (default 10^6) rows: bounded
memory means the two are close.

Data: the diabetes file (``--data-dir``, default ``../shared/data``; never copied) when present, else the
embedded wall robot data; rows drawn with replacement to the wanted count, written as CSV to a temporary
directory.  Writes ``benchmarks/results/predict.md``.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _bench_common import DEFAULT_DATA_DIR, REPO_ROOT, RESULTS_DIR, cpu_info, diabetes_path, load_dataset, log

from edprf_core import CategoricalFeature, EDPRFClassifier
from edprf_core.encoding import encode_labels
from protocol import (
    PartyKeyRegistry,
    ReleasePolicy,
    build_global_model,
    decode_release,
    encode_release,
    generate_signing_key,
    load_classifier,
    save_public_key,
)


def build_model(X: pd.DataFrame, y: pd.Series, schema, parties: int, trees: int, depth: int, out: Path) -> None:
    """Signed releases of ``parties`` seeded fits on disjoint rows, merged into ``out/global-model.edprf``."""
    keys_dir = out / "keys"
    keys_dir.mkdir(parents=True, exist_ok=True)
    keys = {f"party-{i}": generate_signing_key("ed25519") for i in range(parties)}
    for party, key in keys.items():
        save_public_key(key.public_key(), keys_dir / f"{party}.pub.pem")
    registry = PartyKeyRegistry({p: k.public_key() for p, k in keys.items()})
    policy = ReleasePolicy(max_epsilon=10.0, max_depth=depth, max_n_trees=trees, max_bytes=1 << 26, max_n_bins=64)
    releases = []
    rows = np.array_split(np.random.default_rng(0).permutation(len(X)), parties)
    per_party = trees // parties
    for i, (party, key) in enumerate(keys.items()):
        clf = EDPRFClassifier(
            schema, epsilon=1.0, n_trees=per_party, max_depth=depth, n_bins=20, random_state=i, residual_pass=False
        ).fit(X.iloc[rows[i]], y.iloc[rows[i]])
        releases.append(decode_release(encode_release(clf.forest_, party, key), schema, policy, registry))
    (out / "global-model.edprf").write_bytes(build_global_model(schema, releases, {"run_id": "bench"}))


def numeric(frame: pd.DataFrame, schema) -> np.ndarray:
    """What scikit-learn's forest sees: numbers, categories as their declared index (missing: -1)."""
    cols = []
    for f in schema.features:
        if isinstance(f, CategoricalFeature):
            lookup = {str(c): k for k, c in enumerate(f.categories)}
            cols.append(frame[f.name].astype(str).map(lookup).fillna(-1).to_numpy(dtype=np.float64))
        else:
            cols.append(pd.to_numeric(frame[f.name], errors="coerce").to_numpy(dtype=np.float64))
    return np.column_stack(cols)


def run_command(model: Path, keys: Path, data: Path, out: Path) -> tuple[float, int]:
    """Seconds and peak RSS (KiB) of ``edprf predict`` in a child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t0 = time.perf_counter()
    subprocess.run(
        [
            *(sys.executable, "-m", "edprf_fl.cli", "predict", str(model), str(data)),
            *("-o", str(out), "--force", "--keys", str(keys)),  # --force: every repeat writes the same out
        ],
        cwd=REPO_ROOT,
        check=True,
        capture_output=True,
    )
    seconds = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return seconds, peak if peak > before else -1  # ru_maxrss of children is a running maximum


def peak_of_one_child(model: Path, keys: Path, data: Path, out: Path) -> tuple[float, int]:
    """Peak RSS of one fresh child (measured by a wrapper process so earlier children do not mask it)."""
    code = (
        "import resource, subprocess, sys, time; t = time.perf_counter(); "
        "subprocess.run(sys.argv[1:], check=True, capture_output=True); "
        "print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
    )
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            code,
            sys.executable,
            "-m",
            "edprf_fl.cli",
            "predict",
            str(model),
            str(data),
            "-o",
            str(out),
            "--force",
            "--keys",
            str(keys),
        ],
        cwd=REPO_ROOT,
        check=True,
        capture_output=True,
        text=True,
    )
    seconds, kib = result.stdout.split()
    return float(seconds), int(kib)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--data-dir", default=str(DEFAULT_DATA_DIR))
    parser.add_argument("--rows", type=int, default=100_000, help="rows of the throughput runs")
    parser.add_argument("--big-rows", type=int, default=1_000_000, help="rows of the memory run (0 skips it)")
    parser.add_argument("--parties", type=int, default=5)
    parser.add_argument("--trees", type=int, default=50, help="trees of the global model and of scikit-learn's")
    parser.add_argument("--depth", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="20,000 rows, 200,000 for memory, 3 repeats")
    parser.add_argument("--output", default=str(RESULTS_DIR / "predict.md"))
    args = parser.parse_args()
    if args.quick:
        args.rows, args.big_rows, args.repeats = 20_000, 200_000, 3
    name = "diabetes" if diabetes_path(args.data_dir).is_file() else "wall"
    X, y, schema = load_dataset(name, args.data_dir)
    log(f"{name}: {len(X)} rows; model: {args.parties} parties, {args.trees} trees, depth {args.depth}")
    from sklearn.ensemble import RandomForestClassifier

    work = Path(tempfile.mkdtemp(prefix="bench-predict-"))
    build_model(X, y, schema, args.parties, args.trees, args.depth, work)
    model, keys = work / "global-model.edprf", work / "keys"
    rf = RandomForestClassifier(n_estimators=args.trees, max_depth=args.depth, n_jobs=1, random_state=0)
    rf.fit(numeric(X, schema), encode_labels(y, schema))

    rng = np.random.default_rng(1)
    sample = X.iloc[rng.integers(0, len(X), args.rows)].reset_index(drop=True)
    data = work / "rows.csv"
    sample.to_csv(data, index=False)
    clf = load_classifier(model, keys_dir=keys)
    frame = pd.read_csv(data, dtype=str, keep_default_na=False)  # the cells as text, as a file gives them
    matrix = numeric(frame, schema)

    def sklearn_file_to_file() -> None:
        cells = pd.read_csv(
            data,
            keep_default_na=False,
            dtype={f.name: str for f in schema.features if isinstance(f, CategoricalFeature)},
        )
        proba = rf.predict_proba(numeric(cells, schema))
        pd.DataFrame(proba, columns=[f"p_{c}" for c in schema.classes]).to_csv(work / "sk.csv", index=False)

    jobs = {
        "edprf predict (command)": lambda: run_command(model, keys, data, work / "out.csv")[0],
        "scikit-learn file to file": lambda: _timed(sklearn_file_to_file),
        "load_classifier().predict_proba (in memory)": lambda: _timed(lambda: clf.predict_proba(frame)),
        "RandomForestClassifier.predict_proba (in memory)": lambda: _timed(lambda: rf.predict_proba(matrix)),
    }
    times: dict[str, list[float]] = {k: [] for k in jobs}
    load_before = os.getloadavg()
    for r in range(args.repeats):
        for key, job in jobs.items():
            times[key].append(job())
        log(f"repeat {r + 1}/{args.repeats}: " + ", ".join(f"{k} {v[-1]:.2f} s" for k, v in times.items()))
    load_after = os.getloadavg()
    med = {k: statistics.median(v) for k, v in times.items()}

    memory = [(args.rows, *peak_of_one_child(model, keys, data, work / "out.csv"))]
    if args.big_rows:
        big = work / "big.csv"
        X.iloc[rng.integers(0, len(X), args.big_rows)].to_csv(big, index=False)
        memory.append((args.big_rows, *peak_of_one_child(model, keys, big, work / "big-out.csv")))
        big.unlink()
        log(f"memory: {memory}")

    import sklearn

    lines = [
        "# `edprf predict` throughput and memory",
        "",
        (
            f"Produced by `.venv/bin/python benchmarks/bench_predict.py{' --quick' if args.quick else ''}` "
            f"({name} data, {args.rows:,} rows drawn with replacement; a global model of {args.parties} parties, "
            f"{args.trees} trees, depth {args.depth}; scikit-learn RandomForestClassifier with n_estimators="
            f"{args.trees}, max_depth={args.depth}, n_jobs=1). Machine: {cpu_info()}; Python "
            f"{platform.python_version()}, numpy {np.__version__}, scikit-learn {sklearn.__version__}. Median of "
            f"{args.repeats} runs, alternating, in one process. Load average before/after: "
            f"{load_before[0]:.1f}/{load_after[0]:.1f} (shared 2-CPU machine)."
        ),
        "",
        "| what | ours (s) | rows/s | scikit-learn (s) | rows/s | ratio (sklearn time / ours) |",
        "|---|---|---|---|---|---|",
    ]
    comparisons = (
        (
            "edprf predict (command)",
            "scikit-learn file to file",
            ("file to file: `edprf predict` (child process, start-up included) vs read_csv + predict_proba + to_csv"),
        ),
        (
            "load_classifier().predict_proba (in memory)",
            "RandomForestClassifier.predict_proba (in memory)",
            "in memory: `predict_proba` on a text DataFrame vs on a float matrix",
        ),
    )
    for ours, theirs, label in comparisons:
        a, b = med[ours], med[theirs]
        lines.append(f"| {label} | {a:.3f} | {args.rows / a:,.0f} | {b:.3f} | {args.rows / b:,.0f} | {b / a:.2f}x |")
    lines += [
        "",
        "Peak resident memory of `edprf predict` (one child process, `ru_maxrss`; chunks of 20,000 rows):",
        "",
        "| rows | seconds | rows/s | peak RSS (MiB) |",
        "|---|---|---|---|",
    ]
    for rows, seconds, kib in memory:
        lines.append(f"| {rows:,} | {seconds:.1f} | {rows / seconds:,.0f} | {kib / 1024:.0f} |")
    lines += [
        "",
        "Runs (s):",
        *(f"- {k}: {', '.join(f'{t:.3f}' for t in v)}" for k, v in times.items()),
        "",
        (
            "`edprf predict` does more than the scikit-learn job: it verifies the parties' signatures, "
            "reads every line by the schema's per-record rules (a malformed line or refused cell becomes a "
            "row status, never a failed batch), checks every continuous cell for clipping and writes "
            "status and reason columns."
        ),
    ]
    text = "\n".join(lines) + "\n"
    Path(args.output).write_text(text, encoding="utf-8")
    print(text)


def _timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


if __name__ == "__main__":
    main()
