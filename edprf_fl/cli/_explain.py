"""``edprf explain MODEL DATA --row N``: why the global model gives one of your rows its probabilities.

For every tree: the leaf the row reaches, the leaf's rule, its released noisy
counts (or label), and its contribution to the pooled probability.  Reads the
model file and one row of DATA, the caller's own file; nothing else, and no
party's data (post-processing of the released model: no epsilon is spent).
"""

from __future__ import annotations

import argparse
from pathlib import Path

__all__ = ["load_forest", "read_row", "register", "run_explain"]

DEFAULT_SHOWN_TREES = 10


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``explain`` subcommand."""
    parser = subparsers.add_parser(
        "explain",
        help="explain the global model's prediction for one row of your data",
        description=__doc__.splitlines()[0],
    )
    parser.add_argument("model", type=Path, metavar="MODEL", help="a GlobalModel file (global-model.edprf)")
    parser.add_argument("data", type=Path, metavar="DATA", help="your CSV (optionally .gz) or Parquet file")
    parser.add_argument(
        "--row",
        type=int,
        required=True,
        metavar="N",
        help="the row to explain, numbered from 0 (the first row after the header)",
    )
    parser.add_argument("--sep", default=",", help="field separator of DATA (default ',')")
    parser.add_argument(
        "--no-header",
        action="store_true",
        help="DATA has no header: the schema's features in order, optionally then the label",
    )
    parser.add_argument(
        "--pooling",
        choices=("log-linear", "mean"),
        default="log-linear",
        help="pooling rule, as in predict_proba (default log-linear)",
    )
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
    """The merged forest of a global model file (signatures verified when ``keys`` is given)."""
    import protocol

    registry = protocol.PartyKeyRegistry.from_directory(keys) if keys else None
    try:
        return protocol.load_global_model(path, registry=registry).forest
    except protocol.InvalidRelease as exc:
        raise ValueError(f"{path}: not a valid global model: {exc}") from None


def read_row(path: Path, schema, row: int, *, sep: str = ",", header: bool = True):
    """Row ``row`` (from 0) of the caller's file as a one-row DataFrame of text cells, feature columns only."""
    import pandas as pd

    if row < 0:
        raise ValueError(f"--row: expected a row number >= 0, got {row}")
    if path.suffix.lower() in (".parquet", ".pq"):
        frame = pd.read_parquet(path).iloc[row : row + 1]
    else:
        skip = range(1, row + 1) if header else range(row)
        frame = pd.read_csv(
            path,
            sep=sep,
            header=0 if header else None,
            dtype=str,
            keep_default_na=False,
            skiprows=skip,
            nrows=1,
            compression="infer",
        )
        if not header:
            names = list(schema.feature_names)
            if frame.shape[1] == len(names) + 1:
                names.append(schema.label.column)
            if frame.shape[1] != len(names):
                raise ValueError(
                    f"{path}: expected {len(schema.feature_names)} columns (the schema's features, "
                    f"optionally then the label) without a header, got {frame.shape[1]}"
                )
            frame.columns = names
    if frame.empty:
        raise ValueError(f"{path}: no row {row} (rows are numbered from 0 after the header)")
    frame.columns = [str(c).strip() for c in frame.columns]
    missing = [n for n in schema.feature_names if n not in frame.columns]
    if missing:
        raise ValueError(f"{path}: missing columns {missing}; the model's schema declares {list(schema.feature_names)}")
    return frame[list(schema.feature_names)].reset_index(drop=True)


def run_explain(args: argparse.Namespace) -> int:
    """Handler of ``edprf explain``; returns the exit status."""
    from edprf_core import explain_row

    forest = load_forest(args.model, args.keys)
    row = read_row(args.data, forest.schema, args.row, sep=args.sep, header=not args.no_header)
    explanation = explain_row(forest, row, pooling=args.pooling)
    print(f"model: {args.model} ({forest.n_trees} trees); row {args.row} of {args.data}")
    print("\n".join(explanation.lines(max(1, args.show_trees))))
    return 0
