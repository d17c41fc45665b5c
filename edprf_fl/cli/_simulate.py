"""``edprf simulate``: a whole federation on one machine, compared with central training."""

from __future__ import annotations

import argparse
import json
import math
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

__all__ = ["add_federation_arguments", "register", "run_simulation_report"]

MAX_DEPTH_LIMIT = 30
"""edprf_core.MAX_DEPTH_LIMIT, repeated so that checking flags needs no heavy import (a test compares them)."""
AUTO_DEPTH_CAP = 12
"""edprf_core.AUTO_DEPTH_CAP, repeated for the same reason (the same test compares them)."""


def add_federation_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--data",
        default=None,
        help="CSV (or Parquet) with the schema's columns and label (default: the embedded dataset)",
    )
    p.add_argument("--sep", default=",", help="field separator of --data, one character (default: %(default)r)")
    p.add_argument(
        "--no-header",
        action="store_true",
        help="--data has no header line: its columns are the schema's features in order, then the label",
    )
    p.add_argument("--schema", default=None, help="schema TOML of --data (default: the embedded dataset's)")
    p.add_argument(
        "--dataset",
        default="wall_robot_navigation",
        help="embedded dataset when --data is not given (default: %(default)s)",
    )
    p.add_argument("--parties", type=int, default=5, help="simulated parties (default: %(default)s)")
    p.add_argument(
        "--partition",
        choices=("iid", "dirichlet", "column"),
        default="iid",
        help="how rows are split among parties: at random, label-skewed (Dirichlet --alpha), or by the "
        "values of --column (default: %(default)s)",
    )
    p.add_argument("--alpha", type=float, default=0.5, help="Dirichlet concentration (default: %(default)s)")
    p.add_argument("--column", default="", help="column that assigns rows to parties (--partition column)")
    p.add_argument("--epsilon", type=float, default=1.0, help="epsilon of each party's release (default: %(default)s)")
    p.add_argument(
        "--max-depth",
        default="auto",
        help="split levels per tree, or 'auto': each party chooses its depth (at most 12) from a DP "
        "count of its rows, charged within its epsilon (default: %(default)s)",
    )
    p.add_argument(
        "--leaf",
        choices=("counts", "label"),
        default="counts",
        help="what leaves release: noisy class counts (probabilities) or the paper's label (votes) "
        "(default: %(default)s)",
    )
    p.add_argument("--n-trees", type=int, default=1, help="trees each party releases (default: %(default)s)")
    p.add_argument("--n-bins", type=int, default=20, help="bins of continuous features (default: %(default)s)")
    p.add_argument(
        "--split-mode",
        choices=("binary", "multiway"),
        default="binary",
        help="binary (feature, threshold) splits or the paper's multiway splits (default: %(default)s)",
    )
    p.add_argument(
        "--evaluation-epsilon",
        type=float,
        default=0.1,
        help="epsilon of each party's noised held-out metrics; 0 skips that round (default: %(default)s)",
    )
    p.add_argument(
        "--evaluation-max-interval-width",
        type=float,
        default=0.1,
        help="skip the parties' evaluation (spending nothing) when its 95%% interval would be wider "
        "than this; 1 evaluates whatever the width (default: %(default)s)",
    )
    p.add_argument(
        "--party-holdout",
        type=float,
        default=0.1,
        help="share of each party's rows kept for its own evaluation (default: %(default)s)",
    )
    p.add_argument("--test-size", type=float, default=0.2, help="central held-out test share (default: %(default)s)")
    p.add_argument(
        "--validation-size",
        type=float,
        default=0.1,
        help="share of the training rows kept by the coordinator as its own validation data "
        "(contribution report, quality flags, selection); 0 disables (default: %(default)s)",
    )
    p.add_argument(
        "--selective",
        action="store_true",
        help="selective aggregation: keep only parties whose trees raise validation accuracy",
    )
    p.add_argument("--exclude-flagged", action="store_true", help="drop parties the quality test flags")
    p.add_argument(
        "--shuffle-labels-party",
        type=int,
        action="append",
        default=[],
        help="research: give this party (0-based) shuffled labels, a low-quality party (repeatable)",
    )
    p.add_argument(
        "--engine",
        choices=("in-process", "ray"),
        default="in-process",
        help="simulation engine: 'in-process' calls the real ServerApp and ClientApps in this process, "
        "messages in Flower's wire form (fast, no Ray); 'ray' is Flower's simulation engine, what "
        "`flwr run` uses (about 10 s of start-up per run) (default: %(default)s)",
    )
    p.add_argument(
        "--seed",
        type=int,
        default=0,
        help="seed of the train/test split, the partition and the baselines (default: %(default)s)",
    )
    p.add_argument(
        "--seeded-noise",
        action="store_true",
        help="research: parties draw their DP noise from seeds derived from --seed (reproducible, fast, "
        "NOT private against anyone who knows the seed); default: production randomness, "
        "exact samplers",
    )


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "simulate",
        help="simulate a federation of Flower apps on one machine and compare "
        "with central training, each party alone and a non-private forest",
    )
    add_federation_arguments(p)
    p.add_argument(
        "--output",
        default=None,
        help="directory for the model, the report and the plot (default: a new temporary directory)",
    )
    p.add_argument(
        "--overwrite",
        action="store_true",
        help="replace a previous run in --output (its workspace, ledgers, model and report)",
    )
    p.add_argument("--json", dest="json_path", default=None, help="also write the report as JSON to this path")
    p.add_argument("--no-baselines", action="store_true", help="skip the central and non-private baselines")
    p.add_argument("--flower-logs", action="store_true", help="show Flower's own logs")
    p.add_argument(
        "--prepare-only",
        action="store_true",
        help="only write the parties' workspace and print the `flwr run` command that uses it",
    )
    p.set_defaults(handler=run)


def _say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _load(args: argparse.Namespace):
    import numpy as np
    import pandas as pd

    from edprf_core import conforming_rows, encode_labels, load_embedded, load_schema, read_csv

    if args.data:
        if not args.schema:
            raise ValueError("--data needs --schema: bounds, categories and classes must be declared, not inferred")
        schema = load_schema(args.schema)
        X, y = read_csv(args.data, schema, sep=getattr(args, "sep", ","), header=not getattr(args, "no_header", False))
        # The simulation holds every party's rows: it applies the parties' per-record filter once,
        # up front (the rows a party would drop), and reads labels as the declared classes.
        keep, problems = conforming_rows(X, y, schema)
        for note in problems:
            _say(f"      {note}; those rows are left out")
        if not keep.any():
            raise ValueError(
                f"--data {args.data}: no row satisfies the schema's rules (check --sep, --no-header "
                f"and the label's classes; `edprf schema check` shows what each rule does)"
            )
        X, y = X[keep].reset_index(drop=True), y[keep].reset_index(drop=True)
        y = pd.Series(np.asarray(schema.classes)[encode_labels(y, schema)], name=schema.label.column)
        return X, y, schema, Path(args.data).name
    X, y, schema = load_embedded(args.dataset)
    return X, y, schema, args.dataset


def prepare_workspace(args: argparse.Namespace, out_dir: Path, progress=_say):
    """Split the data, write the parties' directories; returns what the run needs."""
    X, y, schema, name = _load(args)  # first: a wrong file fails before the heavy imports below

    import numpy as np
    from sklearn.model_selection import train_test_split

    from edprf_fl.simulation import Partitioning, partition_rows, write_workspace
    from server import CoordinatorConfig

    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=args.test_size, random_state=args.seed, stratify=y
    )
    validation_size = getattr(args, "validation_size", 0.0)
    if validation_size > 0:
        X_train, X_val, y_train, y_val = train_test_split(
            X_train, y_train, test_size=validation_size, random_state=args.seed + 1, stratify=y_train
        )
    how = Partitioning(args.partition, args.alpha, args.column)
    parts = partition_rows(X_train, y_train, args.parties, how, np.random.default_rng(args.seed))
    y_train = y_train.copy()
    for p in getattr(args, "shuffle_labels_party", []):
        if not 0 <= p < args.parties:
            raise ValueError(f"--shuffle-labels-party {p}: expected 0..{args.parties - 1}")
        rows = parts[p]
        y_train.iloc[rows] = np.random.default_rng(args.seed + 1000 + p).permutation(y_train.iloc[rows].to_numpy())
    progress(
        f"[1/4] {name}: {len(X_train)} training rows split among {args.parties} parties ({how.describe()}); "
        f"{len(X_test)} central test rows"
    )
    auto_depth = str(args.max_depth) == "auto"
    depth_cap = AUTO_DEPTH_CAP if auto_depth else int(args.max_depth)
    if auto_depth:
        progress(f"      each party chooses its depth (at most {depth_cap}) from a DP count of its rows")
    sim_dir = out_dir / "workspace"
    from client._policy import MICRO, micro_epsilon

    release_units = micro_epsilon(args.epsilon)
    evaluation_units = micro_epsilon(args.evaluation_epsilon) if args.evaluation_epsilon else 0
    for flag, units in (("--epsilon", release_units), ("--evaluation-epsilon", evaluation_units)):
        if units is None:
            raise ValueError(
                f"{flag}: expected a positive multiple of 1e-06 (parties' ledgers count epsilon "
                f"exactly in millionths), got {getattr(args, flag[2:].replace('-', '_'))!r}"
            )
    cap_units = release_units + evaluation_units
    smallest = min(0.01, args.epsilon, args.evaluation_epsilon or 0.01)
    policy = {
        "lifetime_epsilon_cap": cap_units / MICRO,
        "min_epsilon": smallest,
        "max_release_epsilon": args.epsilon,
        "max_evaluation_epsilon": args.evaluation_epsilon,
        "max_depth": depth_cap,
        "max_n_trees": args.n_trees,
        "allow_seeded_randomness": seeded_noise(args),
        "holdout_fraction": args.party_holdout,
    }
    write_workspace(
        sim_dir,
        schema,
        X_train,
        y_train,
        parts,
        X_test,
        y_test,
        policy,
        research_seed=args.seed if seeded_noise(args) else None,
    )
    if validation_size > 0:
        X_val.assign(**{schema.label.column: y_val.to_numpy()}).to_csv(sim_dir / "validation.csv", index=False)
    cfg = CoordinatorConfig(
        sim_dir=str(sim_dir),
        output_dir=str(out_dir),
        epsilon=args.epsilon,
        max_depth=depth_cap,
        depth_rule="auto" if auto_depth else "fixed",
        leaf=getattr(args, "leaf", "counts"),
        n_trees=args.n_trees,
        split_mode=args.split_mode,
        n_bins=args.n_bins,
        seed=args.seed if seeded_noise(args) else -1,
        min_parties=1,
        require_exact_sampling=not seeded_noise(args),  # seeded noise is drawn by numpy
        evaluation_epsilon=args.evaluation_epsilon if args.party_holdout > 0 else 0.0,
        max_party_rows=held_out_rows_bound(max(map(len, parts)), args.party_holdout),
        evaluation_max_interval_width=getattr(args, "evaluation_max_interval_width", 0.1),
        selective_aggregation=getattr(args, "selective", False),
        exclude_flagged=getattr(args, "exclude_flagged", False),
    )
    return cfg, (X_train, y_train, X_test, y_test, parts, schema, name, how)


def held_out_rows_bound(rows: int, holdout: float) -> int:
    """The simulation's public bound on a party's held-out rows: its share plus 5 binomial standard deviations.

    The simulation made the split, so a party's row count is public here; each row is held out
    independently with probability ``holdout`` (a keyed draw), so the held-out count exceeds this
    with probability below 3e-7.
    """
    mean = rows * holdout
    return math.ceil(mean + 5.0 * math.sqrt(mean * (1.0 - holdout))) + 1


def run_simulation_report(
    args: argparse.Namespace, out_dir: Path, baselines: bool = True, progress=_say, isolated: bool = False
) -> dict:
    """Run one simulated federation and its baselines; returns the report dict.

    ``isolated`` runs Flower's Ray engine (``--engine ray``) in a child process that Ctrl-C stops with
    everything it started, inside a loopback-only network namespace (what the command does; tests run
    it in-process).  The in-process engine starts no process and opens no socket: it always runs here.
    """
    started = time.perf_counter()
    cfg, (X_train, y_train, X_test, y_test, parts, schema, name, how) = prepare_workspace(args, out_dir, progress)
    timings = {"prepare_s": time.perf_counter() - started}
    from edprf_fl.simulation import simulate_federation
    from server import REPORT_FILE

    engine = getattr(args, "engine", "in-process")
    progress(f"[2/4] running the federation: {args.parties} Flower ClientApps and the ServerApp ({engine} engine) ...")
    t0 = time.perf_counter()
    verbose = getattr(args, "flower_logs", False)
    if isolated and engine == "ray":
        from ._child_process import run_in_child

        run_in_child(simulate_federation, cfg, args.parties, verbose, engine)
    else:
        simulate_federation(cfg, args.parties, verbose=verbose, engine=engine)
    federation_s = timings["federation_s"] = time.perf_counter() - t0
    report_path = out_dir / REPORT_FILE
    if not report_path.is_file():
        raise RuntimeError(f"the coordinator wrote no report to {report_path}; rerun with --flower-logs")
    fed = json.loads(report_path.read_text())
    progress(
        f"[3/4] federation done in {federation_s:.1f} s: {fed['n_trees']} trees from "
        f"{sum(p['status'] == 'accepted' for p in fed['parties'])} parties"
    )
    depths = sorted({p["max_depth"] for p in fed["parties"] if p.get("max_depth")})
    depth = (
        args.max_depth
        if str(args.max_depth) != "auto"
        else (
            f"auto ({depths[0]}-{depths[-1]} by party)" if len(depths) > 1 else f"auto ({depths[0] if depths else '-'})"
        )
    )
    result = {
        "dataset": name,
        "parties": args.parties,
        "partition": how.describe(),
        "epsilon": args.epsilon,
        "max_depth": depth,
        "n_trees": args.n_trees,
        "split_mode": args.split_mode,
        "seed": args.seed,
        "engine": engine,
        "federated": fed,
        "federation_seconds": federation_s,
        "per_party_trees": {p["party_id"] or str(p["node_id"]): p["n_trees"] for p in fed["parties"]},
        "bytes_per_party": [p["release_bytes"] for p in fed["parties"]],
    }
    result["simulation_caveats"] = simulation_caveats(args)
    if baselines:
        t0 = time.perf_counter()
        result["baselines"] = _baselines(args, schema, X_train, y_train, X_test, y_test, parts)
        timings["baselines_s"] = time.perf_counter() - t0
        progress("[4/4] central eDPRF and non-private baselines trained")
    result["timings"] = timings | {f"coordinator_{k}": v for k, v in fed.get("timings", {}).items()}
    result["wall_seconds"] = time.perf_counter() - started
    return result


def timing_line(result: dict) -> str:
    """Where the wall time of a run went (from ``result["timings"]``)."""
    t = result.get("timings", {})
    parts = [f"preparing the parties' files {t['prepare_s']:.1f} s"] if "prepare_s" in t else []
    if "federation_s" in t:
        rounds = [
            f"{label} {t[key]:.1f} s"
            for key, label in (
                ("coordinator_train_round_s", "train round"),
                ("coordinator_evaluation_round_s", "evaluation round"),
            )
            if key in t
        ]
        parts.append(f"federation {t['federation_s']:.1f} s" + (f" ({', '.join(rounds)})" if rounds else ""))
    if "baselines_s" in t:
        parts.append(f"baselines {t['baselines_s']:.1f} s")
    return f"wall time: {result['wall_seconds']:.1f} s on the {result.get('engine', 'in-process')} engine" + (
        f": {'; '.join(parts)}" if parts else ""
    )


def seeded_noise(args: argparse.Namespace) -> bool:
    """Whether the parties use research seeds (``--seeded-noise``) instead of production randomness."""
    return bool(getattr(args, "seeded_noise", False))


def simulation_caveats(args: argparse.Namespace) -> list[str]:
    """What this simulation treats as public or fixed that a deployment must not (part of its guarantee)."""
    caveats = []
    if seeded_noise(args):
        caveats.append(
            f"NOT differentially private as run: parties drew their noise from research seeds derived "
            f"from --seed {args.seed}; anyone who knows the seed can remove the noise"
        )
    return caveats


def _baselines(args, schema, X_train, y_train, X_test, y_test, parts) -> dict:
    import numpy as np
    from sklearn.ensemble import RandomForestClassifier

    from edprf_core import EDPRFClassifier, encode_labels
    from server._metrics import classification_metrics, forest_metrics

    pooled = np.concatenate(parts)
    n_trees = args.parties * args.n_trees
    auto = str(args.max_depth) == "auto"
    leaf = getattr(args, "leaf", "counts")
    # the best central DP model a trusted curator could fit on the pooled rows: the estimator's defaults
    central = EDPRFClassifier(
        schema,
        epsilon=args.epsilon,
        n_trees="auto" if auto else n_trees,
        max_depth="auto" if auto else int(args.max_depth),
        leaf=leaf,
        n_bins=args.n_bins,
        split_mode=args.split_mode,
        random_state=args.seed,
    )
    central.fit(X_train.iloc[pooled], y_train.iloc[pooled])
    out = {
        "central_edprf": forest_metrics(central.forest_, X_test, y_test)
        | {"n_trees": central.n_trees_, "max_depth": central.max_depth_}
    }
    # each party alone: what a party gets without the consortium (same request, its own rows only)
    alone = []
    for i, rows in enumerate(parts):
        if len(rows) == 0:
            continue
        own = EDPRFClassifier(
            schema,
            epsilon=args.epsilon,
            n_trees=args.n_trees,
            max_depth="auto" if auto else int(args.max_depth),
            leaf=leaf,
            n_bins=args.n_bins,
            split_mode=args.split_mode,
            random_state=args.seed + 7919 * (i + 1),
        )
        alone.append(forest_metrics(own.fit(X_train.iloc[rows], y_train.iloc[rows]).forest_, X_test, y_test))
    if alone:
        by_accuracy = sorted(alone, key=lambda m: m["accuracy"])
        out["party_alone_median"] = by_accuracy[(len(by_accuracy) - 1) // 2] | {"n_trees": args.n_trees}
        out["party_alone_best"] = by_accuracy[-1] | {"n_trees": args.n_trees}
    classes = np.asarray(schema.classes)
    y_true = classes[encode_labels(y_test, schema)]
    rf = RandomForestClassifier(n_estimators=100, random_state=args.seed, n_jobs=1)
    rf.fit(raw_features(X_train, schema), encode_labels(y_train, schema))
    proba = np.zeros((len(X_test), len(classes)))
    proba[:, rf.classes_] = rf.predict_proba(raw_features(X_test, schema))
    out["non_private_rf"] = classification_metrics(y_true, proba, classes) | {"n_trees": 100}
    majority = np.bincount(encode_labels(y_train, schema), minlength=len(classes)).astype(float)
    prior = np.tile(majority / majority.sum(), (len(X_test), 1))
    out["majority_class"] = classification_metrics(y_true, prior, classes) | {"n_trees": 0}
    return out


def raw_features(X, schema) -> np.ndarray:
    """Continuous columns as numbers (missing: NaN), categorical columns as the declared category's index.

    What the non-private reference forest sees: the features before any DP binning.
    """
    import numpy as np
    import pandas as pd

    from edprf_core import CategoricalFeature, FeatureGrid, encode_features

    grid = FeatureGrid.from_schema(schema, 2)
    codes = encode_features(X, schema, grid)
    out = np.empty(codes.shape, dtype=np.float64)
    for j, f in enumerate(schema.features):
        if isinstance(f, CategoricalFeature):
            out[:, j] = codes[:, j]
        else:
            out[:, j] = pd.to_numeric(
                pd.Series(np.asarray(X[f.name] if isinstance(X, pd.DataFrame) else X[:, j])), errors="coerce"
            ).to_numpy(dtype=np.float64)
    return out


_BASELINE_ROWS = (
    ("central_edprf", "central eDPRF (pooled rows; needs a trusted curator)"),
    ("party_alone_median", "each party alone: median party"),
    ("party_alone_best", "each party alone: best party"),
    ("non_private_rf", "non-private RF (raw features)"),
    ("majority_class", "majority class"),
)


def cost_lines(result: dict) -> list[str]:
    """What federating buys and costs, in points of accuracy and of ROC AUC, on the central test rows."""
    fed = result["federated"].get("central_evaluation", {})
    base = result.get("baselines", {})

    def gap(key: str, metric: str) -> str | None:
        a, b = fed.get(metric), base.get(key, {}).get(metric)
        if not (isinstance(a, float) and isinstance(b, float) and math.isfinite(a) and math.isfinite(b)):
            return None
        return f"{100 * (a - b):+.1f}"

    rows = (
        ("party_alone_median", "against the median party alone"),
        ("party_alone_best", "against the best party alone"),
        ("central_edprf", "against central DP on the pooled rows (the model a trusted curator would give)"),
        ("majority_class", "against always predicting the majority class"),
    )
    lines = []
    for key, label in rows:
        acc, auc = gap(key, "accuracy"), gap(key, "roc_auc")
        if acc is None:
            continue
        lines.append(
            f"  {label}: {acc} points of accuracy" + (f", {auc} of ROC AUC" if auc and key != "majority_class" else "")
        )
    return ["\nthe federated model, in points (positive: federating does better):", *lines] if lines else []


def contribution_table(contributions: list[dict], alpha: float | None = None) -> str:
    """Per party in plain words, then the statistics: information, own accuracy, agreement, the quality test."""
    from server._contribution_text import contribution_lines

    words = [f"- {line}" for line in contribution_lines(contributions, alpha)]
    return "\n".join([*words, "", "the statistics behind these lines:", _contribution_statistics(contributions, alpha)])


def _contribution_statistics(contributions: list[dict], alpha: float | None = None) -> str:
    lines = [
        (
            "| party | trees | information (bits) | own accuracy | agreement with global | probability lift "
            "(threshold) | p-value | flagged |"
        ),
        "|---|---|---|---|---|---|---|---|",
    ]
    for c in contributions:
        threshold = c.get("lift_threshold")
        lift = f"{c.get('probability_lift', float('nan')):.3f}" + (
            f" ({threshold:.3f})" if threshold is not None else " (no test)"
        )
        p_value = "–" if c.get("flag_inconclusive") else f"{c['p_value']:.1e}"
        lines.append(
            f"| {c['party']} | {c['n_trees']} | {c['information_bits']:.3f} | {c['accuracy']:.3f} | "
            f"{c['agreement_with_global']:.3f} | {lift} | {p_value} | {'YES' if c['flagged'] else 'no'} |"
        )
    if alpha is not None:
        lines.append(
            f'flagged: p-value below alpha = {alpha:g} for "the party\'s lift is at least its threshold"; '
            "the rate among honest parties was measured at or below alpha (benchmarks/results/flags.md)"
        )
    return "\n".join(lines)


def evaluation_line(fe: dict) -> str:
    """The parties' noised held-out accuracy, its interval and one party's reach, or why there is none."""
    from server._summary import federated_evaluation_lines

    return "\n".join(federated_evaluation_lines(fe))


def _table(result: dict) -> str:
    fed = result["federated"]
    rows = [("federated eDPRF", fed.get("central_evaluation", {}), fed["n_trees"])]
    for key, label in _BASELINE_ROWS:
        if key in result.get("baselines", {}):
            rows.append((label, result["baselines"][key], result["baselines"][key]["n_trees"]))
    lines = [
        "| model | trees | accuracy | balanced acc. | F1 (macro) | ROC AUC | Brier |",
        "|---|---|---|---|---|---|---|",
    ]
    for label, m, trees in rows:
        cells = [_cell(m, k) for k in ("accuracy", "balanced_accuracy", "f1_macro", "roc_auc", "brier")]
        lines.append(f"| {label} | {trees} | " + " | ".join(cells) + " |")
    n = rows[0][1].get("n")
    lines.append(
        f"on {n if n is not None else 'the'} central test rows; in brackets the 95% interval (Wilson for "
        "accuracy, Agresti-Coull for balanced accuracy, bootstrap for F1, DeLong for ROC AUC, normal for "
        "Brier); exact statistics of the test rows, no party's epsilon spent"
    )
    for label, m, _ in rows:
        if m.get("warning") and label != dict(_BASELINE_ROWS)["majority_class"]:  # a constant by construction
            lines.append(f"{label}: {m['warning']}")
    return "\n".join(lines)


def _cell(metrics: dict, key: str) -> str:
    """``0.9123 [0.891, 0.931]``: the value and its 95% interval; ``n/a`` when undefined."""
    from edprf_core._clinical_metrics import interval_text

    return interval_text(metrics.get(key), metrics.get(f"{key}_ci95"), brackets=True)


def _plot(result: dict, path: Path) -> Path | None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    fed = result["federated"]
    base = result.get("baselines", {})
    rows = [("federated", fed.get("central_evaluation", {}))]
    shown = (
        ("central_edprf", "central DP"),
        ("party_alone_median", "party alone\n(median)"),
        ("party_alone_best", "party alone\n(best)"),
        ("non_private_rf", "non-private RF"),
    )
    rows += [(short, base[key]) for key, short in shown if key in base]
    metrics = (("accuracy", "accuracy"), ("balanced_accuracy", "balanced acc."), ("roc_auc", "ROC AUC"))
    fig, ax = plt.subplots(figsize=(7.5, 3.6))
    width = 0.8 / len(metrics)
    for k, (key, name) in enumerate(metrics):
        xs = [i + (k - 1) * width for i in range(len(rows))]
        vals = [m.get(key) if isinstance(m.get(key), float) else float("nan") for _, m in rows]
        ax.bar(xs, vals, width, label=name)
        for x, v in zip(xs, vals):
            if not math.isnan(v):
                ax.text(x, v + 0.01, f"{v:.2f}", ha="center", fontsize=7)
    if "majority_class" in base:
        ax.axhline(
            base["majority_class"]["accuracy"],
            color="black",
            linestyle="--",
            linewidth=1,
            label="majority-class accuracy",
        )
    ax.set_xticks(range(len(rows)), [r[0] for r in rows], fontsize=8)
    ax.set_ylim(0, 1.22)
    ax.set_ylabel("on the central test rows")
    ax.set_title(
        f"Cost of federating: {result['dataset']}, {result['parties']} parties ({result['partition']}), "
        f"eps={result['epsilon']:g}",
        fontsize=9,
    )
    ax.legend(fontsize=7, loc="upper center", ncol=4, frameon=False)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def check_arguments(args: argparse.Namespace) -> None:
    """Refuse impossible parameters before any data is read or Flower starts (errors name the flag).

    Uses no heavy import (the core pulls in pandas and scikit-learn), so a wrong flag fails at once.
    """

    def fail(flag: str, expected: str) -> None:
        raise ValueError(f"{flag}: expected {expected}, got {getattr(args, flag[2:].replace('-', '_'))!r}")

    if not (math.isfinite(args.epsilon) and args.epsilon > 0):
        fail("--epsilon", "a positive number (the epsilon of each party's release)")
    if not (math.isfinite(args.evaluation_epsilon) and args.evaluation_epsilon >= 0):
        fail("--evaluation-epsilon", "a number >= 0 (0 skips the evaluation round)")
    if not getattr(args, "evaluation_max_interval_width", 0.1) > 0:
        fail("--evaluation-max-interval-width", "a number > 0 (1: evaluate whatever the width)")
    if str(args.max_depth) != "auto":
        try:
            depth = int(args.max_depth)
        except ValueError:
            depth = 0
        if not 1 <= depth <= MAX_DEPTH_LIMIT:
            fail("--max-depth", f"'auto' or an integer in [1, {MAX_DEPTH_LIMIT}]")
    for flag, low in (("--parties", 1), ("--n-trees", 1), ("--n-bins", 2)):
        if getattr(args, flag[2:].replace("-", "_")) < low:
            fail(flag, f"an integer >= {low}")
    for flag in ("--test-size", "--party-holdout"):
        if not 0 <= getattr(args, flag[2:].replace("-", "_")) < 1:
            fail(flag, "a share in [0, 1)")
    if not 0 < args.test_size:
        fail("--test-size", "a share in (0, 1)")
    if args.partition == "dirichlet" and not args.alpha > 0:
        fail("--alpha", "a positive Dirichlet concentration")
    if args.partition == "column" and not args.column:
        raise ValueError("--partition column needs --column NAME")
    if len(getattr(args, "sep", ",")) != 1:
        fail("--sep", "one character")
    if args.data and not Path(args.data).is_file():
        raise ValueError(f"--data {args.data}: no such file")
    if args.data and not args.schema:
        raise ValueError(
            "--data needs --schema: bounds, categories and classes must be declared, not inferred "
            "(`edprf schema draft DATA --label COL` writes a starting point)"
        )


_RUN_FILES = ("workspace", "global-model.edprf", "report.json", "simulation.json", "accuracy.png")


def _output_dir(args: argparse.Namespace) -> Path:
    """A directory for this run's files: never a mix of an old run's and this one's."""
    if not args.output:
        return Path(tempfile.mkdtemp(prefix="edprf-simulate-"))
    out_dir = Path(args.output)
    old = [name for name in _RUN_FILES if (out_dir / name).exists()]
    if old and not getattr(args, "overwrite", False):
        raise ValueError(
            f"--output {out_dir} already holds a run ({', '.join(old)}; its parties' ledgers have "
            "spent their budget): choose a new --output, or pass --overwrite to replace that run"
        )
    for name in old:
        target = out_dir / name
        shutil.rmtree(target) if target.is_dir() else target.unlink()
    out_dir.mkdir(parents=True, exist_ok=True)
    return out_dir


def run(args: argparse.Namespace) -> int:
    from ._main import require_federation

    check_arguments(args)
    require_federation()
    out_dir = _output_dir(args)
    if args.prepare_only:
        cfg, _ = prepare_workspace(args, out_dir)
        print(
            f"workspace: {cfg.sim_dir}\nrun it from the project directory with:\n"
            f'  flwr run . --stream --federation-config "num-supernodes={args.parties}" --run-config '
            f"\"sim-dir='{cfg.sim_dir}' output-dir='{out_dir}' epsilon={args.epsilon} max-depth={cfg.max_depth} "
            f"depth-rule='{cfg.depth_rule}' leaf='{cfg.leaf}' "
            f"n-trees={args.n_trees} n-bins={args.n_bins} split-mode='{args.split_mode}' "
            f"seed={cfg.seed} evaluation-epsilon={cfg.evaluation_epsilon} max-party-rows={cfg.max_party_rows} "
            f'evaluation-max-interval-width={cfg.evaluation_max_interval_width}"'
        )
        return 0
    result = run_simulation_report(args, out_dir, baselines=not args.no_baselines, isolated=True)
    fed = result["federated"]
    if fed["status"] != "completed":
        print(f"federation failed: {fed.get('guarantee')}; see {out_dir / 'report.json'}")
        return 1
    plot = _plot(result, out_dir / "accuracy.png")
    (out_dir / "simulation.json").write_text(json.dumps(result, indent=2, default=str))
    if args.json_path:
        Path(args.json_path).write_text(json.dumps(result, indent=2, default=str))
    print(
        f"\n{result['dataset']}: {result['parties']} parties ({result['partition']}), epsilon {result['epsilon']:g}, "
        f"depth {result['max_depth']}, {result['n_trees']} tree(s) per party, {result['split_mode']} splits\n"
    )
    print(_table(result))
    for line in cost_lines(result):
        print(line)
    fe = fed.get("federated_evaluation") or {}
    if fe:
        print("\n" + evaluation_line(fe))
    if fed.get("contributions"):
        print("\nper-party contribution on the coordinator's validation data (post-processing; epsilon unchanged):")
        print(contribution_table(fed["contributions"], fed.get("parameters", {}).get("flag_alpha")))
    rejected = [p for p in fed["parties"] if p["status"] != "accepted"]
    print(
        f"\nreleases accepted: {len(fed['parties']) - len(rejected)}/{len(fed['parties'])}"
        + "".join(
            f"\n  - {p['party_id'] or 'node ' + str(p['node_id'])}: {p['status']} ({p['reason']}) {p['message']}"
            for p in rejected
        )
    )
    sizes = [b for b in result["bytes_per_party"] if b]
    if sizes:
        print(
            f"bytes on the wire per party release: median {sorted(sizes)[len(sizes) // 2]}, "
            f"model {fed['model_bytes']} bytes, merge {fed['merge_seconds'] * 1000:.1f} ms"
        )
    print(timing_line(result))
    print(f"\nguarantee: {fed['guarantee']}")
    for caveat in result.get("simulation_caveats", []):
        print(f"  simulation: {caveat}")
    print(f"\nmodel: {fed['model_path']}\nreport: {out_dir / 'simulation.json'}" + (f"\nplot: {plot}" if plot else ""))
    return 0
