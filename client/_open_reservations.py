"""How long a ledger's ``reserved`` entries have been open: a request still running, or one left behind.

A ``reserved`` entry is a request between its reservation and its end (released, or marked ``failed``).  A
request holds it only while it reads its rows and fits or counts (a release of 10^6 rows: about half a second);
the reply's hold comes after.  A party marks a request it caught failing ``failed`` (failure-injection review
rev-ops F6: a ledger or anchor write that failed after the reservation left it ``reserved``, shown exactly like a
request still running), so an entry still ``reserved`` long after its reservation was left by a process that
stopped (a crash, a kill) or by a failure whose own mark could not be written either (a full disk).  The party's
policy holds no round-timeout (that is the coordinator's run config), so the age past which an entry is said to
be left behind is :data:`RESERVATION_LEFT_AFTER_SECONDS`.  Every entry counts against the cap, whatever its age or state.

Privacy cost: none (the ledger's own time stamps, shown to the party's operator only).
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable
from dataclasses import dataclass

from ._ledger import EntryState, LedgerEntry

__all__ = [
    "RESERVATION_LEFT_AFTER_SECONDS",
    "OpenReservation",
    "duration_text",
    "left_behind_and_recent",
    "open_reservations",
]

RESERVATION_LEFT_AFTER_SECONDS = 3600.0
"""Age (seconds) past which a ``reserved`` entry is said to be left by a crash or a failed write: an hour, twelve
times the coordinator's default ``round-timeout`` (300 s), after which the coordinator no longer takes the reply;
a request holds its reservation only while it reads and fits.  A request still running after that is said as left
behind, and the note says so."""


@dataclass(frozen=True)
class OpenReservation:
    """A ``reserved`` entry and how long ago it was reserved.

    Attributes
    ----------
    entry : LedgerEntry
        The entry (its ε counts against the cap, as every entry's).
    age : float or None
        Seconds since its reservation; None when its time stamp is unreadable or later than now (a clock set back).
    """

    entry: LedgerEntry
    age: float | None

    @property
    def left_behind(self) -> bool:
        """Older than :data:`RESERVATION_LEFT_AFTER_SECONDS`: left by a crash or a failed write, not a request still running."""
        return self.age is not None and self.age > RESERVATION_LEFT_AFTER_SECONDS

    def age_text(self) -> str:
        """``"reserved 2 h 5 min ago"`` (``"reserved at an unreadable or future time"`` without a usable age)."""
        if self.age is None:
            return "reserved at an unreadable or future time"
        return f"reserved {duration_text(self.age)} ago"


def open_reservations(entries: Iterable[LedgerEntry], now: float | None = None) -> list[OpenReservation]:
    """The ``reserved`` entries of ``entries``, in their order, with their age at ``now`` (default: the clock)."""
    now = time.time() if now is None else now
    found = []
    for entry in entries:
        if entry.state != EntryState.RESERVED:
            continue
        age = now - entry.created_at
        found.append(OpenReservation(entry, age if math.isfinite(age) and age >= 0 else None))
    return found


def left_behind_and_recent(found: Iterable[OpenReservation]) -> tuple[list[str], list[str]]:
    """The request ids of ``found`` in their order: those left behind (:attr:`OpenReservation.left_behind`), and the
    others (a request running now, or one stopped less than :data:`RESERVATION_LEFT_AFTER_SECONDS` ago)."""
    old, recent = [], []
    for reservation in found:
        (old if reservation.left_behind else recent).append(reservation.entry.request_id)
    return old, recent


def duration_text(seconds: float) -> str:
    """A duration in its two largest units: ``"12 s"``, ``"3 min 20 s"``, ``"2 h 5 min"``, ``"4 d 3 h"``."""
    whole = int(seconds)
    days, rest = divmod(whole, 86_400)
    hours, rest = divmod(rest, 3_600)
    minutes, secs = divmod(rest, 60)
    units = [(days, "d"), (hours, "h"), (minutes, "min"), (secs, "s")]
    first = next((i for i, (value, _) in enumerate(units) if value), len(units) - 1)
    shown = units[first : first + 2]
    return " ".join(f"{value} {unit}" for value, unit in shown if value or unit == shown[0][1])
