"""The coordinator's wait for the parties' SuperNodes says how it goes (hospital IT walkthrough).

The minute of ``node-wait-timeout`` passed in silence: ``edprf run`` printed nothing until the run went on or
failed.  Now a line at INFO, which the run's log shows, comes about every 10 s.
"""

from __future__ import annotations

import logging

from edprf_core import example_schema
from server import CoordinatorConfig, run_federation
from server._node_wait import PROGRESS_EVERY, wait_for_nodes


class _Clock:
    """A monotonic clock that moves only when slept on."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


class _Arriving:
    """Node ids that connect at given times of the clock."""

    def __init__(self, clock: _Clock, arrivals: dict[int, float]) -> None:
        self.clock, self.arrivals = clock, arrivals

    def get_node_ids(self) -> list[int]:
        return [node for node, at in self.arrivals.items() if self.clock.now >= at]


def test_the_wait_says_every_ten_seconds_how_many_parties_it_still_waits_for(caplog):
    clock = _Clock()
    grid = _Arriving(clock, {1: 100.0, 2: 115.0, 3: 1e9})  # the third never connects
    with caplog.at_level(logging.INFO, logger="edprf.coordinator"):
        nodes = wait_for_nodes(grid, 3, 60.0, clock=clock, sleep=clock.sleep)
    assert nodes == [1, 2] and clock.now == 160.0
    assert [r.getMessage() for r in caplog.records if r.levelno == logging.INFO] == [
        "waiting for 2 more parties (connected 1 of 3, 50 s left)",
        "waiting for 1 more party (connected 2 of 3, 40 s left)",
        "waiting for 1 more party (connected 2 of 3, 30 s left)",
        "waiting for 1 more party (connected 2 of 3, 20 s left)",
        "waiting for 1 more party (connected 2 of 3, 10 s left)",
    ]
    assert PROGRESS_EVERY == 10.0


def test_a_wait_that_ends_quickly_says_nothing(caplog):
    clock = _Clock()
    grid = _Arriving(clock, {1: 100.0, 2: 103.0})
    with caplog.at_level(logging.INFO, logger="edprf.coordinator"):
        assert wait_for_nodes(grid, 2, 60.0, clock=clock, sleep=clock.sleep) == [1, 2]
    assert caplog.records == [] and clock.now == 103.0


class _TwoConnected:
    def get_node_ids(self) -> list[int]:
        return [1, 2]

    def send_and_receive(self, messages, timeout=None):
        raise AssertionError("no request may be sent")


def test_the_run_s_wait_shows_its_progress_in_the_coordinator_s_log(tmp_path, caplog, monkeypatch):
    """Through run_federation, with the real clock and a progress line every 0.2 s instead of 10 s."""
    import server._node_wait as node_wait

    monkeypatch.setattr(node_wait, "PROGRESS_EVERY", 0.2)
    monkeypatch.setattr(node_wait, "_POLL", 0.05)
    example_schema("wall_robot_navigation").save(tmp_path / "schema.toml")
    waiting = CoordinatorConfig(
        schema_path=str(tmp_path / "schema.toml"),
        output_dir=str(tmp_path / "out"),
        min_parties=3,
        node_wait_timeout=0.5,
    )
    with caplog.at_level(logging.INFO, logger="edprf.coordinator"):
        run_federation(_TwoConnected(), waiting, "12")
    progress = [r.getMessage() for r in caplog.records if r.getMessage().startswith("waiting for")]
    assert progress and all(line.startswith("waiting for 1 more party (connected 2 of 3, ") for line in progress)
