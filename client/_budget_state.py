"""What a party has spent and has left, read from its ledger and the ledger's anchor without changing either.

The one reader of a party's spend for display: ``edprf party check`` (:mod:`client._preflight`), the closing
budgets of ``edprf consortium`` and ``edprf budget`` all take a :class:`BudgetState` from :func:`read_budget`
and word it their own way.  The spend it reports is the spend the party counts: what its ledger holds, plus
what the anchor records beyond it (a ledger restored from a backup, replaced or lost), which
:class:`~client._ledger.BudgetLedger` writes into the ledger as spent before the party serves again.

Reading never writes: a missing ledger is not created (no file, no ``-wal``, no ``-shm``), an existing one is
opened read-only (:func:`~client._ledger.read_ledger_readonly`: regular files only, bounded in time and size,
the file untrusted), and the anchor is only read.  Privacy cost: none (nothing leaves the party).
"""

from __future__ import annotations

import errno
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from fractions import Fraction
from pathlib import Path
from types import MappingProxyType
from typing import Literal

from edprf_core.count_text import count_text

from ._disk_space import low_disk_text
from ._ledger import (
    CAP_CHANGE_COUNT_KEY,
    CAP_CHANGES_KEY,
    CAP_KEY,
    NOT_DP_COUNT_KEY,
    NOT_DP_KEY,
    NOTED_KEY,
    PARTY_ID_KEY,
    READ_SECONDS,
    RELATION_CHANGE_COUNT_KEY,
    RELATION_CHANGES_KEY,
    RELATION_KEY,
    AuditRecords,
    LedgerBusy,
    LedgerEntry,
    LedgerOfAnotherVersion,
    LedgerTooLarge,
    another_party_text,
    dangling_link_text,
    exact_epsilon,
    format_epsilon,
    read_records_readonly,
    total_spent,
)
from ._ledger_anchor import (
    CARRIED_FROM_KEY,
    LEDGER_ID_KEY,
    LedgerAnchor,
    anchor_path,
    carried,
    carried_before,
    read_anchor,
)

__all__ = ["BudgetState", "LedgerStatus", "read_budget"]

META_KEYS = (
    LEDGER_ID_KEY,
    PARTY_ID_KEY,
    CAP_KEY,
    CAP_CHANGES_KEY,
    CAP_CHANGE_COUNT_KEY,
    RELATION_KEY,
    RELATION_CHANGES_KEY,
    RELATION_CHANGE_COUNT_KEY,
    NOT_DP_KEY,
    NOT_DP_COUNT_KEY,
    NOTED_KEY,
)
"""The ``ledger_meta`` keys :func:`read_budget` reads (the ledger's id and party, its cap's and its relation's
trails, the NOT DP trail, the notes on them the ClientApp has logged)."""

_ABSENT = (errno.ENOENT, errno.ENOTDIR)
"""``stat`` errors that mean nothing is at the path (not a file that cannot be read)."""


class LedgerStatus(StrEnum):
    """What :func:`read_budget` found at a party's ledger path and beside it (:attr:`BudgetState.status`)."""

    READ = "read"
    """The ledger was read, and its anchor records no more than it holds (or there is no anchor)."""
    BEHIND_ANCHOR = "behind-anchor"
    """The ledger was read and its anchor records more (a ledger restored from a backup, or replaced): the
    party counts the difference (:attr:`BudgetState.carried`) as spent before its next request."""
    NOT_CREATED = "not-created"
    """No ledger and no anchor: a party creates its ledger on its first request, so one that served none has
    spent nothing (otherwise the ledger path is wrong)."""
    LOST = "lost"
    """No ledger, but its anchor: the ledger was deleted or moved; the new ledger counts what the anchor
    records as spent."""
    UNREADABLE = "unreadable"
    """Something is at the ledger path but it cannot be read as a ledger (:attr:`BudgetState.ledger_error`),
    or a symbolic link to nothing is (a broken mount or restore; the party refuses to serve), or it is a ledger
    of another edprf-fl version or of another party (:attr:`BudgetState.ledger_of_another`): what the party
    spent is unknown."""
    ANCHOR_UNREADABLE = "anchor-unreadable"
    """The anchor cannot be read (:attr:`BudgetState.anchor_error`, which says what to do: a damaged anchor beside
    the current ledger is moved aside, a link to nothing mounted or restored): the party refuses to serve until it
    can be read, and what it spent is unknown; the ledger is still read when it can be."""


_UNKNOWN = frozenset((LedgerStatus.UNREADABLE, LedgerStatus.ANCHOR_UNREADABLE))


@dataclass(frozen=True)
class BudgetState:
    """A party's spend as its ledger and the ledger's anchor record it (from :func:`read_budget`).

    Attributes
    ----------
    ledger_path : Path
        The ledger that was read (or looked for).
    status : LedgerStatus
        What was found; it decides which of the other fields hold anything.
    cap : Fraction or None
        The lifetime cap given to :func:`read_budget`, exactly; None when none was given.
    in_ledger : Fraction or None
        The exact sum of the ledger's entries; None when the ledger was not read (absent or unreadable).
    carried : Fraction
        What the anchor records beyond the ledger (all it records when the ledger is absent or another one),
        which the party counts as spent; 0 when nothing.
    anchor : LedgerAnchor or None
        The anchor beside the ledger; None when there is none or it cannot be read.
    ledger_absent : bool
        Nothing is at the ledger path (it, or a directory on it, does not exist).
    ledger_error : str
        Why the ledger was not read, one line (``no ledger at <path>`` when absent); ``""`` when it was.
    anchor_error : str
        Why the anchor cannot be read, one line; ``""`` when it was read or there is none.
    ledger_of_another : {"", "version", "party"}
        ``"version"``: the ledger was written by another edprf-fl version; ``"party"``: it records another party
        id than the one given to :func:`read_budget`.  :attr:`ledger_error` then says what it records and what
        to do (never a new ledger path, never a restore over it).  ``""`` otherwise.
    entries : tuple of LedgerEntry
        The ledger's entries, oldest first (empty when it was not read).
    meta : Mapping of str to str
        The ledger's ``ledger_meta`` values of :data:`META_KEYS` that it holds (untrusted text: its id, its
        cap and the cap's changes, the replies that were not differentially private, the notes logged).
    """

    ledger_path: Path
    status: LedgerStatus
    cap: Fraction | None = None
    in_ledger: Fraction | None = None
    carried: Fraction = Fraction(0)
    anchor: LedgerAnchor | None = None
    ledger_absent: bool = False
    ledger_error: str = ""
    anchor_error: str = ""
    ledger_of_another: Literal["", "version", "party"] = ""
    too_large: bool = False
    """The ledger is larger than the reader's byte limit (``ledger_error`` says so): long, not damaged."""
    disk_full: bool = False
    """The ledger could not be read and its disk is nearly full (``ledger_error`` says so): likely intact, readable
    once there is room (:func:`client._disk_space.low_disk_text`)."""
    busy: bool = False
    """The ledger could not be read because another process holds its lock (``ledger_error`` says so): not damaged,
    readable once the lock is released; never a reason to restore it (review rev-auto A12)."""
    entries: tuple[LedgerEntry, ...] = ()
    meta: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    audit: AuditRecords = field(default_factory=AuditRecords)
    """The ledger's refusals and deliveries (:class:`~client._ledger_audit.AuditRecords`; a table the ledger does not
    hold, written before 0.2.11, is None)."""

    @property
    def anchor_path(self) -> Path:
        """Where the ledger's anchor is (:func:`~client._ledger_anchor.anchor_path`)."""
        return anchor_path(self.ledger_path)

    @property
    def anchor_missing(self) -> bool:
        """A ledger with entries and no anchor beside it: every spend writes one, so it was deleted or moved, and
        an older copy of the ledger restored in its place would go unnoticed (the party writes a new anchor from
        the ledger it finds)."""
        return bool(self.entries) and self.anchor is None and not self.anchor_error and not self.ledger_absent

    def anchor_missing_text(self) -> str:
        """What :attr:`anchor_missing` means and what to do, in one line."""
        return (
            f"the ledger holds {count_text(len(self.entries), 'entry', 'entries')} and no anchor ({self.anchor_path.name}) is beside it: "
            "every spend writes one, so it was deleted or moved, and an older copy of the ledger restored in its "
            "place would count less than the party spent; restore the anchor if it was moved (the party writes a "
            "new one from this ledger at its next request)"
        )

    @property
    def spent(self) -> Fraction | None:
        """ε the party counts as spent (the ledger's entries and :attr:`carried`); None when it is unknown (the
        ledger or its anchor cannot be read)."""
        if self.status in _UNKNOWN:
            return None
        return (self.in_ledger or Fraction(0)) + self.carried

    @property
    def remaining(self) -> Fraction | None:
        """What is left of :attr:`cap` (never negative); None when the cap or the spend is unknown."""
        spent = self.spent
        if self.cap is None or spent is None:
            return None
        return max(Fraction(0), self.cap - spent)

    @property
    def over_cap(self) -> Fraction | None:
        """How far the spend is above :attr:`cap` (the party then refuses every request that spends ε); None
        when it is not above it, or either is unknown."""
        spent = self.spent
        if self.cap is None or spent is None or spent <= self.cap:
            return None
        return spent - self.cap

    def over_cap_text(self) -> str:
        """What :attr:`over_cap` means for the party, in one line; ``""`` when the spend is not above the cap."""
        over = self.over_cap
        if over is None:
            return ""
        return (
            f"OVER THE CAP by {format_epsilon(over)}: this party refuses every request that spends epsilon "
            "(the cap was lowered after spending, or spend was carried from the coordinator's record)"
        )


def read_budget(
    ledger_path: str | Path,
    cap: float | Fraction | None = None,
    *,
    party_id: str | None = None,
    max_bytes: int = 1 << 30,
    max_seconds: float = READ_SECONDS,
    audit: bool = False,
) -> BudgetState:
    """What the party whose ledger is at ``ledger_path`` has spent and has left, read without writing anything.

    Parameters
    ----------
    ledger_path : str or Path
        The party's ledger (its node config's ``ledger-path``); its anchor is the file beside it
        (:func:`~client._ledger_anchor.anchor_path`).
    cap : float or Fraction, optional
        The party's lifetime ε cap (from its policy), for :attr:`BudgetState.remaining` and
        :attr:`BudgetState.over_cap`; taken exactly as the ledger takes it.
    party_id : str, optional
        The party's id (its policy's ``party-id``): a ledger that records another one is not read (status
        :attr:`LedgerStatus.UNREADABLE`, :attr:`BudgetState.ledger_of_another` ``"party"``), as the party
        refuses it.  A ledger that records none (written before ledgers recorded it) is read.  None: not checked.
    max_bytes, max_seconds
        The bounds of :func:`~client._ledger.read_ledger_readonly` (a larger or slower ledger is unreadable).
    audit : bool, default False
        Also read the audit tables (refusals, deliveries, trails) into :attr:`BudgetState.audit` (``edprf budget``);
        without, it is empty: the sums and the meta need none of it, and the tables can hold 100,000 rows each.

    Returns
    -------
    BudgetState
        Never raises for what is found at the paths: a missing or unreadable ledger or anchor is its status.

    Raises
    ------
    ValueError
        ``cap`` is not a positive finite number.
    """
    path = Path(ledger_path)
    cap_exact = _exact_cap(cap)
    try:
        anchor, anchor_error = read_anchor(anchor_path(path)), ""
    except ValueError as exc:
        anchor, anchor_error = None, _one_line(exc)
    except OSError as exc:  # the anchor's directory cannot be searched (read_anchor's exists() raises)
        anchor, anchor_error = None, f"cannot read {anchor_path(path)}: {exc.strerror or type(exc).__name__}"
    # what is known before the ledger is looked at; the status is settled below
    base = BudgetState(path, LedgerStatus.UNREADABLE, cap=cap_exact, anchor=anchor, anchor_error=anchor_error)
    try:
        path.stat()
    except OSError as exc:
        if exc.errno in _ABSENT and (dangling := dangling_link_text(path)):
            return _unreadable(base, dangling)
        if exc.errno in _ABSENT:
            return _absent(base)
        return _unreadable(base, f"cannot read {path}: {exc.strerror or type(exc).__name__}")
    try:
        # and what the ledger carried from the anchor's id before (an anchor of another id, not yet rewritten)
        from_anchor = () if anchor is None else (f"{CARRIED_FROM_KEY}/{anchor.ledger_id}",)
        entries, meta, records = read_records_readonly(
            path, META_KEYS + from_anchor, max_bytes=max_bytes, max_seconds=max_seconds, with_audit=audit
        )
    except LedgerOfAnotherVersion as exc:
        return replace(_unreadable(base, _one_line(exc)), ledger_of_another="version")
    except LedgerTooLarge as exc:
        return replace(_unreadable(base, _one_line(exc)), too_large=True)
    except LedgerBusy as exc:
        return replace(_unreadable(base, _one_line(exc)), busy=True)
    except ValueError as exc:
        if full := low_disk_text(path):  # SQLite's "disk I/O error" on a full disk: not a damaged ledger
            return replace(_unreadable(base, f"{_one_line(exc)}; {full}"), disk_full=True)
        return _unreadable(base, _one_line(exc))
    recorded_party = meta.get(PARTY_ID_KEY)
    if party_id is not None and recorded_party is not None and recorded_party != party_id:
        return replace(_unreadable(base, another_party_text(path, recorded_party, party_id)), ledger_of_another="party")
    in_ledger = total_spent(entries)
    before = carried_before(meta.get(from_anchor[0])) if from_anchor else Fraction(0)
    beyond = carried(anchor, meta.get(LEDGER_ID_KEY), in_ledger, before)
    if anchor_error:
        status = LedgerStatus.ANCHOR_UNREADABLE
    else:
        status = LedgerStatus.BEHIND_ANCHOR if beyond else LedgerStatus.READ
    return replace(
        base,
        status=status,
        in_ledger=in_ledger,
        carried=beyond,
        entries=tuple(entries),
        meta=MappingProxyType(dict(meta)),
        audit=records,
    )


def _absent(base: BudgetState) -> BudgetState:
    """Nothing at the ledger path: a lost ledger when there is an anchor, a party that served no request when
    there is none."""
    if base.anchor_error:
        status = LedgerStatus.ANCHOR_UNREADABLE
    else:
        status = LedgerStatus.NOT_CREATED if base.anchor is None else LedgerStatus.LOST
    return replace(
        base,
        status=status,
        carried=carried(base.anchor, None, Fraction(0)),
        ledger_absent=True,
        ledger_error=f"no ledger at {base.ledger_path}",
    )


def _unreadable(base: BudgetState, error: str) -> BudgetState:
    """Something at the ledger path that cannot be read as a ledger (``error`` says why)."""
    status = LedgerStatus.ANCHOR_UNREADABLE if base.anchor_error else LedgerStatus.UNREADABLE
    return replace(base, status=status, ledger_error=error)


def _exact_cap(cap: float | Fraction | None) -> Fraction | None:
    if cap is None:
        return None
    if isinstance(cap, bool) or not isinstance(cap, (int, float, Fraction)) or not 0 < cap < float("inf"):
        raise ValueError(f"cap: expected a positive finite number, got {cap!r}")
    return exact_epsilon(cap)


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__
