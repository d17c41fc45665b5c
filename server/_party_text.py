"""Bounded, printable text from parties: what the coordinator stores and shows.

Refusal messages, reason codes and error texts come from parties and are
untrusted: an 8 MiB message of NUL bytes became a 50 MB model and report (JSON
escapes each NUL as six bytes).  Everything a party wrote is cut to a fixed
number of printable characters before it reaches the report, the model's
manifest or the log, so their sizes grow with the number of parties only.
"""

from __future__ import annotations

import re

__all__ = ["MAX_PARTY_TEXT", "party_reason", "party_text"]

MAX_PARTY_TEXT = 200
"""Characters kept of any text a party sent."""

_REASON = re.compile(r"[a-z][a-z0-9_]{0,47}")


def party_text(value: object, cap: int = MAX_PARTY_TEXT) -> str:
    """``value`` as at most ``cap`` printable characters (others become '?'), marked when cut."""
    text = value if isinstance(value, str) else repr(type(value).__name__) if not isinstance(value, bytes) else ""
    head = text[: cap + 1]
    clean = "".join(c if c.isprintable() else "?" for c in head[:cap])
    return clean + (f"... ({len(text)} characters)" if len(text) > cap else "")


def party_reason(value: object) -> str:
    """A reason code as sent, if it looks like one (lower-case, <= 48 characters); else 'unrecognised'."""
    return value if isinstance(value, str) and _REASON.fullmatch(value) else "unrecognised"
