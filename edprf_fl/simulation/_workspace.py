"""Lay out simulated parties on disk exactly as real parties would hold them.

The workspace holds copies of the simulation's input rows (``edprf simulate --data``: the user's own data, perhaps
patients'), so it is written readable by its owner only, whatever the umask: directories 0700, files 0600
(:mod:`protocol._owner_only`), as the coordinator's model and report and the parties' ledgers are.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pandas as pd

from client import HOLDOUT_SALT_KEY, BudgetLedger, PartyPolicy
from edprf_core import Schema
from protocol import make_owner_only_dirs, open_owner_only

__all__ = ["write_owner_only_csv", "write_owner_only_text", "write_workspace"]


def write_owner_only_text(path: Path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` with mode 0600, whatever the umask (:func:`protocol.open_owner_only`)."""
    with open_owner_only(path) as f:
        f.write(text)


def write_owner_only_csv(path: Path, table: pd.DataFrame) -> None:
    """Write ``table`` as CSV (no index) to ``path`` with mode 0600, whatever the umask."""
    with open_owner_only(path) as f:
        table.to_csv(f, index=False)


def write_workspace(
    root: Path,
    schema: Schema,
    X: pd.DataFrame,
    y: pd.Series,
    parts: list,
    X_test: pd.DataFrame,
    y_test: pd.Series,
    policy: dict,
    research_seed: int | None = None,
) -> list[Path]:
    """Write ``schema.toml``, ``test.csv`` and ``party-NNNN/{data.csv,policy.toml}``, readable by their owner only.

    ``root`` and the party directories are created with mode 0700 (a ``root`` that exists keeps its mode), the
    files with mode 0600.

    Each party's ledger is created by the party itself on first use.  With a
    ``research_seed`` (``--seeded-noise``: a reproducible research run, NOT DP)
    the ledger is created here with the secret that keys the party's hold-out
    split derived from the seed and the party id, so the same seed holds out
    the same rows; otherwise each party draws that secret itself, unknown to
    the coordinator.
    """
    make_owner_only_dirs(root)
    write_owner_only_text(root / "schema.toml", schema.to_toml())
    label = schema.label.column
    write_owner_only_csv(root / "test.csv", X_test.assign(**{label: y_test.to_numpy()}))
    dirs = []
    for p, rows in enumerate(parts):
        d = root / f"party-{p:04d}"
        make_owner_only_dirs(d)
        write_owner_only_csv(d / "data.csv", X.iloc[rows].assign(**{label: y.iloc[rows].to_numpy()}))
        pol = PartyPolicy(party_id=f"party-{p:04d}", schema_fingerprint=schema.fingerprint, **policy)
        write_owner_only_text(d / "policy.toml", pol.to_toml())
        if research_seed is not None:
            salt = hashlib.sha256(f"edprf-simulation/{research_seed}/{pol.party_id}".encode()).hexdigest()[:32]
            ledger = BudgetLedger(d / "ledger.sqlite", pol.lifetime_epsilon_cap, party_id=pol.party_id)
            ledger.secret(HOLDOUT_SALT_KEY, lambda s=salt: s)
        dirs.append(d)
    return dirs
