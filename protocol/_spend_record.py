"""The coordinator's record of what each registered party spent on its requests, as a train request carries it.

Why: a party's ledger and the anchor beside it (:mod:`client._ledger_anchor`) both live on the party's host.
Restoring the whole host from a snapshot or backup rolls both back, and the party would serve again ε it has
already spent.  The coordinator keeps, for every release it verified (a signed release: its party id is
authentic) and every noised evaluation that party answered in the same run, the ε it charged the party's
ledger.  Each train request carries the totals; a party
whose ledger holds less than its total writes the difference into its ledger as spent before it serves
(:meth:`client.BudgetLedger.carry_recorded`), so the lost spend still counts against its cap.

Sound in one direction only, which is the one that matters: every verified release and every noised
evaluation was reserved in its party's ledger before it was sent, so an honest record never exceeds the ledger's total (which also counts
evaluations, failures and other coordinators' requests).  A record that is too low (the coordinator's file
lost or rolled back, a party at several coordinators) detects less; a record that is too high (a coordinator
lying) makes the party count more than it spent: less available budget, never a weaker guarantee.

The text names no party in clear: per party, the digest of its id used by the registration list
(:mod:`protocol._registration`) and the exact total, ``<32 hex>=<total>`` (``<total>`` a decimal or
``numerator/denominator``, as the ledger writes it).  The totals are sums of public request parameters (the
ε of each request a party answered), not data: the record costs no ε.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from fractions import Fraction

from ._registration import MAX_REGISTERED_PARTIES, party_digest

__all__ = ["check_spend_record_text", "recorded_spend", "spend_record_text"]

_ENTRY = re.compile(r"([0-9a-f]{32})=([0-9]{1,400}(?:\.[0-9]{1,400}|/[1-9][0-9]{0,399})?)")


def spend_record_text(totals: Mapping[str, Fraction]) -> str:
    """The per-party totals (party id to the exact ε its verified releases charged) as a train request's
    ``spend-record`` value (entries sorted; parties with nothing recorded are left out)."""
    entries = [f"{party_digest(party)}={_exact_text(total)}" for party, total in totals.items() if total > 0]
    return ",".join(sorted(entries))


def check_spend_record_text(text: object) -> None:
    """Raise ``ValueError`` (``TypeError`` for a non-text value) unless ``text`` is ``""`` or a record made by
    :func:`spend_record_text`: at most one entry per party, each ``<32 hex>=<total>`` with at most 400 digits
    on either side of a point or fraction bar (a bound on what a party parses)."""
    if not isinstance(text, str):
        raise TypeError(f"spend-record: expected text, got {type(text).__name__}")
    if not text:
        return
    entries = text.split(",")
    if len(entries) > MAX_REGISTERED_PARTIES:
        raise ValueError(f"spend-record: expected at most {MAX_REGISTERED_PARTIES} entries, got {len(entries)}")
    digests = set()
    for entry in entries:
        match = _ENTRY.fullmatch(entry)
        if match is None:
            raise ValueError("spend-record: expected comma-separated <32 hex>=<decimal or n/d> entries")
        digests.add(match.group(1))
    if len(digests) != len(entries):
        raise ValueError("spend-record: expected one entry per party, got a party twice")


def recorded_spend(text: str, party_id: str) -> Fraction | None:
    """The total the record holds for ``party_id`` (None: no entry; the text is checked first)."""
    check_spend_record_text(text)
    if not text:
        return None
    digest = party_digest(party_id)
    for entry in text.split(","):
        key, _, total = entry.partition("=")
        if key == digest:
            return Fraction(total)
    return None


def _exact_text(value: Fraction) -> str:
    """``value`` as the record writes it: a finite decimal when there is one, else ``n/d``."""
    if value.denominator == 1:
        return str(value.numerator)
    d, twos, fives = value.denominator, 0, 0
    while d % 2 == 0:
        d, twos = d // 2, twos + 1
    while d % 5 == 0:
        d, fives = d // 5, fives + 1
    if d != 1:
        return f"{value.numerator}/{value.denominator}"
    digits = max(twos, fives)
    scaled = value.numerator * 10**digits // value.denominator
    whole, frac = divmod(scaled, 10**digits)
    return f"{whole}.{frac:0{digits}d}".rstrip("0").rstrip(".")
