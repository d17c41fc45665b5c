"""A failure the party catches after its reservation marks the entry ``failed``; what stays ``reserved`` says its age
(failure-injection review rev-ops F6).

The release's write (``complete``) or the anchor's write after the reservation failed, and the entry stayed
``reserved``: ``edprf budget`` showed it like a request still training and ``edprf party check`` called it a crash.
Now the entry is marked ``failed`` with the reason when that mark can be written, and the first error is the one
raised (a mark that fails too is logged, the entry left ``reserved``).  The epsilon stays spent either way: every
entry counts (privacy invariant 4).  ``edprf budget`` shows a reserved entry's age, and an entry older than
:data:`client.RESERVATION_LEFT_AFTER_SECONDS` is said to be left by a crash or a failed write, as the party check
says it.
"""

from __future__ import annotations

import errno
import json
import logging
import sqlite3
import sys
from fractions import Fraction
from pathlib import Path

import pytest

import client._ledger as ledger_module
import client._party as party_module
from client import (
    RESERVATION_LEFT_AFTER_SECONDS,
    BudgetLedger,
    duration_text,
    handle_evaluate,
    handle_train,
    parse_node_config,
    preflight_configs,
    read_budget,
)
from edprf_fl.cli._main import main

from ._small_disk import small_disk_at
from .test_party_hardening import _context, _evaluate_msg, _model, _train_msg, _write_party

_INTERNAL_ERROR_TEXT = "the party failed while serving the request; details are in its log"


@pytest.fixture
def party_files(tmp_path):
    """A party of 600 wall-robot rows, a cap of 2 (``tests/federation/test_party_hardening.py``)."""
    return _write_party(tmp_path)


def _no_space(*_args, **_kwargs):
    raise OSError(errno.ENOSPC, "No space left on device")


def _entries(path: Path) -> list[tuple[str, str, str]]:
    return [(e.request_id, e.state, e.detail) for e in read_budget(path).entries]


def _result(reply) -> tuple[str, str]:
    record = reply.content.config_records["result"]
    return record["reason"], record["message"]


# ---------------------------------------------------------------- the anchor's write after the reservation


def test_an_anchor_that_cannot_be_written_after_the_reservation_marks_it_failed_and_keeps_it_spent(
    tmp_path, monkeypatch
):
    path = tmp_path / "ledger.sqlite"
    ledger = BudgetLedger(path, cap=2.0, party_id="h")
    ledger.reserve("run0/train", "release", 0.5, detail="20 trees")
    ledger.complete("run0/train", b"released")
    monkeypatch.setattr(ledger_module, "write_anchor", _no_space)
    with pytest.raises(OSError, match="No space left on device"):  # the anchor's own error, not the mark's
        ledger.reserve("run1/train", "release", 0.5, detail="20 trees")
    monkeypatch.undo()

    [(_, state, detail)] = [e for e in _entries(path) if e[0] == "run1/train"]
    assert state == "failed"
    assert detail == (
        "20 trees [failed: the anchor was not written after the reservation (OSError: [Errno 28] No space left on "
        "device)]"
    )
    assert ledger.spent() == 1 and read_budget(path, 2.0).spent == 1  # failed counts as spent: nothing given back
    with pytest.raises(ValueError, match="no open reservation"):  # never marked released after that
        ledger.complete("run1/train", b"late")
    assert BudgetLedger(path, cap=2.0, party_id="h").spent() == 1  # the next opening: the same total


def test_a_mark_that_cannot_be_written_either_leaves_the_entry_reserved_and_raises_the_first_error(
    tmp_path, monkeypatch, caplog
):
    path = tmp_path / "ledger.sqlite"
    ledger = BudgetLedger(path, cap=2.0, party_id="h")
    monkeypatch.setattr(ledger_module, "write_anchor", _no_space)
    monkeypatch.setattr(
        BudgetLedger, "fail", lambda *_a, **_k: (_ for _ in ()).throw(sqlite3.OperationalError("disk I/O error"))
    )
    with caplog.at_level(logging.ERROR, logger="edprf"), pytest.raises(OSError, match="No space left on device"):
        ledger.reserve("run1/train", "release", 0.5)
    monkeypatch.undo()
    assert [e[:2] for e in _entries(path)] == [("run1/train", "reserved")]
    assert ledger.spent() == Fraction(1, 2)
    assert "request run1/train could not be marked failed (OperationalError: disk I/O error): it stays reserved" in (
        caplog.text
    )


# ---------------------------------------------------------------- the release's write (complete)


def _failing_complete(*_args, **_kwargs):
    raise sqlite3.OperationalError("database or disk is full")


def test_a_release_that_cannot_be_stored_is_marked_failed_and_the_reply_stays_constant(party_files, monkeypatch):
    setup, schema = party_files
    monkeypatch.setattr(BudgetLedger, "complete", _failing_complete)
    reply = handle_train(_train_msg(schema), _context(setup))
    monkeypatch.undo()
    assert _result(reply) == ("internal_error", _INTERNAL_ERROR_TEXT)  # no error text reaches the coordinator
    [(request, state, detail)] = _entries(setup.ledger_path)
    assert request == "run1/1/train"
    assert state == "failed" and detail.endswith(
        "[failed: the release could not be stored (OperationalError: database or disk is full)]"
    )
    assert read_budget(setup.ledger_path, 2.0).spent == 1  # the release's epsilon stays spent
    again = handle_train(_train_msg(schema), _context(setup))  # the same id: spent, nothing resent
    assert _result(again)[0] == "request_spent"
    assert read_budget(setup.ledger_path, 2.0).spent == 1


def test_a_release_whose_recipient_cannot_be_recorded_is_not_released(party_files, monkeypatch):
    """Review rev-s65 F1: the release's first recipient is written in the transaction that completes it, before it
    leaves; that write failing is a failed completion like any other (the entry failed, its epsilon spent, the reply
    the constant internal_error, nothing stored to resend), and leaves no row of either."""
    setup, schema = party_files
    monkeypatch.setattr(ledger_module, "record_recipient", _failing_complete)
    reply = handle_train(_train_msg(schema), _context(setup))
    monkeypatch.undo()
    assert _result(reply) == ("internal_error", _INTERNAL_ERROR_TEXT)
    [(request, state, detail)] = _entries(setup.ledger_path)
    assert request == "run1/1/train"
    assert state == "failed" and detail.endswith(
        "[failed: the release could not be stored (OperationalError: database or disk is full)]"
    )
    with sqlite3.connect(setup.ledger_path) as db:
        assert db.execute("SELECT payload FROM spends").fetchall() == [(None,)]  # rolled back with the row
        assert db.execute("SELECT count(*) FROM release_recipients").fetchone() == (0,)
    assert read_budget(setup.ledger_path, 2.0).spent == 1
    again = handle_train(_train_msg(schema), _context(setup))
    assert _result(again)[0] == "request_spent"


def test_an_evaluation_whose_end_cannot_be_recorded_is_marked_failed(party_files, monkeypatch):
    setup, schema = party_files
    model = _model(party_module.Party(setup), schema)
    monkeypatch.setattr(BudgetLedger, "complete", _failing_complete)
    reply = handle_evaluate(_evaluate_msg(model), _context(setup))
    monkeypatch.undo()
    assert _result(reply) == ("internal_error", _INTERNAL_ERROR_TEXT)
    evaluation = [e for e in _entries(setup.ledger_path) if e[0] == "run1/1/evaluate"]
    assert [e[1] for e in evaluation] == ["failed"]
    assert "its end could not be recorded (OperationalError: database or disk is full)" in evaluation[0][2]
    assert read_budget(setup.ledger_path, 2.0).spent == Fraction(11, 10)


@pytest.mark.skipif(sys.platform != "linux", reason="tmpfs as on Linux")
def test_a_release_whose_write_meets_a_full_disk_keeps_its_error_and_says_the_entry_stays_reserved(
    party_files, tmp_path, monkeypatch, caplog, capsys
):
    """A real full disk: the disk fills while the party trains, so ``complete`` fails (SQLite's own error), and the
    mark fails too on that disk: logged, the entry left reserved, the reply the constant ``internal_error``.  Once
    space is freed, ``edprf budget`` shows the entry with its age."""
    made, schema = party_files
    with small_disk_at(tmp_path / "small", "2m") as disk:
        setup = type(made)(made.data_path, made.schema_path, made.policy_path, disk / "ledger.sqlite")
        real = party_module.encode_release

        def encode_then_fill(*args, **kwargs):
            payload = real(*args, **kwargs)
            with open(disk / "filler", "wb", buffering=0) as filler:
                try:
                    while True:
                        filler.write(b"\0" * 4096)
                except OSError:
                    pass
            return payload

        monkeypatch.setattr(party_module, "encode_release", encode_then_fill)
        with caplog.at_level(logging.INFO, logger="edprf"):
            reply = handle_train(_train_msg(schema), _context(setup))
        monkeypatch.undo()
        assert _result(reply) == ("internal_error", _INTERNAL_ERROR_TEXT)
        assert "request run1/1/train could not be marked failed (OperationalError: " in caplog.text
        assert "it stays reserved, its epsilon spent; `edprf budget` shows how long ago it was reserved" in caplog.text
        (disk / "filler").unlink()
        assert [e[:2] for e in _entries(setup.ledger_path)] == [("run1/1/train", "reserved")]
        assert read_budget(setup.ledger_path, 2.0).spent == 1
        capsys.readouterr()
        assert main(["budget", str(setup.ledger_path), "--cap", "2"]) == 0
        out = capsys.readouterr().out
        assert "[reserved 0 s ago]" in out or "[reserved 1 s ago]" in out
        assert "reserved less than 1 h ago and not completed (run1/1/train): a request running now" in out


# ---------------------------------------------------------------- what stays reserved: its age


def _age(path: Path, request_id: str, seconds: float) -> None:
    """Move ``request_id``'s reservation ``seconds`` into the past (as if it were made then)."""
    db = sqlite3.connect(path)
    try:
        db.execute(
            "UPDATE spends SET created_at = created_at - ?, updated_at = updated_at - ? WHERE request_id = ?",
            (seconds, seconds, request_id),
        )
        db.commit()
    finally:
        db.close()


def _ledger_with_open_reservations(path: Path) -> None:
    ledger = BudgetLedger(path, cap=5.0, party_id="hospital-a")
    ledger.reserve("run0/train", "release", 0.5, run_id="run0", detail="20 trees")
    ledger.complete("run0/train", b"released")
    ledger.reserve("old/train", "release", 0.5, run_id="old", detail="20 trees")
    ledger.reserve("new/train", "release", 0.5, run_id="new", detail="20 trees")
    _age(path, "old/train", 2 * 3600 + 300)


def test_budget_shows_a_reserved_entry_s_age_and_says_an_old_one_was_left_behind(tmp_path, capsys):
    path = tmp_path / "ledger.sqlite"
    _ledger_with_open_reservations(path)
    assert main(["budget", str(path), "--cap", "5"]) == 0
    out = capsys.readouterr().out
    [old_row] = [line for line in out.splitlines() if " old/train " in line]
    [new_row] = [line for line in out.splitlines() if " new/train " in line]
    [released_row] = [line for line in out.splitlines() if " run0/train " in line]
    assert old_row.endswith("20 trees [reserved 2 h 5 min ago]")
    assert new_row.endswith(("20 trees [reserved 0 s ago]", "20 trees [reserved 1 s ago]"))
    # no age; completed without a recipient (as before 0.2.12): its first recipient unknown
    assert released_row.endswith("20 trees [first recipient: (not recorded: made before 0.2.12)]")
    assert (
        "note: 1 entry reserved more than 1 h ago and not completed (old/train): no request holds its reservation "
        "that long: left by a crash or a failed write" in out
    )
    assert "note: 1 entry reserved less than 1 h ago and not completed (new/train): a request running now" in out
    assert "spent 1.5 of the lifetime cap 5" in out  # every entry counts, whatever its age
    assert main(["budget", str(path), "--cap", "5", "--last", "1"]) == 0  # old/train not shown: counted, not named
    out = capsys.readouterr().out
    assert "note: 1 entry reserved more than 1 h ago and not completed (1 not shown: `edprf budget` without" in out
    assert "old/train" not in out

    assert main(["budget", str(path), "--cap", "5", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["reserved_left_after_seconds"] == RESERVATION_LEFT_AFTER_SECONDS == 3600
    assert data["reserved_left_behind"] == ["old/train"]
    ages = {e["request_id"]: e["reserved_seconds_ago"] for e in data["entries"]}
    assert ages["run0/train"] is None and ages["old/train"] >= 7500 and 0 <= ages["new/train"] < 60


def test_the_party_check_says_an_old_reservation_was_left_by_a_crash_or_a_failed_write(tmp_path):
    from ._neighbours import make_party

    made = make_party(tmp_path / "party", b"x\n", party_id="hospital-a")
    _ledger_with_open_reservations(made.ledger_path)
    node_config = (
        f"data-path='{made.data_path}' schema-path='{made.schema_path}' policy-path='{made.policy_path}' "
        f"ledger-path='{made.ledger_path}'"
    )
    notes = [f.text for f in preflight_configs(parse_node_config(node_config), {}, check_rows=False).findings]
    assert (
        "1 request reserved more than 1 h ago and not completed: left by a crash or a failed write (no request "
        "holds its reservation that long; the party's log of that time says which); their epsilon stays spent"
    ) in notes
    assert (
        "1 request reserved less than 1 h ago and not completed: running now, or stopped by a crash or a failed "
        "write (`edprf budget` shows how long ago); their epsilon stays spent"
    ) in notes
    assert not any("(a crash)" in text for text in notes)


def test_durations_are_said_in_their_two_largest_units():
    assert [duration_text(s) for s in (0, 12, 200, 3600, 7500, 4 * 86400 + 3 * 3600 + 5)] == [
        "0 s",
        "12 s",
        "3 min 20 s",
        "1 h",
        "2 h 5 min",
        "4 d 3 h",
    ]
    assert duration_text(RESERVATION_LEFT_AFTER_SECONDS) == "1 h"


def test_a_reservation_with_a_time_stamp_in_the_future_has_no_age(tmp_path, capsys):
    """A clock set back after the reservation: no negative age, never called left behind."""
    path = tmp_path / "ledger.sqlite"
    BudgetLedger(path, cap=5.0).reserve("r/train", "release", 0.5)
    _age(path, "r/train", -86400)
    assert main(["budget", str(path), "--cap", "5"]) == 0
    out = capsys.readouterr().out
    assert "[reserved at an unreadable or future time]" in out and "more than 1 h ago" not in out
