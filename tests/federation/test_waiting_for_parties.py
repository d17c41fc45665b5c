"""A run that waited for parties that did not connect (hospital IT walkthrough).

With one of three parties' SuperNode stopped, ``min-parties=3`` failed after node-wait-timeout with a text that
named no hospital, and report.json listed all three registered parties as absent, the two online ones
included.  Now the connected SuperNodes are named by their registration (the SuperNode authentication key
registered for each party, or the name it was registered under), and the failure names the party that did not
connect, or says plainly that which is not known.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from flwr.common.constant import SUPERLINK_NODE_ID
from flwr.proto.node_pb2 import NodeInfo
from flwr.supercore.task_identity import TaskIdentity

from edprf_core import example_schema
from protocol import generate_signing_key, save_public_key
from server import REPORT_FILE, CoordinatorConfig, RunStatus, run_federation
from server._connected_parties import supernode_key_owners
from server._summary import summary_lines

PARTIES = ("hospital-a", "hospital-b", "hospital-c")


class _Grid:
    """The SuperLink's view a ServerApp gets: the connected nodes with their registrations; nothing answers."""

    def __init__(self, nodes: list[NodeInfo]) -> None:
        self.nodes = nodes
        self.sent: list = []

    def get_node_ids(self) -> list[int]:
        return [n.node_id for n in self.nodes]

    def get_nodes(self) -> list[NodeInfo]:
        return list(self.nodes)

    def send_and_receive(self, messages, timeout=None):
        self.sent += list(messages)
        return []  # no party answers


@pytest.fixture
def consortium(tmp_path) -> dict:
    """The coordinator's files as the runbook lays them out: schema, party-keys (release signing) and
    supernode-keys (SuperNode authentication, ``<party>.auth.key.pub`` as registered); each party's node
    registration as Flower's Grid reports it (its key in PEM, the way ``flwr supernode register`` sends it)."""
    example_schema("wall_robot_navigation").save(tmp_path / "schema.toml")
    (tmp_path / "party-keys").mkdir()
    (tmp_path / "supernode-keys").mkdir()
    registered = {}
    for i, party in enumerate(PARTIES):
        save_public_key(generate_signing_key("ed25519").public_key(), tmp_path / "party-keys" / f"{party}.pub.pem")
        auth = ec.generate_private_key(ec.SECP384R1()).public_key()
        openssh = auth.public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
        (tmp_path / "supernode-keys" / f"{party}.auth.key.pub").write_bytes(openssh + b"\n")
        pem = auth.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        registered[party] = NodeInfo(node_id=1000 + i, public_key=pem)
    cfg = CoordinatorConfig(
        schema_path=str(tmp_path / "schema.toml"),
        keys_dir=str(tmp_path / "party-keys"),
        output_dir=str(tmp_path / "outputs" / "run-1"),
        min_parties=3,
        expected_parties=3,
        node_wait_timeout=0.0,
        evaluation_epsilon=0.0,
        spend_record="none",
    )
    return {"cfg": cfg, "nodes": registered, "dir": tmp_path}


@pytest.fixture
def serverapp_identity():
    """The run and node a ServerApp's messages carry (Flower sets them in the ServerApp's process)."""
    before = (TaskIdentity._run_id, TaskIdentity._node_id, TaskIdentity._task_id)
    TaskIdentity.run_id, TaskIdentity.node_id, TaskIdentity.task_id = 11, SUPERLINK_NODE_ID, 1
    try:
        yield
    finally:
        TaskIdentity._run_id, TaskIdentity._node_id, TaskIdentity._task_id = before


def _saved(cfg: CoordinatorConfig) -> dict:
    return json.loads((Path(cfg.output_dir) / REPORT_FILE).read_text())


def test_a_run_stopped_before_its_requests_names_the_party_that_did_not_connect(consortium):
    cfg, nodes = consortium["cfg"], consortium["nodes"]
    grid = _Grid([nodes["hospital-a"], nodes["hospital-b"]])  # hospital-c's SuperNode is stopped
    report = run_federation(grid, cfg, "7")
    assert report.status == RunStatus.FAILED and grid.sent == []
    assert report.failure.startswith(
        "2 of min-parties 3 connected within node-wait-timeout (0 s); not connected: hospital-c; no request was "
        "sent, so no party spent epsilon. Start those parties' SuperNodes (or give them longer"
    )
    saved = _saved(cfg)
    assert saved["absent_parties"] == ["hospital-c"] and saved["absent_parties_unknown"] == ""
    assert any("not connected: hospital-c" in line for line in summary_lines(report))


def test_a_node_registered_under_its_party_id_is_named_without_its_key(consortium):
    """``flwr supernode register --name hospital-a``: Flower keeps the name, and the Grid reports it."""
    cfg, nodes = consortium["cfg"], consortium["nodes"]
    named = [NodeInfo(node_id=nodes[p].node_id, name=p) for p in ("hospital-b", "hospital-c")]
    report = run_federation(_Grid(named), CoordinatorConfig(**{**vars(cfg), "supernode_keys_dir": "none"}), "8")
    assert report.absent_parties == ["hospital-a"]
    assert "not connected: hospital-a;" in report.failure


def test_two_nodes_registered_under_one_party_s_name_name_neither(consortium):
    """Flower keeps keys unique, not names: two nodes named hospital-a listed hospital-b as not connected (review)."""
    cfg, nodes = consortium["cfg"], consortium["nodes"]
    twins = [NodeInfo(node_id=nodes[p].node_id, name="hospital-a") for p in ("hospital-a", "hospital-b")]
    report = run_federation(_Grid(twins), CoordinatorConfig(**{**vars(cfg), "supernode_keys_dir": "none"}), "11")
    assert report.absent_parties is None
    assert "2 SuperNodes matched to no party" in report.failure and "hospital-b" not in report.failure


def test_when_a_connected_node_is_not_matched_the_missing_parties_are_not_guessed(consortium):
    """Without a key to match (SuperNode authentication off, a key missing from supernode-keys), the online
    parties are not listed as absent: absent_parties is null and the failure says which are not known, and how
    to find out."""
    cfg, nodes = consortium["cfg"], consortium["nodes"]
    (consortium["dir"] / "supernode-keys" / "hospital-b.auth.key.pub").unlink()
    report = run_federation(_Grid([nodes["hospital-a"], nodes["hospital-b"]]), cfg, "9")
    saved = _saved(cfg)
    assert saved["absent_parties"] is None
    assert saved["absent_parties_unknown"].startswith(
        "Which of the 3 registered parties (keys-dir) did not connect is not known before a request is sent: "
        "connected hospital-a, and 1 SuperNode matched to no party (supernode-keys-dir "
    )
    assert "`flwr supernode ls` shows each registered SuperNode's node id and status" in report.failure
    assert saved["absent_parties_unknown"] in report.failure
    assert "hospital-b" not in report.failure and "hospital-c" not in report.failure

    unkeyed = [NodeInfo(node_id=n.node_id) for n in (nodes["hospital-a"], nodes["hospital-c"])]
    bare = run_federation(_Grid(unkeyed), CoordinatorConfig(**{**vars(cfg), "overwrite": True}), "10")
    assert bare.absent_parties is None
    assert "is not known before a request is sent: 2 SuperNodes matched to no party" in bare.failure
    assert not any(p in bare.failure for p in PARTIES)


def test_a_run_going_on_without_a_party_names_it_in_its_warning(consortium, caplog, serverapp_identity):
    cfg, nodes = consortium["cfg"], consortium["nodes"]
    going_on = CoordinatorConfig(**{**vars(cfg), "min_parties": 2})
    grid = _Grid([nodes["hospital-a"], nodes["hospital-c"]])
    with caplog.at_level(logging.WARNING, logger="edprf.coordinator"):
        report = run_federation(grid, going_on, "11")
    assert [m.metadata.message_type for m in grid.sent] == ["query", "query", "train", "train"]  # both asked
    warnings = [r.getMessage() for r in caplog.records if "going on without the others" in r.getMessage()]
    said = "run 11: 2 of 3 expected parties connected within 0 s; going on without the others"
    assert warnings == [f"{said} (not connected: hospital-b)"]
    # after the request, absent means named by no reply: none of the three replied here
    assert report.absent_parties == list(PARTIES) and report.absent_parties_unknown == ""


def test_supernode_keys_dir_setting(consortium, tmp_path):
    cfg = consortium["cfg"]
    assert cfg.supernode_keys_path == consortium["dir"] / "supernode-keys"  # "auto": beside keys-dir
    assert CoordinatorConfig(**{**vars(cfg), "supernode_keys_dir": "none"}).supernode_keys_path is None
    assert CoordinatorConfig(**{**vars(cfg), "keys_dir": str(tmp_path / "k" / "keys")}).supernode_keys_path is None
    given = CoordinatorConfig.from_run_config({**cfg.run_config(), "supernode-keys-dir": "/etc/edprf/snk"})
    assert given.supernode_keys_path == Path("/etc/edprf/snk")
    with pytest.raises(ValueError, match="supernode-keys-dir: names the parties of keys-dir, which is not given"):
        CoordinatorConfig(schema_path="s.toml", supernode_keys_dir="/etc/edprf/snk")
    (consortium["dir"] / "supernode-keys" / "not a party!.auth.key.pub").write_text("ecdsa-sha2-nistp384 AAAA\n")
    (consortium["dir"] / "supernode-keys" / "hospital-d.auth.key.pub").write_text("not a key\n")
    assert sorted(supernode_key_owners(consortium["dir"] / "supernode-keys").values()) == list(PARTIES)


# ----------------------------------------------------------------------------- app pin refusals (review rev-day2)
PIN_REASON = "<class 'PermissionError'>:<'app bundle sha256:" + "ab" * 32 + " is not in the party's trusted list'>"


class _PinnedGrid(_Grid):
    """Every node's app pin refuses the bundle, in the readiness round and the train round alike."""

    def send_and_receive(self, messages, timeout=None):
        from flwr.app import Error, Message
        from flwr.common.constant import ErrorCode

        self.sent += list(messages)
        replies = []
        for m in messages:
            reply = Message(Error(code=ErrorCode.CLIENT_APP_RAISED_EXCEPTION, reason=PIN_REASON), reply_to=m)
            reply.metadata.__dict__["_src_node_id"] = m.metadata.dst_node_id
            replies.append(reply)
        return replies


@pytest.mark.parametrize("readiness_check", [True, False])
def test_a_pin_refusal_names_the_party_and_spent_nothing(consortium, caplog, serverapp_identity, readiness_check):
    """U8: pin refusals were named by node id only; U11: in the train round (readiness-check=false) one was listed as
    'may have spent', although the launcher refuses before any edprf code (or ledger) runs."""
    from server._failure_log import failure_lines

    cfg, nodes = consortium["cfg"], consortium["nodes"]
    run_cfg = CoordinatorConfig(**{**vars(cfg), "readiness_check": readiness_check})
    grid = _PinnedGrid([nodes[p] for p in PARTIES])
    with caplog.at_level(logging.INFO, logger="edprf.coordinator"):
        report = run_federation(grid, run_cfg, "12")
    assert report.status == RunStatus.FAILED
    assert {p.node_id: p.party_id for p in report.parties} == {nodes[p].node_id: p for p in PARTIES}
    b = nodes["hospital-b"].node_id
    assert f"hospital-b (node {b}) runs an app pin" in caplog.text
    text = "\n".join(failure_lines("12", report))
    assert "may have spent" not in text
    if readiness_check:
        assert "hospital-b (its SuperNode's app pin refuses this app bundle)" in caplog.text
        assert "spent nothing" not in text  # the readiness round says it: no train request was sent
    else:
        assert [m.metadata.message_type for m in grid.sent] == ["train"] * 3
        assert "spent nothing: hospital-a, hospital-b, hospital-c: its SuperNode's app pin refused" in text
        assert report.absent_parties == []  # each was heard from, by its registration
