"""A clinical report as text: Markdown tables of the confusion matrix, the metrics with their 95 % intervals, each
class against the others, calibration and the threshold table.

Privacy: formats the caller's own report (computed on its own labelled rows, :data:`NOT_DP_NOTE`); nothing is
released.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._clinical_metrics import NOT_DP_NOTE
from .count_text import count_text

if TYPE_CHECKING:
    from ._clinical_metrics import ClinicalReport
    from ._metric_intervals import Estimate

__all__ = ["clinical_report_lines"]


def _cell(e: Estimate) -> str:
    return e.text(3)


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)] + ["| " + " | ".join(r) + " |" for r in rows]


def clinical_report_lines(report: ClinicalReport, intervals_in: str = "as_dict()") -> list[str]:
    """``report`` as text lines (Markdown tables); ``intervals_in`` names where the threshold table's intervals are
    (the table shows point values)."""

    classes = [str(c) for c in report.classes]
    lines: list[str] = []
    for warning in (report.warning, report.unpredicted):
        if warning:
            lines += ["", "!" * 78, warning, "!" * 78]
    rule = (
        f"positive class {classes[report.positive]!r} when its probability >= {report.threshold:g}"
        if report.positive is not None
        else "the most probable class"
    )
    lines += [
        "",
        f"confusion matrix ({count_text(report.n, 'row')}; rows: true class, columns: decided class, {rule}):",
    ]
    if report.positive is not None and len(classes) > 2:
        name = classes[report.positive]
        lines.insert(
            len(lines) - 1,
            f"note: {len(classes)} classes: the threshold re-decides {name!r} only: a row is decided {name!r} when "
            f"its probability of {name!r} is at least {report.threshold:g}, otherwise the most probable of the "
            "other classes (they get no threshold)",
        )
    lines += _table(
        ["true \\ decided", *classes], [[c, *(str(int(v)) for v in report.confusion[i])] for i, c in enumerate(classes)]
    )
    lines += ["", "summary (95% intervals):"]
    summary = [
        ["accuracy", _cell(report.accuracy), report.accuracy.method],
        ["balanced accuracy", _cell(report.balanced_accuracy), report.balanced_accuracy.method],
    ]
    if report.positive is not None:
        pos = report.per_class[report.positive]
        name = classes[report.positive]
        # PPV and NPV move with the prevalence: at another hospital's, the same model gives others
        prevalence = f" {(pos.tp + pos.fn) / report.n:.1%}" if report.n else ""
        summary += [
            [f"sensitivity ({name})", _cell(pos.sensitivity), pos.sensitivity.method],
            [f"specificity ({name})", _cell(pos.specificity), pos.specificity.method],
            [f"PPV ({name}; at this extract's prevalence{prevalence})", _cell(pos.ppv), pos.ppv.method],
            [f"NPV ({name}; at this extract's prevalence{prevalence})", _cell(pos.npv), pos.npv.method],
        ]
    one = str(report.brier_class) if len(classes) == 2 else None
    auc_name = f"ROC AUC ({one})" if one is not None else "ROC AUC (macro, one-vs-rest)"
    brier_name = f"Brier score ({one})" if one is not None else f"Brier score ({report.brier_scale})"
    summary += [
        [auc_name, _cell(report.roc_auc), report.roc_auc.method],
        [brier_name, _cell(report.brier), report.brier.method],
    ]
    if report.calibration_slope is not None and report.calibration_intercept is not None:
        summary += [
            [
                f"calibration slope ({one}; 1 = calibrated, > 1: probabilities too moderate, < 1: too extreme)",
                _cell(report.calibration_slope),
                _fit(report.calibration_slope),
            ],
            [
                f"calibration intercept ({one}; in-the-large, 0 = calibrated)",
                _cell(report.calibration_intercept),
                _fit(report.calibration_intercept),
            ],
        ]
    lines += _table(["metric", "value (95% CI)", "interval"], summary)
    if report.interval_note:
        lines += [f"note: {report.interval_note}"]
    lines += ["", "each class against the others (decided as above):"]
    lines += _table(
        ["class", "rows", "sensitivity", "specificity", "PPV", "NPV", "ROC AUC"],
        [
            [
                str(c.label),
                str(c.tp + c.fn),
                _cell(c.sensitivity),
                _cell(c.specificity),
                _cell(c.ppv),
                _cell(c.npv),
                _cell(c.roc_auc),
            ]
            for c in report.per_class
        ],
    )
    focus = report.per_class[report.positive] if report.positive is not None else None
    calibrated = [focus] if focus is not None else list(report.per_class)
    for c in calibrated:
        lines += [
            "",
            (
                f"calibration of the probability of {str(c.label)!r} (observed share with its Wilson "
                "interval; empty bins left out):"
            ),
        ]
        lines += _table(
            ["predicted", "rows", "mean predicted", f"observed {str(c.label)!r} (95% CI)"],
            [
                [f"{b.low:.1f}-{b.high:.1f}", str(b.n), f"{b.mean_predicted:.3f}", _cell(b.observed)]
                for b in c.calibration
                if b.n
            ],
        )
    if focus is not None and focus.thresholds:
        lines += [
            "",
            (
                f"threshold table: flag {str(focus.label)!r} when its probability >= threshold "
                f"(point values; intervals in {intervals_in}):"
            ),
        ]
        lines += _table(
            ["threshold", "flagged", "sensitivity", "specificity", "PPV", "NPV"],
            [
                [
                    f"{t.threshold:g}",
                    str(t.flagged),
                    *(_point(getattr(t, k)) for k in ("sensitivity", "specificity", "ppv", "npv")),
                ]
                for t in focus.thresholds
            ],
        )
    lines += ["", f"privacy: {NOT_DP_NOTE}"]
    return lines


def _fit(e: Estimate) -> str:
    """The calibration rows' method column: why the figure is n/a when the fit was not made (too few events)."""
    return e.method if e.method.startswith("too few") else "logistic, Wald"


def _point(e: Estimate) -> str:
    return "n/a" if e.value != e.value else f"{e.value:.3f}"
