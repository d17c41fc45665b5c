"""A party whose SuperNode is stopped is named by a run stopped before its requests, with real Flower processes.

Hospital IT walkthrough: with one of three parties' SuperNode stopped, ``min-parties=3 expected-parties=3`` failed
after node-wait-timeout with a text naming no hospital, report.json listed all three registered parties as absent
(the two online ones included), and the wait printed nothing.  Here the SuperLink runs with TLS and SuperNode
authentication as deploy/compose.yaml runs it; Flower's Grid gives the ServerApp each connected node's registered
key, and the coordinator's copies of those keys (``supernode-keys-dir``) name the party that did not connect.
"""

from __future__ import annotations

import json
import shutil

import pytest

from ._harness import Federation, node_config, run_guarded, write_parties
from .conftest import ledger_rows

pytestmark = [pytest.mark.deployment, pytest.mark.slow]

PARTIES = ("hospital-a", "hospital-b", "hospital-c")
WAIT = 12.0  # node-wait-timeout: one progress line (every 10 s) before the run stops


def test_a_stopped_party_is_named_and_the_online_ones_are_not_absent(deployment, pki, tmp_path):
    dep = deployment
    seen: dict = {}

    def scenario() -> None:
        parties, schema = write_parties(
            tmp_path / "parties", dict.fromkeys(PARTIES, 2.0), release_epsilon=1.0, evaluation_epsilon=0.1
        )
        keys = {p: pki.party(p) for p in PARTIES}
        supernode_keys = tmp_path / "supernode-keys"  # what the coordinator registered, as the runbook keeps it
        supernode_keys.mkdir()
        fed = Federation(dep, tls=pki.tls, supernode_auth=True, separate_superexec=True)
        fed.start_superlink(tmp_path / "superlink.db")
        fed.write_cli_config()
        for p in PARTIES:
            shutil.copy(keys[p].auth_pub, supernode_keys / f"{p}.auth.key.pub")
            fed.register(supernode_keys / f"{p}.auth.key.pub")
        for p in PARTIES[:2]:  # hospital-c's SuperNode is stopped
            fed.start_supernode(p, node_config(parties[p], signing_key=keys[p].signing_key), auth_key=keys[p].auth_key)
        fed.wait_online(2)
        run_config = {
            "schema-path": schema,
            "epsilon": 1.0,
            "n-trees": 1,
            "max-depth": 3,
            "min-parties": 3,
            "expected-parties": 3,
            "node-wait-timeout": WAIT,
            "evaluation-epsilon": 0.0,
            "keys-dir": pki.keys_dir(PARTIES),
            "supernode-keys-dir": supernode_keys,
        }
        seen["code"], seen["output"] = fed.run("run-1", run_config, tmp_path / "out")
        seen["ledgers"] = {p: ledger_rows(parties[p]["ledger"]) for p in PARTIES[:2]}

    run_guarded(dep, scenario)

    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["status"] == "failed" and report["parties"] == [], report
    assert report["absent_parties"] == ["hospital-c"] and report["absent_parties_unknown"] == "", report
    assert report["failure"].startswith(
        f"2 of min-parties 3 connected within node-wait-timeout ({WAIT:g} s); not connected: hospital-c; no request "
        "was sent"
    ), report["failure"]
    output = seen["output"]
    assert "not connected: hospital-c" in output, output[-4000:]
    assert "waiting for 1 more party (connected 2 of 3, " in output, output[-4000:]
    assert seen["ledgers"] == {p: [] for p in PARTIES[:2]}  # nobody was asked, nobody spent
