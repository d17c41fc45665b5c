"""The coordinator's status codes: one party's outcome in a run, and the run's own status.

String enums: a member *is* its string, so ``report.json`` and every comparison with a plain
string (``p.status == "accepted"``) are unchanged.
"""

from __future__ import annotations

from enum import StrEnum

__all__ = ["PartyStatus", "RunStatus"]


class PartyStatus(StrEnum):
    """What became of one node's answer to the train request."""

    ACCEPTED = "accepted"
    """Its release decoded, matched the request and is in the model."""
    DROPPED = "dropped"
    """Valid, but left out by selective aggregation or the quality test (``reason`` says which)."""
    REJECTED = "rejected"
    """The coordinator refused the reply (``reason``: a decoder :class:`protocol.Reason` or a request mismatch)."""
    REFUSED = "refused"
    """The party refused the request (``reason``: a :class:`protocol.RefusalReason`)."""
    FAILED = "failed"
    """Flower reported an error for the node (``reason = "client_error"``)."""
    NO_REPLY = "no_reply"
    """No reply within ``round-timeout`` (``reason = "timeout"``)."""


class RunStatus(StrEnum):
    """Where a run is: running until it ends ``completed`` (a model was saved) or ``failed``."""

    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
