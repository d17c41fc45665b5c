"""Selective aggregation: greedily keep the parties whose trees help, on validation data.

Forward selection (in the spirit of incremental ensemble selection): start
from no party; at each step add the party that gives the ensemble the highest
validation accuracy; ties go to the larger margin-weighted importance, where a
row's weight is ``1 / (1 + |margin|)`` with ``margin`` the current ensemble's
vote share of the true class minus the best other class (rows the ensemble
barely gets right or wrong count most).  The order is run to the end (or the
target size); the kept set is the longest prefix that reaches the best
validation accuracy (minus ``min_gain``, a tolerance the operator may set),
so a party is dropped when adding it lowers validation accuracy.  Runs on the coordinator's validation data only:
post-processing of the releases, so each party's epsilon is unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

__all__ = ["Selection", "select_parties"]


@dataclass(frozen=True)
class Selection:
    kept: tuple[int, ...]  # part indices, in the order they were added
    dropped: tuple[int, ...]
    accuracy_path: tuple[float, ...]  # validation accuracy after each addition


def _margins(votes: NDArray[np.float64], y: NDArray[np.int64]) -> NDArray[np.float64]:
    n = votes.shape[0]
    total = np.maximum(votes.sum(axis=1), 1)
    share = votes / total[:, None]
    true = share[np.arange(n), y]
    other = share.copy()
    other[np.arange(n), y] = -np.inf
    return true - other.max(axis=1)


def select_parties(part_votes: list[NDArray[np.int64]], y: NDArray[np.int64], target_parts: int | None = None,
                   min_gain: float = 0.0) -> Selection:
    """Greedy forward selection over parts; ``part_votes[i]`` is (n_rows, n_classes) votes of part i."""
    remaining = list(range(len(part_votes)))
    target = len(part_votes) if target_parts is None else max(1, min(target_parts, len(part_votes)))
    current = np.zeros_like(part_votes[0], dtype=np.float64)
    order: list[int] = []
    path: list[float] = []
    while remaining and len(order) < target:
        weights = 1.0 / (1.0 + np.abs(_margins(current, y))) if order else np.ones(y.size)
        scored = []
        for i in remaining:
            correct = np.argmax(current + part_votes[i], axis=1) == y
            scored.append((float(correct.mean()), float(weights[correct].sum()), -i))
        acc, _, neg_i = max(scored)
        order.append(-neg_i)
        remaining.remove(-neg_i)
        current += part_votes[-neg_i]
        path.append(acc)
    best = max(path)
    k = max(i for i, acc in enumerate(path) if acc >= best - min_gain) + 1
    return Selection(tuple(order[:k]), tuple(sorted(order[k:] + remaining)), tuple(path[:k]))
