"""Signing the exact bytes of a Release and checking a signature's provenance."""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, ed25519

from . import release_pb2 as pb
from ._errors import Reason
from ._keys import PrivateKey, key_algorithm, key_id
from ._registry import PartyKeyRegistry

__all__ = ["SignatureCheck", "SignatureStatus", "check_signature", "sign_release_bytes", "signed_by"]

_ALGORITHM_NAMES = {
    pb.SIGNATURE_ALGORITHM_ED25519: "Ed25519",
    pb.SIGNATURE_ALGORITHM_ECDSA_P384_SHA384: "ECDSA P-384/SHA-384",
}


class SignatureStatus(StrEnum):
    """Provenance of one release as far as the decoder could establish it."""

    VERIFIED = "verified"
    """Signed by the registered key of the party it names."""
    UNVERIFIED = "unverified"
    """Signed, but no key registry was given: provenance not checked."""
    UNSIGNED = "unsigned"
    UNKNOWN_PARTY = "unknown_party"
    """A registry was given and holds no key for the party."""
    INVALID = "invalid"
    """The signature does not verify under the party's registered key."""


_FAILURE_REASONS = {
    SignatureStatus.UNSIGNED: Reason.UNSIGNED,
    SignatureStatus.UNKNOWN_PARTY: Reason.UNKNOWN_PARTY,
    SignatureStatus.INVALID: Reason.BAD_SIGNATURE,
}


@dataclass(frozen=True)
class SignatureCheck:
    """Outcome of :func:`check_signature`: a status and what was found."""

    status: SignatureStatus
    detail: str
    other_key: bool = False
    """The release names another signing key than the one registered for its party (INVALID): a key rotated
    since it signed, or a forgery; what to do depends on where the release came from (a stored model: the keys
    registered when it was built, :data:`protocol._global_model.ROTATED_KEY_ADVICE`)."""

    @property
    def failure_reason(self) -> Reason | None:
        """The :class:`Reason` to refuse with when a registry was given, else None."""
        return _FAILURE_REASONS.get(self.status)


_KEY_ID = re.compile(r"sha256:[0-9a-f]{64}")
_SHOWN_KEY_ID_CHARS = 23
"""A key id's ``sha256:`` and 16 hex digits (64 bits: enough to tell keys apart), so that a detail naming two key
ids stays within what a coordinator's report keeps of it (200 characters)."""


def _short_key_id(key: str) -> str:
    """``sha256:0fe6d74684517cb5...`` for a key id; another text (a release's claim) quoted, cut as short."""
    if _KEY_ID.fullmatch(key):
        return f"{key[:_SHOWN_KEY_ID_CHARS]}..."
    return repr(key[:_SHOWN_KEY_ID_CHARS]) + ("..." if len(key) > _SHOWN_KEY_ID_CHARS else "")


def sign_release_bytes(release: bytes, signing_key: PrivateKey | None) -> pb.SignedRelease:
    """Wrap serialized Release bytes, signed with ``signing_key`` when given."""
    if signing_key is None:
        return pb.SignedRelease(release=release)
    algorithm = key_algorithm(signing_key)
    if algorithm == pb.SIGNATURE_ALGORITHM_ED25519:
        signature = signing_key.sign(release)
    else:
        signature = signing_key.sign(release, ec.ECDSA(hashes.SHA384()))
    return pb.SignedRelease(release=release, signature=signature, key_id=key_id(signing_key), algorithm=algorithm)


def _verify(public_key: object, algorithm: int, signature: bytes, data: bytes) -> bool:
    try:
        if algorithm == pb.SIGNATURE_ALGORITHM_ED25519 and isinstance(public_key, ed25519.Ed25519PublicKey):
            public_key.verify(signature, data)
            return True
        if algorithm == pb.SIGNATURE_ALGORITHM_ECDSA_P384_SHA384 and isinstance(public_key, ec.EllipticCurvePublicKey):
            public_key.verify(signature, data, ec.ECDSA(hashes.SHA384()))
            return True
    except (InvalidSignature, ValueError):
        return False
    return False


def check_signature(signed: pb.SignedRelease, party_id: str, registry: PartyKeyRegistry | None) -> SignatureCheck:
    """Establish the provenance of ``signed``, a release claiming to be ``party_id``'s.

    Never raises on untrusted content; the caller decides what to refuse.
    """
    has_signature = bool(signed.signature)
    if not has_signature:
        if signed.key_id or signed.algorithm != pb.SIGNATURE_ALGORITHM_UNSPECIFIED:
            return SignatureCheck(
                SignatureStatus.INVALID,
                "expected an empty key id and algorithm on an unsigned release, got "
                f"key id {signed.key_id!r} and algorithm {signed.algorithm}",
            )
        return SignatureCheck(SignatureStatus.UNSIGNED, "the release carries no signature")
    if signed.algorithm not in _ALGORITHM_NAMES:
        return SignatureCheck(
            SignatureStatus.INVALID,
            f"signature algorithm: expected one of {sorted(_ALGORITHM_NAMES.values())}, "
            f"got enum value {signed.algorithm}",
        )
    if registry is None:
        return SignatureCheck(
            SignatureStatus.UNVERIFIED,
            f"signed ({_ALGORITHM_NAMES[signed.algorithm]}, key {signed.key_id}); no key registry to verify it",
        )
    if party_id not in registry:
        return SignatureCheck(
            SignatureStatus.UNKNOWN_PARTY,
            f"party {party_id!r}: expected one of the registered parties {sorted(registry)}, got an unregistered one",
        )
    expected_id = registry.key_id(party_id)
    if signed.key_id != expected_id:
        return SignatureCheck(
            SignatureStatus.INVALID,
            f"key id: signed with another key ({_short_key_id(signed.key_id)}) than the one registered now for "
            f"party {party_id!r} ({_short_key_id(expected_id)}): a rotated key?",
            other_key=True,
        )
    if not _verify(registry[party_id], signed.algorithm, signed.signature, signed.release):
        return SignatureCheck(
            SignatureStatus.INVALID,
            f"signature: expected a valid {_ALGORITHM_NAMES[signed.algorithm]} signature "
            f"by party {party_id!r}'s key {expected_id}, got one that does not verify",
        )
    return SignatureCheck(
        SignatureStatus.VERIFIED,
        f"verified: signed by party {party_id!r} ({_ALGORITHM_NAMES[signed.algorithm]}, key {expected_id})",
    )


def signed_by(raw: bytes, signing_key: PrivateKey) -> bool:
    """Whether ``raw``, SignedRelease bytes (:attr:`VerifiedRelease.raw`), carries a valid signature by the key whose
    private half is ``signing_key``: how a party recognizes a release it made itself, whatever its ledger says.

    Never raises on untrusted content (malformed bytes, another key or algorithm: False).  No privacy cost.
    """
    try:
        signed = pb.SignedRelease.FromString(bytes(raw))
    except Exception:  # noqa: BLE001 - protobuf's DecodeError and friends: not a release of this key
        return False
    if not signed.signature or signed.key_id != key_id(signing_key):
        return False
    return _verify(signing_key.public_key(), signed.algorithm, signed.signature, signed.release)
