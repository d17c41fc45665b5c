"""Pictures of simulations: one report against its baselines; a sweep's accuracy along each axis."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from edprf_core.count_text import count_text

from ._marks import SEEDED_RUNS_MARK, dataset_note

if TYPE_CHECKING:
    from ._run import SimulationReport

__all__ = ["NO_PLOT_TEXT", "plot_report", "plot_sweep", "report_title"]


NO_PLOT_TEXT = "none: matplotlib is not installed (it comes with pip install '.[federation]')"
"""What ``edprf simulate`` and ``edprf sweep`` say in place of a plot's path when matplotlib is missing (the
``deploy`` extra has none)."""


def plot_report(report: SimulationReport, path: Path) -> Path | None:
    """Bar chart of the federated model against the baselines on the central test rows; None without matplotlib."""
    plt = _pyplot()
    if plt is None:
        return None
    fed = report.federated
    base = report.baselines or {}
    rows = [("federated", fed.get("central_evaluation", {}))]
    shown = (
        ("central_edprf", "central DP"),
        ("party_alone_median", "party alone\n(median)"),
        ("party_alone_best", "party alone\n(best on the test\nrows: optimistic)"),
        ("non_private_rf", "non-private RF"),
    )
    # a baseline fitted with the estimator's residual pass (two classes) says so: no federation carries one
    rows += [
        (short + ("\n+ pass" if base[key].get("residual_pass") else ""), base[key])
        for key, short in shown
        if key in base
    ]
    metrics = (("accuracy", "accuracy"), ("balanced_accuracy", "balanced acc."), ("roc_auc", "ROC AUC"))
    fig, ax = plt.subplots(figsize=(7.5, 3.8))
    width = 0.8 / len(metrics)
    for k, (key, name) in enumerate(metrics):
        xs = [i + (k - 1) * width for i in range(len(rows))]
        vals = [m.get(key) if isinstance(m.get(key), float) else float("nan") for _, m in rows]
        ax.bar(xs, vals, width, label=name, yerr=_interval_bars(rows, key, vals), capsize=2, ecolor="dimgrey")
        for x, v in zip(xs, vals):
            if not math.isnan(v):
                ax.text(x + width / 2, v + 0.01, f"{v:.2f}", ha="left", fontsize=6)
        if key == "accuracy" and "majority_class" in base:  # its line over the accuracy bars only (review R9)
            ax.hlines(
                [base["majority_class"]["accuracy"]] * len(xs),
                [x - width / 2 for x in xs],
                [x + width / 2 for x in xs],
                color="black",
                linestyle="--",
                linewidth=1,
                label="majority-class accuracy",
            )
    ax.set_xticks(range(len(rows)), [r[0] for r in rows], fontsize=8)
    ax.set_ylim(0, 1.22)
    ax.set_ylabel("on the central test rows (95% intervals)")
    ax.set_title(report_title(report), fontsize=9)
    ax.legend(fontsize=7, loc="upper center", ncol=4, frameon=False)
    fig.tight_layout()
    from protocol import open_owner_only

    with open_owner_only(path, binary=True) as f:  # beside the simulation's owner-only report, owner-only too
        fig.savefig(f, dpi=120, format="png")
    plt.close(fig)
    return path


def _interval_bars(rows: Sequence[tuple[str, Mapping[str, Any]]], key: str, vals: Sequence[float]) -> list[list[float]]:
    """Each bar's 95% interval (``<key>_ci95``) as matplotlib's lower and upper error lengths (0 where none)."""
    low, high = [], []
    for (_, m), v in zip(rows, vals):
        ci = m.get(f"{key}_ci95")
        ok = isinstance(ci, (list, tuple)) and len(ci) == 2 and not math.isnan(v)
        low.append(max(0.0, v - float(ci[0])) if ok else 0.0)
        high.append(max(0.0, float(ci[1]) - v) if ok else 0.0)
    return [low, high]


def report_title(report: SimulationReport) -> str:
    """The title of :func:`plot_report`'s chart: the run; on a line of its own what makes it NOT DP, if anything; and
    what the baselines are and any note on the data (review rev-research R9)."""
    mark = report.not_dp_mark
    parties = count_text(report.settings.parties, "party", "parties")
    title = f"Cost of federating: {report.dataset}, {parties} ({report.partition}), eps={report.settings.epsilon:g}"
    lines = [title, mark] if mark else [title]
    if report.baselines:
        lines.append("DP baselines: seeded research fits, the median of their noise draws, never released")
    if note := dataset_note(report.dataset, (report.federated or {}).get("schema_fingerprint", "")):
        lines.append(f"note: {note.split(';')[0]}")
    return "\n".join(lines)


PARTY_ALONE_AUC_TEXT = "party alone (median): the ROC AUC of the party and noise draw of median accuracy, not a median of the parties' AUCs"
"""What a sweep's party-alone ROC AUC is (``sweep.csv``: ``party_alone_median_roc_auc``)."""

SWEEP_METRICS = (("accuracy", "test accuracy"), ("roc_auc", "test ROC AUC"))
"""What the sweep plots draw along each axis: accuracy always (``accuracy_vs_<axis>.png``), ROC AUC on two classes
(``roc_auc_vs_<axis>.png``), where accuracy barely moves from the majority class's (review rev-research R10)."""


def plot_sweep(rows: Sequence[Mapping[str, Any]], configs: Sequence[Mapping[str, Any]], out: Path) -> list[Path]:
    """``accuracy_vs_<axis>.png`` for each axis with two values or more among the runs ``rows`` (``configs``: the
    grid, kept for callers; the rows say which configurations ran), and on two classes ``roc_auc_vs_<axis>.png``
    beside it (federated, central and each party alone's median); the files written (none without matplotlib).

    Each title says what the runs are: seeded research runs, not differentially private (and a drafted schema),
    and the dataset's note (the wall robot's time series: random splits are optimistic, review rev-research R9).
    """
    plt = _pyplot()
    if plt is None:
        return []
    two_classes = any(str(r.get("brier_scale", "")).startswith("binary") for r in rows)
    metrics = SWEEP_METRICS if two_classes else SWEEP_METRICS[:1]
    return [
        path
        for axis in ("epsilon", "parties", "alpha", "max_depth", "n_trees")
        for metric, label in metrics
        if (path := _plot_axis(plt, rows, axis, metric, label, out)) is not None
    ]


def _plot_axis(
    plt: Any, rows: Sequence[Mapping[str, Any]], axis: str, metric: str, ylabel: str, out: Path
) -> Path | None:
    """``<metric>_vs_<axis>.png`` of the runs ``rows``: the federated lines, the distinct central lines, on ROC AUC
    each party alone's; None when the runs hold fewer than two values of ``axis``."""
    import numpy as np

    from ._sweep import SWEEP_AXES

    n_seeds = len({r["seed"] for r in rows})
    # the runs' configurations (a row holds its alpha even when its configuration left it to the base
    # settings); along alpha the dirichlet ones only (the others hold none)
    grid = [dict(zip(SWEEP_AXES, c)) for c in dict.fromkeys(tuple(r.get(k, "") for k in SWEEP_AXES) for r in rows)]
    grid = [c for c in grid if axis != "alpha" or c["partition"] == "dirichlet"]
    xs = sorted({c[axis] for c in grid}, key=_axis_order)
    if len(xs) < 2:
        return None
    positions = list(range(len(xs))) if any(isinstance(x, str) for x in xs) else xs  # 'auto' among depths
    fig, ax = plt.subplots(figsize=(8.5, 4.0))
    others = [k for k in SWEEP_AXES if k != axis]
    keys = sorted({tuple(c[k] for k in others) for c in grid}, key=lambda key: tuple(map(_axis_order, key)))
    varying = [k for k in others if len({c[k] for c in grid}) > 1]
    spread = n_seeds > 1
    for i, key in enumerate(keys):
        label = ", ".join(f"{k}={v}" for k, v in zip(others, key) if k in varying and v != "")
        means, spreads = _series(rows, axis, xs, others, key, f"federated_{metric}")
        _draw(ax, xs, positions, means, spreads if spread else None, "-o", f"C{i % 10}", f"federated {label}".strip())
    central = _central_lines(rows, axis, xs, others, keys, varying, f"central_{metric}")
    for label, (means, spreads), first in central:
        _draw(ax, xs, positions, means, spreads if spread else None, "--s", f"C{first % 10}", label, alpha=0.6)
    if metric != "accuracy":  # each party alone's: what federating buys, on the metric that separates them
        for i, key in enumerate(keys):
            label = ", ".join(f"{k}={v}" for k, v in zip(others, key) if k in varying and v != "")
            means, spreads = _series(rows, axis, xs, others, key, f"party_alone_median_{metric}")
            style, colour = ":^", f"C{i % 10}"
            _draw(
                ax,
                xs,
                positions,
                means,
                spreads if spread else None,
                style,
                colour,
                f"party alone (median) {label}".strip(),
            )
    if any(isinstance(x, str) for x in xs) and len(xs) > 1:  # 'auto' apart from the fixed depths
        ax.axvline(positions[-1] - 0.5, color="grey", linestyle=":", linewidth=1)
    if metric == "accuracy":
        majority = np.nanmean([r["majority_accuracy"] for r in rows])
        if np.isfinite(majority):
            ax.axhline(majority, color="black", linestyle=":", linewidth=1, label=f"majority class ({majority:.3f})")
    else:  # a constant score's AUC: what always predicting the majority class gets
        ax.axhline(0.5, color="black", linestyle=":", linewidth=1, label="chance (0.5)")
    if axis in ("parties", "max_depth", "n_trees", "alpha"):
        ticks = [str(x) if x != "auto" else "auto\n(each party's own;\nsweep.md: depths)" for x in xs]
        ax.set_xticks(positions, ticks)  # counts: integer ticks only
    if _log_scaled(axis, xs):  # 0.25 .. 8: evenly spaced doublings, not a crowded left end
        ax.set_xscale("log")
        ax.set_xticks(xs, [f"{x:g}" for x in xs])
        ax.minorticks_off()
    ax.set_xlabel(axis.replace("_", " ") + (" (log scale)" if _log_scaled(axis, xs) else ""))
    ax.set_ylabel(ylabel)
    name = "Accuracy" if metric == "accuracy" else "ROC AUC"
    title = f"{name} vs {axis.replace('_', ' ')}: {_sweep_runs_text(rows, n_seeds)}"
    if metric != "accuracy":  # review rev-research2 N16: which party's AUC the line is
        title += f"\n{PARTY_ALONE_AUC_TEXT}"
    ax.set_title(title, fontsize=8)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)  # beside the lines
    fig.tight_layout()
    path = out / f"{metric}_vs_{axis}.png"
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)
    return path


def _draw(ax, xs, positions, means, spreads, fmt: str, color: str, label: str, alpha: float = 1.0) -> None:
    """One series of a sweep plot: a line through the numeric values of the axis, and a word among them (``auto``
    among fixed depths) as its own unconnected marker: a depth the parties chose is no point on the depth axis, and
    a line to it would read as a trend (review rev-research R2)."""
    fixed = [i for i, x in enumerate(xs) if not isinstance(x, str)]
    words = [i for i, x in enumerate(xs) if isinstance(x, str)]
    labelled = False
    for indices, style in ((fixed, fmt), (words, fmt.lstrip("-"))):
        if not indices:
            continue
        ax.errorbar(
            [positions[i] for i in indices],
            [means[i] for i in indices],
            yerr=None if spreads is None else [spreads[i] for i in indices],
            fmt=style,
            color=color,
            capsize=3,
            alpha=alpha,
            label=None if labelled else label,
        )
        labelled = True


LOG_SCALE_SPAN = 5.0
"""An epsilon (or alpha) axis whose largest value is more than this many times its smallest is drawn on a log scale."""


def _log_scaled(axis: str, xs: Sequence[Any]) -> bool:
    """Whether the sweep plot along ``axis`` uses a log scale: epsilon spanning more than :data:`LOG_SCALE_SPAN`."""
    return axis in ("epsilon", "alpha") and min(xs) > 0 and max(xs) / min(xs) > LOG_SCALE_SPAN


def _series(
    rows: Sequence[Mapping[str, Any]],
    axis: str,
    xs: Sequence[Any],
    others: Sequence[str],
    key: tuple[Any, ...],
    column: str,
) -> tuple[list[float], list[float]]:
    """``column``'s mean and sample standard deviation over the seeds at each of ``xs``, for the runs whose other
    axes hold ``key`` (NaN where no run, or a single one for the spread)."""

    sel = [[r[column] for r in rows if r.get(axis, "") == x and tuple(r.get(k, "") for k in others) == key] for x in xs]
    return _means_and_spreads(sel)


def _means_and_spreads(groups: list[list[float]]) -> tuple[list[float], list[float]]:
    """Each group's mean and sample standard deviation (NaN for an empty group, and for the spread of one value)."""
    import numpy as np

    means = [float(np.nanmean(v)) if v else float("nan") for v in groups]
    spreads = [float(np.nanstd(v, ddof=1)) if len(v) > 1 else float("nan") for v in groups]
    return means, spreads


def _central_lines(
    rows: Sequence[Mapping[str, Any]],
    axis: str,
    xs: Sequence[Any],
    others: Sequence[str],
    keys: Sequence[tuple[Any, ...]],
    varying: Sequence[str],
    column: str = "central_accuracy",
) -> list[tuple[str, tuple[list[float], list[float]], int]]:
    """The central lines of a sweep plot: one per distinct central model, not one per federated line.

    The central model does not depend on the partition (its rows are pooled), nor at an automatic depth on
    the parties, so the federated lines of those configurations shared identical, overlapping central lines.
    Configurations are one central model when their runs agree at every (point, seed) both ran (the value, its
    trees and depth); their line is the mean over every seed any of them ran at each point, so configurations over
    different seeds (sweeps of different grids, an interrupted one) make one line, not one per seed set (review
    rev-research2 N4), its label saying the seeds per point when they differ.  Each line: its label (the axes its
    configurations share, ``any partition`` for those they differ in), its means and spreads, and the index of
    its first configuration in ``keys`` (its colour).
    """

    groups: list[tuple[list[int], dict[tuple[Any, int], tuple[Any, ...]]]] = []
    for i, key in enumerate(keys):
        points = {
            (r.get(axis, ""), r["seed"]): (r[column], r.get("central_n_trees", ""), r.get("central_max_depth", ""))
            for r in rows
            if r.get(axis, "") in xs and tuple(r.get(k, "") for k in others) == key
        }
        same = next((g for g in groups if _one_model(g[1], points)), None)
        if same is None:
            groups.append(([i], points))
        else:
            same[0].append(i)
            same[1].update(points)
    lines = []
    for members, points in groups:
        shared, merged = [], []
        for k in varying:
            seen = {keys[i][list(others).index(k)] for i in members}
            if len(seen) == 1:
                if (value := next(iter(seen))) != "":  # not 'alpha=' (an iid partition has none)
                    shared.append(f"{k}={value}")
            else:
                merged.append(k)
        at = [[v[0] for (x, _), v in points.items() if x == point] for point in xs]
        counts = [len(v) for v in at if v]
        seeds = f"({min(counts)}-{max(counts)} seeds per point)" if counts and min(counts) != max(counts) else ""
        label = " ".join(["central DP", ", ".join(shared), f"(any {', '.join(merged)})" if merged else "", seeds])
        lines.append((" ".join(label.split()), _means_and_spreads(at), members[0]))
    return lines


def _one_model(
    these: Mapping[tuple[Any, int], tuple[Any, ...]], those: Mapping[tuple[Any, int], tuple[Any, ...]]
) -> bool:
    """Whether two configurations' central runs are one model's: they share a (point, seed), and agree at each."""
    common = these.keys() & those.keys()
    return bool(common) and all(repr(these[c]) == repr(those[c]) for c in common)  # repr: NaN equals NaN


def _sweep_runs_text(rows: Sequence[Mapping[str, Any]], n_seeds: int) -> str:
    """What a sweep plot shows, for its title: the runs, the cells, and the note on the data (:func:`dataset_note`,
    whole: the wall robot's rows are a time series, so random splits are optimistic)."""
    drafted = ", drafted schema" if any(r.get("schema_drafted") for r in rows) else ""
    from ._sweep import seeds_per_cell

    low, high = seeds_per_cell(rows) if rows else (n_seeds, n_seeds)
    if high <= 1:
        spread = "one seed"
    elif low != high:  # review rev-research2 N4: cells over different seeds
        spread = f"mean ± sample sd over {low}-{high} seeds per point, not paired across points (sweep.md: each n)"
    else:
        spread = f"mean ± sample sd over {high} seeds"
    notes = [
        f"\nnote: {note}"
        for note in dict.fromkeys(
            dataset_note(str(r.get("dataset", "")), str(r.get("schema_fingerprint", ""))) for r in rows
        )
        if note
    ]
    return (
        f"{SEEDED_RUNS_MARK}{drafted}\n({spread}; 'central DP': the same, centrally: sweep.md says which model)"
        + "".join(notes)
    )


def _axis_order(value: object) -> tuple[bool, Any]:
    """Sort key of an axis' values: numbers in order, then words (``auto`` after the depths)."""
    return isinstance(value, str), value


def _pyplot():
    """matplotlib's pyplot on the file-only backend, or None when matplotlib is not installed."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    return plt
