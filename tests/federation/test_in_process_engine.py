"""The in-process simulation engine: Flower's message semantics without Ray, and the same federation as Ray's."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest
from flwr.app import ConfigRecord, Context, Message, MessageType, RecordDict
from flwr.clientapp import ClientApp
from flwr.common.constant import SUPERLINK_NODE_ID, ErrorCode
from flwr.serverapp import Grid, ServerApp
from flwr.supercore.task_identity import TaskIdentity

from edprf_fl.simulation._in_process_engine import InProcessGrid, run_in_process


def party_nodes(app: ClientApp, node_ids) -> dict:
    """The in-process grid's nodes: ``app`` on each node id, partition ids 0, 1, ... in that order (run 5)."""
    return {
        node: (
            app,
            Context(
                run_id=5,
                node_id=node,
                node_config={"partition-id": k, "num-partitions": len(node_ids)},
                state=RecordDict(),
                run_config={},
            ),
        )
        for k, node in enumerate(node_ids)
    }


def _echo_app(seen: list) -> ClientApp:
    app = ClientApp()

    @app.train()
    def train(msg: Message, context: Context) -> Message:
        seen.append((msg, context))
        if msg.content.config_records["q"]["fail"]:
            raise RuntimeError("party broke")
        context.state.config_records["calls"] = ConfigRecord(
            {"n": int(context.state.config_records["calls"]["n"]) + 1 if "calls" in context.state.config_records else 1}
        )
        reply = ConfigRecord(
            {"partition": context.node_config["partition-id"], "echo": msg.content.config_records["q"]["x"]}
        )
        return Message(RecordDict({"r": reply}), reply_to=msg)

    return app


def _server(rounds: list, fail_node: int | None = None, timeout: float | None = None) -> ServerApp:
    app = ServerApp()

    @app.main()
    def main(grid: Grid, context: Context) -> None:
        nodes = sorted(grid.get_node_ids())
        for _ in range(2):
            sent = [
                Message(
                    RecordDict({"q": ConfigRecord({"x": b"\x00payload", "fail": node == fail_node})}),
                    dst_node_id=node,
                    message_type=MessageType.TRAIN,
                )
                for node in nodes
            ]
            rounds.append((sent, list(grid.send_and_receive(sent, timeout=timeout)), context.run_id))

    return app


def test_messages_reach_every_party_through_the_wire_form_and_replies_come_back():
    seen, rounds = [], []
    saved = (TaskIdentity._run_id, TaskIdentity._node_id, TaskIdentity._task_id)
    grid = run_in_process(_server(rounds), _echo_app(seen), 4)
    assert (TaskIdentity._run_id, TaskIdentity._node_id, TaskIdentity._task_id) == saved  # restored
    assert grid.messages_sent == 8 and grid.bytes_sent > 0
    sent, replies, run_id = rounds[0]
    assert len(replies) == 4
    received = {m.metadata.dst_node_id: (m, c) for m, c in seen[:4]}
    for message in sent:
        got, context = received[message.metadata.dst_node_id]
        assert got is not message  # the party gets its own copy, rebuilt from the protobuf form
        assert got.metadata.message_id and got.metadata.message_id == message.metadata.message_id
        assert got.metadata.src_node_id == SUPERLINK_NODE_ID and got.metadata.run_id == run_id
        assert got.content.config_records["q"]["x"] == b"\x00payload"
        assert context.node_id == message.metadata.dst_node_id and context.run_id == run_id
        assert context.node_config["num-partitions"] == 4
    assert sorted(c.node_config["partition-id"] for _, c in seen[:4]) == [0, 1, 2, 3]
    by_message = {m.metadata.message_id: m for m in sent}
    for reply in replies:
        asked = by_message[reply.metadata.reply_to_message_id]
        assert reply.metadata.src_node_id == asked.metadata.dst_node_id
        assert reply.content.config_records["r"]["echo"] == b"\x00payload"
    # each node keeps one context for the run: the second round sees the state the first left
    assert all(int(c.state.config_records["calls"]["n"]) == 2 for _, c in seen[4:])


def test_a_party_that_raises_gets_flowers_error_reply_and_the_others_go_on():
    seen, rounds = [], []
    failing = {}

    app = ServerApp()

    @app.main()
    def main(grid: Grid, context: Context) -> None:
        nodes = sorted(grid.get_node_ids())
        failing["node"] = nodes[1]
        sent = [
            Message(
                RecordDict({"q": ConfigRecord({"x": b"", "fail": node == nodes[1]})}),
                dst_node_id=node,
                message_type=MessageType.TRAIN,
            )
            for node in nodes
        ]
        rounds.append(list(grid.send_and_receive(sent)))

    run_in_process(app, _echo_app(seen), 3)
    replies = {r.metadata.src_node_id: r for r in rounds[0]}
    assert len(replies) == 3
    bad = replies[failing["node"]]
    assert bad.has_error() and bad.error.code == ErrorCode.CLIENT_APP_RAISED_EXCEPTION
    assert "party broke" in bad.error.reason
    assert sum(not r.has_error() for r in replies.values()) == 2


def test_messages_whose_turn_comes_after_the_timeout_get_no_reply():
    seen = []
    ticks = iter(np.arange(0.0, 100.0, 1.0))  # one second per look at the clock

    app = _echo_app(seen)
    nodes = party_nodes(app, (11, 12, 13, 14))
    from flwr.supercore.run import Run

    grid = InProcessGrid(Run.create_empty(run_id=5), nodes, clock=lambda: float(next(ticks)))
    saved = (TaskIdentity._run_id, TaskIdentity._node_id, TaskIdentity._task_id)
    TaskIdentity.run_id, TaskIdentity.node_id, TaskIdentity.task_id = 5, SUPERLINK_NODE_ID, 1
    try:
        sent = [
            Message(
                RecordDict({"q": ConfigRecord({"x": b"", "fail": False})}),
                dst_node_id=node,
                message_type=MessageType.TRAIN,
            )
            for node in nodes
        ]
        replies = list(grid.send_and_receive(sent, timeout=2.5))
        with pytest.raises(ValueError, match="not a valid instruction"):
            grid.push_messages([replies[0]])  # a reply is not an instruction
        with pytest.raises(ValueError, match="not a valid instruction"):
            grid.push_messages([Message(RecordDict(), dst_node_id=99, message_type=MessageType.TRAIN)])
    finally:
        TaskIdentity._run_id, TaskIdentity._node_id, TaskIdentity._task_id = saved
    # clock: 0 at the start (deadline 2.5), then 1 and 2 before the first two deliveries, 3 > deadline
    assert sorted(r.metadata.src_node_id for r in replies) == [11, 12]


def test_num_supernodes_must_be_positive():
    with pytest.raises(ValueError, match="num_supernodes: expected an integer >= 1, got 0"):
        run_in_process(ServerApp(), ClientApp(), 0)


def _forest_arrays(path) -> dict:
    """Each party's released trees (node ids, and so the merge order, are random per run)."""
    from protocol import load_global_model

    out = {}
    for release in load_global_model(path).releases:
        out[release.party_id] = {
            name: np.asarray(value)
            for name, value in vars(release.forest.trees).items()
            if isinstance(value, np.ndarray)
        }
    return out


@pytest.mark.slow
@pytest.mark.ray
def test_the_in_process_engine_gives_the_federation_flowers_ray_engine_gives(tmp_path):
    """Same workspace, research seeds: both engines produce the same trees, counts and metrics.

    No party hold-out: each party's hold-out split is keyed by a secret it draws itself, so two
    workspaces would train on different rows whatever the engine."""
    from edprf_fl.simulation import prepare_workspace, simulate_federation
    from server import MODEL_FILE, REPORT_FILE

    from .test_simulation import _settings

    reports, forests = {}, {}
    for engine in ("in-process", "ray"):
        out = tmp_path / engine
        cfg = prepare_workspace(
            _settings(parties=3, seeded_noise=True, party_holdout=0.0, evaluation_epsilon=0.0), out
        ).config
        simulate_federation(replace(cfg, output_dir=str(out)), 3, engine=engine)
        reports[engine] = json.loads((out / REPORT_FILE).read_text())
        forests[engine] = _forest_arrays(out / MODEL_FILE)
    a, b = reports["in-process"], reports["ray"]
    assert a["status"] == b["status"] == "completed"
    assert [p["status"] for p in a["parties"]] == [p["status"] for p in b["parties"]] == ["accepted"] * 3
    _assert_close_metrics(a["central_evaluation"], b["central_evaluation"])
    assert {p["party_id"]: p["max_depth"] for p in a["parties"]} == {
        p["party_id"]: p["max_depth"] for p in b["parties"]
    }
    assert forests["in-process"].keys() == forests["ray"].keys() and forests["ray"]
    for party, arrays in forests["in-process"].items():
        assert arrays and arrays.keys() == forests["ray"][party].keys()
        for name, values in arrays.items():
            np.testing.assert_array_equal(values, forests["ray"][party][name], err_msg=f"{party} {name}")


@pytest.mark.slow
def test_a_seeded_research_run_is_reproducible_hold_out_included(tmp_path):
    """--seeded-noise with the same --seed: same hold-out rows, same trees, same noisy evaluation counts.

    In production the workspace leaves the hold-out key to each party (drawn by the party, in its ledger)."""
    from edprf_fl.simulation import prepare_workspace, run_simulation

    from .test_simulation import _settings

    runs = [
        run_simulation(
            _settings(parties=3, seed=3, party_holdout=0.2, evaluation_epsilon=0.5, baselines=False), tmp_path / n
        ).federated
        for n in ("a", "b")
    ]
    assert runs[0]["central_evaluation"] == runs[1]["central_evaluation"]
    for key in ("noisy_correct", "noisy_total", "per_party"):
        got = [r["federated_evaluation"][key] for r in runs]
        if key == "per_party":  # node ids are random per run
            got = [sorted((p["accuracy"], tuple(p["ci95"])) for p in g) for g in got]
        assert got[0] == got[1], key
    prepare_workspace(_settings(parties=2, seeded_noise=False), tmp_path / "production")
    assert not (tmp_path / "production" / "workspace" / "party-0000" / "ledger.sqlite").exists()


def _assert_close_metrics(a: dict, b: dict) -> None:
    """Same keys; numbers (and intervals) within 1e-9 relative, text and missing values equal."""
    assert a.keys() == b.keys()
    for key, value in a.items():
        other = b[key]
        if isinstance(value, float) and isinstance(other, float):
            assert value == pytest.approx(other, rel=1e-9), key
        elif isinstance(value, list) and isinstance(other, list) and len(value) == len(other):
            for x, y in zip(value, other):
                assert (x == y) if x is None or y is None else x == pytest.approx(y, rel=1e-9), key
        else:
            assert value == other, key
