"""Translate Flower messages to :class:`Party` calls and back.

What a reply may carry (privacy: everything a party sends is an output)
----------------------------------------------------------------------
A reply is one of: a release (DP), noised evaluation counts (DP), or a refusal
with a reason code from :data:`REASONS` and a message.  A :class:`Refusal`'s
message names a policy rule and the *requested* values; it is decided before
the data are read, or (``invalid_local_data``) from the file's existence and
header only.  Every other exception, whatever its type (``MemoryError``,
``RecursionError``, ``sqlite3.Error``, a bug), becomes the constant reason
``internal_error`` with a constant message: its text, which may hold row
counts, values or lengths, stays in the party's own log.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from flwr.app import ConfigRecord, Context, Message, MetricRecord, RecordDict

from protocol._task import METRICS_KEY, MODEL_KEY, REQUEST_KEY, RESULT_KEY, EvaluateRequest, TaskError, TrainRequest

from ._party import Party, PartySetup, Refusal

__all__ = ["REASONS", "handle_evaluate", "handle_train"]

log = logging.getLogger("edprf.party")

REASONS = frozenset({
    "bad_request", "bad_model", "party_setup", "internal_error", "invalid_local_data", "budget_exhausted", "schema_mismatch",
    "epsilon_precision", "policy_epsilon", "policy_evaluation_epsilon", "policy_exact_metrics", "policy_depth",
    "policy_trees", "policy_bins", "policy_model_size", "policy_relation", "policy_seed", "request_id_reused", "request_spent",
})
"""Every reason code a party's refusal can carry."""

_CONSTANT_MESSAGES = {
    "bad_request": "the request is malformed; details are in the party's log",
    "party_setup": "the party is not set up correctly; details are in the party's log",
    "internal_error": "the party could not serve the request; details are in the party's log",
}
_INTERRUPTS = (KeyboardInterrupt, SystemExit, GeneratorExit)


def _refused(msg: Message, reason: str, message: str) -> Message:
    if reason not in REASONS:  # a programming error: never let a new code travel unreviewed
        log.error("unknown refusal reason %r; replying internal_error", reason)
        reason, message = "internal_error", _CONSTANT_MESSAGES["internal_error"]
    record = ConfigRecord({"status": "refused", "reason": reason, "message": message})
    return Message(RecordDict({RESULT_KEY: record}), reply_to=msg)


def _party(context: Context, run_config: Mapping[str, Any] | None) -> Party:
    merged = {**context.run_config, **(run_config or {})}
    try:
        return Party(PartySetup.from_configs(context.node_config, merged))
    except Refusal:
        raise
    except Exception as exc:
        log.exception("party set-up error")
        raise Refusal("party_setup", _CONSTANT_MESSAGES["party_setup"]) from exc


def _serve(msg: Message, work: Callable[[], RecordDict]) -> Message:
    """Run ``work``; any failure becomes a refusal whose text carries nothing from the data."""
    kind = msg.metadata.message_type
    try:
        return Message(work(), reply_to=msg)
    except _INTERRUPTS:
        raise
    except Refusal as exc:
        log.warning("refused %s: %s (%s)", kind, exc.reason, exc)
        return _refused(msg, exc.reason, str(exc))
    except (TaskError, KeyError, TypeError) as exc:
        log.warning("refused %s: bad request (%s)", kind, exc)
        return _refused(msg, "bad_request", _CONSTANT_MESSAGES["bad_request"])
    except BaseException:
        log.exception("could not serve %s", kind)
        return _refused(msg, "internal_error", _CONSTANT_MESSAGES["internal_error"])


def handle_train(msg: Message, context: Context, run_config: Mapping[str, Any] | None = None) -> Message:
    """Serve a train message; ``run_config`` overrides the context's (in-process simulation)."""

    def work() -> RecordDict:
        req = TrainRequest.from_record(dict(msg.content.config_records[REQUEST_KEY]))
        payload = _party(context, run_config).train(req)
        return RecordDict({RESULT_KEY: ConfigRecord({"status": "released", "release": payload})})

    return _serve(msg, work)


def handle_evaluate(msg: Message, context: Context, run_config: Mapping[str, Any] | None = None) -> Message:
    """Serve an evaluate message; ``run_config`` as in :func:`handle_train`."""

    def work() -> RecordDict:
        req = EvaluateRequest.from_record(dict(msg.content.config_records[REQUEST_KEY]))
        model = msg.content.config_records[MODEL_KEY]["bytes"]
        metrics = _party(context, run_config).evaluate(bytes(model), req)
        return RecordDict({RESULT_KEY: ConfigRecord({"status": "evaluated", "sampler": "exact"}),
                           METRICS_KEY: MetricRecord(metrics)})

    return _serve(msg, work)
