"""Datasets of the probability benchmark: diabetes, bank marketing, wall robot, heart disease (Cleveland).

Every dataset comes with the project's public schema (bounds, bins, categories
and classes are declared there, never computed from the data).

- ``diabetes``: Kaggle diabetes prediction, read from ``<data-dir>`` (licence
  unknown: never copied into the repository); undersampled per seed to
  7000/7000 by :func:`_bench_common.make_split`.
- ``bank``: UCI bank marketing (bank-full, without ``duration``), embedded in
  ``edprf_core``.  45,211 rows, 11.7 % "yes".
- ``wall``: UCI wall-following robot, embedded in ``edprf_core``; 4 classes.
- ``heart``: UCI heart disease, Cleveland subset (303 rows), read from
  ``<data-dir>/heart_disease_cleveland/processed.cleveland.data`` (no header).
  The six rows with a ``?`` cell (``ca``, ``thal``) are dropped by the
  schema's own rule (``missing = "refuse"``; a per-record filter, see
  ``edprf_core.encoding.conforming_rows``), and the label is the usual binary target
  ``num > 0`` (SOURCE.md): 0 = no disease, 1 = disease.  The binary schema is
  the package's heart schema with the label's class list replaced by (0, 1).
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _bench_common import load_dataset as _load_common

from edprf_core import LabelSpec, Schema, example_schema, load_embedded
from edprf_core.datasets import read_csv
from edprf_core.encoding import conforming_rows

__all__ = ["DATASETS", "DATASET_TITLE", "HEART_RELPATH", "heart_binary_schema", "load_any_dataset", "load_dataset"]

DATASETS = ("diabetes", "bank", "wall", "heart")
HEART_RELPATH = Path("heart_disease_cleveland") / "processed.cleveland.data"
DATASET_TITLE = {
    "diabetes": "diabetes prediction (undersampled 7000/7000)",
    "bank": "bank marketing (bank-full, no duration)",
    "wall": "wall-following robot (4 classes)",
    "heart": "heart disease Cleveland (num > 0)",
}


def heart_binary_schema() -> Schema:
    """The package's Cleveland schema with the binary label ``num > 0`` (classes 0 = no disease, 1 = disease)."""
    schema = example_schema("heart_disease_cleveland")
    label = LabelSpec(
        column="num",
        classes=(0, 1),
        source="Binary relabelling num > 0 (heart-disease.names: 0 = < 50 % diameter narrowing, "
        "1..4 = > 50 %); the usual binary task, see SOURCE.md.",
    )
    return dataclasses.replace(schema, label=label)


def _load_heart(data_dir: str | Path) -> tuple[pd.DataFrame, pd.Series, Schema]:
    path = Path(data_dir) / HEART_RELPATH
    if not path.is_file():
        sys.exit(
            f"error: the heart disease data is not at {path}; pass --data-dir DIR or leave out "
            "--datasets heart (UCI processed.cleveland.data, CC BY 4.0)"
        )
    five = example_schema("heart_disease_cleveland")
    X, y = read_csv(path, five, header=False)
    keep, _notes = conforming_rows(X, y, five)  # drops the rows with "?" (missing = refuse); per-record rule
    X = X[keep].reset_index(drop=True)
    num = pd.to_numeric(y[keep].reset_index(drop=True))
    y_bin = pd.Series(np.where(num > 0, 1, 0), name="num")
    schema = heart_binary_schema()
    for f in schema.features:  # the file writes every number as a float ("4.0"); numbers as numbers
        X[f.name] = pd.to_numeric(X[f.name])
    return X, y_bin, schema


def load_dataset(name: str, data_dir: str | Path) -> tuple[pd.DataFrame, pd.Series, Schema]:
    """Full feature frame, labels (values of the schema's declared classes) and public schema of ``name``."""
    if name in ("diabetes", "wall"):
        return _load_common(name, data_dir)
    if name == "bank":
        return load_embedded("bank_marketing")
    if name == "heart":
        return _load_heart(data_dir)
    raise ValueError(f"unknown dataset {name!r}; expected one of {DATASETS}")


def load_any_dataset(name: str, data_dir: str | Path) -> tuple[pd.DataFrame, pd.Series, Schema]:
    """:func:`load_dataset` for the shared datasets, :func:`_bench_standins.load_standin` for the stand-ins."""
    from _bench_standins import STANDINS, UNSEEN, load_standin

    return load_standin(name) if name in STANDINS or name in UNSEEN else load_dataset(name, data_dir)
