"""One round trip of the coordinator: send a message to each party, collect the replies until all are in or
the round's time is up.

Flower 1.41's deployed grid (``flwr.superlink.grid.HttpGrid``, the ServerApp's connection to the SuperLink)
looks for replies every 3 s in ``send_and_receive``: a round ended up to 3 s after its last reply, three times
per run (readiness, train, evaluation).  :func:`round_trip` pushes the messages itself and looks again after
0.05 s, then twice as long each time up to :data:`LONGEST_POLL` (0.5 s), so a round ends within half a second
of its last reply; a slow party's round costs the SuperLink one small request per half second.  Other grids
(Flower's in-memory simulation grid, which looks every 0.1 s, the in-process engine's, the tests' fakes) keep
their own ``send_and_receive``.

Privacy: none involved; the same messages are sent and the same replies collected, only sooner.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from flwr.app import Message
    from flwr.serverapp import Grid

__all__ = ["FIRST_POLL", "LONGEST_POLL", "round_trip"]

FIRST_POLL = 0.05
"""Seconds before the first look for replies."""
LONGEST_POLL = 0.5
"""Seconds between two looks for replies, at most."""


def _polls_slowly(grid: Grid) -> bool:
    """Whether ``grid`` is Flower's deployed grid, whose ``send_and_receive`` looks every 3 s."""
    try:
        from flwr.superlink.grid import HttpGrid
    except ImportError:  # a Flower without it: its own send_and_receive
        return False
    return isinstance(grid, HttpGrid)


def round_trip(
    grid: Grid,
    messages: Iterable[Message],
    *,
    timeout: float | None,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> list[Message]:
    """Send ``messages`` and return the replies received within ``timeout`` seconds (all of them when None).

    As Flower's ``Grid.send_and_receive``: replies come in the order they arrive; a message without a reply
    when the time is up has none in the list.  On Flower's deployed grid the replies are looked for after
    :data:`FIRST_POLL` seconds, then twice as long each time up to :data:`LONGEST_POLL`.

    Parameters
    ----------
    grid : flwr.serverapp.Grid
        The ServerApp's grid.
    messages : iterable of flwr.app.Message
        One per destination node.
    timeout : float or None
        Seconds to wait for the replies at most; None waits for all of them.
    clock, sleep : callable, optional
        Monotonic clock and sleep (tests pass fake ones).

    Returns
    -------
    list of flwr.app.Message
        The replies.

    Notes
    -----
    Privacy cost: none (it moves the messages the caller made).
    """
    if not _polls_slowly(grid):
        return list(grid.send_and_receive(messages, timeout=timeout))
    waiting = set(grid.push_messages(messages))
    deadline = None if timeout is None else clock() + timeout
    replies: list[Message] = []
    pause = FIRST_POLL
    while waiting:
        left = None if deadline is None else deadline - clock()
        if left is not None and left <= 0:
            break
        sleep(pause if left is None else min(pause, left))
        pause = min(2 * pause, LONGEST_POLL)
        received = list(grid.pull_messages(waiting))
        replies.extend(received)
        waiting.difference_update(m.metadata.reply_to_message_id for m in received)
    return replies
