"""A ledger's long history (long-horizon review, stop 56): what grows stays readable, and a large ledger is not
called damaged.

- The cap-change trail kept every line: two policies with different caps on one ledger add one at every request,
  and at 64 KiB (``MAX_VALUE_BYTES``) every read-only tool called the ledger unreadable and advised a restore, while
  the party served on.  It now keeps the first line and the latest ``KEPT_CAP_CHANGE_LINES - 1``.
- A ledger above a reader's byte limit (1 GiB by default: a long history of stored releases) was "unreadable:
  restore the party's ledger from its backup".  It is now named as long, not damaged, with the option that reads it.
"""

from __future__ import annotations

import functools

from client import BudgetLedger, LedgerStatus, read_budget
from client import _preflight as preflight
from client._ledger import CAP_CHANGES_KEY, KEPT_CAP_CHANGE_LINES, MAX_VALUE_BYTES, read_meta_readonly
from edprf_fl.cli import main

from .test_party_check import _check, party  # noqa: F401 (a fixture)


def test_the_cap_change_trail_keeps_its_first_and_latest_lines(tmp_path):
    path = tmp_path / "ledger.sqlite"
    BudgetLedger(path, cap=2.0)
    changes = 3 * KEPT_CAP_CHANGE_LINES
    for i in range(changes):  # two policies on one ledger: the cap flips at every opening
        BudgetLedger(path, cap=3.0 if i % 2 == 0 else 2.0)
    trail = read_meta_readonly(path, (CAP_CHANGES_KEY,))[CAP_CHANGES_KEY].splitlines()
    assert len(trail) == KEPT_CAP_CHANGE_LINES
    assert trail[0].endswith(": 2 -> 3")  # the first change is kept
    assert trail[-1].endswith(": 3 -> 2")  # and the latest (changes is even: the last flip went back to 2)
    assert len("\n".join(trail)) < MAX_VALUE_BYTES // 10
    state = read_budget(path, 2.0)
    assert state.status is LedgerStatus.READ


def test_a_ledger_above_the_byte_limit_is_named_long_not_damaged(tmp_path, capsys):
    path = tmp_path / "ledger.sqlite"
    ledger = BudgetLedger(path, cap=2.0)
    ledger.reserve("r/train", "release", 1.0, run_id="r")
    ledger.complete("r/train", bytes(64 << 10))
    state = read_budget(path, 2.0, max_bytes=8 << 10)
    assert state.status is LedgerStatus.UNREADABLE and state.too_large
    assert "not a damaged ledger" in state.ledger_error and "--max-bytes" in state.ledger_error
    assert main(["budget", str(path), "--max-bytes", str(8 << 10)]) == 1
    err = capsys.readouterr().err
    assert "not a damaged ledger" in err and "restore" not in err
    assert main(["budget", str(path)]) == 0  # the default limit reads it


def test_party_check_does_not_advise_a_restore_for_a_long_ledger(party, capsys, monkeypatch):  # noqa: F811
    paths, _ = party
    ledger = BudgetLedger(paths["ledger-path"], cap=2.0)
    ledger.reserve("r/train", "release", 1.0, run_id="r")
    ledger.complete("r/train", bytes(64 << 10))
    monkeypatch.setattr(preflight, "read_budget", functools.partial(read_budget, max_bytes=8 << 10))
    code, lines = _check(paths, capsys)
    said = [line for line in lines if "not a damaged ledger" in line]
    assert code == 1 and said and "restore" not in said[0]


def test_sums_and_entry_lists_never_read_the_stored_releases(tmp_path):
    """Long-horizon review F2: a row's columns after ``payload`` were read past the release's bytes, so every sum of
    epsilon read every release ever stored (498 MB per sum at 6,000 releases, several sums per request).  Both
    queries are answered from a covering index; a ledger written before it gets it at its next opening."""
    import sqlite3

    from client._ledger import _COLUMNS

    path = tmp_path / "ledger.sqlite"
    BudgetLedger(path, cap=2.0)
    with sqlite3.connect(path) as db:  # a ledger of an earlier 0.2 version: the same table, no index
        db.execute("DROP INDEX IF EXISTS spends_entries")
    BudgetLedger(path, cap=2.0)
    with sqlite3.connect(path) as db:
        for query in ("SELECT epsilon_exact FROM spends", f"SELECT {_COLUMNS} FROM spends ORDER BY id"):
            plan = " ".join(str(row[-1]) for row in db.execute(f"EXPLAIN QUERY PLAN {query}"))
            assert "COVERING INDEX" in plan, (query, plan)
