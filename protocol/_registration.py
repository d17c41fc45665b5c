"""The coordinator's registered parties, as a train request carries them, and a party's check of its own entry.

A party whose id or signing key is not the one the coordinator registered has its release rejected, but only
after it has charged its ledger: a typo in ``party-id`` (``hospital-E``) or another party's ``signing-key``
passed ``edprf party check`` and then burnt epsilon.  With this list in the request the party finds that out
before it reserves anything.

The list names no party in clear: per registered party, a digest of its id and a digest of its id with its
key id (``sha256:`` of the public key), each the first 128 bits of SHA-256 over a domain-separated text.  A
party can recognise its own entry; reading the others takes guessing their ids.  The list is public
configuration (the coordinator's keys directory), not data: it costs no epsilon.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping

from ._keys import PrivateKey, PublicKey, key_id

__all__ = [
    "MAX_REGISTERED_PARTIES",
    "check_registration_text",
    "checked_entries",
    "registration_problem",
    "registration_text",
]

MAX_REGISTERED_PARTIES = 100_000
"""Most entries a request's list may hold (a bound on what a party parses)."""

_DOMAIN = "edprf-registration-v1"
_ENTRY = re.compile(r"[0-9a-f]{32}:[0-9a-f]{32}")


def _digest(text: str) -> str:
    return hashlib.sha256(f"{_DOMAIN}\0{text}".encode()).hexdigest()[:32]


def _entry(party_id: str, key: str) -> str:
    return f"{_digest(party_id)}:{_digest(party_id + '=' + key)}"


def registration_text(keys: Mapping[str, PublicKey]) -> str:
    """The registered parties (party id to public key) as a train request's ``registered-parties`` value."""
    return ",".join(sorted(_entry(party, key_id(key)) for party, key in keys.items()))


def check_registration_text(text: object) -> None:
    """Raise ``ValueError`` (``TypeError`` for a non-text value) unless ``text`` is ``""`` or a list made by
    :func:`registration_text`."""
    checked_entries(text, "registered-parties", _ENTRY, "<32 hex>:<32 hex> entries")


def checked_entries(text: object, key: str, entry: re.Pattern[str], form: str) -> list[re.Match[str]]:
    """The entries of a request's comma-separated list ``key`` (``""``: none), each matched whole by ``entry``;
    ``TypeError`` for a value that is not text, ``ValueError`` (naming ``key`` and the ``form`` expected) for
    more than :data:`MAX_REGISTERED_PARTIES` entries or one that does not match."""
    if not isinstance(text, str):
        raise TypeError(f"{key}: expected text, got {type(text).__name__}")
    if not text:
        return []
    entries = text.split(",")
    if len(entries) > MAX_REGISTERED_PARTIES:
        raise ValueError(f"{key}: expected at most {MAX_REGISTERED_PARTIES} entries, got {len(entries)}")
    matches = [entry.fullmatch(e) for e in entries]
    if any(m is None for m in matches):
        raise ValueError(f"{key}: expected comma-separated {form}")
    return matches


def registration_problem(text: str, party_id: str, signing_key: PrivateKey | None) -> str | None:
    """Why this party (its policy's ``party_id``, its signing key) is not registered in ``text``; None if it is
    (or if ``text`` is empty: the coordinator registers no keys)."""
    if not text:
        return None
    entries = set(text.split(","))
    ids = {entry.split(":", 1)[0] for entry in entries}
    if _digest(party_id) not in ids:
        return (
            f"party-id {party_id!r} is not one of the {len(entries)} parties the coordinator registered; check the "
            "policy's party-id against its key file's name there"
        )
    if signing_key is None:
        return f"the coordinator requires signed releases and party {party_id!r} has no signing-key in its node config"
    if _entry(party_id, key_id(signing_key)) not in entries:
        return (  # the party's id is in the reply (party-id): a text naming it too would not fit 200 characters
            "the signing key is not the one the coordinator registered for this party-id; check the node config's "
            "signing-key (another party's key, or a key made after the public key was sent)"
        )
    return None
