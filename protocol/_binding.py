"""A party's signature binding a release it resends to the run that asked for it.

Under a coordinator's ``request-tag`` a party resends, byte for byte, the release it
made for that request in an earlier run (no new ε).  That release is bound to the
earlier run, so by itself it proves nothing about who sends it now: anyone who saw
it (a copy of an earlier global model holds every release) could send it as their
own reply and take the place of the party it names.  The party therefore signs,
next to the resent release, a binding: a domain tag, the SHA-256 of the release's
bytes and the asking run's id, signed with its key (the same key and algorithms as
its releases).  The coordinator accepts a release bound to another run only with a
binding that verifies against the registered key of the party the release names.
"""

from __future__ import annotations

import hashlib

from . import release_pb2 as pb
from ._canonical import serialize_canonical
from ._keys import PrivateKey
from ._registry import PartyKeyRegistry
from ._signature import SignatureStatus, check_signature, sign_release_bytes

__all__ = ["bind_to_run", "bound_to_run"]

_DOMAIN = b"edprf.v1 resent release bound to run\x00"


def _message(release: bytes, run_id: str) -> bytes:
    return _DOMAIN + hashlib.sha256(release).digest() + run_id.encode("utf-8")


def bind_to_run(release: bytes, run_id: str, signing_key: PrivateKey | None) -> bytes:
    """The binding of ``release`` (SignedRelease bytes) to ``run_id``; empty without a key (nothing to bind)."""
    if signing_key is None:
        return b""
    return serialize_canonical(sign_release_bytes(_message(release, run_id), signing_key))


def bound_to_run(release: bytes, run_id: str, binding: object, party_id: str, registry: PartyKeyRegistry) -> bool:
    """Whether ``binding`` is ``party_id``'s registered key's signature binding ``release`` to ``run_id``.

    Never raises on untrusted input: anything malformed is False.
    """
    if not isinstance(binding, (bytes, bytearray)) or not binding:
        return False
    try:
        signed = pb.SignedRelease.FromString(bytes(binding))
    except Exception:  # noqa: BLE001 - untrusted bytes: any parse failure is an invalid binding
        return False
    if signed.release != _message(release, run_id):
        return False
    return check_signature(signed, party_id, registry).status is SignatureStatus.VERIFIED
