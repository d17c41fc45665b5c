"""Issue 13: the model and the report grow with the number of parties only; a model over the transport
limit is saved but not sent."""

from __future__ import annotations

import json

import pytest

import server._coordinator as coordinator
from edprf_core import EDPRFClassifier, load_embedded
from edprf_fl.simulation import prepare_workspace, simulate_federation
from protocol import INSPECTION_POLICY, build_global_model, decode_release, encode_release
from server import REPORT_FILE, PartyOutcome, RunReport
from server._party_text import MAX_PARTY_TEXT, party_reason, party_text
from server._size_bounds import PARTY_ENTRY_BYTES, model_bound, report_bound

from .test_simulation import _settings

# what a hostile party can put in every text field: NULs (6 JSON bytes each), astral characters
# (a 12-byte surrogate pair each when escaped), and sheer length (8 MiB)
HOSTILE = ("\x00" * 1000 + "\U0001f600" * 1000) * 2100
ASTRAL = "\U0001f600" * 10_000  # what survives the cut at its worst: 12 JSON bytes a character


def _worst_case_report(n: int, text: str = HOSTILE) -> RunReport:
    report = RunReport(run_id="r" * 256, parameters={"epsilon": 1.0}, schema_fingerprint="sha256:" + "0" * 64)
    for node in range(n):
        report.parties.append(
            PartyOutcome(
                node_id=2**63 - 1 - node,
                status="refused",
                reason=party_reason(text),
                message=party_text(text),
                party_id="p" * 64,
            )
        )
    return report


@pytest.mark.parametrize("n", [1, 30, 300])
def test_the_report_of_hostile_parties_is_bounded_by_their_number(n, tmp_path):
    report = _worst_case_report(n)
    size = report.save(tmp_path / "report.json").stat().st_size
    assert size <= report_bound(n)
    assert len(json.dumps(report.rejections())) <= report_bound(n)  # what enters the model's manifest


def test_one_party_s_entry_at_its_worst_stays_within_the_per_party_bound(tmp_path):
    """Mutation campaign 3, K23 (stop 56): HOSTILE's cut keeps only NULs (6 bytes each), so a per-party bound of
    1 byte a character passed.  Astral characters alone reach the documented worst case, 12 bytes each."""
    one = _worst_case_report(1, ASTRAL).save(tmp_path / "one.json").stat().st_size
    two = _worst_case_report(2, ASTRAL).save(tmp_path / "two.json").stat().st_size
    assert 12 * MAX_PARTY_TEXT < two - one <= PARTY_ENTRY_BYTES  # the worst case is reached, and bounded
    assert two <= report_bound(2)


def test_the_model_is_bounded_by_its_releases_and_the_party_count():
    X, y, schema = load_embedded("wall_robot_navigation")
    forest = EDPRFClassifier(schema, n_trees=2, max_depth=4, random_state=0).fit(X, y).forest_
    raw = encode_release(forest, "hospital-a")
    release = decode_release(raw, schema, INSPECTION_POLICY)
    report = _worst_case_report(299)  # 299 refusals at the text cap and one accepted party
    model = build_global_model(schema, [release], {"run_id": "r", "rejections": report.rejections()})
    assert len(model) <= model_bound(300, len(raw), len(schema.to_toml().encode()))


@pytest.mark.slow
def test_a_model_over_the_transport_limit_is_saved_and_not_sent(tmp_path, monkeypatch):
    monkeypatch.setattr(coordinator, "TRANSPORT_LIMIT", 1000)  # any real model is larger
    cfg = prepare_workspace(_settings(parties=2, max_depth=3), tmp_path).config
    simulate_federation(cfg, 2)
    report = json.loads((tmp_path / REPORT_FILE).read_text())
    assert report["status"] == "completed" and report["model_bytes"] > 1000
    assert report["federated_evaluation"]["skipped"] == "model_too_large_for_transport"
    assert all(p["evaluation_epsilon"] == 0 for p in report["parties"])  # nobody was asked, nobody charged
    assert (tmp_path / "global-model.edprf").is_file()
