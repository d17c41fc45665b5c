"""Opening a SignedRelease: size cap, strict parsing, version, party, provenance.

Everything here runs without the schema, so tools can show who sent what
under which parameters before (or without) checking the trees.
"""

from __future__ import annotations

from dataclasses import dataclass

from edprf_core import TrainingParameters

from . import release_pb2 as pb
from ._canonical import parse_canonical
from ._errors import InvalidRelease, Reason
from ._ids import MAX_ID_CHARS, check_request_id
from ._parameters import check_party_id, parameters_from_message
from ._registry import PartyKeyRegistry
from ._signature import SignatureCheck, check_signature

__all__ = [
    "FORMAT_VERSION",
    "MAX_ID_CHARS",
    "ReleaseEnvelope",
    "ReleaseHeader",
    "as_bytes",
    "check_request_id",
    "open_envelope",
    "read_release_header",
]

FORMAT_VERSION = 2
"""The one version :func:`protocol.encode_release` writes and a decoder reads (2: with the marginals part)."""


@dataclass(frozen=True)
class ReleaseEnvelope:
    """A parsed SignedRelease whose Release passed the version and party checks."""

    raw: bytes
    signed: pb.SignedRelease
    release: pb.Release
    signature: SignatureCheck


@dataclass(frozen=True)
class ReleaseHeader:
    """What a release says about itself, before its trees are checked.

    Attributes
    ----------
    format_version : int
    party_id : str
    run_id, request_id : str
        What the release answers.
    schema_fingerprint : str
    parameters : TrainingParameters
    n_trees, n_nodes : int
        Lengths of the tree arrays as sent (not yet validated).
    key_id : str
        Claimed signing key ("" when unsigned).
    signature : SignatureCheck
    """

    format_version: int
    party_id: str
    schema_fingerprint: str
    parameters: TrainingParameters
    n_trees: int
    n_nodes: int
    key_id: str
    signature: SignatureCheck


def as_bytes(data: bytes | bytearray | memoryview) -> bytes:
    """``data`` as immutable bytes; TypeError for anything else (a caller's bug, not bad data)."""
    if isinstance(data, (bytes, bytearray, memoryview)):
        return bytes(data)
    raise TypeError(f"data: expected bytes, got {type(data).__name__}")


def open_envelope(
    data: bytes, max_bytes: int, registry: PartyKeyRegistry | None, what: str = "release"
) -> ReleaseEnvelope:
    """Size cap, strict parse of both layers, format version, party id, signature status.

    The signature status is computed but not enforced (see
    :attr:`SignatureCheck.failure_reason`).
    """
    if len(data) > max_bytes:
        raise InvalidRelease(Reason.TOO_LARGE, f"{what}: expected at most {max_bytes} bytes, got {len(data)}")
    signed = parse_canonical(pb.SignedRelease, data, f"{what} (SignedRelease)")
    release = parse_canonical(pb.Release, signed.release, f"{what} (Release)")
    if release.format_version != FORMAT_VERSION:
        raise InvalidRelease(
            Reason.UNKNOWN_VERSION,
            f"{what}: format_version expected {FORMAT_VERSION}, got {release.format_version}",
        )
    try:
        check_party_id(release.party_id)
        check_request_id(release.run_id, "run_id")
        check_request_id(release.request_id, "request_id")
    except ValueError as exc:
        raise InvalidRelease(Reason.BAD_PARAMETERS, f"{what}: {exc}") from None
    return ReleaseEnvelope(
        raw=data, signed=signed, release=release, signature=check_signature(signed, release.party_id, registry)
    )


def read_release_header(
    data: bytes | bytearray | memoryview, max_bytes: int, registry: PartyKeyRegistry | None = None
) -> ReleaseHeader:
    """Read a release's self-description without a schema (for inspection).

    Signatures are checked against ``registry`` when given but not enforced:
    see ``header.signature.status``.  The trees are *not* validated; use
    :func:`protocol.decode_release` for that.

    Raises
    ------
    InvalidRelease
        ``too_large``, ``malformed``, ``unknown_version`` or ``bad_parameters``.
    """
    envelope = open_envelope(as_bytes(data), max_bytes, registry)
    release = envelope.release
    return ReleaseHeader(
        format_version=release.format_version,
        party_id=release.party_id,
        schema_fingerprint=release.schema_fingerprint,
        parameters=parameters_from_message(release.parameters),
        n_trees=len(release.trees.nodes_per_tree),
        n_nodes=len(release.trees.feature),
        key_id=envelope.signed.key_id,
        signature=envelope.signature,
    )
