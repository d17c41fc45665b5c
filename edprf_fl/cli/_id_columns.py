"""``--id-column NAME[,NAME]``: columns of DATA copied into ``edprf predict``'s OUT first, unchanged (a patient
identifier, so that OUT can be joined back to the records without the line numbers).

The columns are read by the same reader as the features (:func:`edprf_core.tables.stream_rows`), so each value
sits on its record's row; a malformed line's cells, its identifier included, are not read (empty in OUT; its line
number still names it).  Imported by the handler only for the reading (numpy, pandas); the argument itself is
standard library.
"""

from __future__ import annotations

import argparse
import csv
import gzip
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from edprf_core import Schema

__all__ = ["add_id_column_argument", "checked_id_columns", "reading_schema"]

_PARQUET = (".parquet", ".pq")


def add_id_column_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--id-column",
        default=None,
        metavar="NAME[,NAME]",
        help="columns of DATA (by their header name, e.g. a patient or study identifier) copied into OUT first, "
        "unchanged (empty for a malformed line); a name DATA's header lacks is refused",
    )


def _header(path: Path, sep: str) -> list[str]:
    """DATA's column names: a Parquet file's schema, or the first non-blank line of a CSV file (read alone)."""
    if path.suffix.lower() in _PARQUET:
        import pyarrow.parquet as pq

        return list(pq.read_schema(path).names)
    opener = gzip.open if path.suffix.lower() == ".gz" else open
    try:
        with opener(path, "rt", encoding="utf-8-sig", errors="replace", newline="") as handle:
            for line in handle:
                text = line.rstrip("\r\n")
                if text.strip():
                    rows = list(csv.reader([text], delimiter=sep, quotechar='"'))
                    return [n.strip() for n in rows[0]] if rows else []
    except (OSError, EOFError) as exc:
        raise ValueError(f"cannot read data file {path}: {type(exc).__name__}") from None
    return []


def checked_id_columns(value: str | None, path: Path, sep: str, no_header: bool, taken: list[str]) -> tuple[str, ...]:
    """The names of ``--id-column`` (``()`` without it), each checked against DATA's header; ``taken``: OUT's own
    column names (an identifier named like one is refused: OUT would hold two columns of that name)."""
    if value is None:
        return ()
    names = tuple(n.strip() for n in value.split(","))
    if not all(names):
        raise ValueError(f"--id-column: expected column names separated by commas, got {value!r}")
    if len(set(names)) != len(names):
        raise ValueError(f"--id-column: a column is named twice in {value!r}")
    if no_header:
        raise ValueError("--id-column names columns of DATA's header: it cannot be used with --no-header")
    clash = [n for n in names if n in taken]
    if clash:
        raise ValueError(
            f"--id-column {clash[0]!r}: OUT has a column of that name already ({', '.join(taken)}); rename the "
            "column in DATA"
        )
    header = _header(path, sep)
    missing = [n for n in names if n not in header]
    if missing:
        shown = ", ".join(repr(n) for n in header[:12]) + (f" and {len(header) - 12} more" if len(header) > 12 else "")
        raise ValueError(
            f"--id-column: {path} has no column {missing[0]!r}"
            + (f" (nor {', '.join(repr(n) for n in missing[1:])})" if len(missing) > 1 else "")
            + f"; its header names {shown or 'no column'}"
            + _separator_hint(path, header, sep)
        )
    return names


def _separator_hint(path: Path, header: list[str], sep: str) -> str:
    """The hint for a header read with the wrong separator (``;`` read with ``,``: one name holding them all), as
    a file without ``--id-column`` gets it: checked here first, the wrong separator looked like a missing column
    (analyst review F6).  ``""`` for Parquet (typed columns, no separator) or a header without another one."""
    if path.suffix.lower() in _PARQUET:
        return ""
    from edprf_core.tables import separator_hint

    return separator_hint(sep.join(header), sep)


def reading_schema(schema: Schema, ids: tuple[str, ...]) -> Schema:
    """``schema`` with the identifier columns it does not read already added as features, for the reader only
    (it reads the features' and the label's columns): the model scores with ``schema`` itself."""
    import dataclasses

    from edprf_core import CategoricalFeature

    extra = [n for n in ids if n not in schema.feature_names and n != schema.label.column]
    if not extra:
        return schema
    added = tuple(CategoricalFeature(n, ("0", "1"), source="--id-column") for n in extra)
    return dataclasses.replace(
        schema,
        features=(*schema.features, *added),
        ignored_columns=tuple(c for c in schema.ignored_columns if c not in extra),
    )
