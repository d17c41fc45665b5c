"""Whether a party's reply hold covers the evaluation of the largest model its policy admits (``edprf party check``).

An evaluation's hold counts from the end of its model checks (:mod:`client._reply_timing`): what it then holds is
the read of the data file and the prediction of every held-out row.  The prediction's time grows with those rows
times the model's trees and depth, and the coordinator chooses the model, up to the policy's
``max-evaluation-trees`` trees of at most ``max-depth`` levels.  A hold shorter than that work lets a coordinator
send such a model and time the reply: a large party's leaves late, a small party's on time (review rev-coord C1).
``edprf party check`` has just read the party's file, so it knows the rows and how long the read took; this module
turns them and the policy's limits into an estimate (prediction on distinct rows, as the coordinator's worst case,
measured by ``benchmarks/bench_hold_estimate.py``; the routing tables' compile; the read) and, where the hold is
shorter than :data:`MARGIN` times it, what to change.

Privacy cost: none.  The estimate uses the party's own row count and read time, and goes to the party's own
terminal only (never to a reply or to the coordinator).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from edprf_core.prediction import MAX_COMPILE_CELLS

from ._evaluation_cost import CELLS_PER_WORK
from ._policy import PartyPolicy

__all__ = [
    "COMPILE_SECONDS",
    "MARGIN",
    "PREDICT_SECONDS_PER_STEP",
    "EvaluationTime",
    "hold_shortfall",
    "largest_evaluation_time",
    "seconds_text",
]

PREDICT_SECONDS_PER_STEP = 1e-8
"""Seconds per distinct held-out row and step of a prediction (a step: one level of one tree, or one class of one
part), rounded up from ``benchmarks/bench_hold_estimate.py`` (distinct rows at 64 bins, one core; its largest
measurement, 6.5e-9 s, is in ``results/hold_estimate.json``, and a test keeps this at or above it; :data:`MARGIN`
comes on top).  Review rev-s63 R1: the first value, 2e-9, was calibrated on repeated rows, which prediction reads
once each."""

COMPILE_SECONDS = 2 * (MAX_COMPILE_CELLS // CELLS_PER_WORK) * 1e-6
"""Seconds to build a model's routing tables, which the first prediction does inside the hold: at most
``MAX_COMPILE_CELLS`` node x code cells at ``CELLS_PER_WORK`` cells per work unit of about a microsecond
(:mod:`client._evaluation_cost`), doubled: about 4.2 s."""

MARGIN = 1.5
"""How much longer than the estimate a hold must be to count as covering it (the estimate is a rounded-up
measurement on one machine; the party's may be slower or busier)."""


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
        ``held_out_rows * (max-evaluation-trees * (max-depth + 1) + max-evaluation-parts * n_classes) *
        PREDICT_SECONDS_PER_STEP`` plus :data:`COMPILE_SECONDS`.
    """

    held_out_rows: int
    read_seconds: float
    predict_seconds: float

    @property
    def seconds(self) -> float:
        """The read and the prediction together."""
        return self.read_seconds + self.predict_seconds


def largest_evaluation_time(policy: PartyPolicy, n_classes: int, rows_kept: int, read_seconds: float) -> EvaluationTime:
    """Estimate the held work of evaluating the largest model ``policy`` admits on ``rows_kept`` usable rows.

    Parameters
    ----------
    policy : PartyPolicy
        The party's policy (``holdout-fraction``, ``max-evaluation-trees``, ``max-evaluation-parts``, ``max-depth``).
    n_classes : int >= 2
        The schema's classes.
    rows_kept : int >= 0
        The rows of the party's file that satisfy the schema's rules.
    read_seconds : float >= 0
        How long reading the file took.
    """
    held_out = math.ceil(rows_kept * policy.holdout_fraction)
    steps = held_out * (policy.max_evaluation_trees * (policy.max_depth + 1) + policy.max_evaluation_parts * n_classes)
    return EvaluationTime(held_out, read_seconds, steps * PREDICT_SECONDS_PER_STEP + COMPILE_SECONDS)


def hold_shortfall(policy: PartyPolicy, estimate: EvaluationTime) -> str | None:
    """What to change when ``policy``'s ``reply-after-seconds`` (set) is shorter than :data:`MARGIN` times
    ``estimate`` (:func:`largest_evaluation_time` of the same policy), or None: no hold, or it covers the estimate
    with that margin."""
    hold = policy.reply_after_seconds
    if hold <= 0 or MARGIN * estimate.seconds <= hold:
        return None
    per_tree = estimate.held_out_rows * (policy.max_depth + 1) * PREDICT_SECONDS_PER_STEP
    fixed = estimate.seconds - policy.max_evaluation_trees * per_tree  # the read, the compile, the parts' steps
    trees_that_fit = math.floor((hold / MARGIN - fixed) / per_tree) if per_tree > 0 else 0
    lower = (
        f", or lower max-evaluation-trees to at most {trees_that_fit} (the trees the consortium's models hold)"
        if trees_that_fit >= 1
        else ""
    )
    return (
        f"reply-after-seconds = {hold:g} is shorter than {MARGIN:g} times an evaluation of the largest model this "
        f"policy admits (max-evaluation-trees = {policy.max_evaluation_trees} of depth <= {policy.max_depth}) on about "
        f"{estimate.held_out_rows:,} held-out rows: about {seconds_text(estimate.seconds)} here (the read "
        f"{seconds_text(estimate.read_seconds)}, the prediction about {seconds_text(estimate.predict_seconds)}, "
        f"estimated), so a coordinator sending such a model could time this party's data; raise reply-after-seconds "
        f"to at least {math.ceil(MARGIN * estimate.seconds)}{lower}"
    )


def seconds_text(seconds: float) -> str:
    """``"3.2 s"``, or ``"under 0.1 s"``."""
    return f"{seconds:.1f} s" if seconds >= 0.1 else "under 0.1 s"
