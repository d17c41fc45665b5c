"""A party's persistent privacy-budget ledger (SQLite, write-ahead).

Every ε is recorded *before* anything computed with it leaves the party: a
request first reserves its ε in a committed transaction (refused if the
lifetime cap would be exceeded), then trains, then marks the entry released
together with the released bytes.  A crash after the reservation leaves the
ε counted: a retry cannot obtain a second release for free.  A repeated
request id gets the stored release back without spending again.

Exact accounting: each spend is stored as an exact fraction (column
``epsilon_exact``, text ``"n/d"``) next to its float (``epsilon``, for old
readers).  A request's ε is taken as the shortest decimal of its float
(``0.1`` is exactly 1/10); the cap likewise.  Sums and the cap check
(``spent + ε > cap`` refused) use :class:`fractions.Fraction`, so no rounding
can let a spend slip past the cap.  A ledger of another version (other
columns, such as one written before this column existed) is refused, not
migrated: it stays the record of what the party spent, read by the edprf-fl
version that wrote it.  The party is never given a new ledger path in its
place: a new ledger starts at 0 and would forget that spend.

A ledger belongs to one party: its ``ledger_meta`` records the party id it was
created for (:data:`PARTY_ID_KEY`), and a party refuses a ledger recorded for
another id (one copied from another party's directory).  A ledger written
before the id was recorded gets it at its next opening for writing.

The audit tables beside ``spends`` (refusals, deliveries, trails) are :mod:`client._ledger_audit`'s: the ledger
creates them at its opening (and copies there, once, the first recipients of releases completed before 0.2.12 into
``release_recipients``) and delegates their rows to it.  The values both read and write (an exact ε, a count, a
time stamp) are :mod:`client._ledger_values`'.  Privacy cost of the ledger: none in itself; it is local, and nothing
here leaves the party (a release leaves through the party only after its ε is recorded here).
"""

from __future__ import annotations

import logging
import math
import os
import secrets
import sqlite3
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from decimal import Context, Decimal
from enum import StrEnum
from fractions import Fraction
from pathlib import Path
from typing import TypeVar

from edprf_core import BudgetError, EDPRFError
from edprf_core.count_text import count_text
from protocol import create_owner_only_file

from ._held_out_record import (
    HOLDOUT_SALT_KEY,
    HOLDOUT_SPLIT_KEY,
    held_out_split,
    recorded_fraction,
    smallest_recorded_fraction,
)
from ._ledger_anchor import (
    CARRIED_FROM_KEY,
    LEDGER_ID_KEY,
    LedgerAnchor,
    anchor_path,
    carried,
    carried_before,
    read_anchor,
    remove_stale_temp_files,
    write_anchor,
)
from ._ledger_audit import (
    DROPPED_KEYS,
    AuditRecords,
    AuditWriter,
    Delivery,
    RefusedRequest,
    ReleaseParts,
    add_trail_row,
    backfill_recipients,
    create_audit_tables,
    first_recipient,
    read_audit,
    record_recipient,
    whole_trail,
)
from ._ledger_values import MAX_READ_ROWS, exact_epsilon
from ._ledger_values import checked_exact as _checked_exact
from ._ledger_values import immediate as _immediate
from ._ledger_values import meta_value as _meta
from ._ledger_values import stamp_value as _stamp_value
from ._ledger_values import stored_count as _count

__all__ = [
    "CAP_CHANGE_COUNT_KEY",
    "COORDINATOR_RECORD",
    "NOT_DP_COUNT_KEY",
    "NOT_DP_KEY",
    "PER_RECORD_SPEND",
    "RELATION_CHANGES_KEY",
    "RELATION_CHANGE_COUNT_KEY",
    "RELATION_KEY",
    "AuditRecords",
    "BudgetExhausted",
    "BudgetLedger",
    "Delivery",
    "EntryState",
    "LedgerBusy",
    "LedgerEntry",
    "LedgerOfAnotherParty",
    "LedgerOfAnotherVersion",
    "LedgerTooLarge",
    "RefusedRequest",
    "ReleaseParts",
    "RequestIdTaken",
    "dangling_link_text",
    "exact_epsilon",
    "format_epsilon",
    "not_dp_headline",
    "not_dp_replies",
    "read_ledger_readonly",
    "read_meta_readonly",
    "read_records_readonly",
    "read_release_readonly",
    "total_spent",
    "trail_lines",
    "whole_trail",
]

log = logging.getLogger("edprf.party")

_T = TypeVar("_T")

_COLUMNS = "request_id, kind, epsilon, state, run_id, detail, created_at, updated_at, epsilon_exact"


COORDINATOR_RECORD = "the coordinator's spend record"
"""Where :meth:`BudgetLedger.carry_recorded` says a party's carried spend came from (its entries' detail)."""


def total_spent(entries: Sequence[LedgerEntry]) -> Fraction:
    """Exact sum of the entries' ε."""
    return sum((e.epsilon_exact for e in entries), Fraction(0))


PER_RECORD_SPEND = "epsilon per record (data row): a person with k rows has faced up to k times these figures"
"""What a ledger's figures bound (printed beside them by ``edprf budget`` and ``edprf party check``): each request's
ε protects every row it used, so a person with several rows faces the sum over them (group privacy)."""


def format_epsilon(value: Fraction) -> str:
    """An exact decimal when the fraction has one (denominator 2^a 5^b), else ``n/d``."""
    d = value.denominator
    twos = fives = 0
    while d % 2 == 0:
        d //= 2
        twos += 1
    while d % 5 == 0:
        d //= 5
        fives += 1
    if d != 1:
        return f"{value.numerator}/{value.denominator}"
    digits = max(twos, fives)
    ctx = Context(prec=len(str(abs(value.numerator))) + digits + 2)
    text = format(ctx.divide(Decimal(value.numerator), Decimal(value.denominator)), "f")
    return text.rstrip("0").rstrip(".") if "." in text else text


_SCHEMA = """
CREATE TABLE IF NOT EXISTS spends (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    request_id TEXT NOT NULL UNIQUE,
    kind TEXT NOT NULL CHECK (kind IN ('release', 'evaluation')),
    epsilon REAL NOT NULL CHECK (epsilon > 0),
    state TEXT NOT NULL CHECK (state IN ('reserved', 'released', 'failed')),
    run_id TEXT NOT NULL DEFAULT '',
    detail TEXT NOT NULL DEFAULT '',
    payload BLOB,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    epsilon_exact TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS ledger_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS spends_entries ON spends (
    id, request_id, kind, epsilon, state, run_id, detail, created_at, updated_at, epsilon_exact
);
"""
"""The ledger's tables, and a covering index of every column but ``payload``: a row's columns after ``payload`` (a
release's bytes) are read past its bytes, so without it a sum of ε or a list of the entries read every release ever
stored (498 MB per sum at 6,000 releases: long-horizon review F2, stop 56).  An index adds no column: a ledger of an
earlier 0.2 version gets it at its first opening and stays readable and writable by that version."""

LEDGER_COLUMNS = frozenset(
    ("id", "request_id", "kind", "epsilon", "state", "run_id", "detail", "payload", "created_at", "updated_at")
    + ("epsilon_exact",)
)
"""The columns of ``spends``: the one ledger schema this version reads (an exact ε per row)."""


FAILED_MARK = " [failed: "
"""What :meth:`BudgetLedger.fail` appends to an entry's detail, before the failure's reason and a ``]``."""


CAP_KEY = "lifetime-cap"
"""The ``ledger_meta`` key of the lifetime cap the ledger was last opened with (exact text, or ``inf``)."""
CAP_CHANGES_KEY = "lifetime-cap-changes"
"""The ``ledger_meta`` key of the cap's changes, one line each: ``<UTC time>: <old> -> <new>``; the first and the
latest :data:`KEPT_CAP_CHANGE_LINES` - 1 are kept."""
CAP_CHANGE_COUNT_KEY = "lifetime-cap-change-count"
"""The ``ledger_meta`` key of how many times the cap changed (every change, kept line or not; review rev-dpo D13:
the lines dropped from the middle of the trail went uncounted).  Absent in ledgers before 0.2.11: their count is
the lines kept."""
RELATION_KEY = "relation"
"""The ``ledger_meta`` key of the neighbouring relation of the policy the ledger was last opened with (review
rev-dpo D7; absent before 0.2.11 and for a ledger opened without a policy)."""
RELATION_CHANGES_KEY = "relation-changes"
"""The ``ledger_meta`` key of the relation's changes, one line each, ``<UTC time>: <old> -> <new>``, kept as the cap's
(:data:`KEPT_CAP_CHANGE_LINES`); their count under :data:`RELATION_CHANGE_COUNT_KEY`."""
RELATION_CHANGE_COUNT_KEY = "relation-change-count"
KEPT_CAP_CHANGE_LINES = 50
"""Lines of the cap's changes a ledger keeps: a meta value stays far below what the read-only readers take
(:data:`MAX_VALUE_BYTES`), however often a policy changes (two policies with different caps on one ledger change
it at every request)."""
NOT_DP_KEY = "not-dp-replies"
"""The ``ledger_meta`` key of the replies that were not differentially private (a seeded request, exact
metrics), one line each: ``<UTC time>: request <id> (run <id>): <what>``; the first and the latest
:data:`KEPT_NOT_DP_LINES` - 1 are kept."""
NOT_DP_COUNT_KEY = "not-dp-reply-count"
"""The ``ledger_meta`` key of how many replies were not differentially private (every one, kept line or not)."""
KEPT_NOT_DP_LINES = 50
PARTY_ID_KEY = "party-id"
"""The ``ledger_meta`` key of the id of the party the ledger belongs to (its policy's ``party-id``), recorded when
the party creates the ledger (or first opens for writing one written before it was recorded)."""
NOTED_KEY = "noted-notes"
"""The ``ledger_meta`` key of the party check's notes on this ledger's history that the ClientApp has logged at
WARNING, one mark per note and ledger state, one per line (:mod:`client._noted_notes`); what the ledger counts
does not depend on it."""


def dangling_link_text(path: Path) -> str:
    """``""`` unless ``path`` is a symbolic link to nothing; then what that means, in one line.

    A link where the ledger should be, whose target is missing, is a broken mount or an incomplete restore, never a
    party that has spent nothing: SQLite would create a new, empty ledger at the target.
    """
    if not path.is_symlink() or path.exists():
        return ""
    return (
        f"{path} is a symbolic link to {os.readlink(path)}, which does not exist (a broken mount, or a restore "
        "that left the link without the ledger?)"
    )


class LedgerOfAnotherVersion(EDPRFError, ValueError):
    """A ledger whose ``spends`` table has other columns: written by another edprf-fl version (the message says
    what it records and what to do; never a new ledger path)."""


class LedgerTooLarge(EDPRFError, ValueError):
    """A ledger file larger than a read-only reader's byte limit: not damaged (a long history of stored releases);
    the message says how to read it with a larger limit."""


class LedgerBusy(EDPRFError, ValueError):
    """A ledger a read-only reader could not read because another process holds its lock (SQLite's busy or locked
    error, or the reader's time bound passed while it waited for the lock): not damaged, readable once the lock is
    released (review rev-auto A12: it was reported as unreadable, with the advice to restore it from its backup)."""


class LedgerOfAnotherParty(EDPRFError, ValueError):
    """A ledger whose ``ledger_meta`` records another party's id (copied from another party's directory?)."""


def another_version_text(path: Path, columns: frozenset[str], recorded: Fraction | None) -> str:
    """Why the ledger at ``path``, whose ``spends`` table has ``columns``, is not read, and what to do, in one line.

    ``recorded`` is what its ``epsilon_exact`` column sums to (None: no such column, or not readable).  The advice
    never resets the budget: a new ledger path would start at 0 and forget what this file records.
    """
    held = (
        f"it records {format_epsilon(recorded)} spent (the sum of its epsilon_exact column)"
        if recorded is not None
        else "how much it records cannot be read by this version"
    )
    differences = [
        f"{what} {', '.join(repr(c[:40]) for c in sorted(names)[:10])}"
        for what, names in (("unknown columns", columns - LEDGER_COLUMNS), ("lacks", LEDGER_COLUMNS - columns))
        if names
    ]
    return (
        f"ledger {path}: a ledger written by another edprf-fl version (its spends table: {'; '.join(differences)}), "
        f"which this version cannot read; {held}. It is this party's record of spent "
        "epsilon: keep the file (and its anchor) where it is and run the edprf-fl version that wrote it; do not give "
        "the party a new ledger path (a new ledger starts at 0 and forgets this spend)"
    )


def another_party_text(path: Path, recorded: str, party_id: str) -> str:
    """Why the ledger at ``path``, recorded for party ``recorded`` (untrusted text), is refused for ``party_id``."""
    shown = repr(recorded[:64] + ("..." if len(recorded) > 64 else ""))
    return (
        f"ledger {path}: expected a ledger of party {party_id!r} (the policy's party-id), got one of party {shown}: "
        f"a ledger copied from another party's directory? it counts the spend of {shown}, not this party's; give this "
        "party its own ledger (and the anchor beside it) back, from its backup if need be; if this policy's party-id was "
        "changed, change it back (a party keeps the id its ledger was written for: a new ledger would start at 0)"
    )


def recorded_in_exact_column(db: sqlite3.Connection, where: str) -> Fraction | None:
    """The sum of the ``epsilon_exact`` column of the ``spends`` table on ``db`` (a ledger of any version), each value
    checked as the ledger writes it; None when there is no such column, more than :data:`MAX_READ_ROWS` rows, or a
    value that is not an exact ε."""
    columns = {row[1] for row in db.execute("PRAGMA table_info(spends)")}
    if "epsilon_exact" not in columns:
        return None
    total = Fraction(0)
    try:
        rows = db.execute(f"SELECT epsilon_exact FROM spends LIMIT {MAX_READ_ROWS + 1}").fetchall()
        if len(rows) > MAX_READ_ROWS:
            return None
        for (text,) in rows:
            if not isinstance(text, str):
                return None
            total += _checked_exact(text, where)
    except (ValueError, sqlite3.Error):
        return None
    return total


def _cap_text(value: str) -> str:
    return value if value == "inf" else format_epsilon(Fraction(value))


class EntryState(StrEnum):
    """The state of a ledger entry (the ``state`` column; its CHECK constraint allows exactly these)."""

    RESERVED = "reserved"
    """ε reserved, nothing released yet (a crash here leaves the ε counted)."""
    RELEASED = "released"
    """Served; the entry holds what was released."""
    FAILED = "failed"
    """The request failed after its reservation; its ε stays counted."""


class BudgetExhausted(BudgetError):
    """The request would take the party past its lifetime ε cap."""


class RequestIdTaken(EDPRFError, ValueError):
    """The request id is already in the ledger (another process of the party reserved it first)."""


class _NotReserved(EDPRFError, ValueError):
    """No ``reserved`` entry under the request id (:meth:`BudgetLedger.complete` or :meth:`BudgetLedger.fail`)."""


def error_line(exc: BaseException) -> str:
    """An error as one short line for a ledger entry's detail and the party's log: its type and text."""
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text[:150]}" if text else type(exc).__name__


@dataclass(frozen=True)
class LedgerEntry:
    request_id: str
    kind: str
    epsilon: float
    state: str
    run_id: str
    detail: str
    created_at: float
    updated_at: float
    epsilon_exact: Fraction

    @classmethod
    def from_row(cls, row: Sequence) -> LedgerEntry:
        """From ``_COLUMNS``."""
        return cls(*row[:8], epsilon_exact=Fraction(row[8]))


class BudgetLedger:
    """Lifetime ε ledger of one party, in an SQLite file.

    Opening a ledger reconciles it with its anchor (:mod:`client._ledger_anchor`):
    ε the anchor records and the ledger does not hold (a ledger restored from a
    backup, replaced or lost) is written into it as spent first.  It also copies,
    once, the first recipient of each release completed before 0.2.12 from its
    ``sent`` delivery row (:func:`client._ledger_audit.backfill_recipients`).

    Parameters
    ----------
    path : path of the SQLite database (created if absent)
    cap : float in (0, inf)
        The party's lifetime ε cap (from its policy).  Every entry, reserved,
        released or failed, counts against it (sequential composition).
    party_id : str, optional
        The party the ledger belongs to (its policy's ``party-id``): recorded in
        a new ledger, or in one written before it was recorded (logged), and
        checked against the one recorded.  None: not checked, not recorded.
    relation : str, optional
        The neighbouring relation of the party's policy: recorded, and each change of it kept with its time, as
        the cap's are (review rev-dpo D7).  None: not recorded.

    Raises
    ------
    LedgerOfAnotherVersion
        The file is a ledger of another edprf-fl version (left unchanged).
    LedgerOfAnotherParty
        The ledger records another party id than ``party_id`` (left unchanged).
    """

    def __init__(self, path: str | Path, cap: float, party_id: str | None = None, relation: str | None = None) -> None:
        self.path = Path(path)
        if dangling := dangling_link_text(self.path):
            raise ValueError(f"ledger {dangling}: the party refuses to serve rather than start a new ledger there")
        self.cap = float(cap)
        self.cap_exact = exact_epsilon(cap) if cap != float("inf") else None
        self.path.parent.mkdir(parents=True, exist_ok=True)
        create_owner_only_file(self.path)  # the split's secret salt; SQLite gives -wal and -shm its mode
        self._refuse_another_schema()
        self.anchor_path = anchor_path(self.path)
        read_anchor(self.anchor_path)  # an unreadable anchor is refused before the ledger's tables are written
        with self._connect() as db:
            with self._read_only_refused():
                db.executescript(_SCHEMA)  # writes on a ledger written before its index (the probe below is later)
            with _immediate(db):  # the party, the id, the carried spend and the cap: one transaction
                with self._read_only_refused():
                    db.execute("DELETE FROM ledger_meta WHERE 0")  # a write that changes nothing: refused read-only
                create_audit_tables(db)  # a ledger of 0.2.10 or earlier gets them here (AUDIT_TABLES)
                backfill_level, backfill_note = self._backfill_recipients(db)
                # read again under the write lock (anchors are written under it): what another opening or a
                # reservation wrote meanwhile is what is carried from
                anchor = read_anchor(self.anchor_path)
                stale = remove_stale_temp_files(self.anchor_path)
                earlier = _meta(db, LEDGER_ID_KEY) is not None
                party_recorded = self._record_party(db, party_id, earlier)
                self.ledger_id = _meta_or_add(db, LEDGER_ID_KEY, lambda: secrets.token_hex(16))
                carried_note = self._carry(db, anchor)
                split_note = self._carry_split(db, anchor)
                cap_change = self._record_cap(db)
                relation_change = self._record_relation(db, relation)
                current = self._current_anchor(db)
            if anchor != current:  # written at each reservation: usually unchanged
                self._anchor(db)
        if party_recorded:
            log.info(
                "ledger %s: written before ledgers recorded their party: now recorded as party %r (a ledger of "
                "another party is refused from now on)",
                self.path,
                party_id,
            )
        if backfill_note:
            log.log(backfill_level, "ledger %s: %s", self.path, backfill_note)
        if stale:
            log.info(
                "ledger %s: removed %s left by an anchor write that was stopped: %s",
                self.path,
                count_text(len(stale), "temporary file"),
                ", ".join(t.name for t in stale),
            )
        if carried_note:
            log.warning("ledger %s: %s", self.path, carried_note)
        if split_note:
            log.warning("ledger %s: %s", self.path, split_note)
        if cap_change:
            log.warning("ledger %s: the policy's lifetime cap changed: %s", self.path, cap_change)
        if relation_change:
            log.warning("ledger %s: the policy's neighbouring relation changed: %s", self.path, relation_change)

    def _carry(self, db: sqlite3.Connection, anchor: LedgerAnchor | None) -> str:
        """Write what ``anchor`` records beyond this ledger into it as spent (inside ``db``'s transaction); a note
        on what was carried (``""``: nothing)."""
        spent = self._sum(db)
        other = anchor is not None and anchor.ledger_id != self.ledger_id
        key = f"{CARRIED_FROM_KEY}/{anchor.ledger_id}" if other else ""
        before = carried_before(_meta(db, key)) if other else Fraction(0)
        missing = carried(anchor, self.ledger_id, spent, before)
        if not missing:
            return ""
        held = (
            "by another ledger" + (f", of which this one carried {format_epsilon(before)} before" if before else "")
            if other
            else f"by this ledger, which held {format_epsilon(spent)}"
        )
        note = (
            f"carried from {self.anchor_path.name}: it records {format_epsilon(anchor.spent)} spent {held}: a "
            f"ledger restored from a backup, replaced or lost; {format_epsilon(missing)} is counted as spent"
        )
        _insert_carried(db, missing, note)
        if other:  # in the same transaction as the entry: carried once, whatever stops the anchor's rewrite
            db.execute("INSERT OR REPLACE INTO ledger_meta (key, value) VALUES (?, ?)", (key, str(before + missing)))
        return note

    def _backfill_recipients(self, db: sqlite3.Connection) -> tuple[int, str]:
        """Copy the first recipients of releases completed before 0.2.12 from their ``sent`` rows, once
        (:func:`client._ledger_audit.backfill_recipients`, inside ``db``'s transaction; review rev-s65 F1); a note
        for the log and its level: how many were copied (INFO), or why none could be (WARNING); ``""``: nothing to
        say (the usual opening).

        A failure of the copy keeps nothing of it (those releases fall back to their first delivery row, as before;
        the next opening tries again) and the opening goes on: it closes a gap in the resend guard, and a ledger whose
        ``deliveries`` table cannot be read this way (edited by hand) still records spends.  An error that ended the
        opening's transaction is raised.  Privacy cost: none (a local copy of public request parameters).
        """
        try:
            copied = backfill_recipients(db)
        except sqlite3.Error as exc:
            if not db.in_transaction:
                raise
            return logging.WARNING, (
                f"could not copy the first recipients of releases completed before 0.2.12 from their delivery rows "
                f"({error_line(exc)}): their first delivery row stands in while it is kept, as before"
            )
        if not copied:
            return logging.INFO, ""
        return logging.INFO, (
            f"copied the first recipient of {count_text(copied, 'release')} completed before 0.2.12 from its sent "
            "row (kept for good from now on: the resend guard no longer depends on that row)"
        )

    @contextmanager
    def _read_only_refused(self) -> Iterator[None]:
        """Refuse a ledger that cannot be written (a read-only file in a writable directory) at its opening, from
        SQLite's error on the opening's first write: creating the index of a ledger written before it, or a write
        that changes nothing (no row is deleted) inside the opening's transaction.  Without it the first failing
        write would be a reservation's.  Other errors pass through.

        Raises
        ------
        ValueError
            The file is read-only (for this process), naming it.
        """
        try:
            yield
        except sqlite3.OperationalError as exc:
            if "readonly" not in str(exc).replace("read-only", "readonly"):
                raise
            raise ValueError(
                f"ledger {self.path}: the file cannot be written by this process ({exc}): give the party's user "
                "write access to it (and to its directory); the party serves no request before it can record it"
            ) from None

    def _carry_split(self, db: sqlite3.Connection, anchor: LedgerAnchor | None) -> str:
        """Take back the held-out split the anchor keeps (inside ``db``'s transaction): its salt when the ledger
        has none, and its smallest fraction when the ledger, with that salt, records none as small; a note on
        what was taken (``""``: nothing).

        A ledger lost, or restored from a backup older than its salt or than a release, would otherwise draw a
        new split, or hold out rows an earlier release trained on, and a coordinator that relabels that release
        (no signature, another request id) would have it evaluated on them.  A ledger with a salt of its own
        keeps it (another ledger in this one's place: its releases trained under its own split).  Privacy cost:
        none (a party-local secret and a public constant of the party's own policy history).
        """
        if anchor is None or anchor.salt is None:
            return ""
        taken = []
        own = _meta(db, HOLDOUT_SALT_KEY)
        if own is None:
            db.execute("INSERT INTO ledger_meta (key, value) VALUES (?, ?)", (HOLDOUT_SALT_KEY, anchor.salt))
            taken.append("its held-out salt")
        elif own != anchor.salt:
            return ""
        smallest, kept = _smallest_fraction(db), recorded_fraction(anchor.smallest_split)
        if kept is not None and (smallest is None or kept < smallest):  # another rule's record: not today's split
            db.execute(
                "INSERT INTO ledger_meta (key, value) VALUES (?, ?)",
                (f"{HOLDOUT_SPLIT_KEY}/carried-{secrets.token_hex(8)}", anchor.smallest_split),
            )
            taken.append(f"its smallest holdout-fraction ({kept:g})")
        if not taken:
            return ""
        return (
            f"took {' and '.join(taken)} from {self.anchor_path.name}: the ledger lost them (lost, or restored "
            "from an older backup); the party holds out the same rows as before"
        )

    def carry_recorded(self, recorded: Fraction, source: str, run_id: str = "", request_id: str = "") -> Fraction:
        """Count as spent what ``recorded`` (ε this party is known elsewhere to have spent) exceeds the ledger's
        total by, all of it, as the anchor's carry does; return the amount written (``0``: nothing).

        For the coordinator's spend record (:mod:`protocol._spend_record`), which survives a restore of the
        party's whole host; ``run_id`` and ``request_id`` name the request that brought it (kept in the entry).
        One transaction: two processes carrying the same record carry it once.  The entry is a ``carried-``
        one, as for the anchor, and the anchor is brought up to the new total.  A record above the cap puts the
        ledger over it (``edprf budget`` says OVER THE CAP, every request is refused): the printed total is never
        less than what the records are known to have faced, and raising the cap afterwards does not hand the
        difference back (review rev-dpo D1: carried up to the cap only, a host that lost ledger and anchor printed
        "spent 2" where 3 was spent, and a raised cap let other coordinators' requests past it).  A record's total
        is at most 10^12 (:mod:`protocol._spend_record`'s format), so the amount stays readable.

        Privacy cost: none; the ledger's total can only grow.
        """
        if recorded <= 0:
            return Fraction(0)
        with self._connect() as db:
            with _immediate(db):
                spent = self._sum(db)
                missing = max(Fraction(0), recorded - spent)
                if missing:
                    note = (
                        f"carried from {source} (request {request_id or '-'}): it records "
                        f"{format_epsilon(recorded)} spent by this party, the ledger held {format_epsilon(spent)}: "
                        f"the ledger, or the whole host, restored from an earlier state (or a record that "
                        f"overstates); {format_epsilon(missing)} is counted as spent"
                    )
                    _insert_carried(db, missing, note, run_id)
            if missing:
                self._anchor(db)
                log.warning("ledger %s: %s", self.path, note)
        return missing

    def _record_party(self, db: sqlite3.Connection, party_id: str | None, earlier: bool) -> bool:
        """Check the ledger's party against ``party_id``, recording it when none is (inside ``db``'s transaction);
        True when an ``earlier`` ledger (one that existed before this opening) got it recorded now.

        Raises
        ------
        LedgerOfAnotherParty
            The ledger records another party (the transaction is rolled back: nothing written).
        """
        if party_id is None:
            return False
        recorded = _meta(db, PARTY_ID_KEY)
        if recorded is None:
            db.execute("INSERT INTO ledger_meta (key, value) VALUES (?, ?)", (PARTY_ID_KEY, party_id))
            return earlier
        if recorded != party_id:
            raise LedgerOfAnotherParty(another_party_text(self.path, str(recorded), party_id))
        return False

    def _record_cap(self, db: sqlite3.Connection) -> str:
        """Keep the lifetime cap this ledger is opened with, and a line for every change of it (inside ``db``'s
        transaction; the policy is the operator's to change, the ledger keeps the trail that ``edprf party
        check`` shows); the change's line, or ``""``."""
        cap = "inf" if self.cap_exact is None else str(self.cap_exact)
        return _record_setting(db, CAP_KEY, cap, CAP_CHANGES_KEY, CAP_CHANGE_COUNT_KEY, "lifetime-cap", _cap_text)

    def _record_relation(self, db: sqlite3.Connection, relation: str | None) -> str:
        """Keep the policy's neighbouring relation, and a line for every change of it, as :meth:`_record_cap` keeps
        the cap's (inside ``db``'s transaction; review rev-dpo D7: a policy's relation change left no trace while
        the ledger summed spends under both); the change's line, or ``""``.  A ledger first opened with a relation
        after it has entries records that relation from then on (its earlier entries name theirs in their detail)."""
        if relation is None:
            return ""
        return _record_setting(
            db, RELATION_KEY, relation, RELATION_CHANGES_KEY, RELATION_CHANGE_COUNT_KEY, "relation", lambda v: v[:40]
        )

    def _anchor(self, db: sqlite3.Connection) -> None:
        """Write the anchor from the ledger's committed total, read and written under SQLite's write lock (a
        transaction of its own, after the one that changed the ledger): anchors are written in the order of
        the totals they record, so one process's anchor never overwrites another's larger one, and an anchor
        never records what is not committed (a crash before this leaves it behind, never ahead)."""
        with _immediate(db):
            current = self._current_anchor(db)
            try:
                written = read_anchor(self.anchor_path)
            except ValueError:  # refused at the opening; what is there now is replaced, as before
                written = None
            if written is not None and written.ledger_id == self.ledger_id and written.spent > current.spent:
                # this ledger went back while a request ran (a backup restored under a running SuperNode): the
                # anchor keeps the larger total, and the next opening counts the difference (stop-56 review E4)
                current = replace(current, spent=written.spent)
            write_anchor(self.anchor_path, current)

    def _current_anchor(self, db: sqlite3.Connection) -> LedgerAnchor:
        """What the anchor is to record now: the ledger's id and total, its held-out salt and smallest fraction."""
        smallest = _smallest_fraction(db)
        split = None if smallest is None else held_out_split(smallest)
        return LedgerAnchor(self.ledger_id, self._sum(db), _meta(db, HOLDOUT_SALT_KEY), split)

    def _refuse_another_schema(self) -> None:
        """One ledger schema: a ledger of another version is refused before anything writes to it (no migration)."""
        if not self.path.is_file():
            return
        db = sqlite3.connect(self.path, timeout=30.0)
        try:
            columns = frozenset(row[1] for row in db.execute("PRAGMA table_info(spends)"))
            recorded = recorded_in_exact_column(db, str(self.path)) if columns != LEDGER_COLUMNS else None
        finally:
            db.close()
        if columns and columns != LEDGER_COLUMNS:
            raise LedgerOfAnotherVersion(another_version_text(self.path, columns, recorded))

    @contextmanager
    def _connect(self, timeout: float = 30.0) -> Iterator[sqlite3.Connection]:
        db = sqlite3.connect(self.path, timeout=timeout, isolation_level=None)
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=FULL")
            yield db
        finally:
            db.close()

    def _sum(self, db: sqlite3.Connection) -> Fraction:
        rows = db.execute("SELECT epsilon_exact FROM spends")
        return sum((Fraction(text) for (text,) in rows), Fraction(0))

    def spent(self) -> Fraction:
        """ε spent so far (all entries), exactly."""
        with self._connect() as db:
            return self._sum(db)

    def remaining(self) -> Fraction:
        """What is left of the cap, exactly (never negative)."""
        if self.cap_exact is None:
            return Fraction(10**18)
        return max(Fraction(0), self.cap_exact - self.spent())

    def find(self, request_id: str) -> tuple[LedgerEntry, bytes | None] | None:
        with self._connect() as db:
            row = db.execute(f"SELECT {_COLUMNS}, payload FROM spends WHERE request_id = ?", (request_id,)).fetchone()
        if row is None:
            return None
        return LedgerEntry.from_row(row), row[9]

    def refuse_unaffordable(self, kind: str, epsilon: float) -> None:
        """Raise :class:`BudgetExhausted` now if :meth:`reserve` of ``epsilon`` would be refused (nothing recorded).

        For a party to refuse before it reads any row: a refusal decided from the ledger alone takes a time
        that does not depend on the data.  :meth:`reserve` still decides, atomically.
        """
        exact = exact_epsilon(epsilon)
        if self.cap_exact is not None:
            spent = self.spent()
            if spent + exact > self.cap_exact:
                raise BudgetExhausted(_exhausted(kind, exact, spent, self.cap_exact))

    def reserve(self, request_id: str, kind: str, epsilon: float, run_id: str = "", detail: str = "") -> None:
        """Record ``epsilon`` as spent, atomically refusing what exceeds the cap.

        Raises :class:`BudgetExhausted` (nothing recorded) if the cap would be
        exceeded (exact arithmetic: ``spent + epsilon > cap``), and
        :class:`RequestIdTaken` (a :class:`ValueError`) if ``request_id`` is already used.  An error
        writing the anchor after the reservation committed (a full disk, the
        ledger locked for 30 s) is raised too: the reservation stays, counted,
        marked ``failed`` with the anchor's error when that mark can be written
        (:meth:`fail_if_possible`; review rev-ops F6: left ``reserved``, it read as
        a request still running), and the caller releases nothing (the
        privacy-safe side: nothing leaves with an anchor that does not record it).
        """
        if not (isinstance(epsilon, (int, float, Fraction)) and 0 < epsilon < float("inf")):
            raise ValueError(f"epsilon must be a positive finite number, got {epsilon}")
        exact = exact_epsilon(epsilon)
        now = time.time()
        with self._connect() as db:
            db.execute("BEGIN IMMEDIATE")
            try:
                if db.execute("SELECT 1 FROM spends WHERE request_id = ?", (request_id,)).fetchone():
                    raise RequestIdTaken(f"request {request_id!r} is already in the ledger")
                spent = self._sum(db)
                anchor = read_anchor(self.anchor_path)  # under the write lock, as anchors are written
                carried_note = ""
                if anchor is not None and anchor.ledger_id == self.ledger_id and anchor.spent > spent:
                    # this ledger went back since the opening (a backup restored under a running SuperNode):
                    # what its anchor records is counted before the cap is checked (stop-56 review E4)
                    carried_note = self._carry(db, anchor)
                    spent = self._sum(db)
                if self.cap_exact is not None and spent + exact > self.cap_exact:
                    raise BudgetExhausted(_exhausted(kind, exact, spent, self.cap_exact))
                db.execute(
                    "INSERT INTO spends (request_id, kind, epsilon, state, run_id, detail, created_at, updated_at, "
                    "epsilon_exact) VALUES (?, ?, ?, 'reserved', ?, ?, ?, ?, ?)",
                    (request_id, kind, float(exact), run_id, detail, now, now, str(exact)),
                )
                db.execute("COMMIT")
                if carried_note:  # committed with the reservation (a refusal at the cap rolls it back)
                    log.warning("ledger %s: %s", self.path, carried_note)
                try:
                    self._anchor(db)
                except Exception as exc:  # committed: the entry is marked failed (best effort), its epsilon spent
                    self.fail_if_possible(
                        request_id, f"the anchor was not written after the reservation ({error_line(exc)})"
                    )
                    raise
            except BaseException:
                # A Ctrl-C whose signal came during COMMIT's fsync is raised just after it: the entry is
                # committed (its epsilon stays counted) and there is no transaction left to roll back.
                # Rolling back then would raise an OperationalError in place of the interrupt, and the
                # party would answer with internal_error and go on serving instead of stopping.
                if db.in_transaction:
                    db.execute("ROLLBACK")
                raise

    def complete(self, request_id: str, payload: bytes | None = None, recipient: str | None = None) -> None:
        """Mark a reservation released (storing what was released).

        ``recipient``: for a release, the digest of the registered keys its train request carried
        (:func:`client._party.registered_digest`), kept as its first recipient in
        :data:`client._ledger_audit.RECIPIENTS_TABLE` in the same transaction (review rev-s65 F1): a release is never
        stored without it, so the resend guard never falls back for it.  A failure of either write leaves neither.
        """
        self._set_state(request_id, EntryState.RELEASED, payload, recipient=recipient)

    def fail(self, request_id: str, reason: str) -> None:
        """Mark a reservation failed; its ε stays counted.  ``reason`` is appended to the entry's detail
        (:data:`FAILED_MARK`): the request's own detail stays in front, for ``edprf budget``."""
        self._set_state(request_id, EntryState.FAILED, None, f"{FAILED_MARK}{reason}]")

    def fail_if_possible(self, request_id: str, reason: str) -> bool:
        """:meth:`fail`, best effort, after a failure that followed the reservation (the release's write, the
        anchor's, the work): that failure's error is the one the caller reports, so the mark's own error is logged,
        never raised; the entry then stays ``reserved`` (a process stopped after the reservation leaves it so too).
        Its epsilon stays spent either way: every entry counts, whatever its state (:meth:`spent`).

        Returns
        -------
        bool
            True when the entry is now marked ``failed``; False when the mark could not be written (a full disk, a
            locked ledger) or the entry was no longer ``reserved`` (released or failed already: left as it is).
        """
        try:
            self.fail(request_id, reason)
        except _NotReserved:
            log.info("ledger %s: request %s is no longer reserved: left as it is", self.path, request_id)
            return False
        except Exception as exc:  # the failure being handled is the one to report
            log.error(
                "ledger %s: request %s could not be marked failed (%s): it stays reserved, its epsilon spent; "
                "`edprf budget` shows how long ago it was reserved",
                self.path,
                request_id,
                error_line(exc),
            )
            log.debug("ledger %s: the mark's error", self.path, exc_info=True)
            return False
        return True

    def _set_state(
        self, request_id: str, state: EntryState, payload: bytes | None, suffix: str = "", recipient: str | None = None
    ) -> None:
        with self._connect() as db, _immediate(db):  # the state and the recipient's row: one transaction
            cur = db.execute(
                "UPDATE spends SET state = ?, payload = COALESCE(?, payload), detail = detail || ?, "
                "updated_at = ? WHERE request_id = ? AND state = 'reserved'",
                (str(state), payload, suffix, time.time(), request_id),
            )
            if cur.rowcount != 1:
                raise _NotReserved(f"no open reservation for request {request_id!r}")
            if recipient is not None:
                record_recipient(db, request_id, recipient)

    def note_not_dp(self, request_id: str, run_id: str, what: str) -> None:
        """Keep a line for a reply that is not differentially private (``what`` says why), before it is made.

        The policy's ``allow-seeded-randomness`` and ``allow-exact-metrics`` let a party answer such requests
        (research data), and a schema drafted from data makes every release NOT DP; the ledger keeps the trail,
        which ``edprf budget`` and ``edprf party check`` show as NOT DP, also after the policy is set back.  Every
        call is a reply of its own, even under a request id seen before (exact metrics reserve nothing, so
        nothing else stops an id's reuse); a resent release is not one (it is returned before this is called).
        Privacy cost: none (the line holds the request's public parameters only).
        """
        line = (
            f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}: request {request_id} (run {run_id or '-'}): {what}"
        )
        with self._connect() as db, _immediate(db):
            lines = (_meta(db, NOT_DP_KEY) or "").splitlines()
            lines.append(line)
            if len(lines) > KEPT_NOT_DP_LINES:  # the first, and the latest (a meta value stays small to read)
                lines = lines[:1] + lines[-(KEPT_NOT_DP_LINES - 1) :]
            before = _count(_meta(db, NOT_DP_COUNT_KEY))  # an unreadable count: the lines kept before this one
            db.executemany(
                "INSERT OR REPLACE INTO ledger_meta (key, value) VALUES (?, ?)",
                [
                    (NOT_DP_KEY, "\n".join(lines)),
                    (NOT_DP_COUNT_KEY, str((len(lines) - 1 if before is None else before) + 1)),
                ],
            )
            add_trail_row(db, "not-dp", line)  # whole (review rev-dpo D13); the meta lines for older readers

    def record_refusal(self, request_id: str, run_id: str, kind: str, epsilon: float | None, reason: str) -> None:
        """Append a refused request to ``refusals`` (review rev-dpo D4: refusals were in the SuperNode's log only).

        Only the request's own parameters (its ids, its kind, the ε it asked) and the constant reason code are
        kept, never the refusal's text: a text may name ledger figures, and whatever a future refusal's text says,
        the record cannot hold anything read from the data.  Called by the ClientApp's handler after the refusal
        is decided and before the reply is built (:func:`client._flower_handlers._serve`), which logs a failure of
        this write and replies as it would have: the reply never depends on it.  Its time depends on the ledger's
        size and the disk, never on the data's rows; a refusal decided before the read stays before the read.
        The row is written by :class:`client._ledger_audit.AuditWriter` (at most
        :data:`~client._ledger_audit.AUDIT_LOCK_SECONDS` waiting for the lock).
        Privacy cost: none (a local record; nothing of it leaves the party).

        Raises
        ------
        sqlite3.Error, OSError
            The row cannot be written (a locked ledger, a full disk): for the caller to log.
        """
        AuditWriter(self.path).record_refusal(request_id, run_id, kind, epsilon, reason)

    def record_delivery(
        self, request_id: str, run_id: str, how: str, node_id: str = "", registered: str = "", app: str = ""
    ) -> None:
        """Append a delivery to ``deliveries``: a release handed to Flower for sending (``how`` ``sent``) or a stored
        release resent under its request id (``resent``), with what the party knows of the recipient (review rev-dpo
        D3: a resend to another run, or to another coordinator reusing a tag, left no trace).

        What the party can tell apart: the run (``run_id``, an id one SuperLink gives), the SuperLink this
        SuperNode is registered at (``node_id``: the random id that SuperLink assigned it; another SuperLink, or a
        new registration, gives another), the coordinator's registered keys (``registered``: a digest of the list
        the request carries; two coordinators registering the same keys look alike, and one registering none gives
        ``""``), and the app's FAB (``app``).  What it cannot: who runs the SuperLink, or where a release goes after
        it (a coordinator may pass it on).  Written by :class:`client._ledger_audit.AuditWriter`.  Privacy cost: none
        (public request parameters and the party's clock, kept locally).

        Raises
        ------
        sqlite3.Error, OSError
            The row cannot be written: a resend is then refused (nothing leaves without its record).
        """
        AuditWriter(self.path).record_delivery(request_id, run_id, how, node_id, registered, app)

    def first_recipient(self, request_id: str) -> str | None:
        """The registered keys' digest the release under ``request_id`` first went to, or None when the ledger does
        not know it (see :func:`client._ledger_audit.first_recipient`; review rev-s65 F1)."""
        with self._connect() as db:
            return first_recipient(db, request_id)

    def record_parts(self, parts: ReleaseParts) -> None:
        """Keep what a completed release's ε paid for (review rev-dpo D8: an entry said what was asked, not what was
        done): the DP row count's ε, the trees', the marginals' and the residual pass's where present, and the depth
        used, all read from the release the party made (public parameters and DP outputs inside the stored payload,
        what ``edprf inspect`` prints), never from the data.  A row of its own table
        (:data:`client._ledger_audit.PARTS_TABLE`): the entry's detail stays the request's, which a resend compares
        (here and in earlier versions).  Written by :class:`client._ledger_audit.AuditWriter`.  Privacy cost: none
        (a local record; nothing of it leaves the party).

        Raises
        ------
        sqlite3.Error, OSError
            The row cannot be written: for the caller to log (the release is stored and goes out).
        """
        AuditWriter(self.path).record_parts(parts)

    def entries(self) -> list[LedgerEntry]:
        with self._connect() as db:
            rows = db.execute(f"SELECT {_COLUMNS} FROM spends ORDER BY id").fetchall()
        return [LedgerEntry.from_row(r) for r in rows]

    def meta_value(self, key: str) -> str | None:
        """The ledger's ``ledger_meta`` value of ``key`` (None: absent)."""
        with self._connect() as db:
            return _meta(db, key)

    def meta_values(self, prefix: str) -> dict[str, str]:
        """Every ``ledger_meta`` entry whose key starts with ``prefix`` (key -> value)."""
        with self._connect() as db:
            rows = db.execute(
                "SELECT key, value FROM ledger_meta WHERE substr(key, 1, ?) = ?", (len(prefix), prefix)
            ).fetchall()
        return dict(rows)

    def secret(self, key: str, factory: Callable[[], str]) -> str:
        """A party-local secret stored in the ledger (created once by ``factory``).

        Creating the held-out salt or a release's split record also brings the anchor up to date (before the
        release exists), so that a ledger lost after it keeps its split (:meth:`_carry_split`).
        """
        with self._connect() as db:
            with _immediate(db):
                value = _meta(db, key)
                created = value is None
                if created:
                    value = factory()
                    db.execute("INSERT INTO ledger_meta (key, value) VALUES (?, ?)", (key, value))
            if created and (key == HOLDOUT_SALT_KEY or key.startswith(f"{HOLDOUT_SPLIT_KEY}/")):
                self._anchor(db)
            return value


def _record_setting(
    db: sqlite3.Connection,
    key: str,
    value: str,
    lines_key: str,
    count_key: str,
    trail: str,
    text: Callable[[str], str],
) -> str:
    """Keep ``value`` under ``key`` in ``ledger_meta`` and, when it replaces another, the change's line in the trail
    (:func:`_add_change`; ``text`` shows a value in it); the change's line, or ``""`` (the same value, or the first)."""
    previous = _meta(db, key)
    if previous == value:
        return ""
    db.execute("INSERT OR REPLACE INTO ledger_meta (key, value) VALUES (?, ?)", (key, value))
    if previous is None:
        return ""
    return _add_change(db, lines_key, count_key, text(previous), text(value), trail)


def _add_change(db: sqlite3.Connection, lines_key: str, count_key: str, old: str, new: str, trail: str) -> str:
    """Append ``<UTC time>: <old> -> <new>`` to the trail under ``lines_key`` (the first and the latest
    :data:`KEPT_CAP_CHANGE_LINES` - 1 lines kept) and count it under ``count_key`` (every change; a ledger without
    the count, from before 0.2.11, starts from the lines it kept); inside ``db``'s transaction.  The line."""
    change = f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}: {old} -> {new}"
    lines = [*(_meta(db, lines_key) or "").splitlines(), change]
    before = _count(_meta(db, count_key))
    count = (len(lines) - 1 if before is None else before) + 1
    if len(lines) > KEPT_CAP_CHANGE_LINES:  # the first, and the latest
        lines = lines[:1] + lines[-(KEPT_CAP_CHANGE_LINES - 1) :]
    db.executemany(
        "INSERT OR REPLACE INTO ledger_meta (key, value) VALUES (?, ?)",
        [(lines_key, "\n".join(lines)), (count_key, str(count))],
    )
    add_trail_row(db, trail, change)
    return change


def trail_lines(meta: Mapping[str, str], lines_key: str, count_key: str) -> tuple[int, list[str]]:
    """How many changes a trail of ``ledger_meta`` counts (at least its kept lines), and its kept lines, each cut
    at 200 characters (the file is untrusted; the caller makes them safe for a terminal)."""
    lines = [line[:200] for line in meta.get(lines_key, "").splitlines()[: 2 * KEPT_CAP_CHANGE_LINES] if line.strip()]
    return max(_count(meta.get(count_key)) or 0, len(lines)), lines


def _insert_carried(db: sqlite3.Connection, amount: Fraction, note: str, run_id: str = "") -> None:
    """Write ``amount`` as a spent (``failed``, nothing released) ``carried-`` entry, inside ``db``'s transaction."""
    now = time.time()
    db.execute(
        "INSERT INTO spends (request_id, kind, epsilon, state, run_id, detail, created_at, "
        "updated_at, epsilon_exact) VALUES (?, 'release', ?, 'failed', ?, ?, ?, ?, ?)",
        (f"carried-{secrets.token_hex(8)}", float(amount), run_id, note, now, now, str(amount)),
    )


def audit_writer(path: str | Path, party_id: str) -> AuditWriter:
    """A writer of audit rows only, into the existing ledger at ``path`` of the party ``party_id`` (review rev-s64 F11:
    a ``bad_request`` refusal built a whole :class:`client.Party`, its schema, key and ledger opening, to keep one row).

    Nothing but the file is opened: no anchor read, no cap or relation recorded, no spend carried.  Inside the row's
    own transaction (:class:`client._ledger_audit.AuditWriter`: at most
    :data:`~client._ledger_audit.AUDIT_LOCK_SECONDS` waiting for the lock), before anything is written, the file is
    refused as :class:`BudgetLedger`'s opening refuses it: a ``spends`` table with other columns (another version, or
    not a ledger) and a ledger recorded for another party; nothing is then written.  Privacy cost: none (a local row
    of request parameters and a reason code).
    """
    p = Path(path)

    def check(db: sqlite3.Connection) -> None:
        columns = frozenset(row[1] for row in db.execute("PRAGMA table_info(spends)"))
        if columns != LEDGER_COLUMNS:
            raise LedgerOfAnotherVersion(another_version_text(p, columns, None))
        recorded = _meta(db, PARTY_ID_KEY)
        if recorded is not None and recorded != party_id:
            raise LedgerOfAnotherParty(another_party_text(p, str(recorded), party_id))

    return AuditWriter(p, check)


def record_noted(path: str | Path, marks: str) -> None:
    """Store ``marks`` under :data:`NOTED_KEY` in the ledger at ``path``, which must exist (it is never created
    here); nothing else in it changes.

    Raises
    ------
    sqlite3.Error, OSError
        No ledger there, or it cannot be written now (locked, read-only).
    """
    db = sqlite3.connect(Path(path).resolve().as_uri() + "?mode=rw", uri=True, timeout=5.0, isolation_level=None)
    try:
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=FULL")
        with _immediate(db):
            db.execute("INSERT OR REPLACE INTO ledger_meta (key, value) VALUES (?, ?)", (NOTED_KEY, marks))
    finally:
        db.close()


def _smallest_fraction(db: sqlite3.Connection) -> float | None:
    """The smallest fraction the ledger's split records name under today's rule (None: none does)."""
    prefix = f"{HOLDOUT_SPLIT_KEY}/"
    rows = db.execute("SELECT value FROM ledger_meta WHERE substr(key, 1, ?) = ?", (len(prefix), prefix))
    return smallest_recorded_fraction(value for (value,) in rows)


def _meta_or_add(db: sqlite3.Connection, key: str, factory: Callable[[], str]) -> str:
    """The ``ledger_meta`` value of ``key``, stored from ``factory()`` the first time."""
    value = _meta(db, key)
    if value is None:
        value = factory()
        db.execute("INSERT INTO ledger_meta (key, value) VALUES (?, ?)", (key, value))
    return value


READ_SECONDS = 10.0
"""Longest time :func:`read_ledger_readonly` lets SQLite work on one ledger before it gives up."""
MAX_VALUE_BYTES = 1 << 16
"""Longest text or blob SQLite hands back while a ledger is read (ids are at most 256 characters)."""


def _checked_entry(row: Sequence, where: str) -> LedgerEntry:
    """A row of an untrusted ledger, each value checked for its kind and range (no value is echoed)."""
    request_id, kind, epsilon, state, run_id, detail, created_at, updated_at, text = row
    for name, value in (
        ("request_id", request_id),
        ("kind", kind),
        ("state", state),
        ("run_id", run_id),
        ("detail", detail),
    ):
        if not isinstance(value, str):
            raise ValueError(f"{where}: {name} expected text, got {type(value).__name__}")  # noqa: TRY004 - a bad file
    if isinstance(epsilon, bool) or not isinstance(epsilon, (int, float)) or not 0.0 <= epsilon < math.inf:
        shown = type(epsilon).__name__ if not isinstance(epsilon, (int, float)) else "a value out of range"
        raise ValueError(f"{where}: epsilon expected a finite number in [0, inf], got {shown}")
    if not isinstance(text, str):
        raise ValueError(f"{where}: epsilon_exact expected text, got {type(text).__name__}")  # noqa: TRY004 - a bad file
    exact = _checked_exact(text, where)
    return LedgerEntry(
        request_id,
        kind,
        float(epsilon),
        state,
        run_id,
        detail,
        _stamp_value(created_at),
        _stamp_value(updated_at),
        exact,
    )


def read_meta_readonly(
    path: str | Path, keys: tuple[str, ...], max_bytes: int = 1 << 30, max_seconds: float = READ_SECONDS
) -> dict[str, str]:
    """The ``ledger_meta`` values of ``keys`` in a ledger (those it holds), read as :func:`read_ledger_readonly`
    reads: without changing it, in bounded time, the file untrusted.

    Raises
    ------
    ValueError
        As :func:`read_ledger_readonly`.
    """
    return _read_ledger_file(Path(path), max_bytes, max_seconds, lambda db: _meta_of(db, keys))


def _meta_of(db: sqlite3.Connection, keys: tuple[str, ...]) -> dict[str, str]:
    """The ``ledger_meta`` values of ``keys`` on a connection of :func:`_read_ledger_file` (none without the table)."""
    kinds = [r[0] for r in db.execute("SELECT type FROM sqlite_master WHERE name = 'ledger_meta' LIMIT 2")]
    if kinds != ["table"]:
        return {}
    marks = ", ".join("?" * len(keys))
    rows = db.execute(f"SELECT key, value FROM ledger_meta WHERE key IN ({marks})", keys).fetchall()
    return {key: value for key, value in rows if isinstance(key, str) and isinstance(value, str)}


def not_dp_replies(meta: dict[str, str]) -> tuple[int, list[str]]:
    """How many replies were not differentially private, and the kept lines, from a ledger's ``ledger_meta``
    values (:func:`read_meta_readonly` of :data:`NOT_DP_KEY` and :data:`NOT_DP_COUNT_KEY`; the file untrusted:
    an unreadable count is taken as the number of lines, a line is cut at 300 characters and any character
    that is not printable shown as ``?``)."""
    lines = [
        "".join(c if c.isprintable() else "?" for c in line[:300])  # shown on terminals: no control characters
        for line in meta.get(NOT_DP_KEY, "").splitlines()[: 2 * KEPT_NOT_DP_LINES]
        if line.strip()
    ]
    return max(_count(meta.get(NOT_DP_COUNT_KEY)) or 0, len(lines)), lines


def not_dp_headline(count: int) -> str:
    """The NOT DP sentence ``edprf budget`` and ``edprf party check`` open the trail with."""
    return (
        f"NOT DP: {count_text(count, 'reply', 'replies')} of this party did not come from a DP mechanism "
        "(seeded randomness or exact metrics its policy allowed, or a schema drafted from data)"
    )


def read_ledger_readonly(
    path: str | Path, max_bytes: int = 1 << 30, max_seconds: float = READ_SECONDS
) -> list[LedgerEntry]:
    """Read a ledger without changing it: regular files only, opened read-only, in bounded time.

    No table is created, no column added, the journal mode is left alone; a ledger no party has open gets no
    file beside it (no ``-wal`` or ``-shm``).  A file
    whose ``spends`` table has other columns (another ledger version) is refused.  The file is untrusted (an operator may be
    handed one): ``spends`` must be a table (a view could compute forever); SQLite
    is stopped after ``max_seconds`` of work (a progress handler), hands back no
    value longer than :data:`MAX_VALUE_BYTES`, runs no function a schema names
    (``trusted_schema`` off); at most :data:`MAX_READ_ROWS` rows are read; every
    value is checked for its kind and range before use.

    Raises
    ------
    ValueError
        Missing path, not a regular file, larger than ``max_bytes``, not an SQLite
        database, not a ledger, a value of the wrong kind, or too slow to read; the
        message is one line and quotes no text from the file.
    """
    p = Path(path)
    return _read_ledger_file(p, max_bytes, max_seconds, lambda db: _entries_of(db, p))


def read_entries_and_meta_readonly(
    path: str | Path, keys: tuple[str, ...], max_bytes: int = 1 << 30, max_seconds: float = READ_SECONDS
) -> tuple[list[LedgerEntry], dict[str, str]]:
    """:func:`read_ledger_readonly` and :func:`read_meta_readonly` of ``keys`` on one read-only connection (the file
    opened and checked once), with their checks and bounds (``max_seconds`` for both together).

    Raises
    ------
    ValueError
        As :func:`read_ledger_readonly`.
    """
    p = Path(path)
    return _read_ledger_file(p, max_bytes, max_seconds, lambda db: (_entries_of(db, p), _meta_of(db, keys)))


def read_records_readonly(
    path: str | Path,
    keys: tuple[str, ...],
    max_bytes: int = 1 << 30,
    max_seconds: float = READ_SECONDS,
    with_audit: bool = True,
) -> tuple[list[LedgerEntry], dict[str, str], AuditRecords]:
    """:func:`read_entries_and_meta_readonly` and the ledger's audit tables (:data:`AUDIT_TABLES`) on one read-only
    connection, with the same checks and bounds; a table the ledger does not hold (written before 0.2.11) is None
    in the :class:`AuditRecords`.  ``with_audit=False`` leaves the tables unread (an empty :class:`AuditRecords`): the
    ClientApp's check before every message needs the sums only, and the tables can hold 100,000 rows each, which a
    coordinator can grow with refused requests at no epsilon (review rev-s64 F5: 1.0 s a message at the limits).

    Raises
    ------
    ValueError
        As :func:`read_ledger_readonly`.
    """
    p = Path(path)

    def read(db: sqlite3.Connection) -> tuple[list[LedgerEntry], dict[str, str], AuditRecords]:
        entries, meta = _entries_of(db, p), _meta_of(db, keys + DROPPED_KEYS)
        audit = read_audit(db, p, meta) if with_audit else AuditRecords()
        return entries, {k: v for k, v in meta.items() if k in keys}, audit

    return _read_ledger_file(p, max_bytes, max_seconds, read)


def _entries_of(db: sqlite3.Connection, p: Path) -> list[LedgerEntry]:
    """The checked entries of the ledger ``p`` on a connection of :func:`_read_ledger_file`."""
    kinds = [r[0] for r in db.execute("SELECT type FROM sqlite_master WHERE name = 'spends' LIMIT 2")]
    if kinds != ["table"]:
        raise ValueError(f"{p} is an SQLite database but not a party's ledger (no spends table)")
    columns = frozenset(row[1] for row in db.execute("PRAGMA table_info(spends)"))
    if columns != LEDGER_COLUMNS:
        raise LedgerOfAnotherVersion(another_version_text(p, columns, recorded_in_exact_column(db, str(p))))
    cursor = db.execute(
        f"SELECT request_id, kind, epsilon, state, run_id, detail, created_at, updated_at, "
        f"epsilon_exact FROM spends ORDER BY id LIMIT {MAX_READ_ROWS + 1}"
    )
    entries = [_checked_entry(row, f"{p}: entry {i + 1}") for i, row in enumerate(cursor)]
    if len(entries) > MAX_READ_ROWS:
        raise ValueError(f"{p}: expected at most {MAX_READ_ROWS} entries, got more")
    return entries


def read_release_readonly(
    path: str | Path, request_id: str, max_bytes: int = 1 << 30, max_seconds: float = READ_SECONDS
) -> tuple[LedgerEntry, bytes]:
    """The bytes a party released under ``request_id`` (its stored, signed release) and its entry, read as
    :func:`read_ledger_readonly` reads (read-only, bounded; the entries' values at :data:`MAX_VALUE_BYTES`), the
    payload bounded only by ``max_bytes`` (no value is longer than its file).  Of several rows under one id (a
    hostile file without the ledger's unique constraint) the first is read, entry and bytes alike.

    These are the bytes the party sent (and resends under the same id): what its privacy officer audits with
    ``edprf inspect``.  Reading them releases nothing.

    Raises
    ------
    ValueError
        As :func:`read_ledger_readonly`; also when no entry has ``request_id``, when its entry is not a
        release or holds no released bytes (reserved or failed: nothing was sent), naming the ledger's
        release ids.
    """
    p = Path(path)

    def read(db: sqlite3.Connection) -> tuple[list[LedgerEntry], object]:
        entries = _entries_of(db, p)  # at MAX_VALUE_BYTES, as every other read
        db.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, max(MAX_VALUE_BYTES, min(max_bytes, (1 << 31) - 1)))
        row = db.execute(
            "SELECT payload FROM spends WHERE request_id = ? AND kind = 'release' ORDER BY id LIMIT 1", (request_id,)
        ).fetchone()
        return entries, None if row is None else row[0]

    entries, payload = _read_ledger_file(p, max_bytes, max_seconds, read)
    releases = [e for e in entries if e.kind == "release"]
    entry = next((e for e in releases if e.request_id == request_id), None)
    if entry is None:
        known = ", ".join(e.request_id for e in releases[-5:]) or "none"
        raise ValueError(f"{p}: no release under request id {request_id!r} (the latest release ids: {known})")
    if entry.state != EntryState.RELEASED or not isinstance(payload, bytes) or not payload:
        raise ValueError(
            f"{p}: request id {request_id!r} is {entry.state} and holds no released bytes: nothing was sent for it "
            "(its epsilon still counts)"
        )
    return entry, payload


_SIDECAR_SUFFIXES = ("-wal", "-shm", "-journal")
"""SQLite's files beside a database: while none exists, the database file alone holds every committed entry."""


def _read_ledger_file(p: Path, max_bytes: int, max_seconds: float, read: Callable[[sqlite3.Connection], _T]) -> _T:
    """``read`` run on a read-only connection to the untrusted SQLite file ``p`` (see :func:`read_ledger_readonly`);
    an SQLite error while it runs becomes a one-line ``ValueError``.

    A ledger no party has open (no ``-wal``, ``-shm`` or ``-journal`` beside it) is read as an immutable file, so
    the read leaves no file behind: a read-only connection in WAL mode creates a ``-wal`` and a ``-shm`` and leaves
    them, owned by whoever read (``sudo edprf budget`` would leave files the party's own user cannot write).  If a
    party opened or changed the ledger during that read, the read is done again as an ordinary read-only
    connection, which sees the party's write-ahead log (also when the immutable read failed on a page the party
    was writing).
    """
    import stat

    try:
        st = p.stat()
    except FileNotFoundError:
        raise ValueError(f"no ledger at {p}") from None
    except OSError as exc:
        raise ValueError(f"cannot read {p}: {exc.strerror}") from None
    if not stat.S_ISREG(st.st_mode):
        raise ValueError(f"{p} is not a regular file (expected a ledger SQLite file)")
    if st.st_size > max_bytes:
        raise LedgerTooLarge(
            f"{p}: expected a ledger of at most {max_bytes} bytes, got {st.st_size}: a long history of stored "
            "releases, not a damaged ledger (the party serves on); read it with `edprf budget --max-bytes N`"
        )
    try:
        with p.open("rb") as handle:
            magic = handle.read(16)
    except OSError as exc:
        raise ValueError(f"cannot read {p}: {exc.strerror}") from None
    if not magic:  # a party stopped between creating its ledger file and writing its tables
        raise ValueError(f"{p} is empty: a ledger file created but never written; the file itself records no spend")
    if magic != b"SQLite format 3\x00":
        raise ValueError(f"{p} is not an SQLite database (expected a party's ledger)")
    target = p.resolve()
    deadline = time.monotonic() + max_seconds
    if not _has_sidecar(target):
        before = _stamp(target)
        try:
            result = _read_connected(p, target.as_uri() + "?mode=ro&immutable=1", deadline, max_seconds, read)
        except ValueError:
            if not _has_sidecar(target) and _stamp(target) == before:
                raise  # the file as it is: the same error again
        else:
            if not _has_sidecar(target) and _stamp(target) == before:
                return result
    return _read_connected(p, target.as_uri() + "?mode=ro", deadline, max_seconds, read)


def _has_sidecar(target: Path) -> bool:
    return any(target.with_name(target.name + suffix).exists() for suffix in _SIDECAR_SUFFIXES)


def _stamp(target: Path) -> tuple[int, int, int, int]:
    """What changes when a file is written: its size, inode, modification and change times."""
    st = target.stat()
    return st.st_size, st.st_ino, st.st_mtime_ns, st.st_ctime_ns


def _read_connected(
    p: Path, uri: str, deadline: float, max_seconds: float, read: Callable[[sqlite3.Connection], _T]
) -> _T:
    """``read`` on a connection to ``uri`` (the ledger ``p``), bounded by ``deadline``."""
    try:
        db = sqlite3.connect(uri, uri=True, timeout=max(0.0, min(5.0, deadline - time.monotonic())))
        try:
            db.set_progress_handler(lambda: int(time.monotonic() > deadline), 10_000)
            db.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, MAX_VALUE_BYTES)
            db.execute("PRAGMA trusted_schema = OFF")
            db.execute("PRAGMA query_only = ON")
            return read(db)
        finally:
            db.close()
    except sqlite3.Error as exc:
        if _busy(exc):  # before the time bound: a reader that waited for the lock until its deadline is still busy
            raise LedgerBusy(
                f"{p}: busy: another process holds the ledger's lock; retry (a backup agent or an sqlite3 shell "
                "left open holds it; the party's own writes do not block a reader)"
            ) from None
        if time.monotonic() > deadline:
            raise ValueError(
                f"{p}: reading the ledger took longer than {max_seconds:g} s; not a ledger this party wrote"
            ) from None
        raise ValueError(f"{p} cannot be read as a ledger ({type(exc).__name__}: {str(exc)[:200]})") from None


_BUSY_CODES = frozenset((sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED))
"""SQLite's primary result codes for a database another connection holds locked."""


def _busy(exc: sqlite3.Error) -> bool:
    """An SQLite error that says another connection holds the database's lock (busy or locked)."""
    code = getattr(exc, "sqlite_errorcode", None)
    if isinstance(code, int):
        return code & 0xFF in _BUSY_CODES  # the primary code of an extended one (SQLITE_BUSY_SNAPSHOT, ...)
    return "database is locked" in str(exc) or "database table is locked" in str(exc)


def _exhausted(kind: str, exact: Fraction, spent: Fraction, cap: Fraction) -> str:
    """The refusal of a spend of ``exact`` past ``cap`` with ``spent`` already spent."""
    left = max(Fraction(0), cap - spent)
    return (
        f"this {kind} needs epsilon {format_epsilon(exact)} but only {format_epsilon(left)} "
        f"of the lifetime cap {format_epsilon(cap)} remains"
    )
