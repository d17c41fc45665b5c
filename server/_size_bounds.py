"""Upper bounds on what the coordinator writes and sends, as functions of the number of parties.

Every byte of the global model and of the report is either the coordinator's
own (configuration, schema, fixed-width numbers) or a party's: a release
(capped by ``max-release-bytes`` before it is decoded) or a text (a refusal
message, a reason code, a party id), cut by :mod:`server._party_text` to
``MAX_PARTY_TEXT`` printable characters.  So both files grow linearly in the
number of parties, whatever the parties send:

``model <= schema + config + n * (max_release_bytes + PARTY_ENTRY_BYTES)``.

:data:`PARTY_ENTRY_BYTES` is the worst case of one party's entry in the
report or the manifest: JSON escapes a printable character outside ASCII as
at most 12 bytes (a surrogate pair ``\\uXXXX\\uXXXX``), so a 200-character
message is at most 2,400 bytes, plus its "(N characters)" suffix, the reason
(<= 48 characters), the party id (<= 64 ASCII characters) and the fixed
fields.  The transport limit is Flower's gRPC message cap: a model above it
cannot be sent to the parties for evaluation.
"""

from __future__ import annotations

from ._party_text import MAX_PARTY_TEXT

__all__ = ["FIXED_BYTES", "PARTY_ENTRY_BYTES", "TRANSPORT_LIMIT", "model_bound", "report_bound"]

TRANSPORT_LIMIT = 2_147_483_647
"""Largest message Flower 1.41 sends (``flwr.supercore.grpc.GRPC_MAX_MESSAGE_LENGTH``)."""

PARTY_ENTRY_BYTES = 12 * MAX_PARTY_TEXT + 2048
"""Worst-case JSON bytes of one party's entry (report or manifest), see the module docstring."""

FIXED_BYTES = 1 << 16
"""Configuration, run id, timings, metrics and framing: the coordinator's own, independent of parties."""


def report_bound(n_parties: int) -> int:
    """Largest report (JSON bytes) of a run with ``n_parties`` parties, whatever they sent."""
    return FIXED_BYTES + n_parties * PARTY_ENTRY_BYTES


def model_bound(n_parties: int, max_release_bytes: int, schema_bytes: int) -> int:
    """Largest global model of a run with ``n_parties`` parties, whatever they sent."""
    return schema_bytes + report_bound(n_parties) + n_parties * max_release_bytes
