"""A party that signs conforming releases with forged leaf counts, in the in-process simulation (issue 20).

The hostile party runs the real party ClientApp (it trains and releases as asked, so its release
has the requested parameters and honest shapes) and then replaces the counts of its own release
(``tests/forged_releases.py``) before replying.  The coordinator must accept it (nothing it can
check is wrong), the run must complete, and the global model must stay within the goal of issue
20: no worse than the honest parties' model minus what dropping one honest party costs, minus 2
points.  The same forests pooled without the bound (``tolerated_parties=0``) must fail that goal
for the headline attack: the test would notice the bound going away.
"""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest
from flwr.app import ConfigRecord, Message, MessageType, RecordDict
from flwr.clientapp import ClientApp

from edprf_core import encode_labels, merge_forests
from protocol import load_global_model
from protocol._task import RESULT_KEY
from tests.forged_releases import forge_release_bytes

from .test_simulation import _args

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
    from edprf_fl.cli._simulate import prepare_workspace
    from edprf_fl.simulation._engine import _client_app, _server_app
    from edprf_fl.simulation._in_process_engine import run_in_process
    from server import MODEL_FILE, REPORT_FILE

    out = tmp_path / "out"
    cfg, (_, _, X_test, y_test, _, schema, *_) = prepare_workspace(
        _args(parties=HONEST + 1, n_trees=2, party_holdout=0.0, evaluation_epsilon=0.0),
        out,
        progress=lambda _: None,
    )
    cfg = replace(cfg, output_dir=str(out))
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
