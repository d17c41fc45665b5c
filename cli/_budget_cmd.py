"""``edprf budget``: show a party's privacy-budget ledger."""

from __future__ import annotations

import argparse
import json
from datetime import UTC, datetime
from pathlib import Path

__all__ = ["register"]


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("budget", help="show a party's ledger: every release, its epsilon, its time, the remaining cap")
    p.add_argument("ledger", help="the party's ledger (SQLite file)")
    p.add_argument("--policy", default=None, help="the party's policy TOML (for the lifetime cap)")
    p.add_argument("--cap", type=float, default=None, help="lifetime cap, if no policy file is given")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from client import BudgetLedger, load_policy

    path = Path(args.ledger)
    if not path.is_file():
        raise ValueError(f"no ledger at {path}")
    cap = load_policy(args.policy).lifetime_epsilon_cap if args.policy else args.cap
    ledger = BudgetLedger(path, cap if cap is not None else float("inf"))
    entries = ledger.entries()
    spent = sum(e.epsilon for e in entries)
    if args.json:
        print(json.dumps({"cap": cap, "spent": spent, "remaining": None if cap is None else max(0.0, cap - spent),
                          "entries": [e.__dict__ for e in entries]}, indent=2))
        return 0
    print(f"{'time (UTC)':<20} {'kind':<11} {'epsilon':>8} {'state':<9} {'run':<22} detail")
    for e in entries:
        when = datetime.fromtimestamp(e.created_at, tz=UTC).strftime("%Y-%m-%d %H:%M:%S")
        print(f"{when:<20} {e.kind:<11} {e.epsilon:>8.4g} {e.state:<9} {e.run_id[:22]:<22} {e.detail}")
    print(f"\nspent {spent:.4g}" + ("" if cap is None else f" of the lifetime cap {cap:.4g}; "
                                                          f"remaining {max(0.0, cap - spent):.4g}"))
    print("every entry counts, released or not: a reservation is written before training "
          "(sequential composition over releases)")
    return 0
