"""``edprf budget``: show a party's privacy-budget ledger (read-only).

The ledger file is opened read-only (SQLite ``mode=ro``): no table is created,
no column added, the journal mode is not switched, so showing a ledger never
changes it.  Only regular SQLite files are read; anything else (a missing
path, a directory, a FIFO, a device, a non-SQLite file, a file above
``--max-bytes``, a ledger with values of the wrong kind, one that takes
SQLite more than ``--max-seconds`` to read) is a one-line error with exit
code 1 (75 for a ledger another process holds locked: busy, retry), never a traceback; with ``--json`` also one
JSON object (docs/reference/budget-json.md documents its keys and the exit statuses, 3 over the cap and 4
exhausted among them).  Every text from the file is printed through
:func:`edprf_fl.cli._terminal_text.terminal_safe` (control characters escaped).
Sums are exact, over every entry also when ``--last N`` lists only the latest N (long-horizon review F7:
20,000 entries printed 2.6 MB).  ``--release REQUEST_ID --out FILE`` writes the bytes the party released under that id
(:func:`client.read_release_readonly`) for ``edprf inspect``; ``--backup-to FILE`` a consistent copy of the ledger
for the party's backups (:func:`client.backup_ledger`, SQLite's online backup; the anchor is not copied).  The ledger and its anchor are read by :func:`client.read_budget`
(as ``edprf party check`` and ``edprf consortium`` read them): the spend shown is
the one the party counts, the anchor's record beyond the entries included.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import math
import sys
from datetime import UTC, datetime
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING

from ._arg_types import integer, positive_finite
from ._exit_text import BUSY_STATUS
from ._model_args import add_force_argument, refuse_existing_outputs
from ._terminal_text import terminal_safe

if TYPE_CHECKING:
    from collections.abc import Mapping

    from client import AuditRecords, BudgetState, OpenReservation

__all__ = ["BUSY_STATUS", "EXHAUSTED_STATUS", "JSON_FORMAT", "OVER_CAP_STATUS", "register"]

OVER_CAP_STATUS = 3
"""Exit status of ``edprf budget`` for a ledger that has spent more than its cap."""

EXHAUSTED_STATUS = 4
"""Exit status of ``edprf budget`` for a ledger at its cap, not over it: nothing remains, or less than the policy's
``min-epsilon`` (with ``--policy``), so the party refuses every new request (``budget_exhausted``), as ``edprf party
check`` says (review rev-auto A3: this was exit 0)."""


JSON_FORMAT = "edprf-budget/1"
"""The ``format`` of ``edprf budget --json``'s object (docs/reference/budget-json.md documents every key); a key
removed or changed in meaning gets a new number, a key added does not."""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "budget",
        help="show a party's ledger: every release (or the latest N: --last N), its epsilon, its time, the remaining cap",
        description=(
            "Show a party's privacy-budget ledger (read-only): every reservation, what was spent against the "
            "lifetime cap, and the replies that were not differentially private."
        ),
        epilog=(
            "exit status: 0 shown, epsilon remains; 1 the ledger, its anchor or the policy cannot be read, or there "
            f'is no ledger yet (--json: ledger_status "not-created": a party that has served no request has spent '
            f"nothing); 2 a wrong option; {OVER_CAP_STATUS} the party has spent more than the cap (a cap lowered after "
            "spending, or spend carried from the coordinator's record or the ledger's anchor); "
            f"{EXHAUSTED_STATUS} nothing remains of the cap, or (with --policy) less than its min-epsilon: with 3 and "
            f"4 the party refuses every request that spends epsilon; {BUSY_STATUS} busy: another process holds the "
            "ledger's lock, retry. --json prints one object (format edprf-budget/1, documented in the reference), "
            "also on exit 1 and 75 (ledger_status and error); on a non-zero exit stderr says why in one line"
        ),
    )
    p.add_argument("ledger", help="the party's ledger (SQLite file; opened read-only)")
    cap = p.add_mutually_exclusive_group()
    cap.add_argument("--policy", default=None, help="the party's policy TOML (for the lifetime cap)")
    cap.add_argument(
        "--cap",
        type=positive_finite,
        default=None,
        help="lifetime cap, if no policy file is given (default: the cap the ledger last recorded)",
    )
    p.add_argument("--max-bytes", type=int, default=1 << 30, help="refuse ledgers larger than this (default 1 GiB)")
    p.add_argument(
        "--max-seconds",
        type=float,
        default=10.0,
        help="give up on a ledger that takes SQLite longer than this to read (default 10 s)",
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument(
        "--last",
        metavar="N",
        type=integer(0),
        default=None,
        help="show only the latest N entries (default: all); the spent and remaining figures always count every "
        "entry, and the output says 'showing the latest N of M entries' (--json: shown and total_entries)",
    )
    p.add_argument(
        "--release",
        metavar="REQUEST_ID",
        default=None,
        help="write the bytes the party released under REQUEST_ID (the table's request column) to --out, for "
        "`edprf inspect`; nothing else is shown",
    )
    p.add_argument("--out", type=Path, default=None, help="with --release: the file to write (owner-only)")
    p.add_argument(
        "--backup-to",
        metavar="FILE",
        type=Path,
        default=None,
        help="write a consistent copy of the ledger to FILE (owner-only; SQLite's online backup, which holds the "
        "spend still in the ledger's -wal file, unlike cp) for the party's backups; the anchor is not copied: it "
        "stays where it is; nothing else is shown",
    )
    add_force_argument(p, "with --release or --backup-to: overwrite the file written if it exists")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Handler of ``edprf budget``: any failure is one sanitized line on stderr and exit code 1 (75 for a ledger
    another process holds locked); with ``--json`` also one JSON object on stdout."""
    from client import LedgerBusy

    from ._output_streams import closed_stdout_error, stdout_pipe_closed

    try:
        if args.backup_to is not None:
            return _write_backup(args)
        return _write_release(args) if args.release is not None else _show(args)
    except KeyboardInterrupt:
        raise
    except Exception as exc:  # a hostile or broken file of any kind: one line, never a traceback
        if stdout_pipe_closed(exc) or closed_stdout_error(exc):
            raise  # the entry point's: a reader gone is a quiet 141, a closed stdout its own line (docs/exit-status.md)
        logging.getLogger("edprf").debug("budget failed", exc_info=True)
        kind = "" if isinstance(exc, (ValueError, OSError)) else f"{type(exc).__name__}: "
        busy = isinstance(exc, LedgerBusy)
        return _failed(args, kind + " ".join(str(exc).split()), "busy" if busy else None, busy)


def _failed(args: argparse.Namespace, error: str, ledger_status: str | None, busy: bool = False) -> int:
    """Say why nothing is shown: one line on stderr, and with ``--json`` one object on stdout (``ledger_status``,
    ``error``: review rev-auto A10, a failure printed nothing there); the exit status, :data:`BUSY_STATUS` for a
    ledger another process holds locked, else 1."""
    line = terminal_safe(error, 1000)
    if args.json:
        print(json.dumps({"format": JSON_FORMAT, "ledger_status": ledger_status, "error": line}, indent=2))
    print(f"edprf budget: error: {line}", file=sys.stderr)
    return BUSY_STATUS if busy else 1


def _show(args: argparse.Namespace) -> int:
    from client import (
        CAP_KEY,
        PER_RECORD_SPEND,
        RELATION_KEY,
        RESERVATION_LEFT_AFTER_SECONDS,
        LedgerStatus,
        budget_exhausted,
        exact_epsilon,
        format_epsilon,
        left_behind_and_recent,
        load_policy,
        not_dp_headline,
        not_dp_replies,
        open_reservations,
        pending_cap_change_text,
        read_budget,
        recorded_cap,
        whole_trail,
    )

    from ._budget_audit import (
        backwards_note,
        carried_source,
        delivery_json,
        delivery_lines,
        first_recipient_json,
        first_recipient_source,
        first_recipient_text,
        first_recipients,
        parts_json,
        parts_text,
        refusal_json,
        refusal_lines,
        relation_json,
        relation_lines,
        shown_kind,
    )

    if not args.max_seconds > 0:
        raise ValueError(f"--max-seconds: expected a positive number, got {args.max_seconds!r}")
    policy = load_policy(args.policy) if args.policy else None
    cap = policy.lifetime_epsilon_cap if policy is not None else args.cap
    state = read_budget(
        args.ledger,
        cap,
        party_id=None if policy is None else policy.party_id,
        max_bytes=args.max_bytes,
        max_seconds=args.max_seconds,
        audit=True,
    )
    if unread := _unread_text(state):
        busy = state.busy and state.status is LedgerStatus.UNREADABLE  # an unreadable anchor is no lock: exit 1
        return _failed(args, unread, "busy" if busy else str(state.status), busy)
    entries, meta = state.entries, state.meta
    shown = entries if args.last is None else entries[len(entries) - min(args.last, len(entries)) :]
    cap_source = "--policy" if args.policy else "--cap" if cap is not None else None
    recorded = recorded_cap(meta.get(CAP_KEY))
    if cap is None and isinstance(recorded, Fraction):  # no cap given: the one the party last recorded
        state, cap_source = dataclasses.replace(state, cap=recorded), "ledger"
    audit = state.audit
    n_cap_changes, cap_changes = _trail(meta, audit, "cap")
    n_relation_changes, relation_changes = _trail(meta, audit, "relation")
    recorded_relation = meta.get(RELATION_KEY)
    n_not_dp, not_dp_lines = whole_trail(
        *not_dp_replies(meta),
        None if audit.trails is None else audit.trails.get("not-dp", ()),
        audit.trails_dropped.get("not-dp", 0),
    )
    # the spend the party counts: the entries and what the anchor records beyond them; while the anchor cannot be
    # read that is unknown: the entries' own sum is shown, nothing as remaining, and the exit status is 1
    spent = state.in_ledger if state.spent is None else state.spent
    remaining, over = state.remaining, state.over_cap
    pending = pending_cap_change_text(recorded, state.cap)
    # what the party does with the next request: with nothing left, or (its policy known) less than its min-epsilon,
    # it refuses every one that spends epsilon (budget_exhausted), as `edprf party check` says (review rev-auto A3)
    min_epsilon = None if policy is None else exact_epsilon(policy.min_epsilon)
    exhausted = None if remaining is None else budget_exhausted(remaining, min_epsilon)  # party check's rule too
    status = 1 if state.anchor_error else OVER_CAP_STATUS if over is not None else EXHAUSTED_STATUS if exhausted else 0
    error = None
    if state.anchor_error:
        error = (
            f"{terminal_safe(state.anchor_error, 900)}; the party refuses to serve until its anchor can be read, and "
            "may have spent more than the entries hold"
        )
    opened = {r.entry.request_id: r for r in open_reservations(entries)}  # every entry's, also past --last
    paid = {} if audit.parts is None else audit.parts  # what each completed release's epsilon paid for (D8)
    # each completed release's first recipient (rev-s65 F1), from its first delivery row as the guard takes it (U1)
    recipients, from_row = first_recipients(audit)
    if args.json:
        print(
            json.dumps(
                {
                    "format": JSON_FORMAT,
                    "ledger_status": str(state.status),
                    "error": error,
                    "exhausted": exhausted,
                    "min_epsilon": None if policy is None else policy.min_epsilon,
                    "cap": None if state.cap is None else float(state.cap),
                    "cap_source": cap_source,
                    # unknown while the anchor cannot be read: null, never the entries' sum alone
                    "spent": None if state.spent is None else float(spent),
                    "remaining": None if remaining is None else float(remaining),
                    "spent_exact": None if state.spent is None else format_epsilon(spent),
                    "spent_in_ledger_exact": format_epsilon(state.in_ledger),
                    "remaining_exact": None if remaining is None else format_epsilon(remaining),
                    "over_cap": None if over is None else float(over),
                    "over_cap_exact": None if over is None else format_epsilon(over),
                    "carried_from_anchor_exact": None if state.anchor_error else format_epsilon(state.carried),
                    "anchor_error": state.anchor_error or None,
                    "anchor_missing": state.anchor_missing,
                    "cap_changes": cap_changes,
                    "cap_change_count": n_cap_changes,
                    "relation_changes": relation_changes,
                    "relation_change_count": n_relation_changes,
                    **relation_json(entries, recorded_relation),
                    "timestamps_go_backwards": backwards_note(entries) is not None,
                    **refusal_json(audit),
                    **delivery_json(audit),
                    "cap_not_yet_recorded": pending,
                    "not_dp_replies": n_not_dp,
                    "not_dp": not_dp_lines,
                    "total_entries": len(entries),  # the figures above count all of them
                    "shown": len(shown),  # the latest ones, with --last
                    "reserved_left_after_seconds": RESERVATION_LEFT_AFTER_SECONDS,
                    "reserved_left_behind": left_behind_and_recent(opened.values())[0],
                    "reserved_age_unknown": [r.entry.request_id for r in opened.values() if r.age is None],
                    "entries": [
                        {
                            **{k: _json_number(v) for k, v in e.__dict__.items() if k != "epsilon_exact"},
                            "epsilon_exact": format_epsilon(e.epsilon_exact),
                            "carried": carried_source(e) is not None,
                            "carried_from": carried_source(e),
                            "shown_kind": shown_kind(e),
                            "reserved_seconds_ago": _reserved_age(opened.get(e.request_id)),
                            "parts": parts_json(paid.get(e.request_id)),
                            "first_recipient": first_recipient_json(e, recipients),
                            "first_recipient_from": first_recipient_source(e, recipients, from_row),
                        }
                        for e in shown
                    ],
                },
                indent=2,
            )
        )
        if error:  # the line the table's view ends with (review rev-auto A10: --json printed none)
            print(f"edprf budget: error: {error}", file=sys.stderr)
        return status
    ids = [_request_cell(e.request_id) for e in shown]
    width = max([len("request"), *map(len, ids)])  # whole ids up to REQUEST_CELL: they are what --release takes
    print(f"{'time (UTC)':<20} {'kind':<11} {'epsilon':>10} {'state':<9} {'request':<{width}} {'run':<22} detail")
    for e, request in zip(shown, ids):
        when = _stamp_text(e.created_at)
        source = carried_source(e)
        # a carried entry is no release of the run that brought it (review rev-dpo D5): its own kind, no run, its
        # state "counted", and its explanation whole
        state_text = "counted" if source else terminal_safe(e.state, 9)
        run_text = "-" if source else terminal_safe(e.run_id[:22], 22)
        detail = terminal_safe(e.detail, 2000 if source else 200)
        if e.request_id in paid and not source:
            detail += f" {terminal_safe(parts_text(paid[e.request_id]), 300)}"
        if recipient := first_recipient_text(e, recipients, from_row):
            detail += f" {recipient}"
        print(
            f"{when:<20} {shown_kind(e):<11} {format_epsilon(e.epsilon_exact):>10} "
            f"{state_text:<9} {request:<{width}} {run_text:<22} "
            f"{detail}" + (f" [{opened[e.request_id].age_text()}]" if e.request_id in opened else "")
        )
    if len(shown) < len(entries):
        print(
            f"(showing the latest {len(shown)} of {len(entries)} entries; the figures below count all {len(entries)})"
        )
    for line in _open_reservation_notes(list(opened.values()), {e.request_id for e in shown}):
        print(line)
    if note := backwards_note(entries, {e.request_id for e in shown}):
        print(f"\n{note}")
    if state.anchor_missing:
        print(f"\nnote: {state.anchor_missing_text()}")
    if state.carried:
        print(
            f"\nthe entries hold {format_epsilon(state.in_ledger)}, and its anchor {state.anchor_path.name} records "
            f"{format_epsilon(state.carried)} more (restored from a backup, or replaced?): the party counts that as "
            "spent before its next request, and so do the figures below"
        )
    under, relation_notes = relation_lines(entries, recorded_relation)
    if state.spent is None:  # the anchor cannot be read: what the party counts is unknown
        print(f"\nthe entries hold {format_epsilon(spent)}; spent unknown" + _of_the_cap(state.cap, remaining) + under)
    else:
        print(f"\nspent {format_epsilon(spent)}" + _of_the_cap(state.cap, remaining) + under)
    for line in relation_notes:
        print(line)
    if cap_source == "ledger":
        print("(the lifetime cap the ledger last recorded; --policy shows the party's current one)")
    for what, count, lines in (
        ("the lifetime cap", n_cap_changes, cap_changes),
        ("the neighbouring relation", n_relation_changes, relation_changes),
    ):
        for line in lines:
            print(f"{what} was changed (UTC): {line}")
        if count > len(lines):
            short = what.rsplit(" ", 1)[1]  # "cap", "relation"
            print(f"  ({count} {short} changes in all; {count - len(lines)} lines dropped: {_dropped_where(audit)})")
    if pending:
        print(pending)
    if over is not None:
        print(state.over_cap_text())
    elif exhausted:
        print(_exhausted_text(remaining, min_epsilon))
    print(
        "every entry counts, released or not: a reservation is written before training "
        "(sequential composition over releases); sums are exact"
    )
    print(PER_RECORD_SPEND)
    if n_not_dp:
        print(f"\n{not_dp_headline(n_not_dp)}; the epsilon above bounds the other replies only, not what these reveal:")
        # under --last N: the first line and the latest N (a policy allowing exact metrics can grow the trail by a
        # line per request, at no epsilon: review rev-s64 F4, 100,016 lines printed for --last 1)
        listed = not_dp_lines if args.last is None else _first_and_latest(not_dp_lines, args.last)
        for line in listed:
            print(f"  {terminal_safe(line, 300)}")
        if len(listed) < len(not_dp_lines):
            print(f"  ({len(not_dp_lines) - len(listed)} lines not shown: `edprf budget` without --last lists them)")
        if n_not_dp > len(not_dp_lines):
            print(f"  ({n_not_dp} in all; {n_not_dp - len(not_dp_lines)} lines dropped: {_dropped_where(audit)})")
    for line in refusal_lines(audit, _stamp_text, args.last):
        print(line)
    for line in delivery_lines(audit, _stamp_text, args.last):
        print(line)
    if error:
        print(f"edprf budget: error: {error}", file=sys.stderr)
    return status


def _exhausted_text(remaining: Fraction, min_epsilon: Fraction | None) -> str:
    """What :data:`EXHAUSTED_STATUS` means for the party, in one line."""
    from client import format_epsilon

    below = (
        ""
        if min_epsilon is None or remaining == 0
        else f" (below the policy's min-epsilon {format_epsilon(min_epsilon)})"
    )
    return (
        f"EXHAUSTED: remaining epsilon {format_epsilon(remaining)}{below}: this party refuses every new request that "
        "spends epsilon (budget_exhausted; a repeated request id it already released is resent, spending nothing)"
    )


def _stamp_text(value: float) -> str:
    """A ledger entry's time stamp as ``YYYY-MM-DD HH:MM:SS`` (UTC), also one before 1970 (a clock set back wrote
    it: the party counted the entry all the same); one out of the calendar's range as its number of seconds, one
    that is not a number (NaN, as :func:`client.read_ledger_readonly` reads it) as ``unreadable``."""
    if not math.isfinite(value):
        return "unreadable"
    try:
        return datetime.fromtimestamp(value, tz=UTC).strftime("%Y-%m-%d %H:%M:%S")
    except (OverflowError, OSError, ValueError):  # before year 1 or after 9999 (or a platform's own limit)
        return f"{value:g} s"


def _reserved_age(reservation: OpenReservation | None) -> float | None:
    """A reserved entry's age in seconds for ``--json`` (null for any other entry, or an unusable time stamp)."""
    return None if reservation is None or reservation.age is None else round(reservation.age, 1)


_NAMED_RESERVATIONS = 5
"""Request ids a note on reserved entries names (the table shows every one, with its age)."""


def _open_reservation_notes(found: list[OpenReservation], shown: set[str]) -> list[str]:
    """The notes on the ledger's reserved entries (every one, also those ``--last`` does not show, which are
    counted, not named): left by a crash or a failed write when older than
    :data:`client.RESERVATION_LEFT_AFTER_SECONDS` (review rev-ops F6), else perhaps a request still running."""
    from client import RESERVATION_LEFT_AFTER_SECONDS, duration_text, left_behind_and_recent
    from edprf_core.count_text import count_text

    limit = duration_text(RESERVATION_LEFT_AFTER_SECONDS)
    old, recent = left_behind_and_recent(found)
    unknown = [r.entry.request_id for r in found if r.age is None]  # a future or unreadable stamp (review D10)
    recent = [i for i in recent if i not in unknown]
    lines = []
    if unknown:
        lines.append(
            f"\nnote: {count_text(len(unknown), 'entry', 'entries')} reserved and not completed "
            f"{'carries' if len(unknown) == 1 else 'carry'} a future or unreadable time ({_ids(unknown, shown)}): "
            "age unknown (the party's clock was moved): left behind by a crash or a failed write unless a request is "
            "running now; the epsilon stays spent either way"
        )
    if old:
        lines.append(
            f"\nnote: {count_text(len(old), 'entry', 'entries')} reserved more than {limit} ago and not completed "
            f"({_ids(old, shown)}): no request holds its reservation that long: left by a crash or a failed write (the "
            "party's log of that time says which); the epsilon stays spent, as every entry's"
        )
    if recent:
        lines.append(
            f"\nnote: {count_text(len(recent), 'entry', 'entries')} reserved less than {limit} ago and not completed "
            f"({_ids(recent, shown)}): a request running now, or one stopped by a crash or a failed write (said as left "
            f"behind after {limit}); the epsilon stays spent either way"
        )
    return lines


def _ids(request_ids: list[str], shown: set[str]) -> str:
    """Up to :data:`_NAMED_RESERVATIONS` of the request ids the table shows, made safe for a terminal, and how many
    more (those past ``--last`` among them)."""
    named = [_request_cell(i) for i in request_ids if i in shown][:_NAMED_RESERVATIONS]
    more = len(request_ids) - len(named)
    if not named:
        return f"{more} not shown: `edprf budget` without --last lists them"
    return ", ".join(named) + (f" and {more} more" if more else "")


def _json_number(value: object) -> object:
    """A number for ``--json`` (strict JSON has no NaN: an unreadable time stamp is null)."""
    return None if isinstance(value, float) and not math.isfinite(value) else value


REQUEST_CELL = 64
"""The widest request id the table shows whole; a longer one shows its end after an ellipsis (``--json`` has it)."""


def _request_cell(request_id: str) -> str:
    """A request id as the table shows it: whole up to :data:`REQUEST_CELL` characters, else its end (the tag's
    last part and ``/train``) after an ellipsis."""
    text = terminal_safe(request_id, 300)
    return text if len(text) <= REQUEST_CELL else "..." + text[-(REQUEST_CELL - 3) :]


def _write_release(args: argparse.Namespace) -> int:
    """``--release REQUEST_ID --out FILE``: the stored release's bytes, written owner-only, for ``edprf inspect``."""
    from client import format_epsilon, read_release_readonly
    from protocol import save_atomic

    from ._owner_only import OWNER_ONLY

    if args.out is None:
        raise ValueError("--release: give --out FILE, the file to write the released bytes to")
    if args.json or args.last is not None:
        raise ValueError("--release writes a file and says so in one line: leave out --json and --last")
    refuse_existing_outputs([(f"--out {args.out}", args.out)], args.force, data=Path(args.ledger))
    entry, payload = read_release_readonly(
        args.ledger, args.release, max_bytes=args.max_bytes, max_seconds=args.max_seconds
    )
    save_atomic(args.out, payload, mode=OWNER_ONLY)
    when = _stamp_text(entry.created_at)
    print(
        f"wrote {args.out} ({len(payload)} bytes): the release made under {terminal_safe(entry.request_id, 300)} "
        f"at {when} UTC, epsilon {format_epsilon(entry.epsilon_exact)} (the bytes sent, and resent under that id)"
    )
    print(
        f"see what it says: edprf inspect {args.out} --schema <the party's schema> --keys <dir of <party_id>.pub.pem>"
    )
    return 0


def _write_backup(args: argparse.Namespace) -> int:
    """``--backup-to FILE``: a consistent copy of the ledger (SQLite's online backup), written owner-only."""
    from client import anchor_path, backup_ledger, check_backup_target, format_epsilon
    from edprf_core.count_text import count_text

    if args.release is not None:
        raise ValueError("--backup-to copies the whole ledger: leave out --release (and --out)")
    if args.json or args.last is not None:
        raise ValueError("--backup-to writes a file and says so in one line: leave out --json and --last")
    if not args.max_seconds > 0:
        raise ValueError(f"--max-seconds: expected a positive number, got {args.max_seconds!r}")
    ledger = Path(args.ledger)
    check_backup_target(ledger, args.backup_to)  # the ledger, its files or its anchor: refused before any --force
    refuse_existing_outputs([(f"--backup-to {args.backup_to}", args.backup_to)], args.force)
    copy = backup_ledger(ledger, args.backup_to, max_bytes=args.max_bytes, max_seconds=args.max_seconds)
    held = (
        "a ledger of another edprf-fl version, copied as it is"
        if copy.entries is None
        else f"{count_text(copy.entries, 'entry', 'entries')}, {format_epsilon(copy.spent)} spent"
    )
    for line in copy.leftover_lines():
        print(terminal_safe(line, 600))
    print(f"wrote {args.backup_to}: a consistent copy of {ledger} ({held}; owner-only)")
    print(
        f"its anchor {anchor_path(ledger).name} is not in the copy and must not be backed up with it: to restore, put "
        f"the copy in place of {ledger.name} only (no {ledger.name}-wal or -shm), leave the anchor where it is, then "
        "run `edprf party check`"
    )
    return 0


def _of_the_cap(cap: Fraction | None, remaining: Fraction | None) -> str:
    """The rest of the ``spent`` line: the cap and what remains of it (nothing without a cap)."""
    from client import format_epsilon

    if cap is None:
        return ""
    left = "unknown (the anchor cannot be read)" if remaining is None else format_epsilon(remaining)
    return f" of the lifetime cap {format_epsilon(cap)}; remaining {left}"


def _unread_text(state: BudgetState) -> str:
    """Why there is nothing to show, in one line (``""``: the ledger was read): a missing ledger, said with what its
    anchor records (a lost ledger) or what that means (a new one); an unreadable ledger (a locked one said as busy),
    or an unreadable anchor beside a missing ledger, named."""
    from client import LedgerStatus, format_epsilon

    ledger = state.ledger_path
    if state.status is LedgerStatus.LOST:
        return (
            f"no ledger at {ledger}, but its anchor {state.anchor_path.name} records "
            f"{format_epsilon(state.anchor.spent)} spent: the ledger was deleted or moved; restore it from a backup "
            "(the party counts what the anchor records as spent either way)"
        )
    if state.status is LedgerStatus.NOT_CREATED:
        return (
            f"no ledger at {ledger}, and no anchor beside it: a party's ledger is created on its first request, so a "
            "party that has served none has spent nothing; otherwise check the path (the node config's ledger-path)"
        )
    if state.in_ledger is None:  # unreadable; or absent, its anchor unreadable: the anchor is what to restore
        if state.ledger_absent:
            return state.anchor_error
        return state.ledger_error + _anchor_beside(state)
    return ""


def _anchor_beside(state: BudgetState) -> str:
    """What the anchor beside an unread ledger records (or why it cannot be read), as the end of its error line."""
    from client import format_epsilon

    if state.anchor_error:
        return f"; and {state.anchor_error}"
    if state.anchor is None:
        return ""
    said = f"; its anchor {state.anchor_path.name} records {format_epsilon(state.anchor.spent)} spent"
    if state.ledger_of_another or state.too_large or state.disk_full or state.busy:  # no restore over a ledger not lost
        return said
    return said + " (what this party counts as spent at least: restore the ledger from its backup)"


def _trail(meta: Mapping[str, str], audit: AuditRecords, which: str) -> tuple[int, list[str]]:
    """The ledger's record of its cap's (``which`` ``"cap"``) or relation's changes (``<UTC time>: <old> -> <new>``):
    how many changes it counts and every line it holds (review rev-dpo D13: only the latest 10 were shown, and the
    lines dropped were not counted): the ``trails`` table's whole since 0.2.11, before it the first and the latest
    that ``ledger_meta`` kept (:func:`client._ledger_audit.whole_trail`), each made safe for a terminal (the file is
    untrusted)."""
    from client import (
        CAP_CHANGE_COUNT_KEY,
        CAP_CHANGES_KEY,
        RELATION_CHANGE_COUNT_KEY,
        RELATION_CHANGES_KEY,
        trail_lines,
        whole_trail,
    )

    cap = which == "cap"
    keys = (CAP_CHANGES_KEY, CAP_CHANGE_COUNT_KEY) if cap else (RELATION_CHANGES_KEY, RELATION_CHANGE_COUNT_KEY)
    name = "lifetime-cap" if cap else "relation"
    count, lines = whole_trail(
        *trail_lines(meta, *keys),
        None if audit.trails is None else audit.trails.get(name, ()),
        audit.trails_dropped.get(name, 0),
    )
    return count, [terminal_safe(line, 120) for line in lines]


def _dropped_where(audit: AuditRecords) -> str:
    """Where a trail's dropped lines went, for the line that counts them."""
    if audit.trails is None:
        return "the ledger keeps the first and the latest lines (every line from 0.2.11 on)"
    return "from before 0.2.11, when the ledger kept the first and the latest lines only, or past 100,000"


def _first_and_latest(lines: list[str], latest: int) -> list[str]:
    """The first of ``lines`` and the latest ``latest`` (all of them when that is every line)."""
    if len(lines) <= latest + 1:
        return lines
    return [lines[0], *lines[len(lines) - latest :]] if latest > 0 else lines[:1]
