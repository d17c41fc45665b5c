"""Translate Flower messages to :class:`Party` calls and back."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from flwr.app import ConfigRecord, Context, Message, MetricRecord, RecordDict

from protocol._task import METRICS_KEY, MODEL_KEY, REQUEST_KEY, RESULT_KEY, EvaluateRequest, TaskError, TrainRequest

from ._party import Party, PartySetup, Refusal

__all__ = ["handle_evaluate", "handle_train"]

log = logging.getLogger("edprf.party")


def _refused(msg: Message, reason: str, message: str) -> Message:
    log.warning("refused %s: %s (%s)", msg.metadata.message_type, reason, message)
    record = ConfigRecord({"status": "refused", "reason": reason, "message": message})
    return Message(RecordDict({RESULT_KEY: record}), reply_to=msg)


def _party(context: Context, run_config: Mapping[str, Any] | None) -> Party:
    merged = {**context.run_config, **(run_config or {})}
    return Party(PartySetup.from_configs(context.node_config, merged))


def handle_train(msg: Message, context: Context, run_config: Mapping[str, Any] | None = None) -> Message:
    """Serve a train message; ``run_config`` overrides the context's (in-process simulation)."""
    try:
        req = TrainRequest.from_record(dict(msg.content.config_records[REQUEST_KEY]))
        payload = _party(context, run_config).train(req)
    except Refusal as exc:
        return _refused(msg, exc.reason, str(exc))
    except (TaskError, KeyError) as exc:
        return _refused(msg, "bad_request", str(exc))
    except ValueError as exc:  # party set-up (policy, schema, paths): the operator's to fix
        log.error("party set-up error: %s", exc)
        return _refused(msg, "party_setup", "the party is not set up correctly; details are in its log")
    record = ConfigRecord({"status": "released", "release": payload})
    return Message(RecordDict({RESULT_KEY: record}), reply_to=msg)


def handle_evaluate(msg: Message, context: Context, run_config: Mapping[str, Any] | None = None) -> Message:
    """Serve an evaluate message; ``run_config`` as in :func:`handle_train`."""
    try:
        req = EvaluateRequest.from_record(dict(msg.content.config_records[REQUEST_KEY]))
        model = msg.content.config_records[MODEL_KEY]["bytes"]
        metrics = _party(context, run_config).evaluate(bytes(model), req)
    except Refusal as exc:
        return _refused(msg, exc.reason, str(exc))
    except (TaskError, KeyError) as exc:
        return _refused(msg, "bad_request", str(exc))
    except ValueError as exc:
        log.error("evaluation error: %s", exc)
        return _refused(msg, "party_setup", "the party could not evaluate; details are in its log")
    content = RecordDict({RESULT_KEY: ConfigRecord({"status": "evaluated"}), METRICS_KEY: MetricRecord(metrics)})
    return Message(content, reply_to=msg)
