"""The evaluation round's replies: validated, bounded, combined into one estimate with its uncertainty.

Every party sends noised integer counts (correct, total) over its held-out
rows, each with discrete Laplace noise of scale b = 2/ε (``a = exp(-1/b)``,
variance ``2a / (1 - a)^2`` per count).  A reply is accepted only with both
counts present, finite, integral and within ``max-party-rows`` (plus a noise
margin); accepted counts are clipped to ``0 <= correct <= total <= max-party-rows``,
so one party, honest or forging, moves the consortium's estimate by a bounded
amount.  The estimate is ``sum(correct) / sum(total)`` with a 95 % interval from
the noise variance and the binomial sampling variance (delta method); each
party's own value comes with its own interval.  Post-processing of DP outputs:
no ε.
"""

from __future__ import annotations

import math
from typing import Any

from ._config import CoordinatorConfig

__all__ = ["evaluation_summary", "noise_variance"]

_Z95 = 1.959963984540054
_MARGIN_SCALES = 50  # a noised count may exceed its bound by this many noise scales (probability < 1e-21)


def noise_variance(epsilon: float) -> float:
    """Variance of one count's discrete Laplace noise of scale 2/ε (0 for exact metrics)."""
    if epsilon <= 0:
        return 0.0
    a = math.exp(-epsilon / 2.0)
    return 2.0 * a / (1.0 - a) ** 2


def _interval(correct: float, total: float, n_parties: int, variance: float) -> list[float] | None:
    if total <= 0:
        return None
    r = min(1.0, max(0.0, correct / total))
    var = n_parties * variance * (1.0 + r * r) / total**2 + r * (1.0 - r) / total
    half = _Z95 * math.sqrt(var)
    return [max(0.0, r - half), min(1.0, r + half)]


def _counts(metrics: dict[str, Any], bound: float) -> tuple[int, int] | str:
    """The two counts, or the reason the reply is invalid."""
    values = []
    for key in ("correct", "total"):
        v = metrics.get(key)
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            return "invalid_metrics"
        if not math.isfinite(v) or v != round(v) or abs(v) > bound:
            return "invalid_metrics"
        values.append(int(v))
    return values[0], values[1]


def evaluation_summary(replies: list[tuple[int, dict | None, str]], no_reply: list[int],
                       cfg: CoordinatorConfig) -> dict[str, Any]:
    """Combine the evaluation replies ``(node, metrics or None, refusal reason)``."""
    epsilon = 0.0 if cfg.exact_metrics else cfg.evaluation_epsilon
    variance = noise_variance(epsilon)
    cap = cfg.max_party_rows
    bound = cap + (_MARGIN_SCALES * 2.0 / epsilon if epsilon > 0 else 0)
    refused, per_party = [], []
    correct_sum = total_sum = 0
    for node, metrics, reason in replies:
        if metrics is None:
            refused.append({"node_id": node, "reason": reason})
            continue
        counts = _counts(metrics, bound)
        if isinstance(counts, str):
            refused.append({"node_id": node, "reason": counts})
            continue
        total = min(max(counts[1], 0), cap)
        correct = min(max(counts[0], 0), total)
        correct_sum += correct
        total_sum += total
        per_party.append({"node_id": node, "accuracy": correct / total if total else None,
                          "ci95": _interval(correct, total, 1, variance)})
    answered = len(per_party)
    accuracy = min(1.0, max(0.0, correct_sum / total_sum)) if total_sum > 0 else float("nan")
    return {"parties": answered, "refused": refused, "no_reply": no_reply, "noised": not cfg.exact_metrics,
            "epsilon_per_party": epsilon, "accuracy": accuracy,
            "ci95": _interval(correct_sum, total_sum, answered, variance), "per_party": per_party,
            "noisy_correct": correct_sum, "noisy_total": total_sum,
            "note": ("parties in no_reply may have spent their evaluation epsilon on a reply that came too late"
                     if no_reply else "")}
