"""A party that signs conforming releases with forged leaf counts, in the in-process simulation (issue 20).

The hostile party runs the real party ClientApp (it trains and releases as asked, so its release
has the requested parameters and honest shapes) and then replaces the counts of its own release
(``tests/forged_releases.py``) before replying.  The coordinator must accept it (nothing it can
check is wrong), the run must complete, and the global model must stay within the goal of issue
20: no worse than the honest parties' model minus what dropping one honest party costs, minus 2
points.  The same forests pooled without the bound (``tolerated_parties=0``) must fail that goal
for the headline attack: the test would notice the bound going away.  A party that forges its shapes
instead (``REFUSED_ATTACKS``: root-only trees under the requested fixed depth) is rejected as
``bad_structure`` and the run completes with the others.
"""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest
from flwr.app import ConfigRecord, Message, MessageType, RecordDict
from flwr.clientapp import ClientApp

from edprf_core import merge_forests
from edprf_core.encoding import encode_labels
from protocol import load_global_model
from protocol.messages import RESULT_KEY
from tests.forged_releases import REFUSED_ATTACKS, forge_release_bytes

from .test_simulation import _settings

pytestmark = pytest.mark.slow

HONEST = 3
HOSTILE_PARTITION = HONEST  # the last simulated party


class ForgingClientApp(ClientApp):
    """The federation's ClientApp, except that one partition forges the counts of its train replies."""

    def __init__(self, honest: ClientApp, partition: int, attack: str, schema) -> None:
        super().__init__()
        self._honest, self._partition, self._attack, self._schema = honest, partition, attack, schema

    def __call__(self, message: Message, context) -> Message:
        reply = self._honest(message, context)
        if (
            int(context.node_config["partition-id"]) != self._partition
            or message.metadata.message_type != MessageType.TRAIN
            or reply.has_error()
        ):
            return reply
        record = reply.content[RESULT_KEY]
        forged = forge_release_bytes(bytes(record["release"]), self._schema, self._attack)
        return Message(
            RecordDict({RESULT_KEY: ConfigRecord({"status": "released", "release": forged})}), reply_to=message
        )


def _accuracy(forest, X, truth, **kw) -> float:
    return float(np.mean(np.argmax(forest.predict_proba(X, **kw), axis=1) == truth))


@pytest.mark.parametrize("attack", ["rarest-class", "labels-rotated", "one-class-per-tree"])
def test_a_party_forging_its_counts_is_accepted_and_bounded(tmp_path, attack):
    from edprf_fl.simulation import prepare_workspace
    from edprf_fl.simulation._engine import _client_app, _server_app
    from edprf_fl.simulation._in_process_engine import run_in_process
    from server import MODEL_FILE, REPORT_FILE

    out = tmp_path / "out"
    workspace = prepare_workspace(
        _settings(parties=HONEST + 1, n_trees=2, party_holdout=0.0, evaluation_epsilon=0.0), out
    )
    cfg = replace(workspace.config, output_dir=str(out))
    X_test, y_test, schema = workspace.X_test, workspace.y_test, workspace.schema
    app = ForgingClientApp(_client_app({"sim-dir": cfg.sim_dir}), HOSTILE_PARTITION, attack, schema)
    run_in_process(_server_app(cfg), app, HONEST + 1)

    report = json.loads((out / REPORT_FILE).read_text())
    assert report["status"] == "completed", report
    assert [p["status"] for p in report["parties"]] == ["accepted"] * (HONEST + 1)  # it conforms: nothing to reject
    model = load_global_model(out / MODEL_FILE)
    hostile_id = f"party-{HOSTILE_PARTITION:04d}"
    releases = {r.party_id: r.forest for r in model.releases}
    honest_ids = sorted(p for p in releases if p != hostile_id)
    assert len(honest_ids) == HONEST and hostile_id in releases
    forged = releases[hostile_id]
    assert (
        not np.array_equal(forged.trees.leaf_counts, np.zeros_like(forged.trees.leaf_counts)) or attack == "zero-counts"
    )

    truth = encode_labels(y_test, schema)
    merged = merge_forests([releases[p] for p in [*honest_ids, hostile_id]], labels=[*honest_ids, hostile_id])
    honest = merge_forests([releases[p] for p in honest_ids], labels=honest_ids)
    drop_one = merge_forests([releases[p] for p in honest_ids[1:]], labels=honest_ids[1:])
    acc_honest, acc_drop = _accuracy(honest, X_test, truth), _accuracy(drop_one, X_test, truth)
    goal = acc_honest - max(0.0, acc_honest - acc_drop) - 0.02
    got = _accuracy(model.forest, X_test, truth)
    assert got >= goal, (attack, got, acc_honest, acc_drop)
    assert report["central_evaluation"]["accuracy"] >= goal, report["central_evaluation"]
    if attack == "rarest-class":  # the attack: without the bound it takes the model
        assert _accuracy(merged, X_test, truth, tolerated_parties=0) < goal - 0.2


@pytest.mark.parametrize("attack", REFUSED_ATTACKS)
def test_a_party_forging_its_tree_shapes_is_rejected(tmp_path, attack):
    from edprf_fl.simulation import prepare_workspace
    from edprf_fl.simulation._engine import _client_app, _server_app
    from edprf_fl.simulation._in_process_engine import run_in_process
    from server import MODEL_FILE, REPORT_FILE

    out = tmp_path / "out"
    workspace = prepare_workspace(
        _settings(parties=HONEST + 1, n_trees=2, party_holdout=0.0, evaluation_epsilon=0.0), out
    )
    cfg = replace(workspace.config, output_dir=str(out))
    app = ForgingClientApp(_client_app({"sim-dir": cfg.sim_dir}), HOSTILE_PARTITION, attack, workspace.schema)
    run_in_process(_server_app(cfg), app, HONEST + 1)

    report = json.loads((out / REPORT_FILE).read_text())
    assert report["status"] == "completed", report
    hostile_id = f"party-{HOSTILE_PARTITION:04d}"
    accepted = sorted(p["party_id"] for p in report["parties"] if p["status"] == "accepted")
    assert accepted == [f"party-{i:04d}" for i in range(HONEST)]
    (hostile,) = [p for p in report["parties"] if p["status"] == "rejected"]  # unsigned: its party id is not trusted
    assert hostile["reason"] == "bad_structure"
    assert "a leaf at depth 0 of a depth-5 tree with split candidates left" in hostile["message"]
    assert hostile_id not in {r.party_id for r in load_global_model(out / MODEL_FILE).releases}
