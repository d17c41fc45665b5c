"""The coordinator's round trip ends within half a second of its last reply on Flower's deployed grid.

Flower 1.41's ``HttpGrid.send_and_receive`` looks for replies every 3 s; :func:`server._round_trip.round_trip`
looks after 0.05 s, then twice as long each time up to 0.5 s, stops at the round's timeout as Flower does, and
leaves every other grid's ``send_and_receive`` alone. Fake clock and sleep; no Flower process.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from flwr.superlink.grid import HttpGrid

from server._round_trip import FIRST_POLL, LONGEST_POLL, round_trip


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def _reply(message_id: str):
    return SimpleNamespace(metadata=SimpleNamespace(reply_to_message_id=message_id))


class _DeployedGrid(HttpGrid):
    """Flower's deployed grid class, without a connection: replies become available at given times."""

    def __init__(self, clock: _Clock, ready_at: dict[str, float]) -> None:  # no super().__init__: no SuperLink
        self.clock, self.ready_at, self.pulls = clock, ready_at, []

    def push_messages(self, messages):
        return [m for m in messages]  # the messages are their own ids here

    def pull_messages(self, message_ids):
        ids = list(message_ids)
        self.pulls.append((self.clock.now, sorted(ids)))
        return [_reply(i) for i in ids if self.ready_at[i] <= self.clock.now]

    def send_and_receive(self, messages, *, timeout=None):  # pragma: no cover - must not be called
        raise AssertionError("the 3-second loop of Flower's deployed grid was used")


def test_the_round_ends_within_the_longest_poll_of_the_last_reply():
    clock = _Clock()
    grid = _DeployedGrid(clock, {"a": 0.3, "b": 2.0})
    replies = round_trip(grid, ["a", "b"], timeout=60.0, clock=clock, sleep=clock.sleep)
    assert [r.metadata.reply_to_message_id for r in replies] == ["a", "b"]
    assert clock.sleeps[:5] == [FIRST_POLL, 2 * FIRST_POLL, 4 * FIRST_POLL, 8 * FIRST_POLL, LONGEST_POLL]
    assert max(clock.sleeps) == LONGEST_POLL
    assert 2.0 <= clock.now < 2.0 + LONGEST_POLL
    assert grid.pulls[-1][1] == ["b"], "a message already answered was asked for again"


def test_a_silent_party_has_no_reply_when_the_timeout_is_up():
    clock = _Clock()
    grid = _DeployedGrid(clock, {"a": 0.0, "silent": float("inf")})
    replies = round_trip(grid, ["a", "silent"], timeout=3.0, clock=clock, sleep=clock.sleep)
    assert [r.metadata.reply_to_message_id for r in replies] == ["a"]
    assert clock.now == pytest.approx(3.0) and grid.pulls[-1][0] == pytest.approx(3.0), "no last look at the timeout"


def test_a_zero_timeout_sends_and_does_not_wait():
    clock = _Clock()
    grid = _DeployedGrid(clock, {"a": 0.0})
    assert round_trip(grid, ["a"], timeout=0.0, clock=clock, sleep=clock.sleep) == []
    assert clock.sleeps == [] and grid.pulls == []


def test_other_grids_keep_their_own_send_and_receive():
    calls = []

    class _Simulated:
        def send_and_receive(self, messages, *, timeout=None):
            calls.append((list(messages), timeout))
            return iter([_reply("a")])

    replies = round_trip(_Simulated(), ["a"], timeout=5.0)
    assert calls == [(["a"], 5.0)] and [r.metadata.reply_to_message_id for r in replies] == ["a"]
