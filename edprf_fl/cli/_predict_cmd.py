"""``edprf predict MODEL DATA -o OUT``: class probabilities for every row of a file, streamed.

One output row per data line of DATA, in order: its line number, a status
(``ok``, ``clipped``: a value moved into the schema's domain by rule, ``refused``, ``malformed``) with the reason, the
probability of each declared class, the predicted class, with
``--positive-class C --threshold T`` the binary decision, and last the row's
support (``ok``, or ``low: <features>`` when the released counts behind it
are within noise: :func:`edprf_core.prediction.row_support`; the summary
counts those rows).  A row that breaks
the schema's rules is reported, never fails the batch.  The model's
provenance and guarantee go to stderr, once.  DATA is read and OUT written in
chunks (bounded memory for any number of rows).  OUT: ``.csv``, ``.csv.gz``
(probabilities to 6 decimals) or ``.parquet`` (``.pq``), any other name is refused; ``-`` writes CSV to
stdout.  OUT is readable by its owner only (mode 0600, whatever the umask: a prediction per row, a patient's
typically).  An existing OUT is refused (yesterday's predictions are not replaced silently) unless ``--force``
is given.  OUT appears whole when the last row is written (it is written under a temporary name beside it, then
moved): a reader never sees part of it, a run that fails or is stopped leaves OUT as it was, and an OUT another run
wrote meanwhile is refused then too, unless ``--force``.

The summary (stderr) gives the Python API's units warning when a continuous column lies mostly and far outside
its bounds, over all rows read, and names each categorical column whose undeclared values were read as the
schema's ``unknown`` category (``'F'`` read as ``'Other'``: another coding?); such a row's status is ``clipped``
too.  Exit status 0 when at least one row was scored, even when other rows were
refused; 4 (``EXIT_CLIPPED``) when a column was clipped to its bounds, or read as its unknown category, in 20 % or
more of its rows, unless ``--allow-clipped`` is given (OUT is written all the same); 1 when not one row could
be scored (OUT is still written, each row with its reason), with the most common reason and hints for the usual
causes (decimal commas, a header read with ``--no-header``), or when DATA has no data line at all (no rows to
score: OUT holds the header only).

Privacy: post-processing of the parties' releases on your own rows; no ε
is spent and nothing leaves this machine.
"""

from __future__ import annotations

import argparse
import gzip
import os
import sys
from contextlib import ExitStack
from pathlib import Path
from typing import IO, TYPE_CHECKING

from ._arg_types import integer
from ._id_columns import add_id_column_argument, checked_id_columns, reading_schema
from ._model_args import (
    CLIPPED_EXIT_SHARE,
    EXIT_CLIPPED,
    add_force_argument,
    add_model_arguments,
    check_output_directory,
    check_output_extension,
    clipping_status,
    described_when_read,
    no_rows_text,
    prepare,
    refuse_existing_outputs,
    say,
    scoring_text,
)
from ._owner_only import open_owner_only

if TYPE_CHECKING:
    import pandas as pd

    from edprf_core import DPForest

    from ._row_diagnostics import RowDiagnostics

__all__ = ["OUTPUT_EXTENSIONS", "PROBABILITY_DECIMALS", "register", "run_predict"]

PROBABILITY_DECIMALS = 6
"""Decimals of the probabilities in CSV output (Parquet keeps full precision)."""

OUTPUT_EXTENSIONS = (".csv", ".csv.gz", ".parquet", ".pq")
"""What OUT's name may end in (any case); any other is refused (``.xlsx`` would have got CSV)."""


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``predict`` subcommand."""
    p = sub.add_parser(
        "predict",
        help="class probabilities for every row of a file (streamed)",
        description=(
            "Class probabilities for every row of a file, streamed: one output row per data line, with the line "
            "number, a status, the probabilities and, last, the row's support ('ok', or 'low: FEATURES' when the "
            "model's released counts there are within noise: no training rows there, so the probability is not a risk "
            "estimate: those counts' noise moves it either way, often toward the rarer class)."
        ),
        epilog="exit status: 0 when rows were scored (some may be refused: their reason is in OUT's detail column); "
        f"{EXIT_CLIPPED} when a column of DATA was clipped to its bounds, or held values its categorical feature does "
        f"not declare (read as the schema's unknown category), in {CLIPPED_EXIT_SHARE * 100:.0f}% or more of "
        "its rows (OUT is still written; --allow-clipped accepts it); 1 when not one row could be scored (OUT is still written), when DATA has no data line (no rows to score), "
        "or on an error before the first row; 3 when a signature does not verify with --keys (nothing written); "
        "2 a wrong option; 141 the reader of '-o -' went away (docs/exit-status.md)",
        allow_abbrev=False,
    )
    add_model_arguments(p)
    p.add_argument(
        "-o",
        "--output",
        required=True,
        metavar="OUT",
        help="output file: .csv, .csv.gz or .parquet (.pq), written readable by its owner only (mode 0600: a "
        "prediction per row of DATA); '-' for CSV on stdout",
    )
    add_force_argument(p)
    add_id_column_argument(p)
    p.add_argument(
        "--low-support",
        choices=LOW_SUPPORT_CHOICES,
        default=LOW_SUPPORT_CHOICES[0],
        help="what OUT says for a row of low support (support column 'low: ...': no training rows behind some of its "
        "values, so its probability is no risk estimate): 'score' writes its predicted class and decision as for any "
        "row; 'withhold' leaves its predicted and decision columns empty (its probabilities are kept, for "
        "reference) and the summary says how many were withheld and why (default: %(default)s)",
    )
    p.add_argument(
        "--chunk-rows",
        type=integer(1),
        default=20_000,
        metavar="N",
        help="rows read and written at a time (memory grows with it; default: %(default)s)",
    )
    p.set_defaults(handler=run_predict)


class _Writer:
    """Writes result chunks to CSV (plain, gzip, stdout) or Parquet as they come.

    OUT is written under a temporary name beside it and moved into place when the stack closes without an error
    (:class:`protocol.PendingFile`): a reader never sees part of it, a run that fails part way (a full disk,
    Ctrl-C, SIGTERM) removes its temporary file and leaves OUT as it was (scale review F8), and without --force an
    OUT written meanwhile by another run is not replaced (review rev-auto A1).  A named pipe or a device at OUT
    (--force) is written in place, as it is the user's.
    """

    def __init__(self, target: str, stack: ExitStack, force: bool = False) -> None:
        self.target = target
        self.force = force
        self.parquet = target.lower().endswith((".parquet", ".pq"))
        self.gzip = target.lower().endswith(".gz")
        self.first = True
        self.pending = None
        self._parquet_writer = None
        self._stack = stack
        self._handle: IO[str] | None = None

    def _open_text(self) -> IO[str]:
        """Opened at the first write: a file-level error (no such column) leaves no output file behind."""
        if self._handle is None:
            if self.target == "-":
                self._handle = sys.stdout
            elif self.gzip:
                raw = self._file(binary=True)
                self._handle = self._stack.enter_context(gzip.open(raw, "wt", encoding="utf-8", newline=""))  # noqa: SIM115 - the ExitStack closes it
            else:
                self._handle = self._file(binary=False)
        return self._handle

    def write(self, frame: pd.DataFrame) -> None:
        if self.parquet:
            import pyarrow as pa
            import pyarrow.parquet as pq

            table = pa.Table.from_pandas(frame, preserve_index=False)
            if self._parquet_writer is None:
                raw = self._file(binary=True)
                self._parquet_writer = self._stack.enter_context(pq.ParquetWriter(raw, table.schema))
            self._parquet_writer.write_table(table)
        else:
            rounded = frame.round(PROBABILITY_DECIMALS)  # 6 decimals: faster to write than a float format
            rounded.to_csv(self._open_text(), header=self.first, index=False, lineterminator="\n")
        self.first = False

    def _file(self, binary: bool) -> IO:
        """The output, owner-only: a temporary file moved to OUT when the stack closes without an error (entered
        before the writers wrapped around it, so it closes after them), or a pipe at OUT opened in place."""
        if _in_place(self.target):
            return self._stack.enter_context(
                open_owner_only(self.target, binary=True) if binary else open_owner_only(self.target)
            )
        from protocol import PendingFile

        self.pending = self._stack.enter_context(PendingFile(self.target, replace=self.force))
        return self.pending.open(binary)


def _in_place(target: str) -> bool:
    """Whether OUT is written where it is: something there that is not a regular file (a named pipe, a device, a
    symbolic link: :func:`open_owner_only` refuses a link)."""
    import stat

    try:
        return not stat.S_ISREG(os.lstat(target).st_mode)
    except FileNotFoundError:
        return False


LOW_SUPPORT_CHOICES = ("score", "withhold")
"""``--low-support``: the default first (a low-support row gets its predicted class and decision, as before)."""

LOW_SUPPORT_PREFIX = "low"
"""How the support column's label of a row with low support begins (``low: HbA1c_level``)."""


def low_support_text(n: int) -> str:
    """The summary line for ``n`` rows of low support (what it means and where to read more)."""
    from edprf_core.count_text import count_text

    return (
        f"{count_text(n, 'row')} with low support (support column 'low: ...'): the released counts behind them are "
        "within noise (no training rows there, e.g. a value beyond the training data yet inside the schema's "
        "bounds), so the terms those counts add are noise too: they can move the probability either way, often "
        "toward the rarer class; do not read these rows' probabilities (nor their decision) as risks: decide on "
        "other grounds and check the named values; see docs/using-a-model.md"
    )


def _result_frame(
    forest: DPForest,
    chunk,
    positive: int | None,
    threshold: float | None,
    diagnostics: RowDiagnostics | None = None,
    pooling: str = "log-linear",
    ids: tuple[str, ...] = (),
    withhold: bool = False,
) -> pd.DataFrame:
    """OUT's rows for one chunk; ``withhold`` (``--low-support withhold``): no predicted class nor decision for a
    row of low support (its probabilities stay)."""
    import numpy as np
    import pandas as pd

    from edprf_core.prediction import score_rows

    clipping = diagnostics.clipping if diagnostics is not None else None
    scores = score_rows(forest, chunk.frame, chunk.malformed, pooling=pooling, support=True, clipping=clipping)
    if diagnostics is not None:
        diagnostics.add(chunk, scores)
    classes = np.asarray([str(c) for c in forest.schema.classes], dtype=object)
    out = {name: chunk.frame[name].to_numpy() if name in chunk.frame else "" for name in ids}
    out |= {"line": chunk.line_numbers, "status": scores.status, "detail": scores.detail}
    for k, c in enumerate(classes):
        out[f"p_{c}"] = scores.proba[:, k]
    scored = scores.scored
    decided = scored & ~np.char.startswith(scores.support.astype(str), LOW_SUPPORT_PREFIX) if withhold else scored
    best = np.argmax(np.where(scored[:, None], scores.proba, 0.0), axis=1)
    out["predicted"] = np.where(decided, classes[best], "")
    if positive is not None:
        if len(classes) == 2:
            negative = classes[1 - positive]
        else:
            negative = f"not {classes[positive]}"
        flagged = scores.proba[:, positive] >= threshold
        out["decision"] = np.where(decided, np.where(flagged, classes[positive], negative), "")
    out["support"] = scores.support
    return pd.DataFrame(out)


def run_predict(args: argparse.Namespace) -> int:
    """Handler of ``edprf predict``; returns the exit status: 0 even when some rows were refused, 1 when every
    row was (or any error before the first row)."""
    target = str(args.output)
    if target != "-":  # checked before the model is loaded: a wrong option is one line, never after its banner
        check_output_extension("--output", target, OUTPUT_EXTENSIONS, also="or '-' for CSV on stdout")
        check_output_directory("--output", target)
        refuse_existing_outputs([(f"--output {target}", Path(target))], args.force, model=args.model, data=args.data)
    prepared = prepare(args)
    if isinstance(prepared, int):
        return prepared
    forest, provenance, positive = prepared
    from edprf_core.count_text import count_text
    from edprf_core.tables import stream_rows

    from ._row_diagnostics import RowDiagnostics

    taken = ["line", "status", "detail", *(f"p_{c}" for c in forest.schema.classes), "predicted", "decision", "support"]
    ids = checked_id_columns(args.id_column, args.data, args.sep, args.no_header, taken)
    diagnostics = RowDiagnostics(forest.schema, no_header=args.no_header)
    counts: dict[str, int] = {}
    low_support = 0
    withhold = args.low_support == "withhold"
    writer: _Writer | None = None
    try:
        with ExitStack() as stack:
            writer = _Writer(target, stack, args.force)
            reading = reading_schema(forest.schema, ids)
            chunks = stream_rows(
                args.data,
                reading,
                sep=args.sep,
                header=not args.no_header,
                chunk_rows=args.chunk_rows,
                decimal=args.decimal,
            )
            start = scoring_text(args.data, forest.n_trees, args.chunk_rows)
            for chunk in described_when_read(chunks, provenance, start):
                frame = _result_frame(forest, chunk, positive, args.threshold, diagnostics, args.pooling, ids, withhold)
                for status, n in frame["status"].value_counts().items():
                    counts[status] = counts.get(status, 0) + int(n)
                low_support += int(frame["support"].str.startswith(LOW_SUPPORT_PREFIX).sum())
                writer.write(frame)
            if writer.first:  # no data line at all: still a valid, empty result with its header
                import numpy as np
                import pandas as pd

                from edprf_core.tables import RowChunk

                empty = RowChunk(
                    pd.DataFrame({n: pd.Series(dtype=object) for n in (*ids, *forest.schema.feature_names)}),
                    np.zeros(0, dtype=np.int64),
                    np.zeros(0, dtype=object),
                    False,
                )
                writer.write(_result_frame(forest, empty, positive, args.threshold, ids=ids))
    except FileExistsError as exc:  # another run wrote OUT since the check at start-up: its file stays
        if exc.filename is None or Path(exc.filename) != Path(target):  # ./out.csv and out.csv alike
            raise
        raise ValueError(f"--output {target} exists; pass --force to overwrite it") from None
    except BaseException:  # a full disk, Ctrl-C: the temporary file is removed, OUT left as it was
        if writer is not None and writer.pending is not None:
            say(
                f"edprf predict: stopped before {target} was complete: nothing written there (the temporary file removed)"
            )
        raise
    total = sum(counts.values())
    shown = ", ".join(f"{counts.get(s, 0)} {s}" for s in ("ok", "clipped", "refused", "malformed"))
    decision = (
        f"; decision: {forest.schema.classes[positive]!r} when its probability >= {args.threshold:g}"
        if positive is not None
        else ""
    )
    pooled = f"; pooling {args.pooling}" if args.pooling != "log-linear" else ""
    say(f"predicted {count_text(total, 'row')} ({shown}){decision}{pooled}; written to {target}")
    from ._clipped_columns import clipped_lines

    for line in clipped_lines(diagnostics.clipping.columns(), forest.schema, "predict")[0]:
        say(f"  {line}")
    if low_support:
        say(f"  {low_support_text(low_support)}")
        if withhold:
            columns = "predicted and decision columns" if positive is not None else "predicted column"
            say(
                f"  --low-support withhold: {count_text(low_support, 'row')} of low support withheld: their {columns} "
                "left empty (probabilities kept for reference), since their probability is no risk estimate"
            )
    for hint in diagnostics.hints():
        say(f"  {hint}")
    clipped_status = clipping_status(diagnostics, args.allow_clipped, "predict")
    if total == 0:
        written = "the CSV written to stdout holds" if target == "-" else f"{target} holds"
        say(f"edprf predict: {no_rows_text(args.data, args.no_header)}; {written} the header only")
        return 1
    if diagnostics.not_scored == total:
        say(
            f"edprf predict: {args.data}: no row could be scored; most common reason: "
            f"{diagnostics.most_common_reason()}; each row's reason is in the detail column of {target}"
        )
        return 1
    dp = "" if forest.dp else " (the model itself is NOT differentially private: see its guarantee, `edprf inspect`)"
    say(f"privacy: predicting is post-processing of the parties' releases; it spends no epsilon{dp}")
    return clipped_status
