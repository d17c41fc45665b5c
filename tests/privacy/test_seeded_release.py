"""A seeded release says so: in its parameters, its guarantee, the party's ledger and the coordinator's text.

A request with a seed (``seed >= 0``, ``edprf simulate --seeded-noise``) draws the noise from a
generator that whoever knows the seed can replay, so the release is NOT differentially private
for that reason alone, whatever else it says.  A production party refuses it (the default
policy, ``allow-seeded-randomness = false``) before anything is charged.  A party whose policy
allows it (research data) serves it through its real Flower handler, and then:

- the release's parameters say ``seeded = true`` (the flag the decoder and the coordinator read);
- its guarantee, and the coordinator's (:func:`server._guarantee.federation_guarantee`), open
  with NOT differentially private and name the seed (``SEEDED_REASON``), not only the
  floating-point sampler a seeded fit also uses;
- the party's ledger keeps a NOT DP line for the request, naming its seed;
- the coordinator of a seeded research run (``seed >= 0``, ``require_exact_sampling`` off) accepts
  it as the answer to its seeded request; the same release answering a request without a seed is
  rejected as ``seeded_release`` (:func:`server._conformance.request_mismatch`), by a research
  run's configuration and by production's (which would otherwise reject it for its sampler only).

The estimator alone says the same: ``random_state`` given, its forest is marked seeded and its
guarantee names the seed; without one, neither.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from client import NOT_DP_COUNT_KEY, NOT_DP_KEY, not_dp_replies, read_meta_readonly
from edprf_core import EDPRFClassifier
from edprf_core._forest import FLOAT_NOISE_REASON, SEEDED_REASON
from server import CoordinatorConfig
from server._conformance import request_mismatch
from server._guarantee import PartySpend, federation_guarantee

from ..federation._neighbours import file_bytes, make_party
from ..synthetic import make_data, make_schema
from ._party_requests import (
    TrainSettings,
    flower_task_identity,  # noqa: F401 (a fixture)
    ledger,
    release_of,
    result_of,
    send_request,
    train_request,
)

pytestmark = [pytest.mark.privacy, pytest.mark.usefixtures("flower_task_identity")]

SETTINGS = TrainSettings(leaf="counts", split_mode="binary", n_trees=2, max_depth=4, n_bins=8)
SEED = 0


def _not_dp_lines(setup) -> tuple[int, list[str]]:
    return not_dp_replies(read_meta_readonly(setup.ledger_path, (NOT_DP_KEY, NOT_DP_COUNT_KEY)))


def test_a_production_party_refuses_a_seeded_request_before_any_charge(tmp_path: Path):
    setup = make_party(tmp_path, file_bytes(n_rows=600), allow_seeded_randomness=False)
    result = result_of(send_request(setup, train_request(setup, SETTINGS, seed=SEED)))
    assert result["status"] == "refused" and result["reason"] == "policy_seed", result
    assert ledger(setup).entries() == []
    assert _not_dp_lines(setup) == (0, [])


def test_a_seeded_release_is_marked_seeded_all_the_way_to_the_coordinator(tmp_path: Path):
    setup = make_party(tmp_path, file_bytes(n_rows=600), allow_seeded_randomness=True)
    seeded = train_request(setup, SETTINGS, seed=SEED)
    release = release_of(setup, send_request(setup, seeded))
    params = release.params
    assert params.seeded, "a release drawn with the request's seed must say seeded"
    assert params.sampler == "numpy" and params.dp

    # its own guarantee names the seed, not only the floating-point sampler
    text = release.forest.guarantee()
    assert text.startswith("NOT differentially private") and SEEDED_REASON in text and FLOAT_NOISE_REASON in text
    assert SEEDED_REASON in params.not_dp_reasons()

    # the party's ledger: the release charged, and a NOT DP line naming the request's seed
    assert [(e.kind, float(e.epsilon_exact)) for e in ledger(setup).entries()] == [("release", SETTINGS.epsilon)]
    count, lines = _not_dp_lines(setup)
    assert count == 1 and "request run1/train" in lines[0] and "seed" in lines[0], lines

    # the coordinator: it answers the seeded request only; its run text says NOT DP because of the seed
    research = CoordinatorConfig(schema_path=str(setup.schema_path), seed=SEED, require_exact_sampling=False)
    assert request_mismatch(release, seeded, research) is None
    unseeded = dataclasses.replace(seeded, seed=-1)
    for cfg in (research, CoordinatorConfig(schema_path=str(setup.schema_path))):  # the latter: production's
        mismatch = request_mismatch(release, unseeded, cfg)
        assert mismatch is not None and mismatch[0] == "seeded_release", mismatch
    run_text = federation_guarantee(release.forest, [PartySpend("harness", params.epsilon)])
    assert run_text.startswith("NOT differentially private") and SEEDED_REASON in run_text


@pytest.mark.parametrize("random_state", [0, None], ids=["seeded", "unseeded"])
def test_the_estimator_marks_its_release_seeded_exactly_when_seeded(random_state):
    schema = make_schema(n_continuous=2, n_categorical=1, n_classes=2)
    X, y = make_data(schema, 300, seed=1)
    clf = EDPRFClassifier(schema, n_trees=2, max_depth=3, n_bins=8, marginals_share=0.0, random_state=random_state)
    clf.fit(X, y)
    params = clf.forest_.parts[0][1]
    assert params.seeded == (random_state is not None)
    assert (SEEDED_REASON in clf.forest_.guarantee()) == (random_state is not None)
    assert (SEEDED_REASON in clf.privacy_.not_dp_reasons()) == (random_state is not None)
