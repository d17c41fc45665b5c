"""A party's persistent privacy-budget ledger (SQLite, write-ahead).

Exact accounting: every ε is stored as an integer number of millionths
(``epsilon_units``) and sums are integer sums, so no rounding can let a
request slip past the cap (``2.0 + 1e-16 == 2.0`` in floating point; in
units it is refused at once: 1e-16 is not a whole number of units).  A
request's ε must be a positive multiple of 1e-6.

Every ε is recorded *before* anything computed with it leaves the party: a
request first reserves its ε in a committed transaction (refused if the
lifetime cap would be exceeded), then trains, then marks the entry released
together with the released bytes.  A crash after the reservation leaves the
ε counted: a retry cannot obtain a second release for free.  A repeated
request id gets the stored release back without spending again.
"""

from __future__ import annotations

import math
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from edprf_core import BudgetError

__all__ = ["EPSILON_UNIT", "BudgetExhausted", "BudgetLedger", "LedgerEntry", "epsilon_units"]

UNITS_PER_EPSILON = 1_000_000
EPSILON_UNIT = 1.0 / UNITS_PER_EPSILON

_SCHEMA = """
CREATE TABLE IF NOT EXISTS spends (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    request_id TEXT NOT NULL UNIQUE,
    kind TEXT NOT NULL CHECK (kind IN ('release', 'evaluation')),
    epsilon REAL NOT NULL CHECK (epsilon > 0),
    epsilon_units INTEGER CHECK (epsilon_units > 0),
    state TEXT NOT NULL CHECK (state IN ('reserved', 'released', 'failed')),
    run_id TEXT NOT NULL DEFAULT '',
    detail TEXT NOT NULL DEFAULT '',
    payload BLOB,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS ledger_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""


def epsilon_units(epsilon: float, allow_zero: bool = False) -> int:
    """ε as an integer number of millionths.

    Raises ``ValueError`` unless ``epsilon`` is a finite multiple of 1e-6
    (positive, or zero when ``allow_zero``): the ledger counts exactly.
    """
    if isinstance(epsilon, bool) or not isinstance(epsilon, (int, float)) or not math.isfinite(epsilon):
        raise ValueError(f"expected a finite number, got {epsilon!r}")
    units = round(epsilon * UNITS_PER_EPSILON)
    if units / UNITS_PER_EPSILON != epsilon or units < 0 or (units == 0 and not allow_zero):
        low = "a non-negative" if allow_zero else "a positive"
        raise ValueError(f"expected {low} multiple of {EPSILON_UNIT:g} (the ledger counts epsilon exactly in "
                         f"millionths), got {epsilon!r}")
    return units


def _units_text(units: int) -> str:
    return f"{units / UNITS_PER_EPSILON:g}"


class BudgetExhausted(BudgetError):
    """The request would take the party past its lifetime ε cap."""


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


class BudgetLedger:
    """Lifetime ε ledger of one party, in an SQLite file.

    Parameters
    ----------
    path : path of the SQLite database (created if absent)
    cap : float in (0, inf)
        The party's lifetime ε cap (from its policy).  Every entry, reserved,
        released or failed, counts against it (sequential composition).
    """

    def __init__(self, path: str | Path, cap: float) -> None:
        self.path = Path(path)
        self.cap = float(cap)
        self.cap_units = epsilon_units(cap)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._connect() as db:
            db.executescript(_SCHEMA)
            columns = {row[1] for row in db.execute("PRAGMA table_info(spends)")}
            if "epsilon_units" not in columns:  # a ledger written before exact accounting
                db.execute("ALTER TABLE spends ADD COLUMN epsilon_units INTEGER")
            # older entries: counted conservatively, rounded up to whole units
            for rowid, eps in db.execute("SELECT id, epsilon FROM spends WHERE epsilon_units IS NULL").fetchall():
                db.execute("UPDATE spends SET epsilon_units = ? WHERE id = ?",
                           (max(1, math.ceil(eps * UNITS_PER_EPSILON - 1e-6)), rowid))

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        db = sqlite3.connect(self.path, timeout=30.0, isolation_level=None)
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=FULL")
            yield db
        finally:
            db.close()

    @staticmethod
    def _spent_units(db: sqlite3.Connection) -> int:
        return int(db.execute("SELECT COALESCE(SUM(epsilon_units), 0) FROM spends").fetchone()[0])

    def spent_units(self) -> int:
        """ε spent so far (all entries), in millionths (exact)."""
        with self._connect() as db:
            return self._spent_units(db)

    def spent(self) -> float:
        """ε spent so far (all entries)."""
        return self.spent_units() / UNITS_PER_EPSILON

    def remaining(self) -> float:
        return max(0, self.cap_units - self.spent_units()) / UNITS_PER_EPSILON

    def find(self, request_id: str) -> tuple[LedgerEntry, bytes | None] | None:
        with self._connect() as db:
            row = db.execute(
                "SELECT request_id, kind, epsilon, state, run_id, detail, created_at, updated_at, payload "
                "FROM spends WHERE request_id = ?", (request_id,)).fetchone()
        if row is None:
            return None
        return LedgerEntry(*row[:8]), row[8]

    def reserve(self, request_id: str, kind: str, epsilon: float, run_id: str = "", detail: str = "") -> None:
        """Record ``epsilon`` as spent, atomically refusing what exceeds the cap.

        Raises :class:`BudgetExhausted` (nothing recorded) if the cap would be
        exceeded, and :class:`ValueError` if ``request_id`` is already used.
        """
        units = epsilon_units(epsilon)
        now = time.time()
        with self._connect() as db:
            db.execute("BEGIN IMMEDIATE")
            try:
                if db.execute("SELECT 1 FROM spends WHERE request_id = ?", (request_id,)).fetchone():
                    raise ValueError(f"request {request_id!r} is already in the ledger")
                spent = self._spent_units(db)
                if spent + units > self.cap_units:
                    raise BudgetExhausted(
                        f"refused: this {kind} needs epsilon {_units_text(units)} but only "
                        f"{_units_text(max(0, self.cap_units - spent))} of the lifetime cap "
                        f"{_units_text(self.cap_units)} remains (spent {_units_text(spent)})"
                    )
                db.execute(
                    "INSERT INTO spends (request_id, kind, epsilon, epsilon_units, state, run_id, detail, created_at, "
                    "updated_at) VALUES (?, ?, ?, ?, 'reserved', ?, ?, ?, ?)",
                    (request_id, kind, units / UNITS_PER_EPSILON, units, run_id, detail, now, now),
                )
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise

    def complete(self, request_id: str, payload: bytes | None = None) -> None:
        """Mark a reservation released (storing what was released)."""
        self._set_state(request_id, "released", payload)

    def fail(self, request_id: str, detail: str) -> None:
        """Mark a reservation failed; its ε stays counted."""
        self._set_state(request_id, "failed", None, detail)

    def _set_state(self, request_id: str, state: str, payload: bytes | None, detail: str | None = None) -> None:
        with self._connect() as db:
            cur = db.execute(
                "UPDATE spends SET state = ?, payload = COALESCE(?, payload), detail = COALESCE(?, detail), "
                "updated_at = ? WHERE request_id = ? AND state = 'reserved'",
                (state, payload, detail, time.time(), request_id),
            )
            if cur.rowcount != 1:
                raise ValueError(f"no open reservation for request {request_id!r}")

    def entries(self) -> list[LedgerEntry]:
        with self._connect() as db:
            rows = db.execute(
                "SELECT request_id, kind, epsilon, state, run_id, detail, created_at, updated_at "
                "FROM spends ORDER BY id").fetchall()
        return [LedgerEntry(*r) for r in rows]

    def secret(self, key: str, factory: Callable[[], str]) -> str:
        """A party-local secret stored in the ledger (created once by ``factory``)."""
        with self._connect() as db:
            db.execute("BEGIN IMMEDIATE")
            row = db.execute("SELECT value FROM ledger_meta WHERE key = ?", (key,)).fetchone()
            if row is None:
                value = factory()
                db.execute("INSERT INTO ledger_meta (key, value) VALUES (?, ?)", (key, value))
                db.execute("COMMIT")
                return value
            db.execute("COMMIT")
            return row[0]
