"""Registered parties that send what the coordinator must refuse, over the real transport.

How the hostile parties are made (and why not in simulation): every SuperNode of a Flower 1.41
deployment runs the one app bundle the coordinator submits, but each SuperNode starts it by
running the program named ``flwr-clientapp`` on its own PATH.  A party owns its host, so the
realistic attack is a party that keeps its valid credentials (TLS, registered authentication key,
registered release-signing key) and swaps that program for its own: see
:mod:`tests.deployment._hostile_clientapp`.  The forged replies then travel exactly as honest ones
do, through the SuperNode, TLS and the SuperLink, to the real coordinator, which is what this test
is about; Flower's simulation engine would skip the transport and the process boundaries.

Four hostile parties, each registered and signing with its own registered key:
``epsilon`` (a genuine forest at 10x the requested ε), ``trees`` (3 trees too many), ``schema`` (a
forest on another schema) and ``garbage`` (random bytes).  Two honest parties release normally.
Every hostile release is rejected with its reason in report.json and in the model's manifest; the
global model holds the honest parties' trees only.
"""

from __future__ import annotations

import pytest

from protocol import PartyKeyRegistry, load_global_model

from ._harness import BIN, Federation, node_config, run_guarded, write_parties
from ._hostile_clientapp import write_launcher
from .conftest import ledger_rows

pytestmark = [pytest.mark.deployment, pytest.mark.slow]

HONEST = ("hospital-a", "hospital-b")
EXPECTED_REASON = {"epsilon": "policy_epsilon", "trees": "policy_trees", "schema": "schema_mismatch",
                   "garbage": "malformed"}
HOSTILE = {f"mallory-{attack}": attack for attack in EXPECTED_REASON}
TREES = 2


def test_out_of_policy_and_garbage_releases_are_rejected_with_their_reasons(deployment, pki, tmp_path):
    dep = deployment

    def scenario() -> None:
        caps = {p: 2.0 for p in [*HONEST, *HOSTILE]}
        parties, schema = write_parties(tmp_path / "parties", caps, release_epsilon=1.0, evaluation_epsilon=0.1)
        keys = {p: pki.party(p) for p in caps}
        keys_dir = pki.keys_dir(caps)  # hostile parties are registered members: their keys are trusted
        hostile_bin = tmp_path / "hostile-bin"
        write_launcher(hostile_bin)
        hostile_env = {**dep.env, "PATH": f"{hostile_bin}:{BIN}:{dep.env['PATH']}"}

        fed = Federation(dep, tls=pki.tls, supernode_auth=True, separate_superexec=True)
        fed.start_superlink(tmp_path / "superlink.db")
        fed.write_cli_config()
        node_of = {p: fed.register(keys[p].auth_pub) for p in caps}
        for p, paths in parties.items():
            attack = {"attack": HOSTILE[p]} if p in HOSTILE else {}
            fed.start_supernode(p, node_config(paths, signing_key=keys[p].signing_key, **attack),
                                auth_key=keys[p].auth_key, env=hostile_env if p in HOSTILE else None)
        fed.wait_online(len(caps), timeout=90)
        fed.assert_loopback_only()

        report, view = fed.run_and_load("run-hostile", {
            "schema-path": schema, "epsilon": 1.0, "trees-per-party": TREES, "max-depth": 4, "min-parties": 2,
            "expected-parties": len(caps), "evaluation-epsilon": 0.1, "round-timeout": 90.0,
            "keys-dir": keys_dir}, tmp_path / "out")

        assert report["status"] == "completed", report
        by_node = {p["node_id"]: p for p in report["parties"]}
        assert sorted(by_node) == sorted(node_of.values())
        for party_id in HONEST:
            outcome = by_node[node_of[party_id]]
            assert outcome["status"] == "accepted" and outcome["signed"] is True, outcome
        for party_id, attack in HOSTILE.items():
            outcome = by_node[node_of[party_id]]
            assert outcome["status"] == "rejected", outcome
            assert outcome["reason"] == EXPECTED_REASON[attack], outcome
            assert outcome["message"], outcome

        assert view.forest.n_trees == len(HONEST) * TREES and sorted(view.parties) == sorted(HONEST)
        assert sorted(r["reason"] for r in view.manifest["rejections"]) == sorted(EXPECTED_REASON.values())
        assert load_global_model(tmp_path / "out" / "global-model.edprf",
                                 PartyKeyRegistry.from_directory(keys_dir)).all_verified
        assert report["federated_evaluation"]["parties"] == len(HONEST)  # rejected parties are not asked
        for party_id in HONEST:
            assert [r[1:4] for r in ledger_rows(parties[party_id]["ledger"])] == [
                ("release", 1.0, "released"), ("evaluation", 0.1, "released")]

    print(f"\nhostile parties: {run_guarded(dep, scenario):.1f} s")
