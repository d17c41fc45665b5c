"""Neighbouring datasets D and D' = D + one hostile line: the coordinator sees the same thing.

For each hostile line, the party's real Flower handlers (train, then evaluate)
run on D and on D' with the same research seed.  Everything sent to the
coordinator must be identical except through DP outputs: the reply's status,
reason code and message, its fields and their types, the number of trees and
every tree's shape.  The DP outputs themselves (which splits, which labels,
the noised counts) differ in distribution only; the mechanisms' audit checks
those.  And the rows the party used differ by at most the hostile record:
every row of D is read the same way in D' (a per-record data path).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from flwr.app import ConfigRecord, Context, Message, MessageType, RecordDict
from flwr.supercore.task_identity import TaskIdentity

from client._flower_handlers import handle_evaluate, handle_train
from client._ledger import BudgetLedger
from edprf_core import load_schema
from protocol import INSPECTION_POLICY, build_global_model, decode_release
from protocol._task import METRICS_KEY, MODEL_KEY, REQUEST_KEY, RESULT_KEY, EvaluateRequest, TrainRequest

from ._neighbours import HOSTILE, file_bytes, make_party, row_multiset

SEED = 11


@pytest.fixture(autouse=True, scope="module")
def flower_task_identity() -> Iterator[None]:
    """Messages need a task identity; a real run sets it, these tests set a fixed one."""
    saved = (TaskIdentity._run_id, TaskIdentity._node_id, TaskIdentity._task_id)
    TaskIdentity.run_id, TaskIdentity.node_id, TaskIdentity.task_id = 1, 2, 3
    yield
    TaskIdentity._run_id, TaskIdentity._node_id, TaskIdentity._task_id = saved


def _context(setup) -> Context:
    node_config = {"data-path": str(setup.data_path), "schema-path": str(setup.schema_path),
                   "policy-path": str(setup.policy_path), "ledger-path": str(setup.ledger_path)}
    return Context(run_id=1, node_id=2, node_config=node_config, state=RecordDict(), run_config={})


def _train(setup, fingerprint: str) -> Message:
    req = TrainRequest(request_id="run1/train", run_id="run1", schema_fingerprint=fingerprint, epsilon=1.0,
                       max_depth=3, n_trees=2, split_mode="binary", n_bins=8, schedule="harmonic",
                       relation="add-remove", seed=SEED)
    msg = Message(content=RecordDict({REQUEST_KEY: ConfigRecord(req.to_record())}), dst_node_id=2,
                  message_type=MessageType.TRAIN)
    return handle_train(msg, _context(setup))


def _evaluate(setup, model: bytes) -> Message:
    req = EvaluateRequest(request_id="run1/evaluate", run_id="run1", epsilon=0.5, exact=False)
    content = RecordDict({REQUEST_KEY: ConfigRecord(req.to_record()), MODEL_KEY: ConfigRecord({"bytes": model})})
    msg = Message(content=content, dst_node_id=2, message_type=MessageType.EVALUATE)
    return handle_evaluate(msg, _context(setup))


def _shape_of_train(reply: Message, schema) -> tuple[dict, object]:
    result = dict(reply.content.config_records[RESULT_KEY])
    shape = {"records": sorted(reply.content.keys()), "fields": sorted(result),
             "status": result["status"], "reason": result.get("reason"), "message": result.get("message")}
    release = None
    if result["status"] == "released":
        release = decode_release(result["release"], schema, INSPECTION_POLICY)
        trees = release.forest.trees
        shape["n_trees"] = trees.n_trees
        shape["leaf_pattern"] = (trees.feature < 0).tolist()
        shape["tree_offsets"] = trees.tree_offsets.tolist()
        shape["parameters"] = release.forest.parts[0][1]
        shape["party"] = release.party_id
    return shape, release


def _shape_of_evaluation(reply: Message) -> dict:
    result = dict(reply.content.config_records[RESULT_KEY])
    shape = {"records": sorted(reply.content.keys()), "fields": sorted(result), "status": result["status"],
             "reason": result.get("reason"), "message": result.get("message")}
    if METRICS_KEY in reply.content.metric_records:
        metrics = dict(reply.content.metric_records[METRICS_KEY])
        shape["metrics"] = {k: type(v).__name__ for k, v in metrics.items()}
        shape["epsilon"] = metrics["epsilon"]
    return shape


@pytest.fixture(scope="module")
def baseline(tmp_path_factory) -> dict:
    """D: its replies, its model for the evaluation request, its rows."""
    root = tmp_path_factory.mktemp("neighbours-D")
    setup = make_party(root, file_bytes())
    fingerprint = load_schema(setup.schema_path).fingerprint
    train_shape, release = _train_and_shape(setup, fingerprint)
    assert train_shape["status"] == "released", train_shape
    model = build_global_model(release.forest.schema, [release], {"run_id": "run1"})
    eval_shape = _shape_of_evaluation(_evaluate(setup, model))
    assert eval_shape["status"] == "evaluated", eval_shape
    return {"train": train_shape, "evaluate": eval_shape, "model": model, "fingerprint": fingerprint,
            "data": setup.data_path.read_bytes()}


def _train_and_shape(setup, fingerprint):
    return _shape_of_train(_train(setup, fingerprint), load_schema(setup.schema_path))


def _salt(setup) -> str:
    return BudgetLedger(setup.ledger_path, 100.0).secret("holdout-salt", lambda: "0" * 32)


@pytest.mark.parametrize(("name", "line", "where"), HOSTILE, ids=[h[0] for h in HOSTILE])
def test_one_hostile_record_changes_nothing_but_dp_outputs(tmp_path: Path, baseline, name, line, where):
    setup = make_party(tmp_path / "party", file_bytes(line, where))
    train_shape, _ = _train_and_shape(setup, baseline["fingerprint"])
    assert train_shape == baseline["train"], f"{name}: the train reply differs beyond DP outputs"
    eval_shape = _shape_of_evaluation(_evaluate(setup, baseline["model"]))
    assert eval_shape == baseline["evaluate"], f"{name}: the evaluation reply differs beyond DP outputs"


@pytest.mark.parametrize(("name", "line", "where"), HOSTILE, ids=[h[0] for h in HOSTILE])
def test_every_row_of_d_is_read_the_same_way_in_d_prime(tmp_path: Path, name, line, where):
    d = make_party(tmp_path / "d", file_bytes())
    d_prime = make_party(tmp_path / "d-prime", file_bytes(line, where))
    salt = "5a" * 16
    train, hold = row_multiset(d, salt)
    train2, hold2 = row_multiset(d_prime, salt)
    extra = (train2 - train) + (hold2 - hold)
    assert not (train - train2) and not (hold - hold2), f"{name}: a row of D was read differently or moved"
    assert sum(extra.values()) <= 1, f"{name}: more than the hostile record was added"


def test_the_harness_covers_at_least_30_hostile_records():
    assert len(HOSTILE) >= 30
    assert len({h[1] for h in HOSTILE}) == len(HOSTILE) - 1  # one line tested at two positions


def test_the_harness_sees_a_coupling_reader(tmp_path: Path, monkeypatch, baseline):
    """Power check: with pandas' column-wide inference the empty-label case must be caught."""
    import pandas as pd

    import client._local_data as local_data
    from edprf_core import TextTable

    def pandas_reader(path, schema, **_):
        frame = pd.read_csv(path)
        label = schema.label.column
        return TextTable(X=frame.drop(columns=[label]), y=frame[label],
                         line_numbers=np.arange(len(frame)) + 2, dropped=[])

    monkeypatch.setattr(local_data, "read_table", pandas_reader)
    setup = make_party(tmp_path / "party", file_bytes(b"30,007,1,", "middle"))
    salt = "5a" * 16
    d = make_party(tmp_path / "d", file_bytes())
    train, _ = row_multiset(d, salt)
    train2, _ = row_multiset(setup, salt)
    assert train - train2, "a coupling reader should lose D's rows when one label cell is empty"
