"""``edprf evaluate MODEL DATA --positive-class C``: clinical metrics of a model on labelled rows you may use.

Prints the confusion matrix, sensitivity, specificity, PPV, NPV, accuracy,
balanced accuracy, ROC AUC and Brier score, each with a 95 % interval
(Wilson for proportions; for the AUC, DeLong's SE on the logit scale; for the
Brier score, a log-scale interval: both asymptotic, approximate with fewer
than 30 rows in the smaller class: :mod:`edprf_core._metric_intervals`), a
calibration table and a threshold table.  Without ``--positive-class``, a
two-class model's report is of its last declared class (the output says so),
a larger model's is of every class against the others.  Warns loudly when the
model predicts one class for (nearly) every row.  Rows whose features or
label break the schema's rules are counted and left out, never fail the run.
``--json PATH`` writes everything as JSON.

Privacy: the figures are exact statistics of DATA, not differentially
private; evaluating on your own data spends no ε of anyone (using the model
is post-processing of its releases).
"""

from __future__ import annotations

import argparse
import json
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from ._arg_types import CLI_MAX_CALIBRATION_BINS, integer
from ._model_args import (
    add_force_argument,
    add_model_arguments,
    check_output_directory,
    clipping_status,
    described_when_read,
    no_rows_text,
    prepare,
    refuse_existing_outputs,
    say,
    scoring_text,
)
from ._subset_share import SUBSET_SHARE

if TYPE_CHECKING:
    from collections.abc import Iterator

    from edprf_core.metrics import ClinicalReport
    from edprf_core.schema import Schema

__all__ = ["MULTICLASS_THRESHOLD_NOTE", "format_report", "register", "run_evaluate"]

MULTICLASS_THRESHOLD_NOTE = (
    "with more than two classes, --positive-class C --threshold T re-decides class C only: a row is decided C when "
    "its probability of C is at least T, otherwise the most probable of the other classes (they get no threshold)"
)
"""What ``--positive-class`` with ``--threshold`` decides on a model of more than two classes (help and report)."""

SUBSET_EXIT = 5
"""Exit status of an evaluation whose metrics are on a subset of the rows (see :data:`._subset_share.SUBSET_SHARE`).  Not
2 (argparse's wrong option), 3 (a signature that does not verify) nor 4 (a clipped column); when a clipped column
and a subset both apply, this one."""

EXIT_STATUS_NOTE = (
    "exit status: 0 the report; 1 an error; 2 a wrong option; 3 a signature that does not verify; 4 a column "
    "clipped to its bounds, or read as its unknown category (values the schema does not declare), in 20% or more "
    "of its rows (unless --allow-clipped); 5 metrics on a subset of the rows that may be biased (unless "
    "--allow-subset): more than 5% of the rows left out for any reason (a feature's value refused by the schema's "
    "rules, a malformed line, a missing label), more than 5% of a minority class's labelled rows refused, rows "
    "without a label whose mean predicted probability differs from the evaluated rows' by 3 standard errors or more, "
    "or some label not a declared class; when both 4 and 5 apply, 5 (the report is written with either)"
)
"""``evaluate``'s exit statuses (its help's epilog)."""

ROWS_KEYS_NOTE = (
    "rows partitions DATA's rows: ok and clipped were scored and evaluated (clipped: some value clipped to the "
    "schema's bounds, or an undeclared category read as the feature's unknown one); refused (a feature broke the schema's rules), malformed (a line the parser could not read) "
    "and label (a missing or undeclared label) were left out; left_out_reasons counts the rows left out per reason "
    "(a row with two refused cells under both); left_out_by_class gives, per class, the share of its labelled rows "
    "refused (when at least 5 of them were) and the mean predicted "
    "probability of the rows left out for their label against the evaluated rows' (z: in standard errors)"
)
"""What the ``rows`` counts of ``evaluate --json`` mean (written into the JSON as ``rows_note``)."""


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``evaluate`` subcommand."""
    p = sub.add_parser(
        "evaluate",
        help="clinical metrics with 95%% intervals on labelled data you may use",
        description=(
            "Clinical metrics of a model on labelled rows: confusion matrix, sensitivity, specificity, PPV, NPV, "
            "accuracy, balanced accuracy, ROC AUC and Brier score, each with a 95% interval (Wilson for proportions; "
            "for the ROC AUC, DeLong's standard error on the logit scale; for the Brier score, a log-scale interval: "
            "these two are asymptotic, and the report says so when the smaller class has fewer than 30 rows); "
            "calibration and threshold tables.  Without --positive-class, a two-class model's report is of its last "
            "declared class (the output says which).  Exact statistics of DATA, not differentially private."
        ),
        epilog=f"{MULTICLASS_THRESHOLD_NOTE}.  {EXIT_STATUS_NOTE}",
        allow_abbrev=False,
    )
    add_model_arguments(p)
    p.add_argument(
        "--json",
        dest="json_path",
        type=Path,
        default=None,
        metavar="PATH",
        help="also write the metrics, intervals and tables as JSON, readable by its owner only (mode 0600: exact "
        "statistics of DATA)",
    )
    add_force_argument(p, "overwrite the --json file if it exists")
    p.add_argument(
        "--calibration-bins",
        type=integer(1, CLI_MAX_CALIBRATION_BINS),
        default=10,
        metavar="N",
        help=(
            f"equal-width probability bins of the calibration table, at most {CLI_MAX_CALIBRATION_BINS}: a finer "
            "bin holds too few rows for its observed share to mean anything (default: %(default)s)"
        ),
    )
    p.add_argument(
        "--label",
        dest="label_column",
        default=None,
        metavar="COL",
        help="the label column's name in DATA when it differs from the schema's (its values must still be the "
        "schema's classes or its [label] aliases)",
    )
    p.add_argument(
        "--label-map",
        dest="label_map",
        type=label_map_pairs,
        default=(),
        metavar="TEXT=CLASS,...",
        help="read these spellings of DATA's labels as the schema's classes, e.g. 'yes=1,no=0' (each CLASS one of "
        "the schema's classes; the model file is unchanged: your own rows' labels are read this way, as the "
        "schema's [label] aliases are read)",
    )
    p.add_argument(
        "--allow-subset",
        "--allow-missing-labels",  # its name before rows left out for a feature counted too (analyst review F1)
        dest="allow_subset",
        action="store_true",
        help=(
            f"do not exit {SUBSET_EXIT} when the metrics are on a subset of the rows that may be biased (more than "
            f"{SUBSET_SHARE:.0%}% of the rows left out for any reason, and the other cases under 'exit status' "
            "below); the report still carries the banner, with the most common reasons"
        ),
    )
    p.set_defaults(handler=run_evaluate)


def default_positive_text(classes: object) -> str:
    """The line saying which class a two-class model's report is about when ``--positive-class`` was not given."""
    last = list(classes)[-1]  # type: ignore[call-overload]
    return (
        f"positive class: {str(last)!r}, the last declared class of this two-class model (sensitivity, PPV, AUC, "
        "Brier score and calibration are of its probability; --positive-class C to choose the other)"
    )


def format_report(report: ClinicalReport) -> list[str]:
    """The report as text lines (Markdown tables): :meth:`edprf_core.metrics.ClinicalReport.text_lines`, with the
    threshold table's intervals pointed to ``--json``."""
    return report.text_lines(intervals_in="--json")


def run_evaluate(args: argparse.Namespace) -> int:
    """Handler of ``edprf evaluate``; returns the exit status."""
    if args.json_path is not None:  # before the model is loaded: a wrong option is one line, never after its banner
        if str(args.json_path) == "-":  # predict's '-o -' is stdout; here stdout holds the report
            from ._usage_error import UsageError  # exit 2, as a wrong option (review rev-auto A5)

            raise UsageError("--json -: expected a file path (the report is printed on stdout; JSON goes to a file)")
        check_output_directory("--json", args.json_path)
        refuse_existing_outputs(
            [(f"--json {args.json_path}", args.json_path)], args.force, model=args.model, data=args.data
        )
    prepared = prepare(args)
    if isinstance(prepared, int):
        return prepared
    forest, provenance, positive = prepared
    default_positive = positive is None and forest.schema.n_classes == 2
    if default_positive:  # two classes: the last declared one (the event: 'yes', 1), never class '0' by default
        positive = 1

    import numpy as np

    from edprf_core.count_text import count_text
    from edprf_core.metrics import clinical_report
    from edprf_core.prediction import read_labels, score_rows
    from edprf_core.tables import stream_rows

    from ._left_out import LeftOut
    from ._row_diagnostics import RowDiagnostics
    from ._support_split import support_split

    diagnostics = RowDiagnostics(forest.schema, no_header=args.no_header)
    left_out = LeftOut(tuple(forest.schema.classes))
    labels, probabilities, low_support = [], [], []
    counts = {"ok": 0, "clipped": 0}  # evaluated rows by status; the rows left out are counted in left_out
    threshold = args.threshold if args.threshold is not None else 0.5
    reading = _reading_schema(forest.schema, args.label_column, args.label_map)
    chunks = stream_rows(
        args.data, reading, sep=args.sep, header=not args.no_header, require_label=True, decimal=args.decimal
    )
    with _label_column_hint(forest.schema, args.label_column):
        for chunk in described_when_read(chunks, provenance, scoring_text(args.data, forest.n_trees)):
            scores = score_rows(
                forest, chunk.frame, chunk.malformed, pooling=args.pooling, support=True, clipping=diagnostics.clipping
            )
            diagnostics.add(chunk, scores)
            cells = chunk.frame[reading.label.column]
            y, why = read_labels(cells, reading)  # the model's classes, in its order; --label-map's spellings too
            unlabelled = scores.scored & (y < 0)
            undeclared = unlabelled & (why != "label missing")
            diagnostics.add_labels(cells, undeclared)  # a boolean array: by position
            left_out.add_labels(unlabelled & ~undeclared, undeclared)
            left_out.add_refused_labels(y, scores.status == "refused")
            left_out.add_unlabelled(scores.proba[unlabelled])
            use = scores.scored & (y >= 0)
            for status in ("ok", "clipped"):  # evaluated rows only: a row left out for its label is not 'ok'
                counts[status] += int((use & (scores.status == status)).sum())
            left_out.refused += int((scores.status == "refused").sum())
            left_out.malformed += int((scores.status == "malformed").sum())
            labels.append(y[use])
            probabilities.append(scores.proba[use])
            low_support.append(np.char.startswith(scores.support[use].astype(str), "low"))
    left_out.add_reasons(diagnostics.reasons)
    left_out.total, left_out.evaluated = diagnostics.rows, counts["ok"] + counts["clipped"]
    counts |= {"refused": left_out.refused, "malformed": left_out.malformed, "label": left_out.label}
    label_why = {"missing": left_out.missing, "undeclared": left_out.undeclared}
    if diagnostics.rows == 0:
        say(f"edprf evaluate: {no_rows_text(args.data, args.no_header)}")
        return 1
    y_all = np.concatenate(labels) if labels else np.zeros(0, dtype=np.int64)
    p_all = np.concatenate(probabilities) if probabilities else np.zeros((0, forest.schema.n_classes))
    report = clinical_report(
        y_all,
        p_all,
        forest.schema.classes,
        positive=positive,
        indices=True,  # y_all and positive are class indices: classes such as (1, 2) would read them as labels
        threshold=threshold,
        n_calibration_bins=args.calibration_bins,
    )
    print(
        f"evaluated {count_text(report.n, 'row')} of {args.data} ({counts['clipped']} clipped: a value moved into the schema's domain by rule); {left_out.count} left out "
        f"({counts['refused']} refused by the schema's rules, {count_text(counts['malformed'], 'malformed line')}, "
        f"{counts['label']} with a missing or undeclared label)"
        + (f"; pooling {args.pooling}" if args.pooling != "log-linear" else "")
    )
    from ._clipped_columns import clipped_by_column, clipped_lines

    clipped_columns = diagnostics.clipping.columns()
    for line in clipped_lines(clipped_columns, forest.schema, "evaluate")[0]:
        print(f"  {line}")
    left_out.set_evaluated(y_all, p_all)
    if left_out.count:
        print(f"  left out, most common reasons: {left_out.top_reasons()}")
    if risk := left_out.risk_text(positive):
        print(f"  {risk}")
    for hint in diagnostics.hints():
        print(f"  {hint}")
    if report.n == 0:
        reason = diagnostics.most_common_reason()
        if reason:
            why = f"(most common reason: {reason})"
        elif counts["label"]:  # every row that could be scored was left out for its label
            why = (
                f"(every label was missing or undeclared: {label_why['undeclared']} undeclared, "
                f"{label_why['missing']} missing; the schema's classes are {list(forest.schema.classes)}: map other "
                "spellings with --label-map TEXT=CLASS,..., recode the column, or name the label column with --label)"
            )
        else:
            why = "(check --sep, --no-header and the label column)"
        say(f"edprf evaluate: {args.data}: no row could be scored " + why)
        return 1
    banner = left_out.banner(positive)
    if banner:
        print("\n".join(["", "!" * 78, banner, "!" * 78]))
        say(banner)
    low = np.concatenate(low_support) if low_support else np.zeros(0, dtype=bool)
    support_lines, support = support_split(y_all, p_all, low, tuple(forest.schema.classes), positive, threshold)
    for line in support_lines:
        print(line)
    if default_positive:
        print(default_positive_text(forest.schema.classes))
    for line in format_report(report):
        print(line)
    for warning in (report.warning, report.unpredicted):
        if warning:
            say(warning)
    if args.json_path is not None:
        out = {
            "data": str(args.data),
            "rows": counts,
            "rows_note": ROWS_KEYS_NOTE,
            "clipped_columns": clipped_by_column(clipped_columns, forest.schema),
            "label_left_out": label_why,
            **left_out.as_dict(),
            "support": support,
            "subset_warning": banner,
            "pooling": args.pooling,
            "provenance": provenance.as_dict(),
            **report.as_dict(),
            "positive_class_default": default_positive,
        }
        _write_json(args.json_path, json.dumps(out, indent=2), args.force)
        say(f"metrics written to {args.json_path}")
    clipped = clipping_status(diagnostics, args.allow_clipped, "evaluate")  # says the units warning, if any
    if banner and not args.allow_subset:
        say(f"edprf evaluate: exit status {SUBSET_EXIT}: metrics on a subset of the rows (--allow-subset to accept)")
        return SUBSET_EXIT
    return clipped


def _write_json(path: Path, text: str, force: bool) -> None:
    """Write ``--json`` whole, owner-only: under a temporary name beside it, then moved (replacing a file there only
    with ``--force``: one another run wrote since the check at start-up is refused then too, review rev-auto A1)."""
    from protocol import PendingFile

    try:
        with PendingFile(path, replace=force) as pending:
            pending.open().write(text)
    except FileExistsError as exc:
        if exc.filename != str(path):
            raise
        raise ValueError(f"--json {path} exists; pass --force to overwrite it") from None


def label_map_pairs(text: str) -> tuple[tuple[str, str], ...]:
    """``--label-map``'s ``TEXT=CLASS,...`` as pairs (each side stripped, none empty, no TEXT twice)."""
    pairs = []
    for item in text.split(","):
        spelling, sep, target = (part.strip() for part in item.partition("="))
        if not sep or not spelling or not target:
            raise argparse.ArgumentTypeError(f"expected TEXT=CLASS pairs separated by commas, got {item.strip()!r}")
        pairs.append((spelling, target))
    repeated = sorted({s for s, _ in pairs if [t for t, _ in pairs].count(s) > 1})
    if repeated:
        raise argparse.ArgumentTypeError(f"each TEXT once, got {', '.join(map(repr, repeated))} more than once")
    return tuple(pairs)


def _reading_schema(schema: Schema, label_column: str | None, label_map: tuple[tuple[str, str], ...] = ()) -> Schema:
    """``schema`` with the label read from ``label_column`` (``--label``) and ``label_map``'s spellings added to
    its aliases (``--label-map``), or ``schema`` itself.  Only how DATA's labels are read changes: the classes,
    their order and the model are the schema's."""
    import dataclasses

    from edprf_core import SchemaError

    label = schema.label
    if label_column is not None and label_column != label.column:
        if label_column in schema.feature_names:
            raise ValueError(f"--label {label_column!r}: that is one of the schema's feature columns")
        label = dataclasses.replace(label, column=label_column)
    if label_map:
        by_text = {str(c.item() if hasattr(c, "item") else c): c for c in label.classes}
        unknown = [target for _, target in label_map if target not in by_text]
        if unknown:
            raise ValueError(
                f"--label-map: expected each CLASS one of the schema's classes {list(by_text)}, got {unknown[0]!r}"
            )
        aliases = dict(label.aliases) | {spelling: by_text[target] for spelling, target in label_map}
        try:
            label = dataclasses.replace(label, aliases=tuple(aliases.items()))
        except SchemaError as exc:  # a spelling that is a declared class, or one met twice over
            raise ValueError(f"--label-map: {str(exc).removeprefix('[label] aliases: ')}") from None
    return schema if label is schema.label else dataclasses.replace(schema, label=label)


@contextmanager
def _label_column_hint(schema: Schema, label_column: str | None) -> Iterator[None]:
    """Add the fix to the error for a header without the label column: ``--label COL`` and the schema's aliases."""
    from edprf_core.schema import DataValidationError

    column = label_column or schema.label.column
    try:
        yield
    except DataValidationError as exc:
        if f"label column {column!r} is missing from the header" not in str(exc):
            raise
        aliases = dict(schema.label.aliases)
        spellings = (
            f"its [label] aliases {aliases!r}" if aliases else "no [label] aliases (add them for other spellings)"
        )
        raise DataValidationError(
            f"{exc}; if DATA names its label column otherwise, pass --label COL; its values must be the schema's "
            f"classes {[c.item() if hasattr(c, 'item') else c for c in schema.label.classes]!r} or one of their aliases (the schema declares "
            f"{spellings})"
        ) from exc
