"""The readiness answer (``query``) depends on no row: the data file is never opened, and neighbouring datasets,
or a file of any size or content, give the same answer, with nothing charged.

The coordinator asks it of every connected party before any trains (``server._readiness``); it is free and
repeatable, so it must reveal nothing a record could change: not the answer, not whether the file reads.
"""

from __future__ import annotations

import pytest

import client._party as party_module

from ..federation._neighbours import HOSTILE, file_bytes, make_party
from ._party_requests import TrainSettings, flower_task_identity, ledger, result_of, send_query, send_train  # noqa: F401

pytestmark = [pytest.mark.privacy, pytest.mark.usefixtures("flower_task_identity")]


def test_the_answer_never_opens_the_data_file(tmp_path, monkeypatch):
    setup = make_party(tmp_path / "p", file_bytes(n_rows=300), allow_seeded_randomness=False)

    def no_rows(*args, **kwargs):
        raise AssertionError("the readiness answer read the data file")

    monkeypatch.setattr(party_module, "load_local_data", no_rows)
    assert result_of(send_query(setup, TrainSettings()))["status"] == "ready"
    assert ledger(setup).entries() == []
    setup.data_path.unlink()
    setup.data_path.mkdir()  # a directory where the data file was: any other read of it would fail
    assert result_of(send_query(setup, TrainSettings()))["status"] == "ready"


@pytest.mark.parametrize(("name", "line", "where"), HOSTILE[:4], ids=[h[0] for h in HOSTILE[:4]])
def test_neighbouring_parties_and_any_file_answer_alike(tmp_path, name, line, where):
    files = {
        "d": file_bytes(n_rows=300),
        "d-plus": file_bytes(line, where, n_rows=300),
        "empty": b"",
        "junk": b"\x00\xff" * 99,
    }
    setups = {
        label: make_party(tmp_path / label, content, allow_seeded_randomness=False, lifetime_epsilon_cap=1.5)
        for label, content in files.items()
    }
    first = {label: result_of(send_query(setup, TrainSettings())) for label, setup in setups.items()}
    assert all(answer == first["d"] for answer in first.values()), first
    assert first["d"]["status"] == "ready"
    assert all(ledger(setup).entries() == [] for setup in setups.values())  # answering charged nothing
    # D and D' after a release of epsilon 1 of their cap 1.5: the same refusal, word for word
    after = {}
    for label in ("d", "d-plus"):
        send_train(setups[label], TrainSettings(), request_id="run0/train")
        after[label] = result_of(send_query(setups[label], TrainSettings()))
        assert len(ledger(setups[label]).entries()) == 1
    assert after["d"] == after["d-plus"] and after["d"]["reason"] == "budget_exhausted", after


@pytest.mark.parametrize("left", ["reserved", "failed"])
def test_a_request_left_reserved_or_failed_is_answered_as_its_train_request_is(tmp_path, monkeypatch, left):
    """A process killed during the work leaves its request reserved (a failure leaves it failed): the train request
    under that id is refused ``request_spent``, so the readiness answer must say so too, or a resumed run passes the
    readiness round here and the other parties spend epsilon on a run this party then refuses (whole-change review
    F5 of stop 54, which an answer of ``would_resend`` reintroduced; mutation review N18).  No row is read."""
    setup = make_party(tmp_path / "p", file_bytes(n_rows=300), allow_seeded_randomness=False)

    def no_rows(*args, **kwargs):
        raise AssertionError("the readiness answer read the data file")

    monkeypatch.setattr(party_module, "load_local_data", no_rows)
    failed = result_of(send_train(setup, TrainSettings()))  # the work fails after the reservation
    assert failed["status"] == "refused" and ledger(setup).entries()[0].state == "failed", failed
    if left == "reserved":  # as a process killed during the work leaves it
        with ledger(setup)._connect() as db:
            db.execute(  # its detail as reserved, without the failure the party appends when the work fails
                "UPDATE spends SET state = 'reserved', detail = substr(detail, 1, instr(detail, ' [failed') - 1) "
                "WHERE request_id = 'run1/train'"
            )
    answer = result_of(send_query(setup, TrainSettings()))
    assert answer["status"] == "refused" and answer["reason"] == "request_spent", answer
    trained = result_of(send_train(setup, TrainSettings()))
    assert trained["reason"] == answer["reason"] and len(ledger(setup).entries()) == 1
