"""Two SuperNodes run from copies of one party's state (crash and concurrency review, stop 56, finding 3).

Each copy holds the whole ledger, so each may spend the party's whole cap on the same records, and neither ledger
can see the other's spend: nothing at the party can notice.  What the coordinator can do, it does: its readiness
round names the nodes that answer as one party before anything is spent, and its train round keeps the first
release and names the node of the first in the second's rejection, saying what two different releases mean
(deploy/README.md section 3 tells operators never to run such copies).
"""

from __future__ import annotations

import logging
import shutil

import pytest
from flwr.app import Context, Message, MessageType, RecordDict

from client import PartySetup, handle_query, handle_train
from server import CoordinatorConfig, PartyStatus, run_federation

from .test_party_hardening import _write_party
from .test_waiting_for_parties import serverapp_identity  # noqa: F401 (a fixture)


class _TwoCopiesGrid:
    """Nodes 1 and 2 run the real party handlers on two copies of one party's directory."""

    def __init__(self, setups: dict[int, PartySetup]) -> None:
        self.setups = setups

    def get_node_ids(self) -> list[int]:
        return list(self.setups)

    def get_nodes(self) -> list:
        return []

    def send_and_receive(self, messages, timeout=None):
        replies = []
        for m in messages:
            node = m.metadata.dst_node_id
            setup = self.setups[node]
            config = {
                "data-path": str(setup.data_path),
                "schema-path": str(setup.schema_path),
                "policy-path": str(setup.policy_path),
                "ledger-path": str(setup.ledger_path),
            }
            context = Context(run_id=1, node_id=node, node_config=config, state=RecordDict(), run_config={})
            handler = handle_query if m.metadata.message_type == MessageType.QUERY else handle_train
            reply = handler(Message(m.content, metadata=m.metadata), context)
            reply.metadata.__dict__["_src_node_id"] = node
            replies.append(reply)
        return replies


def _two_copies(tmp_path) -> tuple[dict[int, PartySetup], object]:
    (tmp_path / "a").mkdir()
    setup, schema = _write_party(tmp_path / "a")
    shutil.copytree(tmp_path / "a", tmp_path / "b")  # a standby host made from a copy of the party's directory
    b = tmp_path / "b"
    copy = PartySetup(b / "data.csv", b / "schema.toml", b / "policy.toml", b / "ledger.sqlite")
    return {1: setup, 2: copy}, schema


@pytest.mark.privacy  # in the gate: mutation campaign 3 (stop 56)
def test_two_copies_of_one_party_are_named_before_and_after_they_spend(tmp_path, caplog, serverapp_identity):  # noqa: F811
    setups, schema = _two_copies(tmp_path)
    schema.save(tmp_path / "schema.toml")
    cfg = CoordinatorConfig(
        schema_path=str(tmp_path / "schema.toml"),
        output_dir=str(tmp_path / "out"),
        min_parties=1,
        node_wait_timeout=0.0,
        evaluation_epsilon=0.0,
        spend_record="none",
        max_depth=3,
        n_trees=1,
    )
    with caplog.at_level(logging.WARNING, logger="edprf"):
        report = run_federation(_TwoCopiesGrid(setups), cfg, "7")
    assert "readiness: nodes 1, 2 all answer as party hospital-a" in caplog.text
    assert "copies of one party's state" in caplog.text
    outcomes = {p.node_id: p for p in report.parties}
    assert outcomes[1].status == PartyStatus.ACCEPTED
    second = outcomes[2]
    assert (second.status, second.reason) == (PartyStatus.REJECTED, "duplicate_party")
    assert second.message.startswith("party 'hospital-a' already contributed to this run from node 1: two nodes")
    assert "copies of one party's state" in second.message
