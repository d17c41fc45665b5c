"""Selective aggregation: greedily keep the parties whose trees help, on validation data.

Forward selection (in the spirit of incremental ensemble selection): start
from no party; at each step add the party whose trees raise validation
accuracy of the ensemble the most; ties go to the larger margin-weighted
importance, where a row's weight is ``1 / (1 + margin)`` with ``margin`` the
current ensemble's vote share of the true class minus the best other class
(rows the ensemble barely gets right or wrong count most).  Stop at the target
size, or when no party raises accuracy.  Runs on the coordinator's validation
data only: post-processing of the releases, so each party's ε is unchanged.
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
    kept: list[int] = []
    path: list[float] = []
    best_acc = -1.0
    while remaining and len(kept) < target:
        weights = 1.0 / (1.0 + np.abs(_margins(current, y))) if kept else np.ones(y.size)
        scored = []
        for i in remaining:
            trial = current + part_votes[i]
            correct = np.argmax(trial, axis=1) == y
            scored.append((float(correct.mean()), float(weights[correct].sum()), -i))
        acc, _, neg_i = max(scored)
        if kept and acc <= best_acc + min_gain:
            break
        i = -neg_i
        kept.append(i)
        remaining.remove(i)
        current += part_votes[i]
        best_acc = acc
        path.append(acc)
    return Selection(tuple(kept), tuple(sorted(remaining)), tuple(path))
