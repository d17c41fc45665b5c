#!/usr/bin/env python
"""The marginals' low-support fallback: what does it cost to let a bin within noise say nothing? (review F3)

Why.  A marginals bin whose released mass cannot be told from an empty bin's (the support rule,
``edprf_core._support``) still had a log-ratio term: the estimator floors the noisy counts at 0, so an empty
bin's class mix is the noise's positive part, about even, and its term is noise that tends to raise the rarer
class (analyst review F3: ``gender = Other``, 7 rows, odds ratio 2.4 from noise).  The fallback gives such a
bin term 0 for every class (``p_j(. | b) = q_j``), post-processing of the release only.  This benchmark picks
its threshold, and whether it also applies after a residual pass and to a federation's summed histograms, on
inner validation rows, then checks issue 23's goal cells on the test rows.

What.  Every fit is made once and scored under every variant of the fallback: the variants differ only in the
weight each bin's term gets in ``edprf_core._marginals.marginal_log_ratio_tables``, which every consumer reads (prediction, ONNX, explanations, rules), so the
comparison is paired on the same noise (the library holds no switch for it: the benchmark wraps the tables
function).  Variants (``snr`` = a bin's released mass in noise standard
deviations, ``edprf_core._support.bin_signal_to_noise``, the support rule's own figure):

- ``before``: no fallback (every bin's term kept);
- ``cut 2 sd``: term 0 where ``snr <= 2``, the support rule's ``Z_SCORE`` (tables with and without a pass);
- ``cut 2 sd, no pass``: the same, but tables after a residual pass left alone;
- ``cut 1 sd`` and ``cut 0 sd`` (released mass ``<= 0``): lower thresholds;
- ``ramp to 2 sd``: the term shrunk by ``clip(snr / 2, 0, 1)``, toward 0 in proportion to the bin's signal;
- ``centred 2 sd``: a bin within 2 sd gets its feature's mean term over the other bins (weighted by their
  released mass) instead of 0: "value unknown" where the terms are not centred (after a residual pass).

Stages:

- ``inner``: the nine two-class datasets of ``bench_rule_transfer.py`` and the wall robot (four classes),
  seeds 0-3, each seed's training rows split 75/25 (``_bench_common.inner_split``: the test rows are not
  read), ε in {0.1, 0.5, 1, 2}; the library's default estimator (``EDPRFClassifier`` defaults: the trees and,
  for two classes above the share rule's threshold, a marginals part, with a residual pass where its rule
  says) and the marginals model alone (``DPMarginalsClassifier``).  Accuracy, ROC AUC (macro one-vs-rest for
  the wall robot), log loss, Brier score, and the share of validation rows that reach a bin within 2 sd.
  Issue 23's goals on the inner rows read their targets (DP-EBM, the label configuration) from
  ``results/rule_transfer.csv``'s inner rows (same splits and seeds).
- ``federated``: diabetes and credit, 20 parties under Dirichlet-0.5 label skew, the coordinator's plan and
  ``merge_forests`` (``bench_federated_defaults.merged_forest``), inner splits, ε in {0.5, 1, 2}.
- ``probe``: the review's case, diabetes at its natural prior (not undersampled), inner rows, seeds 0-3: the mean
  change of class 1's log-odds when a validation row's ``gender`` becomes ``Other`` (about 11 training rows)
  or its HbA1c goes to the schema's bound (above every training value), per variant.
- ``test``: once the choice (:data:`CHOSEN`) was fixed on the stages above, the defaults on the test rows of
  seeds 0-9 (``make_split``) under :data:`TEST_VARIANTS`; goal targets from ``rule_transfer.csv``'s test rows.
  ``before`` reproduces that file's ``defaults`` rows (the report says by how much).

Decision rule, fixed before the inner run: a variant is adopted only if, on the inner rows, it meets issue 23's
two goals in at least as many (dataset, ε) cells of the defaults as ``before`` and its mean accuracy over the
cells is not lower (to 0.001); among such variants, the lowest mean log loss of the defaults.  Seeded research
noise: NOT DP releases.

    python benchmarks/bench_low_support_fallback.py                  # about 1 minute with 2 jobs (--jobs)
    python benchmarks/bench_low_support_fallback.py --report-only    # the report from the CSV

Output: ``results/low_support_fallback.md`` and ``.csv`` (one row per stage, dataset, ε, seed, model and variant).
"""

from __future__ import annotations

import sys
import warnings
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from unittest import mock

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _bench_common import RESULTS_DIR, Split, inner_split, make_split, party_rows, report_main
from _bench_datasets import load_any_dataset
from bench_feature_stumps import scores
from bench_rule_transfer import DATASETS as BINARY
from bench_rule_transfer import INNER_SEEDS, TEST_SEEDS, cell_means

from edprf_core import DPMarginalsClassifier, EDPRFClassifier, _marginals
from edprf_core._support import Z_SCORE, bin_signal_to_noise, bins_within_noise
from edprf_core.encoding import encode_labels
from edprf_core.prediction import row_support

EPSILONS = (0.1, 0.5, 1.0, 2.0)
FEDERATED_DATASETS = ("diabetes", "credit")
OUT = RESULTS_DIR / "low_support_fallback.md"
RULE_TRANSFER_CSV = RESULTS_DIR / "rule_transfer.csv"
CHOSEN = "before"
"""The variant picked on the inner stage by the decision rule of the docstring (the report recomputes the pick):
no fallback, the library's tables as they are."""
TEST_VARIANTS = ("before", "cut 2 sd", "cut 0 sd")
"""Scored on the test rows after the pick: the pick, the review's proposal (the support rule's 2 sd) and the
cheapest cut on the inner rows, so that what an opt-in fallback would cost issue 23's goal cells is on record."""


_TABLES = _marginals.marginal_log_ratio_tables


def _cut(z: float, after_pass: bool = True):
    def fallback(marginals, terms: tuple) -> tuple:
        if marginals.residual_pass is not None and not after_pass:
            return terms
        return tuple(t * (snr > z)[:, None] for t, snr in zip(terms, bin_signal_to_noise(marginals), strict=True))

    return fallback


def _ramp(marginals, terms: tuple) -> tuple:
    snr = bin_signal_to_noise(marginals)
    return tuple(t * np.clip(s / Z_SCORE, 0.0, 1.0)[:, None] for t, s in zip(terms, snr, strict=True))


def _centred(marginals, terms: tuple) -> tuple:
    """A bin within 2 sd gets its feature's mean term over the other bins, weighted by their released mass: the
    term of a row whose value of the feature is unknown (0 only where the terms are centred, which the tables
    after a residual pass are not)."""
    out = []
    for t, h, low in zip(terms, marginals.counts, bins_within_noise(marginals), strict=True):
        mass = np.where(low, 0.0, np.maximum(h.sum(axis=1), 0)).astype(np.float64)
        neutral = mass @ t / mass.sum() if mass.sum() > 0 else np.zeros(t.shape[1])
        out.append(np.where(low[:, None], neutral[None, :], t))
    return tuple(out)


VARIANTS = {
    "before": None,
    "cut 2 sd": _cut(Z_SCORE),
    "cut 2 sd, no pass": _cut(Z_SCORE, after_pass=False),
    "cut 1 sd": _cut(1.0),
    "cut 0 sd": _cut(0.0),
    "ramp to 2 sd": _ramp,
    "centred 2 sd": _centred,
}


@contextmanager
def variant(name: str):
    """Inside the block, every prediction's marginals tables are variant ``name``'s: the library's tables
    (``_marginals.marginal_log_ratio_tables``, which ``marginal_evidence`` and so every ``predict_proba`` reads)
    with the rows of the bins within noise replaced."""
    fallback = VARIANTS[name]
    if fallback is None:
        yield
        return

    def tables(marginals, **kwargs):
        log_prior, terms = _TABLES(marginals, **kwargs)
        return log_prior, fallback(marginals, terms)

    with mock.patch.object(_marginals, "marginal_log_ratio_tables", tables):
        yield


def metrics(proba: np.ndarray, truth: np.ndarray) -> dict[str, float]:
    """Accuracy and ROC AUC (``bench_feature_stumps.scores``), log loss and the (multiclass) Brier score."""
    accuracy, auc = scores(proba, truth)
    p = np.clip(proba, 1e-15, 1.0)
    onehot = np.eye(proba.shape[1])[truth]
    return {
        "accuracy": accuracy,
        "auc": auc,
        "log_loss": float(-np.log(p[np.arange(len(truth)), truth] / p.sum(axis=1)).mean()),
        "brier": float(((proba - onehot) ** 2).sum(axis=1).mean()),
    }


def low_share(forest, X: pd.DataFrame) -> float:
    """Share of the rows ``X`` that reach a marginals bin within noise (NaN without a marginals part)."""
    if forest.marginals is None:
        return float("nan")
    return float(row_support(forest, X).low_features.any(axis=1).mean())


def scored(split: Split, fitted: dict, variants: tuple[str, ...], **fields) -> list[dict]:
    """One row per (model, variant): ``fitted`` maps a model name to ``(predict_proba, forest or None)``."""
    truth = encode_labels(split.y_test, split.schema)
    rows = []
    for model, (predict, forest, _) in fitted.items():
        share = low_share(forest, split.X_test) if forest is not None else float("nan")
        for name in variants:
            with variant(name):
                rows.append(
                    {**fields, "model": model, "variant": name, "low_rows": share}
                    | metrics(predict(split.X_test), truth)
                )
    return rows


def central_models(split: Split, eps: float, seed: int, alone: bool) -> dict:
    """Per model, ``(predict_proba, forest or None, marginals or None)``: the defaults (and, if ``alone``, the
    marginals model alone) fitted on ``split``'s training rows."""
    schema = split.schema
    defaults = EDPRFClassifier(schema, epsilon=eps, random_state=seed).fit(split.X_train, split.y_train)
    out = {"defaults": (defaults.predict_proba, defaults.forest_, defaults.forest_.marginals)}
    if alone:
        m = DPMarginalsClassifier(schema, epsilon=eps, random_state=seed).fit(split.X_train, split.y_train)
        out["marginals"] = (m.predict_proba, None, m.marginals_)
    return out


def _logit(p: np.ndarray) -> np.ndarray:
    p = np.clip(p, 1e-12, 1 - 1e-12)
    return np.log(p / (1 - p))


def probe(data_dir: str) -> list[dict]:
    """The review's two cases on diabetes at its natural prior (8.5 % events: not undersampled), inner rows.

    The validation rows that are not ``gender = Other`` are scored as they are, then with ``gender = Other``
    (18 rows of 100,000 in the data: about 11 in an inner training set) and with ``HbA1c_level`` at the
    schema's bound (15 %, above every training value, 9 %): the mean change of class 1's log-odds, per
    variant, and the bin's released mass in noise standard deviations.
    """
    X, y, schema = load_any_dataset("diabetes", data_dir)
    names = list(schema.feature_names)
    top = schema.features[names.index("HbA1c_level")].upper
    rows = []
    for seed in INNER_SEEDS:
        # any name but "diabetes" keeps make_split from undersampling: the natural prior of the review's case
        split = inner_split(make_split(X, y, schema, seed, dataset="diabetes, natural prior"), seed)
        base = split.X_test[split.X_test.gender != "Other"]
        cases = {
            "gender = Other": ("gender", base.assign(gender="Other")),
            "HbA1c at its bound": ("HbA1c_level", base.assign(HbA1c_level=top)),
        }
        for eps in EPSILONS:
            for model, (predict, _, marginals) in central_models(split, eps, seed, alone=True).items():
                snr = bin_signal_to_noise(marginals) if marginals is not None else None
                for name in VARIANTS:
                    with variant(name):
                        before = _logit(predict(base)[:, 1])
                        for case, (feature, frame) in cases.items():
                            j = names.index(feature)
                            rows.append(
                                {
                                    "stage": "probe",
                                    "dataset": "diabetes",
                                    "seed": seed,
                                    "epsilon": eps,
                                    "model": model,
                                    "variant": name,
                                    "case": case,
                                    "shift": float((_logit(predict(frame)[:, 1]) - before).mean()),
                                    "bin_snr": float(snr[j][-1]) if snr is not None else float("nan"),
                                }
                            )
    print("probe diabetes done", file=sys.stderr, flush=True)
    return rows


def run_task(task: tuple[str, str, str]) -> list[dict]:
    """All rows of one (stage, dataset); ``data_dir`` rides along."""
    stage, name, data_dir = task
    warnings.simplefilter("ignore")
    if stage == "probe":
        return probe(data_dir)
    X, y, schema = load_any_dataset(name, data_dir)
    rows = []
    seeds = TEST_SEEDS if stage == "test" else INNER_SEEDS
    variants = TEST_VARIANTS if stage == "test" else tuple(VARIANTS)
    for seed in seeds:
        outer = make_split(X, y, schema, seed, dataset=name)
        split = outer if stage == "test" else inner_split(outer, seed)
        fields = {"stage": stage, "dataset": name, "seed": seed, "n_train": len(split.y_train)}
        if stage == "federated":
            from bench_federated_defaults import EPSILONS as FED_EPSILONS
            from bench_federated_defaults import N_PARTIES, merged_forest, plan

            parties = party_rows(split, "dirichlet-0.5", N_PARTIES, seed)
            for eps in FED_EPSILONS:
                share, bins = plan(split, eps)
                forest = merged_forest(split, parties, eps, seed, share, bins)
                fitted = {"federated": (forest.predict_proba, forest, forest.marginals)}
                rows += scored(split, fitted, variants, epsilon=eps, **fields)
            continue
        for eps in EPSILONS:
            fitted = central_models(split, eps, seed, alone=stage == "inner")
            rows += scored(split, fitted, variants, epsilon=eps, **fields)
    print(f"{stage} {name} done", file=sys.stderr, flush=True)
    return rows


def compute(stages: tuple[str, ...], data_dir: str, jobs: int) -> pd.DataFrame:
    datasets = {"inner": (*BINARY, "wall"), "federated": FEDERATED_DATASETS, "probe": ("diabetes",), "test": BINARY}
    tasks = [(stage, name, data_dir) for stage in stages for name in datasets[stage]]
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        return pd.DataFrame([row for rows in pool.map(run_task, tasks) for row in rows])


# ------------------------------------------------------------------------------------------------ the report


def goal_cells(table: pd.DataFrame, stage: str) -> pd.DataFrame:
    """Per (dataset, ε, variant): the defaults' means with issue 23's targets (``bench_rule_transfer.cell_means``
    on this table's defaults and the reference rows of ``rule_transfer.csv``, same stage)."""
    refs = pd.read_csv(RULE_TRANSFER_CSV)
    refs = refs[(refs.stage == stage) & refs.model.isin(("DP-EBM", "label"))]
    out = []
    mine = table[(table.stage == stage) & (table.model == "defaults")]
    for name, group in mine.groupby("variant", sort=False):
        frame = group.assign(model=name, n_features=group.dataset.map(refs.groupby("dataset").n_features.first()))
        cells = cell_means(pd.concat([frame[refs.columns.intersection(frame.columns)], refs], ignore_index=True))
        out.append(cells[cells.model == name].rename(columns={"model": "variant"}))
    return pd.concat(out, ignore_index=True)


def _mean_table(table: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Means over seeds per (keys, dataset, ε), then over the cells per keys."""
    cols = ["accuracy", "auc", "log_loss", "brier"]
    cells = table.groupby([*keys, "dataset", "epsilon"], sort=False)[cols].mean()
    return cells.groupby(level=keys, sort=False).mean()


def pick(inner: pd.DataFrame, goals: pd.DataFrame) -> tuple[str, pd.DataFrame]:
    """The decision rule of the docstring on the defaults' inner rows: the summary table and the variant picked."""
    summary = _mean_table(inner[inner.model == "defaults"], ["variant"])
    summary["goal cells"] = goals.groupby("variant").meets.sum().reindex(summary.index)
    base = summary.loc["before"]
    ok = summary[(summary["goal cells"] >= base["goal cells"]) & (summary.accuracy >= base.accuracy - 0.001)]
    return str(ok.log_loss.idxmin()), summary


def _fmt_delta(frame: pd.DataFrame, base: pd.Series) -> list[str]:
    lines = []
    for idx, row in frame.iterrows():
        label = " | ".join(idx) if isinstance(idx, tuple) else str(idx)
        deltas = [f"{row[c]:.4f} ({row[c] - base[c]:+.4f})" for c in ("accuracy", "auc", "log_loss", "brier")]
        extra = f" | {int(row['goal cells'])}" if "goal cells" in row else ""
        lines.append(f"| {label} | " + " | ".join(deltas) + extra + " |")
    return lines


def report(table: pd.DataFrame) -> str:
    inner = table[table.stage == "inner"]
    goals = goal_cells(table[table.dataset != "wall"], "inner")
    chosen, summary = pick(inner[inner.dataset != "wall"], goals)
    lines = [
        "# The marginals' low-support fallback (analyst review F3)",
        "",
        (
            "Command: `python benchmarks/bench_low_support_fallback.py`. What and why: its docstring. Seeded research "
            "noise, NOT DP releases. Every fit is scored under every variant (paired on the same noise). Metrics: "
            "accuracy, ROC AUC, log loss, Brier; in brackets the difference from `before`. `low rows`: share of the "
            "scored rows reaching a marginals bin within 2 sd (the support rule's `low: <feature>`)."
        ),
        "",
        "## Inner validation rows: the defaults, nine two-class datasets (36 cells, seeds 0-3)",
        "",
        (
            "Means over the 36 (dataset, ε) cells; `goal cells`: cells meeting both of issue 23's goals (targets "
            "from `rule_transfer.csv`'s inner rows)."
        ),
        "",
        "| variant | accuracy | AUC | log loss | Brier | goal cells |",
        "|---|---|---|---|---|---|",
        *_fmt_delta(summary, summary.loc["before"]),
        "",
        f"Picked by the decision rule (docstring): **{chosen}**"
        + ("" if chosen == CHOSEN else f" (CHOSEN is {CHOSEN}: update it)")
        + ".",
        "",
    ]
    lines += _stage_tables(inner, chosen)
    fed = table[table.stage == "federated"]
    if len(fed):
        lines += [
            "## Federated: 20 parties, Dirichlet 0.5, inner rows (seeds 0-3)",
            "",
            "| dataset | ε | variant | accuracy | AUC | log loss | Brier |",
            "|---|---|---|---|---|---|---|",
        ]
        means = fed.groupby(["dataset", "epsilon", "variant"], sort=False)[
            ["accuracy", "auc", "log_loss", "brier"]
        ].mean()
        for (name, eps), group in means.groupby(level=[0, 1], sort=False):
            base = group.xs("before", level=2).iloc[0]
            for v in ("before", "cut 2 sd", "cut 0 sd", "ramp to 2 sd", "centred 2 sd"):
                row = group.xs(v, level=2).iloc[0]
                lines.append(
                    f"| {name} | {eps:g} | {v} | "
                    + " | ".join(
                        f"{row[c]:.4f} ({row[c] - base[c]:+.4f})" for c in ("accuracy", "auc", "log_loss", "brier")
                    )
                    + " |"
                )
        share = fed[fed.variant == "before"].groupby(["dataset", "epsilon"]).low_rows.mean()
        lines += [
            "",
            "Low rows (share of validation rows reaching a bin within 2 sd): "
            + ", ".join(f"{d} ε = {e:g} {v:.2f}" for (d, e), v in share.items())
            + ".",
            "",
        ]
    probe = table[table.stage == "probe"]
    if len(probe):
        lines += _probe_tables(probe)
    test = table[table.stage == "test"]
    if len(test):
        lines += _test_tables(test)
    lines += READING
    return "\n".join(lines) + "\n"


def _stage_tables(inner: pd.DataFrame, chosen: str) -> list[str]:
    lines = [
        "Per cell, the defaults (means over seeds 0-3), `before` against the pick:",
        "",
        "| dataset | ε | low rows | accuracy | AUC | log loss | Brier |",
        "|---|---|---|---|---|---|---|",
    ]
    cols = ["accuracy", "auc", "log_loss", "brier"]
    means = (
        inner[inner.model == "defaults"]
        .groupby(["dataset", "epsilon", "variant"], sort=False)[[*cols, "low_rows"]]
        .mean()
    )
    for (name, eps), group in means.groupby(level=[0, 1], sort=False):
        if name == "wall":
            continue
        a, b = group.xs("before", level=2).iloc[0], group.xs(chosen, level=2).iloc[0]
        lines.append(
            f"| {name} | {eps:g} | {a.low_rows:.2f} | " + " | ".join(f"{a[c]:.4f} → {b[c]:.4f}" for c in cols) + " |"
        )
    lines += [
        "",
        "## Inner validation rows: the marginals model alone (`DPMarginalsClassifier`)",
        "",
        (
            "Means over the cells of the nine two-class datasets (36) and, separately, the wall robot's four "
            "(the defaults take no marginals part for four classes: their rows are unchanged by every variant)."
        ),
        "",
        "| datasets | variant | accuracy | AUC | log loss | Brier |",
        "|---|---|---|---|---|---|",
    ]
    alone = inner[inner.model == "marginals"].assign(
        group=np.where(inner[inner.model == "marginals"].dataset == "wall", "wall", "nine two-class")
    )
    summary = _mean_table(alone, ["group", "variant"])
    for group_name in ("nine two-class", "wall"):
        part = summary.loc[group_name]
        lines += [line.replace("| ", f"| {group_name} | ", 1) for line in _fmt_delta(part, part.loc["before"])]
    return [*lines, ""]


def _test_tables(test: pd.DataFrame) -> list[str]:
    goals = goal_cells(test, "test")
    variants = list(dict.fromkeys(test.variant))
    counts = goals.groupby("variant").meets.sum()
    refs = pd.read_csv(RULE_TRANSFER_CSV)
    old = refs[(refs.stage == "test") & (refs.model == "defaults")].set_index(["dataset", "epsilon", "seed"])
    mine = test[(test.variant == "before") & (test.model == "defaults")].set_index(["dataset", "epsilon", "seed"])
    gap = (mine[["accuracy", "auc"]] - old.loc[mine.index, ["accuracy", "auc"]]).abs().max().max()
    lines = [
        "## Test rows (seeds 0-9): issue 23's goal cells, the defaults",
        "",
        "Cells meeting both goals, of 36: "
        + ", ".join(f"{v} {int(counts[v])}" for v in variants)
        + f". `before` against `rule_transfer.csv`'s `defaults` rows: largest difference {gap:.2g}. Per cell, "
        "accuracy / AUC (✓: both goals met):",
        "",
        "| dataset | ε | " + " | ".join(variants) + " | target accuracy | DP-EBM AUC |",
        "|---|---|" + "---|" * (len(variants) + 2),
    ]
    by_cell = goals.set_index(["dataset", "epsilon", "variant"])
    for (name, eps), group in goals.groupby(["dataset", "epsilon"], sort=False):
        cells = []
        for v in variants:
            r = by_cell.loc[(name, eps, v)]
            cells.append(f"{r.accuracy:.3f} / {r.auc:.3f}" + (" ✓" if r.meets else ""))
        first = group.iloc[0]
        lines.append(
            f"| {name} | {eps:g} | " + " | ".join(cells) + f" | {first.target_accuracy:.3f} | {first.target_auc:.3f} |"
        )
    cols = ["accuracy", "auc", "log_loss", "brier"]
    means = _mean_table(test[test.model == "defaults"], ["variant"])
    lines += [
        "",
        "Means over the 36 test cells:",
        "",
        "| variant | accuracy | AUC | log loss | Brier |",
        "|---|---|---|---|---|",
    ]
    lines += _fmt_delta(means[cols], means.loc["before"])
    return [*lines, ""]


def _probe_tables(probe: pd.DataFrame) -> list[str]:
    shown = ("before", "cut 2 sd", "cut 0 sd", "centred 2 sd")
    lines = [
        "## The review's case: diabetes at its natural prior, inner rows (seeds 0-3)",
        "",
        (
            "Mean change of class 1's log-odds over the validation rows when `gender` is set to `Other` (about 11 "
            "training rows) or HbA1c to the schema's bound (15 %, above every training value), per variant; `snr`: "
            "the bin's released mass in noise sd, mean over the seeds, and in how many of the 4 seeds it is within "
            "2 sd / at most 0."
        ),
        "",
        "| case | model | ε | snr (≤ 2, ≤ 0) | " + " | ".join(shown) + " |",
        "|---|---|---|---|" + "---|" * len(shown),
    ]
    means = probe.groupby(["case", "model", "epsilon", "variant"], sort=False)["shift"].mean()
    snr = probe[probe.variant == "before"].groupby(["case", "model", "epsilon"], sort=False).bin_snr
    for (case, model, eps), values in snr:
        flags = f"{values.mean():+.2f} ({int((values <= Z_SCORE).sum())}, {int((values <= 0).sum())})"
        lines.append(
            f"| {case} | {model} | {eps:g} | {flags} | "
            + " | ".join(f"{means[(case, model, eps, v)]:+.3f}" for v in shown)
            + " |"
        )
    return [*lines, ""]


READING = [
    "## Reading",
    "",
    (
        "- **No fallback is adopted.** Every variant lowers the defaults' mean accuracy on the inner rows, and every "
        "other metric with it: the support rule's 2 sd by 1.75 points (26 → 22 goal cells), 1 sd by 0.87 (25), "
        "the ramp by 0.72 (26), the cut at a released mass ≤ 0 by 0.16 (26), the centred 2 sd by 2.59 (21). The "
        "marginals model alone loses likewise, on the two-class datasets and on the wall robot (0.2 to 4.2 points). "
        "Whether the pass's tables are included barely matters (`cut 2 sd, no pass`). The test rows, read after "
        "the pick, agree: the 2 sd cut would meet 22 of the 36 goal cells instead of 29 (it loses attrition at "
        "ε = 0.1 and 1, bank at 0.1, cancer at 1, fair at 0.5, heart at 0.5, mroz at 2); the cut at mass ≤ 0 meets "
        "the same 29 with 0.11 points less accuracy. No goal cell changes with the library as it is."
    ),
    (
        "- **Why it costs: within noise is not empty.** A validation row reaches a bin because rows like it exist, "
        "so the thin bins it meets hold a few rows, not none, and a feature's thin bins are its tails, where the "
        "classes differ most. The floored counts keep part of that class mix; a cut throws it away. The small "
        "datasets, where most validation rows reach such a bin (`low rows` up to 1.00), lose the most accuracy at "
        "2 sd: cancer 9.9 points, heart 3.8, mroz 2.2 (means over ε); bank, census, credit and diabetes move by "
        "less than 0.1. "
        "The harm the review saw is on values with no training rows at all, which validation rows rarely have: "
        "these metrics cannot see it, so the probe measures it directly."
    ),
    (
        "- **The review's case, measured.** At diabetes' natural prior the defaults raise class 1's log-odds of a "
        "row by +0.18 to +0.29 on average when its gender becomes `Other` (odds ×1.2 to ×1.3; the review's single "
        "run saw ×2.4), while the marginals model alone lowers it (−0.06 to −0.18): the sign is the noise's, "
        "not a rule. A cut at mass ≤ 0 would not fix it (the `Other` bin's mass is ≤ 0 in one or two seeds of "
        "four); the 2 sd cut catches the bin every time, but after a residual pass (ε ≥ 0.5 here) term 0 is not "
        "neutral: the pass's additive terms are not centred, and the rows still move +0.09 to +0.15. The centred "
        "variant (the feature's mass-weighted mean term) brings the shift within ±0.08, and the marginals alone's "
        "HbA1c-at-the-bound shift from +0.8..+1.7 to ±0.01. An opt-in fallback, if one is wanted for out-of-range "
        "values, should give the feature's mean term, not 0."
    ),
    (
        "- **Federated sums: worse, not better.** The summed histograms carry about √20 times one party's noise, so "
        "many more bins are within 2 sd (credit: 42 to 97 % of the validation rows reach one); the 2 sd cut costs "
        "credit 0.018 and 0.039 AUC at ε = 0.5 and 1. Diabetes (1 to 4 % of rows) barely moves."
    ),
    (
        "- **What is left for F3.** The wording (done), the per-row `low` flag, and the review's (c): a decision "
        "left empty, or refused, for low rows in the CLI."
    ),
]


def main() -> None:
    stages = ("inner", "federated", "probe", "test")
    report_main(__doc__.splitlines()[0], OUT, lambda data_dir, jobs: compute(stages, data_dir, jobs), report)


if __name__ == "__main__":
    main()
