"""A party's train and evaluate replies leave at the time its policy fixes (``reply-after-seconds``), whatever
the size of its data: the work's duration, which grows with the rows, does not reach the coordinator's clock,
nor the reply's own timestamps.

A test may not measure wall-clock time, so the clock is a stand-in: reading the data file advances it by a
fixed time per byte (the work grows with the data, as the real one does), the party's hold sleeps on it, and
Flower's message clock reads it (a reply's ``created_at`` and ``ttl`` are stamped when the message is built,
and travel to the coordinator: whole-change review, S1).  The reply's time on that clock, and its
timestamps, are what a coordinator would see.  Without the hold (the policy's 0), the times differ: the test
sees the channel it closes.
"""

from __future__ import annotations

from datetime import UTC, datetime

import flwr.app.message.message as flower_message
import pytest

import client._party as party_module
import client._reply_timing as reply_timing
from client import PartyPolicy
from client._reply_timing import HOLD_MARGIN_SECONDS, hold_problem

from ..federation._neighbours import file_bytes, make_party
from ._party_requests import (  # noqa: F401
    TrainSettings,
    flower_task_identity,
    global_model,
    ledger,
    release_of,
    result_of,
    send_evaluate,
    send_query,
    send_train,
)

pytestmark = [pytest.mark.privacy, pytest.mark.usefixtures("flower_task_identity")]

SECONDS_PER_BYTE = 1e-3  # the stand-in work: 300 rows take about 10 s, 3,000 rows about 100 s
REPLY_AFTER = 600.0


class StandInClock:
    """``time`` for :mod:`client._reply_timing`: ``monotonic`` reads it, ``sleep`` advances it."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.slept: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        assert seconds >= 0
        self.slept.append(seconds)
        self.now += seconds


@pytest.fixture
def clock(monkeypatch) -> StandInClock:
    stand_in = StandInClock()
    monkeypatch.setattr(reply_timing, "time", stand_in)
    monkeypatch.setattr(flower_message, "now", lambda: datetime.fromtimestamp(stand_in.now, tz=UTC))
    real_load = party_module.load_local_data

    def timed_load(path, *args, **kwargs):  # the work takes time in proportion to the data
        stand_in.now += SECONDS_PER_BYTE * len(path.read_bytes())
        return real_load(path, *args, **kwargs)

    monkeypatch.setattr(party_module, "load_local_data", timed_load)
    return stand_in


def _reply_time(clock: StandInClock, send) -> tuple[float, dict]:
    """When the reply left, after the request was sent; the reply.  The reply's own stamps must say the same."""
    start = clock.now
    reply = send()
    took = clock.now - start
    # stamped as it left (Flower's clock has microseconds)
    assert reply.metadata.created_at == pytest.approx(clock.now, abs=1e-5), (reply.metadata.created_at, clock.now)
    return took, reply


def _parties(tmp_path, reply_after: float):
    return {
        rows: make_party(
            tmp_path / f"{rows}-{reply_after:g}",
            file_bytes(n_rows=rows),
            allow_seeded_randomness=False,
            reply_after_seconds=reply_after,
        )
        for rows in (300, 3000)
    }


def test_train_replies_of_a_small_and_a_large_party_leave_at_the_same_time(tmp_path, clock):
    times, stamps = {}, {}
    for rows, setup in _parties(tmp_path, REPLY_AFTER).items():
        times[rows], reply = _reply_time(clock, lambda s=setup: send_train(s, TrainSettings()))
        release_of(setup, reply)  # a release, computed as without the hold
        stamps[rows] = round(reply.metadata.ttl, 4)  # what is left of the request's time to live
    assert times[300] == times[3000] == REPLY_AFTER, times
    assert stamps[300] == stamps[3000], stamps  # the hold's, not the work's


def test_without_the_hold_the_reply_time_tells_the_size(tmp_path, clock):
    """The policy's 0: the stand-in work shows through (what the hold removes)."""
    times = {
        rows: _reply_time(clock, lambda s=setup: send_train(s, TrainSettings()))[0]
        for rows, setup in _parties(tmp_path, 0.0).items()
    }
    assert times[3000] > 5 * times[300] > 0, times
    assert clock.slept == []


def test_evaluate_replies_and_refusals_are_held_too(tmp_path, clock):
    setups = _parties(tmp_path, REPLY_AFTER)
    model = global_model(release_of(setups[300], send_train(setups[300], TrainSettings())))
    times = {}
    for rows, setup in setups.items():
        times[rows], reply = _reply_time(clock, lambda s=setup: send_evaluate(s, model, epsilon=0.1))
        assert result_of(reply)["status"] == "evaluated", result_of(reply)
    assert times[300] == times[3000] == REPLY_AFTER, times
    # a refusal (epsilon above the policy's max, decided before the data is read) leaves at the same time
    refused_time, reply = _reply_time(clock, lambda: send_evaluate(setups[3000], model, epsilon=5.0))
    assert result_of(reply)["status"] == "refused" and refused_time == REPLY_AFTER


def test_an_evaluation_holds_from_its_model_checks_whatever_the_model_costs(tmp_path, clock, monkeypatch):
    """The coordinator chooses the model, so it chooses how long checking and decoding it takes (up to the policy's
    max-evaluation-work, about 10 s).  Sized to end just before the hold, it pushed a large party's reply (decoding,
    then its longer read) past the hold and not a small party's: a threshold on the row count, without noise
    (review rev-coord C1: 8 of 8 evaluations of a 10^6-row party late, 0 of 8 of a 10^3-row one).  The hold counts
    from the end of the model checks, before the data file's own pre-check (its header or Parquet footer, whose time
    grows with the file): both replies leave at the decoding's time plus the hold."""
    setups = _parties(tmp_path, REPLY_AFTER)
    model = global_model(release_of(setups[300], send_train(setups[300], TrainSettings())))
    reads = {rows: SECONDS_PER_BYTE * len(setup.data_path.read_bytes()) for rows, setup in setups.items()}
    decoding = REPLY_AFTER - (reads[300] + reads[3000]) / 2  # the small party's read fits after it, the large one's not
    assert decoding + reads[300] < REPLY_AFTER < decoding + reads[3000]
    real_load = party_module.load_global_model

    def slow_model(*args, **kwargs):  # the model's cost, the same at every party
        clock.now += decoding
        return real_load(*args, **kwargs)

    monkeypatch.setattr(party_module, "load_global_model", slow_model)
    real_file_check = party_module.Party._refuse_an_unusable_data_file

    def timed_file_check(self):  # the header or Parquet footer read before the reservation: it grows with the data
        clock.now += SECONDS_PER_BYTE * len(self.setup.data_path.read_bytes()) / 100
        return real_file_check(self)

    monkeypatch.setattr(party_module.Party, "_refuse_an_unusable_data_file", timed_file_check)
    times = {}
    for rows, setup in setups.items():
        times[rows], reply = _reply_time(clock, lambda s=setup: send_evaluate(s, model, epsilon=0.1))
        assert result_of(reply)["status"] == "evaluated", result_of(reply)
    assert times[300] == times[3000] == decoding + REPLY_AFTER, times


def test_an_evaluation_whose_held_reply_would_miss_the_round_is_refused_before_spending(tmp_path, clock, monkeypatch):
    """The set-up's check fits a hold counted from the message into the round; an evaluation's counts from the end of
    its model checks, which the coordinator can make long.  When the held reply would leave within the margin of the
    round-timeout, the party refuses (round_closed) before it reserves or reads anything (review rev-s63 R4)."""
    import tests.privacy._party_requests as requests

    setups = _parties(tmp_path, REPLY_AFTER)
    model = global_model(release_of(setups[300], send_train(setups[300], TrainSettings())))
    timeout = REPLY_AFTER + HOLD_MARGIN_SECONDS + 20
    real_context = requests._context
    monkeypatch.setattr(requests, "_context", lambda s: _with_run_config(real_context(s), {"round-timeout": timeout}))
    real_load = party_module.load_global_model
    for decoding, status in ((40.0, "refused"), (10.0, "evaluated")):  # the refusal spends nothing: the id is free

        def slow_model(*args, d=decoding, **kwargs):
            clock.now += d
            return real_load(*args, **kwargs)

        monkeypatch.setattr(party_module, "load_global_model", slow_model)
        setup = setups[3000]
        before = len(ledger(setup).entries())
        took, reply = _reply_time(clock, lambda s=setup: send_evaluate(s, model, epsilon=0.1))
        result = result_of(reply)
        assert result["status"] == status, (decoding, result)
        if status == "refused":
            assert result["reason"] == "round_closed" and "nothing was spent" in result["message"], result
            assert len(ledger(setup).entries()) == before  # nothing reserved
        assert took == decoding + REPLY_AFTER, took  # held either way


def test_work_longer_than_the_hold_replies_when_done_and_says_so(tmp_path, clock, caplog):
    setup = _parties(tmp_path, 1.0)[3000]
    took, reply = _reply_time(clock, lambda: send_train(setup, TrainSettings()))
    release_of(setup, reply)
    assert took > 1.0 and clock.slept == []
    assert any("more than the policy's reply-after-seconds = 1" in r.getMessage() for r in caplog.records)


def test_readiness_answers_are_not_held(tmp_path, clock):
    setup = _parties(tmp_path, REPLY_AFTER)[300]
    took, reply = _reply_time(clock, lambda: send_query(setup, TrainSettings()))
    assert result_of(reply)["status"] == "ready" and took == 0.0 and clock.slept == []


@pytest.mark.parametrize("bad", [-1.0, 3601.0, float("nan"), float("inf")])
def test_the_policy_refuses_a_hold_out_of_range(bad):
    with pytest.raises(ValueError, match="reply-after-seconds"):
        PartyPolicy(party_id="p", reply_after_seconds=bad)


def test_a_hold_longer_than_the_round_is_refused_before_anything_is_spent(tmp_path, clock, monkeypatch):
    """The coordinator stops waiting at its round-timeout: a party holding its reply longer would spend and then be
    timed out (whole-change review).  It refuses as party_setup (the reason in its log), reading no row."""
    import tests.privacy._party_requests as requests

    setup = _parties(tmp_path, REPLY_AFTER)[300]
    real_context = requests._context
    monkeypatch.setattr(
        requests, "_context", lambda s: _with_run_config(real_context(s), {"round-timeout": REPLY_AFTER / 2})
    )
    # below the round-timeout but within the margin (the SuperNode's poll and the ClientApp's start-up come first),
    # and the timeout as text, as a run config may carry it (review of the fixes: a string skipped the check)
    for timeout in (REPLY_AFTER / 2, REPLY_AFTER + HOLD_MARGIN_SECONDS / 2, str(REPLY_AFTER)):
        monkeypatch.setattr(
            requests, "_context", lambda s, t=timeout: _with_run_config(real_context(s), {"round-timeout": t})
        )
        for send in (lambda: send_train(setup, TrainSettings()), lambda: send_query(setup, TrainSettings())):
            result = result_of(send())
            assert result["status"] == "refused" and result["reason"] == "party_setup", (timeout, result)
    assert ledger(setup).entries() == []
    problem = hold_problem(REPLY_AFTER, REPLY_AFTER)
    assert problem and f"a round-timeout of at least {REPLY_AFTER + HOLD_MARGIN_SECONDS:g}" in problem
    monkeypatch.setattr(
        requests,
        "_context",
        lambda s: _with_run_config(real_context(s), {"round-timeout": REPLY_AFTER + HOLD_MARGIN_SECONDS}),
    )
    release_of(setup, send_train(setup, TrainSettings()))


def test_an_internal_error_is_held_too(tmp_path, clock, monkeypatch):
    """Every outcome once the policy is read, a failure of the work included (review of the fixes: that path's
    stamps were untested)."""
    setup = _parties(tmp_path, REPLY_AFTER)[3000]

    def failing_train(self, request):
        clock.now += SECONDS_PER_BYTE * len(self.setup.data_path.read_bytes())  # the work's time, then a bug
        raise RuntimeError("a bug")

    monkeypatch.setattr(party_module.Party, "train", failing_train)
    took, reply = _reply_time(clock, lambda: send_train(setup, TrainSettings()))
    assert result_of(reply)["reason"] == "internal_error" and took == REPLY_AFTER


def _with_run_config(context, values):
    context.run_config = {**context.run_config, **values}
    return context


def test_the_clientapps_party_check_names_a_hold_the_round_would_not_wait_for(tmp_path):
    """The refusal's log line sends the operator to the party check: the check the ClientApp runs with the run's
    config names the problem (review of the fixes: it said "no problem found")."""
    from client import preflight_configs

    from ._party_requests import _context

    setup = _parties(tmp_path, REPLY_AFTER)[300]
    node_config = _context(setup).node_config
    problems = [f.line() for f in preflight_configs(node_config, {"round-timeout": REPLY_AFTER}).problems]
    assert any("reply-after-seconds = 600 does not end 30 s before" in p for p in problems), problems
    fits = preflight_configs(node_config, {"round-timeout": REPLY_AFTER + HOLD_MARGIN_SECONDS}).problems
    assert not any("reply-after-seconds" in f.line() for f in fits)
