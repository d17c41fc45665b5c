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

Privacy cost: none.  Only released values (structure, clamped noisy counts)
and public parameters are read; no data, public or private, is used.  The
noise stays in: with small ε or small leaves the importances are noisy too.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from ._forest import DPForest, check_is_forest

__all__ = ["released_importances"]


def _gini(counts: NDArray[np.float64]) -> NDArray[np.float64]:
    total = counts.sum(axis=1)
    share = np.divide(counts, total[:, None], out=np.zeros_like(counts), where=total[:, None] > 0)
    return 1.0 - (share**2).sum(axis=1)


def released_importances(forest: DPForest) -> NDArray[np.float64]:
    """Importance of every feature, shape (n_features,), summing to 1 (all 0 for a forest of stumps).

    See the module docstring for the rule.  Privacy cost: none
    (post-processing of released values; reads no data).
    """
    check_is_forest(forest, "released_importances")
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
