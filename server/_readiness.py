"""The readiness round: before any party trains, ask each connected party whether it would serve the request.

A run with ``min-parties`` needs that many valid releases; a party at its lifetime cap, outside its policy, or
not registered refuses the train request, but only after the others have trained and charged their ledgers for
a model that is then never saved.  The readiness round sends the train request's record in Flower's ``query``
message first; each party answers from the request, its policy, its signing key and its ledger alone
(:meth:`client.Party.ready`: no row read, no epsilon): ``ready``, ``would_resend`` (it holds a release made
under that request id), or the refusal a train request would get.  When fewer than ``min-parties`` would serve,
the run fails before any train request is sent, so no party spends epsilon; otherwise the train round goes on
as before, to every connected party (the answers are advisory: a ledger can change in between, and the train
request is checked again).  A node that does not answer in time, or whose ClientApp fails (a ClientApp of an earlier
version without the query handler, a crash), counts as one that would serve; a node whose app-pinning launcher
refuses this app bundle (edprf_fl/_pinned_clientapp.py: its train request would be refused alike) does not.
A failed run reports each node as it answered.  Two nodes answering for one party id count once.

Privacy: the answers depend on no party's data; the round adds no epsilon and no release.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from flwr.app import ConfigRecord, Message, MessageType, RecordDict
from flwr.serverapp import Grid

from protocol import ReplyStatus
from protocol.messages import REQUEST_KEY, RESULT_KEY

from ._party_names import claimed_party_id
from ._round_trip import round_trip

__all__ = ["PIN_REFUSAL", "READINESS_SECONDS", "Readiness", "readiness_round"]

PIN_REFUSAL = re.compile(
    r"PermissionError'>:<'(?:app bundle |installed files of app bundle |files of the verified app bundle |app '.+?' "
    r"version )"
)
"""An error reason from a party's app-pinning launcher (edprf_fl/_pinned_clientapp.py): each of its refusals is a
``PermissionError`` whose text starts as one of these (Flower sends ``<class 'PermissionError'>:<'...'>``);
tests/federation/test_readiness.py renders every one the launcher raises."""

READINESS_SECONDS = 60.0
"""At most this long (or ``round-timeout`` when shorter) for the answers: a party decides from its ledger alone."""


@dataclass(frozen=True)
class Readiness:
    """The connected parties' answers, by node: the result records of those that would serve (ready, would
    resend) and of those that refused, the error text of those whose reply was an error or held no result (a
    ClientApp that failed, or one without the query handler), and the nodes that did not answer in time."""

    serving: dict[int, dict[str, Any]] = field(default_factory=dict)
    refused: dict[int, dict[str, Any]] = field(default_factory=dict)
    errored: dict[int, str] = field(default_factory=dict)
    silent: tuple[int, ...] = ()
    pinned_out: dict[int, str] = field(default_factory=dict)
    """Nodes whose error is the app-pinning launcher's refusal of this app bundle (edprf_fl/_pinned_clientapp.py,
    a ``PermissionError`` naming the app bundle): their train request would fail the same way, so they do not count
    as serving."""

    @property
    def would_serve(self) -> int:
        """The parties that may release: each party id that said so once (two SuperNodes serving one party make
        one release; the second is a ``duplicate_party``), each node that said so without an id, and every node
        that did not say (an error, no answer)."""
        named = {r.get("party-id") for r in self.serving.values() if r.get("party-id")}
        unnamed = sum(1 for r in self.serving.values() if not r.get("party-id"))
        return len(named) + unnamed + len(self.errored) + len(self.silent)

    @property
    def shared_party_ids(self) -> dict[str, list[int]]:
        """Each party id that more than one node answered for (a claim, not yet verified), with those nodes."""
        nodes: dict[str, list[int]] = {}
        for node, result in {**self.serving, **self.refused}.items():
            if party := claimed_party_id(result):
                nodes.setdefault(party, []).append(node)
        return {party: sorted(found) for party, found in sorted(nodes.items()) if len(found) > 1}


def readiness_round(grid: Grid, nodes: Iterable[int], request: Mapping[str, Any], timeout: float) -> Readiness:
    """Send ``request`` (the train request's record) to ``nodes`` as ``query`` messages; their answers.

    Privacy cost: none (no party reads a row or spends epsilon to answer).
    """
    nodes = list(nodes)
    messages = [
        Message(
            content=RecordDict({REQUEST_KEY: ConfigRecord(dict(request))}),
            dst_node_id=n,
            message_type=MessageType.QUERY,
        )
        for n in nodes
    ]
    replies = {r.metadata.src_node_id: r for r in round_trip(grid, messages, timeout=timeout)}
    serving: dict[int, dict[str, Any]] = {}
    refused: dict[int, dict[str, Any]] = {}
    errored: dict[int, str] = {}
    pinned_out: dict[int, str] = {}
    silent = []
    for node in nodes:
        reply = replies.get(node)
        if reply is None:
            silent.append(node)
            continue
        if reply.has_error():
            reason = str(reply.error.reason)
            (pinned_out if PIN_REFUSAL.search(reason) else errored)[node] = reason
            continue
        try:
            result = dict(reply.content.config_records[RESULT_KEY])
        except KeyError:
            errored[node] = "the reply holds no result record"
            continue
        status = result.get("status")
        if status in (ReplyStatus.READY, ReplyStatus.WOULD_RESEND):
            serving[node] = result
        elif status == ReplyStatus.REFUSED:
            refused[node] = result
        else:
            errored[node] = f"the reply's status is not an answer to the query (got {str(status)[:40]!r})"
    return Readiness(serving, refused, errored, tuple(silent), pinned_out)
