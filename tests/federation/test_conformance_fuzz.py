"""Fuzzing the coordinator's release checks: no mutated, re-signed release is accepted unless it answers the request."""

from __future__ import annotations

import os

from edprf_core import EDPRFClassifier, load_embedded
from protocol import PartyKeyRegistry, generate_signing_key
from protocol.messages import TrainRequest
from server import CoordinatorConfig

from ._conformance_fuzz import fuzz_conformance


def test_no_wrong_accepts_in_fuzzed_releases():
    X, y, schema = load_embedded("wall_robot_navigation")
    forest = EDPRFClassifier(schema, epsilon=1.0, max_depth=3, n_trees=2, n_bins=20).fit(X[:500], y[:500]).forest_
    key = generate_signing_key("ed25519")
    registry = PartyKeyRegistry({"hospital-a": key.public_key()})
    request = TrainRequest(
        request_id="run-9/train",
        run_id="run-9",
        schema_fingerprint=schema.fingerprint,
        epsilon=1.0,
        max_depth=3,
        n_trees=2,
        split_mode="binary",
        n_bins=20,
        relation="add-remove",
        seed=-1,
    )
    n = int(os.environ.get("EDPRF_FUZZ_INPUTS", "3000"))
    out = fuzz_conformance(forest, "hospital-a", key, registry, request, CoordinatorConfig(schema_path="s.toml"), n)
    assert out.inputs == n and out.wrong_accepts == 0
    assert out.rejected_by_decoder > 0 and out.rejected_by_conformance > 0 and out.accepted > 0  # all paths taken
