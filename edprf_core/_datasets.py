"""Embedded datasets and example schemas shipped with the package.

Shipped data (CC BY 4.0, see ``datasets/NOTICE.md``): UCI wall-following
robot navigation and UCI bank marketing (without ``duration``).  Example
schemas exist also for datasets that are not shipped (diabetes prediction,
heart disease Cleveland); their data must be supplied by the user.
"""

from __future__ import annotations

import logging
from importlib import resources
from pathlib import Path

import pandas as pd

from ._encoding import declared_labels
from ._schema import ContinuousFeature, Schema, load_schema
from ._text_table import read_table

__all__ = [
    "DEFAULT_DATASET",
    "available_schemas",
    "embedded_datasets",
    "example_schema",
    "load_embedded",
    "read_csv",
    "read_table",
]

DEFAULT_DATASET = "wall_robot_navigation"
_PACKAGE = "edprf_core"
_LOGGED_NOTES = 20

log = logging.getLogger("edprf.data")


def _root() -> Path:
    return Path(str(resources.files(_PACKAGE))) / "datasets"


def available_schemas() -> list[str]:
    """Names of the example schemas shipped with the package."""
    return sorted(p.name.removesuffix(".schema.toml") for p in _root().glob("*.schema.toml"))


def embedded_datasets() -> list[str]:
    """Names of the datasets whose data ship with the package."""
    return sorted(p.name.removesuffix(".csv.gz") for p in _root().glob("*.csv.gz"))


def example_schema(name: str) -> Schema:
    """The example schema ``name`` (see :func:`available_schemas`)."""
    path = _root() / f"{name}.schema.toml"
    if not path.is_file():
        raise ValueError(f"no example schema {name!r}; available: {available_schemas()}")
    return load_schema(path)


def read_csv(
    path: str | Path, schema: Schema, *, sep: str = ",", header: bool = True, labels: str = "classes"
) -> tuple[pd.DataFrame, pd.Series]:
    """Read a delimited text file into the schema's feature frame and label series.

    Every feature cell stays text; the schema decides, cell by cell, what it
    means when the rows are encoded (``""`` and ``"?"`` are missing).  Lines
    that cannot be read as one row (wrong number of fields, unbalanced quotes,
    longer than :data:`~edprf_core._text_table.MAX_LINE_CHARS`) are left out
    and logged with their line number.  See :func:`read_table` for the rules
    and why they are per record.

    ``labels="classes"`` (default) gives each label as the declared class it
    reads as (:func:`~edprf_core._encoding.declared_labels`: numbers for
    numeric classes, aliases applied), so it compares equal to ``predict``'s
    output; a label that is no declared class stays text.  ``labels="text"``
    keeps the label cells as read.
    """
    if labels not in ("classes", "text"):
        raise ValueError(f"labels: expected 'classes' or 'text', got {labels!r}")
    table = read_table(path, schema, sep=sep, header=header)
    for note in table.dropped[:_LOGGED_NOTES]:
        log.warning("%s: %s; left out", path, note)
    if len(table.dropped) > _LOGGED_NOTES:
        log.warning("%s: %d more lines left out", path, len(table.dropped) - _LOGGED_NOTES)
    return table.X, (declared_labels(table.y, schema) if labels == "classes" else table.y)


def _typed(frame: pd.DataFrame, schema: Schema) -> pd.DataFrame:
    """Numbers as numbers for the numeric columns of a *public* table (convenience only)."""
    out = frame.copy()
    for f in schema.features:
        if isinstance(f, ContinuousFeature) or not isinstance(f.categories[0], str):
            out[f.name] = pd.to_numeric(out[f.name], errors="coerce")
    return out


def load_embedded(name: str = DEFAULT_DATASET) -> tuple[pd.DataFrame, pd.Series, Schema]:
    """Features, labels and schema of an embedded dataset."""
    path = _root() / f"{name}.csv.gz"
    if not path.is_file():
        raise ValueError(f"no embedded dataset {name!r}; available: {embedded_datasets()}")
    schema = example_schema(name)
    X, y = read_csv(path, schema, labels="text")
    if not isinstance(schema.label.classes[0], str):
        y = pd.to_numeric(y, errors="coerce")
    return _typed(X, schema), y, schema
