"""Party contribution and selective aggregation (issue 6), on Flower's simulation engine.

    python benchmarks/bench_contribution.py shuffled --seeds 5   # one party with shuffled labels
    python benchmarks/bench_contribution.py shares --seeds 5     # contribution vs data share (plot)

Data: diabetes 7000/7000 from ../shared/data (read in place). The coordinator keeps 10 % of
the training rows as its validation data; the test split is never used for selection.
Writes benchmarks/results/contribution_*.md and contribution_shares.png.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))
from bench_federation import RESULTS, _diabetes, _say, _settings


def _run(cfg, n_parties: int) -> dict:
    """One federation.  The variants of one seed differ only in the coordinator's
    post-processing: the simulated parties' ledgers are reset so that the same seeded
    parties release the same trees again (a real party would refuse: its cap is spent)."""
    from edprf_fl.simulation import simulate_federation
    from server import REPORT_FILE

    for ledger in Path(cfg.sim_dir).glob("party-*/ledger*"):  # the ledger and its anchor (which would carry the spend)
        ledger.unlink()
    simulate_federation(cfg, n_parties)
    return json.loads((Path(cfg.output_dir) / REPORT_FILE).read_text())


def shuffled(seeds: int, parties: int) -> str:
    from edprf_fl.simulation import prepare_workspace

    rows = {
        "all parties, no selection": [],
        "selective aggregation": [],
        "exclude flagged": [],
        "without the shuffled party": [],
    }
    flagged, bad_info, honest_info, false_flags = 0, [], [], 0
    bad = parties - 1  # the last party, so a run with parties - 1 nodes leaves it out
    with tempfile.TemporaryDirectory() as tmp:
        data, schema = _diabetes(Path(tmp), balanced=True)
        for seed in range(seeds):
            out = Path(tmp) / f"s{seed}"
            settings = _settings(
                data, schema, parties=parties, seed=seed, validation_size=0.1, shuffled_label_parties=[bad]
            )
            cfg = prepare_workspace(settings, out).config
            for label, variant, n in (
                ("all parties, no selection", {}, parties),
                ("selective aggregation", {"selective_aggregation": True}, parties),
                ("exclude flagged", {"exclude_flagged": True}, parties),
                ("without the shuffled party", {"expected_parties": parties - 1}, parties - 1),
            ):
                run_dir = out / label.replace(" ", "_").replace(",", "")
                report = _run(replace(cfg, output_dir=str(run_dir), **variant), n)
                rows[label].append(report["central_evaluation"]["accuracy"])
                if label == "all parties, no selection":
                    for c in report["contributions"]:
                        if c["party"] == f"party-{bad:04d}":
                            flagged += c["flagged"]
                            bad_info.append(c["information_bits"])
                        else:
                            honest_info.append(c["information_bits"])
                            false_flags += c["flagged"]
            _say(f"seed {seed}: " + ", ".join(f"{k}: {v[-1]:.4f}" for k, v in rows.items()))
    base = np.array(rows["without the shuffled party"])
    lines = [
        (
            f"Diabetes 7000/7000, {parties} parties (IID), eps = 1, depth 5, 1 tree per party; party "
            f"{bad} trains on shuffled labels; {seeds} seeds."
        ),
        "",
        "| global forest | test accuracy | difference to the run without that party (points) |",
        "|---|---|---|",
    ]
    for label, vals in rows.items():
        diff = (np.array(vals) - base) * 100
        lines.append(f"| {label} | {np.mean(vals):.4f} ± {np.std(vals):.4f} | {diff.mean():+.2f} ± {diff.std():.2f} |")
    lines += [
        "",
        (
            f"shuffled party flagged in {flagged}/{seeds} runs; honest parties flagged "
            f"{false_flags}/{seeds * (parties - 1)} times"
        ),
        (
            f"information content: shuffled party {np.mean(bad_info):.3f} ± {np.std(bad_info):.3f} bits, "
            f"honest parties {np.mean(honest_info):.3f} ± {np.std(honest_info):.3f} bits"
        ),
    ]
    return "\n".join(lines)


def shares(seeds: int) -> str:
    from sklearn.model_selection import train_test_split

    from edprf_core import load_schema
    from edprf_core.datasets import read_csv
    from edprf_fl.simulation import write_workspace
    from server import CoordinatorConfig

    share = np.array([0.05, 0.10, 0.15, 0.30, 0.40])
    info = {s: [] for s in share}
    with tempfile.TemporaryDirectory() as tmp:
        data, schema_path = _diabetes(Path(tmp), balanced=True)
        schema = load_schema(schema_path)
        X, y = read_csv(data, schema)
        for seed in range(seeds):
            X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.2, random_state=seed, stratify=y)
            X_tr, X_val, y_tr, y_val = train_test_split(X_tr, y_tr, test_size=0.1, random_state=seed + 1, stratify=y_tr)
            order = np.random.default_rng(seed).permutation(len(X_tr))
            parts = np.split(order, (np.cumsum(share)[:-1] * len(order)).astype(int))
            ws = Path(tmp) / f"w{seed}"
            policy = {
                "lifetime_epsilon_cap": 1.0,
                "max_release_epsilon": 1.0,
                "max_evaluation_epsilon": 0.0,
                "max_depth": 5,
                "max_n_trees": 1,
                "allow_seeded_randomness": True,
                "holdout_fraction": 0.0,
            }
            write_workspace(ws, schema, X_tr, y_tr, parts, X_te, y_te, policy)
            X_val.assign(**{schema.label.column: y_val.to_numpy()}).to_csv(ws / "validation.csv", index=False)
            cfg = CoordinatorConfig(
                sim_dir=str(ws),
                output_dir=str(Path(tmp) / f"o{seed}"),
                epsilon=1.0,
                max_depth=5,
                n_trees=1,
                n_bins=16,
                seed=seed,
                evaluation_epsilon=0.0,
            )
            report = _run(cfg, len(share))
            for c in report["contributions"]:
                info[share[int(c["party"].split("-")[1])]].append(c["information_bits"])
            _say(f"seed {seed}: " + ", ".join(f"{s:.2f}: {info[s][-1]:.3f}" for s in share))
    lines = [
        (
            f"Diabetes 7000/7000, 5 honest parties with unequal shares of the training rows, eps = 1, depth 5, "
            f"1 tree each, {seeds} seeds."
        ),
        "",
        "| data share | information (bits) |",
        "|---|---|",
    ]
    lines += [f"| {s:.2f} | {np.mean(info[s]):.3f} ± {np.std(info[s]):.3f} |" for s in share]
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(5, 3.4))
        ax.errorbar(share, [np.mean(info[s]) for s in share], yerr=[np.std(info[s]) for s in share], marker="o")
        ax.set_xlabel("party's share of the training rows")
        ax.set_ylabel("information content (bits)")
        ax.set_title("contribution grows with data share (eps = 1)")
        fig.tight_layout()
        RESULTS.mkdir(parents=True, exist_ok=True)
        fig.savefig(RESULTS / "contribution_shares.png", dpi=120)
        lines.append("\nplot: benchmarks/results/contribution_shares.png")
    except ImportError:
        pass
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", choices=("shuffled", "shares"))
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--parties", type=int, default=5)
    args = parser.parse_args()
    text = shuffled(args.seeds, args.parties) if args.what == "shuffled" else shares(args.seeds)
    print(text)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"contribution_{args.what}.md").write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
