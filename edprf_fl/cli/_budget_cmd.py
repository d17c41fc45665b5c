"""``edprf budget``: show a party's privacy-budget ledger (read-only).

The ledger file is opened read-only (SQLite ``mode=ro``): no table is created,
no column added, the journal mode is not switched, so showing a ledger never
changes it.  Only regular SQLite files are read; anything else (a missing
path, a directory, a FIFO, a device, a non-SQLite file, a file above
``--max-bytes``, a ledger with values of the wrong kind, one that takes
SQLite more than ``--max-seconds`` to read) is a one-line error with exit
code 1, never a traceback.  Every text from the file is printed through
:func:`edprf_fl.cli._terminal_text.terminal_safe` (control characters escaped).
Sums are exact.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from datetime import UTC, datetime
from fractions import Fraction
from pathlib import Path

from ._arg_types import positive_finite
from ._terminal_text import terminal_safe

__all__ = ["OVER_CAP_STATUS", "register"]

OVER_CAP_STATUS = 3
"""Exit status of ``edprf budget`` for a ledger that has spent more than its cap."""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "budget",
        help="show a party's ledger: every release, its epsilon, its time, the remaining cap",
        description=(
            "Show a party's privacy-budget ledger (read-only): every reservation, what was spent against the "
            "lifetime cap, and the replies that were not differentially private."
        ),
        epilog=(
            f"exit status: 0 shown; 1 the ledger or policy cannot be read; {OVER_CAP_STATUS} the ledger has spent "
            "more than the cap (a cap lowered after spending, or spend carried from the coordinator's record): "
            "the party refuses every request that spends epsilon"
        ),
    )
    p.add_argument("ledger", help="the party's ledger (SQLite file; opened read-only)")
    cap = p.add_mutually_exclusive_group()
    cap.add_argument("--policy", default=None, help="the party's policy TOML (for the lifetime cap)")
    cap.add_argument("--cap", type=positive_finite, default=None, help="lifetime cap, if no policy file is given")
    p.add_argument("--max-bytes", type=int, default=1 << 30, help="refuse ledgers larger than this (default 1 GiB)")
    p.add_argument(
        "--max-seconds",
        type=float,
        default=10.0,
        help="give up on a ledger that takes SQLite longer than this to read (default 10 s)",
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Handler of ``edprf budget``: any failure is one sanitized line on stderr and exit code 1."""
    try:
        return _show(args)
    except KeyboardInterrupt:
        raise
    except Exception as exc:  # a hostile or broken file of any kind: one line, never a traceback
        logging.getLogger("edprf").debug("budget failed", exc_info=True)
        kind = "" if isinstance(exc, (ValueError, OSError)) else f"{type(exc).__name__}: "
        print(f"edprf budget: error: {kind}{terminal_safe(' '.join(str(exc).split()), 500)}", file=sys.stderr)
        return 1


def _show(args: argparse.Namespace) -> int:
    from client import (
        CAP_CHANGES_KEY,
        CAP_KEY,
        NOT_DP_COUNT_KEY,
        NOT_DP_KEY,
        exact_epsilon,
        format_epsilon,
        load_policy,
        not_dp_headline,
        not_dp_replies,
        read_ledger_readonly,
        read_meta_readonly,
        total_spent,
    )

    if not args.max_seconds > 0:
        raise ValueError(f"--max-seconds: expected a positive number, got {args.max_seconds!r}")
    _refuse_missing_ledger(Path(args.ledger))
    entries = read_ledger_readonly(args.ledger, max_bytes=args.max_bytes, max_seconds=args.max_seconds)
    meta = read_meta_readonly(
        args.ledger,
        (NOT_DP_KEY, NOT_DP_COUNT_KEY, CAP_KEY, CAP_CHANGES_KEY),
        max_bytes=args.max_bytes,
        max_seconds=args.max_seconds,
    )
    cap_changes = _cap_changes(meta.get(CAP_CHANGES_KEY))
    n_not_dp, not_dp_lines = not_dp_replies(meta)
    cap = load_policy(args.policy).lifetime_epsilon_cap if args.policy else args.cap
    cap_exact = None if cap is None else exact_epsilon(cap)
    spent = total_spent(entries)
    remaining = None if cap_exact is None else max(Fraction(0), cap_exact - spent)
    pending = _pending_cap_change(meta.get(CAP_KEY), cap_exact)
    over = None if cap_exact is None or spent <= cap_exact else spent - cap_exact
    status = OVER_CAP_STATUS if over is not None else 0
    if args.json:
        print(
            json.dumps(
                {
                    "cap": cap,
                    "spent": float(spent),
                    "remaining": None if remaining is None else float(remaining),
                    "spent_exact": format_epsilon(spent),
                    "remaining_exact": None if remaining is None else format_epsilon(remaining),
                    "over_cap": None if over is None else float(over),
                    "over_cap_exact": None if over is None else format_epsilon(over),
                    "cap_changes": cap_changes,
                    "cap_not_yet_recorded": pending,
                    "not_dp_replies": n_not_dp,
                    "not_dp": not_dp_lines,
                    "entries": [
                        {
                            **{k: v for k, v in e.__dict__.items() if k != "epsilon_exact"},
                            "epsilon_exact": format_epsilon(e.epsilon_exact),
                        }
                        for e in entries
                    ],
                },
                indent=2,
            )
        )
        return status
    print(f"{'time (UTC)':<20} {'kind':<11} {'epsilon':>10} {'state':<9} {'run':<22} detail")
    for e in entries:
        when = datetime.fromtimestamp(e.created_at, tz=UTC).strftime("%Y-%m-%d %H:%M:%S")
        print(
            f"{when:<20} {terminal_safe(e.kind, 11):<11} {format_epsilon(e.epsilon_exact):>10} "
            f"{terminal_safe(e.state, 9):<9} {terminal_safe(e.run_id[:22], 22):<22} {terminal_safe(e.detail, 200)}"
        )
    print(
        f"\nspent {format_epsilon(spent)}"
        + (
            ""
            if cap_exact is None
            else f" of the lifetime cap {format_epsilon(cap_exact)}; remaining {format_epsilon(remaining)}"
        )
    )
    for line in cap_changes:
        print(f"the lifetime cap was changed (UTC): {line}")
    if pending:
        print(pending)
    if over is not None:
        print(
            f"OVER THE CAP by {format_epsilon(over)}: this party refuses every request that spends epsilon "
            "(the cap was lowered after spending, or spend was carried from the coordinator's record)"
        )
    print(
        "every entry counts, released or not: a reservation is written before training "
        "(sequential composition over releases); sums are exact"
    )
    if n_not_dp:
        print(f"\n{not_dp_headline(n_not_dp)}; the epsilon above bounds the other replies only, not what these reveal:")
        for line in not_dp_lines:
            print(f"  {terminal_safe(line, 300)}")
        if n_not_dp > len(not_dp_lines):
            print(f"  (the first and the latest {len(not_dp_lines) - 1} are kept; {n_not_dp} in all)")
    return status


def _refuse_missing_ledger(ledger: Path) -> None:
    """A missing ledger, said with what its anchor beside it records (a lost ledger) or what that means (a new one).

    Raises
    ------
    ValueError
        Always when ``ledger`` does not exist (exit status 1: nothing to show).
    """
    from client import anchor_path, format_epsilon, read_anchor

    if ledger.exists():
        return
    anchor = read_anchor(anchor_path(ledger))  # a file that is no anchor raises, naming it
    if anchor is not None:
        raise ValueError(
            f"no ledger at {ledger}, but its anchor {anchor_path(ledger).name} records "
            f"{format_epsilon(anchor.spent)} spent: the ledger was deleted or moved; restore it from a backup "
            "(the party counts what the anchor records as spent either way)"
        )
    raise ValueError(
        f"no ledger at {ledger}, and no anchor beside it: a party's ledger is created on its first request, so a "
        "party that has served none has spent nothing; otherwise check the path (the node config's ledger-path)"
    )


_SHOWN_CAP_CHANGES = 10


def _cap_changes(trail: str | None) -> list[str]:
    """The ledger's record of its cap's changes (``<UTC time>: <old> -> <new>``, the latest
    :data:`_SHOWN_CAP_CHANGES`), each line made safe for a terminal (the file is untrusted)."""
    lines = [line for line in (trail or "").splitlines() if line.strip()]
    return [terminal_safe(line, 120) for line in lines[-_SHOWN_CAP_CHANGES:]]


def _pending_cap_change(recorded: str | None, cap_exact: Fraction | None) -> str | None:
    """A line when the cap shown differs from the one the ledger last recorded (a policy edited since the
    party last opened its ledger, which then records the change), else None.

    The recorded text is untrusted: only the ledger's own forms are read (``inf``, or an exact fraction of
    at most 40 characters, as the ledger writes it); anything else is left unread.
    """
    import re

    from client import format_epsilon

    if cap_exact is None or recorded is None:
        return None
    if recorded == "inf":
        last = "no cap"
    elif len(recorded) <= 40 and re.fullmatch(r"\d+(/[1-9]\d*)?", recorded) and Fraction(recorded) > 0:
        if Fraction(recorded) == cap_exact:
            return None
        last = format_epsilon(Fraction(recorded))
    else:
        return None
    return (
        f"the cap shown ({format_epsilon(cap_exact)}) is not the one the ledger last recorded "
        f"({last}): the party records the change when it next opens its ledger"
    )
