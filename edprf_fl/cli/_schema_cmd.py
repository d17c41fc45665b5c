"""``edprf schema draft|check``: start a schema from data, and see what a schema does to data.

``draft`` reads the data (so its bounds, categories and classes are data: the
file it writes says so, is marked ``drafted = true``, and every model trained
on it reports NOT differentially private until people replace them with
public knowledge and remove the mark).  ``check`` reads a file with exactly the
rules a party applies and reports, before any training, what they will do:
lines left out, rows dropped per rule, missing values and what happens to them,
values clipped per column.  Both are local: nothing is sent anywhere.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

from ._arg_types import SEP_TAB_HELP as _TAB
from ._arg_types import separator
from ._model_args import add_force_argument, refuse_existing_outputs, refuse_foreign_format, say
from ._owner_only import open_owner_only

if TYPE_CHECKING:
    from edprf_core import Schema

__all__ = ["register"]

_DRAFT_HEADER = """\
# DRAFTED FROM DATA by `edprf schema draft`: NOT public knowledge.
# Its bounds are the data's own minimum and maximum and its category and class lists are the
# values that occur: they reveal individual records. Replace every bound and list with public
# knowledge (documentation, domain ranges), write where each came from in `source`, then delete
# the line `drafted = true`. Until then (and while any `source` still says DRAFTED FROM DATA) every
# model trained on it says NOT differentially private.
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "schema",
        help="draft a schema from data, or check what a schema does to a data file",
        description="Draft a schema from a data file, or check what a schema's rules do to a data file; "
        "both are local: nothing is sent anywhere.",
    )
    inner = p.add_subparsers(dest="schema_command", metavar="ACTION", required=True)
    from ._exit_text import exit_epilog

    draft = inner.add_parser(
        "draft",
        epilog=exit_epilog("0 drafted; 1 an error (the data cannot be read, --output exists without --force)"),
        help="write a starting schema from a data file (NOT private: read the warning)",
        description="Write a starting schema from a data file: its bounds, categories and classes are the data's "
        "own (NOT public knowledge, marked drafted = true) until you replace them.",
    )
    draft.add_argument("data", help="the data file (CSV)")
    draft.add_argument("--label", required=True, help="the label column")
    draft.add_argument("--output", "-o", default=None, help="where to write the schema TOML (default: print it)")
    add_force_argument(draft, "overwrite --output if it exists")
    draft.add_argument(
        "--names",
        default=None,
        metavar="NAME,...",
        help="the file has no header line: its columns' names, in order, comma-separated (the label last)",
    )
    _format_options(draft, header_help="the file has no header line (as for the other commands): needs --names")
    draft.set_defaults(handler=run_draft)
    check = inner.add_parser(
        "check",
        help="report what a schema's rules do to a data file, before training",
        description="Report what a schema's rules do to a data file, as a party applies them: lines left out, "
        "rows dropped per rule, missing and clipped values, and the likely causes (bytes that are not UTF-8, "
        "decimal commas). Give the schema first, then the data.",
        epilog="exit status: 0 when at least one row satisfies the schema's rules (some may be dropped: the report "
        "counts them); 1 when none does, or the schema or the data file cannot be read (with --json, the object "
        "says which: docs/reference/schema-check-json.md).",
    )
    check.add_argument("schema", metavar="SCHEMA", help="the schema TOML (first)")
    check.add_argument("data", metavar="DATA", help="the data file (CSV), after the schema")
    check.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object instead of the report (edprf-schema-check/1: rows read and kept, rows dropped "
        "per column and rule, missing and clipped values, findings; docs/reference/schema-check-json.md); an error "
        "is one object too, with its exit status",
    )
    _format_options(check)
    check.set_defaults(handler=run_check)


def _format_options(
    p: argparse.ArgumentParser,
    header_help: str = "the file has no header line (columns: the schema's features in order, then the label)",
) -> None:
    p.add_argument(
        "--sep", type=separator, default=",", help=f"field separator, one character{_TAB} (default: %(default)r)"
    )
    p.add_argument("--no-header", action="store_true", help=header_help)


def run_draft(args: argparse.Namespace) -> int:
    from edprf_core import PrivacyLeakWarning, draft_schema
    from edprf_core.count_text import count_text
    from edprf_core.tables import PARQUET_SUFFIXES, closest_name, separator_hint
    from edprf_fl.simulation import file_text, stage

    path = Path(args.data)
    if len(args.sep) != 1:  # as every command that reads a data file
        raise ValueError(f"--sep: expected one character, got {args.sep!r}")
    if args.no_header and args.names is None:  # a draft names its columns from the header line or --names
        raise ValueError(
            "--no-header needs --names NAME,...: a file without a header line does not name its columns "
            "(the label last)"
        )
    if not path.is_file():
        raise ValueError(f"{path}: no such data file")
    refuse_foreign_format(path)
    names = _names(args.names, path, args.sep)
    if names and names[-1] != args.label:  # the schema drafted would read its own file shifted
        raise ValueError(
            f"--label {args.label!r} is not the last of --names: every command reads a file without a header as the "
            "schema's features in order, then the label; add a header line to the file"
        )
    parquet = path.suffix.lower() in PARQUET_SUFFIXES
    if parquet and (names or args.no_header):
        raise ValueError(f"{path}: a Parquet file names its columns itself: drop --names and --no-header")
    if names is None and not parquet:
        _check_header_line(_first_line(path), args.sep)
    with stage(say, f"reading {file_text(path)} ...", "      read"):
        frame, tokens, marks = _read_for_draft(path, args.sep, names, parquet, say)
    if not len(frame) and marks["dropped"]:  # every line left out: most often another separator
        raise ValueError(
            f"{path}: no line reads as a row of its {count_text(len(frame.columns), 'column')} "
            f"({'; '.join(marks['dropped'][:3])}{'; ...' if len(marks['dropped']) > 3 else ''})"
            f"{separator_hint(_first_line(path), args.sep)}"
        )
    if args.label not in frame.columns:
        first = _first_line(path)
        close = closest_name(args.label, [str(c) for c in frame.columns])
        hint = (
            (f" (did you mean {close!r}?)" if close is not None else "")
            or separator_hint(first, args.sep)
            or (_NO_HEADER_HINT if names is None and _numbers(first, args.sep) else "")
        )
        raise ValueError(f"--label {args.label!r}: no such column; the file has {list(frame.columns)}{hint}")
    with stage(say, f"drafting the schema from {count_text(len(frame), 'row')} ...", "      drafted"):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", PrivacyLeakWarning)
            schema = draft_schema(frame, args.label, name=path.stem, missing_values=tokens)
        identifiers = _identifier_columns(frame, args.label)
    for w in caught:
        print(f"warning: {w.message}", file=sys.stderr)
    for line in _draft_notes(frame, schema, marks):
        print(f"warning: {line}", file=sys.stderr)
    for column in identifiers:
        print(
            f"warning: column {column!r} holds a different value on every row: an identifier (account or record "
            "number)? An identifier is no feature: move it from [[features]] to ignored_columns",
            file=sys.stderr,
        )
    text = _DRAFT_HEADER + schema.to_toml()
    if args.output is None:
        sys.stdout.write(text)
        return 0
    out = Path(args.output)
    refuse_existing_outputs([(f"--output {out}", out)], args.force)
    with open_owner_only(out) as handle:  # the draft's lists are the rows' own values (an identifier: every one)
        handle.write(text)
    print(
        f"wrote {out} (readable by you only: its lists are the data's values): a DRAFT (drafted = true); replace "
        "its bounds and lists with public knowledge",
        file=sys.stderr,
    )
    return 0


_MISSING_WORDS = ("", "?", "NA", "N/A", "n/a", "na", "NULL", "null", "NaN", "nan", "None", "#N/A", "<NA>")
"""Cell texts (once stripped) that :func:`_read_for_draft` drafts as missing values wherever the file holds them."""

_MISSING_DASHES = ("-", "--", ".")
"""Marks drafted as missing only where a column is otherwise numbers (a gap); elsewhere they may be values (an
Rh factor's ``-``: rev-s57 S3-10)."""


def _read_for_draft(path: Path, sep: str, names: list[str] | None, parquet: bool, progress=None):
    """The file as the draft reads it, and the missing-value marks it holds (for the schema's ``missing_values``).

    As the party will read it under the drafted schema (rev-data S2-2: the draft read it with pandas' guesses,
    and its schema then dropped 8 % of its own file): its rows are the rows the party's reader keeps
    (:func:`edprf_core.tables.read_named_columns`: a line longer than ``MAX_LINE_CHARS``, with an unbalanced quote
    or another number of fields is left out and noted, never drafted; scale review F6); a mark of
    :data:`_MISSING_WORDS` that some cell holds is a missing value and is written into ``missing_values``, so the
    party reads it as missing too (a dash or a dot only where a column is otherwise numbers); column names and
    text cells are stripped of surrounding whitespace (the party's ``strip_whitespace``), so ``"female "`` is
    ``"female"``.  A column is numbers where every cell that is not missing is one (Parquet: the file's types).
    Each column is typed in one vectorized pass (:mod:`._draft_columns`); ``progress`` hears a count of the
    columns typed every few seconds.

    Returns
    -------
    frame : DataFrame
        The rows (rows of missing cells alone dropped), numbers as int64/float64, text as Arrow-held strings.
    tokens : tuple of str
        The schema's ``missing_values``.
    marks : dict
        ``missing`` (each mark taken, and its columns), ``conflicts`` (marks that are gaps in some columns and
        values in others) and ``dropped`` (the reader's notes on the lines it left out: numbers, never content).
    """
    import numpy as np
    import pandas as pd

    from edprf_core.schema import DEFAULT_MISSING_VALUES
    from edprf_fl.simulation import Throttle

    from ._draft_columns import column_cells, typed_column

    if parquet:
        frame, texts, dropped = _parquet_for_draft(path)
    else:
        texts, dropped = _text_for_draft(path, sep, names)
        frame = None
    order = (*_MISSING_WORDS, *_MISSING_DASHES)
    throttle = Throttle(progress or (lambda _: None))
    cells = {}
    for k, name in enumerate(list(texts)):
        cells[name] = column_cells(texts.pop(name), order)  # the text of a column of numbers is let go
        throttle.tick(lambda k=k: f"      typed {k + 1} of {len(cells) + len(texts)} columns")
    if not parquet:
        _refuse_replacement_characters(path, cells)
    where: dict[str, list[str]] = {}  # each mark taken as missing, and the columns that hold it
    as_values: dict[str, list[str]] = {}  # each dash held as a value, by a column that is not numbers
    for column, read in cells.items():
        for mark in order:
            if mark in read.marks:
                taken = mark in _MISSING_WORDS or read.numeric(_MOSTLY_NUMBERS)
                (where if taken else as_values).setdefault(mark, []).append(column)
    # missing_values holds for every column: a dash that is a value somewhere (an Rh factor) stays a value
    # everywhere, and the draft says where it also marks gaps (rev-s57b N2)
    conflicts = {mark: (where.pop(mark), columns) for mark, columns in as_values.items() if mark in where}
    tokens = tuple(m for m in order if m in where or m in DEFAULT_MISSING_VALUES)
    typed = {column: typed_column(cells.pop(column), tokens) for column in list(cells)}  # TRUE/true: text (N1)
    if frame is None:  # the columns as they are (no copy into one block: a copy of the file's numbers)
        frame = pd.DataFrame(typed, copy=False) if typed else pd.DataFrame()
    else:
        for column, values in typed.items():
            frame[column] = values.set_axis(frame.index)
    marks = {"missing": where, "conflicts": conflicts, "dropped": dropped}
    # a line of separators alone (a spreadsheet's trailing ';;;;' rows) is no record: it would draft every column
    # with missing = "separate" (rev-data S3-14); the party drops it for its missing label
    empty = np.logical_and.reduce([frame[c].isna().to_numpy() for c in frame.columns]) if len(frame.columns) else []
    if np.any(empty):
        frame = frame.loc[~empty].reset_index(drop=True)
    return frame, tokens, marks


def _text_for_draft(path: Path, sep: str, names: list[str] | None) -> tuple[dict, list[str]]:
    """A CSV's columns as Arrow text by the party's per-record rules, and the reader's notes on dropped lines."""
    from edprf_core.tables import read_named_columns

    read = read_named_columns(path, names, sep=sep, large=False)
    return dict(read.columns), read.dropped


def _parquet_for_draft(path: Path):
    """A Parquet file as pandas reads it (its own types), its text columns as Arrow text (to be typed), and no
    dropped line."""
    import pandas as pd
    import pyarrow as pa

    frame = pd.read_parquet(path)
    frame.columns = [str(c).strip() for c in frame.columns]  # as the party reads the header (rev-s57 S3-9)
    if len(set(frame.columns)) != len(frame.columns):  # a Parquet file's ' age' and 'age' (a CSV's: refused)
        twice = sorted({c for c in frame.columns if list(frame.columns).count(c) > 1})
        raise ValueError(f"{path}: names {', '.join(map(repr, twice))} more than once (spaces aside)")
    texts = {
        column: pa.array(frame[column].astype("string").to_numpy(dtype=object, na_value=None), type=pa.large_string())
        for column in frame.columns
        if frame[column].dtype == object or isinstance(frame[column].dtype, pd.StringDtype)
    }
    return frame, texts, []


def _refuse_replacement_characters(path: Path, cells: dict) -> None:
    """Refuse a file that is not UTF-8 (as the draft always did: its cells would be drafted with U+FFFD), naming
    its first such line; looked for only where a name or a text cell holds U+FFFD, which the reader puts for
    each byte that is not UTF-8 (a file that truly holds U+FFFD is read on)."""
    import pyarrow.compute as pc

    from edprf_core.tables import not_utf8_text

    held = any("\ufffd" in name for name in cells) or any(
        read.text is not None and pc.any(pc.match_substring(read.text, "\ufffd")).as_py() for read in cells.values()
    )
    if held and (text := not_utf8_text(path)):
        raise ValueError(text)


_MOSTLY_NUMBERS = 0.5
"""A text column whose share of number cells reaches this is named: a few stray cells may make it text."""

_MANY_CATEGORIES = 50
"""A text column with more distinct values than this is named: a list that long reveals records."""


def _draft_notes(frame, schema: Schema, marks: dict[str, dict]) -> list[str]:
    """What the analyst should look at in the draft (printed on her terminal only): the missing-value marks it
    took, and the dashes it did not take because they are values elsewhere; numbers that are no finite number
    (``inf``); text columns that are mostly numbers (and why), text columns with very many values."""
    import numpy as np
    import pandas as pd

    from edprf_core import CategoricalFeature
    from edprf_core.count_text import count_text
    from edprf_core.schema import DEFAULT_MISSING_VALUES
    from edprf_core.tables import decimal_comma_cells

    from ._draft_columns import cell_text, number_cells, share_text

    notes = []
    order = [*_MISSING_WORDS, *_MISSING_DASHES]
    missing, conflicts = marks["missing"], marks["conflicts"]
    taken = {m: missing[m] for m in sorted(missing, key=order.index) if m not in DEFAULT_MISSING_VALUES}
    if taken:
        held = "; ".join(
            f"{mark!r} in {', '.join(repr(c) for c in columns[:3])}{' and more' if len(columns) > 3 else ''}"
            for mark, columns in taken.items()
        )
        notes.append(
            f"the draft reads {', '.join(repr(m) for m in taken)} as missing values (missing_values; {held}): "
            "check that each means missing in every column"
        )
    if dropped := marks.get("dropped"):
        shown = "; ".join(dropped[:3]) + ("; ..." if len(dropped) > 3 else "")  # numbers and reasons, no content
        them = "it" if len(dropped) == 1 else "them"
        notes.append(
            f"{count_text(len(dropped), 'line')} of the file {_is(len(dropped))} left out, as a party leaves {them} "
            f"out ({shown}): the draft does not read {them}"
        )
    for mark, (gaps, kept) in conflicts.items():
        notes.append(
            f"{mark!r} marks gaps in {', '.join(map(repr, gaps[:3]))} but is a value in {', '.join(map(repr, kept[:3]))}: "
            "missing_values holds for every column, so the draft keeps it a value and the rows with it in a column "
            "of numbers are dropped; write those gaps otherwise (an empty cell) or list it in missing_values"
        )
    for column in frame.columns:
        values = frame[column]
        if pd.api.types.is_float_dtype(values) and (bad := int(np.isinf(values.to_numpy()).sum())):
            notes.append(
                f"column {column!r}: {count_text(bad, 'cell')} {'holds' if bad == 1 else 'hold'} an infinite number "
                f"(inf): no number to a party, {'its row is' if bad == 1 else 'their rows are'} dropped; the draft's "
                "bounds leave them out"
            )
    for feature in schema.features:
        if not isinstance(feature, CategoricalFeature) or not all(isinstance(c, str) for c in feature.categories):
            continue
        cells = frame[feature.name].dropna()
        numbers = number_cells(cells)  # as the draft typed them (pandas' reading, vectorized)
        if len(cells) and numbers.mean() >= _MOSTLY_NUMBERS and not numbers.all():
            others = cells[~numbers]
            commas = int(decimal_comma_cells(others.to_numpy(dtype=object)).sum())
            why = (
                f"{count_text(commas, 'cell')} written with a decimal comma: convert them to '.'"
                if commas
                else f"e.g. {', '.join(cell_text(c) for c in others.unique()[:3])}: fix them, or add missing-value "
                "marks to missing_values"
            )
            notes.append(
                f"column {feature.name!r} is drafted as text categories, although "
                f"{share_text(int(numbers.sum()), len(cells))} of its cells are numbers: "
                f"{count_text(len(others), 'cell')} {_is(len(others))} not ({why}), then draft again"
            )
        elif len(feature.categories) > _MANY_CATEGORIES:
            notes.append(
                f"column {feature.name!r} is drafted with {len(feature.categories)} text categories: a list that "
                "long reveals records and splits the data thin; group them publicly, or move the column to "
                "ignored_columns (a date or a postcode is rarely a feature as written)"
            )
    return notes


def _is(n: int) -> str:
    """The verb for ``n`` things: "1 cell is", "2 cells are"."""
    return "is" if n == 1 else "are"


_IDENTIFIER_ROWS = 100
"""From this many rows with a value on, a column whose every value differs is named as a likely identifier."""


def _identifier_columns(frame, label: str) -> list[str]:
    """The columns (not the label) whose values, none missing, all differ over at least :data:`_IDENTIFIER_ROWS`
    rows, as text or whole numbers (a measurement with decimals can differ on every row too)."""
    import pandas as pd

    out = []
    for column in frame.columns:
        values = frame[column]
        if column == label or len(values) < _IDENTIFIER_ROWS or values.isna().any() or not values.is_unique:
            continue
        if pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_integer_dtype(values):
            continue
        out.append(str(column))
    return out


_NO_HEADER_HINT = (
    " (the first line holds numbers, not names: if the file has no header line, name its columns with --names NAME,...)"
)


def _check_header_line(first: str, sep: str) -> None:
    """Refuse a first line that names a column twice (pandas would draft ``x`` and ``x.1``, names no file has);
    warn on stderr when some of its names are numbers (a data line read as the header)."""
    import csv

    from edprf_core.count_text import count_text

    from ._draft_columns import cell_text

    cells = next(csv.reader([first], delimiter=sep), [])
    names = [c.strip() for c in cells]  # as the party reads them (rev-s57b N5: 'age,age ' names age twice)
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ValueError(
            f"the first line names {', '.join(repr(n) for n in twice)} more than once: column names must be "
            "distinct; if the file has no header line, name its columns with --names NAME,..."
        )
    numeric = [n for n in names if _numbers(n, sep) and n not in ("", "?")]
    if numeric:
        print(
            f"warning: the first line is read as the header, and {len(numeric)} of its {count_text(len(names), 'name')} are "
            f"numbers ({', '.join(cell_text(n) for n in numeric[:3])}{', ...' if len(numeric) > 3 else ''}): if it is "
            "a data line, name the columns with --names NAME,...",
            file=sys.stderr,
        )


def _first_line(path: Path) -> str:
    """The file's first line, without its line break (undecodable bytes replaced)."""
    with path.open(encoding="utf-8", errors="replace") as fh:
        return fh.readline().rstrip("\r\n")


def _numbers(line: str, sep: str) -> bool:
    """Whether every field of ``line`` is a number or a missing-value mark (a data line, not a header)."""

    def number(cell: str) -> bool:
        try:
            float(cell)
        except ValueError:
            return cell.strip() in ("", "?")
        return True

    return all(number(cell) for cell in line.split(sep))


def _names(given: str | None, path: Path, sep: str) -> list[str] | None:
    """The columns ``--names`` gives, checked against the number of fields on the file's first line."""
    if given is None:
        return None
    names = [n.strip() for n in given.split(",")]
    if not all(names) or len(set(names)) != len(names):
        raise ValueError(f"--names {given!r}: expected distinct, non-empty names separated by commas")
    fields = len(_first_line(path).split(sep))
    if fields != len(names):
        raise ValueError(f"--names gives {len(names)} names; the first line of {path} holds {fields} fields")
    return names


_CHECK_USAGE = "edprf schema check SCHEMA DATA"
_DATA_SUFFIXES = (".csv", ".data", ".parquet", ".pq", ".gz", ".tsv")
"""Suffixes of data files: a schema path ending so is most likely DATA given first."""


def _swapped(schema: Path, data: Path) -> bool:
    """Whether ``schema`` (which did not load) and ``data`` look given in the wrong order: the schema's path
    ends as a data file's does, or the data file is a TOML table."""
    import tomllib

    if schema.name.lower().endswith(_DATA_SUFFIXES):
        return True
    try:
        if data.stat().st_size > 1 << 20:  # a schema is small; a large file is data
            return False
        return bool(tomllib.loads(data.read_text(encoding="utf-8")))  # an empty file parses as an empty table
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return False


def _load_schema(schema: str, data: str) -> Schema:
    """The schema SCHEMA; its error says when SCHEMA and DATA look swapped."""
    from edprf_core import SchemaError, load_schema

    try:
        return load_schema(schema)
    except SchemaError as exc:
        if Path(schema).is_file() and _swapped(Path(schema), Path(data)):
            raise SchemaError(f"{exc} (arguments in the wrong order? usage: {_CHECK_USAGE})") from None
        raise


def run_check(args: argparse.Namespace) -> int:
    """``edprf schema check``: the report as text, or with ``--json`` as one object (an error too, then raised on
    for the entry point's line on stderr and its exit status)."""
    if not args.json:
        return _check(args)
    from ._exit_text import error_text
    from ._output_streams import stdout_pipe_closed
    from ._schema_check_json import error_json

    try:
        return _check(args)
    except (ValueError, OSError) as exc:
        if not stdout_pipe_closed(exc):
            print(error_json(error_text(exc), 1))
        raise


def _check(args: argparse.Namespace) -> int:
    from edprf_core import check_data
    from edprf_fl.simulation import file_text, stage

    schema = _load_schema(args.schema, args.data)
    refuse_foreign_format(Path(args.data))
    with stage(say, f"checking {file_text(args.data)} under the schema's rules ...", "      checked"):
        report = check_data(args.data, schema, sep=args.sep, header=not args.no_header, progress=say)
    status = 0 if report.rows_kept else 1
    if args.json:
        from ._schema_check_json import check_json

        print(check_json(args.schema, args.data, schema, report, status))
        if status:
            print(f"no row of {args.data} satisfies the schema's rules (exit status 1)", file=sys.stderr)
        return status
    print(f"{args.data} under {args.schema}:")
    print(
        f"  schema fingerprint: {schema.fingerprint}   (a party's policy: schema-fingerprint = this value; "
        "`edprf party init-policy` writes it)"
    )
    for line in report.lines():
        print(f"  {line}")
    for level, text in report.findings():
        print(f"  {'warning (a problem for `edprf party check`)' if level == 'problem' else level}: {text}")
    if schema.is_draft:
        print(f"  schema: DRAFTED FROM DATA ({schema.draft_note}): models trained on it are NOT differentially private")
    if report.rows_kept == 0:
        print(
            f"no row of {args.data} satisfies the schema's rules (exit status 1): check the separator, the header, "
            "the column names, the units and the number format (the lines above count each rule's drops)",
            file=sys.stderr,
        )
        return 1
    return 0
