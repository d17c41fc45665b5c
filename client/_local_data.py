"""The party's local data: read from its own disk, validated, split once."""

from __future__ import annotations

import logging
import secrets
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from edprf_core import Schema, conforming_rows, read_csv

__all__ = ["LocalData", "load_local_data"]

log = logging.getLogger("edprf.party")


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
    # A line with too many fields is a row-level problem too: skipped and logged here, not
    # refused (pandas would otherwise fail the whole file because of one record).
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", pd.errors.ParserWarning)
        X, y = read_csv(p, schema, on_bad_lines="warn")
    for w in caught:
        if issubclass(w.category, pd.errors.ParserWarning):
            log.warning("local data: %s; left out", str(w.message).strip())
    # Rows that break a 'refuse' rule are dropped here, one by one, and reported in the
    # party's own log only: refusing the request instead would tell the coordinator that
    # such a record exists.  A per-record filter is a stable transformation: no extra ε.
    keep, problems = conforming_rows(X, y, schema)
    for note in problems:
        log.warning("local data: %s; those rows are left out", note)
    if not keep.any():
        # Not refused: whether any usable row exists is itself data (one record away from a
        # release); training on no rows is still epsilon-DP, just uninformative.
        log.warning("local data: no row conforms to the schema; the release will carry no information")
    X, y = X[keep], y[keep]
    u = np.random.default_rng(int(salt, 16)).random(len(X))
    hold = u < holdout_fraction
    return LocalData(X[~hold], y[~hold], X[hold], y[hold])


def new_salt() -> str:
    return secrets.token_hex(16)
