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

After ``validate``, two rules of the builder (:mod:`edprf_core._builder`), which
make a tree's shape depend on the data only through its DP split choices:

3. Every split is a candidate on its path: it divides the codes its path
   still admits on its feature in two non-empty parts (binary: a threshold
   inside the path's interval of a continuous feature, a category the path
   has neither fixed nor excluded while another is left; multiway: a feature
   of at least two codes, once per path).
4. A leaf above the depth limit (``max_depth``, the release's: under an
   automatic depth rule the party's choice, at most the request's) has no
   candidate left on its path (binary: no feature with two codes the path
   still admits; multiway: every feature of two codes or more used).  Only a
   release that says ``dp = false`` (research: ``stop_when_pure``) may stop a
   path early.

Both are walked with per-level numpy passes (a split's ancestors, at most
``max_depth`` steps; the count of still-splittable features, one pass per
level) and O(1) memory per node.
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
    trees: ForestArrays, grid: FeatureGrid, n_classes: int, split_mode: str, max_depth: int, dp: bool = True
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
    dp : bool, default True
        The release's ``dp`` parameter.  True: a leaf above ``max_depth``
        must have no split candidate left on its path (rule 4 of the module
        docstring); False (research, ``stop_when_pure``): leaves may stop
        anywhere.  Splits must be candidates on their path either way.

    Raises
    ------
    InvalidRelease
        ``index_out_of_range`` for features, thresholds, categories or
        classes outside the declared domain; ``bad_structure`` otherwise.
    """
    n_children = _children_per_node(trees, grid, split_mode)
    _check_breadth_first(trees, n_children, max_depth)
    try:
        depth = trees.validate(grid, n_classes, split_mode, max_depth)
    except TreeStructureError as exc:
        message = str(exc)
        reason = Reason.INDEX_OUT_OF_RANGE if message.startswith(_DOMAIN_MESSAGES) else Reason.BAD_STRUCTURE
        raise InvalidRelease(reason, message) from None
    _check_paths(trees, grid, split_mode, max_depth, depth, n_children, dp)
    return depth


def _first_children(trees: ForestArrays, nodes: NDArray[np.int64]) -> NDArray[np.int64]:
    """Global index of the first child of each of ``nodes`` (split nodes of valid trees)."""
    return trees.tree_offsets[trees.tree_of_node()[nodes]] + trees.first_child[nodes].astype(np.int64)


def _parents_and_sides(
    trees: ForestArrays, n_children: NDArray[np.int64], internal: NDArray[np.int64], start: NDArray[np.int64]
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Global index of every node's parent (-1 at roots) and its place among its siblings (valid trees), from the
    split nodes ``internal`` and their first children ``start``."""
    parent = np.full(trees.n_nodes, -1, dtype=np.int64)
    side = np.zeros(trees.n_nodes, dtype=np.int64)
    if internal.size:
        count = n_children[internal]
        children = _concatenated_ranges(start, start + count)
        parent[children] = np.repeat(internal, count)
        side[children] = children - np.repeat(start, count)
    return parent, side


def _node_name(trees: ForestArrays, i: int) -> str:
    t = int(np.searchsorted(trees.tree_offsets, i, side="right")) - 1
    return f"tree {t}, node {i - int(trees.tree_offsets[t])}"


def _binary_path_state(
    trees: ForestArrays,
    grid: FeatureGrid,
    splits: NDArray[np.int64],
    parent: NDArray[np.int64],
    side: NDArray[np.int64],
    max_depth: int,
) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.bool_]]:
    """For each binary split node: the codes its path admits on its feature, and whether it is a candidate.

    Returns ``(left, right, valid)``: the codes of the split's feature each child's path admits, and whether
    the split divides the codes its own path admits in two non-empty parts.  Walks every split's ancestors
    (at most ``max_depth`` steps), keeping only those that split the same feature: a continuous feature's
    path admits an interval ``[lo, hi)`` of codes, a categorical one a single code (once the path went
    left on it) or the codes less the ones it excluded (going right).  The exclusions are distinct when
    every split above is valid; when one is not, the tree is refused on that split anyway.
    """
    feature = trees.feature.astype(np.int64)
    split = trees.split.astype(np.int64)
    n_codes = np.asarray(grid.n_codes, dtype=np.int64)
    is_cat = np.asarray(grid.is_categorical, dtype=bool)
    f, s = feature[splits], split[splits]
    cat = is_cat[f]
    k = n_codes[f]
    lo = np.zeros(splits.size, dtype=np.int64)
    hi = k.copy()
    pinned = np.zeros(splits.size, dtype=bool)
    repeated = np.zeros(splits.size, dtype=bool)
    excluded = np.zeros(splits.size, dtype=np.int64)
    active = np.arange(splits.size)
    below = splits.copy()  # the node on the path just below the ancestor being read
    for _ in range(max_depth):
        above = parent[below]
        keep = above >= 0
        active, below, above = active[keep], below[keep], above[keep]
        if not active.size:
            break
        same = feature[above] == f[active]
        a, b, went_left = active[same], split[above[same]], side[below[same]] == 0
        c = cat[a]  # each split appears once in ``a``: plain fancy indexing updates it
        lower, upper = a[~c & ~went_left], a[~c & went_left]
        lo[lower] = np.maximum(lo[lower], b[~c & ~went_left])
        hi[upper] = np.minimum(hi[upper], b[~c & went_left])
        pinned[a[c & went_left]] = True
        excluded[a[c & ~went_left]] += 1
        repeated[a[c & (b == s[a])]] = True
        below = above
    left = np.where(cat, 1, s - lo)
    right = np.where(cat, k - excluded - 1, hi - s)
    valid = np.where(cat, ~pinned & ~repeated & (k - excluded >= 2), (lo < s) & (s < hi))
    return left, right, valid


def _check_paths(
    trees: ForestArrays,
    grid: FeatureGrid,
    split_mode: str,
    max_depth: int,
    depth: NDArray[np.int32],
    n_children: NDArray[np.int64],
    dp: bool,
) -> None:
    """Rules 3 and 4 of the module docstring, on trees ``validate`` accepted."""
    n_codes = np.asarray(grid.n_codes, dtype=np.int64)
    splittable = int(np.count_nonzero(n_codes >= 2))  # features with a candidate at the root
    feature = trees.feature.astype(np.int64)
    splits = np.flatnonzero(feature >= 0)
    if split_mode == "multiway":
        bad = n_codes[feature[splits]] < 2
        if np.any(bad):
            i = int(splits[np.flatnonzero(bad)[0]])
            raise InvalidRelease(
                Reason.BAD_STRUCTURE,
                f"{_node_name(trees, i)}: a split on feature {int(feature[i])}, which has a single code "
                "(expected a split candidate: a feature of two codes or more)",
            )
        # each split on the path used a distinct feature of two codes or more (validate: once per path)
        left_open = splittable - depth.astype(np.int64)
    else:
        first = _first_children(trees, splits)
        parent, side = _parents_and_sides(trees, n_children, splits, first)
        left_codes, right_codes, valid = _binary_path_state(trees, grid, splits, parent, side, max_depth)
        if not np.all(valid):
            i = int(splits[np.flatnonzero(~valid)[0]])
            raise InvalidRelease(
                Reason.BAD_STRUCTURE,
                f"{_node_name(trees, i)}: a split on feature {int(feature[i])} at value {int(trees.split[i])} "
                f"that does not divide the codes its path leaves in two (expected a split candidate on its path)",
            )
        # a child closes its parent's feature when its path admits fewer than two of its codes
        closes = np.zeros(trees.n_nodes, dtype=np.int64)
        closes[first] = left_codes < 2
        closes[first + 1] = right_codes < 2
        left_open = np.full(trees.n_nodes, splittable, dtype=np.int64)
        order = np.argsort(depth, kind="stable")
        bounds = np.searchsorted(depth[order], np.arange(1, int(depth.max(initial=0)) + 2))
        for level in range(1, bounds.size):
            nodes = order[bounds[level - 1] : bounds[level]]
            left_open[nodes] = left_open[parent[nodes]] - closes[nodes]
    if not dp:
        return
    early = (feature < 0) & (depth < max_depth) & (left_open > 0)
    if np.any(early):
        i = int(np.flatnonzero(early)[0])
        raise InvalidRelease(
            Reason.BAD_STRUCTURE,
            f"{_node_name(trees, i)}: a leaf at depth {int(depth[i])} of a depth-{max_depth} tree with split "
            f"candidates left on its path ({int(left_open[i])} feature(s) it can still split)",
        )
