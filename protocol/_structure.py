"""Bounded structural checks of untrusted trees before and around ``ForestArrays.validate``.

``ForestArrays.validate`` is the authority on what a valid tree is.  Two
things must happen before it can safely run on hostile arrays:

1. Size caps.  A tree of depth ``D`` has at most ``2**(D+1) - 1`` nodes
   (binary) or ``1 + sum_k prod(k largest n_codes)`` nodes (multiway, a
   feature at most once per path); arrays longer than that are refused
   before any numpy array is built.
2. Bounded depth.  ``validate`` computes depths by repeated propagation,
   one pass per level, *before* it compares the depth with ``max_depth``, so
   a long chain costs passes proportional to its length.  Here the nodes are
   walked level by level, at most ``max_depth + 1`` vectorized passes over all
   trees at once, and the layout must be the one ``edprf_core`` documents:
   breadth-first from the root, each node's children a contiguous block placed
   right after the blocks of the nodes before it.  That walk alone proves
   there are no cycles, shared or dangling children.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from edprf_core.encoding import FeatureGrid
from edprf_core.forest import ForestArrays, TreeStructureError, max_tree_nodes

from ._errors import InvalidRelease, Reason

__all__ = ["check_trees", "max_nodes_per_tree"]

# validate() messages that name a value outside the declared domain
_DOMAIN_MESSAGES = ("feature index", "leaf class", "split value")


def max_nodes_per_tree(grid: FeatureGrid, split_mode: str, max_depth: int) -> int:
    """Largest number of nodes a valid tree of depth ``max_depth`` can have on ``grid``."""
    return max_tree_nodes(grid.n_codes, split_mode, max_depth)


def _concatenated_ranges(lo: NDArray[np.int64], hi: NDArray[np.int64]) -> NDArray[np.int64]:
    """``concatenate([arange(a, b) for a, b in zip(lo, hi)])`` without a Python loop."""
    counts = hi - lo
    starts = np.cumsum(counts) - counts
    return np.arange(int(counts.sum()), dtype=np.int64) - np.repeat(starts - lo, counts)


def _children_per_node(trees: ForestArrays, grid: FeatureGrid, split_mode: str) -> NDArray[np.int64]:
    n_features = len(grid.n_codes)
    feature = trees.feature
    outside = (feature < -1) | (feature >= n_features)
    if np.any(outside):
        i = int(np.flatnonzero(outside)[0])
        raise InvalidRelease(
            Reason.INDEX_OUT_OF_RANGE, f"node {i}: feature index expected -1..{n_features - 1}, got {int(feature[i])}"
        )
    internal = feature >= 0
    if split_mode == "binary":
        return np.where(internal, 2, 0).astype(np.int64)
    n_codes = np.asarray(grid.n_codes, dtype=np.int64)
    return np.where(internal, n_codes[np.maximum(feature, 0)], 0)


def _check_breadth_first(trees: ForestArrays, n_children: NDArray[np.int64], max_depth: int) -> None:
    """Walk all trees level by level; refuse any layout but breadth-first within ``max_depth``."""
    offsets = trees.tree_offsets
    base, end = offsets[:-1], offsets[1:]
    n_trees = base.size
    first_child = trees.first_child.astype(np.int64)
    lo, hi = base.copy(), base + 1
    for level in range(max_depth + 1):
        counts = hi - lo
        if not counts.any():
            break
        nodes = _concatenated_ranges(lo, hi)
        tree_of = np.repeat(np.arange(n_trees), counts)
        nc = n_children[nodes]
        if level == max_depth and nc.any():
            i = int(nodes[np.flatnonzero(nc)[0]])
            raise InvalidRelease(
                Reason.BAD_STRUCTURE,
                f"node {i}: a split at depth {level}, expected leaves only at the declared max_depth {max_depth}",
            )
        per_tree = np.bincount(tree_of, weights=nc, minlength=n_trees).astype(np.int64)
        before_node = np.cumsum(nc) - nc
        before_tree = np.cumsum(per_tree) - per_tree
        expected = hi[tree_of] - base[tree_of] + before_node - before_tree[tree_of]
        wrong = (nc > 0) & (first_child[nodes] != expected)
        if np.any(wrong):
            j = int(np.flatnonzero(wrong)[0])
            t = int(tree_of[j])
            raise InvalidRelease(
                Reason.BAD_STRUCTURE,
                f"tree {t}, node {int(nodes[j] - base[t])}: first_child expected {int(expected[j])} "
                f"(breadth-first layout), got {int(first_child[nodes[j]])}",
            )
        lo, hi = hi, hi + per_tree
        beyond = hi > end
        if np.any(beyond):
            t = int(np.flatnonzero(beyond)[0])
            raise InvalidRelease(
                Reason.BAD_STRUCTURE,
                f"tree {t}: children up to node {int(hi[t] - base[t]) - 1}, expected at most "
                f"{int(end[t] - base[t]) - 1} (the tree's last node)",
            )
    dangling = hi != end
    if np.any(dangling):
        t = int(np.flatnonzero(dangling)[0])
        raise InvalidRelease(
            Reason.BAD_STRUCTURE,
            f"tree {t}: expected {int(end[t] - base[t])} nodes reachable from the root, got {int(hi[t] - base[t])}",
        )


def check_trees(
    trees: ForestArrays, grid: FeatureGrid, n_classes: int, split_mode: str, max_depth: int
) -> NDArray[np.int32]:
    """Check untrusted trees; return node depths.

    Parameters
    ----------
    trees : ForestArrays
        int64 offsets (increasing, from 0, >= 1 node per tree) and int32 node
        arrays, with sizes already capped by :func:`max_nodes_per_tree`.
    grid : FeatureGrid
    n_classes : int
    split_mode : {"binary", "multiway"}
    max_depth : int

    Raises
    ------
    InvalidRelease
        ``index_out_of_range`` for features, thresholds, categories or
        classes outside the declared domain; ``bad_structure`` otherwise.
    """
    n_children = _children_per_node(trees, grid, split_mode)
    _check_breadth_first(trees, n_children, max_depth)
    try:
        return trees.validate(grid, n_classes, split_mode, max_depth)
    except TreeStructureError as exc:
        message = str(exc)
        reason = Reason.INDEX_OUT_OF_RANGE if message.startswith(_DOMAIN_MESSAGES) else Reason.BAD_STRUCTURE
        raise InvalidRelease(reason, message) from None
