"""The readiness round: before any party trains, ask each connected party whether it would serve the request.

A run with ``min-parties`` needs that many valid releases; a party at its lifetime cap, outside its policy, or
not registered refuses the train request, but only after the others have trained and charged their ledgers for
a model that is then never saved.  The readiness round sends the train request's record in Flower's ``query``
message first; each party answers from the request, its policy, its signing key and its ledger alone
(:meth:`client.Party.ready`: no row read, no epsilon): ``ready``, ``would_resend`` (it holds a release made
under that request id), or the refusal a train request would get.  When fewer than ``min-parties`` would serve,
the run fails before any train request is sent, so no party spends epsilon; otherwise the train round goes on
as before, to every connected party (the answers are advisory: a ledger can change in between, and the train
request is checked again).  A node that does not answer in time, or whose ClientApp has no query handler (an
earlier edprf-fl), counts as one that would serve.

Privacy: the answers depend on no party's data; the round adds no epsilon and no release.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from flwr.app import ConfigRecord, Message, MessageType, RecordDict
from flwr.serverapp import Grid

from protocol import ReplyStatus
from protocol.messages import REQUEST_KEY, RESULT_KEY

__all__ = ["READINESS_SECONDS", "Readiness", "readiness_round"]

READINESS_SECONDS = 60.0
"""At most this long (or ``round-timeout`` when shorter) for the answers: a party decides from its ledger alone."""


@dataclass(frozen=True)
class Readiness:
    """The connected parties' answers: refusals by node (the reply's result record), and the nodes that would
    serve (ready, would resend) or did not say (no answer in time, an error, an app without the query)."""

    refused: dict[int, dict[str, Any]] = field(default_factory=dict)
    serving: tuple[int, ...] = ()
    unanswered: tuple[int, ...] = ()

    @property
    def would_serve(self) -> int:
        """The parties that may release: those that said so and those that did not say."""
        return len(self.serving) + len(self.unanswered)


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
    replies = {r.metadata.src_node_id: r for r in grid.send_and_receive(messages, timeout=timeout)}
    refused: dict[int, dict[str, Any]] = {}
    serving, unanswered = [], []
    for node in nodes:
        result = _result(replies.get(node))
        status = result.get("status") if result is not None else None
        if status in (ReplyStatus.READY, ReplyStatus.WOULD_RESEND):
            serving.append(node)
        elif status == ReplyStatus.REFUSED:
            refused[node] = result
        else:
            unanswered.append(node)
    return Readiness(refused, tuple(serving), tuple(unanswered))


def _result(reply: Message | None) -> dict[str, Any] | None:
    """The reply's result record, or None for no reply, an error, or a reply without one."""
    if reply is None or reply.has_error():
        return None
    try:
        return dict(reply.content.config_records[RESULT_KEY])
    except KeyError:
        return None
