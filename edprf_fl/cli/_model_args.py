"""What ``edprf predict`` and ``edprf evaluate`` share: the model and data arguments, loading, provenance.

Nothing here imports Flower: using a model needs only the slim install.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ._arg_types import CLI_POOLINGS, add_decimal_argument, probability, separator
from ._arg_types import SEP_TAB_HELP as _TAB

if TYPE_CHECKING:
    from edprf_core import DPForest, Schema
    from edprf_core.tables import RowChunk
    from protocol import ModelProvenance

__all__ = [
    "CLIPPED_EXIT_SHARE",
    "EXIT_CLIPPED",
    "EXIT_SIGNATURE",
    "add_force_argument",
    "add_model_arguments",
    "add_pooling_argument",
    "check_output_directory",
    "check_output_extension",
    "clipping_status",
    "describe",
    "described_when_read",
    "empty_model_text",
    "load_model",
    "no_rows_text",
    "positive_index",
    "prepare",
    "refuse_existing_outputs",
    "refuse_foreign_format",
    "say",
    "scoring_text",
    "undeclared_text",
]

EXIT_SIGNATURE = 3
"""Exit status when a signature does not verify (as ``edprf inspect``)."""

EXIT_CLIPPED = 4
"""Exit status of ``predict`` and ``evaluate`` when a column of DATA is clipped to its bounds, or holds values its
categorical feature does not declare (read as the schema's ``unknown`` category), in at least
:data:`CLIPPED_EXIT_SHARE` of its rows and ``--allow-clipped`` was not given (OUT and the report are still
written).  Not 2, which argparse gives a wrong option, nor 3, a signature that does not verify."""

CLIPPED_EXIT_SHARE = 0.2
"""Share of a continuous column's values outside its declared bounds, or of a categorical column's values that are
no declared category (read as its ``unknown`` category), from which ``predict`` and ``evaluate`` exit with
:data:`EXIT_CLIPPED` (for numbers, the share from which the Python API's units warning may fire)."""


def add_model_arguments(parser: argparse.ArgumentParser) -> None:
    """MODEL, DATA and the data-format and decision options."""
    parser.add_argument("model", type=Path, metavar="MODEL", help="a global model (global-model.edprf)")
    parser.add_argument(
        "data", type=Path, metavar="DATA", help="CSV (optionally .gz) or Parquet file with the schema's feature columns"
    )
    parser.add_argument(
        "--keys",
        type=Path,
        metavar="DIR",
        default=None,
        help="directory of the parties' <party_id>.pub.pem keys: refuse the model unless every "
        "release's signature verifies",
    )
    parser.add_argument(
        "--sep",
        type=separator,
        default=",",
        help=f"field separator of DATA, one character{_TAB} (default: %(default)r)",
    )
    add_decimal_argument(parser)
    parser.add_argument(
        "--no-header",
        action="store_true",
        help="DATA has no header line: its columns are the schema's features in order, then "
        "(optionally for predict) the label",
    )
    parser.add_argument(
        "--positive-class",
        default=None,
        metavar="C",
        help="the class a binary decision flags (one of the schema's declared classes)",
    )
    parser.add_argument(
        "--threshold",
        type=probability,
        default=None,
        metavar="T",
        help="flag a row when its probability of --positive-class is at least T, a number in [0, 1] "
        "(default 0.5 with --positive-class)",
    )
    add_pooling_argument(parser)
    parser.add_argument(
        "--allow-clipped",
        action="store_true",
        help=f"do not exit {EXIT_CLIPPED} when a continuous column of DATA lies outside its declared bounds in "
        f"{CLIPPED_EXIT_SHARE * 100:.0f}%% or more of its rows (clipped to the bound: every such prediction is made from the "
        f"bound, usually data in other units than the schema, e.g. glucose in mmol/L against mg/dL), or a "
        f"categorical column holds values the schema does not declare in as many of its rows (read as the "
        f"feature's unknown category, e.g. 'F'/'M' against 'Female'/'Male' read as 'Other': another coding); "
        f"without it the command still writes its results and then exits {EXIT_CLIPPED}",
    )


def clipping_status(diagnostics, allow_clipped: bool, command: str) -> int:
    """Say the units warning of the rows read (the Python API's :class:`DomainClippingWarning` text), the warning of
    a unit error in part of a column (:func:`._clipped_columns.clipped_lines`), the categorical
    columns whose undeclared values were read as the schema's ``unknown`` category (:func:`undeclared_text`), and
    any column clipped, or read that way, in at least :data:`CLIPPED_EXIT_SHARE` of its rows; the exit status:
    :data:`EXIT_CLIPPED` for such a column unless ``allow_clipped``, else 0.  ``diagnostics``: the command's
    ``RowDiagnostics``."""
    from edprf_core.prediction import clipping_message

    from ._clipped_columns import clipped_lines

    columns = diagnostics.clipping.columns()
    message = clipping_message(columns)
    if message:
        say(f"edprf {command}: warning: {message}")
    for warning in clipped_lines(columns, diagnostics.schema, command)[1]:  # a unit error in part of a column
        say(warning)
    undeclared = diagnostics.clipping.undeclared()
    for name, column in undeclared.items():
        say(f"edprf {command}: warning: {undeclared_text(name, column)}")
    heavy = {name: c for name, c in columns.items() if c.share >= CLIPPED_EXIT_SHARE}
    recoded = {name: c for name, c in undeclared.items() if c.share >= CLIPPED_EXIT_SHARE}
    if not heavy and not recoded:
        return 0
    said = []
    if heavy:
        shown = ", ".join(f"{name!r} in {c.share:.0%} of its rows" for name, c in sorted(heavy.items()))
        said.append((f"values clipped to the schema's bounds: {shown}", "the bound", "units"))
    if recoded:
        shown = ", ".join(f"{name!r} in {c.share:.0%} of its rows" for name, c in sorted(recoded.items()))
        said.append((f"undeclared values read as the schema's unknown category: {shown}", "that category", "coding"))
    if allow_clipped:
        for what, _, _ in said:
            say(f"edprf {command}: {what} (accepted: --allow-clipped)")
        return 0
    for what, made_from, check in said:
        say(
            f"edprf {command}: {what}; those predictions are made from {made_from}, not the value: check the "
            f"column's {check} against the schema, or pass --allow-clipped to accept them (exit status {EXIT_CLIPPED})"
        )
    return EXIT_CLIPPED


def undeclared_text(name: str, column) -> str:
    """``column 'gender': 48 of 100 rows (48%) hold values the schema does not declare, read as 'Other' (another
    coding? e.g. 'F')``: a categorical column's values read by its ``unknown`` rule (``column``: an
    ``UndeclaredColumn`` of the run's ``ClippingTally``; its rows are those holding a value, not missing)."""
    share = "<1%" if column.share < 0.005 else f"{column.share:.0%}"  # never "0%" for a value that is there
    return (
        f"column {name!r}: {column.count} of {column.rows} rows ({share}) hold values the schema does not "
        f"declare, read as {column.category!r} (another coding? e.g. {column.example!r})"
    )


def add_pooling_argument(parser: argparse.ArgumentParser, what: str = "the probabilities") -> None:
    """``--pooling``: how the trees' leaf distributions are pooled, the same choices and default for every command
    that uses a model (predict, evaluate, explain, export), so that their probabilities agree."""
    parser.add_argument(
        "--pooling",
        choices=CLI_POOLINGS,
        default=CLI_POOLINGS[0],
        help=f"pooling rule of {what}, as in predict_proba: 'log-linear' (the model's own, what predict_proba and "
        "load_classifier use) or 'mean' (the plain average of the trees' distributions); predict, evaluate, "
        "explain and export take the same choices and give the same probabilities for the same rule "
        "(default: %(default)s)",
    )


def say(message: str) -> None:
    """Provenance, guarantee and progress: to stderr, never mixed into the results."""
    print(message, file=sys.stderr, flush=True)


def load_model(args: argparse.Namespace) -> tuple[DPForest, ModelProvenance] | int:
    """The model's forest and provenance (nothing printed: :func:`describe` prints the provenance); or an exit
    status after one line.

    Loaded without scikit-learn (``protocol.load_model_with_provenance``): the command starts faster.
    """
    import protocol
    from protocol import load_model_with_provenance

    command = f"edprf {args.command}"
    empty = empty_model_text(args.model)
    if empty:
        say(f"{command}: {empty}")
        return 1
    try:
        view, provenance = load_model_with_provenance(args.model, keys_dir=args.keys)
    except protocol.InvalidRelease as exc:
        signature = exc.reason in (
            protocol.Reason.UNSIGNED,
            protocol.Reason.UNKNOWN_PARTY,
            protocol.Reason.BAD_SIGNATURE,
        )
        say(
            f"{command}: {args.model}: {'signature check failed' if signature else 'not a valid global model'}: "
            f"{_one_line(str(exc))}"
        )
        return EXIT_SIGNATURE if signature else 1
    except FileNotFoundError:
        say(f"{command}: {args.model}: no such file (pass the coordinator's global-model.edprf)")
        return 1
    return view.forest, provenance


def empty_model_text(path: Path) -> str:
    """``"MODEL m.edprf is empty (0 bytes): not an edprf model file"`` for an empty regular file, else ``""``.

    Checked before the model is parsed: parsed, an empty file reads as format version 0, and the loaders said
    "format_version expected 1, got 0", a puzzle where the file is simply empty (a failed copy, a full disk).
    """
    try:
        empty = path.is_file() and path.stat().st_size == 0
    except OSError:  # unreadable: the loader says why
        return ""
    return f"MODEL {path} is empty (0 bytes): not an edprf model file" if empty else ""


def no_rows_text(data: Path, no_header: bool) -> str:
    """``"DATA: no rows to score: the file has a header line but no data line"``: what predict and evaluate say
    (exit status 1) when DATA holds no record at all, as when not one of its rows could be scored."""
    if data.suffix.lower() in (".parquet", ".pq"):
        what = "the Parquet file has its columns but no row"
    elif no_header:
        what = "the file has no data line"
    else:
        what = "the file has a header line but no data line"
    return f"{data}: no rows to score: {what}"


def describe(provenance: ModelProvenance) -> None:
    """The model's provenance and guarantee, once, to stderr."""
    for line in provenance.describe():
        say(line)
    if "invalid" in provenance.signatures:
        say("WARNING: a release's signature fields are malformed (status 'invalid'); pass --keys to refuse it")


def described_when_read(
    chunks: Iterable[RowChunk],
    provenance: ModelProvenance,
    start: str = "",
    clock: Callable[[], float] = time.monotonic,
) -> Iterator[RowChunk]:
    """``chunks``, the model's provenance and guarantee printed (:func:`describe`) once the first has been read.

    An error about DATA (a header of another schema, a wrong ``--sep``), raised when the first chunk is read, is
    then said alone, never under the model's banner; a DATA without a data line prints no banner either (nothing
    is scored: the command says so and exits 1).

    Progress, on stderr: ``start`` after the banner; while the caller works through the chunks, the rows done so
    far at most every :data:`~edprf_fl.simulation._progress.PROGRESS_EVERY` seconds of ``clock``; when they are
    all done, their number and the time taken.
    """
    from edprf_core.count_text import count_text
    from edprf_fl.simulation import Throttle, seconds_text

    throttle, rows = None, 0
    for chunk in chunks:
        if throttle is None:
            describe(provenance)
            if start:
                say(start)
            throttle = Throttle(say, clock=clock)
        yield chunk  # the caller scores it before asking for the next one
        rows += len(chunk.line_numbers)
        throttle.tick(lambda rows=rows: f"      {count_text(rows, 'row')} so far")
    if throttle is not None:
        say(f"      {count_text(rows, 'row')} in {seconds_text(throttle.elapsed())}")


def scoring_text(data: Path, n_trees: int, chunk_rows: int | None = None) -> str:
    """The progress line that starts the scoring of DATA: its path and size, the trees, the rows per chunk."""
    from edprf_core.count_text import count_text
    from edprf_fl.simulation import file_text

    at_a_time = f", {count_text(chunk_rows, 'row')} at a time" if chunk_rows else ""
    return f"scoring the rows of {file_text(data)} with {count_text(n_trees, 'tree')}{at_a_time} ..."


def _one_line(text: str) -> str:
    text = " ".join(text.split())
    return text[:500] + ("..." if len(text) > 500 else "")


def positive_index(schema: Schema, args: argparse.Namespace) -> int | None:
    """Index of ``--positive-class`` among the declared classes (numeric classes compare as numbers).

    ``--threshold`` (read by argparse as a probability) defaults to 0.5 when a positive class is given.
    """
    if args.positive_class is None:
        _refuse_threshold_alone(args)
        return None
    if args.threshold is None:
        args.threshold = 0.5
    classes = list(schema.classes)
    wanted = args.positive_class.strip()
    for i, c in enumerate(classes):
        if isinstance(c, str):
            if c == wanted:
                return i
        else:
            try:
                if float(wanted) == float(c):
                    return i
            except ValueError:
                pass
    raise ValueError(f"--positive-class {args.positive_class!r}: expected one of the declared classes {classes}")


def _refuse_threshold_alone(args: argparse.Namespace) -> None:
    """``--threshold`` applies to the ``--positive-class`` probability: refused without one (before any output)."""
    if args.positive_class is None and args.threshold is not None:
        raise ValueError("--threshold needs --positive-class C: the class whose probability it applies to")


def check_output_directory(flag: str, path: str | Path) -> None:
    """Refuse an output file whose directory does not exist, before the model is loaded or anything printed."""
    directory = Path(path).parent
    if not directory.is_dir():
        raise ValueError(f"{flag} {path}: no such directory {str(directory)!r}")


def check_output_extension(flag: str, path: str | Path, supported: Sequence[str], also: str = "") -> None:
    """Refuse an output file whose name ends in none of ``supported`` (``.xlsx`` silently got CSV), before the
    model is loaded; ``also`` names any other accepted value (``"or '-' for CSV on stdout"``)."""
    name = Path(path).name.lower()
    if any(name.endswith(ext) and len(name) > len(ext) for ext in supported):
        return
    suffix = "".join(Path(name).suffixes[-2:]) or "no extension"
    listed = ", ".join(supported[:-1]) + f" or {supported[-1]}" if len(supported) > 1 else supported[0]
    raise ValueError(
        f"{flag} {path}: expected a file name ending in {listed}{f' ({also})' if also else ''}, got "
        f"{suffix if suffix == 'no extension' else repr(suffix)}"
    )


def add_force_argument(parser: argparse.ArgumentParser, text: str = "overwrite OUT if it exists") -> None:
    """``--force``: replace existing output files (as ``edprf schema draft`` and ``edprf party init-policy``)."""
    parser.add_argument("--force", action="store_true", help=f"{text} (default: refuse)")


def refuse_existing_outputs(
    outputs: Sequence[tuple[str, Path]], force: bool, model: Path | None = None, data: Path | None = None
) -> None:
    """Refuse, before the model is loaded, to replace a file the command would write, unless ``--force``.

    Parameters
    ----------
    outputs : sequence of (str, Path)
        Each file the command writes, with how the message names it (``"--output out.csv"``).
    force : bool
        ``--force``: an existing file is replaced.
    model : Path, optional
        MODEL: never replaced, whatever ``force`` says.
    data : Path, optional
        DATA: never replaced either.

    Raises
    ------
    ValueError
        One line naming the file and ``--force``; or naming MODEL, DATA, or a directory, however ``force`` is set.
    """
    for name, path in outputs:
        for role, given in (("MODEL", model), ("DATA", data)):
            if given is not None and path.resolve() == given.resolve():
                raise ValueError(f"{name}: that is {role} itself; choose another file")
        if path.is_dir():
            raise ValueError(f"{name}: is a directory; expected a file name")
        if os.path.lexists(path) and not force:  # a dangling symlink too: writing would follow it
            raise ValueError(f"{name} exists; pass --force to overwrite it")


def refuse_foreign_format(path: Path) -> None:
    """An Excel workbook or UTF-16 text is named as such (with how to save it), before the header is read."""
    from edprf_core.tables import foreign_format_text

    text = foreign_format_text(path)
    if text:
        raise ValueError(text)


def prepare(args: argparse.Namespace) -> tuple[DPForest, ModelProvenance, int | None] | int:
    """Check the options, load the model and resolve ``--positive-class`` against its classes; nothing printed:
    a wrong option is one line, never after the model's banner, which :func:`described_when_read` prints once
    DATA's first rows are read.

    Returns the forest, its provenance and the positive class's index (None without one), or an exit status.
    """
    if len(args.sep) != 1:
        raise ValueError(f"--sep: expected one character, got {args.sep!r}")
    _refuse_threshold_alone(args)
    if args.keys is not None and not args.keys.is_dir():
        raise ValueError(f"--keys {args.keys}: expected a directory of the parties' <party_id>.pub.pem files")
    if not args.data.is_file():
        raise ValueError(f"DATA {args.data}: no such file")
    refuse_foreign_format(args.data)
    loaded = load_model(args)
    if isinstance(loaded, int):
        return loaded
    forest, provenance = loaded
    positive = positive_index(forest.schema, args)
    return forest, provenance, positive
