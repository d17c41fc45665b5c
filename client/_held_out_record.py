"""What a party's ledger records of its held-out split, and what the split's fraction is: no rows read here.

The split itself (which row is held out) is :mod:`client._held_out_split`'s.  This module holds what the ledger
and its anchor keep about it: the name of the secret salt, the rule, and each release's fraction.  Privacy cost:
none (ledger bookkeeping; nothing leaves the party).
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = [
    "HOLDOUT_SALT_KEY",
    "HOLDOUT_SPLIT",
    "HOLDOUT_SPLIT_KEY",
    "held_out_fraction",
    "held_out_split",
    "recorded_fraction",
    "smallest_recorded_fraction",
]

HOLDOUT_SALT_KEY = "holdout-salt"
"""Name of the party-local secret, in the ledger (and its anchor), that keys the hold-out split."""

HOLDOUT_SPLIT = "readings-v2"
"""The rule that draws the split, recorded in the ledger with each release the party trains: a release trained
under another rule (an earlier version hashed each cell's text, stop 52 its reading without numeric missing
tokens) trained on rows that may now be held out, so the party refuses to evaluate a model holding it
(:class:`client.Party`).  Change it whenever a row's side can change for the same file and salt."""


HOLDOUT_SPLIT_KEY = "holdout-split"
"""Prefix of the ledger key that records, per release request id, the split it trained under (:func:`held_out_split`;
0.2.0 recorded the rule alone)."""


def held_out_split(fraction: float) -> str:
    """What a release records as the split it trained under: the rule (:data:`HOLDOUT_SPLIT`) and the policy's
    ``holdout-fraction`` (``"readings-v2 fraction=0.2"``).  A party that raised its fraction since would hold out
    rows that trained the release (red-team review F4: 787 of 1,192 rows, 0.2 to 0.6): it holds out below the
    smallest fraction recorded instead (:func:`held_out_fraction`)."""
    return f"{HOLDOUT_SPLIT} fraction={float(fraction)!r}"


def held_out_fraction(fraction: float, recorded: Iterable[str]) -> float:
    """The fraction a party holds out below: the smallest of the policy's ``fraction`` and every fraction its ledger
    recorded with a release under today's rule (``recorded``: the ledger's :data:`HOLDOUT_SPLIT_KEY` values).

    A release trained on the rows whose keyed uniform is at least its fraction; holding out only the rows below the
    smallest such fraction keeps every release of this ledger (same salt, same rule) off the held-out rows, whatever
    a model says of its releases (a coordinator can relabel one: whole-change review F1).  After the policy's
    fraction is raised, the rows between the old and the new fraction serve neither side.  Privacy cost: none (a
    public constant from the party's own policy history; each row's side is still a function of that row alone).

    The ledger's anchor keeps the salt and the smallest recorded fraction (:func:`smallest_recorded_fraction`), and
    a ledger opened with less (lost, replaced by a new one, restored from an older backup) takes them back
    (:class:`client.BudgetLedger`): the split and its smallest fraction survive the ledger.

    Limits: a record without its fraction (0.2.0 wrote the rule alone) counts as today's fraction, so change
    ``holdout-fraction`` only after training under 0.2.1; an anchor written before 0.2.2 keeps neither salt nor
    fraction (a ledger lost before 0.2.2 first opened it starts a new split).
    """
    smallest = smallest_recorded_fraction(recorded)
    return float(fraction) if smallest is None else min(float(fraction), smallest)


def recorded_fraction(record: str | None) -> float | None:
    """The fraction a release's split record (:func:`held_out_split`) names under today's rule; None for another
    rule, a record without a fraction (0.2.0), or none."""
    prefix = f"{HOLDOUT_SPLIT} fraction="
    return float(record.removeprefix(prefix)) if record is not None and record.startswith(prefix) else None


def smallest_recorded_fraction(recorded: Iterable[str]) -> float | None:
    """The smallest fraction among a ledger's split records (``recorded``) under today's rule; None when none names
    one.  What the ledger's anchor keeps, so that a ledger opened without those records holds out no more rows than
    the releases they recorded left untouched."""
    fractions = [f for value in recorded if (f := recorded_fraction(value)) is not None]
    return min(fractions) if fractions else None
