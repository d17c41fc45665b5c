"""The coordinator's record of what each registered party spent on its requests, as a train request carries it.

Why: a party's ledger and the anchor beside it (:mod:`client._ledger_anchor`) both live on the party's host.
Restoring the whole host from a snapshot or backup rolls both back, and the party would serve again ε it has
already spent.  The coordinator keeps, for every release it verified (a signed release: its party id is
authentic) and every noised evaluation that party answered in the same run, the ε it charged the party's
ledger.  Each train request carries the totals; a party
whose ledger holds less than its total writes the difference into its ledger as spent before it serves
(:meth:`client.BudgetLedger.carry_recorded`, all of it, past the cap if it is more), so the lost spend still counts
against its cap.

Sound in one direction only, which is the one that matters: every verified release and every noised
evaluation was reserved in its party's ledger before it was sent, so an honest record never exceeds the ledger's total (which also counts
evaluations, failures and other coordinators' requests).  A record that is too low (the coordinator's file
lost or rolled back, a party at several coordinators) detects less; a record that is too high (a coordinator
lying) makes the party count more than it spent: less available budget, never a weaker guarantee.

The text names no party in clear and holds only the parties the coordinator registers now: per party, a
digest of its id with its registered key's id (``sha256:`` of the public key), in a domain of its own, and
its total, ``<32 hex>=<total>``.  A party finds its own entry from its id and signing key; telling which
party another entry belongs to takes its id and public key.  What every party can see is the set of
totals.  A total is a decimal of at most 12 integer and 6 fraction digits: every ε a party accepts is a
multiple of 1e-6 (its ledger accounts in micro-ε), so an honest total always is one, and the coordinator
rounds down what is not (recording less is the safe side).  The totals are sums of public request
parameters (the ε of each request a party answered), not data: the record costs no ε.

Privacy cost of every function here: none (public parameters only).
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Mapping
from fractions import Fraction

from ._keys import PrivateKey, key_id
from ._registration import checked_entries

__all__ = ["check_spend_record_text", "recorded_spend", "spend_record_text"]

_DOMAIN = "edprf-spend-record-v1"
_ENTRY = re.compile(r"([0-9a-f]{32})=([0-9]{1,12}(?:\.[0-9]{1,6})?)")
_MICRO = 10**6
_MAX_MICRO = 10**18 - 1
"""The largest total a record holds, in micro-ε (12 integer and 6 fraction digits)."""


def _digest(party_id: str, key: str) -> str:
    return hashlib.sha256(f"{_DOMAIN}\0{party_id}={key}".encode()).hexdigest()[:32]


def spend_record_text(totals: Mapping[str, Fraction], key_ids: Mapping[str, str]) -> str:
    """The totals of the parties registered now (``key_ids``: party id to its registered key's id) as a
    train request's ``spend-record`` value: entries sorted, each total rounded down to a multiple of 1e-6,
    parties with nothing recorded left out, a total of 10**12 or more written as the largest that fits."""
    entries = []
    for party, key in key_ids.items():
        # at most the 12 integer digits a record holds (a total that large exhausts any cap: a party that signs
        # releases of absurd epsilon cannot make the record unreadable to every party)
        micro = min(math.floor(totals.get(party, Fraction(0)) * _MICRO), _MAX_MICRO)
        if micro > 0:
            whole, fraction = divmod(micro, _MICRO)
            text = f"{whole}.{fraction:06d}".rstrip("0").rstrip(".")
            entries.append(f"{_digest(party, key)}={text}")
    return ",".join(sorted(entries))


def check_spend_record_text(text: object) -> None:
    """Raise ``ValueError`` (``TypeError`` for a non-text value) unless ``text`` is ``""`` or a record made by
    :func:`spend_record_text`: at most one entry per party, each ``<32 hex>=<decimal>`` with at most 12 integer
    and 6 fraction digits."""
    _entries(text)


def _entries(text: object) -> dict[str, str]:
    """The checked record: digest to total text (see :func:`check_spend_record_text`)."""
    matches = checked_entries(
        text, "spend-record", _ENTRY, "<32 hex>=<decimal> entries (at most 12 integer and 6 fraction digits)"
    )
    entries = {m.group(1): m.group(2) for m in matches}
    if len(entries) != len(matches):
        raise ValueError("spend-record: expected one entry per party, got a party twice")
    return entries


def recorded_spend(text: str, party_id: str, signing_key: PrivateKey | None) -> Fraction | None:
    """The total the record holds for ``party_id`` with the public key of ``signing_key`` (None: no entry, or
    no key to find it with; the text is checked first)."""
    entries = _entries(text)
    if signing_key is None:
        return None
    total = entries.get(_digest(party_id, key_id(signing_key)))
    return None if total is None else Fraction(total)
