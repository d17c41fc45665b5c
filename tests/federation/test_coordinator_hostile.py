"""The coordinator against hostile parties: conformance to the request, bounded text and metrics."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from edprf_core import EDPRFClassifier, load_embedded
from protocol import INSPECTION_POLICY, decode_release, encode_release
from protocol.messages import TrainRequest
from server import CoordinatorConfig
from server._conformance import request_mismatch
from server._evaluation import evaluation_summary, noise_variance
from server._party_text import MAX_PARTY_TEXT, party_reason, party_text


@pytest.fixture(scope="module")
def wall():
    X, y, schema = load_embedded("wall_robot_navigation")
    return X[:400], y[:400], schema


def _request(schema, **kw):
    args = {
        "request_id": "run-7/train",
        "run_id": "run-7",
        "schema_fingerprint": schema.fingerprint,
        "epsilon": 1.0,
        "max_depth": 3,
        "n_trees": 1,
        "split_mode": "binary",
        "n_bins": 20,
        "relation": "add-remove",
        "seed": -1,
    }
    args.update(kw)
    return TrainRequest(**args)


def _release(wall, run_id="run-7", request_id="run-7/train", **fit):
    X, y, schema = wall
    params = {"epsilon": 1.0, "max_depth": 3, "n_trees": 1, "n_bins": 20}
    params.update(fit)
    forest = EDPRFClassifier(schema, **params).fit(X, y).forest_
    return decode_release(
        encode_release(forest, "hospital-a", run_id=run_id, request_id=request_id), schema, INSPECTION_POLICY
    )


CFG = CoordinatorConfig(schema_path="s.toml")


def test_a_conforming_release_is_accepted(wall):
    assert request_mismatch(_release(wall), _request(wall[2]), CFG) is None


@pytest.mark.parametrize(
    ("fit", "reason"),
    [
        ({"n_bins": 21}, "request_mismatch"),
        ({"split_mode": "multiway", "n_bins": 20}, "request_mismatch"),
        ({"max_depth": 2}, "request_mismatch"),
        ({"epsilon": 0.5}, "request_mismatch"),
        ({"random_state": 3}, "seeded_release"),
        ({"leaf": "label"}, "request_mismatch"),
        ({"max_depth": "auto"}, "request_mismatch"),
        ({"marginals_share": 0.5, "marginals_bins": 5}, "request_mismatch"),  # a marginals part nobody asked for
    ],
)
def test_a_release_on_other_parameters_is_rejected_with_a_reason(wall, fit, reason):
    got = request_mismatch(_release(wall, **fit), _request(wall[2]), CFG)
    assert got is not None and got[0] == reason


def test_a_release_answers_a_marginals_request_only_with_its_share_and_grid(wall):
    asked = _request(wall[2], marginals_share=0.5, marginals_bins=5)
    assert request_mismatch(_release(wall, marginals_share=0.5, marginals_bins=5), asked, CFG) is None
    for fit in ({"marginals_share": 0.5, "marginals_bins": 6}, {"marginals_share": 0.25, "marginals_bins": 5}, {}):
        got = request_mismatch(_release(wall, **fit), asked, CFG)
        assert got is not None and got[0] == "request_mismatch" and "marginals" in got[1], fit


def test_auto_depth_requests_accept_a_party_chosen_depth_up_to_the_cap(wall):
    auto = _request(wall[2], depth_rule="auto", max_depth=8)
    chosen = _release(wall, max_depth="auto", max_depth_cap=8)  # a DP count of its 400 rows
    assert chosen.params.depth_rule == "dp-count" and chosen.params.max_depth <= 8
    assert request_mismatch(chosen, auto, CFG) is None
    declared = _release(wall, max_depth="auto", max_depth_cap=8, n_rows_public=5000)
    assert declared.params.depth_rule == "declared-size" and request_mismatch(declared, auto, CFG) is None
    assert request_mismatch(_release(wall, max_depth=3), auto, CFG)[0] == "request_mismatch"  # fixed depth: not auto
    too_deep = _release(wall, max_depth="auto", max_depth_cap=12, n_rows_public=10**7)
    assert too_deep.params.max_depth > 8
    assert request_mismatch(too_deep, auto, CFG)[0] == "request_mismatch"


def test_a_mismatch_names_what_was_expected_and_what_came(wall):
    fixed, auto = _request(wall[2]), _request(wall[2], depth_rule="auto", max_depth=8)
    counted = _release(wall, max_depth="auto", max_depth_cap=3)  # auto depth from a DP count: count_epsilon > 0
    assert counted.params.depth_rule == "dp-count" and counted.params.count_epsilon > 0
    reason, message = request_mismatch(counted, fixed, CFG)
    assert reason == "request_mismatch" and "depth_rule expected 'fixed', got 'dp-count'" in message
    # the depth rule a fixed request determines carries count_epsilon = 0 (TrainingParameters ties the two)
    reason, message = request_mismatch(_release(wall, max_depth=3), auto, CFG)
    assert "depth_rule expected one of ('declared-size', 'dp-count')" in message and "got 'fixed'" in message
    reason, message = request_mismatch(_release(wall, epsilon=0.5, n_bins=21), fixed, CFG)
    assert message == "parameters other than requested: epsilon expected 1.0, got 0.5; n_bins expected 20, got 21"
    # auto: the party's policy chooses a declared size (no count) or a DP count (its share of epsilon): both pass
    declared = _release(wall, max_depth="auto", max_depth_cap=8, n_rows_public=5000)
    share = _release(wall, max_depth="auto", max_depth_cap=8, count_epsilon_share=0.3)
    assert (declared.params.count_epsilon, share.params.count_epsilon) == (0.0, pytest.approx(0.3))
    assert request_mismatch(declared, auto, CFG) is None and request_mismatch(share, auto, CFG) is None


def test_records_from_older_coordinators_read_as_label_and_fixed_depth(wall):
    record = _request(wall[2]).to_record()
    del record["leaf"], record["depth-rule"]
    old = TrainRequest.from_record(record)
    assert (old.leaf, old.depth_rule) == ("label", "fixed")


def test_a_replayed_release_from_another_run_or_request_is_rejected(wall):
    old = _release(wall, run_id="run-6", request_id="run-6/train")
    assert request_mismatch(old, _request(wall[2]), CFG)[0] == "replayed_release"
    other_run = _release(wall, run_id="run-6")
    assert request_mismatch(other_run, _request(wall[2]), CFG)[0] == "replayed_release"
    # resuming under a request tag: the stored release of the same request is accepted
    assert request_mismatch(other_run, _request(wall[2]), replace(CFG, request_tag="run-7")) is None


def test_exact_sampling_can_be_required(wall):
    seeded = _release(wall, random_state=1)
    got = request_mismatch(seeded, _request(wall[2], seed=1), replace(CFG, require_exact_sampling=True))
    assert got[0] == "sampler_not_exact"


def test_party_text_is_bounded_and_printable():
    text = party_text("\0" * (8 << 20))
    assert len(text) <= MAX_PARTY_TEXT + 40 and text.isprintable()
    assert party_reason("policy_epsilon") == "policy_epsilon" and party_reason("x" * 100) == "unrecognised"
    assert party_reason(12) == "unrecognised" and party_text(b"bytes") == ""


def test_forged_metrics_move_the_estimate_by_a_bounded_amount():
    cfg = CoordinatorConfig(schema_path="s.toml", evaluation_epsilon=0.1, max_party_rows=1000)
    honest = [(i, {"correct": 400, "total": 500, "epsilon": 0.1, "exact": 0}, "") for i in range(9)]
    forged = (99, {"correct": 10**12, "total": 10**12, "epsilon": 0.1, "exact": 0}, "")
    missing = (98, {"total": 10}, "")
    refused = (97, None, "policy_evaluation_epsilon")
    out = evaluation_summary([*honest, forged, missing, refused], [96], cfg)
    assert out["parties"] == 9 and out["no_reply"] == [96]
    # beyond what a party of max-party-rows held-out rows can plausibly send: refused, not pooled
    assert {r["reason"] for r in out["refused"]} == {
        "invalid_metrics",
        "implausible_metrics",
        "policy_evaluation_epsilon",
    }
    assert out["accuracy"] == pytest.approx(0.8, rel=1e-3)  # bias-corrected ratio: (C/T) / (1 + k v / T^2)
    lying = (99, {"correct": 1000, "total": 1000, "epsilon": 0.1, "exact": 0}, "")  # plausible: pooled as is
    bounded = evaluation_summary([*honest, lying], [], cfg)
    assert bounded["accuracy"] == pytest.approx((9 * 400 + 1000) / (9 * 500 + 1000), rel=1e-3)
    lo, hi = out["ci95"]
    assert lo < 0.8 < hi


def test_the_interval_covers_the_truth_at_its_level():
    """Coverage of the consortium interval under the real noise (fixed seed, 400 repetitions)."""
    from edprf_core.mechanisms import discrete_laplace_counts

    cfg = CoordinatorConfig(schema_path="s.toml", evaluation_epsilon=0.1)
    rng = np.random.default_rng(0)
    truth_c, truth_t = np.array([80, 150, 30, 60, 200]), np.array([100, 200, 50, 90, 250])
    covered = 0
    for _ in range(400):
        noisy = [discrete_laplace_counts([c, t], 0.1, 2, rng) for c, t in zip(truth_c, truth_t)]
        out = evaluation_summary(
            [(i, {"correct": int(n[0]), "total": int(n[1])}, "") for i, n in enumerate(noisy)], [], cfg
        )
        lo, hi = out["ci95"]
        covered += lo <= truth_c.sum() / truth_t.sum() <= hi
    assert covered / 400 >= 0.9  # nominal 0.95; clipping at 0 and 1 only widens it
    assert math.isclose(noise_variance(0.1), 2 * math.exp(-0.05) / (1 - math.exp(-0.05)) ** 2)
