"""``edprf sweep``: simulated federations over a grid, with several seeds."""

from __future__ import annotations

import argparse
import copy
import csv
import itertools
import sys
import tempfile
import time
from pathlib import Path

__all__ = ["register"]

_GRID = ("epsilon", "parties", "partition", "max_depth", "n_trees")


def _list_of(kind: type, what: str):
    def parse(text: str) -> list:
        items = [v.strip() for v in text.split(",") if v.strip()]
        try:
            values = [kind(v) for v in items]
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a comma-separated list of {what}, got {text!r}") from None
        if not values:
            raise argparse.ArgumentTypeError(f"expected at least one value, got {text!r}")
        if kind is not str and any(v <= 0 for v in values):
            raise argparse.ArgumentTypeError(f"expected positive values, got {text!r}")
        return values

    parse.__name__ = f"list of {what}"
    return parse


_floats = _list_of(float, "numbers")
_ints = _list_of(int, "integers")
_words = _list_of(str, "names")


def register(sub: argparse._SubParsersAction) -> None:
    from ._simulate import add_federation_arguments

    p = sub.add_parser("sweep", help="simulated federations over a grid of epsilon, parties, skew, depth and trees")
    add_federation_arguments(p)
    p.add_argument(
        "--epsilons",
        type=_floats,
        default=[0.25, 0.5, 1.0, 2.0],
        help="comma-separated epsilons of the parties' releases (default: 0.25,0.5,1,2)",
    )
    p.add_argument(
        "--parties-list", type=_ints, default=None, help="comma-separated list of party counts (default: --parties)"
    )
    p.add_argument("--partitions", type=_words, default=["iid"], help="comma-separated: iid,dirichlet")
    p.add_argument("--max-depths", type=_ints, default=None, help="comma-separated (default: --max-depth)")
    p.add_argument("--n-trees-list", type=_ints, default=None, help="trees per party, comma-separated")
    p.add_argument("--seeds", type=int, default=3, help="seeds per configuration (default: %(default)s)")
    p.add_argument("--output", default=None, help="directory for sweep.csv, sweep.md and plots")
    p.set_defaults(handler=run)


def _configs(args: argparse.Namespace) -> list[dict]:
    values = {
        "epsilon": args.epsilons,
        "parties": args.parties_list or [args.parties],
        "partition": args.partitions,
        "max_depth": args.max_depths or [args.max_depth],
        "n_trees": args.n_trees_list or [args.n_trees],
    }
    return [dict(zip(_GRID, combo)) for combo in itertools.product(*(values[k] for k in _GRID))]


def run(args: argparse.Namespace) -> int:
    import numpy as np

    from ._simulate import check_arguments, run_simulation_report

    for epsilon in args.epsilons:
        check_arguments(argparse.Namespace(**{**vars(args), "epsilon": epsilon}))
    out = Path(args.output) if args.output else Path(tempfile.mkdtemp(prefix="edprf-sweep-"))
    out.mkdir(parents=True, exist_ok=True)
    configs = _configs(args)
    total = len(configs) * args.seeds
    rows, done, started = [], 0, time.perf_counter()
    for config in configs:
        for seed in range(args.seeds):
            run_args = copy.copy(args)
            for key, value in config.items():
                setattr(run_args, key, value)
            run_args.seed = seed
            run_args.seeded_noise = True  # a sweep is research: reproducible noise, numpy backend
            run_args.evaluation_epsilon = 0.0
            run_args.party_holdout = 0.0
            result = run_simulation_report(run_args, out / f"run-{done:04d}", progress=lambda _: None, isolated=True)
            fed = result["federated"]
            base = result.get("baselines", {})
            nan = float("nan")
            ev = fed.get("central_evaluation", {})
            depths = sorted(p["max_depth"] for p in fed["parties"] if p.get("max_depth"))
            rows.append(
                {
                    **config,
                    "seed": seed,
                    "depths_used": " ".join(map(str, depths)),  # what each party grew (auto: its own)
                    "federated_accuracy": ev.get("accuracy", nan),
                    "federated_balanced_accuracy": ev.get("balanced_accuracy", nan),
                    "federated_roc_auc": ev.get("roc_auc", nan),
                    "central_accuracy": base.get("central_edprf", {}).get("accuracy", nan),
                    "central_roc_auc": base.get("central_edprf", {}).get("roc_auc", nan),
                    "central_depth": base.get("central_edprf", {}).get("max_depth", ""),
                    "party_alone_median_accuracy": base.get("party_alone_median", {}).get("accuracy", nan),
                    "non_private_accuracy": base.get("non_private_rf", {}).get("accuracy", nan),
                    "majority_accuracy": base.get("majority_class", {}).get("accuracy", nan),
                    "accepted": sum(p["status"] == "accepted" for p in fed["parties"]),
                    "seconds": result["federation_seconds"],
                }
            )
            done += 1
            eta = (time.perf_counter() - started) / done * (total - done)
            print(
                f"[{done}/{total}] {config} seed {seed}: federated {rows[-1]['federated_accuracy']:.4f} "
                f"central {rows[-1]['central_accuracy']:.4f} (eta {eta:.0f} s)",
                file=sys.stderr,
                flush=True,
            )
    with (out / "sweep.csv").open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    columns = (
        "federated_accuracy",
        "federated_roc_auc",
        "central_accuracy",
        "party_alone_median_accuracy",
        "non_private_accuracy",
        "majority_accuracy",
    )
    lines = [
        "| " + " | ".join(_GRID) + " | federated | federated AUC | central DP | party alone (median) | "
        "non-private | majority |",
        "|" + "---|" * (len(_GRID) + len(columns)),
    ]
    for config in configs:
        sel = [r for r in rows if all(r[k] == config[k] for k in _GRID)]
        cells = []
        for key in columns:
            vals = np.array([r[key] for r in sel], dtype=float)
            cells.append(f"{np.nanmean(vals):.4f} ± {np.nanstd(vals):.4f}")
        lines.append("| " + " | ".join(str(config[k]) for k in _GRID) + " | " + " | ".join(cells) + " |")
    table = "\n".join(lines)
    (out / "sweep.md").write_text(table + "\n")
    print(table)
    _plots(rows, configs, out)
    print(f"\nresults: {out / 'sweep.csv'}, {out / 'sweep.md'}, plots in {out}")
    return 0


def _plots(rows: list[dict], configs: list[dict], out: Path) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    import numpy as np

    for axis in ("epsilon", "parties", "max_depth", "n_trees"):
        xs = sorted({c[axis] for c in configs})
        if len(xs) < 2:
            continue
        fig, ax = plt.subplots(figsize=(6.5, 4.0))
        others = [k for k in _GRID if k != axis]
        n_seeds = len({r["seed"] for r in rows})
        for i, key in enumerate(sorted({tuple(c[k] for k in others) for c in configs})):
            label = ", ".join(f"{k}={v}" for k, v in zip(others, key) if len({c[k] for c in configs}) > 1)
            color = f"C{i % 10}"
            for column, style, name in (
                ("federated_accuracy", "-o", "federated"),
                ("central_accuracy", "--s", "central DP"),
            ):
                sel = [[r[column] for r in rows if r[axis] == x and tuple(r[k] for k in others) == key] for x in xs]
                means = [np.nanmean(v) if v else np.nan for v in sel]
                stds = [np.nanstd(v) if v else np.nan for v in sel]
                ax.errorbar(
                    xs,
                    means,
                    yerr=stds,
                    fmt=style,
                    color=color,
                    capsize=3,
                    alpha=1.0 if style == "-o" else 0.6,
                    label=f"{name} {label}".strip(),
                )
        majority = np.nanmean([r["majority_accuracy"] for r in rows])
        if np.isfinite(majority):
            ax.axhline(majority, color="black", linestyle=":", linewidth=1, label=f"majority class ({majority:.3f})")
        if axis in ("parties", "max_depth", "n_trees"):
            ax.set_xticks(xs, [str(x) for x in xs])  # counts: integer ticks only
        ax.set_xlabel(axis.replace("_", " "))
        ax.set_ylabel("test accuracy")
        ax.set_title(f"Accuracy vs {axis.replace('_', ' ')} (mean ± std over {n_seeds} seeds)", fontsize=9)
        ax.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(out / f"accuracy_vs_{axis}.png", dpi=120)
        plt.close(fig)
