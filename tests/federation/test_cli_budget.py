"""`edprf budget` shows a party's ledger."""

from __future__ import annotations

import json

import pytest

from client import BudgetLedger, PartyPolicy
from edprf_fl.cli._main import main


def test_budget_lists_entries_and_remaining_cap(tmp_path, capsys):
    ledger = BudgetLedger(tmp_path / "ledger.sqlite", cap=2.0)
    ledger.reserve("run-1/7/train", "release", 1.0, run_id="run-1", detail="2 trees, depth 4, binary")
    ledger.complete("run-1/7/train", b"release-bytes")
    ledger.reserve("run-1/7/evaluate", "evaluation", 0.1, run_id="run-1")
    (tmp_path / "policy.toml").write_text(PartyPolicy(party_id="p", lifetime_epsilon_cap=2.0).to_toml())

    assert main(["budget", str(tmp_path / "ledger.sqlite"), "--policy", str(tmp_path / "policy.toml")]) == 0
    out = capsys.readouterr().out
    assert "release" in out and "released" in out and "evaluation" in out and "reserved" in out
    assert "spent 1.1 of the lifetime cap 2; remaining 0.9" in out
    # claims review S2-3 (stop 56): the figures bound each row, not each person
    assert "epsilon per record (data row): a person with k rows has faced up to k times these figures" in out

    assert main(["budget", str(tmp_path / "ledger.sqlite"), "--cap", "2", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert abs(data["remaining"] - 0.9) < 1e-12 and [e["kind"] for e in data["entries"]] == ["release", "evaluation"]


def test_a_ledger_over_its_cap_says_so_and_exits_with_its_own_status(tmp_path, capsys):
    """A cap lowered after spending showed 'spent 1 of the lifetime cap 0.5; remaining 0' with exit 0 (walkthrough)."""
    from edprf_fl.cli._budget_cmd import OVER_CAP_STATUS

    path = _ledger_with_spends(tmp_path / "ledger.sqlite")  # 0.3 spent
    (tmp_path / "policy.toml").write_text(PartyPolicy(party_id="p", lifetime_epsilon_cap=0.2).to_toml())
    assert main(["budget", str(path), "--policy", str(tmp_path / "policy.toml")]) == OVER_CAP_STATUS == 3
    out = capsys.readouterr().out
    assert "spent 0.3 of the lifetime cap 0.2; remaining 0" in out
    assert "OVER THE CAP by 0.1: this party refuses every request that spends epsilon" in out
    assert main(["budget", str(path), "--cap", "0.2", "--json"]) == OVER_CAP_STATUS
    data = json.loads(capsys.readouterr().out)
    assert data["over_cap_exact"] == "0.1" and data["remaining"] == 0.0
    assert main(["budget", str(path), "--cap", "0.3"]) == 4  # at the cap exactly: not over, but exhausted
    assert "OVER" not in capsys.readouterr().out


@pytest.mark.parametrize("cap", ["-1", "0", "inf", "nan", "x"])
def test_a_cap_that_is_not_a_positive_number_is_refused(tmp_path, capsys, cap):
    path = _ledger_with_spends(tmp_path / "ledger.sqlite")
    with pytest.raises(SystemExit) as exc:
        main(["budget", str(path), "--cap", cap])
    assert exc.value.code == 2 and "--cap" in capsys.readouterr().err


def test_a_cap_and_a_policy_together_are_refused(tmp_path, capsys):
    """--cap was ignored when --policy was given."""
    path = _ledger_with_spends(tmp_path / "ledger.sqlite")
    (tmp_path / "policy.toml").write_text(PartyPolicy(party_id="p", lifetime_epsilon_cap=2.0).to_toml())
    with pytest.raises(SystemExit) as exc:
        main(["budget", str(path), "--cap", "1", "--policy", str(tmp_path / "policy.toml")])
    assert exc.value.code == 2 and "not allowed with argument" in capsys.readouterr().err


def test_budget_on_a_missing_ledger_is_a_clear_error(tmp_path, capsys):
    """A new party (no ledger, no anchor) and a lost ledger (its anchor beside it) were both 'no ledger at ...'
    (walkthrough of stop 45): the anchor's figure is now shown, and a new party's case is said."""
    assert main(["budget", str(tmp_path / "nope.sqlite")]) == 1
    err = capsys.readouterr().err
    assert "no ledger at" in err and "no anchor beside it" in err and "has spent nothing" in err
    ledger = _ledger_with_spends(tmp_path / "ledger.sqlite")
    assert main(["budget", str(ledger)]) == 0
    capsys.readouterr()
    ledger.unlink()  # lost: its anchor stays
    assert main(["budget", str(ledger)]) == 1
    err = capsys.readouterr().err
    assert "but its anchor ledger-anchor.json records " in err and "the ledger was deleted or moved" in err
    (tmp_path / "ledger-anchor.json").write_text("{}")  # not an anchor: named, never read as nothing spent
    assert main(["budget", str(ledger)]) == 1
    assert "ledger anchor" in capsys.readouterr().err


def _ledger_with_spends(path):
    ledger = BudgetLedger(path, cap=2.0)
    for i in range(3):
        ledger.reserve(f"r{i}", "evaluation", 0.1)
    return path


def test_budget_does_not_change_the_ledger_file(tmp_path, capsys):
    import os
    import time

    path = _ledger_with_spends(tmp_path / "ledger.sqlite")
    before_bytes, before_mtime = path.read_bytes(), os.stat(path).st_mtime_ns
    time.sleep(0.01)
    assert main(["budget", str(path), "--cap", "2"]) == 0
    assert "spent 0.3 of the lifetime cap 2; remaining 1.7" in capsys.readouterr().out  # exact: no 0.30000000000000004
    assert path.read_bytes() == before_bytes and os.stat(path).st_mtime_ns == before_mtime


def test_budget_on_a_ledger_that_is_not_a_ledger_does_not_create_tables(tmp_path, capsys):
    import sqlite3

    path = tmp_path / "other.sqlite"
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE t (x)")
    db.commit()
    db.close()
    before = path.read_bytes()
    assert main(["budget", str(path)]) == 1
    assert "not a party's ledger" in capsys.readouterr().err
    assert path.read_bytes() == before


def test_budget_refuses_an_old_ledger_in_one_line_without_changing_it(tmp_path, capsys):
    from tests.federation.test_party_hardening import _legacy_ledger

    path = tmp_path / "old.sqlite"
    _legacy_ledger(path, [0.5])
    before = path.read_bytes()
    assert main(["budget", str(path), "--cap", "1"]) == 1
    err = capsys.readouterr().err
    assert "a ledger written by another edprf-fl version" in err and len(err.strip().splitlines()) == 1
    assert "do not give the party a new ledger path (a new ledger starts at 0 and forgets this spend)" in err
    assert "how much it records cannot be read by this version" in err  # no epsilon_exact column
    assert path.read_bytes() == before


def test_budget_shows_what_a_ledger_of_another_version_records_and_never_advises_a_new_path(tmp_path, capsys):
    """Ops review finding 2: the error said 'give the party a new ledger path', which starts a ledger at 0 with
    the whole cap; `edprf budget` could not show what the old ledger spent."""
    import sqlite3

    path = tmp_path / "ledger.sqlite"
    ledger = BudgetLedger(path, cap=2.0)
    ledger.reserve("r1", "release", 1.0)
    ledger.reserve("r2", "evaluation", 0.1)
    db = sqlite3.connect(path)
    db.execute("ALTER TABLE spends ADD COLUMN future_column TEXT")  # a ledger of a later version
    db.commit()
    db.close()
    assert main(["budget", str(path), "--cap", "2"]) == 1
    err = capsys.readouterr().err
    assert "it records 1.1 spent (the sum of its epsilon_exact column)" in err
    assert "run the edprf-fl version that wrote it" in err and "keep the file" in err
    assert "its anchor ledger-anchor.json records 1.1 spent" in err
    assert "give the party a new ledger path" not in err.replace("do not give the party a new ledger path", "")
    with pytest.raises(ValueError, match=r"it records 1\.1 spent") as refused:
        BudgetLedger(path, cap=2.0)
    assert "do not give the party a new ledger path" in str(refused.value)


def _fifo(tmp_path):
    import os

    path = tmp_path / "fifo"
    os.mkfifo(path)
    return str(path)


@pytest.mark.parametrize(
    "make, expected",
    [
        (lambda d: str(d / "nope.sqlite"), "no ledger at"),
        (lambda d: str(d), "not a regular file"),
        (_fifo, "not a regular file"),
        (lambda d: "/dev/zero", "not a regular file"),
        (
            lambda d: (d / "text.sqlite").write_text("hello, not a database\n" * 10) and str(d / "text.sqlite"),
            "not an SQLite database",
        ),
        (
            lambda d: (d / "empty.sqlite").write_bytes(b"") or str(d / "empty.sqlite"),
            "is empty: a ledger file created but never written; the file itself records no spend",
        ),
    ],
)
def test_budget_on_an_unusable_path_is_a_one_line_error(tmp_path, capsys, make, expected):
    assert main(["budget", make(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert expected in err and "Traceback" not in err and err.count("\n") == 1


def test_budget_refuses_a_ledger_above_the_size_bound(tmp_path, capsys):
    path = _ledger_with_spends(tmp_path / "ledger.sqlite")
    assert main(["budget", str(path), "--max-bytes", "100"]) == 1
    assert "at most 100 bytes" in capsys.readouterr().err


def test_budget_shows_the_caps_changes_and_a_change_not_yet_recorded(tmp_path, capsys):
    """A cap raised from 2 to 3 showed only 'spent 2.1 of the lifetime cap 3' (runbook walkthrough)."""
    path = tmp_path / "ledger.sqlite"
    BudgetLedger(path, cap=2.0).reserve("r1", "release", 1.0)
    BudgetLedger(path, cap=3.0)  # the party opens its ledger under the edited policy: the change is recorded
    assert main(["budget", str(path), "--cap", "3"]) == 0
    out = capsys.readouterr().out
    assert "spent 1 of the lifetime cap 3; remaining 2" in out
    changed = [line for line in out.splitlines() if line.startswith("the lifetime cap was changed (UTC): ")]
    assert len(changed) == 1 and changed[0].endswith(": 2 -> 3")
    assert "not the one the ledger last recorded" not in out
    assert main(["budget", str(path), "--cap", "4", "--json"]) == 0  # the policy edited again, the party not yet run
    data = json.loads(capsys.readouterr().out)
    assert data["cap_changes"][0].endswith(": 2 -> 3")
    assert data["cap_not_yet_recorded"].startswith("the cap shown (4) is not the one the ledger last recorded (3)")
    assert main(["budget", str(path), "--cap", "3", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["cap_not_yet_recorded"] is None


@pytest.mark.parametrize("recorded", ["1e100000000", "1e400", "-5", "1/0", "x" * 50])
def test_a_recorded_cap_in_another_form_is_left_unread(tmp_path, capsys, recorded):
    """The ledger file is untrusted: 'lifetime-cap' = 1e100000000 took 211 s in Fraction() (review of stop 43)."""
    import sqlite3

    path = tmp_path / "ledger.sqlite"
    BudgetLedger(path, cap=2.0).reserve("r1", "release", 1.0)
    with sqlite3.connect(path) as db:
        db.execute("UPDATE ledger_meta SET value = ? WHERE key = 'lifetime-cap'", (recorded,))
    assert main(["budget", str(path), "--cap", "2", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["cap_not_yet_recorded"] is None


def test_a_ledger_behind_its_anchor_shows_what_the_party_counts(tmp_path, capsys):
    """A ledger restored from a backup showed 'spent 1 ...; remaining 1' while the party, which carries its
    anchor's 0.5 before its next request, had 0.5 left (`edprf party check` and `edprf consortium` said so)."""
    from edprf_fl.cli._budget_cmd import OVER_CAP_STATUS

    from .test_budget_state import restored_from_a_backup

    path = restored_from_a_backup(tmp_path / "ledger.sqlite")
    before = path.read_bytes()
    assert main(["budget", str(path), "--cap", "2"]) == 0
    out = capsys.readouterr().out
    assert "the entries hold 1, and its anchor ledger-anchor.json records 0.5 more (restored from a backup" in out
    assert "spent 1.5 of the lifetime cap 2; remaining 0.5" in out
    assert main(["budget", str(path), "--cap", "2", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["spent_exact"] == "1.5" and data["carried_from_anchor_exact"] == "0.5" and len(data["entries"]) == 1
    assert data["anchor_error"] is None and data["ledger_status"] == "behind-anchor"
    assert main(["budget", str(path), "--cap", "1.2"]) == OVER_CAP_STATUS  # what the anchor adds counts
    assert "OVER THE CAP by 0.3" in capsys.readouterr().out
    assert path.read_bytes() == before  # nothing carried by showing it


def test_an_unreadable_anchor_beside_a_ledger_is_named_and_exits_1(tmp_path, capsys):
    """The anchor was not read when the ledger existed: an anchor the party cannot read (it then refuses to
    serve) went unsaid, with exit status 0."""
    path = _ledger_with_spends(tmp_path / "ledger.sqlite")
    (tmp_path / "ledger-anchor.json").write_text("{}")
    assert main(["budget", str(path), "--cap", "2"]) == 1
    said = capsys.readouterr()
    assert (  # the entries shown; what the party counts is unknown (it said "spent 0.3": walkthrough)
        "the entries hold 0.3; spent unknown of the lifetime cap 2; remaining unknown (the anchor cannot be read)"
        in said.out
    )
    assert said.err.startswith("edprf budget: error: ledger anchor ") and "refuses to serve" in said.err
    assert main(["budget", str(path), "--cap", "2", "--json"]) == 1
    said = capsys.readouterr()
    data = json.loads(said.out)
    # review rev-auto A10: --json said it on stdout only; the stderr line is the human view's, and `error` holds it
    assert said.err.startswith("edprf budget: error: ledger anchor ") and said.err.count("\n") == 1
    assert said.err == f"edprf budget: error: {data['error']}\n" and data["exhausted"] is None
    assert data["anchor_error"].startswith("ledger anchor ") and data["ledger_status"] == "anchor-unreadable"
    assert data["spent_exact"] is None and data["spent"] is None and data["remaining"] is None  # unknown, not 0.3
    assert data["spent_in_ledger_exact"] == "0.3" and len(data["entries"]) == 3
    assert data["carried_from_anchor_exact"] is None


def test_without_a_cap_the_one_the_ledger_recorded_is_shown_and_named(tmp_path, capsys):
    """`edprf budget LEDGER` alone showed no cap ('"cap": null'), though the ledger records the one the party last
    opened it with (walkthrough): that cap is now shown, named as the ledger's, and --policy still wins."""
    path = tmp_path / "ledger.sqlite"
    BudgetLedger(path, cap=1.5).reserve("run-1/7/train", "release", 0.5, run_id="run-1")
    assert main(["budget", str(path)]) == 0
    out = capsys.readouterr().out
    assert (
        "spent 0.5 of the lifetime cap 1.5; remaining 1" in out and "the lifetime cap the ledger last recorded" in out
    )
    assert main(["budget", str(path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["cap"], data["cap_source"], data["remaining"]) == (1.5, "ledger", 1.0)
    assert main(["budget", str(path), "--cap", "2", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["cap"], data["cap_source"], data["remaining"]) == (2.0, "--cap", 1.5)
    assert data["cap_not_yet_recorded"] and "1.5" in data["cap_not_yet_recorded"]


def test_an_unreadable_ledger_and_anchor_are_both_named(tmp_path, capsys):
    """Only the ledger's error was said when its anchor could not be read either (review)."""
    path = _ledger_with_spends(tmp_path / "ledger.sqlite")
    path.write_bytes(b"not a ledger" * 100)
    (tmp_path / "ledger-anchor.json").write_text("{}")
    assert main(["budget", str(path), "--cap", "2"]) == 1
    err = capsys.readouterr().err
    assert "not an SQLite database" in err and "; and ledger anchor " in err


def test_budget_on_an_empty_ledger_file_says_what_its_anchor_records(tmp_path, capsys):
    """Ops review finding 9: a 0-byte ledger was said to record no spend while its anchor recorded 2."""
    path = tmp_path / "ledger.sqlite"
    BudgetLedger(path, cap=3.0).reserve("r1", "release", 2.0)
    for f in tmp_path.glob("ledger.sqlite*"):
        f.unlink()
    path.write_bytes(b"")  # a ledger file created but never written (a restore that truncated it)
    assert main(["budget", str(path), "--cap", "3"]) == 1
    err = capsys.readouterr().err
    assert "the file itself records no spend; its anchor ledger-anchor.json records 2 spent" in err
    assert "it records no spend" not in err and err.count("\n") == 1


def test_last_shows_the_latest_entries_and_the_figures_still_count_every_entry(tmp_path, capsys):
    """Long-horizon review F7: 20,000 entries printed a 2.6 MB table; ``--last N`` lists the latest N only."""
    ledger = BudgetLedger(tmp_path / "ledger.sqlite", cap=5.0)
    for i in range(12):  # 12 x 0.1 = 1.2, the latest last
        ledger.reserve(f"run-{i:02d}/train", "release", 0.1, run_id=f"run-{i:02d}")
    path = str(tmp_path / "ledger.sqlite")

    assert main(["budget", path, "--last", "3"]) == 0
    out = capsys.readouterr().out
    assert [r for r in (f"run-{i:02d}/train" for i in range(12)) if r in out] == [
        "run-09/train",
        "run-10/train",
        "run-11/train",
    ]
    assert "showing the latest 3 of 12 entries" in out
    assert "spent 1.2 of the lifetime cap 5; remaining 3.8" in out  # every entry, not the 3 shown

    assert main(["budget", path, "--last", "3", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [e["request_id"] for e in data["entries"]] == ["run-09/train", "run-10/train", "run-11/train"]
    assert data["shown"] == 3 and data["total_entries"] == 12 and data["spent_exact"] == "1.2"

    assert main(["budget", path, "--last", "0", "--json"]) == 0  # the figures alone
    data = json.loads(capsys.readouterr().out)
    assert data["entries"] == [] and data["shown"] == 0 and data["total_entries"] == 12

    for last in ([], ["--last", "12"], ["--last", "50"]):  # default: all, as before; N at or above M: all, unsaid
        assert main(["budget", path, *last]) == 0
        out = capsys.readouterr().out
        assert all(f"run-{i:02d}/train" in out for i in range(12)) and "showing the latest" not in out
        assert main(["budget", path, *last, "--json"]) == 0
        data = json.loads(capsys.readouterr().out)
        assert len(data["entries"]) == data["shown"] == data["total_entries"] == 12

    with pytest.raises(SystemExit):  # argparse: not a count
        main(["budget", path, "--last", "-1"])
    assert "expected an integer >= 0" in capsys.readouterr().err
    assert main(["budget", path, "--last", "3", "--backup-to", str(tmp_path / "copy.sqlite")]) == 1
    assert "leave out --json and --last" in capsys.readouterr().err and not (tmp_path / "copy.sqlite").exists()


def _policy(tmp_path, cap: float, **fields) -> str:
    path = tmp_path / "policy.toml"
    path.write_text(PartyPolicy(party_id="p", lifetime_epsilon_cap=cap, **fields).to_toml())
    return str(path)


@pytest.mark.parametrize(
    ("cap", "with_policy", "status", "min_epsilon"),
    [
        ("0.3", False, 4, None),  # nothing left: exhausted whatever the policy
        ("0.305", True, 4, 0.01),  # 0.005 left, below the policy's min-epsilon 0.01
        ("0.305", False, 0, None),  # the same without the policy: its min-epsilon is not known
        ("0.5", True, 0, 0.01),
    ],
)
def test_an_exhausted_budget_has_its_own_exit_status_and_fields(
    tmp_path, capsys, cap, with_policy, status, min_epsilon
):
    """Review rev-auto A3: remaining 0 (or below the policy's min-epsilon) exited 0, while `edprf party check` called
    the same ledger a problem (every new request refused, budget_exhausted); --json had no field saying so."""
    from edprf_fl.cli._budget_cmd import EXHAUSTED_STATUS

    path = str(_ledger_with_spends(tmp_path / "ledger.sqlite"))  # 0.3 spent
    given = ["--policy", _policy(tmp_path, float(cap))] if with_policy else ["--cap", cap]
    assert main(["budget", path, *given]) == status
    out = capsys.readouterr().out
    assert ("EXHAUSTED: remaining epsilon" in out) == (status == EXHAUSTED_STATUS == 4)
    assert main(["budget", path, *given, "--json"]) == status
    data = json.loads(capsys.readouterr().out)
    assert data["exhausted"] is (status == 4) and data["min_epsilon"] == min_epsilon and data["over_cap"] is None


def test_without_any_cap_exhausted_is_unknown(tmp_path, capsys):
    path = tmp_path / "ledger.sqlite"
    BudgetLedger(path, cap=float("inf")).reserve("r", "evaluation", 0.1)  # a ledger recording no finite cap
    assert main(["budget", str(path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["cap"] is None and data["remaining"] is None and data["exhausted"] is None


def _another_partys(tmp_path) -> list[str]:
    path = _ledger_with_spends(tmp_path / "ledger.sqlite")
    BudgetLedger(path, cap=2.0, party_id="other")
    return [str(path), "--policy", _policy(tmp_path, 2.0)]


@pytest.mark.parametrize(
    ("make", "status", "said"),
    [
        (lambda t: [str(t / "nope.sqlite")], "not-created", "has spent nothing"),
        (lambda t: [str(t / "bad.sqlite")], "unreadable", "not an SQLite database"),
        (_another_partys, "unreadable", "other"),
        (lambda t: [str(t / "nope.sqlite"), "--policy", str(t / "no-policy.toml")], None, "no-policy.toml"),
    ],
)
def test_json_failures_print_one_object_and_one_stderr_line(tmp_path, capsys, make, status, said):
    """Review rev-auto A10: a missing, unreadable or another party's ledger printed nothing on stdout with --json (a
    `jq` pipeline failed to parse); "no ledger yet" (a new party: nothing spent) is told apart by its status."""
    (tmp_path / "bad.sqlite").write_bytes(b"not a ledger" * 100)
    assert main(["budget", *make(tmp_path), "--json"]) == 1
    out, err = capsys.readouterr()
    data = json.loads(out)
    assert data == {"format": "edprf-budget/1", "ledger_status": status, "error": data["error"]}
    assert said in data["error"] and err == f"edprf budget: error: {data['error']}\n"


def _hold_the_lock(path):
    """A connection holding the ledger's lock, as an sqlite3 shell left open in a transaction, or a backup agent."""
    import sqlite3

    db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    db.execute("PRAGMA locking_mode = EXCLUSIVE")
    db.execute("BEGIN EXCLUSIVE")
    db.execute("SELECT count(*) FROM spends").fetchall()
    return db


def test_a_locked_ledger_is_busy_with_exit_75_and_never_restored(tmp_path, capsys):
    """Review rev-auto A12: a ledger another process held locked was called unreadable ("database is locked", or
    "took longer than N s; not a ledger this party wrote") with the advice to restore it from its backup, which
    would replace a live, correct ledger."""
    from edprf_fl.cli._budget_cmd import BUSY_STATUS

    path = _ledger_with_spends(tmp_path / "ledger.sqlite")
    db = _hold_the_lock(path)
    try:
        for seconds in ("0.5", "2"):  # the time bound passes while waiting (0.5 s), or SQLite's busy wait ends first
            assert main(["budget", str(path), "--cap", "2", "--max-seconds", seconds]) == BUSY_STATUS == 75
            err = capsys.readouterr().err
            assert "busy: another process holds the ledger's lock; retry" in err and "restore" not in err, err
            assert "not a ledger this party wrote" not in err and err.count("\n") == 1
        assert main(["budget", str(path), "--json", "--max-seconds", "0.5"]) == 75
        out, err = capsys.readouterr()
        data = json.loads(out)
        assert data["ledger_status"] == "busy" and "busy" in data["error"] and "busy" in err
        target = tmp_path / "backup.sqlite"
        assert main(["budget", str(path), "--backup-to", str(target), "--max-seconds", "0.5"]) == 75
        assert "busy" in capsys.readouterr().err and not target.exists()
    finally:
        db.close()
    assert main(["budget", str(path), "--cap", "2"]) == 0  # the lock released: read as before
