"""Selective aggregation: greedily keep the parties whose trees help, on validation data.

Forward selection (in the spirit of incremental ensemble selection): start
from no party; at each step add the party that gives the ensemble the highest
validation accuracy; ties go to the larger margin-weighted importance, where a
row's weight is ``1 / (1 + |margin|)`` with ``margin`` the current ensemble's
probability (or vote share) of the true class minus the best other class
(rows the ensemble barely gets right or wrong count most).  A candidate set
is scored as the model it would make: with leaf counts, the log-linear pooling
of exactly those parties (:class:`edprf_core.prediction.PartPooling`, what the merged
forest of the set predicts); with label trees, the sum of their votes.  The order is run to the end (or the
target size); the kept set is the longest prefix that reaches the best
validation accuracy (minus ``min_gain``, a tolerance the operator may set),
so a party is dropped when adding it lowers validation accuracy; it never holds fewer than ``min_parts`` parts
(the coordinator's floor: its ``min-parties`` and the three parts from which the merge bounds one party's say, so
that a party whose release scores best on the validation rows, an honest one or one that skipped its noise, cannot
be made the whole model by the selection).  Runs on the coordinator's validation data only:
post-processing of the releases, so each party's epsilon is unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
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


def _summed_votes(part_votes: Sequence[NDArray[np.int64]]) -> Callable[[list[int]], NDArray[np.float64]]:
    def scores(parts: list[int]) -> NDArray[np.float64]:
        return np.sum([part_votes[i] for i in parts], axis=0, dtype=np.float64)

    return scores


def select_parties(
    parts: Sequence[NDArray[np.int64]] | object,
    y: NDArray[np.int64],
    target_parts: int | None = None,
    min_gain: float = 0.0,
    min_parts: int = 1,
) -> Selection:
    """Greedy forward selection over parts.

    ``parts`` is either a list of (n_rows, n_classes) vote arrays, one per part
    (a set is scored by its summed votes), or an object with ``n_parts`` and
    ``pool(indices) -> (n_rows, n_classes)`` probabilities of the model made of
    those parts (:class:`edprf_core.prediction.PartPooling`).  At least ``min_parts`` parts are kept (all of
    them when there are fewer), whatever ``target_parts`` and the accuracies say.
    """
    if hasattr(parts, "pool"):
        n_parts, scores = int(parts.n_parts), parts.pool
    else:
        n_parts, scores = len(parts), _summed_votes(parts)
    remaining = list(range(n_parts))
    floor = min(max(1, min_parts), n_parts)
    target = n_parts if target_parts is None else max(floor, min(target_parts, n_parts))
    current: NDArray[np.float64] | None = None
    order: list[int] = []
    path: list[float] = []
    while remaining and len(order) < target:
        weights = 1.0 / (1.0 + np.abs(_margins(current, y))) if current is not None else np.ones(y.size)
        scored = []
        for i in remaining:
            correct = np.argmax(scores([*order, i]), axis=1) == y
            scored.append((float(correct.mean()), float(weights[correct].sum()), -i))
        acc, _, neg_i = max(scored)
        order.append(-neg_i)
        remaining.remove(-neg_i)
        current = scores(order)
        path.append(acc)
    best = max(path)
    k = max(floor, max(i for i, acc in enumerate(path) if acc >= best - min_gain) + 1)
    return Selection(tuple(order[:k]), tuple(sorted(order[k:] + remaining)), tuple(path[:k]))
