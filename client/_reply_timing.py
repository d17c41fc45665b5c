"""A party's replies held back to a time fixed in its policy, so that their latency does not tell the data's size.

Training and a noised evaluation read the party's data file and work on every row: the time they take grows
with the party's rows, and a coordinator that times the rounds learns roughly how many rows a party holds (an
un-noised function of the data, which invariant 1 forbids releasing).  With ``reply-after-seconds`` set in the
policy (:class:`client.PartyPolicy`), the ClientApp replies to a train or evaluate message no earlier than that
many seconds after the message reached it: when the work is done earlier, the reply's time is the policy's
constant, whatever the data.  Work that takes longer is not held back: its reply is late, and that lateness
depends on the data; the party's log says so, with the value to set.  Readiness queries are not held back:
their answer never reads the data (:meth:`client.Party.ready`).

An evaluation's hold counts from the end of its model checks (:attr:`client.Party.hold_from`), not from the
message: the coordinator chooses the model, so it chooses how long checking and decoding it take (up to the
policy's ``max-evaluation-work``), and a model sized to end just before a hold counted from the message pushed a
large party's reply past it and not a small party's (review rev-coord C1).  Those checks read no row, so their
time says nothing about the data.  The time then held, the read and the prediction of every held-out row, grows
with the rows times the model's trees, which the coordinator also chooses up to ``max-evaluation-trees``: the
hold must exceed the evaluation of the largest model the policy admits, or that limit be lowered.

Privacy cost: none (it delays a reply, computed as before).  What it protects is the reply's timing, a side
channel outside the DP guarantee: the policy's value is public in effect (anyone who times the replies sees
it), so a consortium gives all its parties one value, not each party its own.
"""

from __future__ import annotations

import logging
import time

__all__ = ["HOLD_MARGIN_SECONDS", "hold_problem", "hold_reply", "message_reached", "round_timeout_seconds"]

HOLD_MARGIN_SECONDS = 30.0
"""How far below the run's ``round-timeout`` a hold must end: the coordinator's clock starts when it sends, the hold's
when the ClientApp takes the message, after the SuperNode's poll (a few seconds) and the ClientApp's start-up."""

log = logging.getLogger("edprf.party")


def message_reached() -> float:
    """The reading of the clock :func:`hold_reply` measures from (:func:`time.monotonic`)."""
    return time.monotonic()


def hold_reply(started: float, reply_after: float, what: str) -> None:
    """Sleep until ``reply_after`` seconds after ``started`` (a :func:`message_reached` reading).

    Parameters
    ----------
    started : float
        When the message reached the ClientApp, from :func:`message_reached`.
    reply_after : float in [0, inf)
        The policy's ``reply-after-seconds``; 0 holds nothing back.
    what : str
        The message type, for the party's log.
    """
    if reply_after <= 0:
        return
    elapsed = time.monotonic() - started
    if elapsed > reply_after:
        log.warning(
            "the %s reply took %.1f s, more than the policy's reply-after-seconds = %g: its time grows with "
            "the data's size, which a coordinator timing the round can see; raise reply-after-seconds above "
            "the longest work (with the other parties; an evaluation's work also grows with the model's trees, up "
            "to the policy's max-evaluation-trees)",
            what,
            elapsed,
            reply_after,
        )
        return
    time.sleep(reply_after - elapsed)


def hold_problem(reply_after: float, round_timeout: object) -> str | None:
    """Why a hold of ``reply_after`` seconds does not fit the run's ``round-timeout`` (a number, or its text as a run
    config may carry it), or None: it fits, or there is no hold, or no usable round-timeout to compare with.

    A hold that ends less than :data:`HOLD_MARGIN_SECONDS` before the round closes would have the party spend and
    then reply after the coordinator stopped waiting.
    """
    timeout = round_timeout_seconds(round_timeout)
    if reply_after <= 0 or timeout is None or reply_after + HOLD_MARGIN_SECONDS <= timeout:
        return None
    return (
        f"policy reply-after-seconds = {reply_after:g} does not end {HOLD_MARGIN_SECONDS:g} s before the run's "
        f"round-timeout = {timeout:g}: the coordinator would stop waiting before this party replies, after it had "
        f"spent; lower reply-after-seconds, or ask the coordinator for a round-timeout of at least "
        f"{reply_after + HOLD_MARGIN_SECONDS:g}"
    )


def round_timeout_seconds(round_timeout: object) -> float | None:
    """The run's ``round-timeout`` (a number, or its text as a run config may carry it) in seconds, when it is a
    positive finite number; None otherwise."""
    if isinstance(round_timeout, bool):
        return None
    try:
        timeout = float(round_timeout)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return timeout if 0 < timeout < float("inf") else None
