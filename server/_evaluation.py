"""The evaluation round: whether to ask at all, and the replies combined into one estimate.

Before asking, :func:`evaluation_plan` decides from public parameters alone
(the number of parties to ask, the requested ε, ``max-party-rows`` and
``evaluation-max-interval-width``) whether the noised counts can give an
interval narrower than the width the consortium asked for; if they cannot, no
request is sent and no party spends ε (a number whose interval is 0-1 informs
nobody).  After the round, :func:`evaluation_summary` validates every reply
(two finite integral counts inside the box a party of at most
``max-party-rows`` held-out rows makes plausible, see
:mod:`server._consortium_estimate`) and pools them without per-party clipping.
Post-processing of DP outputs and public parameters: no ε.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from edprf_core.count_text import count_text

from ._config import CoordinatorConfig
from ._consortium_estimate import (
    bias_corrected_ratio,
    coalition_robust_interval,
    coalition_shift,
    noise_margin,
    noise_variance,
    planned_width,
    plausible,
    score_interval,
    smallest_informative_epsilon,
)
from ._outcomes import EvaluationSkip

__all__ = ["UNDECLARED_ROWS_CEILING", "EvaluationPlan", "evaluation_plan", "evaluation_summary", "noise_variance"]

UNDECLARED_ROWS_CEILING = 1_000_000
"""The box's row bound when ``max-party-rows`` is not declared (evaluation forced by a width of 1, or exact)."""
_COUNT_LIMIT = 2**53  # larger values are not exact in the float64 the estimate uses: malformed, not just implausible


@dataclass(frozen=True)
class EvaluationPlan:
    """Whether the coordinator sends evaluation requests; if not, why (public inputs only)."""

    send: bool
    planned_width: float | None = None
    needed_epsilon: float | None = None
    reason: EvaluationSkip | str = ""
    message: str = ""

    def skipped_record(self) -> dict[str, Any]:
        """The report's ``federated_evaluation`` for a round that was not run."""
        return {
            "skipped": self.reason,
            "message": self.message,
            "planned_width": self.planned_width,
            "needed_epsilon": self.needed_epsilon,
            "parties": 0,
        }


def evaluation_plan(cfg: CoordinatorConfig, n_parties: int) -> EvaluationPlan:
    """Decide whether ``cfg.evaluation_epsilon`` can inform, before any party is asked.

    The planned interval is that of ``n_parties`` parties each holding
    ``max-party-rows`` held-out rows (the most the consortium says any party
    has: the best case for the width), at the accuracy that makes it widest
    (:func:`planned_width`).  If it is wider than
    ``evaluation-max-interval-width``, the round is skipped.  A width of 1 or
    more turns the check off; exact metrics (no ε) are never skipped.  An
    undeclared ``max-party-rows`` (0) leaves the coordinator unable to tell,
    so it does not spend.  Privacy cost: none (public parameters only).
    """
    eps, width, rows = cfg.evaluation_epsilon, cfg.evaluation_max_interval_width, cfg.max_party_rows
    if cfg.exact_metrics or width >= 1.0:
        return EvaluationPlan(send=True)
    if rows <= 0:
        return EvaluationPlan(
            send=False,
            reason=EvaluationSkip.PARTY_ROWS_NOT_DECLARED,
            message=f"evaluation not run, no epsilon spent: whether evaluation-epsilon {eps:g} "
            f"gives an interval narrower than {width:g} depends on the parties' held-out "
            "rows; set max-party-rows (the most held-out rows any party has, public) or "
            "evaluation-max-interval-width = 1 to evaluate anyway",
        )
    planned = planned_width(n_parties, rows, eps)
    if planned <= width:
        return EvaluationPlan(send=True, planned_width=planned)
    needed = smallest_informative_epsilon(n_parties, rows, width)
    fix = (
        f"evaluation-epsilon {needed:g} or more would, where the parties' max-evaluation-epsilon allows it"
        if needed is not None
        else "no epsilon would: the held-out rows alone are too few"
    )
    return EvaluationPlan(
        send=False,
        planned_width=planned,
        needed_epsilon=needed,
        reason=EvaluationSkip.UNINFORMATIVE,
        message=f"evaluation not run, no epsilon spent: with {count_text(n_parties, 'party', 'parties')} of at most "
        f"{count_text(rows, 'held-out row')}, evaluation-epsilon {eps:g} gives a 95% interval about "
        f"{planned:.2f} wide{' (more than the whole range 0-1 of an accuracy: it would say nothing)' if planned > 1 else ''}"
        f", wider than evaluation-max-interval-width {width:g}; {fix}",
    )


def _counts(metrics: dict[str, Any]) -> tuple[int, int] | None:
    """The two counts, or None if either is missing, not a finite integer or beyond float64's exact range."""
    values = []
    for key in ("correct", "total"):
        v = metrics.get(key)
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            return None
        if not math.isfinite(v) or v != round(v) or abs(v) > _COUNT_LIMIT:
            return None
        values.append(int(v))
    return values[0], values[1]


def _shown(value: float) -> float:
    """The reported accuracy: the estimate clipped to [0, 1] (NaN stays NaN)."""
    return min(1.0, max(0.0, value)) if math.isfinite(value) else float("nan")


MAX_COALITIONS = 500_000
"""The most sets of three parties the evaluation's coalition bounds search (each a vectorised pass over the box's
edges, about 13 µs): what the two-party figures already cost at 1,000 parties (499,500 sets, about 7 s).  A larger
``f`` may search ``3 * MAX_COALITIONS / f`` sets (each sums ``f`` parties' counts); beyond that the report says the
bound was not computed rather than stall the coordinator."""


def _tolerated_reach(
    correct: np.ndarray, total: np.ndarray, variance: float, bound: float, margin: float, f: int
) -> dict[str, Any]:
    """The reach and robust interval for the run's ``tolerated-parties`` ``f`` when ``f > 2`` (one and two are
    always reported): ``{"tolerated_parties": f, "max_tolerated_parties_shift": ..., "ci95_if_tolerated_parties_lied":
    ...}``, the two values None when more than :data:`MAX_COALITIONS` sets of ``f`` parties would have to be searched;
    ``{}`` for ``f <= 2``.  Post-processing of the noisy counts: no ε."""
    if f <= 2:
        return {}
    k = len(total)
    if not k or math.comb(k, f) * f > MAX_COALITIONS * 3:  # the work: sets times their size (3 at the cap's f)
        return {"tolerated_parties": f, "max_tolerated_parties_shift": None, "ci95_if_tolerated_parties_lied": None}
    shift = coalition_shift(correct, total, variance, bound, margin, f)
    return {
        "tolerated_parties": f,
        "max_tolerated_parties_shift": shift if math.isfinite(shift) else None,
        "ci95_if_tolerated_parties_lied": coalition_robust_interval(correct, total, variance, f),
    }


def evaluation_summary(
    replies: list[tuple[int, dict | None, str]], no_reply: list[int], cfg: CoordinatorConfig
) -> dict[str, Any]:
    """Combine the evaluation replies ``(node, metrics or None, refusal reason)``.

    A reply without two finite integral counts is ``invalid_metrics``; one
    outside the box a party of at most ``max-party-rows`` held-out rows makes
    plausible (12 noise scales of margin) is ``implausible_metrics``; both are
    left out of the estimate (the party may have been charged).  The rest are
    pooled unclipped (:mod:`server._consortium_estimate`).
    """
    epsilon = 0.0 if cfg.exact_metrics else cfg.evaluation_epsilon
    variance, margin = noise_variance(epsilon), noise_margin(epsilon)
    bound = cfg.max_party_rows or UNDECLARED_ROWS_CEILING
    refused, per_party, correct, total = [], [], [], []
    for node, metrics, reason in replies:
        if metrics is None:
            refused.append({"node_id": node, "reason": reason})
            continue
        counts = _counts(metrics)
        if counts is None:
            refused.append({"node_id": node, "reason": "invalid_metrics"})
            continue
        if not plausible(counts[0], counts[1], bound, margin):
            refused.append({"node_id": node, "reason": "implausible_metrics"})
            continue
        correct.append(counts[0])
        total.append(counts[1])
        own = bias_corrected_ratio(counts[0], counts[1], 1, variance)
        per_party.append(
            {
                "node_id": node,
                "accuracy": _shown(own) if math.isfinite(own) else None,
                "ci95": score_interval(counts[0], counts[1], 1, variance),
            }
        )
    k = len(per_party)
    c_sum, t_sum = int(sum(correct)), int(sum(total))
    estimate = bias_corrected_ratio(c_sum, t_sum, k, variance) if k else float("nan")
    replied_correct, replied_total = np.array(correct), np.array(total)
    # what one party, and two acting together, can move (the threat model lets parties collude)
    shift, pair_shift = (
        coalition_shift(replied_correct, replied_total, variance, bound, margin, f) if k else math.inf for f in (1, 2)
    )
    tolerated = _tolerated_reach(replied_correct, replied_total, variance, bound, margin, cfg.tolerated_parties)
    notes = []
    if no_reply:
        notes.append("parties in no_reply may have spent their evaluation epsilon on a reply that came too late")
    if not cfg.max_party_rows:
        notes.append(
            "max-party-rows not declared: one party's reply may move the estimate by up to "
            f"{UNDECLARED_ROWS_CEILING:,} rows' worth"
        )
    return {
        "parties": k,
        "refused": refused,
        "no_reply": no_reply,
        "noised": not cfg.exact_metrics,
        "epsilon_per_party": epsilon,
        "accuracy": _shown(estimate),
        "accuracy_unclipped": estimate,
        "ci95": score_interval(c_sum, t_sum, k, variance),
        "ci95_if_one_party_lied": coalition_robust_interval(replied_correct, replied_total, variance, 1) if k else None,
        "ci95_if_two_parties_lied": coalition_robust_interval(replied_correct, replied_total, variance, 2)
        if k
        else None,
        "max_one_party_shift": shift if math.isfinite(shift) else None,
        "max_two_party_shift": pair_shift if math.isfinite(pair_shift) else None,
        **tolerated,
        "max_party_rows": bound,
        "noise_margin": margin,
        "per_party": per_party,
        "noisy_correct": c_sum,
        "noisy_total": t_sum,
        "note": "; ".join(notes),
    }
