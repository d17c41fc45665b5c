"""Federation benchmarks (issue 4): accuracy vs central, skew, scaling, bytes, merge time.

Run from the repository root:

    python benchmarks/bench_federation.py accuracy   # 5 IID parties vs central; Dirichlet 0.5 gap
    python benchmarks/bench_federation.py scaling    # end-to-end time for 10, 30, 100, 300 parties
    python benchmarks/bench_federation.py merge      # coordinator validation + merge of 1,000 releases

Data: ../shared/data/diabetes_prediction (read in place, never copied into the repository).
Prints Markdown tables and writes them to benchmarks/results/federation_*.md.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
RESULTS = REPO / "benchmarks" / "results"
DIABETES = REPO.parent / "shared" / "data" / "diabetes_prediction" / "diabetes_prediction_dataset.csv"


def _say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _settings(data: Path, schema: Path, **kw):
    """A seeded federation on ``data``: depth 5, one tree per party, no evaluation round, no validation split."""
    from edprf_fl.simulation import SimulationSettings

    base = {
        "data": data,
        "schema": schema,
        "epsilon": 1.0,
        "max_depth": 5,
        "n_trees": 1,
        "n_bins": 16,
        "split_mode": "binary",
        "evaluation_epsilon": 0.0,
        "party_holdout": 0.0,
        "validation_size": 0.0,
        "seeded_noise": True,
    }  # research: reproducible, and the variants of one seed see the same trees
    return SimulationSettings(**(base | kw))


def _diabetes(tmp: Path, balanced: bool) -> tuple[Path, Path]:
    from edprf_core import example_schema

    if not DIABETES.is_file():
        raise SystemExit(f"diabetes data not found at {DIABETES}")
    frame = pd.read_csv(DIABETES)
    if balanced:  # the paper's 7000/7000 undersampling
        frame = pd.concat([g.sample(7000, random_state=0) for _, g in frame.groupby("diabetes")])
    data = tmp / ("diabetes_7000x2.csv" if balanced else "diabetes_full.csv")
    frame.to_csv(data, index=False)
    schema = tmp / "diabetes.schema.toml"
    example_schema("diabetes_prediction").save(schema)
    return data, schema


def accuracy(seeds: int, parties: int, trees: int, depth: int) -> str:
    from edprf_fl.simulation import run_simulation

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        data, schema = _diabetes(Path(tmp), balanced=True)
        for partition in ("iid", "dirichlet"):
            fed, central = [], []
            for seed in range(seeds):
                r = run_simulation(
                    _settings(
                        data,
                        schema,
                        parties=parties,
                        partition=partition,
                        seed=seed,
                        n_trees=trees,
                        max_depth=depth,
                    ),
                    Path(tmp) / f"{partition}-{seed}",
                )
                fed.append(r.federated["central_evaluation"]["accuracy"])
                central.append(r.baselines["central_edprf"]["accuracy"])
                _say(f"{partition} seed {seed}: federated {fed[-1]:.4f} central {central[-1]:.4f}")
            gap = np.array(central) - np.array(fed)
            rows.append(
                f"| {partition} | {parties} | {parties * trees} | {np.mean(fed):.4f} ± {np.std(fed):.4f} | "
                f"{np.mean(central):.4f} ± {np.std(central):.4f} | {gap.mean() * 100:+.2f} ± "
                f"{gap.std() * 100:.2f} |"
            )
    return (
        "Diabetes 7000/7000, eps = 1, binary splits, depth "
        f"{depth}, {trees} tree(s) per party, {seeds} seeds; central = same algorithm, same total trees, "
        "all parties' rows pooled.\n\n| partition | parties | trees | federated | central | gap (points) |\n"
        "|---|---|---|---|---|---|\n" + "\n".join(rows)
    )


def scaling(party_counts: list[int]) -> str:
    from edprf_fl.simulation import run_simulation

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        data, schema = _diabetes(Path(tmp), balanced=False)
        for n in party_counts:
            t0 = time.perf_counter()
            r = run_simulation(
                _settings(data, schema, parties=n, evaluation_epsilon=0.1, party_holdout=0.1, baselines=False),
                Path(tmp) / f"p{n}",
            )
            wall = time.perf_counter() - t0
            fed = r.federated
            sizes = [p["release_bytes"] for p in fed["parties"] if p["release_bytes"]]
            rows.append(
                f"| {n} | {wall:.1f} | {r.timings.federation_s:.1f} | "
                f"{sum(p['status'] == 'accepted' for p in fed['parties'])} | "
                f"{statistics.median(sizes):.0f} | {fed['merge_seconds'] * 1000:.1f} | "
                f"{fed['central_evaluation']['accuracy']:.4f} |"
            )
            _say(rows[-1])
    return (
        "`edprf simulate` end to end on all 100,000 diabetes rows (eps = 1, depth 5, 1 tree per party, "
        "evaluation round on), one run each.\n\n| parties | wall s | federation s | accepted | "
        "bytes per release | merge ms | accuracy |\n|---|---|---|---|---|---|---|\n" + "\n".join(rows)
    )


def merge(n_releases: int, repeats: int) -> str:
    from edprf_core import EDPRFClassifier, load_embedded
    from protocol import ReleasePolicy, build_global_model, decode_release, encode_release, load_global_model

    X, y, schema = load_embedded("wall_robot_navigation")
    payloads = []
    for i in range(n_releases):
        rows = slice((i * 37) % 5000, (i * 37) % 5000 + 400)
        forest = (
            EDPRFClassifier(schema, n_trees=1, max_depth=5, n_bins=16, random_state=i, residual_pass=False)
            .fit(X.iloc[rows], y.iloc[rows])
            .forest_
        )
        payloads.append(encode_release(forest, f"party-{i:04d}"))
    policy = ReleasePolicy(max_epsilon=1.0, max_depth=5, max_n_trees=1)
    decode_s, build_s, load_s = [], [], []
    for _ in range(repeats):
        t0 = time.perf_counter()
        releases = [decode_release(p, schema, policy) for p in payloads]
        t1 = time.perf_counter()
        model = build_global_model(schema, releases, {"run_id": "bench"})
        t2 = time.perf_counter()
        view = load_global_model(model)
        t3 = time.perf_counter()
        decode_s.append(t1 - t0), build_s.append(t2 - t1), load_s.append(t3 - t2)
    assert view.forest.n_trees == n_releases
    med = statistics.median
    return (
        f"Coordinator work for {n_releases} releases (1 tree, depth 5 each, wall robot schema), median of "
        f"{repeats}.\n\n| step | seconds | per release (ms) |\n|---|---|---|\n"
        f"| validate (decode_release) | {med(decode_s):.3f} | {med(decode_s) / n_releases * 1000:.2f} |\n"
        f"| merge into a global model | {med(build_s):.3f} | {med(build_s) / n_releases * 1000:.2f} |\n"
        f"| reload + re-verify the model | {med(load_s):.3f} | {med(load_s) / n_releases * 1000:.2f} |\n"
        f"\nrelease bytes: median {int(med(len(p) for p in payloads))}; global model {len(model)} bytes"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", choices=("accuracy", "scaling", "merge"))
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--parties", type=int, default=5)
    parser.add_argument("--n-trees", type=int, default=1)
    parser.add_argument("--depth", type=int, default=5)
    parser.add_argument("--party-counts", default="10,30,100,300")
    parser.add_argument("--releases", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    if args.what == "accuracy":
        text = accuracy(args.seeds, args.parties, args.n_trees, args.depth)
    elif args.what == "scaling":
        text = scaling([int(v) for v in args.party_counts.split(",")])
    else:
        text = merge(args.releases, args.repeats)
    print(text)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"federation_{args.what}.md").write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
