"""Run a ServerApp and its ClientApps in this process, without Ray: the fast simulation engine.

Flower's simulation engine (``run_simulation``) starts a Ray cluster and runs
every ClientApp call in a Ray actor.  For this package's work (one train and
one evaluate message per party, a short training each) that start-up was
almost the whole run (``benchmarks/results/simulation_speed.md``).

:class:`InProcessGrid` is a :class:`flwr.serverapp.Grid` that hands each
message to the destination party's real :class:`flwr.clientapp.ClientApp`
in this process, one after another.  What the apps see is what a SuperLink
would give them:

* every message and every reply goes through Flower's protobuf wire form
  (``message_to_proto`` / ``message_from_proto``) and arrives as a fresh
  object, so nothing is shared by reference between coordinator and parties;
* instruction messages get a message id and must be valid instructions
  (no ``reply_to``, positive TTL), as the SuperLink checks;
* a ClientApp that raises gets an error reply (``CLIENT_APP_RAISED_EXCEPTION``)
  carrying the exception's type and text, as Flower's simulation worker does;
* each node keeps one :class:`flwr.app.Context` for the run, with the node
  config Flower's simulation gives (``partition-id``, ``num-partitions``);
* ``send_and_receive`` honours its timeout: a message whose turn comes after
  the deadline gets no reply (the party is reported as not answering).

Parties run one after another, so a run is deterministic in its order; there
is no process or thread per party, no network socket, and Ctrl-C stops the
run at once.  ``flwr run`` (simulation and deployment) is unaffected: it uses
Flower's own engine and transport.
"""

from __future__ import annotations

import secrets
import time
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from flwr.app import Context, Error, Message, MessageType, RecordDict
from flwr.clientapp import ClientApp
from flwr.common.constant import SUPERLINK_NODE_ID, ErrorCode
from flwr.common.serde import message_from_proto, message_to_proto
from flwr.serverapp import Grid, ServerApp
from flwr.supercore.run import Run
from flwr.supercore.task_identity import TaskIdentity

from edprf_core.count_text import count_text
from edprf_fl import raise_if_interrupted
from protocol import ReplyStatus
from protocol.messages import RESULT_KEY

from ._progress import Progress, Throttle, _quiet, seconds_text

__all__ = ["InProcessGrid", "run_in_process"]

_DONE = {MessageType.TRAIN: "trained", MessageType.EVALUATE: "evaluated"}
"""What a count line says of the parties done, by message type (others: "answered")."""
_KIND = {
    MessageType.TRAIN: "train request",
    MessageType.EVALUATE: "evaluate request",
    MessageType.QUERY: "readiness query",
}

_ID_BITS = 63  # Flower's node and run ids are random unsigned 64-bit integers; stay in sint64 range


def _refusals(replies: list[Message]) -> tuple[int, int]:
    """``(refused, failed)``: the replies whose result record says refused, and the error replies
    (a ClientApp that raised).  A reply without a result record counts as neither (a test's own app)."""
    refused = failed = 0
    for reply in replies:
        if reply.has_error():
            failed += 1
        elif RESULT_KEY in reply.content.config_records:
            refused += reply.content.config_records[RESULT_KEY].get("status") == ReplyStatus.REFUSED
    return refused, failed


def _over_the_wire(message: Message) -> Message:
    """The message as the other side would receive it: serialized to Flower's protobuf form and back."""
    return message_from_proto(message_to_proto(message))


@dataclass
class _Node:
    app: ClientApp
    context: Context
    replies: dict[str, Message] = field(default_factory=dict)


class InProcessGrid(Grid):
    """A :class:`~flwr.serverapp.Grid` whose nodes are ClientApps called in this process.

    Parameters
    ----------
    run : flwr.supercore.run.Run
        The run the messages belong to.
    nodes : mapping of int to (ClientApp, Context)
        Each node id's app and the context it keeps for the run.
    clock : callable, optional
        Monotonic clock for timeouts and progress lines (tests pass a fake one).
    progress : callable, optional
        Receives, during :meth:`send_and_receive`, how many parties have answered so far (at most one line every
        :data:`~edprf_fl.simulation._progress.PROGRESS_EVERY` seconds of ``clock``) and one line per party whose
        turn came after the round's timeout.  Local output of the simulation: no party or coordinator sees it.
    """

    def __init__(
        self,
        run: Run,
        nodes: Mapping[int, tuple[ClientApp, Context]],
        clock=time.monotonic,
        progress: Progress = _quiet,
    ) -> None:
        self._run = run
        self._nodes = {node_id: _Node(app, context) for node_id, (app, context) in nodes.items()}
        self._clock = clock
        self._progress = progress
        self.messages_sent = 0
        self.bytes_sent = 0

    def set_run(self, run: Run) -> None:
        if not isinstance(run, Run):
            raise TypeError(f"run: expected a flwr Run, got {type(run).__name__}")
        self._run = run

    @property
    def run(self) -> Run:
        return Run(**vars(self._run))

    def create_message(
        self, content: RecordDict, message_type: str, dst_node_id: int, group_id: str, ttl: float | None = None
    ) -> Message:
        return Message(content, dst_node_id, message_type, ttl=ttl, group_id=group_id)

    def get_node_ids(self) -> Iterable[int]:
        return list(self._nodes)

    def _deliver(self, message: Message) -> str:
        raise_if_interrupted()  # a Ctrl-C that a finalizer dropped during the previous party's work stops here
        meta = message.metadata
        if meta.reply_to_message_id or not meta.ttl > 0 or meta.dst_node_id not in self._nodes:
            raise ValueError(f"not a valid instruction message for this grid: {meta}")
        meta.__dict__["_message_id"] = uuid.uuid4().hex
        proto = message_to_proto(message)
        self.messages_sent += 1
        self.bytes_sent += proto.ByteSize()
        node = self._nodes[meta.dst_node_id]
        received = message_from_proto(proto)
        try:
            reply = node.app(received, node.context)
        except (KeyboardInterrupt, SystemExit):
            raise
        except Exception as exc:  # noqa: BLE001  (what Flower's simulation worker replies when a ClientApp raises)
            reply = Message(
                Error(code=ErrorCode.CLIENT_APP_RAISED_EXCEPTION, reason=f"{type(exc)}:<'{exc}'>"), reply_to=received
            )
        reply = _over_the_wire(reply)
        reply.metadata.__dict__["_message_id"] = uuid.uuid4().hex
        node.replies[meta.message_id] = reply
        return meta.message_id

    def push_messages(self, messages: Iterable[Message]) -> Iterable[str]:
        """Deliver each message now; its reply waits for :meth:`pull_messages`."""
        return [self._deliver(m) for m in messages]

    def pull_messages(self, message_ids: Iterable[str]) -> Iterable[Message]:
        wanted = set(message_ids)
        out = []
        for node in self._nodes.values():
            for message_id in wanted & node.replies.keys():
                out.append(node.replies.pop(message_id))
        return out

    def send_and_receive(self, messages: Iterable[Message], *, timeout: float | None = None) -> Iterable[Message]:
        """Deliver the messages in order; those whose turn comes after ``timeout`` seconds get no reply."""
        messages = list(messages)
        start = self._clock()
        deadline = None if timeout is None else start + timeout
        throttle = Throttle(self._progress, clock=self._clock, started=start)
        ids: list[str] = []
        for k, message in enumerate(messages):
            now = self._clock()  # one look per message: the deadline and the count line read the same time
            if k:
                done = _DONE.get(messages[k - 1].metadata.message_type, "answered")
                throttle.tick(lambda done=done: f"      {done} {len(ids)} of {len(messages)} parties", now=now)
            if deadline is not None and now >= deadline:
                for late in messages[k:]:
                    self._progress(
                        f"      {self._party_name(late.metadata.dst_node_id)} missed the round timeout "
                        f"({seconds_text(timeout)}): its {_KIND.get(late.metadata.message_type, 'request')} got no reply"
                    )
                break
            ids.append(self._deliver(message))
        replies = list(self.pull_messages(ids))
        if ids and messages[0].metadata.message_type in _DONE:  # a train or evaluate round (not readiness)
            done = _DONE[messages[0].metadata.message_type]
            seconds = seconds_text(self._clock() - start)
            of = f"{len(ids)} of {count_text(len(messages), 'party', 'parties')}"
            refused, failed = _refusals(replies)
            if refused or failed:  # "trained 5 of 5" when every party refused would say the opposite of what happened
                self._progress(
                    f"      {of} answered in {seconds}: {len(ids) - refused - failed} {done}, {refused} "
                    f"refused, {failed} failed (the run's report gives each party's reason)"
                )
            else:
                self._progress(f"      {done} {of} in {seconds}")
        return replies

    def _party_name(self, node_id: int) -> str:
        """The simulated party's name (its workspace directory, ``party-NNNN``), else the node id."""
        node = self._nodes.get(node_id)
        partition = node.context.node_config.get("partition-id") if node is not None else None
        return f"party-{int(partition):04d}" if isinstance(partition, int) else f"node {node_id}"


def run_in_process(
    server_app: ServerApp,
    client_app: ClientApp,
    num_supernodes: int,
    run_config: Mapping[str, object] | None = None,
    progress: Progress = _quiet,
) -> InProcessGrid:
    """Run ``server_app`` against ``num_supernodes`` copies of ``client_app`` in this process.

    Node ``i`` gets the node config ``{"partition-id": i, "num-partitions": num_supernodes}``
    and a random node id, as in Flower's simulation.  Returns the grid (message counts).  ``progress``: the
    grid's (:class:`InProcessGrid`).
    """
    if num_supernodes < 1:
        raise ValueError(f"num_supernodes: expected an integer >= 1, got {num_supernodes!r}")
    run_id = secrets.randbits(_ID_BITS)
    run = Run.create_empty(run_id=run_id)
    config = dict(run_config or {})
    nodes: dict[int, tuple[ClientApp, Context]] = {}
    while len(nodes) < num_supernodes:
        node_id = secrets.randbits(_ID_BITS)
        if node_id in nodes or node_id == SUPERLINK_NODE_ID:
            continue
        partition = len(nodes)
        nodes[node_id] = (
            client_app,
            Context(
                run_id=run_id,
                node_id=node_id,
                node_config={"partition-id": partition, "num-partitions": num_supernodes},
                state=RecordDict(),
                run_config=dict(config),
            ),
        )
    grid = InProcessGrid(run, nodes, progress=progress)
    saved = (TaskIdentity._run_id, TaskIdentity._node_id, TaskIdentity._task_id)
    # the coordinator's messages are built with the process's task identity, as in Flower's own
    # in-process API (run_simulation); restored afterwards
    TaskIdentity.run_id, TaskIdentity.node_id, TaskIdentity.task_id = run_id, SUPERLINK_NODE_ID, 1
    try:
        server_app(
            grid,
            Context(
                run_id=run_id, node_id=SUPERLINK_NODE_ID, node_config={}, state=RecordDict(), run_config=dict(config)
            ),
        )
    finally:
        TaskIdentity._run_id, TaskIdentity._node_id, TaskIdentity._task_id = saved
    return grid
