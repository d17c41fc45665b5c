"""The one rule for run and request ids, shared by requests, the party and the release encoder.

An id travels inside signed releases, into the party's ledger and onto operators'
terminals, so it is short and printable: a request whose ids break this rule is
refused before anything is reserved or computed (see :mod:`client._party`).
"""

from __future__ import annotations

__all__ = ["MAX_ID_CHARS", "check_request_id"]

MAX_ID_CHARS = 256
"""Longest run or request id, in characters."""


def check_request_id(value: object, name: str, *, required: bool = False) -> str:
    """Return ``value`` if it is an id: a str of at most :data:`MAX_ID_CHARS` printable characters.

    ``required`` also refuses the empty string.  Raises ValueError otherwise; the message
    gives the length only, never the (untrusted) text.
    """
    if not isinstance(value, str) or len(value) > MAX_ID_CHARS or not value.isprintable() or (required and not value):
        if not isinstance(value, str):
            got = type(value).__name__
        else:
            got = f"{len(value)} characters" + ("" if value.isprintable() else ", some unprintable")
        raise ValueError(f"{name}: expected {1 if required else 0} to {MAX_ID_CHARS} printable characters, got {got}")
    return value
