"""What ``edprf budget`` says of a ledger beyond its spends: refusals, deliveries, carried entries, the neighbouring
relation, the trails' counts and the clock (review rev-dpo D3, D4, D5, D7, D10, D13).

Everything here reads what :func:`client.read_budget` read (read-only, the file untrusted: every text is printed
through :func:`~edprf_fl.cli._terminal_text.terminal_safe`).  Privacy cost: none (the party's own records, shown to
its operator; nothing leaves the party).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from ._terminal_text import terminal_safe

if TYPE_CHECKING:
    from client import AuditRecords, Delivery, LedgerEntry, ReleaseParts

__all__ = [
    "backwards_note",
    "carried_source",
    "delivery_json",
    "delivery_lines",
    "entry_relation",
    "first_recipient_json",
    "first_recipient_source",
    "first_recipient_text",
    "first_recipients",
    "parts_json",
    "parts_text",
    "refusal_json",
    "refusal_lines",
    "relation_json",
    "relation_lines",
    "shown_kind",
    "shown_parts",
]

RELATIONS = ("add-remove", "replace-one")
OLDER = "none recorded (ledger older than 0.2.11: a party records them from its first request under 0.2.11)"
"""What is said of a table a ledger written before 0.2.11 does not hold."""


def carried_source(entry: LedgerEntry) -> str | None:
    """Where a carried entry's ε came from: ``"anchor"`` or ``"coordinator record"``; None for any other entry.

    Carried entries are stored as failed releases under a ``carried-`` request id (the ledger's schema has two
    kinds, and older versions read it); this is where they are told apart (review rev-dpo D5)."""
    from client import COORDINATOR_RECORD

    if not entry.request_id.startswith("carried-"):
        return None
    return "coordinator record" if entry.detail.startswith(f"carried from {COORDINATOR_RECORD}") else "anchor"


def shown_kind(entry: LedgerEntry) -> str:
    """The kind the table shows: ``carried`` for a carried entry, else the stored kind."""
    return "carried" if carried_source(entry) else entry.kind


def entry_relation(entry: LedgerEntry) -> str:
    """The neighbouring relation an entry's ε was spent under: a release's (named in its detail), ``evaluation``
    (noised held-out counts: ε-DP under either relation, their calibration being add-remove's, twice the
    replace-one sensitivity of the ``correct`` count, and ``total`` unchanged by a replacement), ``carried`` (spend
    carried from the anchor or the coordinator's record: no relation recorded), or ``unknown`` (a release whose
    detail names none; review rev-s64 F7: both were called carried)."""
    if carried_source(entry):
        return "carried"
    if entry.kind == "evaluation":
        return "evaluation"
    detail = entry.detail.split(" [failed: ", 1)[0]
    named = [r for r in RELATIONS if f", {r}" in detail]
    return named[0] if len(named) == 1 else "unknown"


_UNRECORDED = {"carried": "carried entries", "unknown": "releases whose detail names no relation"}
"""The entries whose relation the ledger does not record, each worded for what it is."""


def _sums(entries: Iterable[LedgerEntry]) -> dict[str, Fraction]:
    sums: dict[str, Fraction] = {}
    for e in entries:
        key = entry_relation(e)
        sums[key] = sums.get(key, Fraction(0)) + e.epsilon_exact
    return sums


def relation_lines(entries: Sequence[LedgerEntry], recorded: str | None) -> tuple[str, list[str]]:
    """The end of the ``spent`` line naming the neighbouring relation, and the lines that follow it when the
    entries mix relations (review rev-dpo D7).

    One relation (evaluations hold under either): `` under the R neighbouring relation``.  Mixed: per-relation sums,
    and the one bound that holds whatever the mechanisms: under replace-one, an add-remove entry (and a carried one,
    whose relation is not recorded) counts twice (a replacement is a removal and an addition: group privacy), the
    others once (their scales are calibrated to replace-one).  Under add-remove, no number is given for the sum:
    a replace-one entry's figure is an add-remove bound only through its mechanisms' calibration, which the ledger
    does not record; the sums add up within one relation only."""
    from client import format_epsilon

    sums = _sums(entries)
    releases = {r for r in sums if r in RELATIONS}
    unrecorded = [k for k in _UNRECORDED if k in sums]
    if len(releases) <= 1 and not unrecorded:
        relation = next(iter(releases), None) or (recorded if recorded in RELATIONS else None)
        return ("" if relation is None else f" under the {relation} neighbouring relation"), []
    if len(releases) <= 1 and unrecorded:
        relation = next(iter(releases), None) or (recorded if recorded in RELATIONS else None)
        if relation == "add-remove" or relation is None:  # carried ε came from releases: add-remove is the default
            under = "" if relation is None else f" under the {relation} neighbouring relation"
            return under, [
                f"{_UNRECORDED[k]} ({format_epsilon(sums[k])}) record no relation: their figure bounds the records "
                "under the relation of the releases they stand for"
                for k in unrecorded
            ]
    lines = ["the entries mix neighbouring relations; their figures add up within one relation only:"]
    for key in (*RELATIONS, "evaluation", *_UNRECORDED):
        if key in sums:
            what = {
                "evaluation": "noised evaluations (epsilon-DP under either relation)",
                **{k: f"relation not recorded ({text})" for k, text in _UNRECORDED.items()},
            }.get(key, key)
            lines.append(f"  {what}: {format_epsilon(sums[key])}")
    zero = Fraction(0)
    twice = sums.get("add-remove", zero) + sum((sums.get(k, zero) for k in _UNRECORDED), zero)
    replace_one = 2 * twice + sums.get("replace-one", zero) + sums.get("evaluation", zero)
    lines.append(
        f"  under replace-one: at most {format_epsilon(replace_one)} per record (an add-remove entry, or one whose "
        "relation is not recorded, counts twice: a replacement is a removal and an addition)"
    )
    lines.append(
        f"  under add-remove: {format_epsilon(sums.get('add-remove', zero) + sums.get('evaluation', zero))} from the "
        "add-remove entries and evaluations; the replace-one entries are not added to it here (their figure holds "
        "under add-remove only through their mechanisms' calibration, which the ledger does not record)"
    )
    return " (summed over neighbouring relations: see below)", lines


def relation_json(entries: Sequence[LedgerEntry], recorded: str | None) -> dict[str, Any]:
    """``--json``: the spend per relation (exact text), the relation the ledger last recorded, and whether the
    entries mix relations."""
    from client import format_epsilon

    sums = _sums(entries)
    return {
        "relation_recorded": recorded,
        "spent_by_relation_exact": {k: format_epsilon(v) for k, v in sums.items()},
        "relations_mixed": len({r for r in sums if r in RELATIONS}) > 1
        or (any(k in sums for k in _UNRECORDED) and "replace-one" in sums),
    }


def refusal_lines(audit: AuditRecords, stamp: Any, last: int | None = None) -> list[str]:
    """The ``refused`` section: every refused request the ledger kept (review rev-dpo D4), or the latest ``last``
    (``--last``), with a count of all and per reason code."""
    from client import format_epsilon
    from edprf_core.count_text import count_text

    if audit.refusals is None:
        return [f"\nrefused: {OLDER}"]
    rows = audit.refusals
    if not rows and not audit.refusals_dropped:
        return ["\nrefused: none recorded"]
    by_reason = Counter(r.reason for r in rows)
    summary = ", ".join(f"{terminal_safe(k, 40)} {n}" for k, n in sorted(by_reason.items()))
    lines = [
        (
            f"\nrefused: {count_text(len(rows) + audit.refusals_dropped, 'request')} ({summary}); request parameters "
            "and reason codes only (the reasons' texts are in the party's log):"
        )
    ]
    if audit.refusals_dropped:
        lines.append(f"  ({audit.refusals_dropped} older refusals dropped: the ledger keeps the latest {len(rows)})")
    if last is not None and last < len(rows):
        lines.append(f"  (showing the latest {last} of {len(rows)}; --json lists every one)")
        rows = rows[len(rows) - last :]
    for r in rows:
        asked = "-" if r.epsilon_exact is None else format_epsilon(r.epsilon_exact)
        lines.append(
            f"  {stamp(r.at):<20} {terminal_safe(r.kind, 10):<8} epsilon {asked:>8}  {terminal_safe(r.reason, 40):<26} "
            f"request {terminal_safe(r.request_id or '-', 120)}  run {terminal_safe(r.run_id or '-', 40)}"
        )
    return lines


def refusal_json(audit: AuditRecords) -> dict[str, Any]:
    """``--json``: the refused requests the ledger kept (review rev-dpo D4).

    Parameters
    ----------
    audit : the ledger's audit tables, as :func:`client.read_budget` read them

    Returns
    -------
    dict
        ``refused_count`` (every refusal, the dropped ones included; None for a ledger older than 0.2.11),
        ``refused_dropped`` and ``refused``: one object per kept row (time, request and run ids, kind, the ε asked as
        exact text or None, the reason code), oldest first, or None.  Request parameters and reason codes only: the
        ledger keeps no refusal's text.  Privacy cost: none (the party's own record, shown to its operator).
    """
    from client import format_epsilon

    rows = audit.refusals
    return {
        "refused_count": None if rows is None else len(rows) + audit.refusals_dropped,
        "refused_dropped": audit.refusals_dropped,
        "refused": None
        if rows is None
        else [
            {
                "at": _number(r.at),
                "request_id": r.request_id,
                "run_id": r.run_id,
                "kind": r.kind,
                "epsilon_exact": None if r.epsilon_exact is None else format_epsilon(r.epsilon_exact),
                "reason": r.reason,
            }
            for r in rows
        ],
    }


def _recipient(d: Delivery) -> str:
    parts = [
        f"node {terminal_safe(d.node_id, 40)}" if d.node_id else "",
        f"keys {terminal_safe(d.registered, 64)}" if d.registered else "no keys registered",
        f"app {terminal_safe(d.app, 64)}" if d.app else "",
    ]
    return ", ".join(p for p in parts if p)


def delivery_lines(audit: AuditRecords, stamp: Any, last: int | None = None) -> list[str]:
    """The ``deliveries`` section: per release, how often it was sent and to which run and recipient (review
    rev-dpo D3), and a note when one release reached coordinators with other keys; with ``last`` (``--last``), the
    releases of the latest ``last`` deliveries (each with all its deliveries)."""
    from edprf_core.count_text import count_text

    if audit.deliveries is None:
        return [f"\ndeliveries: {OLDER}"]
    rows = audit.deliveries
    if not rows and not audit.deliveries_dropped:
        return ["\ndeliveries: none recorded"]
    lines = [
        (
            "\ndeliveries (each release handed to Flower for sending, and each resend of a stored one under its request id; "
            "recipient: the node id this SuperNode had at the SuperLink (a new one at each registration), a digest of "
            "the coordinator's registered keys, the app's FAB):"
        )
    ]
    if audit.deliveries_dropped:
        lines.append(
            f"  ({audit.deliveries_dropped} older deliveries dropped: the ledger keeps the latest {len(rows)})"
        )
    by_release: dict[str, list[Delivery]] = {}
    for d in rows:
        by_release.setdefault(d.request_id, []).append(d)
    shown = by_release
    if last is not None and last < len(rows):
        latest = {d.request_id for d in rows[len(rows) - last :]}
        shown = {k: v for k, v in by_release.items() if k in latest}
        lines.append(f"  (the releases of the latest {last} of {len(rows)} deliveries; --json lists every one)")
    for request_id, sent in shown.items():
        times = ", ".join(
            f"run {terminal_safe(d.run_id or '-', 40)} at {stamp(d.at)}"
            + (" (resent)" if d.how == "resent" else "")
            + f" [{_recipient(d)}]"
            for d in sent
        )
        lines.append(f"  {terminal_safe(request_id, 120)}: sent {count_text(len(sent), 'time')}: {times}")
        # node ids differ whenever the SuperNode registers anew (a restart): only other keys or another app are said
        keys = {d.registered for d in sent}
        apps = {d.app for d in sent if d.app}
        if len(keys) > 1 or len(apps) > 1:
            lines.append(
                f"    note: this release went to coordinators with {len(keys)} different sets of registered keys"
                + (f" and {len(apps)} different apps" if len(apps) > 1 else "")
                + ": more than one consortium, or one that changed its keys"
            )
    return lines


def delivery_json(audit: AuditRecords) -> dict[str, Any]:
    """``--json``: every delivery the ledger kept (review rev-dpo D3).

    Parameters
    ----------
    audit : the ledger's audit tables, as :func:`client.read_budget` read them

    Returns
    -------
    dict
        ``deliveries``: one object per kept row (time, request and run ids, ``sent`` or ``resent``, and what the party
        knows of the recipient: node id, registered keys' digest, app hash), oldest first; ``deliveries_per_release``
        (request id -> count of kept rows); ``deliveries_dropped``.  The first two are None for a ledger older than
        0.2.11.  Privacy cost: none (the party's own record, shown to its operator).
    """
    rows = audit.deliveries
    if rows is None:
        return {"deliveries": None, "deliveries_per_release": None, "deliveries_dropped": audit.deliveries_dropped}
    return {
        "deliveries": [
            {
                "at": _number(d.at),
                "request_id": d.request_id,
                "run_id": d.run_id,
                "how": d.how,
                "node_id": d.node_id,
                "registered": d.registered,
                "app": d.app,
            }
            for d in rows
        ],
        "deliveries_per_release": dict(Counter(d.request_id for d in rows)),
        "deliveries_dropped": audit.deliveries_dropped,
    }


PART_DIGITS = 15
"""Significant digits a part's ε is shown with (review rev-day2 U12).  The DP row count's ε is a double the estimator
computes (``count_epsilon_share * epsilon`` in floating point: 0.05 * 0.1 is 0.005000000000000001), kept exactly as
that double's shortest text; the trees' part is the entry's exact ε less it.  Digits past the 15th are the product's
rounding, not a choice anyone made, and 15 significant digits are what a double holds of any decimal, so the part is
shown rounded to them and the trees' part as the entry's ε less that: the parts still add up to the entry's ε
exactly, in the table and in ``--json``."""


def _digits(value: Fraction) -> Fraction:
    """``value`` to :data:`PART_DIGITS` significant digits, as an exact fraction (0 stays 0)."""
    return Fraction(f"{float(value):.{PART_DIGITS}g}") if value else Fraction(0)


def shown_parts(parts: ReleaseParts) -> tuple[Fraction, Fraction, Fraction | None, Fraction | None]:
    """The parts of a release's ε as shown: ``(count, trees, marginals, residual)``.

    The count and the residual pass (doubles the estimator computed) to :data:`PART_DIGITS` significant digits; the
    trees' part the entry's exact ε less the count shown, the marginals' the trees' less the residual shown, so
    ``count + trees`` is still the entry's ε and ``marginals + residual`` the trees', exactly.
    """
    count = _digits(parts.count)
    trees = parts.total - count
    residual = None if parts.residual is None else _digits(parts.residual)
    marginals = None if parts.marginals is None else trees - (residual or Fraction(0))
    return count, trees, marginals, residual


def parts_text(parts: ReleaseParts) -> str:
    """What a release's ε paid for, for the end of its line in the table (review rev-dpo D8): the DP row count's ε
    when there was one, the trees', the marginals' (and the residual pass's) on their disjoint rows, and the depth
    used; the parts are the release's own parameters and DP outputs (``edprf inspect`` prints them), shown as
    :func:`shown_parts` says (no float artefacts: ``0.005``, not ``0.005000000000000001``)."""
    from client import format_epsilon

    count, trees, marginals, residual = shown_parts(parts)
    paid = [f"DP row count {format_epsilon(count)}"] if count else []
    paid.append(f"trees {format_epsilon(trees)}")
    if marginals is not None:
        text = f"marginals {format_epsilon(marginals)}"
        if residual is not None:
            text += f" + residual pass {format_epsilon(residual)}"
        paid.append(f"{text} (on rows disjoint from the trees': parallel)")
    return f"[paid for: {', '.join(paid)}; depth {parts.depth}]"


def parts_json(parts: ReleaseParts | None) -> dict[str, Any] | None:
    """``--json``: a release's parts as exact texts, as :func:`shown_parts` gives them (``count_epsilon_exact +
    trees_epsilon_exact`` is its ``epsilon_exact``, exactly; marginals and residual pass null where absent) and its
    depth; None for an entry without them (not a completed release, or completed by a version that did not record
    them)."""
    from client import format_epsilon

    if parts is None:
        return None
    count, trees, marginals, residual = shown_parts(parts)

    def exact(value: Fraction | None) -> str | None:
        return None if value is None else format_epsilon(value)

    return {
        "count_epsilon_exact": format_epsilon(count),
        "trees_epsilon_exact": format_epsilon(trees),
        "marginals_epsilon_exact": exact(marginals),
        "residual_pass_epsilon_exact": exact(residual),
        "depth": parts.depth,
    }


RECIPIENT_DIGITS = 12
"""Hex digits of a first recipient's digest the table shows (``--json`` and the deliveries section give all 16)."""


def _completed_release(entry: LedgerEntry) -> bool:
    """A release that was completed (released, not carried): the entries that have a first recipient."""
    return entry.kind == "release" and entry.state == "released" and carried_source(entry) is None


def first_recipients(audit: AuditRecords) -> tuple[Mapping[str, str] | None, Mapping[str, str]]:
    """Each completed release's first recipient as the resend guard takes it (:func:`client._ledger_audit.
    first_recipient`; review rev-upgrade U1): the ledger's ``release_recipients`` row, else the digest of the
    release's first kept ``deliveries`` row (a release 0.2.11 completed: a ``sent`` row, which the ledger's next write
    copies for good; a ``resent`` one, its ``sent`` row lost, which stands in only while it is kept), and for those
    taken from a delivery row, that row's ``how``.  None when the ledger holds neither table.

    Privacy cost: none (the party's own record, shown to its operator).
    """
    recorded = dict(audit.recipients or {})
    first: dict[str, Delivery] = {}
    for delivery in audit.deliveries or ():
        first.setdefault(delivery.request_id, delivery)
    from_row = {r: d for r, d in first.items() if r not in recorded}
    if audit.recipients is None and audit.deliveries is None:
        return None, {}
    return {**recorded, **{r: d.registered for r, d in from_row.items()}}, {r: d.how for r, d in from_row.items()}


_FROM_ROW = {
    "sent": " (from its sent delivery row; the next request copies it into the ledger)",
    "resent": " (from its first delivery row left, a resend: its sent row is lost; kept only while that row is)",
}


def first_recipient_text(
    entry: LedgerEntry, recipients: Mapping[str, str] | None, from_row: Mapping[str, str] | None = None
) -> str:
    """A completed release's first recipient, for the end of its line in the table (review rev-s65 F1): the first
    :data:`RECIPIENT_DIGITS` hex digits of the registered keys' digest its train request carried, ``(none: keyless
    run)`` for a run that registered none, ``(not recorded: made before 0.2.12)`` where the ledger keeps none (a release
    made before 0.2.11, or one made by 0.2.11 whose first delivery row was not ``sent`` or is gone, or a ledger not yet
    opened for writing by 0.2.13: while its first delivery row is kept, the resend guard takes that row's recipient,
    docs/privacy.md); ``""`` for any other entry.  ``recipients``, ``from_row``: :func:`first_recipients` (one
    taken from a delivery row says which).

    Privacy cost: none (the party's own record, shown to its operator).
    """
    if not _completed_release(entry):
        return ""
    registered = None if recipients is None else recipients.get(entry.request_id)
    if registered is None:
        shown = "(not recorded: made before 0.2.12)"
    elif not registered:
        shown = "(none: keyless run)"
    else:
        shown = f"keys {terminal_safe(registered[:RECIPIENT_DIGITS], RECIPIENT_DIGITS)}"
    if registered is not None and from_row and entry.request_id in from_row:
        shown += _FROM_ROW.get(from_row[entry.request_id], " (from its first delivery row)")
    return f"[first recipient: {shown}]"


def first_recipient_json(entry: LedgerEntry, recipients: Mapping[str, str] | None) -> str | None:
    """``--json``: a completed release's first recipient, the registered keys' digest whole (``""``: a run that
    registered none); None for any other entry and where the ledger keeps none (see :func:`first_recipient_text`).

    Privacy cost: none (the party's own record, shown to its operator).
    """
    if not _completed_release(entry) or recipients is None:
        return None
    return recipients.get(entry.request_id)


def backwards_note(entries: Sequence[LedgerEntry], shown: set[str] | None = None) -> str | None:
    """A note when a later entry (written after another) carries an earlier time (review rev-dpo D10): the
    party's clock was set back, or a ledger restored; the order of the table is the order of writing, the
    sums do not depend on the clock."""
    latest = -math.inf
    back = []
    for e in entries:
        if not math.isfinite(e.created_at):
            continue
        if e.created_at < latest:
            back.append(e.request_id)
        latest = max(latest, e.created_at)
    if not back:
        return None
    visible = [i for i in back if shown is None or i in shown][:3]  # --last: the others counted, not named
    named = ", ".join(terminal_safe(i, 64) for i in visible) or "not shown: `edprf budget` without --last lists them"
    named += f" and {len(back) - len(visible)} more" if visible and len(back) > len(visible) else ""
    return (
        f"note: the time stamps go backwards: {len(back)} entr{'y was' if len(back) == 1 else 'ies were'} written after "
        f"an entry with a later time ({named}): the party's clock was set back (or moved), so the times are not the "
        "order of events; the table lists entries in the order they were written, and the sums do not depend on the clock"
    )


def _number(value: float) -> float | None:
    return value if math.isfinite(value) else None


def first_recipient_source(
    entry: LedgerEntry, recipients: Mapping[str, str] | None, from_row: Mapping[str, str]
) -> str | None:
    """``--json``'s ``first_recipient_from``: ``"ledger"`` (the release's ``release_recipients`` row), ``"sent-row"``
    (its first delivery row, ``sent``, until the party's next request copies it: review rev-upgrade U1) or
    ``"resent-row"`` (its first delivery row left is a resend, which stands in while it is kept); None where
    :func:`first_recipient_json` gives None.

    Privacy cost: none (the party's own record, shown to its operator).
    """
    if first_recipient_json(entry, recipients) is None:
        return None
    how = from_row.get(entry.request_id)
    return "ledger" if how is None else f"{how}-row"
