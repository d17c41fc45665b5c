"""Strict protobuf parsing: one valid encoding per message.

Protobuf parsers accept unknown fields, repeated occurrences of a singular
field, unpacked repeated scalars and explicit default values.  Each of these
is a place to hide extra bytes (a covert channel for data) or to make two
different byte strings mean the same release.  The decoders accept only
bytes equal to the deterministic serialization of what they parsed, with
unknown fields discarded.
"""

from __future__ import annotations

from typing import TypeVar

from google.protobuf.message import DecodeError, Message

from ._errors import InvalidRelease, Reason

__all__ = ["parse_canonical", "serialize_canonical"]

M = TypeVar("M", bound=Message)


def serialize_canonical(message: Message) -> bytes:
    """Deterministic serialization (fields in number order, packed, no defaults)."""
    return message.SerializeToString(deterministic=True)


def parse_canonical(message_type: type[M], data: bytes, what: str) -> M:
    """Parse ``data`` as ``message_type`` and require its canonical encoding.

    Parameters
    ----------
    message_type : protobuf message class
    data : bytes
    what : str
        Name used in error messages ("SignedRelease", "release 3", ...).

    Raises
    ------
    InvalidRelease
        ``malformed`` when the bytes do not parse, carry unknown fields or
        are not the canonical encoding.
    """
    message = message_type()
    try:
        message.ParseFromString(data)
    except (DecodeError, RuntimeError, ValueError) as exc:
        # upb raises DecodeError; RecursionError (a RuntimeError) guards depth
        raise InvalidRelease(
            Reason.MALFORMED, f"{what}: expected a {message_type.__name__} message, got bytes that do not parse ({exc})"
        ) from None
    message.DiscardUnknownFields()
    if serialize_canonical(message) != data:
        raise InvalidRelease(
            Reason.MALFORMED,
            f"{what}: expected the canonical encoding of a {message_type.__name__} "
            f"(known fields only, in field order, packed, no explicit defaults), got {len(data)} other bytes",
        )
    return message
