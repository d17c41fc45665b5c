"""The party check's notes on a ledger's history: at WARNING once per ledger state in the party's log.

The ClientApp's lifespan hook runs the party check before every message (:func:`client._preflight.log_preflight`).
Some of its notes describe what the ledger keeps for ever (:attr:`client._preflight.Finding.once_per`): the
lifetime cap's changes, requests reserved and never completed, spend carried from the coordinator's record,
replies that were not differentially private.  Logged at WARNING at every ClientApp start, they repeated in the
SuperNode's log for ever.  Now such a note is logged at WARNING the first time the ClientApp finds the ledger in
that state, and at DEBUG after: the ledger's ``ledger_meta`` keeps a mark of each note logged
(:data:`client._ledger.NOTED_KEY`), and a change of state (another cap change, another request left reserved)
is a new note.  ``edprf party check`` and ``edprf budget`` show every note, every time.

Local only: nothing here reaches a reply, and what the ledger counts does not depend on the marks.  A ledger that
cannot be read or written now leaves every note at WARNING.
"""

from __future__ import annotations

import hashlib
import logging
import sqlite3
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from ._ledger import record_noted

if TYPE_CHECKING:
    from ._preflight import Finding

__all__ = ["noted_before"]

log = logging.getLogger("edprf.party")


def _mark(finding: Finding) -> str:
    """What identifies a note and the ledger state it describes (its text may not show all of that state)."""
    return hashlib.sha256(f"{finding.subject}\0{finding.text}\0{finding.once_per}".encode()).hexdigest()[:32]


def noted_before(findings: Sequence[Finding], stored: Mapping[str, str]) -> set[int]:
    """The indices of ``findings`` that are notes already logged for the same ledger state, by the marks ``stored``
    in their ledger (its ``subject``; :attr:`client._preflight.PreflightReport.noted`, read by the check); the
    marks of the current ones are then stored there, so that each is logged once.

    Never raises: a ledger that cannot be written is left as it is, and its notes count as new next time.
    """
    by_ledger: dict[str, list[int]] = {}
    for i, finding in enumerate(findings):
        if finding.level == "note" and finding.once_per:
            by_ledger.setdefault(finding.subject, []).append(i)
    quiet: set[int] = set()
    for ledger, indices in by_ledger.items():
        if ledger not in stored:  # not read by the check: nothing known of what was logged
            continue
        marks = {i: _mark(findings[i]) for i in indices}
        logged = set(stored[ledger].split())
        quiet |= {i for i, mark in marks.items() if mark in logged}
        if set(marks.values()) != logged:
            try:
                record_noted(ledger, "\n".join(sorted(set(marks.values()))))
            except (sqlite3.Error, OSError) as exc:  # logged at WARNING again next time: no harm
                log.debug("ledger %s: could not record the notes logged (%s)", ledger, exc)
    return quiet
