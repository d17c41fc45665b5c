"""Train and evaluate requests served by a party's real Flower handlers, production settings.

A request here carries no seed (the party draws from the operating system with the exact
OpenDP samplers), asks for the automatic depth (capped by ``max_depth``), and goes through
:func:`client._flower_handlers.handle_train` / ``handle_evaluate`` with a real Flower
``Message`` and ``Context``, as a deployed ClientApp receives it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from flwr.app import ConfigRecord, Context, Message, MessageType, RecordDict
from flwr.supercore.task_identity import TaskIdentity

from client import (
    HOLDOUT_SALT_KEY,
    BudgetLedger,
    PartySetup,
    handle_evaluate,
    handle_query,
    handle_train,
    load_policy,
)
from edprf_core import load_schema
from protocol import INSPECTION_POLICY, build_global_model, decode_release
from protocol.messages import METRICS_KEY, MODEL_KEY, REQUEST_KEY, RESULT_KEY, EvaluateRequest, TrainRequest

__all__ = [
    "TrainSettings",
    "flower_task_identity",
    "global_model",
    "ledger",
    "metrics_of",
    "release_of",
    "result_of",
    "send_evaluate",
    "send_query",
    "send_request",
    "send_train",
    "share_salt",
    "train_request",
]


@pytest.fixture(scope="module")
def flower_task_identity() -> Iterator[None]:
    """Messages need a task identity; a real run sets it, these tests set a fixed one."""
    saved = (TaskIdentity._run_id, TaskIdentity._node_id, TaskIdentity._task_id)
    TaskIdentity.run_id, TaskIdentity.node_id, TaskIdentity.task_id = 1, 2, 3
    yield
    TaskIdentity._run_id, TaskIdentity._node_id, TaskIdentity._task_id = saved


@dataclass(frozen=True)
class TrainSettings:
    """The public parameters of a production train request (no seed, automatic depth)."""

    leaf: str = "counts"
    split_mode: str = "binary"
    n_trees: int = 2
    max_depth: int = 6
    n_bins: int = 8
    epsilon: float = 1.0
    depth_rule: str = "auto"
    marginals_share: float = 0.0
    marginals_bins: int = 0


def _context(setup: PartySetup) -> Context:
    node_config = {
        "data-path": str(setup.data_path),
        "schema-path": str(setup.schema_path),
        "policy-path": str(setup.policy_path),
        "ledger-path": str(setup.ledger_path),
        **({} if setup.data_header else {"data-header": False}),
        **({} if setup.signing_key_path is None else {"signing-key": str(setup.signing_key_path)}),
    }
    return Context(run_id=1, node_id=2, node_config=node_config, state=RecordDict(), run_config={})


def send_train(setup: PartySetup, settings: TrainSettings, request_id: str = "run1/train") -> Message:
    return _send(setup, settings, request_id, MessageType.TRAIN)


def send_query(setup: PartySetup, settings: TrainSettings, request_id: str = "run1/train") -> Message:
    """The readiness query of that train request (``client.handle_query``)."""
    return _send(setup, settings, request_id, MessageType.QUERY)


def _send(setup: PartySetup, settings: TrainSettings, request_id: str, message_type: str) -> Message:
    return send_request(setup, train_request(setup, settings, request_id), message_type)


def train_request(setup: PartySetup, settings: TrainSettings, request_id: str = "run1/train", seed: int = -1):
    """The :class:`TrainRequest` of ``settings`` (``seed`` -1: none, as production sends)."""
    return TrainRequest(
        request_id=request_id,
        run_id="run1",
        schema_fingerprint=load_schema(setup.schema_path).fingerprint,
        epsilon=settings.epsilon,
        max_depth=settings.max_depth,
        n_trees=settings.n_trees,
        split_mode=settings.split_mode,
        n_bins=settings.n_bins,
        relation="add-remove",
        seed=seed,
        leaf=settings.leaf,
        depth_rule=settings.depth_rule,
        marginals_share=settings.marginals_share,
        marginals_bins=settings.marginals_bins,
    )


def send_request(
    setup: PartySetup, req: TrainRequest, message_type: str = MessageType.TRAIN, run_config: dict | None = None
) -> Message:
    """``req`` through the party's real Flower handler of ``message_type`` (train, or its readiness query), under
    the run's ``run_config`` (a ``round-timeout``, say)."""
    msg = Message(
        content=RecordDict({REQUEST_KEY: ConfigRecord(req.to_record())}), dst_node_id=2, message_type=message_type
    )
    return (handle_query if message_type == MessageType.QUERY else handle_train)(msg, _context(setup), run_config)


def send_evaluate(
    setup: PartySetup, model: bytes, epsilon: float, request_id: str = "run1/evaluate", run_config: dict | None = None
) -> Message:
    req = EvaluateRequest(request_id=request_id, run_id="run1", epsilon=epsilon, exact=False)
    content = RecordDict({REQUEST_KEY: ConfigRecord(req.to_record()), MODEL_KEY: ConfigRecord({"bytes": model})})
    msg = Message(content=content, dst_node_id=2, message_type=MessageType.EVALUATE)
    return handle_evaluate(msg, _context(setup), run_config)


def result_of(reply: Message) -> dict[str, Any]:
    return dict(reply.content.config_records[RESULT_KEY])


def metrics_of(reply: Message) -> dict[str, Any]:
    return dict(reply.content.metric_records[METRICS_KEY])


def release_of(setup: PartySetup, reply: Message):
    """The decoded release of a train reply (fails the test on any other status)."""
    result = result_of(reply)
    assert result["status"] == "released", result
    return decode_release(result["release"], load_schema(setup.schema_path), INSPECTION_POLICY)


def global_model(release) -> bytes:
    return build_global_model(release.forest.schema, [release], {"run_id": "run1"})


def ledger(setup: PartySetup) -> BudgetLedger:
    return BudgetLedger(setup.ledger_path, load_policy(setup.policy_path).lifetime_epsilon_cap)


def share_salt(setup: PartySetup, salt: str) -> None:
    """Store ``salt`` as the party's held-out salt before its first request (D and D' share it)."""
    assert ledger(setup).secret(HOLDOUT_SALT_KEY, lambda: salt) == salt
