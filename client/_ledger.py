"""A party's persistent privacy-budget ledger (SQLite, write-ahead).

Every ε is recorded *before* anything computed with it leaves the party: a
request first reserves its ε in a committed transaction (refused if the
lifetime cap would be exceeded), then trains, then marks the entry released
together with the released bytes.  A crash after the reservation leaves the
ε counted: a retry cannot obtain a second release for free.  A repeated
request id gets the stored release back without spending again.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from edprf_core import BudgetError

__all__ = ["BudgetExhausted", "BudgetLedger", "LedgerEntry"]

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
    updated_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS ledger_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""


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
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._connect() as db:
            db.executescript(_SCHEMA)

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        db = sqlite3.connect(self.path, timeout=30.0, isolation_level=None)
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=FULL")
            yield db
        finally:
            db.close()

    def spent(self) -> float:
        """ε spent so far (all entries)."""
        with self._connect() as db:
            return float(db.execute("SELECT COALESCE(SUM(epsilon), 0) FROM spends").fetchone()[0])

    def remaining(self) -> float:
        return max(0.0, self.cap - self.spent())

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
        if not epsilon > 0:
            raise ValueError(f"epsilon must be > 0, got {epsilon}")
        now = time.time()
        with self._connect() as db:
            db.execute("BEGIN IMMEDIATE")
            try:
                if db.execute("SELECT 1 FROM spends WHERE request_id = ?", (request_id,)).fetchone():
                    raise ValueError(f"request {request_id!r} is already in the ledger")
                spent = float(db.execute("SELECT COALESCE(SUM(epsilon), 0) FROM spends").fetchone()[0])
                if spent + epsilon > self.cap + 1e-12:
                    raise BudgetExhausted(
                        f"refused: this {kind} needs epsilon {epsilon:g} but only {max(0.0, self.cap - spent):g} "
                        f"of the lifetime cap {self.cap:g} remains (spent {spent:g})"
                    )
                db.execute(
                    "INSERT INTO spends (request_id, kind, epsilon, state, run_id, detail, created_at, updated_at) "
                    "VALUES (?, ?, ?, 'reserved', ?, ?, ?, ?)",
                    (request_id, kind, float(epsilon), run_id, detail, now, now),
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
