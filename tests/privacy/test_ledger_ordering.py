"""The ledger charges a release atomically against the cap, and BEFORE anything is drawn from the data.

Through a party's real Flower handler on the production path (no seed, the exact samplers, the automatic
depth; :mod:`._party_requests`):

1. The cap.  The reservation itself (not only the party's early, non-atomic pre-check) refuses a spend
   that would pass the lifetime cap: requests that all passed the pre-check before any of them reserved
   (held at a barrier placed just after it) get at most ``floor(cap / epsilon)`` releases, the ledger's
   exact sum stays within the cap, and the others are refused as ``budget_exhausted`` with a message that
   says what was asked and what was left.  A cap of exactly ``k * epsilon`` admits exactly ``k`` requests:
   the ledger adds in exact fractions (``0.1 + 0.1 + 0.1`` is ``3/10``, not the float
   ``0.30000000000000004 > 0.3``), and the ``k + 1``-th is refused.
2. The order.  The request's full epsilon is committed in the ledger (seen through a SECOND connection,
   a new :class:`client.BudgetLedger` on the same file) when the fit makes its first DP draw; a fit that
   fails (before or after a draw) is refused as ``internal_error`` with its epsilon still counted (the entry
   ``failed``, as ``docs/reference/reason-codes.md`` says), and the same request id sent again is refused
   without fitting again: a failure is never a free, repeatable data-dependent output.
3. The round's end, and 4. races: every refusal that spends nothing (``round_closed``, ``budget_exhausted``,
   ``request_spent``) comes before the data is read; once the read starts the request is paid for.
"""

from __future__ import annotations

import logging
import math
import sqlite3
import threading
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from fractions import Fraction
from pathlib import Path

import opendp._lib
import pytest

import client._ledger as ledger_module
import client._party as party_module
from client import BudgetLedger, EntryState
from client._ledger import BudgetExhausted

from ..federation._neighbours import file_bytes, make_party
from ._party_requests import (
    TrainSettings,
    flower_task_identity,  # noqa: F401 (a fixture)
    global_model,
    ledger,
    release_of,
    result_of,
    send_evaluate,
    send_request,
    send_train,
    train_request,
)

pytestmark = [pytest.mark.privacy, pytest.mark.usefixtures("flower_task_identity")]

SMALL = {"n_trees": 1, "max_depth": 3, "n_bins": 4}
"""A small production request (one shallow tree): the tests are about the ledger, not the fit."""


def _party(tmp_path: Path, cap: float):
    return make_party(tmp_path, file_bytes(), allow_seeded_randomness=False, lifetime_epsilon_cap=cap)


def _status(reply) -> tuple[str, str]:
    result = result_of(reply)
    return result["status"], result.get("reason", "")


# ------------------------------------------------------------------ 1. the cap, decided by the reservation
def test_the_reservation_refuses_past_the_cap_by_itself(tmp_path: Path):
    """A ledger at ``cap - epsilon / 2`` refuses ``reserve(epsilon)`` (nothing recorded); exactly the rest fits."""
    book = BudgetLedger(tmp_path / "ledger.sqlite", 1.0)
    book.reserve("first", "release", 0.75)  # cap - 0.5 / 2
    with pytest.raises(BudgetExhausted, match=r"needs epsilon 0\.5 but only 0\.25 of the lifetime cap 1 remains"):
        book.reserve("second", "release", 0.5)
    assert [e.request_id for e in book.entries()] == ["first"]
    assert book.spent() == Fraction(3, 4)
    book.reserve("third", "release", 0.25)  # exactly to the cap: admitted
    assert book.spent() == Fraction(1) and book.remaining() == 0
    with pytest.raises(BudgetExhausted):
        book.reserve("fourth", "release", 1e-6)  # the smallest epsilon a party accepts, past the cap
    assert book.spent() == Fraction(1)


def test_concurrent_requests_past_the_pre_check_get_at_most_what_the_cap_pays(tmp_path: Path, monkeypatch):
    """Three requests of epsilon 0.4 on a cap of 1, each in its own handler call (its own Party and ledger
    connection on the same files), all held after the party's pre-check until all three have passed it:
    each sees 0 spent there.  Only the reservation, atomic under SQLite's write lock, can refuse: at most
    ``floor(1 / 0.4) = 2`` releases, the ledger's exact sum ``<= 1``, the third refused ``budget_exhausted``.
    """
    cap, epsilon, n_requests = 1.0, 0.4, 3
    setup = _party(tmp_path, cap)
    passed = threading.Barrier(n_requests, timeout=60)
    real_pre_check = ledger_module.BudgetLedger.refuse_unaffordable

    def pre_check(self, kind, eps):
        try:
            return real_pre_check(self, kind, eps)
        finally:
            passed.wait()  # every request has passed (or failed) its pre-check before any reserves

    monkeypatch.setattr(ledger_module.BudgetLedger, "refuse_unaffordable", pre_check)
    # Inside the reservation, each request waits (up to 2 s) for the others to read the sum too.  Under the
    # write lock the others cannot get there: the wait times out and the requests reserve one after another.
    # A reservation that read the sum outside the lock would let all three read 0 here and all three insert.
    reading = threading.local()
    summed = threading.Barrier(n_requests, timeout=2)
    real_reserve, real_sum = ledger_module.BudgetLedger.reserve, ledger_module.BudgetLedger._sum

    def reserve(self, *args, **kwargs):
        reading.inside = True
        try:
            return real_reserve(self, *args, **kwargs)
        finally:
            reading.inside = False

    def sum_in_reserve(self, db):
        spent = real_sum(self, db)
        if getattr(reading, "inside", False):
            try:
                summed.wait()
            except threading.BrokenBarrierError:
                pass  # the others are held by the write lock (correct code), or have reserved already
        return spent

    monkeypatch.setattr(ledger_module.BudgetLedger, "reserve", reserve)
    monkeypatch.setattr(ledger_module.BudgetLedger, "_sum", sum_in_reserve)
    settings = TrainSettings(epsilon=epsilon, **SMALL)
    with ThreadPoolExecutor(n_requests) as pool:
        replies = list(pool.map(lambda i: send_train(setup, settings, f"run1/train-{i}"), range(n_requests)))

    statuses = [_status(r) for r in replies]
    released = [r for r, s in zip(replies, statuses) if s[0] == "released"]
    refused = [result_of(r) for r, s in zip(replies, statuses) if s[0] != "released"]
    affordable = math.floor(Fraction(repr(cap)) / Fraction(repr(epsilon)))
    assert len(released) == affordable == 2, statuses
    for reply in released:
        assert release_of(setup, reply).params.epsilon == epsilon
    (refusal,) = refused
    assert (refusal["status"], refusal["reason"]) == ("refused", "budget_exhausted"), refusal
    assert "needs epsilon 0.4 but only 0.2 of the lifetime cap 1 remains" in refusal["message"], refusal

    entries = ledger(setup).entries()
    assert ledger(setup).spent() == Fraction(4, 5) <= Fraction(1)
    assert sorted(e.state for e in entries) == [EntryState.RELEASED] * 2


def test_a_cap_of_exactly_k_epsilon_admits_exactly_k_requests(tmp_path: Path):
    """Cap 0.3, epsilon 0.1: three releases (the ledger holds exactly 3/10, nothing left), the fourth refused
    before anything is reserved.  Float sums would refuse the third (0.1 + 0.1 + 0.1 > 0.3 in floats); an
    off-by-one check (``spent > cap``, or ``>=``) would admit a fourth, or refuse the third."""
    setup = _party(tmp_path, 0.3)
    settings = TrainSettings(epsilon=0.1, **SMALL)
    for i in range(3):
        release_of(setup, send_train(setup, settings, f"run1/train-{i}"))
    book = ledger(setup)
    assert book.spent() == Fraction(3, 10) and book.remaining() == 0
    assert 0.1 + 0.1 + 0.1 > 0.3  # what float accounting would have done to the third

    refusal = result_of(send_train(setup, settings, "run1/train-3"))
    assert (refusal["status"], refusal["reason"]) == ("refused", "budget_exhausted"), refusal
    assert "needs epsilon 0.1 but only 0 of the lifetime cap 0.3 remains" in refusal["message"], refusal
    assert [e.request_id for e in ledger(setup).entries()] == [f"run1/train-{i}" for i in range(3)]
    assert ledger(setup).spent() == Fraction(3, 10)


# ------------------------------------------------------------------ 2. reserved before the first draw
def _wrap_draws(monkeypatch, before_first=None, after_first=None) -> dict:
    """Wrap OpenDP's C entry point ``opendp_core__measurement_invoke``, which every DP draw of the project goes
    through (OpenDP's Python ``measurement_invoke`` and ``edprf_core._opendp_entry`` both look it up on each
    call; see :mod:`._instrumentation`): ``before_first()`` runs just before the first draw, ``after_first()``
    just after it.  Returns the number of draws made (``{"draws": n}``)."""
    real = opendp._lib.lib.opendp_core__measurement_invoke
    state = {"draws": 0}

    def entry(measurement, arg):
        state["draws"] += 1
        first = state["draws"] == 1
        if first and before_first is not None:
            before_first()
        real.argtypes, real.restype = entry.argtypes, entry.restype  # what the caller declared
        result = real(measurement, arg)
        if first and after_first is not None:
            after_first()
        return result

    entry.argtypes, entry.restype = real.argtypes, real.restype
    monkeypatch.setattr(opendp._lib.lib, "opendp_core__measurement_invoke", entry)
    return state


def test_the_epsilon_is_committed_before_the_first_draw(tmp_path: Path, monkeypatch):
    """At the fit's first DP draw, a second connection to the party's ledger already reads this request's
    reservation, at the full epsilon (the only spend so far).  Checked after the reply (an assertion inside
    the fit would only turn into the party's ``internal_error``)."""
    setup = _party(tmp_path, 2.0)
    settings = TrainSettings(epsilon=0.7, **SMALL)
    seen: dict = {}

    def look():
        book = ledger(setup)  # a new BudgetLedger on the same file: what is committed, not the party's view
        seen["entry"] = book.find("run1/train")
        seen["spent"] = book.spent()

    draws = _wrap_draws(monkeypatch, before_first=look)
    release = release_of(setup, send_train(setup, settings))
    assert draws["draws"] > 0 and "entry" in seen, "the fit made no DP draw through OpenDP"
    assert seen["entry"] is not None, "nothing was in the ledger when the first DP draw was made"
    entry, payload = seen["entry"]
    assert (entry.kind, entry.state, entry.epsilon_exact) == ("release", EntryState.RESERVED, Fraction(7, 10))
    assert payload is None and seen["spent"] == Fraction(7, 10)
    (done,) = ledger(setup).entries()
    assert (done.state, done.epsilon_exact) == (EntryState.RELEASED, Fraction(7, 10))
    assert release.params.epsilon == 0.7


class _Crash(RuntimeError):
    """The injected failure."""


def _fit_raises(monkeypatch) -> dict:
    """The classifier's fit fails on its first call (before it draws anything); later calls fit."""
    real_fit = party_module.EDPRFClassifier.fit
    calls = {"fit": 0}

    def fit(self, X, y):
        calls["fit"] += 1
        if calls["fit"] == 1:
            raise _Crash("injected")
        return real_fit(self, X, y)

    monkeypatch.setattr(party_module.EDPRFClassifier, "fit", fit)
    return calls


def _first_draw_raises(monkeypatch) -> dict:
    """The fit fails just after its first DP draw (a data-dependent value exists, nothing is released)."""
    calls = {"fit": 0}
    real_fit = party_module.EDPRFClassifier.fit

    def fit(self, X, y):
        calls["fit"] += 1
        return real_fit(self, X, y)

    def crash():
        raise _Crash("injected")

    monkeypatch.setattr(party_module.EDPRFClassifier, "fit", fit)
    _wrap_draws(monkeypatch, after_first=crash)
    return calls


@pytest.mark.parametrize("inject", [_fit_raises, _first_draw_raises], ids=["fit-raises", "first-draw-raises"])
def test_a_failed_fit_keeps_its_epsilon_spent_and_gets_no_second_try(tmp_path: Path, monkeypatch, inject):
    """A fit that fails is refused ``internal_error`` (a constant text), its full epsilon stays counted
    (entry ``failed``); the same request id sent again is refused without a fit and without spending; only a new request id trains (and pays) again."""
    setup = _party(tmp_path, 2.0)
    settings = TrainSettings(epsilon=0.5, **SMALL)
    calls = inject(monkeypatch)

    failed = result_of(send_train(setup, settings))
    assert (failed["status"], failed["reason"]) == ("refused", "internal_error"), failed
    assert "release" not in failed and "injected" not in failed["message"]
    recorded = [(e.request_id, e.state, e.epsilon_exact) for e in ledger(setup).entries()]
    assert recorded == [("run1/train", EntryState.FAILED, Fraction(1, 2))], "the failed fit's epsilon is not counted"
    assert ledger(setup).spent() == Fraction(1, 2)

    fits = calls["fit"]
    again = result_of(send_train(setup, settings))
    # Refused before any row is read, as request_spent: the failure is appended to the entry's detail, which
    # keeps the request's own parameters in front (a repeated id must match them).
    assert (again["status"], again["reason"]) == ("refused", "request_spent"), again
    assert "did not complete (it failed, was interrupted" in again["message"]
    assert ledger(setup).entries()[0].detail.endswith(" [failed: _Crash]")  # the operator's trail in the ledger
    assert "release" not in again
    assert calls["fit"] == fits, "the repeated request id was fitted again"
    assert [(e.request_id, e.state) for e in ledger(setup).entries()] == [("run1/train", EntryState.FAILED)]
    assert ledger(setup).spent() == Fraction(1, 2)

    release_of(setup, send_train(setup, settings, "run1/train-2"))  # a new id: a new fit, paid for
    assert ledger(setup).spent() == Fraction(1)


def test_a_failed_entry_of_an_older_ledger_is_spent_too(tmp_path: Path):
    """Before the failure was appended to it, a failed entry's detail was the failure alone (the exception's
    name): a resend of that id is refused request_spent all the same, with nothing fitted or spent again."""
    setup = _party(tmp_path, 1.0)
    settings = TrainSettings(epsilon=0.5, **SMALL)
    book = ledger(setup)
    book.reserve("run1/train", "release", 0.5, run_id="run1", detail="as an older version wrote it")
    book.fail("run1/train", "MemoryError")
    with closing(sqlite3.connect(setup.ledger_path)) as db, db:  # the older ledger's row: the exception's name
        db.execute("UPDATE spends SET detail = 'MemoryError' WHERE request_id = 'run1/train'")
    again = result_of(send_train(setup, settings))
    assert (again["status"], again["reason"]) == ("refused", "request_spent"), again
    assert ledger(setup).spent() == Fraction(1, 2)


# ------------------------------------------------------------------ 3. the round's end
@pytest.mark.parametrize("kind", ["train", "evaluate"])
def test_a_request_whose_round_closed_before_the_reservation_spends_nothing(tmp_path: Path, monkeypatch, kind):
    """The run's round-timeout, counted on the party's clock from when the message reached it, has passed by the
    time the party would reserve (the coordinator, whose clock started earlier, has stopped waiting): refused
    ``round_closed`` with nothing in the ledger and nothing read.  The same request inside its round is served and
    paid for."""
    import client._flower_handlers as handlers

    setup = _party(tmp_path, 10.0)
    settings = TrainSettings(epsilon=0.5, **SMALL)
    request = train_request(setup, settings)
    release = release_of(setup, send_request(setup, request))  # a model to evaluate (its own request id)
    spent = ledger(setup).spent()

    def send(run_config):
        if kind == "train":
            fresh = train_request(setup, settings, request_id="run1/train-late")
            return result_of(send_request(setup, fresh, run_config=run_config))
        return result_of(send_evaluate(setup, global_model(release), 0.5, "run1/evaluate-late", run_config))

    reached = handlers.message_reached
    monkeypatch.setattr(handlers, "message_reached", lambda: reached() - 301.0)  # 301 s ago
    reads = _reads(monkeypatch)
    late = send({"round-timeout": 300})
    assert (late["status"], late["reason"]) == ("refused", "round_closed"), late
    assert ledger(setup).spent() == spent and len(ledger(setup).entries()) == 1, "a closed round spent epsilon"
    assert reads == [], "a closed round read the data"

    monkeypatch.setattr(handlers, "message_reached", reached)
    served = send({"round-timeout": 300})
    assert served["status"] in ("released", "evaluated"), served
    assert ledger(setup).spent() == spent + Fraction(1, 2)


# ------------------------------------------------------------------ 4. no refusal after the read (red-team F1, F3)
def _reads(monkeypatch) -> list[object]:
    """Record each read of the party's data file, with whether its request was already reserved then."""
    reads: list[object] = []
    real = party_module.Party._data

    def data(self):
        reads.append({e.request_id for e in self.ledger.entries()})
        return real(self)

    monkeypatch.setattr(party_module.Party, "_data", data)
    return reads


@pytest.mark.parametrize("kind", ["train", "evaluate"])
def test_a_round_that_closes_during_the_read_is_paid_for(tmp_path: Path, monkeypatch, kind):
    """The coordinator sets round-timeout.  Refused after the read at no cost, a request closed during the read
    was a free, repeatable timing of the read (its code, or its reply's time, followed the file's size: red-team
    review F1).  Now the request is reserved before the read, and a round that closes during the read or the work
    changes nothing: the request is served and paid for (the reply goes out late)."""
    import client._flower_handlers as handlers

    setup = _party(tmp_path, 10.0)
    settings = TrainSettings(epsilon=0.5, **SMALL)
    release = release_of(setup, send_request(setup, train_request(setup, settings)))
    spent = ledger(setup).spent()
    reads = _reads(monkeypatch)
    clock = {"now": 0.0}
    monkeypatch.setattr(handlers, "message_reached", lambda: clock["now"])
    monkeypatch.setattr(party_module, "message_reached", lambda: clock["now"])
    real_load = party_module.load_local_data

    def slow_read(*args, **kwargs):
        clock["now"] += 301.0  # the read outlasts the round
        return real_load(*args, **kwargs)

    monkeypatch.setattr(party_module, "load_local_data", slow_read)
    request_id = f"run1/{kind}-slow"
    if kind == "train":
        reply = send_request(setup, train_request(setup, settings, request_id), run_config={"round-timeout": 300})
    else:
        reply = send_evaluate(setup, global_model(release), 0.5, request_id, {"round-timeout": 300})
    result = result_of(reply)
    assert result["status"] in ("released", "evaluated"), result
    assert ledger(setup).spent() == spent + Fraction(1, 2)
    assert len(reads) == 1 and request_id in reads[0], "the data was read before the request was reserved"


@pytest.mark.parametrize("race", ["request id", "cap"])
def test_a_request_that_loses_a_race_is_refused_before_the_read(tmp_path: Path, monkeypatch, race):
    """Two processes of a party serving one request id, or two requests at the cap: the loser read the whole file,
    then replied internal_error (the id) or budget_exhausted (the cap) at no cost (red-team review F3).  The race
    is staged: another process reserves between this request's checks and its reservation.  The loser is refused
    (request_spent, budget_exhausted) without reading a row, and the ledger holds only the winner's epsilon."""
    setup = _party(tmp_path, 1.0)
    settings = TrainSettings(epsilon=0.6, **SMALL)
    reads = _reads(monkeypatch)
    real_reserve = party_module.Party._reserve

    def raced(self, request_id, *args):
        other = BudgetLedger(setup.ledger_path, 1.0)  # the other process, on the same file
        other.reserve(request_id if race == "request id" else "run1/other", "release", 0.6)
        return real_reserve(self, request_id, *args)

    monkeypatch.setattr(party_module.Party, "_reserve", raced)
    result = result_of(send_train(setup, settings, "run1/train-raced"))
    expected = "request_spent" if race == "request id" else "budget_exhausted"
    assert (result["status"], result["reason"]) == ("refused", expected), result
    assert reads == [], "the loser read the data"
    assert ledger(setup).spent() == Fraction(3, 5)


def test_a_failure_after_the_reservation_is_marked_failed_and_answered_with_a_constant(
    tmp_path: Path, monkeypatch, caplog
):
    """Whole-change review F9: an evaluation that fails after its reservation, and a data file that breaks during
    the read, each leave the entry failed (its epsilon spent, the id not served again) and reply with a constant text
    that names nothing of the file."""
    import gzip

    from client._party import _INVALID_LOCAL_DATA_TEXT

    setup = _party(tmp_path / "eval", 10.0)
    settings = TrainSettings(epsilon=0.5, **SMALL)
    release = release_of(setup, send_train(setup, settings))

    def broken(*args, **kwargs):
        raise RuntimeError("counts failed: row 17 of /secret/path")

    monkeypatch.setattr(party_module, "evaluation_counts", broken)
    failed = result_of(send_evaluate(setup, global_model(release), 0.5, "run1/evaluate-broken"))
    assert (failed["status"], failed["reason"]) == ("refused", "internal_error") and "secret" not in failed["message"]
    entry = next(e for e in ledger(setup).entries() if e.request_id == "run1/evaluate-broken")
    assert entry.state == EntryState.FAILED and ledger(setup).spent() == 1
    monkeypatch.undo()

    data = file_bytes()
    header, _, body = data.partition(b"\n")
    damaged = gzip.compress(header + b"\n" + body)[:-40]  # the header reads; the stream breaks before its end
    gz = make_party(tmp_path / "gz", b"", allow_seeded_randomness=False, lifetime_epsilon_cap=10.0)
    gz.data_path.unlink()
    path = gz.data_path.with_name("data.csv.gz")
    path.write_bytes(damaged)
    from dataclasses import replace

    gz = replace(gz, data_path=path)
    with caplog.at_level(logging.ERROR, logger="edprf"):
        refused = result_of(send_train(gz, settings, "run1/train-gz"))
    assert (refused["status"], refused["reason"]) == ("refused", "invalid_local_data"), refused
    # the party's own line says this one was paid for (review rev-ops F5), unlike the same code before a reservation
    assert "request run1/train-gz refused after its reservation (invalid_local_data): its epsilon 0.5 stays spent" in (
        caplog.text
    )
    assert refused["message"] == _INVALID_LOCAL_DATA_TEXT
    (entry,) = ledger(gz).entries()
    assert entry.state == EntryState.FAILED and ledger(gz).spent() == Fraction(1, 2)
