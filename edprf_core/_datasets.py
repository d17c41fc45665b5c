"""Embedded datasets and example schemas shipped with the package.

Shipped data (CC BY 4.0, see ``datasets/NOTICE.md``): UCI wall-following
robot navigation and UCI bank marketing (without ``duration``).  Example
schemas exist also for datasets that are not shipped (diabetes prediction,
heart disease Cleveland); their data must be supplied by the user.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import pandas as pd

from ._schema import Schema, load_schema

__all__ = [
    "DEFAULT_DATASET",
    "available_schemas",
    "embedded_datasets",
    "example_schema",
    "load_embedded",
    "read_csv",
]

DEFAULT_DATASET = "wall_robot_navigation"
_PACKAGE = "edprf_core"


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


def read_csv(path: str | Path, schema: Schema, **kwargs: object) -> tuple[pd.DataFrame, pd.Series]:
    """Read a CSV and split it into the schema's feature frame and label series.

    The label column must be present.  ``"?"`` and empty cells read as missing
    (the schema's rules then apply).  Keyword arguments go to
    :func:`pandas.read_csv`.
    """
    kwargs.setdefault("na_values", ["?"])
    frame = pd.read_csv(path, **kwargs)
    column = schema.label.column
    if column not in frame.columns:
        raise ValueError(f"{path}: label column {column!r} is missing; columns are {list(frame.columns)}")
    return frame.drop(columns=[column]), frame[column]


def load_embedded(name: str = DEFAULT_DATASET) -> tuple[pd.DataFrame, pd.Series, Schema]:
    """Features, labels and schema of an embedded dataset."""
    path = _root() / f"{name}.csv.gz"
    if not path.is_file():
        raise ValueError(f"no embedded dataset {name!r}; available: {embedded_datasets()}")
    schema = example_schema(name)
    X, y = read_csv(path, schema)
    return X, y, schema
