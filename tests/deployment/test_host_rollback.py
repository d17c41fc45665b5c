"""A party's whole host is restored from a snapshot: its ledger and the anchor beside it forget a release.

The anchor (``client._ledger_anchor``) catches a ledger restored alone; a snapshot of the whole host takes the
anchor back too, and the party would serve its spent ε again.  The coordinator's spend record
(``spend-record``, kept beside the runs' output directories) holds what each party's signed releases charged
and travels in every train request; the restored party counts the difference as spent before it serves.

Real SuperLink with TLS and SuperNode authentication, real SuperNodes, signed releases, loopback only.
hospital-a's lifetime cap is 1.5: one release of ε 1 and its evaluation (ε 0.1) fit, a second release does not.
After its host is restored to the state before its first release, it must refuse the second request
(``budget_exhausted``), with the lost ε 1.1 written into its ledger as a ``carried-`` entry; hospital-b, not
restored, serves and carries nothing.
"""

from __future__ import annotations

import shutil
import sqlite3
from fractions import Fraction

import pytest

from ._harness import Federation, node_config, run_guarded, write_parties
from .conftest import ledger_rows

pytestmark = [pytest.mark.deployment, pytest.mark.slow]

CAPS = {"hospital-a": 1.5, "hospital-b": 5.0}
ONE, TENTH = Fraction(1), Fraction(1, 10)


def test_a_host_restored_from_a_snapshot_does_not_serve_its_spent_epsilon_again(deployment, pki, tmp_path):
    dep = deployment

    def scenario() -> None:
        parties, schema = write_parties(tmp_path / "parties", CAPS, release_epsilon=1.0, evaluation_epsilon=0.1)
        keys = {p: pki.party(p) for p in CAPS}
        fed = Federation(dep, tls=pki.tls, supernode_auth=True, separate_superexec=True)
        fed.start_superlink(tmp_path / "superlink.db")
        fed.write_cli_config()
        configs = {p: node_config(paths, signing_key=keys[p].signing_key) for p, paths in parties.items()}
        for p in CAPS:
            fed.register(keys[p].auth_pub)
        for p in CAPS:
            fed.start_supernode(p, configs[p], auth_key=keys[p].auth_key)
        fed.wait_online(len(CAPS), timeout=90)
        fed.assert_loopback_only()
        run_config = {
            "schema-path": schema,
            "epsilon": 1.0,
            "n-trees": 1,
            "max-depth": 4,
            "min-parties": 1,
            "expected-parties": 2,
            "evaluation-epsilon": 0.1,
            "evaluation-max-interval-width": 1.0,  # small parties: evaluate anyway (its epsilon is recorded too)
            "round-timeout": 120.0,
            "keys-dir": pki.keys_dir(CAPS),
        }
        outputs = tmp_path / "outputs"  # one directory per run; the record sits beside them ("auto")
        host_a = parties["hospital-a"]["ledger"].parent
        snapshot = tmp_path / "snapshot-hospital-a"
        shutil.copytree(host_a, snapshot)  # the whole party directory: ledger, anchor (none yet), data, policy

        first, _ = fed.run_and_load("run-1", run_config, outputs / "run-1")
        assert [p["status"] for p in first["parties"]] == ["accepted", "accepted"], first["parties"]
        record = outputs / "spend-record.sqlite"
        assert _recorded(record) == {"hospital-a": [TENTH, ONE], "hospital-b": [TENTH, ONE]}

        # hospital-a's host comes back from the snapshot taken before its release (the files as a restore
        # leaves them; its SuperNode keeps running: each request's ClientApp opens the ledger anew)
        shutil.rmtree(host_a)
        shutil.copytree(snapshot, host_a)
        assert ledger_rows(parties["hospital-a"]["ledger"]) == []  # ledger and anchor forgot the release

        second, _ = fed.run_and_load("run-2", run_config, outputs / "run-2")
        outcome = {p["party_id"]: p for p in second["parties"]}
        assert outcome["hospital-a"]["status"] == "refused", second["parties"]
        assert outcome["hospital-a"]["reason"] == "budget_exhausted", second["parties"]
        assert outcome["hospital-b"]["status"] == "accepted", second["parties"]
        restored = ledger_rows(parties["hospital-a"]["ledger"])
        assert [(r[0][:8], r[1], r[2], r[3]) for r in restored] == [("carried-", "release", 1.1, "failed")], restored
        assert [r[2] for r in ledger_rows(parties["hospital-b"]["ledger"])] == [1.0, 0.1, 1.0, 0.1]  # none carried
        # hospital-b's second release and evaluation are recorded; hospital-a's refusal is not
        assert _recorded(record) == {"hospital-a": [TENTH, ONE], "hospital-b": [TENTH, TENTH, ONE, ONE]}

    run_guarded(dep, scenario)


def _recorded(record) -> dict[str, list[Fraction]]:
    """Per party, the exact epsilon of each row of the coordinator's spend record, in increasing order."""
    recorded: dict[str, list[Fraction]] = {}
    with sqlite3.connect(record) as db:
        for party, epsilon in db.execute("SELECT party_id, epsilon_exact FROM releases ORDER BY party_id"):
            recorded.setdefault(party, []).append(Fraction(epsilon))
    return {party: sorted(values) for party, values in recorded.items()}
