"""A simulation report in words and tables: what ``edprf simulate`` prints."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from edprf_core.count_text import count_text

if TYPE_CHECKING:
    from ._run import SimulationReport, SimulationTimings

__all__ = [
    "CONTRIBUTIONS_FILE",
    "contribution_section",
    "contribution_table",
    "contributions_markdown",
    "cost_lines",
    "evaluation_line",
    "report_lines",
    "results_table",
    "timing_line",
    "training_rows_text",
]

BEST_PARTY_CAVEAT = "(chosen on the test rows: optimistic)"
"""What the best-party-alone baseline's label says: the party is picked by its accuracy on the very test rows it is
scored on, so its score is a best case, not what a party chosen beforehand would get."""

BASELINE_ROWS = (
    ("central_edprf", "central eDPRF (pooled rows; needs a trusted curator)"),
    ("party_alone_median", "each party alone: median party"),
    ("party_alone_best", f"each party alone: best party {BEST_PARTY_CAVEAT}"),
    ("non_private_rf", "non-private RF (raw features)"),
    ("majority_class", "majority class"),
)
"""The baselines' keys in :attr:`SimulationReport.baselines` and their labels, in table order."""


def report_lines(report: SimulationReport) -> list[str]:
    """The whole summary of a completed run: settings, metrics table, costs, evaluation, contributions,
    releases, bytes, wall time, guarantee and caveats."""
    fed, s = report.federated, report.settings
    mark = report.not_dp_mark
    lines = [
        (
            (f"\n{mark} (see the guarantee below)" if mark else "")
            + f"\n{report.dataset}: {count_text(s.parties, 'party', 'parties')} ({report.partition}), epsilon {s.epsilon:g}, "
            f"depth {report.depth}, {count_text(s.n_trees, 'tree')} per party, {s.split_mode} splits\n"
        ),
        results_table(fed, report.baselines, party_holdout=s.party_holdout),
        *cost_lines(fed, report.baselines),
    ]
    fe = fed.get("federated_evaluation") or {}
    if fe:
        lines.append("\n" + evaluation_line(fe))
    if report.contributions:
        lines.append(
            "\nper-party contribution on the coordinator's validation data (post-processing; epsilon unchanged):"
        )
        lines += contribution_section(report.contributions, fed.get("parameters", {}).get("flag_alpha"))
    lines += influence_lines(fed.get("influence_cuts") or [])
    lines += bounded_lines(fed.get("bounded_influence") or {})
    lines += [f"\npartition {line}" for line in report.partition_warnings]  # simulation.json: realised_partition
    rejected = [p for p in fed["parties"] if p["status"] != "accepted"]
    lines.append(
        f"\nreleases accepted: {len(fed['parties']) - len(rejected)}/{len(fed['parties'])}"
        + "".join(
            f"\n  - {p['party_id'] or 'node ' + str(p['node_id'])}: {p['status']} ({p['reason']}) {p['message']}"
            for p in rejected
        )
    )
    sizes = [p["release_bytes"] for p in fed["parties"] if p["release_bytes"]]
    if sizes:
        lines.append(
            f"bytes on the wire per party release: median {sorted(sizes)[len(sizes) // 2]}, "
            f"model {fed['model_bytes']} bytes, merge {fed['merge_seconds'] * 1000:.1f} ms"
        )
    lines.append(timing_line(report.timings, s.engine))
    lines.append(f"\nguarantee: {report.guarantee}")
    lines += [f"  simulation: {caveat}" for caveat in report.caveats]
    from ._marks import dataset_note

    if note := dataset_note(report.dataset, (report.federated or {}).get("schema_fingerprint", "")):
        lines.append(f"note: {note}")
    return lines


def results_table(
    federated: Mapping[str, Any], baselines: Mapping[str, Mapping[str, Any]] | None, *, party_holdout: float = 0.0
) -> str:
    """The federated model and each baseline on the central test rows, with 95% intervals (Markdown).

    The ``training rows`` column holds the rows each model was fitted on: for the federated model the
    coordinator's ``consortium_rows`` (``~`` before it when the parties held out ``party_holdout`` of their
    rows, as its count is then an expected one), for a baseline its ``training_rows``.
    """
    baselines = baselines or {}
    merged = federated.get("marginals") or {}
    consortium = (federated.get("parameters") or {}).get("consortium_rows")
    pooled = baselines.get("central_edprf", {})
    if consortium is not None and party_holdout > 0 and pooled.get("same_rows") and "training_rows" in pooled:
        # the simulation read every party's hold-out key: the rows the parties trained on, exactly, which the
        # pooled baselines fit on too (an expected "~" count beside them read as fewer rows: review rev-research R6)
        federation_rows = str(pooled["training_rows"])
    else:
        federation_rows = "" if consortium is None else f"{'~' if party_holdout > 0 else ''}{consortium}"
    rows = [
        (
            "federated eDPRF",
            federated.get("central_evaluation", {}),
            _parts_text(federated["n_trees"], merged.get("share", 0.0), False),
            federation_rows,
        )
    ]
    for key, label in BASELINE_ROWS:
        if key in baselines:
            b = baselines[key]
            trees = _parts_text(b["n_trees"], b.get("marginals_share", 0.0), b.get("residual_pass"))
            rows.append((label, b, trees, str(b.get("training_rows", ""))))
    central = rows[0][1]
    brier_key = "brier_multiclass" if "brier_multiclass" in central else "brier"
    brier_head = f"Brier ({central['brier_scale']})" if central.get("brier_scale") else "Brier"
    lines = [
        f"| model | trees | training rows | accuracy | balanced acc. | F1 (macro) | ROC AUC | {brier_head} |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for label, m, trees, fitted_on in rows:
        cells = [_cell(m, k) for k in ("accuracy", "balanced_accuracy", "f1_macro", "roc_auc", brier_key)]
        lines.append(f"| {label} | {trees} | {fitted_on} | " + " | ".join(cells) + " |")
    n = rows[0][1].get("n")
    # several classes: the AUC is the macro mean of one-vs-rest AUCs, its interval on the mean of their DeLong
    # standard errors (conservative), as `edprf evaluate` names it (review rev-research R8)
    auc = "logit-DeLong for ROC AUC" if brier_key == "brier" else "logit-DeLong for ROC AUC, macro one-vs-rest"
    lines.append(
        f"on {n if n is not None else 'the'} central test rows; in brackets the 95% interval (Wilson for "
        f"accuracy, MOVER-Wilson for balanced accuracy, bootstrap for F1, {auc}, log-scale for "
        "Brier); exact statistics of the test rows, no party's epsilon spent"
    )
    if consortium is not None and any("training_rows" in b for b in baselines.values()):
        same = all(b.get("same_rows", False) for b in baselines.values() if "training_rows" in b)
        lines.append(training_rows_text(party_holdout, same))
    drawn = [(label, m["draws"]) for label, m, _, _ in rows if m.get("draws", 1) > 1]
    if drawn:
        counts = sorted({n for _, n in drawn})
        lines.append(
            f"DP baselines: of {' or '.join(map(str, counts))} draws of their noise (research seeds; baselines are "
            "never released), the draw of median accuracy; the federated model is one draw of its parties' noise"
        )
    if any("marginals" in trees for _, _, trees, _ in rows):
        passed = any("+ pass" in trees for _, _, trees, _ in rows)
        lines.append(
            "trees + marginals: a share of the rows released noisy one-way class histograms instead of growing "
            "trees, pooled with the trees' probabilities"
            + (
                "; + pass: one residual pass on those rows (a central fit by one data holder only; a party's "
                "release never carries one)"
                if passed
                else ""
            )
        )
    for label, m, _, _ in rows:
        if label == dict(BASELINE_ROWS)["majority_class"]:  # a constant by construction
            continue
        lines += [f"{label}: {m[key]}" for key in ("warning", "unpredicted") if m.get(key)]
    return "\n".join(lines)


def training_rows_text(party_holdout: float, same_rows: bool = False) -> str:
    """What the ``training rows`` column holds: the parties' rows less their hold-out, and the baselines' rows
    (``same_rows``: the parties' own training rows; otherwise, for some party, a sample of as many)."""
    if party_holdout <= 0:
        return (
            "training rows: the parties train on all their rows (no hold-out); the central, non-private and "
            "majority baselines on all of them pooled, each party alone on its own"
        )
    return (
        f"training rows: each party trains on its rows less the {100 * party_holdout:g}% it holds out for its own "
        "evaluation (a keyed draw inside the party, kept back whether or not the evaluation round runs); "
        + (
            "the baselines fit on the rows the parties trained on (each party's side of every row taken again "
            "with its own key, read from its ledger in the workspace): the central, non-private and majority "
            "baselines on all of them pooled, each party alone on its own; the federation's count is that exact one"
            if same_rows
            else "the federation's count is an expected one; each baseline fits on as many rows as the parties "
            "train on, a seeded sample of the pooled rows "
            "(each party alone: of its own rows), not the same rows (a party that never trained has no key to "
            "take its rows with)"
        )
    )


def _parts_text(n_trees: int, marginals_share: float | None, residual_pass: bool | None) -> str:
    """The model's parts for the table's ``trees`` column: ``5``, ``5 + marginals (90 % of rows)``, ``... + pass``."""
    if not marginals_share:
        return str(n_trees)
    return f"{n_trees} + marginals ({100 * marginals_share:.0f} % of rows)" + (" + pass" if residual_pass else "")


def _cell(metrics: Mapping[str, Any], key: str) -> str:
    """``0.9123 [0.891, 0.931]``: the value and its 95% interval; ``n/a`` when undefined."""
    from edprf_core.metrics import interval_text

    return interval_text(metrics.get(key), metrics.get(f"{key}_ci95"), brackets=True)


def cost_lines(federated: Mapping[str, Any], baselines: Mapping[str, Mapping[str, Any]] | None) -> list[str]:
    """What federating buys and costs, in points of accuracy and of ROC AUC, on the central test rows."""
    fed = federated.get("central_evaluation", {})
    base = baselines or {}

    def gap(key: str, metric: str) -> str | None:
        a, b = fed.get(metric), base.get(key, {}).get(metric)
        if not (isinstance(a, float) and isinstance(b, float) and math.isfinite(a) and math.isfinite(b)):
            return None
        return f"{100 * (a - b):+.1f}"

    rows = (
        ("party_alone_median", "against the median party alone"),
        ("party_alone_best", f"against the best party alone {BEST_PARTY_CAVEAT}"),
        ("central_edprf", "against central DP on the pooled rows (the model a trusted curator would give)"),
        ("majority_class", "against always predicting the majority class"),
    )
    lines, spread = [], False
    for key, label in rows:
        acc, auc = gap(key, "accuracy"), gap(key, "roc_auc")
        if acc is None:
            continue
        span = _draw_span(base.get(key, {}))
        spread |= bool(span)
        lines.append(
            f"  {label}: {acc} points of accuracy"
            + (f", {auc} of ROC AUC" if auc and key != "majority_class" else "")
            + (f" ({span})" if span else "")
        )
    if not lines:
        return []
    if spread:
        lines.append(
            "  a gap within a baseline's spread is within what its noise alone moves it, and the federated model's "
            "own noise moves it too (one draw): run again, or `edprf sweep --seeds`, before reading its sign"
        )
    return ["\nthe federated model, in points (positive: federating does better):", *lines]


def _draw_span(baseline: Mapping[str, Any]) -> str:
    """``its 5 noise draws: accuracy 0.902 to 0.926`` for a baseline drawn more than once, else ``""``."""
    draws = [a for a in baseline.get("accuracy_draws") or () if isinstance(a, float) and math.isfinite(a)]
    if len(draws) < 2:
        return ""
    return f"its {len(draws)} noise draws: accuracy {min(draws):.3f} to {max(draws):.3f}"


def influence_lines(cuts: list[Mapping[str, Any]]) -> list[str]:
    """Where the merge's bounded influence counted less than half of a party's claim (server's lines), or none."""
    from server import influence_cut_lines

    lines = influence_cut_lines(list(cuts))
    return ["\n" + lines[0], *lines[1:]] if lines else []


def bounded_lines(bounded: Mapping[str, Any]) -> list[str]:
    """Whether the merge bounded each party's say, and against how many acting together (server's lines), or none."""
    from server import bounded_influence_lines

    lines = bounded_influence_lines(dict(bounded))
    return ["\n" + lines[0], *lines[1:]] if lines else []


def evaluation_line(fe: Mapping[str, Any]) -> str:
    """The parties' noised held-out accuracy, its interval and one party's reach, or why there is none."""
    from server import federated_evaluation_lines

    return "\n".join(federated_evaluation_lines(fe))


def contribution_table(contributions: list[Mapping[str, Any]], alpha: float | None = None) -> str:
    """Per party in plain words, then the statistics: information, own accuracy, agreement, the quality test."""
    from server import contribution_lines

    words = [f"- {line}" for line in contribution_lines(contributions, alpha)]
    return "\n".join([*words, "", "the statistics behind these lines:", _contribution_statistics(contributions, alpha)])


SHOWN_PARTY_LINES = 12
"""Up to this many parties, the summary gives every party's contribution line and statistics; beyond, the
flagged parties by name and the others in one line per verdict (``contributions.md`` holds them all)."""

CONTRIBUTIONS_FILE = "contributions.md"
"""Every party's contribution line and statistics, beside ``simulation.json``."""


def contribution_section(contributions: list[Mapping[str, Any]], alpha: float | None = None) -> list[str]:
    """The summary's contribution part: :func:`contribution_table` for a few parties; for more than
    :data:`SHOWN_PARTY_LINES`, each flagged party's line, one line per other verdict (how many parties, the
    spread of their lift), and where the full table is."""
    if len(contributions) <= SHOWN_PARTY_LINES:
        return [contribution_table(contributions, alpha)]
    from server import contribution_lines, contribution_verdict

    lines = [f"- {w}" for c, w in zip(contributions, contribution_lines(contributions, alpha)) if c.get("flagged")]
    flagged = bool(lines)
    groups: dict[str, list[Mapping[str, Any]]] = {}
    for c in contributions:
        if not c.get("flagged"):
            groups.setdefault(contribution_verdict(c, alpha, len(contributions)), []).append(c)
    for verdict, members in groups.items():
        lifts = sorted(
            100 * lift
            for lift in (c.get("probability_lift") for c in members)
            if isinstance(lift, float) and math.isfinite(lift)
        )
        spread = (
            f"; their trees change the probability given to the right answer by {lifts[0]:+.1f} to {lifts[-1]:+.1f} "
            f"points (median {lifts[len(lifts) // 2]:+.1f})"
            if lifts
            else ""
        )
        lines.append(
            f"- {count_text(len(members), 'party', 'parties')}{' other than those named' if flagged else ''}: {verdict}{spread}"
        )
    lines.append(f"every party's line and the statistics behind them: {CONTRIBUTIONS_FILE} (beside simulation.json)")
    return lines


def contributions_markdown(contributions: list[Mapping[str, Any]], alpha: float | None = None) -> str:
    """The text of :data:`CONTRIBUTIONS_FILE`: every party's line, then the statistics table."""
    return (
        "# What each party's trees add, on the coordinator's validation rows\n\n"
        "Post-processing of the released trees: no epsilon.\n\n" + contribution_table(contributions, alpha) + "\n"
    )


def _contribution_statistics(contributions: list[Mapping[str, Any]], alpha: float | None = None) -> str:
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


def timing_line(timings: SimulationTimings, engine: str) -> str:
    """Where the wall time of a run went."""
    rounds = [
        f"{label} {timings.coordinator[key]:.1f} s"
        for key, label in (("train_round_s", "train round"), ("evaluation_round_s", "evaluation round"))
        if key in timings.coordinator
    ]
    parts = [
        f"preparing the parties' files {timings.prepare_s:.1f} s",
        f"federation {timings.federation_s:.1f} s" + (f" ({', '.join(rounds)})" if rounds else ""),
    ]
    if timings.baselines_s is not None:
        parts.append(f"baselines {timings.baselines_s:.1f} s")
    return f"wall time: {timings.wall_s:.1f} s on the {engine} engine: {'; '.join(parts)}"
