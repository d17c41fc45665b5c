"""A failure the party catches after its reservation marks the entry ``failed`` (failure-injection review rev-ops F6).

The release's write (``complete``) or the anchor's write after the reservation failed, and the entry stayed
``reserved``: ``edprf budget`` showed it like a request still training and ``edprf party check`` called it a crash.
Now the entry is marked ``failed`` with the reason when that mark can be written, and the first error is the one
raised (a mark that fails too is logged, the entry left ``reserved``).  The epsilon stays spent either way: every
entry counts (privacy invariant 4).
"""

from __future__ import annotations

import errno
import logging
import sqlite3
import sys
from fractions import Fraction
from pathlib import Path

import pytest

import client._ledger as ledger_module
import client._party as party_module
from client import (
    BudgetLedger,
    handle_evaluate,
    handle_train,
    read_budget,
)

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
    party_files, tmp_path, monkeypatch, caplog
):
    """A real full disk: the disk fills while the party trains, so ``complete`` fails (SQLite's own error), and the
    mark fails too on that disk: logged, the entry left reserved, the reply the constant ``internal_error``."""
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
