"""Deployment on loopback (issue 4): a real SuperLink, three SuperNodes and two `flwr run`s.

Everything listens on 127.0.0.1 only, in insecure mode, with every file (Flower homes,
SuperLink database, party data, policies, ledgers, outputs, logs) under ``tmp_path``.

Run 1: parties A, B, C each release 2 trees at ε 1.0 and answer a noised evaluation at
ε 0.1; the coordinator saves a 6-tree model.  Party C's lifetime cap is 1.1, so in run 2
it refuses with ``budget_exhausted`` and spends nothing; A and B release again and the
model has 4 trees.

Processes are started, watched and stopped by :mod:`tests.deployment._harness` (shared with the
TLS, hostile-party and crash tests); logs go to ``tmp_path/logs`` and their tails are printed on
failure.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from client import BudgetLedger
from protocol import load_global_model
from tests.deployment._harness import Deployment, Federation, new_deployment, node_config, run_guarded, write_parties

pytestmark = [pytest.mark.deployment, pytest.mark.slow]

RELEASE_EPSILON = 1.0
EVALUATION_EPSILON = 0.1
TREES_PER_PARTY = 2
# lifetime caps: A and B can serve two runs (2 x (1.0 + 0.1)), C exactly one
PARTIES = {"party-a": 2.2, "party-b": 2.2, "party-c": 1.1}


def _entries(paths: dict[str, Path], party_id: str) -> list:
    return BudgetLedger(paths["ledger"], PARTIES[party_id]).entries()


@pytest.fixture
def deployment(tmp_path, request) -> Deployment:
    return new_deployment(tmp_path, request)


def test_three_parties_on_loopback_two_runs_and_an_exhausted_budget(deployment: Deployment, tmp_path):
    seconds = run_guarded(deployment, lambda: _scenario(deployment, tmp_path))
    print(f"\ndeployment test: {seconds:.1f} s")


def _scenario(dep: Deployment, tmp_path: Path) -> None:
    parties, schema_path = write_parties(
        tmp_path / "parties", PARTIES, release_epsilon=RELEASE_EPSILON, evaluation_epsilon=EVALUATION_EPSILON
    )
    fed = Federation(dep)  # insecure, SuperLink-managed SuperExec
    fed.start_superlink(tmp_path / "superlink.db")
    fed.write_cli_config()
    for party_id, paths in parties.items():
        fed.start_supernode(party_id, node_config(paths))
    fed.wait_online(len(parties))
    fed.assert_loopback_only()

    # ---- run 1: all three parties release
    report1, view1 = fed.run_and_load("run-1", _run_config(schema_path), tmp_path / "out1")
    assert report1["status"] == "completed", report1
    outcomes = report1["parties"]
    assert len(outcomes) == 3 and all(p["status"] == "accepted" and p["reason"] == "" for p in outcomes), outcomes
    node_of = {p["party_id"]: p["node_id"] for p in outcomes}
    assert sorted(node_of) == sorted(PARTIES)
    assert report1["n_trees"] == 3 * TREES_PER_PARTY
    assert view1.forest.n_trees == 3 * TREES_PER_PARTY and sorted(view1.parties) == sorted(PARTIES)
    assert view1.manifest["run_id"] == report1["run_id"] and view1.manifest["rejections"] == []
    assert all(r.params.epsilon == RELEASE_EPSILON for r in view1.releases)
    evaluation = report1["federated_evaluation"]
    assert evaluation["parties"] == 3 and evaluation["refused"] == [] and evaluation["noised"] is True
    ledgers1 = {}
    for party_id, paths in parties.items():
        entries = _entries(paths, party_id)
        assert [(e.kind, e.epsilon, e.state) for e in entries] == [
            ("release", RELEASE_EPSILON, "released"),
            ("evaluation", EVALUATION_EPSILON, "released"),
        ], entries
        assert all(e.run_id == report1["run_id"] for e in entries)
        ledgers1[party_id] = entries

    # ---- run 2: C's lifetime cap is spent, it refuses before computing anything
    report2, view2 = fed.run_and_load("run-2", _run_config(schema_path), tmp_path / "out2")
    assert report2["status"] == "completed", report2
    assert report2["run_id"] != report1["run_id"]
    by_node = {p["node_id"]: p for p in report2["parties"]}
    assert sorted(by_node) == sorted(node_of.values()), "the SuperNodes changed between the runs"
    refused = by_node[node_of["party-c"]]
    assert refused["status"] == "refused" and refused["reason"] == "budget_exhausted", refused
    for party_id in ("party-a", "party-b"):
        p = by_node[node_of[party_id]]
        assert (
            p["status"] == "accepted"
            and p["reason"] == ""
            and p["party_id"] == party_id
            and p["n_trees"] == TREES_PER_PARTY
        ), p
    assert report2["n_trees"] == 2 * TREES_PER_PARTY
    assert view2.forest.n_trees == 2 * TREES_PER_PARTY and sorted(view2.parties) == ["party-a", "party-b"]
    assert [r["reason"] for r in view2.manifest["rejections"]] == ["budget_exhausted"]
    assert report2["federated_evaluation"]["parties"] == 2

    assert _entries(parties["party-c"], "party-c") == ledgers1["party-c"], "party C spent budget in run 2"
    for party_id in ("party-a", "party-b"):
        entries = _entries(parties[party_id], party_id)
        releases = [e for e in entries if e.kind == "release"]
        assert [(e.epsilon, e.state) for e in releases] == [(RELEASE_EPSILON, "released")] * 2, entries
        assert [e.run_id for e in releases] == [report1["run_id"], report2["run_id"]]
        assert [e.kind for e in entries].count("evaluation") == 2
        assert BudgetLedger(parties[party_id]["ledger"], PARTIES[party_id]).remaining() == pytest.approx(0.0)
    # the first run's model is untouched by the second
    assert load_global_model(tmp_path / "out1" / "global-model.edprf").forest.n_trees == 3 * TREES_PER_PARTY


def _run_config(schema_path: Path) -> dict:
    return {
        "schema-path": schema_path,
        "epsilon": RELEASE_EPSILON,
        "n-trees": TREES_PER_PARTY,
        "max-depth": 4,
        "min-parties": 2,
        "evaluation-epsilon": EVALUATION_EPSILON,
        "round-timeout": 120.0,
        "node-wait-timeout": 60.0,
        "evaluation-max-interval-width": 1.0,
    }
