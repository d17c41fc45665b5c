"""A federation with production randomness: exact sampling, required by the coordinator, and its guarantee."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from edprf_core import example_schema, load_embedded, merge_forests
from edprf_core.forest import FEDERATION_NOTE
from edprf_fl.simulation import prepare_workspace, simulate_federation
from server import REPORT_FILE
from server._guarantee import PartySpend, federation_guarantee

from .test_simulation import _settings


@pytest.mark.slow
def test_crypto_seeded_parties_release_exact_and_the_guarantee_counts_both_spends(tmp_path):
    cfg = prepare_workspace(_settings(parties=3, max_depth=3, seeded_noise=False), tmp_path).config
    assert cfg.seed == -1  # no research seed: production randomness
    # width 1: evaluate whatever the interval (the default would skip this uninformative evaluation, spending 0)
    simulate_federation(replace(cfg, require_exact_sampling=True, evaluation_max_interval_width=1.0), 3)
    report = json.loads((tmp_path / REPORT_FILE).read_text())
    assert report["status"] == "completed"
    assert [p["sampler"] for p in report["parties"]] == ["exact"] * 3
    assert [p["evaluation_epsilon"] for p in report["parties"]] == [0.1] * 3
    text = report["guarantee"]
    assert text.startswith("Spent for this run: epsilon = 1.1 per record at most")
    assert "exact OpenDP sampler" in text and "NOT" not in text

    seeded_cfg = prepare_workspace(_settings(parties=3, max_depth=3), tmp_path / "seeded").config
    simulate_federation(replace(seeded_cfg, require_exact_sampling=True), 3)
    seeded = json.loads((tmp_path / "seeded" / REPORT_FILE).read_text())
    assert {p["reason"] for p in seeded["parties"]} == {"sampler_not_exact"}
    assert seeded["status"] == "failed"


@pytest.mark.privacy  # the printed per-record epsilon (mutation campaign 3, K17: stop 56)
@pytest.mark.parametrize("evaluated_first", [True, False])
def test_federation_guarantee_is_computed_from_the_spends(evaluated_first):
    """The headline is the largest party total, release and evaluation: with the evaluated party listed second, a
    headline taken from the largest release alone (the first of two equal ones) printed 1 for records facing 1.1."""
    X, y, schema = load_embedded("wall_robot_navigation")
    from edprf_core import EDPRFClassifier

    forest = merge_forests(
        [EDPRFClassifier(schema, max_depth=2, n_trees=1, n_bins=20).fit(X[:200], y[:200]).forest_ for _ in range(2)],
        labels=["a", "b"],
    )
    spends = [PartySpend("a", 1.0, 0.1), PartySpend("b", 1.0, 0.0)]
    text = federation_guarantee(forest, spends if evaluated_first else spends[::-1])
    assert text.startswith("Spent for this run: epsilon = 1.1 per record at most (release 1 + noised evaluation 0.1")
    assert "1 of them served the evaluation" in text and "protects little" not in text
    # the note is about what was spent, release and evaluation: stated once, with the total
    large = federation_guarantee(forest, [PartySpend("a", 1.0, 9.5)])
    assert large.count("protects little") == 1 and large.endswith(
        "Note: epsilon 10.5 per record is a bound that protects little: the odds of any conclusion about one record "
        "may change by a factor up to e^10.5; deployments usually keep epsilon at 10 or below."
    )
    seeded = (
        EDPRFClassifier(example_schema("wall_robot_navigation"), max_depth=2, n_trees=1, random_state=0)
        .fit(X[:200], y[:200])
        .forest_
    )
    assert federation_guarantee(seeded, [PartySpend("a", 1.0)]).startswith("NOT differentially private")


def test_a_federation_guarantee_states_each_reason_once():
    """The run's headline and the model's own statement below it both listed every reason (stop 40 walkthrough)."""
    from edprf_core import EDPRFClassifier

    X, y, schema = load_embedded("wall_robot_navigation")
    parts = [
        EDPRFClassifier(schema, max_depth=2, n_trees=1, n_bins=20, random_state=i).fit(X[:200], y[:200]).forest_
        for i in range(4)
    ]
    forest = merge_forests(parts, labels=["a", "b", "c", "d"])
    text = federation_guarantee(forest, [PartySpend(p, 1.0) for p in "abcd"])
    headline, model, *part_lines = text.splitlines()
    assert headline.startswith("NOT differentially private: 4 of 4 parts ('a', 'b', 'c' and 1 more): its noise")
    assert model.startswith("NOT differentially private (the reasons above). Merged forest of 4 parts")
    assert part_lines and all("NOT differentially private as released" in line for line in part_lines)
    assert text.count(FEDERATION_NOTE) == 1  # the headline and the model's statement both had it


@pytest.mark.parametrize(
    ("reason", "charged"),
    [("request_id_reused", True), ("policy_seed", False), ("budget_exhausted", False), ("internal_error", True)],
)
def test_an_evaluation_refused_as_reused_counts_as_charged(reason, charged):
    """An evaluation's request id is the run's own: refused as reused, the request reached the party before, and
    that delivery may have been charged (review of stop 43: it counted as refused before any reservation)."""
    from server import CoordinatorConfig
    from server._coordinator import _charge_evaluation
    from server._outcomes import PartyStatus
    from server._report import PartyOutcome, RunReport

    report = RunReport("run", {}, "fp", parties=[PartyOutcome(7, PartyStatus.ACCEPTED, party_id="a", epsilon=1.0)])
    report.federated_evaluation = {"refused": [{"node_id": 7, "reason": reason}]}
    _charge_evaluation(report, CoordinatorConfig(schema_path="s.toml", evaluation_epsilon=0.1))
    assert report.parties[0].evaluation_epsilon == (0.1 if charged else 0.0)
