"""Feature importances from the released structure and noisy counts only.

A tree that released counts (``leaf="counts"``) says how many rows of each
class it saw at every leaf, with noise; summing a node's leaves gives its
noisy class counts (consistency up the tree, as in
:mod:`edprf_core._leaf_distribution`).  A split's importance is the decrease
in weighted Gini impurity it makes on those released counts,
``n_v * G(v) - sum_c n_c * G(c)``, with ``n`` a node's noisy total and ``G``
the Gini impurity of its noisy class mix, floored at 0 (noise can make it
negative).  A tree that released labels only has no counts: each of its
splits gets the weight ``branching ** -depth`` of the node (the share of
root-to-leaf paths through it, a public quantity), the classic split-count
importance.  Each tree's importances are normalized to sum to 1 and the
forest's are the mean over trees.

A forest with a marginals part (``marginals_share = s > 0``) predicts with
both parts, weighted ``s`` and ``1 - s`` in log space, so a feature's
importance is the same mix: ``(1 - s) * trees' importance + s * marginals'
importance``, renormalized to sum to 1 (a forest of stumps then gets the
marginals' importances alone).  A feature's marginals importance is the
spread of the evidence it adds: per bin of its noisy histogram, the range
over classes of the log-ratio ``log(p_j(c | bin) / q_j(c))`` its
predictions use (:func:`edprf_core._marginals.marginal_log_ratio_tables`;
with two classes, how far the bin moves the log-odds), averaged over the
bins weighted by their released noisy row counts (floored at 0; equal
weights when every count is 0), then normalized over features.  A bin whose
counts are small against the noise adds little here (its weight is its small floored count), though its own
log-ratio is noise, not zero (what a row reaching it gets: support 'low').

Privacy cost: none.  Only released values (structure, clamped noisy counts,
noisy marginals) and public parameters are read; no data, public or
private, is used (post-processing theorem).  The noise stays in: with small
ε or small leaves the importances are noisy too.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from ._forest import DPForest, check_is_forest
from ._marginals import NoisyMarginals, marginal_log_ratio_tables

__all__ = ["marginals_importances", "released_importances"]


def _gini(counts: NDArray[np.float64]) -> NDArray[np.float64]:
    total = counts.sum(axis=1)
    share = np.divide(counts, total[:, None], out=np.zeros_like(counts), where=total[:, None] > 0)
    return 1.0 - (share**2).sum(axis=1)


def _normalized(values: NDArray[np.float64]) -> NDArray[np.float64]:
    total = values.sum()
    return values / total if total > 0 else np.zeros_like(values)


def marginals_importances(marginals: NoisyMarginals) -> NDArray[np.float64]:
    """Each feature's spread of evidence in the marginals, shape (n_features,), summing to 1 (or all 0).

    See the module docstring for the rule.  Privacy cost: none (post-processing of the noisy marginals).
    """
    _, tables = marginal_log_ratio_tables(marginals)
    spread = np.zeros(marginals.n_features)
    for j, (table, counts) in enumerate(zip(tables, marginals.counts)):
        rows = np.maximum(counts, 0).sum(axis=1).astype(np.float64)
        weight = rows / rows.sum() if rows.sum() > 0 else np.full(rows.size, 1.0 / rows.size)
        spread[j] = float(weight @ (table.max(axis=1) - table.min(axis=1)))
    return _normalized(spread)


def released_importances(forest: DPForest) -> NDArray[np.float64]:
    """Importance of every feature, shape (n_features,), summing to 1 (all 0 for a forest of stumps).

    With a marginals part: ``(1 - s)`` times the trees' importances plus ``s`` times
    :func:`marginals_importances`, renormalized.  See the module docstring for the rule.  Privacy cost: none
    (post-processing of released values; reads no data).
    """
    check_is_forest(forest, "released_importances", marginals_supported=True)
    trees = _tree_importances(forest)
    if forest.marginals is None:
        return trees
    s = forest.marginals_share
    return _normalized((1.0 - s) * trees + s * marginals_importances(forest.marginals))


def _tree_importances(forest: DPForest) -> NDArray[np.float64]:
    """The trees' importances (module docstring), summing to 1 or all 0."""
    trees = forest.trees
    n_features = forest.schema.n_features
    depth, parent = trees.depths_and_parents()
    tree_of = trees.tree_of_node()
    has = trees.has_counts()
    internal = np.flatnonzero(trees.feature >= 0)
    gain = np.zeros(trees.n_nodes)
    if has.any():
        sums = np.where(has[:, None], trees.leaf_counts, 0).astype(np.float64)
        for level in range(int(depth.max(initial=0)), 0, -1):
            nodes = np.flatnonzero(depth == level)
            np.add.at(sums, parent[nodes], sums[nodes])
        weighted = sums.sum(axis=1) * _gini(sums)
        children = np.zeros(trees.n_nodes)
        child = np.flatnonzero(parent >= 0)
        np.add.at(children, parent[child], weighted[child])
        gain = np.maximum(weighted - children, 0.0)
    count_tree = trees.tree_has_counts()[tree_of]
    n_children = trees.n_children(forest.grid, forest.split_mode).astype(np.float64)
    path_share = np.ones(trees.n_nodes)
    for level in range(1, int(depth.max(initial=0)) + 1):
        nodes = np.flatnonzero(depth == level)
        path_share[nodes] = path_share[parent[nodes]] / n_children[parent[nodes]]
    gain = np.where(count_tree, gain, path_share)
    per_tree = np.zeros((trees.n_trees, n_features))
    np.add.at(per_tree, (tree_of[internal], trees.feature[internal]), gain[internal])
    totals = per_tree.sum(axis=1, keepdims=True)
    per_tree = np.divide(per_tree, totals, out=np.zeros_like(per_tree), where=totals > 0)
    return per_tree.mean(axis=0)
