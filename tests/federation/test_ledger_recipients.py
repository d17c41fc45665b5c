"""The first recipients of releases completed before 0.2.12, copied once from their ``sent`` rows when this version
opens the ledger for writing (review rev-s65 F1, the gap left for older releases): the resend guard then holds once
those rows are pruned; a first row ``resent`` copies nothing; the copy is done once, and the releases 0.2.11 completes
afterwards are copied at the next opening; ``edprf budget`` shows each completed release's first recipient."""

from __future__ import annotations

import json
import sqlite3
import time
from dataclasses import replace

import pytest

import client._ledger_audit as audit_module
from client import BudgetLedger
from client._ledger import read_records_readonly
from edprf_fl.cli._main import main

from ..privacy._party_requests import (  # noqa: F401
    TrainSettings,
    flower_task_identity,
    result_of,
    send_request,
    train_request,
)
from ._neighbours import file_bytes, make_party

pytestmark = pytest.mark.usefixtures("flower_task_identity")

_OURS, _THEIRS = "a" * 32 + ":" + "b" * 32, "c" * 32 + ":" + "d" * 32
_DETAIL = "2 trees, depth 4, binary, 20 bins, add-remove"
_MARK_KEY = "recipients-backfilled"  # in the file: ledgers keep it (client._ledger_audit.RECIPIENTS_BACKFILLED_KEY)
_LONG_AGO = 1_700_000_000.0  # an entry completed long before the opening: no delivery row is waited for


def _recipients(path):
    with sqlite3.connect(path) as db:
        return db.execute("SELECT request_id, registered, at FROM release_recipients ORDER BY request_id").fetchall()


def _marker(path):
    with sqlite3.connect(path) as db:
        row = db.execute("SELECT value FROM ledger_meta WHERE key = ?", (_MARK_KEY,)).fetchone()
    return None if row is None else row[0]


def _as_left_by_0_2_11(path):
    """The ledger as 0.2.11 leaves it: no release_recipients table (0.2.11 neither creates nor writes it), no mark."""
    with sqlite3.connect(path) as db:
        db.execute("DROP TABLE release_recipients")
        db.execute("DELETE FROM ledger_meta WHERE key = ?", (_MARK_KEY,))


def _completed_by_0_2_11(ledger, request_id, *deliveries):
    """A release 0.2.11 completes: reserved, released without a recipient row, then its delivery rows (``how``,
    registered keys' digest), each written after the completion as 0.2.11 writes them."""
    ledger.reserve(request_id, "release", 0.5, detail=_DETAIL)
    with sqlite3.connect(ledger.path) as db:
        db.execute(
            "UPDATE spends SET state = 'released', payload = x'00', updated_at = ? WHERE request_id = ?",
            (_LONG_AGO, request_id),
        )
    for i, (how, registered) in enumerate(deliveries):
        ledger.record_delivery(request_id, f"run{i}", how, registered=registered)


def test_a_0_2_11_release_keeps_its_first_recipient_once_its_delivery_rows_are_pruned(tmp_path, monkeypatch):
    """(a) A release 0.2.11 completed has a ``sent`` row and no recipient row: the next opening copies that row's digest
    and time; after another consortium's own resends pruned every delivery row of it, its request-tag is still refused
    to that consortium (it was resent to it before the copy), and the first coordinator still resumes."""
    import client._party as party_module

    monkeypatch.setattr(party_module, "registration_problem", lambda *_args: None)
    setup = make_party(tmp_path / "p", file_bytes(n_rows=60))
    a = replace(train_request(setup, TrainSettings(epsilon=0.5), "tag/train"), registered_parties=_OURS)
    first = result_of(send_request(setup, a))
    assert first["status"] == "released"
    _as_left_by_0_2_11(setup.ledger_path)
    [sent] = read_records_readonly(setup.ledger_path, ())[2].deliveries

    BudgetLedger(setup.ledger_path, 100.0)  # this version's next opening
    assert _recipients(setup.ledger_path) == [("tag/train", party_module.registered_digest(_OURS), sent.at)]

    monkeypatch.setattr(audit_module, "MAX_AUDIT_ROWS", 3)
    b_own = replace(train_request(setup, TrainSettings(epsilon=0.5), "b/own"), registered_parties=_THEIRS, run_id="rb")
    assert result_of(send_request(setup, b_own))["status"] == "released"
    for i in range(3):  # free resends of B's own release: every row of tag/train is pruned
        assert result_of(send_request(setup, replace(b_own, run_id=f"rb{i}")))["status"] == "released"
    assert {d.request_id for d in read_records_readonly(setup.ledger_path, ())[2].deliveries} == {"b/own"}

    stolen = result_of(send_request(setup, replace(a, run_id="run9", registered_parties=_THEIRS)))
    assert (stolen["status"], stolen["reason"]) == ("refused", "request_id_reused") and "release" not in stolen
    again = result_of(send_request(setup, replace(a, run_id="run2")))
    assert again["status"] == "released" and again["release"] == first["release"]
    assert BudgetLedger(setup.ledger_path, 100.0).first_recipient("tag/train") == party_module.registered_digest(_OURS)


def test_a_first_row_resent_copies_nothing(tmp_path):
    """(b) Only a ``sent`` first row is copied: a release whose first row is ``resent`` (its ``sent`` row lost: another
    asker's) gets no row and keeps falling back to that row while it is kept, as before; a release made before 0.2.11
    (no delivery row) gets none and is not waited for; the ``sent`` one beside them is copied."""
    ledger = BudgetLedger(tmp_path / "ledger.sqlite", cap=10.0)
    _completed_by_0_2_11(ledger, "old/train")  # before 0.2.11: no delivery row
    _completed_by_0_2_11(ledger, "lost/train", ("resent", "theirs-digest"), ("resent", "ours-digest"))
    _completed_by_0_2_11(ledger, "kept/train", ("sent", "ours-digest"), ("resent", "theirs-digest"))
    _as_left_by_0_2_11(ledger.path)

    reopened = BudgetLedger(ledger.path, 10.0)
    assert [(r, digest) for r, digest, _at in _recipients(ledger.path)] == [("kept/train", "ours-digest")]
    assert reopened.first_recipient("lost/train") == "theirs-digest"  # its first delivery row, as before
    assert reopened.first_recipient("old/train") is None
    assert _marker(ledger.path) == "3"  # every entry looked at, none waited for


def test_the_copy_is_done_once_and_again_for_releases_0_2_11_completes_later(tmp_path, monkeypatch):
    """(c) The mark keeps the highest entry looked at: an opening with no new entry copies nothing and does not look
    (the copy is not called); a release 0.2.11 completes afterwards (an approved 0.2.11 bundle still serves the party)
    is copied at the next opening, and so is one that was still reserved (training) when the copy ran."""
    ledger = BudgetLedger(tmp_path / "ledger.sqlite", cap=10.0)
    _completed_by_0_2_11(ledger, "r1/train", ("sent", "digest-1"))
    ledger.reserve("r2/train", "release", 0.5, detail=_DETAIL)  # training under 0.2.11 while this version opens
    _as_left_by_0_2_11(ledger.path)
    BudgetLedger(ledger.path, 10.0)
    assert [r for r, _d, _at in _recipients(ledger.path)] == ["r1/train"]
    assert _marker(ledger.path) == "2 2"  # entries up to 2 looked at; entry 2 waited for (reserved)

    def no_scan(*_args):
        raise AssertionError("the copy ran again")

    with monkeypatch.context() as patched:
        patched.setattr(audit_module, "_copy_sent_rows", no_scan)
        BudgetLedger(ledger.path, 10.0)  # nothing new: only the mark and the highest id are read
        BudgetLedger(ledger.path, 10.0)
    assert _marker(ledger.path) == "2 2"

    with sqlite3.connect(ledger.path) as db:  # 0.2.11 completes r2 (no recipient row) and writes its sent row
        db.execute("UPDATE spends SET state = 'released', payload = x'00', updated_at = ? WHERE id = 2", (_LONG_AGO,))
    ledger.record_delivery("r2/train", "run2", "sent", registered="digest-2")
    _completed_by_0_2_11(ledger, "r3/train", ("sent", "digest-3"))  # a release 0.2.11 made after the copy
    BudgetLedger(ledger.path, 10.0)
    assert [(r, d) for r, d, _at in _recipients(ledger.path)] == [
        ("r1/train", "digest-1"),
        ("r2/train", "digest-2"),
        ("r3/train", "digest-3"),
    ]
    assert _marker(ledger.path) == "3"


def test_a_release_completed_a_moment_ago_is_waited_for_its_sent_row(tmp_path):
    """0.2.11 writes a release's ``sent`` row in a transaction of its own, after its completion: a release completed
    just before the copy, without any delivery row yet, is looked at again at the next opening, not given up."""
    ledger = BudgetLedger(tmp_path / "ledger.sqlite", cap=10.0)
    ledger.reserve("r1/train", "release", 0.5, detail=_DETAIL)
    with sqlite3.connect(ledger.path) as db:
        db.execute("UPDATE spends SET state = 'released', updated_at = ? WHERE id = 1", (time.time(),))
    _as_left_by_0_2_11(ledger.path)
    BudgetLedger(ledger.path, 10.0)
    assert _recipients(ledger.path) == [] and _marker(ledger.path) == "1 1"
    ledger.record_delivery("r1/train", "run1", "sent", registered="digest-1")
    BudgetLedger(ledger.path, 10.0)
    assert [(r, d) for r, d, _at in _recipients(ledger.path)] == [("r1/train", "digest-1")]
    assert _marker(ledger.path) == "1"


def test_an_unreadable_mark_looks_at_every_entry_again(tmp_path):
    """A mark that is not one (edited by hand) is taken as absent: the copy runs again, for releases without a row
    only (a row written at a completion is never replaced)."""
    ledger = BudgetLedger(tmp_path / "ledger.sqlite", cap=10.0)
    ledger.reserve("r1/train", "release", 0.5)
    ledger.complete("r1/train", b"x", "digest-at-completion")
    ledger.record_delivery("r1/train", "run1", "sent", registered="another-digest")
    _completed_by_0_2_11(ledger, "r2/train", ("sent", "digest-2"))
    with sqlite3.connect(ledger.path) as db:
        db.execute("INSERT OR REPLACE INTO ledger_meta (key, value) VALUES (?, ?)", (_MARK_KEY, "not a mark"))
    BudgetLedger(ledger.path, 10.0)
    assert [(r, d) for r, d, _at in _recipients(ledger.path)] == [
        ("r1/train", "digest-at-completion"),
        ("r2/train", "digest-2"),
    ]
    assert _marker(ledger.path) == "2"


def test_a_copy_that_fails_leaves_nothing_and_the_ledger_opens(tmp_path, monkeypatch, caplog):
    """The copy closes a gap in the resend guard: an SQLite error in it keeps nothing of it (no row, no mark), is
    logged, and the ledger opens all the same (its spends are recorded as before); the next opening tries again."""
    ledger = BudgetLedger(tmp_path / "ledger.sqlite", cap=10.0)
    _completed_by_0_2_11(ledger, "r1/train", ("sent", "digest-1"))
    _as_left_by_0_2_11(ledger.path)

    def broken(db, _looked_at):
        db.execute("INSERT INTO release_recipients (request_id, registered, at) VALUES ('x', '', 0)")
        raise sqlite3.OperationalError("no such column: d.at")

    with monkeypatch.context() as patched:
        patched.setattr(audit_module, "_copy_sent_rows", broken)
        reopened = BudgetLedger(ledger.path, 10.0)
    assert "could not copy the first recipients" in caplog.text
    assert _recipients(ledger.path) == [] and _marker(ledger.path) is None
    reopened.reserve("r2/train", "release", 0.5)  # the ledger serves
    BudgetLedger(ledger.path, 10.0)
    assert [r for r, _d, _at in _recipients(ledger.path)] == ["r1/train"]


def test_budget_shows_each_completed_releases_first_recipient(tmp_path, capsys):
    """(d) ``edprf budget``: at the end of a completed release's line, its first recipient (the digest's first 12 hex
    digits, ``(none: keyless run)``, or ``(not recorded: made before 0.2.12)`` where the ledger keeps none); ``--json``:
    each entry's ``first_recipient`` (the digest whole, ``""`` keyless, null where none is kept or for any other
    entry)."""
    ledger = BudgetLedger(tmp_path / "ledger.sqlite", cap=10.0)
    for request_id, recipient in (("keyed/train", "0123456789abcdef"), ("keyless/train", ""), ("old/train", "x")):
        ledger.reserve(request_id, "release", 0.5, detail=_DETAIL)
        ledger.complete(request_id, b"x", recipient)
    ledger.reserve("e/evaluate", "evaluation", 0.1)
    ledger.complete("e/evaluate")
    ledger.reserve("open/train", "release", 0.5)
    with sqlite3.connect(ledger.path) as db:  # as a release made before 0.2.11 (read-only: nothing copies it)
        db.execute("DELETE FROM release_recipients WHERE request_id = 'old/train'")

    assert main(["budget", str(ledger.path)]) == 0
    lines = capsys.readouterr().out.splitlines()

    def line_of(request_id):
        return next(x for x in lines if f" {request_id} " in x)

    assert line_of("keyed/train").endswith(f"{_DETAIL} [first recipient: keys 0123456789ab]")
    assert line_of("keyless/train").endswith(f"{_DETAIL} [first recipient: (none: keyless run)]")
    assert line_of("old/train").endswith(f"{_DETAIL} [first recipient: (not recorded: made before 0.2.12)]")
    assert "first recipient" not in line_of("e/evaluate") + line_of("open/train")

    assert main(["budget", str(ledger.path), "--json"]) == 0
    shown = {e["request_id"]: e["first_recipient"] for e in json.loads(capsys.readouterr().out)["entries"]}
    assert shown == {
        "keyed/train": "0123456789abcdef",
        "keyless/train": "",
        "old/train": None,
        "e/evaluate": None,
        "open/train": None,
    }

    with sqlite3.connect(ledger.path) as db:  # a ledger 0.2.11 wrote: no table, every release unknown
        db.execute("DROP TABLE release_recipients")
    assert main(["budget", str(ledger.path)]) == 0
    assert "[first recipient: (not recorded: made before 0.2.12)]" in next(
        x for x in capsys.readouterr().out.splitlines() if " keyed/train " in x
    )


def test_budget_shows_a_0_2_11_releases_first_recipient_from_its_sent_row_until_it_is_copied(tmp_path, capsys):
    """Review rev-upgrade U1: before 0.2.13 first writes to a ledger 0.2.11 left, the resend guard takes a release's
    first recipient from its ``sent`` delivery row; ``edprf budget`` (read-only: it copies nothing) showed it as
    "not recorded".  It shows that row's digest and says where it comes from; a release whose first row is
    ``resent`` (its sent row lost) shows that row's, which the guard uses while it is kept, and says so (final read:
    the first version of this view took sent rows only, unlike the guard)."""
    ledger = BudgetLedger(tmp_path / "ledger.sqlite", cap=10.0)
    _completed_by_0_2_11(ledger, "sent/train", ("sent", "0123456789abcdef"), ("resent", "another"))
    _completed_by_0_2_11(ledger, "lost/train", ("resent", "fedcba9876543210"))
    _as_left_by_0_2_11(ledger.path)

    assert main(["budget", str(ledger.path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    sent = next(x for x in lines if " sent/train " in x)
    assert sent.endswith(
        "[first recipient: keys 0123456789ab (from its sent delivery row; the next request copies it into the ledger)]"
    )
    assert next(x for x in lines if " lost/train " in x).endswith(
        "[first recipient: keys fedcba987654 (from its first delivery row left, a resend: its sent row is lost; kept "
        "only while that row is)]"
    )
    assert main(["budget", str(ledger.path), "--json"]) == 0
    shown = {
        e["request_id"]: (e["first_recipient"], e["first_recipient_from"])
        for e in json.loads(capsys.readouterr().out)["entries"]
    }
    assert shown == {"sent/train": ("0123456789abcdef", "sent-row"), "lost/train": ("fedcba9876543210", "resent-row")}

    BudgetLedger(ledger.path, 10.0)  # 0.2.13's first writable opening copies it
    assert main(["budget", str(ledger.path), "--json"]) == 0
    shown = {
        e["request_id"]: (e["first_recipient"], e["first_recipient_from"])
        for e in json.loads(capsys.readouterr().out)["entries"]
    }
    assert shown == {"sent/train": ("0123456789abcdef", "ledger"), "lost/train": ("fedcba9876543210", "resent-row")}
