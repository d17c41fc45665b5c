"""Translate Flower messages to :class:`Party` calls and back.

Nothing unpaid leaves a party: every exception of any type (``BaseException``
except ``KeyboardInterrupt``, ``SystemExit`` and ``GeneratorExit``, which stop
the process) becomes a reply with a reason code from :data:`client.REASONS`.
A :class:`Refusal` carries its own audited message (policy rules, requested
values, never data); every other failure replies with a constant text per
code, and its detail (exception text, traceback) goes only to the party's log.

Every refusal is also kept in the party's ledger (``refusals``: the request's ids, its kind, the ε it asked and the
reason code, never the text; review rev-dpo D4) before the reply is built, when the party's ledger could be opened
for this message (a party that cannot be set up, its policy or ledger unusable, keeps its log line only).  A
failure to write that row is logged and changes nothing in the reply; the write comes after the refusal is
decided and before the hold, so a refusal decided before any row is read still leaves at the hold's time, and its
own time depends on the ledger, not the data.  A ``bad_request`` refusal (no party built) opens the ledger alone for
its row.  Privacy cost: none (a local record; no reply gains anything).
"""

from __future__ import annotations

import errno
import logging
import os
import re
import sqlite3
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from flwr.app import ConfigRecord, Context, Message, MetricRecord, RecordDict

from protocol import RefusalReason, ReplyStatus
from protocol.messages import METRICS_KEY, MODEL_KEY, REQUEST_KEY, RESULT_KEY, EvaluateRequest, TrainRequest

from ._disk_space import low_disk_text
from ._ledger import BudgetLedger, audit_writer
from ._ledger_audit import AuditWriter
from ._party import STOPPING, Party, PartySetup, Recipient, Refusal
from ._policy import load_policy
from ._reply_timing import hold_problem, hold_reply, message_reached, round_timeout_seconds

__all__ = ["handle_evaluate", "handle_query", "handle_train"]

log = logging.getLogger("edprf.party")

_CONSTANT_TEXT = {
    RefusalReason.BAD_REQUEST: "the request record is missing keys or holds values of the wrong kind",
    RefusalReason.PARTY_SETUP: "the party is not set up correctly; details are in its log",
    RefusalReason.INTERNAL_ERROR: "the party failed while serving the request; details are in its log",
}


def _refused(msg: Message, reason: RefusalReason, message: str, party_id: str = "", request_id: str = "") -> RecordDict:
    # the party's log names the request (a reply's text need not: the coordinator knows what it sent)
    asked = f" (request {request_id})" if request_id else ""
    log.warning("refused %s%s: %s (%s)", msg.metadata.message_type, asked, reason, message)
    record = ConfigRecord({"status": str(ReplyStatus.REFUSED), "reason": str(reason), "message": message})
    if party_id:  # public (the policy's id, also in every release): lets the coordinator's report name the party
        record["party-id"] = party_id
    return RecordDict({RESULT_KEY: record})


def _party_id(party: Party | None, context: Context, run_config: Mapping[str, Any] | None) -> str:
    """The policy's party-id, when the policy can be read (it is public); '' otherwise."""
    if party is not None:
        return party.policy.party_id
    try:
        merged = {**context.run_config, **(run_config or {})}
        return load_policy(PartySetup.from_configs(context.node_config, merged).policy_path).party_id
    except (ValueError, OSError):  # an unreadable policy is the party_setup refusal itself
        return ""


def _party(context: Context, run_config: Mapping[str, Any] | None, started: float | None = None) -> Party:
    """The party of this node and run; from ``started`` (a :func:`message_reached` reading) on, it reserves
    nothing once the run's ``round-timeout`` has passed (the coordinator, whose clock started earlier, has
    stopped waiting)."""
    merged = {**context.run_config, **(run_config or {})}
    timeout = round_timeout_seconds(merged.get("round-timeout"))
    reserve_by = started + timeout if started is not None and timeout is not None else None
    recipient = Recipient(node_id=str(context.node_id), app=_installed_app())
    party = Party(PartySetup.from_configs(context.node_config, merged), reserve_by=reserve_by, recipient=recipient)
    if problem := hold_problem(party.policy.reply_after_seconds, timeout):
        raise ValueError(problem)  # party_setup, before any epsilon is reserved (the readiness answer too)
    return party


_FAB_DIR = re.compile(r".+\.[0-9a-f]{8}")


def _installed_app() -> str:
    """The FAB hash prefix of the installed app this module runs from (Flower installs a FAB under
    ``<FLWR_HOME>/apps/<publisher>.<name>.<version>.<hash[:8]>``), or ``""`` (a simulation, a source directory)."""
    app_dir = Path(__file__).resolve().parents[1]
    if app_dir.parent.name != "apps" or not _FAB_DIR.fullmatch(app_dir.name):
        return ""
    return app_dir.name.rsplit(".", 1)[1]


_KINDS = {"train": "train", "evaluate": "evaluate", "query": "ready"}
"""The kind a refusal is kept under, by Flower message type (``query``: the readiness round)."""


def _record_refusal(
    msg: Message, party: Party | None, req: Any, reason: RefusalReason, context: Context, run_config: Any
) -> None:
    """Keep a refusal in the party's ledger (``refusals``): request parameters and the reason code only.

    ``party`` is None when the request could not be read (``bad_request``, checked before the party is built) or the
    party could not be set up.  For the first, only the ledger is opened, for this row (:func:`_refusal_writer`:
    the policy for the party's id, then the ledger file; no schema, key or data, and at most
    :data:`client._ledger_audit.AUDIT_LOCK_SECONDS` waiting for the lock); a party that cannot be set up records
    nothing.  Never raises: a failure is logged at WARNING and the reply stays what it was."""
    request = req[0] if isinstance(req, tuple) else req
    try:
        if party is None:
            if reason != RefusalReason.BAD_REQUEST:
                return  # party_setup before the ledger was opened: nothing to record it in
            writer: BudgetLedger | AuditWriter = _refusal_writer(context, run_config)
        else:
            writer = party.ledger
        writer.record_refusal(
            getattr(request, "request_id", ""),
            getattr(request, "run_id", "") or str(msg.metadata.run_id),
            _KINDS.get(msg.metadata.message_type, "unknown"),
            None if getattr(request, "exact", 0) else getattr(request, "epsilon", None),
            str(reason),
        )
    except STOPPING:
        raise
    except BaseException as exc:  # noqa: BLE001 - the record is best effort: the reply must not change
        log.warning(
            "the refusal could not be kept in the ledger (%s: %s); the reply is unchanged", type(exc).__name__, exc
        )


def _refusal_writer(context: Context, run_config: Any) -> BudgetLedger | AuditWriter:
    """What keeps a ``bad_request`` refusal: the writer of audit rows of the party's ledger
    (:func:`client._ledger.audit_writer`), which refuses a ledger of another version or party.  A ledger not created
    yet (the party's first message) is created by :class:`client.BudgetLedger` from the policy, as the party would
    create it (the row is then kept, as before; there is no lock to wait for in a new file).

    Raises
    ------
    ValueError, OSError, sqlite3.Error
        The node config or the policy cannot be read, or the ledger cannot be created: for the caller to log.
    """
    merged = {**context.run_config, **(run_config or {})}
    setup = PartySetup.from_configs(context.node_config, merged)
    policy = load_policy(setup.policy_path)
    path = setup.ledger_path
    if not os.path.lexists(path) or (path.is_file() and path.stat().st_size == 0):
        return BudgetLedger(path, policy.lifetime_epsilon_cap, policy.party_id, relation=policy.relation)
    return audit_writer(path, policy.party_id)


def _serve(
    msg: Message,
    context: Context,
    run_config: Mapping[str, Any] | None,
    read_request: Callable[[Message], Any],
    serve: Callable[[Party, Any], RecordDict],
    held: bool = True,
) -> Message:
    """Three steps, each mapping every failure to one code: request, party set-up, the work.

    ``held``: once the party's policy is read, the reply, whatever it is, waits until the policy's
    ``reply-after-seconds`` after this call, or, for an evaluation that got past its model checks, after those
    checks (:attr:`client.Party.hold_from`; :mod:`client._reply_timing`); a party that cannot be set up
    replies at once (its refusal reads no data).  The reply message is built after the hold: Flower stamps a
    message's ``created_at`` and ``ttl`` when it is built, and they travel to the coordinator.
    """
    started = message_reached()
    step = RefusalReason.BAD_REQUEST
    party = req = None
    try:
        req = read_request(msg)
        step = RefusalReason.PARTY_SETUP
        party = _party(context, run_config, started)
        step = RefusalReason.INTERNAL_ERROR
        content = serve(party, req)
    except Refusal as exc:
        content = _refused(msg, exc.reason, str(exc), _party_id(party, context, run_config), _request_id(req))
        _record_refusal(msg, party, req, exc.reason, context, run_config)
    except STOPPING:
        raise
    except BaseException as exc:
        if step == RefusalReason.PARTY_SETUP and isinstance(exc, ValueError):
            # the party's own configuration (schema edited after the policy, a missing file, a bad ledger):
            # its message names the file and the fix; the party's log gets that line, not a traceback
            log.error(
                "%s refused (party_setup): %s; `edprf party check --node-config ...` lists every problem",
                msg.metadata.message_type,
                exc,
            )
        elif full := _full_disk(exc, party):
            # the operator's fix is one line; the traceback only at DEBUG (the reply's text is constant either way)
            log.error(
                "%s failed (%s): %s; nothing was released, and what the ledger recorded before the failure stays "
                "counted (`edprf budget` shows it): make room on that disk",
                msg.metadata.message_type,
                step,
                full,
            )
            log.debug("%s: the write that failed", msg.metadata.message_type, exc_info=True)
        else:
            log.exception("%s failed (%s)", msg.metadata.message_type, step)
        content = _refused(msg, step, _CONSTANT_TEXT[step], _party_id(party, context, run_config))
        _record_refusal(msg, party, req, step, context, run_config)
    if held and party is not None:
        # an evaluation's hold counts from the end of its model checks (Party.hold_from): their time is the model's
        held_from = started if party.hold_from is None else party.hold_from
        hold_reply(held_from, party.policy.reply_after_seconds, msg.metadata.message_type)
    return Message(content, reply_to=msg)  # built now: its timestamps are the hold's, not the work's


def _full_disk(exc: BaseException, party: Party | None = None) -> str | None:
    """What a write to a full disk (or over a quota) says, for the party's log; None for any other failure.

    SQLite says ``database or disk is full`` (``SQLITE_FULL``) when the ledger cannot grow, and ``disk I/O error``
    when it cannot size its shared-memory file there (any other SQLite error on a nearly full ledger disk is said
    as that disk's state, :func:`client._disk_space.low_disk_text`); a file write says ``ENOSPC`` or ``EDQUOT``.
    """
    if isinstance(exc, sqlite3.Error) and getattr(exc, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL:
        return f"the disk holding the ledger is full (SQLite: {exc})"
    if isinstance(exc, sqlite3.Error) and party is not None and (low := low_disk_text(party.setup.ledger_path)):
        return f"SQLite: {exc}; {low}"
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return f"the disk is full ({exc.filename + ': ' if exc.filename else ''}{exc.strerror})"
    return None


def _request_id(req: TrainRequest | tuple[EvaluateRequest, bytes] | None) -> str:
    """The id of a request that was read ("" before that), for the party's log."""
    request = req[0] if isinstance(req, tuple) else req
    return request.request_id if request is not None else ""


def _read_train(msg: Message) -> TrainRequest:
    return TrainRequest.from_record(dict(msg.content.config_records[REQUEST_KEY]))


def _read_evaluate(msg: Message) -> tuple[EvaluateRequest, bytes]:
    req = EvaluateRequest.from_record(dict(msg.content.config_records[REQUEST_KEY]))
    model = msg.content.config_records[MODEL_KEY]["bytes"]
    if not isinstance(model, bytes):
        raise TypeError(f"model: expected bytes, got {type(model).__name__}")
    return req, model


def _train(party: Party, req: TrainRequest) -> RecordDict:
    payload = party.train(req)
    record = ConfigRecord(
        {"status": str(ReplyStatus.RELEASED), "release": payload, "binding": party.bind(payload, req.run_id)}
    )
    return RecordDict({RESULT_KEY: record})


def _query(party: Party, req: TrainRequest) -> RecordDict:
    status = ReplyStatus.READY if party.ready(req) else ReplyStatus.WOULD_RESEND
    return RecordDict({RESULT_KEY: ConfigRecord({"status": str(status), "party-id": party.policy.party_id})})


def _evaluate(party: Party, request: tuple[EvaluateRequest, bytes]) -> RecordDict:
    req, model = request
    metrics = dict(party.evaluate(model, req))
    sampler = str(metrics.pop("sampler"))
    return RecordDict(
        {
            RESULT_KEY: ConfigRecord({"status": str(ReplyStatus.EVALUATED), "sampler": sampler}),
            METRICS_KEY: MetricRecord(metrics),
        }
    )


def handle_train(msg: Message, context: Context, run_config: Mapping[str, Any] | None = None) -> Message:
    """Serve a train message; ``run_config`` overrides the context's (in-process simulation)."""
    return _serve(msg, context, run_config, _read_train, _train)


def handle_evaluate(msg: Message, context: Context, run_config: Mapping[str, Any] | None = None) -> Message:
    """Serve an evaluate message; ``run_config`` as in :func:`handle_train`."""
    return _serve(msg, context, run_config, _read_evaluate, _evaluate)


def handle_query(msg: Message, context: Context, run_config: Mapping[str, Any] | None = None) -> Message:
    """Answer a readiness query (the train request's record in a ``query`` message): ready, would resend, or the
    refusal a train request would get (:meth:`Party.ready`; no epsilon, no row read); ``run_config`` as in
    :func:`handle_train`."""
    return _serve(msg, context, run_config, _read_train, _query, held=False)
