"""One dishonest party against the real coordinator (review of stop 58, a malicious party's view).

Each node fits and signs a real release (``_release_grid``); the hostile one changes it and signs the change with
its own registered key, so that every signature and every parameter the coordinator can check is right.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from edprf_core import load_embedded
from protocol import largest_release_bytes, load_global_model
from server import MODEL_FILE, REPORT_FILE, CoordinatorConfig, PartyStatus, run_federation
from server._summary import summary_lines

from ._release_grid import ReleaseGrid, fit_for, parties_on, released, resigned
from .test_waiting_for_parties import serverapp_identity  # noqa: F401 (a fixture)

pytestmark = [pytest.mark.usefixtures("serverapp_identity")]

WALL = "wall_robot_navigation"


@pytest.fixture(scope="module")
def wall():
    return load_embedded(WALL)


def _consortium(tmp_path: Path, wall, n: int = 4, validation: int = 600):
    """``n`` parties on the training rows, the validation rows written for the coordinator."""
    X, y, schema = wall
    schema.save(tmp_path / "schema.toml")
    X.iloc[:validation].assign(**{schema.label.column: y.iloc[:validation].to_numpy()}).to_csv(
        tmp_path / "validation.csv", index=False
    )
    nodes = parties_on(X.iloc[validation:], y.iloc[validation:], n, tmp_path / "keys")
    return nodes, schema


def _config(tmp_path: Path, **kw) -> CoordinatorConfig:
    args = {
        "schema_path": str(tmp_path / "schema.toml"),
        "output_dir": str(tmp_path / "out"),
        "keys_dir": str(tmp_path / "keys"),
        "spend_record": "none",
        "node_wait_timeout": 0.0,
        "evaluation_epsilon": 0.0,
        "readiness_check": False,
        "max_depth": 4,
        "depth_rule": "fixed",
        "n_trees": 2,
        "seed": 0,  # seeded research releases (numpy sampler): the same releases on every run
        "require_exact_sampling": False,
    }
    return CoordinatorConfig(**(args | kw))


def _noise_skipped(payload: bytes, request, node, schema) -> bytes:
    """A party that fits with next to no noise (ε = 1000) and labels its release with the requested ε."""
    sharp = released(fit_for(request, schema, node.X, node.y, epsilon=1000.0), request, node)

    def relabel(release) -> None:
        release.parameters.epsilon = request.epsilon

    return resigned(sharp, node.key, relabel)


@pytest.mark.privacy
@pytest.mark.parametrize("target", [0, 3])
def test_selection_keeps_three_parts_so_a_noise_free_party_cannot_become_the_model(tmp_path, wall, target):
    """Review finding F1 (S1): selective aggregation kept the noise-free party alone (it scores best on the
    validation rows) after min-parties had been checked; one party's release was the whole model."""
    nodes, schema = _consortium(tmp_path, wall)
    nodes[103].hook = _noise_skipped
    cfg = _config(
        tmp_path,
        min_parties=3,
        validation_data_path=str(tmp_path / "validation.csv"),
        selective_aggregation=True,
        target_parties=target,
    )
    report = run_federation(ReleaseGrid(schema, nodes), cfg, "7")
    assert report.status == "completed"
    kept = report.selection["kept"]
    assert len(kept) >= 3 and "party-3" in kept  # the sharp party is kept, but not alone
    assert report.bounded_influence == {
        "applies": True,
        "parts": len(kept),
        "needs": 3,
        "tolerated_parties": 1,
        "bounded_against": 1,
    }
    assert sorted(load_global_model(tmp_path / "out" / MODEL_FILE).parties) == sorted(kept)


def _colluder(payload: bytes, request, node, schema) -> bytes:
    """A colluding party: its own forest with every leaf's mass on the rarest class (``forge('rarest-class')``),
    released and signed with its own key; two such parties are each other's reference in the merge."""
    from tests.forged_releases import forge

    return released(forge("rarest-class", fit_for(request, schema, node.X, node.y)), request, node)


@pytest.mark.privacy
@pytest.mark.parametrize("tolerated", [1, 2])
def test_two_colluding_parties_are_held_only_when_the_run_tolerates_two(tmp_path, wall, tolerated):
    """Two signed, conforming releases of colluding parties among seven, through the real coordinator: with the
    default tolerated-parties = 1 they decide the saved model; with 2 it stays the honest parties' (review rev-eval,
    stop 59). The model file records the setting, so every reader pools as the coordinator did."""
    nodes, schema = _consortium(tmp_path, wall, n=7)
    nodes[105].hook = nodes[106].hook = _colluder
    cfg = _config(tmp_path, min_parties=5, tolerated_parties=tolerated)
    report = run_federation(ReleaseGrid(schema, nodes), cfg, "9")
    assert report.status == "completed" and len(report.accepted) == 7
    X, y, _ = wall
    model = load_global_model(tmp_path / "out" / MODEL_FILE)
    assert model.forest.tolerated_parties == tolerated
    # a party evaluating the model reads it without the manifest: the same pooling
    unread = load_global_model(tmp_path / "out" / MODEL_FILE, manifest=False)
    assert unread.forest.tolerated_parties == tolerated
    accuracy = (model.forest.predict(X.iloc[:600]) == y.iloc[:600].to_numpy()).mean()
    said = [line for line in summary_lines(report) if line.startswith("bounded influence:")]
    if tolerated == 1:
        assert accuracy < 0.3 and said == []  # taken: the rarest class nearly everywhere
    else:
        assert accuracy > 0.5
        assert said == ["bounded influence: against 2 hostile parties acting together (tolerated-parties)"]
        assert report.bounded_influence["bounded_against"] == 2


def test_a_model_of_four_parts_asked_to_tolerate_two_bounds_one_and_says_so(tmp_path, wall):
    nodes, schema = _consortium(tmp_path, wall, n=4)
    report = run_federation(ReleaseGrid(schema, nodes), _config(tmp_path, tolerated_parties=2), "10")
    assert report.bounded_influence["bounded_against"] == 1
    said = [line for line in summary_lines(report) if line.startswith("bounded influence:")]
    assert said == [
        (
            "bounded influence: against 1 hostile party, not the 2 of tolerated-parties: that takes 5 parties' "
            "releases (4 merged)"
        )
    ]


def test_a_target_below_three_parts_or_min_parties_is_refused():
    selective = {"schema_path": "s.toml", "selective_aggregation": True, "validation_data_path": "v.csv"}
    for target, min_parties in ((1, 1), (2, 1), (3, 4)):
        with pytest.raises(ValueError, match=r"target-parties: expected 0 \(no cap\) or >= "):
            CoordinatorConfig(**selective, target_parties=target, min_parties=min_parties)
    CoordinatorConfig(**selective, target_parties=3)  # the floor itself
    CoordinatorConfig(schema_path="s.toml", target_parties=1)  # without selective aggregation it does nothing


@pytest.mark.privacy
def test_quality_checks_that_leave_fewer_than_min_parties_save_no_model(tmp_path, wall):
    """Review finding F1: min-parties was checked before the quality checks dropped parties, and never again."""
    nodes, schema = _consortium(tmp_path, wall)

    def labels_shuffled(payload: bytes, request, node, schema) -> bytes:  # a party whose trees carry nothing
        shuffled = node.y.sample(frac=1.0, random_state=1).set_axis(node.y.index)
        return released(fit_for(request, schema, node.X, shuffled), request, node)

    nodes[102].hook = labels_shuffled
    cfg = _config(tmp_path, min_parties=4, validation_data_path=str(tmp_path / "validation.csv"), exclude_flagged=True)
    report = run_federation(ReleaseGrid(schema, nodes), cfg, "7")
    outcome = {p.party_id: p for p in report.parties}
    assert (outcome["party-2"].status, outcome["party-2"].reason) == (PartyStatus.DROPPED, "flagged_low_quality")
    assert report.status == "failed" and not (tmp_path / "out" / MODEL_FILE).exists()
    assert report.failure.startswith("3 valid releases kept after the quality checks, min-parties is 4; no model saved")
    saved = json.loads((tmp_path / "out" / REPORT_FILE).read_text())
    assert saved["status"] == "failed" and "kept after the quality checks" in saved["guarantee"]


@pytest.mark.privacy
def test_a_release_above_the_largest_honest_one_is_refused_unread(tmp_path, wall):
    """Review finding F2 (S2): the only cap before parsing was max-release-bytes (64 MiB), so one party could make
    the coordinator parse and hold ~20 times that for a release whose honest size is a few kilobytes."""
    nodes, schema = _consortium(tmp_path, wall, n=3)

    def padded(payload: bytes, request, node, schema) -> bytes:
        def pad(release) -> None:
            release.trees.leaf_counts.extend([1] * (1 << 20))  # 1 MiB more, far under max-release-bytes

        return resigned(payload, node.key, pad)

    nodes[102].hook = padded
    report = run_federation(ReleaseGrid(schema, nodes), _config(tmp_path, min_parties=2), "7")
    outcome = {p.node_id: p for p in report.parties}
    assert report.status == "completed" and outcome[100].status == PartyStatus.ACCEPTED
    forged = outcome[102]
    assert (forged.status, forged.reason) == (PartyStatus.REJECTED, "too_large")
    largest = largest_release_bytes(schema, n_trees=2, max_depth=4, split_mode="binary", n_bins=20)
    assert forged.message.startswith(f"too_large: release: expected at most {largest} bytes, got ")
    assert forged.message.endswith("(the most an honest release answering this request can take; not read)")


def test_a_run_on_a_grid_finer_than_64_bins_takes_the_releases_it_asked_for(tmp_path, wall):
    """Review finding F3 (S2): n-bins above the decoder's default cap (64) was accepted by the config, and then
    every release it asked for was refused (policy_bins) after the parties had charged their ledgers."""
    nodes, schema = _consortium(tmp_path, wall, n=3)
    report = run_federation(ReleaseGrid(schema, nodes), _config(tmp_path, min_parties=3, n_bins=100), "7")
    assert report.status == "completed", report.failure
    assert [p.status for p in report.parties] == [PartyStatus.ACCEPTED] * 3


@pytest.mark.privacy
def test_another_partys_release_resigned_under_a_second_id_is_counted_once(tmp_path, wall):
    """Review finding F7: party-3 sent party-0's trees and counts under its own id and key; with three parts the
    copy made party-0's values the tightest spread and pulled party-1's onto them (the model became party-0's)."""
    nodes, schema = _consortium(tmp_path, wall, n=4)
    copied: dict[str, bytes] = {}

    def keeps_its_release(payload: bytes, request, node, schema) -> bytes:
        copied["release"] = payload  # party-0's, as every party sees it in a global model sent for evaluation
        return payload

    def copies_party_0(payload: bytes, request, node, schema) -> bytes:
        def own_id(release) -> None:
            release.party_id = node.party_id

        return resigned(copied["release"], node.key, own_id)

    nodes[100].hook, nodes[103].hook = keeps_its_release, copies_party_0  # the grid asks node 100 first
    report = run_federation(ReleaseGrid(schema, nodes), _config(tmp_path, min_parties=3), "7")
    outcome = {p.node_id: p for p in report.parties}
    assert [outcome[n].status for n in (100, 101, 102)] == [PartyStatus.ACCEPTED] * 3
    copy = outcome[103]
    assert (copy.status, copy.reason) == (PartyStatus.REJECTED, "duplicate_content")
    assert copy.message.startswith("the same trees and leaf counts as party 'party-0''s release (node 100)")
    assert sorted(load_global_model(tmp_path / "out" / MODEL_FILE).parties) == ["party-0", "party-1", "party-2"]


def test_two_parties_may_release_the_same_label_trees(tmp_path, wall):
    """Label leaves are not compared: two honest parties may well choose the same few splits and labels."""
    nodes, schema = _consortium(tmp_path, wall, n=3)
    first: dict[str, bytes] = {}

    def same_as_first(payload: bytes, request, node, schema) -> bytes:
        if "release" not in first:
            first["release"] = payload
            return payload

        def own_id(release) -> None:
            release.party_id = node.party_id

        return resigned(first["release"], node.key, own_id)

    for node in nodes.values():
        node.hook = same_as_first
    report = run_federation(ReleaseGrid(schema, nodes), _config(tmp_path, min_parties=3, leaf="label"), "7")
    assert report.status == "completed" and [p.status for p in report.parties] == [PartyStatus.ACCEPTED] * 3


def test_without_keys_dir_the_run_says_its_releases_are_unauthenticated(tmp_path, wall, caplog):
    """Review finding F4 (S3): without keys-dir any node may claim any party's id; the real party was rejected as a
    "copy of one party's state" and nothing said the run was unauthenticated."""
    nodes, schema = _consortium(tmp_path, wall, n=3)
    impostor = nodes[102]
    impostor.key, impostor.party_id = None, "party-0"  # unsigned, naming another party
    cfg = _config(tmp_path, min_parties=2, keys_dir="")
    with caplog.at_level(logging.WARNING, logger="edprf"):
        report = run_federation(ReleaseGrid(schema, {100: nodes[100], 101: nodes[101], 102: impostor}), cfg, "7")
    assert "no keys-dir: releases are not authenticated" in caplog.text
    second = next(p for p in report.parties if p.node_id == 102)
    assert (second.status, second.reason) == (PartyStatus.REJECTED, "duplicate_party")
    assert (
        "(unsigned, no keys-dir: another node may be speaking for it; or SuperNodes run from copies" in second.message
    )
    assert any(line.startswith("  releases unauthenticated (no keys-dir)") for line in summary_lines(report))
