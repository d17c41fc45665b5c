"""Fixtures of the protocol tests: small fitted forests, party keys, a key registry."""

from __future__ import annotations

import pandas as pd
import pytest

from edprf_core import DPForest, EDPRFClassifier, Schema, load_embedded
from protocol import PartyKeyRegistry, ReleasePolicy, encode_release, generate_signing_key

DATASETS = ("wall_robot_navigation", "bank_marketing")
# small enough that every protocol test stays fast; multiway trees grow as n_codes ** depth
FOREST_SHAPES = {
    "binary": {"n_trees": 5, "max_depth": 4, "n_bins": 5},
    "multiway": {"n_trees": 3, "max_depth": 3, "n_bins": 5, "leaf": "label"},
}
"""Binary fixtures release leaf counts (the default), multiway fixtures labels."""


@pytest.fixture(scope="session")
def embedded() -> dict[str, tuple[pd.DataFrame, pd.Series, Schema]]:
    return {name: load_embedded(name) for name in DATASETS}


@pytest.fixture(scope="session")
def forests(embedded) -> dict[tuple[str, str], DPForest]:
    """(dataset, split mode) -> a forest fitted on 2000 rows."""
    out = {}
    for name, (X, y, schema) in embedded.items():
        for mode, shape in FOREST_SHAPES.items():
            clf = EDPRFClassifier(schema, epsilon=1.0, split_mode=mode, random_state=0, **shape)
            out[name, mode] = clf.fit(X.iloc[:2000], y.iloc[:2000]).forest_
    return out


@pytest.fixture(scope="session")
def wall_schema(embedded) -> Schema:
    return embedded["wall_robot_navigation"][2]


@pytest.fixture(scope="session")
def party_keys():
    """One Ed25519 and one EC P-384 party, plus an outsider without a registered key."""
    return {
        "hospital-a": generate_signing_key("ed25519"),
        "hospital-b": generate_signing_key("p384"),
        "outsider": generate_signing_key("ed25519"),
    }


@pytest.fixture(scope="session")
def registry(party_keys) -> PartyKeyRegistry:
    return PartyKeyRegistry({p: k.public_key() for p, k in party_keys.items() if p != "outsider"})


@pytest.fixture(scope="session")
def policy() -> ReleasePolicy:
    return ReleasePolicy(max_epsilon=2.0, max_depth=8, max_n_trees=50, max_bytes=1 << 22, max_n_bins=16)


@pytest.fixture(scope="session")
def signed_wall_release(forests, party_keys) -> bytes:
    """hospital-a's signed release of the binary wall forest."""
    return encode_release(forests["wall_robot_navigation", "binary"], "hospital-a", party_keys["hospital-a"])
