"""Other ledgers of the same party beside its ledger: each is a lifetime cap of its own over the same records.

The cap is kept by one ledger file.  A party pointed at a second ``ledger-path`` (a hospital joining a second
consortium with a new file, say) starts a second full cap, and nothing in either file sees the other's spend
(review rev-dpo D2: ``party check`` said "2 epsilon available, no problem found" beside an exhausted ledger of the
same party).  ``edprf party check`` looks for such files in the ledger's directory and in the policy's, and reports
each as a problem: one party has one ledger for every consortium.  It reads the files' ``ledger_meta`` only (the
party id), read-only and in bounded time, and their totals as ``edprf budget`` does; nothing of them leaves the
party's terminal.  Files it cannot read as a ledger (another SQLite database, a damaged file) are passed over: this
is a look for the common mistake, not a proof that no other ledger exists elsewhere.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

from ._budget_state import read_budget
from ._ledger import PARTY_ID_KEY, format_epsilon, read_meta_readonly
from ._ledger_anchor import LEDGER_ID_KEY

__all__ = ["SiblingLedger", "sibling_ledger_text", "sibling_ledgers"]

_LOOKED_AT = 200
"""Most ``*.sqlite`` files looked at in one directory (a directory of many databases is not a party's)."""

_READ_SECONDS = 2.0
"""Longest time one candidate file's read may take."""


@dataclass(frozen=True)
class SiblingLedger:
    """A ledger file other than the party's that records the same party id, and what it records as spent (None:
    its entries could not be read)."""

    path: Path
    spent: Fraction | None


def sibling_ledgers(ledger: str | Path, party_id: str, also_in: tuple[str | Path, ...] = ()) -> list[SiblingLedger]:
    """The ledgers of ``party_id`` in ``ledger``'s directory and in the directories ``also_in`` (the policy's),
    ``ledger`` itself and copies of it (a backup kept beside it: the same ledger id) left out, in name order.

    Privacy cost: none (the party's own files, read for its own terminal).
    """
    own = Path(ledger).resolve()
    try:  # a copy of the party's own ledger (a backup kept beside it) holds its ledger id: not a second cap
        own_id = read_meta_readonly(own, (LEDGER_ID_KEY,), max_seconds=_READ_SECONDS).get(LEDGER_ID_KEY)
    except (ValueError, OSError):
        own_id = None  # no ledger yet, or one that cannot be read (the check says so on its own line)
    directories = dict.fromkeys(Path(d).resolve() for d in (Path(ledger).parent, *also_in))
    found: list[SiblingLedger] = []
    for directory in directories:
        try:
            candidates = sorted(p for p in directory.glob("*.sqlite") if p.is_file())[:_LOOKED_AT]
        except OSError:
            continue
        for candidate in candidates:
            if candidate.resolve() == own:
                continue
            try:
                meta = read_meta_readonly(candidate, (PARTY_ID_KEY, LEDGER_ID_KEY), max_seconds=_READ_SECONDS)
            except (ValueError, OSError):
                continue
            if meta.get(PARTY_ID_KEY) != party_id or (own_id is not None and meta.get(LEDGER_ID_KEY) == own_id):
                continue
            state = read_budget(candidate, party_id=party_id, max_seconds=_READ_SECONDS)
            found.append(SiblingLedger(candidate, None if state.ledger_error else state.spent))
    return found


def sibling_ledger_text(sibling: SiblingLedger, party_id: str, ledger: str | Path) -> str:
    """The party check's problem line for ``sibling``."""
    spent = "its entries cannot be read" if sibling.spent is None else f"spent {format_epsilon(sibling.spent)}"
    return (
        f"another ledger of party {party_id!r} is at {sibling.path} ({spent}): the lifetime cap is kept per ledger "
        f"file, so two ledgers give the same records two caps and neither counts the other's spend; one party has "
        f"one ledger for every consortium: point ledger-path at the ledger this party has used ({Path(ledger).name} "
        "or that one), and keep the other as a record (never delete a ledger)"
    )
