"""The party's local data: read from its own disk, validated, split once."""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from edprf_core import FeatureGrid, Schema, encode_features, encode_labels, read_csv

__all__ = ["LocalData", "load_local_data"]


@dataclass(frozen=True, eq=False)
class LocalData:
    """Training rows and held-out evaluation rows of one party (never sent anywhere)."""

    X_train: pd.DataFrame
    y_train: pd.Series
    X_holdout: pd.DataFrame
    y_holdout: pd.Series


def load_local_data(path: str | Path, schema: Schema, holdout_fraction: float, salt: str) -> LocalData:
    """Read the CSV at ``path`` and split off the held-out rows.

    The split depends only on each row's position and a party-local secret
    ``salt`` (stored in the ledger), so training and evaluation requests, which
    run in separate processes, see the same split, and the coordinator cannot
    predict it.
    """
    p = Path(path)
    if not p.is_file():
        raise ValueError(f"local data file {p} does not exist")
    X, y = read_csv(p, schema)
    # validate every row against the schema now, before any budget is reserved
    encode_features(X, schema, FeatureGrid.from_schema(schema, n_bins=2))
    encode_labels(y, schema)
    u = np.random.default_rng(int(salt, 16)).random(len(X))
    hold = u < holdout_fraction
    return LocalData(X[~hold], y[~hold], X[hold], y[hold])


def new_salt() -> str:
    return secrets.token_hex(16)
