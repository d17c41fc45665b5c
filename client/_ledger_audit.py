"""The ledger's audit tables (review rev-dpo D3, D4, D13): the refused requests, the deliveries and the trails,
beside the spends of :mod:`client._ledger` in the same SQLite file.

Their schema, their rows (:class:`RefusedRequest`, :class:`Delivery`, :class:`AuditRecords`), their writer
(:class:`AuditWriter`, which :class:`client.BudgetLedger` delegates to, and which a ``bad_request`` refusal uses alone:
it opens no more than the file), the one rule that bounds them (:func:`_keep_latest`: at most
:data:`MAX_AUDIT_ROWS` rows per table or trail, the oldest dropped and counted), and their read-only reader
(:func:`read_audit`, for :func:`client._ledger.read_records_readonly`).

Privacy cost: none.  The rows hold public request parameters, constant reason codes, policy values, what the party
knows of a recipient and the party's clock; never a refusal's text, never anything read from the data.  The ledger
is local: nothing here leaves the party, and no reply carries any of it.
"""

from __future__ import annotations

import math
import re
import sqlite3
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import TypeVar

from ._ledger_values import (
    MAX_READ_ROWS,
    checked_exact,
    exact_epsilon,
    immediate,
    meta_value,
    stamp_value,
    stored_count,
)

__all__ = [
    "AUDIT_DROPPED_KEY",
    "AUDIT_FROM_VERSION",
    "AUDIT_LOCK_SECONDS",
    "AUDIT_TABLES",
    "DROPPED_KEYS",
    "MAX_AUDIT_ROWS",
    "PARTS_TABLE",
    "RECIPIENTS_BACKFILLED_KEY",
    "RECIPIENTS_TABLE",
    "TRAILS",
    "AuditRecords",
    "AuditWriter",
    "Delivery",
    "RefusedRequest",
    "ReleaseParts",
    "add_trail_row",
    "backfill_recipients",
    "create_audit_tables",
    "first_delivery",
    "first_recipient",
    "read_audit",
    "record_recipient",
    "whole_trail",
]

_T = TypeVar("_T")

AUDIT_TABLES = ("refusals", "deliveries", "trails")
"""The audit tables of 0.2.11 (review rev-dpo D3, D4, D13), beside ``spends``: created in the first writable opening's
transaction, so a ledger of 0.2.10 or earlier gets them at its next opening and stays readable and writable by the
version that wrote it (which checks the columns of ``spends`` only).  A read-only reader of a ledger without them
says "none recorded (ledger older than 0.2.11)"."""

_AUDIT_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS refusals (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    at REAL NOT NULL,
    request_id TEXT NOT NULL DEFAULT '',
    run_id TEXT NOT NULL DEFAULT '',
    kind TEXT NOT NULL,
    epsilon_exact TEXT,
    reason TEXT NOT NULL
)""",
    """CREATE TABLE IF NOT EXISTS deliveries (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    at REAL NOT NULL,
    request_id TEXT NOT NULL,
    run_id TEXT NOT NULL DEFAULT '',
    how TEXT NOT NULL CHECK (how IN ('sent', 'resent')),
    node_id TEXT NOT NULL DEFAULT '',
    registered TEXT NOT NULL DEFAULT '',
    app TEXT NOT NULL DEFAULT ''
)""",
    """CREATE TABLE IF NOT EXISTS trails (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    at REAL NOT NULL,
    trail TEXT NOT NULL,
    line TEXT NOT NULL
)""",
)
"""The audit tables, one statement each (run one by one inside a transaction: ``executescript`` would commit it).

``refusals``: every request the party refused, with the request's own parameters and a constant reason code only
(time, request id, run id, kind: ``train``, ``evaluate``, ``ready`` or ``unknown``, the ε asked as an exact
fraction or NULL, the :class:`protocol.RefusalReason`), never the refusal's text.  ``deliveries``: every release
handed to Flower for sending (``sent``) and every resend of a stored one (``resent``), with what the party knows
of the recipient: the node id the SuperLink gave this SuperNode (``node_id``), a digest of the registered parties'
list the request carried (``registered``, empty when the coordinator registers no keys) and the installed app's
FAB hash prefix when the ClientApp runs from an installed FAB (``app``).  ``trails``: every line of the cap's
(``lifetime-cap``) and the relation's (``relation``) changes and of the replies that were not DP (``not-dp``), whole
(review rev-dpo D13: the ``ledger_meta`` trails, still written for older readers, keep the first and the latest 49
lines).  Privacy cost of all three: none; they are local records of public request parameters, policy values, the
party's clock and constants, and no reply carries them."""

PARTS_TABLE = "release_parts"
"""The table of what each completed release's ε paid for (review rev-dpo D8), added after 0.2.11 beside the audit
tables: a release completed by an earlier version has no row, and an earlier version opening a later ledger ignores
the table (it checks the columns of ``spends`` only), so the two versions still read and write each other's
ledgers; a release's entry in ``spends`` is unchanged (its detail stays the request's, which a resend compares)."""

_PARTS_SCHEMA = """CREATE TABLE IF NOT EXISTS release_parts (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    request_id TEXT NOT NULL UNIQUE,
    at REAL NOT NULL,
    count_epsilon TEXT NOT NULL,
    trees_epsilon TEXT NOT NULL,
    marginals_epsilon TEXT,
    residual_epsilon TEXT,
    depth INTEGER NOT NULL
)"""
"""One row per completed release: the ε of its parts as exact fractions (text ``n/d``, as ``spends.epsilon_exact``)
and the depth its trees used.  Privacy cost: none; every value is a public parameter or a DP output already inside
the stored release (what ``edprf inspect`` prints of it), and the row stays in the party's ledger."""

RECIPIENTS_TABLE = "release_recipients"
"""The table of each release's first recipient (review rev-s65 F1), added in 0.2.12 beside ``release_parts``: the
digest of the registered keys the train request carried (:func:`client._party.registered_digest`), written in the
transaction that completes the release (:meth:`client.BudgetLedger.complete`), so before the release leaves.  Never
pruned: one row per release, as many as ``spends`` holds, which the lifetime cap bounds.  The resend guard compares
with it (:func:`first_recipient`); the first row of ``deliveries``, which is pruned and written after the release is
completed (best effort), is only the fallback for a release completed by an earlier version that
:func:`backfill_recipients` could not copy.  0.2.11 ignores the table (it checks the columns of ``spends`` only) and
writes no row to it."""

_RECIPIENTS_SCHEMA = """CREATE TABLE IF NOT EXISTS release_recipients (
    request_id TEXT PRIMARY KEY,
    registered TEXT NOT NULL DEFAULT '',
    at REAL NOT NULL
)"""
"""One row per completed release: its request id, the digest of the registered parties' keys its train request
carried (``""`` when it carried none) and the party's clock.  Privacy cost: none; public request parameters and the
party's clock, kept locally."""

RECIPIENTS_BACKFILLED_KEY = "recipients-backfilled"
"""The ``ledger_meta`` key of how far :func:`backfill_recipients` went: ``<id>`` (every entry of ``spends`` up to that
id was looked at), then, after a space, the comma-separated ids of the entries it is still waiting for, if any (one
``reserved`` then, or released a moment before without any delivery row yet)."""

BACKFILL_WAIT_SECONDS = 60.0
"""How long after its completion :func:`backfill_recipients` waits for the ``sent`` row of a release that has no
delivery row (0.2.11 writes that row in a transaction of its own, after the completion, waiting up to
:data:`AUDIT_LOCK_SECONDS` for the lock); after that it is taken as lost."""

MAX_AUDIT_ROWS = 100_000
"""Most rows each audit table keeps (each trail of ``trails``): a coordinator can send refused requests or resends
without end, at no epsilon; past this, the oldest rows are dropped and counted (:data:`AUDIT_DROPPED_KEY`), so the
ledger stays far below what a read-only reader takes (:data:`client._ledger_values.MAX_READ_ROWS`)."""
AUDIT_DROPPED_KEY = "audit-dropped"
"""The ``ledger_meta`` key prefix of how many of a table's oldest rows were dropped: ``audit-dropped/<table>`` for
``refusals`` and ``deliveries``, ``audit-dropped/trails/<trail>`` for each trail."""

AUDIT_LOCK_SECONDS = 5.0
"""Longest wait for the ledger's write lock when a refusal or a delivery is recorded."""

AUDIT_FROM_VERSION = "0.2.11"
"""The first version whose ledgers hold the audit tables."""

TRAILS = ("lifetime-cap", "relation", "not-dp")
"""The trails the ``trails`` table keeps."""

DROPPED_KEYS = tuple(f"{AUDIT_DROPPED_KEY}/{t}" for t in AUDIT_TABLES[:2]) + tuple(
    f"{AUDIT_DROPPED_KEY}/trails/{name}" for name in TRAILS
)
"""The ``ledger_meta`` keys of the dropped rows' counts, which :func:`read_audit` reads."""

_REFUSAL_COLUMNS = ("at", "request_id", "run_id", "kind", "epsilon_exact", "reason")
_TRAIL_COLUMNS = ("trail", "line")
_DELIVERY_COLUMNS = ("at", "request_id", "run_id", "how", "node_id", "registered", "app")
_PARTS_COLUMNS = ("request_id", "count_epsilon", "trees_epsilon", "marginals_epsilon", "residual_epsilon", "depth")
_RECIPIENT_COLUMNS = ("request_id", "registered")


@dataclass(frozen=True)
class RefusedRequest:
    """A row of ``refusals``: a request the party refused (request parameters and a reason code only)."""

    at: float
    request_id: str
    run_id: str
    kind: str
    epsilon_exact: Fraction | None
    reason: str


@dataclass(frozen=True)
class Delivery:
    """A row of ``deliveries``: a release handed to Flower for sending (``sent``) or a stored one resent."""

    at: float
    request_id: str
    run_id: str
    how: str
    node_id: str
    registered: str
    app: str


@dataclass(frozen=True)
class ReleaseParts:
    """What a completed release's ε paid for (a row of ``release_parts``; review rev-dpo D8).

    Attributes
    ----------
    request_id : the release's request id (its entry in ``spends``)
    count : ε of the DP count of the training rows (0 when the size-dependent choices were given or declared)
    trees : ε of the model on the trees' rows: the entry's ε less ``count`` (sequential composition)
    marginals : ε of the marginals part's histograms on their own rows, disjoint from the trees' (parallel
        composition: ``marginals + residual`` equals ``trees``); None without a marginals part
    residual : ε of the marginals part's residual pass on the same rows as its histograms; None without one (a
        party's release never carries one)
    depth : the depth the trees used (chosen by the rule when the request left it to it)

    ``count + trees`` is the entry's ε, exactly (:attr:`total`).  Privacy cost: none (public parameters and DP
    outputs of the release itself, kept locally).
    """

    request_id: str
    count: Fraction
    trees: Fraction
    marginals: Fraction | None
    residual: Fraction | None
    depth: int

    @property
    def total(self) -> Fraction:
        """ε per record of the release: the count's and the model's (the trees' rows and the marginals' rows are
        disjoint, each paying ``trees``)."""
        return self.count + self.trees


@dataclass(frozen=True)
class AuditRecords:
    """A ledger's audit tables as a read-only reader found them; None for a table the ledger does not hold (one
    written before 0.2.11 and not opened for writing since)."""

    refusals: tuple[RefusedRequest, ...] | None = None
    deliveries: tuple[Delivery, ...] | None = None
    refusals_dropped: int = 0
    deliveries_dropped: int = 0
    trails: Mapping[str, tuple[str, ...]] | None = None
    """The lines of each trail (``lifetime-cap``, ``relation``, ``not-dp``) in the ``trails`` table, oldest first."""
    trails_dropped: Mapping[str, int] = field(default_factory=dict)
    parts: Mapping[str, ReleaseParts] | None = None
    """What each completed release's ε paid for, by request id (``release_parts``); None for a ledger without the
    table."""
    recipients: Mapping[str, str] | None = None
    """Each completed release's first recipient, by request id (``release_recipients``: the registered keys' digest,
    ``""`` for a run that registered none); None for a ledger without the table (written before 0.2.12 and not
    opened for writing since)."""


def create_audit_tables(db: sqlite3.Connection) -> None:
    """Create the audit tables (and ``release_parts``, ``release_recipients``) a ledger lacks (one written by an
    earlier version), inside ``db``'s transaction."""
    for statement in (*_AUDIT_SCHEMA, _PARTS_SCHEMA, _RECIPIENTS_SCHEMA):
        db.execute(statement)


def record_recipient(db: sqlite3.Connection, request_id: str, registered: str) -> None:
    """Keep ``registered`` as the first recipient of the release under ``request_id`` (:data:`RECIPIENTS_TABLE`),
    inside ``db``'s transaction: the one that completes the release (:meth:`client.BudgetLedger.complete`).  A row
    left under the id (a ledger restored from a backup older than the row's release) is replaced: the release now
    stored is the one this row is of."""
    db.execute(_RECIPIENTS_SCHEMA)  # a ledger opened by 0.2.11 since this version last opened it still has it
    db.execute(
        "INSERT OR REPLACE INTO release_recipients (request_id, registered, at) VALUES (?, ?, ?)",
        (request_id, registered, time.time()),
    )


def first_recipient(db: sqlite3.Connection, request_id: str) -> str | None:
    """The registered keys' digest a release under ``request_id`` first went to (review rev-s65 F1): its row of
    :data:`RECIPIENTS_TABLE`, written when it was completed, or copied from its ``sent`` row by
    :func:`backfill_recipients` for a release completed before 0.2.12; else its first delivery row's
    (:func:`first_delivery`); None when neither exists (a release made before 0.2.11, or one made before 0.2.12 whose
    ``sent`` row was never written or whose delivery rows were all pruned).  A value that is not text (a ledger edited
    by hand) is returned as it is: it equals no digest, so the guard refuses.

    The fallback stays for a release the back-fill did not copy: one whose first delivery row is ``resent`` (its
    ``sent`` row lost: that row is another asker's, which the back-fill never makes the first recipient for good, and
    which stands in here only while it is kept, as in 0.2.12's first guard), one 0.2.11 completed after this version
    last opened the ledger for writing, and one whose back-fill failed (logged).  For every release the back-fill did
    copy, the fallback would give the same digest: both read the first delivery row, which was ``sent``.

    Privacy cost: none (a local read of public request parameters).
    """
    if _has_table(db, RECIPIENTS_TABLE):
        row = db.execute("SELECT registered FROM release_recipients WHERE request_id = ?", (request_id,)).fetchone()
        if row is not None:
            return row[0]
    first = first_delivery(db, request_id)
    return None if first is None else first.registered


def backfill_recipients(db: sqlite3.Connection) -> int:
    """Copy, once, the first recipient of each release completed before 0.2.12 from its ``sent`` row into
    :data:`RECIPIENTS_TABLE` (review rev-s65 F1), inside ``db``'s transaction (the writable opening's, right after
    :func:`create_audit_tables`); the number of rows copied.

    For every ``released`` release of ``spends`` without a recipient row whose first ``deliveries`` row is ``sent``,
    that row's ``registered`` digest and time are copied: one ``INSERT ... SELECT`` (:func:`_copy_sent_rows`).  A
    first row ``resent`` (the ``sent`` one lost: another asker's) or none (a release made before 0.2.11, or whose rows
    were pruned) copies nothing: :func:`first_recipient` falls back as before.  Without this, the first delivery row
    stood in until 100,000 later rows pruned it, and the release was then resent to anyone (review rev-s65 F1).

    Done once: :data:`RECIPIENTS_BACKFILLED_KEY` keeps the highest ``spends`` id looked at, so an opening with no new
    entry reads that value and the highest id only (no scan).  An id, not a flag, because 0.2.11 may still open the
    ledger (an approved 0.2.11 bundle) and complete releases without a row after this ran: their entries come after
    the id (ids only grow), and the next opening by this version copies theirs.  The entries still ``reserved`` when
    it ran (a request training meanwhile, which 0.2.11 may complete) are kept after the id, and looked at again once
    they are not, each by its id; so is a release completed less than :data:`BACKFILL_WAIT_SECONDS` before without any
    delivery row yet (0.2.11 writes its ``sent`` row after the completion).  Every other entry is looked at once: a
    release left without a row is not looked at again (its first row cannot become ``sent``), so a ledger where some
    releases never get one does not scan at each opening.  Re-running it is harmless (it copies for releases without
    a row only); an unreadable value is taken as absent (everything is looked at again).  A row this version wrote at
    a completion is never replaced.  The copy runs in a savepoint: on an SQLite error nothing of it is kept, the
    marker included, and the error is raised for the caller (which logs it and opens the ledger all the same).

    Parameters
    ----------
    db : a connection inside a write transaction, on a ledger holding the audit tables and ``release_recipients``

    Returns
    -------
    int
        How many recipient rows were copied (0 on most openings).

    Raises
    ------
    sqlite3.Error
        The copy failed (a ``deliveries`` table edited by hand?): nothing of it is kept.

    Privacy cost: none.  It copies, locally, public request parameters the ledger already holds (the registered keys'
    digest a delivery row kept) and their time; nothing is read from the data and nothing leaves the party.
    """
    db.execute("SAVEPOINT recipients_backfill")
    try:
        copied = _backfill(db, time.time())
    except sqlite3.Error:
        if db.in_transaction:  # an error that ended the whole transaction leaves no savepoint to roll back to
            db.execute("ROLLBACK TO recipients_backfill")
            db.execute("RELEASE recipients_backfill")
        raise
    db.execute("RELEASE recipients_backfill")
    return copied


def _backfill(db: sqlite3.Connection, now: float) -> int:
    """:func:`backfill_recipients`'s work, without its savepoint."""
    through, waiting = _backfill_mark(meta_value(db, RECIPIENTS_BACKFILLED_KEY))
    (top,) = db.execute("SELECT coalesce(max(id), 0) FROM spends").fetchone()  # the end of the rowid index
    if top <= through and not waiting:
        return 0  # every entry looked at before: the usual opening
    looked_at = f"s.id > {int(through)}"  # integers parsed from the mark: nothing else goes into the statement
    if waiting:
        looked_at = f"({looked_at} OR s.id IN ({', '.join(map(str, waiting))}))"
    still = [i for (i,) in db.execute(f"SELECT s.id FROM spends AS s WHERE {looked_at} AND s.state = 'reserved'")]
    if top <= through and sorted(still) == sorted(waiting):
        return 0  # the entries waited for are all still reserved: nothing new to look at
    copied = _copy_sent_rows(db, looked_at)
    recent = [
        i
        for (i,) in db.execute(
            f"SELECT s.id FROM spends AS s WHERE {looked_at} AND s.kind = 'release' AND s.state = 'released' "
            "AND s.updated_at BETWEEN ? AND ? AND NOT EXISTS (SELECT 1 FROM release_recipients AS r "
            "WHERE r.request_id = s.request_id) AND NOT EXISTS (SELECT 1 FROM deliveries AS d "
            "WHERE d.request_id = s.request_id)",
            (now - BACKFILL_WAIT_SECONDS, now + BACKFILL_WAIT_SECONDS),
        )
    ]
    waited = sorted({*still, *recent})
    mark = f"{max(top, through)}" + (f" {','.join(map(str, waited))}" if waited else "")
    db.execute("INSERT OR REPLACE INTO ledger_meta (key, value) VALUES (?, ?)", (RECIPIENTS_BACKFILLED_KEY, mark))
    return copied


def _copy_sent_rows(db: sqlite3.Connection, looked_at: str) -> int:
    """The back-fill's one ``INSERT ... SELECT``: for each released release among the entries ``looked_at`` (an SQL
    condition on ``spends AS s``) without a recipient row, its first delivery row's digest and time, when that row is
    ``sent``; the number of rows copied.  ``deliveries`` has no index on ``request_id``: its first row per release is
    found in one pass over the table (``GROUP BY``), and only when some release lacks a row."""
    missing = (
        f"FROM spends AS s WHERE {looked_at} AND s.kind = 'release' AND s.state = 'released' "
        "AND NOT EXISTS (SELECT 1 FROM release_recipients AS r WHERE r.request_id = s.request_id)"
    )
    if db.execute(f"SELECT 1 {missing} LIMIT 1").fetchone() is None:
        return 0
    return db.execute(
        "INSERT INTO release_recipients (request_id, registered, at) "
        "SELECT d.request_id, d.registered, d.at "
        "FROM (SELECT request_id, min(id) AS first FROM deliveries GROUP BY request_id) AS f "
        "JOIN deliveries AS d ON d.id = f.first "
        f"WHERE d.how = 'sent' AND d.request_id IN (SELECT s.request_id {missing})"
    ).rowcount


_BACKFILL_MARK = re.compile(r"(\d{1,18})(?: (\d{1,18}(?:,\d{1,18}){0,9999}))?")


def _backfill_mark(value: object) -> tuple[int, tuple[int, ...]]:
    """The highest ``spends`` id :func:`backfill_recipients` looked at and the ids it waits for, from the value of
    :data:`RECIPIENTS_BACKFILLED_KEY`; ``(0, ())`` (look at every entry) when absent or unreadable."""
    match = _BACKFILL_MARK.fullmatch(value) if isinstance(value, str) else None
    if match is None:
        return 0, ()
    waiting = tuple(int(i) for i in match.group(2).split(",")) if match.group(2) else ()
    return int(match.group(1)), waiting


def _has_table(db: sqlite3.Connection, name: str) -> bool:
    return db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)).fetchone() is not None


class AuditWriter:
    """Appends rows to the audit tables of the existing ledger at ``path``, and nothing else.

    Each row is one transaction of its own, which waits at most :data:`AUDIT_LOCK_SECONDS` for the ledger's write
    lock (a refusal's reply, a readiness answer among them, is not held up for the 30 s a spend waits), creates the
    tables a ledger of 0.2.10 or earlier lacks, runs ``check`` first (raising there writes nothing), and keeps the
    table's latest :data:`MAX_AUDIT_ROWS` rows (:func:`_keep_latest`).  The file is opened for reading and writing,
    never created: a row never makes a ledger where there was none.

    Parameters
    ----------
    path : path of the party's ledger (an SQLite file that exists)
    check : callable, optional
        Run on the connection inside the row's transaction, before anything is written: raises to refuse the file
        (:func:`client._ledger.audit_writer` refuses a ledger of another version or of another party).  None: the
        caller opened the ledger already (:class:`client.BudgetLedger`).

    Privacy cost: none (public request parameters, reason codes and the party's clock, kept locally).
    """

    def __init__(self, path: str | Path, check: Callable[[sqlite3.Connection], None] | None = None) -> None:
        self.path = Path(path)
        self.check = check

    def record_refusal(self, request_id: str, run_id: str, kind: str, epsilon: float | None, reason: str) -> None:
        """Append a refused request to ``refusals``: see :meth:`client.BudgetLedger.record_refusal`.

        Raises
        ------
        sqlite3.Error, OSError, ValueError
            The row cannot be written (a locked ledger, a full disk, a file ``check`` refuses).
        """
        asked = None
        if isinstance(epsilon, (int, float)) and not isinstance(epsilon, bool) and 0 < epsilon < math.inf:
            asked = str(exact_epsilon(epsilon))
        self._append(
            "refusals",
            "INSERT INTO refusals (at, request_id, run_id, kind, epsilon_exact, reason) VALUES (?, ?, ?, ?, ?, ?)",
            (time.time(), _id_text(request_id), _id_text(run_id), _id_text(kind, 16), asked, _id_text(reason, 40)),
        )

    def record_delivery(
        self, request_id: str, run_id: str, how: str, node_id: str = "", registered: str = "", app: str = ""
    ) -> None:
        """Append a delivery to ``deliveries``: see :meth:`client.BudgetLedger.record_delivery`.

        Raises
        ------
        sqlite3.Error, OSError, ValueError
            The row cannot be written.
        """
        self._append(
            "deliveries",
            "INSERT INTO deliveries (at, request_id, run_id, how, node_id, registered, app) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                time.time(),
                _id_text(request_id),
                _id_text(run_id),
                how,
                _id_text(node_id, 40),
                registered[:64],
                app[:64],
            ),
        )

    def record_parts(self, parts: ReleaseParts) -> None:
        """Keep what a completed release's ε paid for in ``release_parts`` (one row per request id: a later row for the
        same id replaces it).

        Raises
        ------
        sqlite3.Error, OSError, ValueError
            The row cannot be written.
        """

        def exact(value: Fraction | None) -> str | None:
            return None if value is None else str(value)

        self._append(
            PARTS_TABLE,
            "INSERT OR REPLACE INTO release_parts (request_id, at, count_epsilon, trees_epsilon, marginals_epsilon, "
            "residual_epsilon, depth) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                _id_text(parts.request_id),
                time.time(),
                str(parts.count),
                str(parts.trees),
                exact(parts.marginals),
                exact(parts.residual),
                int(parts.depth),
            ),
            prune=False,  # one row per release: as many as spends holds, which is never pruned
        )

    def _append(self, table: str, insert: str, values: tuple, prune: bool = True) -> None:
        """One row into the audit ``table``, the table's oldest rows past :data:`MAX_AUDIT_ROWS` dropped and counted,
        in one transaction (see the class)."""
        uri = self.path.resolve().as_uri() + "?mode=rw"
        db = sqlite3.connect(uri, uri=True, timeout=AUDIT_LOCK_SECONDS, isolation_level=None)
        try:
            # no journal_mode: a ledger keeps the WAL mode its opening set, and setting it would write to a file
            # that ``check`` is yet to refuse
            db.execute("PRAGMA synchronous=FULL")
            with immediate(db):
                if self.check is not None:
                    self.check(db)
                create_audit_tables(db)
                db.execute(insert, values)
                if prune:
                    _keep_latest(db, table)
        finally:
            db.close()


def add_trail_row(db: sqlite3.Connection, trail: str, line: str) -> None:
    """``line`` into the ``trails`` table under ``trail`` (inside ``db``'s transaction), the trail's oldest rows past
    :data:`MAX_AUDIT_ROWS` dropped and counted (a coordinator can ask for exact metrics without end where a policy
    allows them)."""
    db.execute(_AUDIT_SCHEMA[2])
    db.execute("INSERT INTO trails (at, trail, line) VALUES (?, ?, ?)", (time.time(), trail, line))
    _keep_latest(db, "trails", trail)


def _keep_latest(db: sqlite3.Connection, table: str, trail: str | None = None) -> None:
    """Keep the latest :data:`MAX_AUDIT_ROWS` rows of the audit ``table`` (of its ``trail``, for ``trails``), inside
    ``db``'s transaction: the oldest past them (lowest ids) are deleted and their number added to the table's count
    under :data:`AUDIT_DROPPED_KEY` (an unreadable count starts from 0).

    The one pruning rule of the three tables: rows are counted, not inferred from the ids, so a table whose ids
    have gaps (rows deleted by hand) keeps as many rows as one without.
    """
    where, args = ("WHERE trail = ?", (trail,)) if trail is not None else ("", ())
    (span,) = db.execute(f"SELECT coalesce(max(id) - min(id) + 1, 0) FROM {table} {where}", args).fetchone()
    if span <= MAX_AUDIT_ROWS:  # no more rows than ids between the lowest and the highest: no count needed
        return  # (min and max read the id index's ends; a count read every row, at each row written)
    (rows,) = db.execute(f"SELECT count(*) FROM {table} {where}", args).fetchone()
    if rows <= MAX_AUDIT_ROWS:
        return
    dropped = db.execute(
        f"DELETE FROM {table} WHERE id IN (SELECT id FROM {table} {where} ORDER BY id LIMIT ?)",
        (*args, rows - MAX_AUDIT_ROWS),
    ).rowcount
    key = f"{AUDIT_DROPPED_KEY}/{table}" + (f"/{trail}" if trail is not None else "")
    db.execute(
        "INSERT OR REPLACE INTO ledger_meta (key, value) VALUES (?, ?)",
        (key, str((stored_count(meta_value(db, key)) or 0) + dropped)),
    )


def first_delivery(db: sqlite3.Connection, request_id: str) -> Delivery | None:
    """The first row of ``deliveries`` under ``request_id``, or None: no row (a release made before 0.2.11, whose
    ``sent`` row could not be written, or whose rows were all pruned), or no table.  Not the first recipient when the
    ``sent`` row is missing (its first ``resent`` row is another asker's): :func:`first_recipient` reads it only for a
    release completed before 0.2.12."""
    if not _has_table(db, "deliveries"):
        return None
    row = db.execute(
        f"SELECT {', '.join(_DELIVERY_COLUMNS)} FROM deliveries WHERE request_id = ? ORDER BY id LIMIT 1",
        (_id_text(request_id),),
    ).fetchone()
    return None if row is None else _checked_delivery(row, f"deliveries of {request_id[:64]!r}")


def _id_text(value: object, most: int = 256) -> str:
    """An id or code as the audit tables keep it: text, at most ``most`` characters (a refused request's ids may
    break the request's rules; they are kept cut, and shown safely by the readers)."""
    return value[:most] if isinstance(value, str) else ""


def whole_trail(
    meta_count: int, meta_lines: Sequence[str], table_lines: Sequence[str] | None, table_dropped: int = 0
) -> tuple[int, list[str]]:
    """A trail as complete as the ledger holds it: how many lines it counts, and the lines it has (oldest first).

    ``meta_count`` and ``meta_lines``: the ``ledger_meta`` trail (:func:`client.trail_lines`,
    :func:`client.not_dp_replies`: the first and the latest lines of every change, counted); ``table_lines``: the
    ``trails`` table's lines of it (None for a ledger without the table), every change since the ledger got the table
    (0.2.11), less the ``table_dropped`` oldest.  The two are merged by their text (as multisets) and their UTC time
    stamps, not by position: the meta also holds lines written before the table, and lines 0.2.10 wrote after it
    (0.2.10 still opens a 0.2.11 ledger and keeps only the meta trail: review rev-s64 F2, a change shown twice and the
    latest one lost).  The count is the larger of the meta's and the lines merged plus the table's dropped ones."""
    if table_lines is None:
        return max(meta_count, len(meta_lines)), list(meta_lines)
    in_table = Counter(table_lines)  # a multiset: a policy changed back and forth repeats a line within a second
    only_in_meta = []
    for line in meta_lines:
        if in_table[line]:
            in_table[line] -= 1
        else:
            only_in_meta.append(line)
    merged = sorted([*only_in_meta, *table_lines], key=_line_time)  # stable: equal times keep the meta's first
    return max(meta_count, len(merged) + table_dropped), merged


_LINE_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")


def _line_time(line: str) -> str:
    """A trail line's UTC time stamp (its first 20 characters), or ``""`` (first) for a line without one."""
    return line[:20] if _LINE_TIME.fullmatch(line[:20]) else ""


def read_audit(db: sqlite3.Connection, p: Path, meta: Mapping[str, str]) -> AuditRecords:
    """The audit tables of the ledger ``p`` on a read-only connection of :func:`client._ledger.read_records_readonly`
    (the file untrusted: every row checked for its kinds), with the dropped rows' counts from ``meta`` (its values
    of :data:`DROPPED_KEYS`); a table the ledger does not hold is None.

    Raises
    ------
    ValueError
        A table that is not one, that lacks columns this version writes, holds more than
        :data:`client._ledger_values.MAX_READ_ROWS` rows, or a value of the wrong kind; the message quotes no text
        from the file.
    """
    trail_rows = _audit_rows(db, p, "trails", _TRAIL_COLUMNS, _checked_trail_row)
    trails: dict[str, tuple[str, ...]] | None = None
    if trail_rows is not None:
        trails = {name: tuple(line for t, line in trail_rows if t == name) for name in TRAILS}
    parts_rows = _audit_rows(db, p, PARTS_TABLE, _PARTS_COLUMNS, _checked_parts)
    # no id column: one row per request id, its primary key (the order does not matter in a mapping)
    recipient_rows = _audit_rows(db, p, RECIPIENTS_TABLE, _RECIPIENT_COLUMNS, _checked_recipient, "request_id")
    return AuditRecords(
        _audit_rows(db, p, "refusals", _REFUSAL_COLUMNS, _checked_refusal),
        _audit_rows(db, p, "deliveries", _DELIVERY_COLUMNS, _checked_delivery),
        stored_count(meta.get(DROPPED_KEYS[0])) or 0,
        stored_count(meta.get(DROPPED_KEYS[1])) or 0,
        trails,
        {name: stored_count(meta.get(f"{AUDIT_DROPPED_KEY}/trails/{name}")) or 0 for name in TRAILS},
        None if parts_rows is None else {r.request_id: r for r in parts_rows},
        None if recipient_rows is None else dict(recipient_rows),
    )


def _audit_rows(
    db: sqlite3.Connection,
    p: Path,
    table: str,
    columns: tuple[str, ...],
    check: Callable[[Sequence, str], _T],
    order: str = "id",
) -> tuple[_T, ...] | None:
    """The checked rows of the audit ``table`` in the order of its column ``order`` (``id``: oldest first), or None when
    the ledger holds no such table; a table without the columns this version writes is refused as the ``spends``
    table of another version is."""
    kinds = [r[0] for r in db.execute("SELECT type FROM sqlite_master WHERE name = ? LIMIT 2", (table,))]
    if not kinds:
        return None
    if kinds != ["table"]:
        raise ValueError(f"{p}: {table} is not a table (not a ledger this party wrote)")
    found = {row[1] for row in db.execute(f"PRAGMA table_info({table})")}
    if not set(columns) <= found:
        raise ValueError(f"{p}: its {table} table lacks columns this version writes (not a ledger it wrote)")
    cursor = db.execute(f"SELECT {', '.join(columns)} FROM {table} ORDER BY {order} LIMIT {MAX_READ_ROWS + 1}")
    rows = [check(row, f"{p}: {table} row {i + 1}") for i, row in enumerate(cursor)]
    if len(rows) > MAX_READ_ROWS:
        raise ValueError(f"{p}: expected at most {MAX_READ_ROWS} rows in {table}, got more")
    return tuple(rows)


def _texts(values: Sequence, names: tuple[str, ...], where: str) -> None:
    """Check that each of a row's ``values`` (named ``names``, in order) is text.

    Parameters
    ----------
    values : the row's values, as SQLite handed them back (the file is untrusted: any kind)
    names : their columns' names, for the message
    where : the ledger and the row, for the message

    Raises
    ------
    ValueError
        A value that is not text, naming its column and its kind, never its value.
    """
    for name, value in zip(names, values):
        if not isinstance(value, str):
            raise ValueError(f"{where}: {name} expected text, got {type(value).__name__}")  # noqa: TRY004 - a bad file


def _checked_refusal(row: Sequence, where: str) -> RefusedRequest:
    at, request_id, run_id, kind, text, reason = row
    _texts((request_id, run_id, kind, reason), ("request_id", "run_id", "kind", "reason"), where)
    if text is not None and not isinstance(text, str):
        raise ValueError(f"{where}: epsilon_exact expected text or null, got {type(text).__name__}")
    return RefusedRequest(
        stamp_value(at), request_id, run_id, kind, None if text is None else checked_exact(text, where), reason
    )


def _checked_trail_row(row: Sequence, where: str) -> tuple[str, str]:
    _texts(row, _TRAIL_COLUMNS, where)
    return row[0], row[1][:300]


def _checked_delivery(row: Sequence, where: str) -> Delivery:
    at, *texts = row
    _texts(texts, _DELIVERY_COLUMNS[1:], where)
    return Delivery(stamp_value(at), *texts)


def _checked_recipient(row: Sequence, where: str) -> tuple[str, str]:
    _texts(row, _RECIPIENT_COLUMNS, where)
    return row[0], row[1][:64]


def _checked_parts(row: Sequence, where: str) -> ReleaseParts:
    request_id, count, trees, marginals, residual, depth = row
    _texts((request_id, count, trees), _PARTS_COLUMNS[:3], where)
    for name, value in (("marginals_epsilon", marginals), ("residual_epsilon", residual)):
        if value is not None and not isinstance(value, str):
            raise ValueError(f"{where}: {name} expected text or null, got {type(value).__name__}")
    if isinstance(depth, bool) or not isinstance(depth, int) or not 0 <= depth <= 10_000:
        shown = "a value out of range" if isinstance(depth, int) else type(depth).__name__
        raise ValueError(f"{where}: depth expected an integer in [0, 10000], got {shown}")

    def exact(value: str | None) -> Fraction | None:
        return None if value is None else checked_exact(value, where)

    return ReleaseParts(
        request_id, checked_exact(count, where), checked_exact(trees, where), exact(marginals), exact(residual), depth
    )
