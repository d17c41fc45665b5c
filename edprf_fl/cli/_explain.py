"""``edprf explain MODEL DATA --row N``: why the global model gives one of your rows its probabilities.

For every tree: the leaf the row reaches, the leaf's rule, its released noisy
counts (or label), and its contribution to the pooled probability.  Reads the
model file and one row of DATA, the caller's own file; nothing else, and no
party's data (post-processing of the released model: no epsilon is spent).
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ._arg_types import SEP_TAB_HELP as _TAB
from ._arg_types import add_decimal_argument, separator
from ._model_args import add_pooling_argument, say

if TYPE_CHECKING:
    import pandas as pd

    from edprf_fl.simulation import Progress

__all__ = ["FileRow", "load_forest", "read_row", "register", "run_explain"]

DEFAULT_SHOWN_TREES = 10


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``explain`` subcommand."""
    from ._exit_text import exit_epilog

    parser = subparsers.add_parser(
        "explain",
        epilog=exit_epilog(
            "0 explained; 1 an error (not a valid model, no such row); 3 a signature that does not verify with --keys"
        ),
        help="explain the global model's prediction for one row of your data",
        description="Why the global model gives one of your rows its probabilities: for every tree, the leaf the "
        "row reaches, the leaf's rule, its released noisy counts (or label) and its contribution to the pooled "
        "probability.  Post-processing of the released model: no epsilon is spent.",
    )
    parser.add_argument("model", type=Path, metavar="MODEL", help="a GlobalModel file (global-model.edprf)")
    parser.add_argument("data", type=Path, metavar="DATA", help="your CSV (optionally .gz) or Parquet file")
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument(
        "--row",
        type=int,
        metavar="N",
        help="the row to explain, numbered from 0 in the order `edprf predict` writes its rows "
        "(blank lines are not rows)",
    )
    which.add_argument(
        "--line",
        type=int,
        metavar="L",
        help="the row on line L of DATA, the `line` column of `edprf predict`'s output: for a CSV file the file's "
        "line, counting the header as line 1 (the first data row is line 2); for a Parquet file, which has no header "
        "line, the data row's number from 1",
    )
    parser.add_argument("--sep", type=separator, default=",", help=f"field separator of DATA{_TAB} (default ',')")
    add_decimal_argument(parser)
    parser.add_argument(
        "--no-header",
        action="store_true",
        help="DATA has no header: the schema's features in order, optionally then the label",
    )
    add_pooling_argument(parser, "the explained probabilities")
    parser.add_argument(
        "--show-trees",
        type=int,
        default=DEFAULT_SHOWN_TREES,
        metavar="N",
        help=f"trees shown, those weighing most first (default {DEFAULT_SHOWN_TREES})",
    )
    parser.add_argument(
        "--keys",
        type=Path,
        metavar="DIR",
        help="directory of <party_id>.pub.pem files: refuse the model unless every release verifies",
    )
    parser.set_defaults(handler=run_explain)


def load_forest(path: Path, keys: Path | None):
    """The merged forest of a global model file (signatures verified when ``keys`` is given).

    Raises
    ------
    SignatureNotVerified
        With ``keys``: a release unsigned, of a party without a key there, or whose signature does not verify
        (``edprf`` exits 3, as ``predict`` does).
    ValueError
        The file is empty or not a valid global model (exit 1).
    """
    import protocol

    from ._model_args import empty_model_text
    from ._signature_error import SignatureNotVerified

    empty = empty_model_text(path)
    if empty:
        raise ValueError(empty)
    registry = protocol.PartyKeyRegistry.from_directory(keys) if keys else None
    try:
        return protocol.load_global_model(path, registry=registry).forest
    except protocol.InvalidRelease as exc:
        if exc.reason in (protocol.Reason.UNSIGNED, protocol.Reason.UNKNOWN_PARTY, protocol.Reason.BAD_SIGNATURE):
            raise SignatureNotVerified(f"{path}: signature check failed: {exc}") from None
        raise ValueError(f"{path}: not a valid global model: {exc}") from None


@dataclass(frozen=True)
class FileRow:
    """One record of the caller's file, read as ``edprf predict`` reads it."""

    frame: pd.DataFrame
    """The record's feature cells, one row."""
    line: int
    """Its line in the file (Parquet: its row number from 1), as in ``edprf predict``'s ``line`` column."""
    malformed: str
    """Why its line could not be read, or ``""``."""


def read_row(
    path: Path,
    schema,
    *,
    row: int | None = None,
    line: int | None = None,
    sep: str = ",",
    header: bool = True,
    progress: Progress | None = None,
    decimal: str = ".",
) -> FileRow:
    """The record numbered ``row`` (from 0) or on file line ``line`` of the caller's file.

    Read by :func:`edprf_core.tables.stream_rows`, the reader of ``edprf predict`` and ``edprf evaluate``: the
    same lines are records (blank lines are not), numbered alike, with the same cells.  ``progress`` receives,
    at most every :data:`~edprf_fl.simulation.PROGRESS_EVERY` seconds, how many rows have been read so far (a
    row far down a large file): none for a row found sooner.
    """
    import numpy as np

    from edprf_core.count_text import count_text
    from edprf_core.tables import stream_rows
    from edprf_fl.simulation import Throttle, quiet

    throttle = Throttle(progress or quiet)
    wanted = f"row {row}" if row is not None else f"line {line}"

    if (row is None) == (line is None):
        raise ValueError("give exactly one of --row and --line")
    if row is not None and row < 0:
        raise ValueError(f"--row: expected a row number >= 0, got {row}")
    if line is not None and line < 1:
        raise ValueError(f"--line: expected a line number >= 1, got {line}")
    seen = 0
    for chunk in stream_rows(path, schema, sep=sep, header=header, decimal=decimal):
        if line is not None:
            found = np.flatnonzero(chunk.line_numbers == line)
            k = int(found[0]) if found.size else None
        else:
            k = row - seen if row - seen < len(chunk.line_numbers) else None
        if k is not None:
            cells = chunk.frame[list(schema.feature_names)].iloc[k : k + 1].reset_index(drop=True)
            return FileRow(cells, int(chunk.line_numbers[k]), str(chunk.malformed[k]))
        seen += len(chunk.line_numbers)
        throttle.tick(lambda seen=seen: f"      {count_text(seen, 'row')} read so far, looking for {wanted}")
    if line is not None:
        raise ValueError(f"{path}: no row on line {line} (blank lines, the header and lines past the end hold none)")
    raise ValueError(f"{path}: no row {row}: the file has {count_text(seen, 'row')}, numbered from 0")


def run_explain(args: argparse.Namespace) -> int:
    """Handler of ``edprf explain``; returns the exit status."""
    from edprf_core import explain_row
    from edprf_core.count_text import count_text
    from edprf_core.prediction import score_rows

    forest = load_forest(args.model, args.keys)
    found = read_row(
        args.data,
        forest.schema,
        row=args.row,
        line=args.line,
        sep=args.sep,
        header=not args.no_header,
        progress=say,
        decimal=args.decimal,
    )
    where = f"line {found.line} of {args.data}"
    if found.malformed:
        raise ValueError(f"{where} is malformed ({found.malformed}); `edprf predict` scores no such row")
    verdict = score_rows(forest, found.frame, pooling=args.pooling, support=True)
    status, detail = str(verdict.status[0]), str(verdict.detail[0])
    if not verdict.scored[0]:
        raise ValueError(f"{where}: {detail}; `edprf predict` marks it {status!r} and does not score it")
    explanation = explain_row(forest, found.frame, pooling=args.pooling)
    shown = where if args.row is None else f"row {args.row}, {where}"
    print(f"model: {args.model} ({count_text(forest.n_trees, 'tree')}); {shown}")
    print("cells: " + ", ".join(f"{name}={_cell(v)}" for name, v in found.frame.iloc[0].items()))
    if detail:
        print(f"note: {detail} (as `edprf predict` reports it)")
    support = str(verdict.support[0])
    if support.startswith("low"):
        print(
            f"support: {support}: the released counts behind this row ({support[5:]}) are within noise: the model "
            "knows nothing about this row's value there, and the terms those counts add (below) are noise, not "
            "evidence: they can move the probability either way, often toward the rarer class; do not read this "
            "row's probability as a risk"
        )
    print("\n".join(explanation.lines(max(1, args.show_trees))))
    return 0


def _cell(value: object) -> str:
    """A cell as shown on the cells line: missing as '(missing)', long text cut, no control characters."""
    from ._terminal_text import terminal_safe

    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "(missing)"
    return terminal_safe(value, max_chars=24)
