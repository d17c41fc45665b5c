"""The coordinator's spend record: the ε each party's verified releases and noised evaluations charged (SQLite).

What a train request carries as ``spend-record`` (:mod:`protocol._spend_record`, which gives the privacy
argument).  Each row also holds the id of the key the party was registered with; a party's total counts its rows under every
key it was ever recorded with, so a rotated key (a rebuilt host's new key) does not start a new total.  One row per verified release, keyed by its party and by the request it answered (the run that
made it and ``train``): a release resent for a reused ``request-tag`` is the same release, charged once.  One
row per evaluation a party answered with noised counts (its request id), its party known from the release
the same node sent in that run.  One row of ``exact_evaluations`` per run whose evaluation round was answered with
exact metrics (no ε, so no charge; review rev-s65 F5), for a resumed run to say how the model was evaluated.
Written as soon as a release is verified, before the run goes on, so that a coordinator that crashes later in
the run keeps it.  Public figures only (party ids, run ids and the ε of their requests): no data, no ε.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from fractions import Fraction
from pathlib import Path

from protocol import create_owner_only_file, make_owner_only_dirs

__all__ = ["EVALUATED_EXACTLY", "EVALUATED_WITH_NOISE", "SpendStore"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS releases (
    party_id TEXT NOT NULL,
    key_id TEXT NOT NULL,
    release_key TEXT NOT NULL,
    epsilon_exact TEXT NOT NULL,
    run_id TEXT NOT NULL,
    recorded_at REAL NOT NULL,
    PRIMARY KEY (party_id, release_key)
);
CREATE TABLE IF NOT EXISTS exact_evaluations (
    run_id TEXT PRIMARY KEY,
    recorded_at REAL NOT NULL
);
"""
"""``releases``: the charges.  ``exact_evaluations`` (from 0.2.12; review rev-s65 F5): the runs whose evaluation round
a party answered with exact metrics (NOT DP, no ε, so no row of ``releases``), so that a resumed run can say its
interrupted run evaluated the model; a coordinator of an earlier version ignores the table (it reads ``releases``
only) and records no such run."""

EVALUATED_WITH_NOISE = "noised"
"""An evaluation round answered with noised counts (each party spent evaluation-epsilon: rows in ``releases``)."""
EVALUATED_EXACTLY = "exact-metrics"
"""An evaluation round answered with exact metrics (NOT DP, no ε: a row in ``exact_evaluations``)."""


class SpendStore:
    """The record at ``path`` (created with its directory if absent, owner-only), for the parties registered now.

    Parameters
    ----------
    path : path of the SQLite file
    key_ids : Mapping of str to str
        The registered parties: party id to the id of its public key (``sha256:...``).
    """

    def __init__(self, path: str | Path, key_ids: Mapping[str, str]) -> None:
        self.key_ids = dict(key_ids)
        self.path = Path(path)
        make_owner_only_dirs(self.path.parent)
        create_owner_only_file(self.path)  # SQLite gives its -wal and -shm files the same mode
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

    def add(self, party_id: str, release_key: str, epsilon: Fraction, run_id: str) -> bool:
        """Record that the registered party ``party_id`` was charged ``epsilon`` for ``release_key`` (under its
        current key); False if that was recorded before (a resent release: nothing added)."""
        if epsilon <= 0:
            raise ValueError(f"epsilon: expected > 0, got {epsilon}")
        key_id = self.key_ids[party_id]  # a verified release's party is registered
        with self._connect() as db:
            cursor = db.execute(
                "INSERT OR IGNORE INTO releases (party_id, key_id, release_key, epsilon_exact, run_id, recorded_at) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (party_id, key_id, release_key, str(epsilon), run_id, time.time()),
            )
            return cursor.rowcount == 1

    def totals(self) -> dict[str, Fraction]:
        """Per registered party, the exact sum of the rows recorded for its party id, under its current key and
        under any former one.

        A party id names one party of the consortium: a rotated signing key (section 7 of the runbook, or a host
        rebuilt after its ledger and anchor were lost) holds the same records, so its earlier spend still counts.
        Rows of parties not registered now count for no one.  Counting a former key's rows can only add to a
        party's count (a record shared by two consortia whose parties share an id overstates it: give each
        consortium its own ``spend-record``); :meth:`former_key_totals` names them for the coordinator's log.
        """
        totals: dict[str, Fraction] = {}
        for (party_id, _), amount in self.key_totals().items():
            totals[party_id] = totals.get(party_id, Fraction(0)) + amount
        return totals

    def former_key_totals(self) -> dict[str, Fraction]:
        """Per registered party, the part of :meth:`totals` recorded under a key other than its current one."""
        former: dict[str, Fraction] = {}
        for (party_id, key), amount in self.key_totals().items():
            if key != self.key_ids[party_id]:
                former[party_id] = former.get(party_id, Fraction(0)) + amount
        return former

    def key_totals(self) -> dict[tuple[str, str], Fraction]:
        """Per registered party and key it was recorded under, the exact sum of its rows.

        One pass over the record in SQLite, grouped by party, key and the amount's exact text (a run charges
        each party the same few amounts: a group per party, key and amount, not per row); each group's text is
        read as a :class:`~fractions.Fraction` once and multiplied by its count, so the sums are exact as a
        row-by-row sum (long-horizon review F6: two row-by-row passes in Python took 1.2 s each at 200,000 rows).
        """
        with self._connect() as db:
            groups = db.execute(
                "SELECT party_id, key_id, epsilon_exact, COUNT(*) FROM releases "
                "GROUP BY party_id, key_id, epsilon_exact"
            ).fetchall()
        totals: dict[tuple[str, str], Fraction] = {}
        for party_id, key, text, count in groups:
            if party_id in self.key_ids:
                totals[party_id, key] = totals.get((party_id, key), Fraction(0)) + Fraction(text) * count
        return totals

    def note_exact_evaluation(self, run_id: str) -> None:
        """Record that a party answered ``run_id``'s evaluation round with exact metrics (review rev-s65 F5: such a
        round charges nothing, so ``releases`` has no row of it).  Public: a run id and the coordinator's clock."""
        with self._connect() as db:
            db.execute(
                "INSERT OR IGNORE INTO exact_evaluations (run_id, recorded_at) VALUES (?, ?)", (run_id, time.time())
            )

    def evaluated_runs(self, run_ids: Iterable[str]) -> dict[str, str]:
        """Those of ``run_ids`` whose evaluation round a party answered, with how: :data:`EVALUATED_WITH_NOISE` (a row
        whose request is ``<run>/<node>/evaluate``, recorded by that run) or :data:`EVALUATED_EXACTLY` (a row of
        ``exact_evaluations``).  A run interrupted before its evaluation has neither (review rev-day2 U7); so has one
        whose record could not be written, or whose coordinator (before 0.2.12) evaluated with exact metrics."""
        wanted = sorted(set(run_ids))
        if not wanted:
            return {}
        marks = ", ".join("?" * len(wanted))
        with self._connect() as db:
            exact = db.execute(f"SELECT run_id FROM exact_evaluations WHERE run_id IN ({marks})", wanted).fetchall()
            noised = db.execute(
                f"SELECT DISTINCT run_id FROM releases WHERE run_id IN ({marks}) AND release_key LIKE '%/evaluate'",
                wanted,
            ).fetchall()
        found = {str(run): EVALUATED_EXACTLY for (run,) in exact}
        found.update({str(run): EVALUATED_WITH_NOISE for (run,) in noised})
        return found

    def rows(self) -> int:
        """How many rows the record holds (for the coordinator's log)."""
        with self._connect() as db:
            return int(db.execute("SELECT COUNT(*) FROM releases").fetchone()[0])
