"""The ledger's stored values, as both halves of the ledger write and read them: :mod:`client._ledger` (the spends)
and :mod:`client._ledger_audit` (the audit tables).

An exact ε (``"n/d"``), a count, a time stamp and a ``ledger_meta`` value, each checked as read (the file may be
untrusted: an operator may be handed one), and the one write transaction every writer takes.  Privacy cost: none
(the ledger is local; nothing here leaves the party).
"""

from __future__ import annotations

import math
import re
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from fractions import Fraction

__all__ = [
    "MAX_READ_ROWS",
    "checked_exact",
    "exact_epsilon",
    "immediate",
    "meta_value",
    "stamp_value",
    "stored_count",
]

MAX_READ_ROWS = 1_000_000
"""Most entries :func:`client._ledger.read_ledger_readonly` reads (a party spends a few per run), and most rows it
reads of each audit table."""
_EXACT_TEXT = re.compile(r"(\d{1,400})(?:/(\d{1,400}))?")
_MAX_DENOMINATOR_POWER = 1100  # a float's exact value has a denominator 2**k with k <= 1074


def exact_epsilon(epsilon: float | Fraction) -> Fraction:
    """A requested ε as an exact fraction: the shortest decimal that round-trips its float."""
    if isinstance(epsilon, Fraction):
        return epsilon
    return Fraction(repr(float(epsilon)))


@contextmanager
def immediate(db: sqlite3.Connection) -> Iterator[None]:
    """One write transaction, taken at once (``BEGIN IMMEDIATE``): committed, or rolled back on any exception."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield
        db.execute("COMMIT")
    except BaseException:
        if db.in_transaction:
            db.execute("ROLLBACK")
        raise


def meta_value(db: sqlite3.Connection, key: str) -> str | None:
    """The ``ledger_meta`` value of ``key`` (None: absent)."""
    row = db.execute("SELECT value FROM ledger_meta WHERE key = ?", (key,)).fetchone()
    return row[0] if row else None


def checked_exact(text: str, where: str) -> Fraction:
    """A stored exact ε, ``"n"`` or ``"n/d"``, with ``d = 2**a * 5**b`` (what the ledger writes).

    Bounded digits and denominators of that form keep every sum of any number of rows to
    a denominator of at most ``10**1100``: reading and adding stay fast on hostile files.
    """
    match = _EXACT_TEXT.fullmatch(text)
    if match is None:
        raise ValueError(
            f"{where}: epsilon_exact expected a fraction n/d of at most 400 digits each, "
            f"got {len(text)} characters of another form"
        )
    numerator, denominator = int(match.group(1)), int(match.group(2) or 1)
    rest = denominator
    for prime in (2, 5):
        power = 0
        while rest > 1 and rest % prime == 0 and power <= _MAX_DENOMINATOR_POWER:
            rest //= prime
            power += 1
        if power > _MAX_DENOMINATOR_POWER:
            rest = 0
    if rest != 1:
        raise ValueError(
            f"{where}: epsilon_exact expected a denominator 2**a * 5**b (a, b <= {_MAX_DENOMINATOR_POWER}), got another"
        )
    return Fraction(numerator, denominator)


def stamp_value(value: object) -> float:
    """A stored time stamp as read: any finite number as it is (a clock set before 1970 wrote a negative one, and
    the party counted that entry all the same), anything else NaN (shown as unreadable): a time stamp alone never
    makes a ledger unreadable, what it counts does not depend on it."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return math.nan
    number = float(value)
    return number if math.isfinite(number) else math.nan


def stored_count(text: str | None) -> int | None:
    """A stored count (ASCII digits, at most 18), or None for anything else (the file is untrusted)."""
    if text and len(text) <= 18 and text.isascii() and text.isdigit():
        return int(text)
    return None
