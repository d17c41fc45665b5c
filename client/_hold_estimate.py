"""Whether a party's reply hold covers the evaluation of the largest model its policy admits (``edprf party check``).

An evaluation's hold counts from the end of its model checks (:mod:`client._reply_timing`): what it then holds is
the read of the data file and the prediction of every held-out row.  The prediction's time grows with those rows
times the model's trees and depth, and the coordinator chooses the model, up to the policy's
``max-evaluation-trees`` trees of at most ``max-depth`` levels.  A hold shorter than that work lets a coordinator
send such a model and time the reply: a large party's leaves late, a small party's on time (review rev-coord C1).
``edprf party check`` has just read the party's file, so it knows the rows and how long the read took; this module
turns them and the policy's limits into an estimate and, where the hold falls short, what to change.

Privacy cost: none.  The estimate uses the party's own row count and read time, and goes to the party's own
terminal only (never to a reply or to the coordinator).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ._policy import PartyPolicy

__all__ = ["PREDICT_SECONDS_PER_STEP", "EvaluationTime", "hold_shortfall", "largest_evaluation_time"]

PREDICT_SECONDS_PER_STEP = 2e-9
"""Seconds per held-out row, tree and level of a prediction, rounded up about twice from the benchmark machine (one
core, 100,000 rows: 1,000 trees of depth 8 of the wall robot in 0.53 s, 5.9e-10 s a step; 500 trees of depth 4
and 8 of bank marketing and the wall robot 5.4e-10 to 1.3e-9 s a step on a loaded machine)."""


@dataclass(frozen=True)
class EvaluationTime:
    """How long evaluating the largest model a policy admits would take on a party's rows (seconds, estimated).

    Attributes
    ----------
    held_out_rows : int >= 0
        The party's usable rows times its policy's ``holdout-fraction``, rounded up.
    read_seconds : float >= 0
        How long reading the data file took (measured by the check).
    predict_seconds : float >= 0
        ``held_out_rows * max-evaluation-trees * (max-depth + 1) * PREDICT_SECONDS_PER_STEP``.
    """

    held_out_rows: int
    read_seconds: float
    predict_seconds: float

    @property
    def seconds(self) -> float:
        """The read and the prediction together."""
        return self.read_seconds + self.predict_seconds


def largest_evaluation_time(policy: PartyPolicy, rows_kept: int, read_seconds: float) -> EvaluationTime:
    """Estimate the held work of evaluating the largest model ``policy`` admits on ``rows_kept`` usable rows.

    Parameters
    ----------
    policy : PartyPolicy
        The party's policy (``holdout-fraction``, ``max-evaluation-trees``, ``max-depth``).
    rows_kept : int >= 0
        The rows of the party's file that satisfy the schema's rules.
    read_seconds : float >= 0
        How long reading the file took.
    """
    held_out = math.ceil(rows_kept * policy.holdout_fraction)
    steps = held_out * policy.max_evaluation_trees * (policy.max_depth + 1)
    return EvaluationTime(held_out, read_seconds, steps * PREDICT_SECONDS_PER_STEP)


def hold_shortfall(policy: PartyPolicy, estimate: EvaluationTime) -> str | None:
    """What to change when ``policy``'s ``reply-after-seconds`` (set) is below ``estimate``, or None: no hold, or it
    covers the estimate."""
    hold = policy.reply_after_seconds
    if hold <= 0 or estimate.seconds <= hold:
        return None
    per_tree = estimate.predict_seconds / policy.max_evaluation_trees
    trees_that_fit = math.floor((hold - estimate.read_seconds) / per_tree) if per_tree > 0 else 0
    lower = (
        f", or lower max-evaluation-trees to at most {trees_that_fit} (the trees the consortium's models hold)"
        if trees_that_fit >= 1
        else ""
    )
    return (
        f"reply-after-seconds = {hold:g} is shorter than an evaluation of the largest model this policy admits "
        f"(max-evaluation-trees = {policy.max_evaluation_trees} of depth <= {policy.max_depth}) on about "
        f"{estimate.held_out_rows:,} held-out rows: about {estimate.seconds:.1f} s here (the read "
        f"{estimate.read_seconds:.1f} s, the prediction about {estimate.predict_seconds:.1f} s, estimated), so a "
        f"coordinator sending such a model could time this party's data; raise reply-after-seconds to at least "
        f"{math.ceil(estimate.seconds * 1.5)}{lower}"
    )
