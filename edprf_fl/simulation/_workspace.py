"""Lay out simulated parties on disk exactly as real parties would hold them."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pandas as pd

from client import HOLDOUT_SALT_KEY, BudgetLedger, PartyPolicy
from edprf_core import Schema

__all__ = ["write_workspace"]


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
    """Write ``schema.toml``, ``test.csv`` and ``party-NNNN/{data.csv,policy.toml}``.

    Each party's ledger is created by the party itself on first use.  With a
    ``research_seed`` (``--seeded-noise``: a reproducible research run, NOT DP)
    the ledger is created here with the secret that keys the party's hold-out
    split derived from the seed and the party id, so the same seed holds out
    the same rows; otherwise each party draws that secret itself, unknown to
    the coordinator.
    """
    root.mkdir(parents=True, exist_ok=True)
    schema.save(root / "schema.toml")
    label = schema.label.column
    X_test.assign(**{label: y_test.to_numpy()}).to_csv(root / "test.csv", index=False)
    dirs = []
    for p, rows in enumerate(parts):
        d = root / f"party-{p:04d}"
        d.mkdir(exist_ok=True)
        X.iloc[rows].assign(**{label: y.iloc[rows].to_numpy()}).to_csv(d / "data.csv", index=False)
        pol = PartyPolicy(party_id=f"party-{p:04d}", schema_fingerprint=schema.fingerprint, **policy)
        (d / "policy.toml").write_text(pol.to_toml(), encoding="utf-8")
        if research_seed is not None:
            salt = hashlib.sha256(f"edprf-simulation/{research_seed}/{pol.party_id}".encode()).hexdigest()[:32]
            BudgetLedger(d / "ledger.sqlite", pol.lifetime_epsilon_cap).secret(HOLDOUT_SALT_KEY, lambda s=salt: s)
        dirs.append(d)
    return dirs
