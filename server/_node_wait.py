"""The coordinator's wait for the parties' SuperNodes to connect, before any request, with a progress line.

``node-wait-timeout`` (60 s by default) used to pass in silence: ``edprf run`` printed nothing until the run
went on or failed.  Now a line at INFO, which the run's log shows, says every :data:`PROGRESS_EVERY` seconds how
many parties are still awaited.

Privacy: how many SuperNodes are connected is Flower's, not any party's data; nothing is sent while waiting.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from edprf_core.count_text import count_text

if TYPE_CHECKING:
    from flwr.serverapp import Grid

__all__ = ["PROGRESS_EVERY", "wait_for_nodes", "waiting_text"]

log = logging.getLogger("edprf.coordinator")

PROGRESS_EVERY = 10.0
"""Seconds between two progress lines while the coordinator waits."""
_POLL = 1.0
"""Seconds between two looks at the connected nodes."""


def waiting_text(connected: int, wanted: int, left: float) -> str:
    """The progress line: ``"waiting for 1 more party (connected 2 of 3, 40 s left)"``."""
    more = count_text(wanted - connected, "more party", "more parties")
    return f"waiting for {more} (connected {connected} of {wanted}, {max(0.0, left):.0f} s left)"


def wait_for_nodes(
    grid: Grid,
    wanted: int,
    timeout: float,
    *,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> list[int]:
    """The node ids connected once ``wanted`` are, or when ``timeout`` seconds have passed (sorted).

    Every :data:`PROGRESS_EVERY` seconds of waiting, :func:`waiting_text` is logged at INFO.

    Parameters
    ----------
    grid : flwr.serverapp.Grid
        Asked for its node ids about every second.
    wanted : int
        Nodes to wait for.
    timeout : float
        Seconds to wait at most.
    clock, sleep : callable, optional
        Monotonic clock and sleep (tests pass fake ones).
    """
    start = clock()
    deadline = start + timeout
    next_progress = start + PROGRESS_EVERY
    while True:
        nodes = sorted(grid.get_node_ids())
        now = clock()
        if len(nodes) >= wanted or now >= deadline:
            return nodes
        if now >= next_progress:
            log.info(waiting_text(len(nodes), wanted, deadline - now))
            while next_progress <= now:
                next_progress += PROGRESS_EVERY
        sleep(min(_POLL, deadline - now))
