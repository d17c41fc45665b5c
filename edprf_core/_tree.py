"""Flat (struct-of-arrays) representation of a forest of DP trees.

All trees of a forest live in five parallel arrays; ``tree_offsets[t]`` is the
first row of tree ``t``.  Within a tree, nodes are numbered from 0 (the root)
in breadth-first order and ``first_child`` is a tree-local index; the children
of a node are ``first_child .. first_child + n_children - 1``.

Node encoding
-------------
- ``feature``: feature index of a split node, -1 for a leaf.
- ``split``: for ``binary`` trees, the threshold's edge index ``j`` of a
  continuous feature (rows with bin code < j go to the first child) or the
  category code ``c`` of a categorical feature (rows with code == c go to the
  first child); -1 in ``multiway`` trees (child i takes code i) and in leaves.
- ``first_child``: tree-local index of the first child; -1 for a leaf.
- ``leaf_class``: declared class index of a leaf; -1 for a split node.
- ``leaf_counts`` (optional, shape ``(n_nodes, n_classes)``): the class counts
  a leaf released with discrete Laplace noise, clamped at 0
  (``leaf="counts"``); rows of split nodes, and of leaves of trees that
  release labels only, are -1.

Nothing in this structure is an exact count, a size or any other
data-derived value: only the outputs of DP mechanisms (which feature, which
threshold, which class, noisy class counts) and the public grid.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from ._encoding import FeatureGrid
from ._exceptions import EDPRFError

__all__ = ["MAX_FIT_NODES", "MAX_LEAF_COUNT", "ForestArrays", "SplitMode", "TreeStructureError", "max_tree_nodes"]

MAX_LEAF_COUNT = 2**31 - 1
"""Largest noisy class count a leaf may carry (a public bound checked on decode)."""

MAX_FIT_NODES = 2**22
"""Most nodes one fit of binary trees may build, over all its trees (4,194,304: one tree of depth 21); checked
before the charge from the public options (a multiway tree's worst case is far above what it builds: not checked).
Building holds each layer's path state, one byte per node and grid code (a few copies), and selects a layer's splits
in blocks of at most 256 MiB: one tree of depth 19 on bank marketing (1,048,523 nodes, 84 codes) took 0.54 GB, one
of depth 18 on a grid of 2,296 codes (10^5 rows, 10 classes, 524,287 nodes) 1.2 GB.  Before the blocks (0.2.4) the
second needed about 14 GB and ran out of memory after its ε was charged."""


def max_tree_nodes(n_codes: Sequence[int], split_mode: str, max_depth: int) -> int:
    """Most nodes a tree of depth ``max_depth`` can have: every node of a binary tree, and in a multiway tree the
    widest features first (each at most once per path).  ``n_codes``: each feature's codes on the public grid.
    Privacy cost: none (public shape)."""
    if split_mode == "binary":
        return 2 ** (max_depth + 1) - 1
    widths = sorted(n_codes, reverse=True)[:max_depth]
    total, layer = 1, 1
    for width in widths:
        layer *= width
        total += layer
    return total


SplitMode = Literal["binary", "multiway"]
SPLIT_MODES: tuple[str, ...] = ("binary", "multiway")
_FIELDS = ("feature", "split", "first_child", "leaf_class")


class TreeStructureError(EDPRFError, ValueError):
    """Arrays that do not describe valid trees on the given grid."""


@dataclass(frozen=True, eq=False)
class ForestArrays:
    """The trees of a forest as flat arrays (see the module docstring)."""

    tree_offsets: NDArray[np.int64]
    feature: NDArray[np.int32]
    split: NDArray[np.int32]
    first_child: NDArray[np.int32]
    leaf_class: NDArray[np.int32]
    leaf_counts: NDArray[np.int64] | None = None

    @property
    def n_trees(self) -> int:
        return int(self.tree_offsets.size - 1)

    @property
    def n_nodes(self) -> int:
        return int(self.feature.size)

    def tree(self, t: int) -> dict[str, NDArray[np.int32]]:
        """The arrays of tree ``t`` (views)."""
        if not 0 <= t < self.n_trees:
            raise IndexError(f"tree index {t} out of range for {self.n_trees} trees")
        a, b = int(self.tree_offsets[t]), int(self.tree_offsets[t + 1])
        out = {name: getattr(self, name)[a:b] for name in _FIELDS}
        if self.leaf_counts is not None:
            out["leaf_counts"] = self.leaf_counts[a:b]
        return out

    @property
    def n_count_classes(self) -> int:
        """Classes of ``leaf_counts`` (0 when no tree carries counts)."""
        return 0 if self.leaf_counts is None else int(self.leaf_counts.shape[1])

    def has_counts(self) -> NDArray[np.bool_]:
        """Per node: whether it is a leaf that released class counts."""
        if self.leaf_counts is None:
            return np.zeros(self.n_nodes, dtype=bool)
        return (self.feature < 0) & (self.leaf_counts[:, 0] >= 0)

    def tree_of_node(self) -> NDArray[np.int64]:
        """Per node: the index of its tree."""
        return np.repeat(np.arange(self.n_trees), np.diff(self.tree_offsets))

    def tree_has_counts(self) -> NDArray[np.bool_]:
        """Per tree: whether any of its leaves released class counts."""
        return np.bincount(self.tree_of_node()[self.has_counts()], minlength=self.n_trees) > 0

    @classmethod
    def from_trees(cls, trees: Sequence[dict[str, NDArray]]) -> ForestArrays:
        """Concatenate per-tree arrays (dicts with the four node fields, optionally ``leaf_counts``).

        Trees without ``leaf_counts`` get rows of -1 when another tree has counts.
        """
        sizes = [len(t["feature"]) for t in trees]
        offsets = np.zeros(len(trees) + 1, dtype=np.int64)
        np.cumsum(sizes, out=offsets[1:])
        fields = {}
        for name in _FIELDS:
            parts = [np.asarray(t[name], dtype=np.int32) for t in trees]
            fields[name] = np.concatenate(parts) if parts else np.empty(0, dtype=np.int32)
        widths = {np.asarray(t["leaf_counts"]).shape[1] for t in trees if t.get("leaf_counts") is not None}
        if len(widths) > 1:
            raise TreeStructureError(f"leaf counts: expected one number of classes, got {sorted(widths)}")
        if widths:
            k = widths.pop()
            fields["leaf_counts"] = np.concatenate(
                [
                    np.asarray(t["leaf_counts"], dtype=np.int64)
                    if t.get("leaf_counts") is not None
                    else np.full((n, k), -1, dtype=np.int64)
                    for t, n in zip(trees, sizes)
                ]
            )
        return cls(tree_offsets=offsets, **fields)

    @classmethod
    def concatenate(cls, forests: Sequence[ForestArrays]) -> ForestArrays:
        """Stack the trees of several forests (the federation's merge primitive)."""
        return cls.from_trees([f.tree(t) for f in forests for t in range(f.n_trees)])

    def equals(self, other: ForestArrays) -> bool:
        if (self.leaf_counts is None) != (other.leaf_counts is None):
            return False
        same_counts = self.leaf_counts is None or np.array_equal(self.leaf_counts, other.leaf_counts)
        return (
            same_counts
            and np.array_equal(self.tree_offsets, other.tree_offsets)
            and all(np.array_equal(getattr(self, n), getattr(other, n)) for n in _FIELDS)
        )

    def n_children(self, grid: FeatureGrid, split_mode: str) -> NDArray[np.int64]:
        """Children of each node: 2 (binary split), the feature's codes (multiway), 0 (leaf)."""
        internal = self.feature >= 0
        if split_mode == "binary":
            return np.where(internal, 2, 0).astype(np.int64)
        n_codes = np.asarray(grid.n_codes, dtype=np.int64)
        return np.where(internal, n_codes[np.maximum(self.feature, 0)], 0)

    def depths_and_parents(self) -> tuple[NDArray[np.int32], NDArray[np.int64]]:
        """Depth of every node and the global index of its parent (-1 at roots).

        Assumes valid trees (see :meth:`validate`); children blocks end where
        the next block (or the tree) starts, which breadth-first order ensures.
        """
        parent = np.full(self.n_nodes, -1, dtype=np.int64)
        tree_of = self.tree_of_node()
        internal = np.flatnonzero(self.feature >= 0)
        starts = self.tree_offsets[tree_of[internal]] + self.first_child[internal]
        order = np.argsort(starts, kind="stable")
        internal, starts = internal[order], starts[order]
        ends = np.append(starts[1:], 0)
        tree_end = self.tree_offsets[tree_of[internal] + 1]
        same_tree = np.append(tree_of[internal][1:] == tree_of[internal][:-1], False)
        ends = np.where(same_tree, ends, tree_end)
        counts = ends - starts
        child_index = np.repeat(starts, counts) + (
            np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
        )
        parent[child_index] = np.repeat(internal, counts)
        return _propagate_depth(parent), parent

    # ------------------------------------------------------------ validation
    def validate(
        self,
        grid: FeatureGrid,
        n_classes: int,
        split_mode: str,
        max_depth: int | None = None,
    ) -> NDArray[np.int32]:
        """Check that the arrays form proper trees on ``grid``; return node depths.

        Checks, per tree: indices in range; every node reached from the root
        exactly once (no cycles, no shared children, no dangling nodes); child
        blocks inside the tree; split values on the public grid; leaves carry
        a declared class; depth at most ``max_depth``.  Raises
        :class:`TreeStructureError` with "expected X, got Y" messages.
        """
        if split_mode not in SPLIT_MODES:
            raise TreeStructureError(f"split mode: expected one of {SPLIT_MODES}, got {split_mode!r}")
        off = np.asarray(self.tree_offsets)
        n = self.n_nodes
        if off.ndim != 1 or off.size < 2 or off[0] != 0 or off[-1] != n or np.any(np.diff(off) < 1):
            raise TreeStructureError(f"tree offsets: expected increasing offsets from 0 to {n} with >= 1 node per tree")
        for name in _FIELDS:
            arr = getattr(self, name)
            if arr.shape != (n,) or arr.dtype != np.int32:
                raise TreeStructureError(f"{name}: expected int32 array of shape ({n},), got {arr.dtype} {arr.shape}")
        feature, split, first, leaf = self.feature, self.split, self.first_child, self.leaf_class
        F = len(grid.n_codes)
        n_codes = np.asarray(grid.n_codes, dtype=np.int64)
        is_cat = np.asarray(grid.is_categorical, dtype=bool)
        is_leaf = feature == -1
        internal = ~is_leaf
        if np.any((feature < -1) | (feature >= F)):
            raise TreeStructureError(
                f"feature index: expected -1..{F - 1}, got {int(feature[(feature < -1) | (feature >= F)][0])}"
            )
        if np.any(leaf[is_leaf] < 0) or np.any(leaf[is_leaf] >= n_classes):
            bad = leaf[is_leaf][(leaf[is_leaf] < 0) | (leaf[is_leaf] >= n_classes)][0]
            raise TreeStructureError(f"leaf class: expected 0..{n_classes - 1}, got {int(bad)}")
        if np.any(leaf[internal] != -1) or np.any(first[is_leaf] != -1) or np.any(split[is_leaf] != -1):
            raise TreeStructureError(
                "node kind: expected leaves with first_child=-1, split=-1 and splits with leaf_class=-1"
            )
        if self.leaf_counts is not None:
            _check_leaf_counts(self.leaf_counts, is_leaf, n_classes)
        f_int = feature[internal].astype(np.int64)
        s_int = split[internal].astype(np.int64)
        if split_mode == "multiway":
            if np.any(s_int != -1):
                raise TreeStructureError("split value: expected -1 in multiway trees")
            n_children = np.where(internal, n_codes[np.maximum(feature, 0)], 0)
        else:
            cat = is_cat[f_int]
            lo = np.where(cat, 0, 1)
            hi = np.where(cat, n_codes[f_int] - 1, n_codes[f_int] - 1)
            bad = (s_int < lo) | (s_int > hi)
            if np.any(bad):
                i = int(np.flatnonzero(bad)[0])
                raise TreeStructureError(
                    f"split value of feature {int(f_int[i])}: expected {int(lo[i])}..{int(hi[i])}, got {int(s_int[i])}"
                )
            n_children = np.where(internal, 2, 0)
        depth = np.full(n, -1, dtype=np.int32)
        for t in range(self.n_trees):
            a, b = int(off[t]), int(off[t + 1])
            size = b - a
            fc = first[a:b].astype(np.int64)
            nc = n_children[a:b]
            parents = np.flatnonzero(nc > 0)
            if np.any(fc[parents] < 1) or np.any(fc[parents] + nc[parents] > size):
                raise TreeStructureError(f"tree {t}: child offsets out of range 1..{size - 1}")
            incoming = np.zeros(size, dtype=np.int64)
            starts = fc[parents]
            # each child block [start, start + k) adds 1 to its members
            np.add.at(incoming, starts, 1)
            ends = starts + nc[parents]
            ends_in = ends[ends < size]
            np.add.at(incoming, ends_in, -1)
            incoming = np.cumsum(incoming)
            if incoming[0] != 0 or np.any(incoming[1:] != 1):
                raise TreeStructureError(
                    f"tree {t}: expected every non-root node to have exactly one parent and the root none"
                )
            if parents.size and (starts[0] != 1 or np.any(np.diff(starts) <= 0)):
                raise TreeStructureError(
                    f"tree {t}: expected breadth-first order (child blocks in the order of their parents)"
                )
            parent_of = np.empty(size, dtype=np.int64)
            parent_of[0] = -1
            parent_of[1:] = np.repeat(parents, nc[parents])
            if np.any(parent_of[1:] >= np.arange(1, size)):
                raise TreeStructureError(f"tree {t}: expected children numbered after their parent (no cycles)")
            d = _propagate_depth(parent_of, max_depth)
            depth[a:b] = d
            if max_depth is not None and d.max() > max_depth:
                raise TreeStructureError(f"tree {t}: depth expected <= {max_depth}, got {int(d.max())}")
            if split_mode == "multiway" and size > 1:
                _check_features_once_per_path(t, parent_of, feature[a:b], d, F)
        return depth


def _check_leaf_counts(counts: NDArray, is_leaf: NDArray[np.bool_], n_classes: int) -> None:
    n = is_leaf.size
    if not isinstance(counts, np.ndarray) or counts.dtype != np.int64 or counts.shape != (n, n_classes):
        got = f"{counts.dtype} {counts.shape}" if isinstance(counts, np.ndarray) else type(counts).__name__
        raise TreeStructureError(f"leaf counts: expected int64 array of shape ({n}, {n_classes}), got {got}")
    if np.any(counts[~is_leaf] != -1):
        raise TreeStructureError("leaf counts: expected -1 in every row of a split node")
    rows = counts[is_leaf]
    none = np.all(rows == -1, axis=1)
    bad = ~none & (np.any(rows < 0, axis=1) | np.any(rows > MAX_LEAF_COUNT, axis=1))
    if np.any(bad):
        raise TreeStructureError(
            f"leaf counts: expected a leaf's counts all in 0..{MAX_LEAF_COUNT} (or all -1), "
            f"got {rows[np.flatnonzero(bad)[0]].tolist()}"
        )


def _propagate_depth(parent_of: NDArray[np.int64], limit: int | None = None) -> NDArray[np.int32]:
    """Depth of each node from parent pointers (parents precede children).

    One vectorized pass per level.  With ``limit``, stops after ``limit + 1``
    passes and returns depths capped at ``limit + 1``, so a hostile chain a
    million levels deep costs ``limit`` passes, not a million.
    """
    d = np.zeros(parent_of.size, dtype=np.int32)
    child = parent_of >= 0
    passes = 0
    while limit is None or passes <= limit:
        new = np.where(child, d[np.maximum(parent_of, 0)] + 1, 0).astype(np.int32)
        passes += 1
        if np.array_equal(new, d):
            return d
        d = new
    return np.minimum(d, limit + 1)


def _check_features_once_per_path(
    t: int, parent_of: NDArray[np.int64], feature: NDArray[np.int32], depth: NDArray[np.int32], n_features: int
) -> None:
    """Multiway trees use a feature at most once on any root-to-leaf path."""
    size = parent_of.size
    used = np.zeros((size, n_features), dtype=bool)
    for level in range(1, int(depth.max()) + 1):
        nodes = np.flatnonzero(depth == level)
        parents = parent_of[nodes]
        used[nodes] = used[parents]
        used[nodes, feature[parents]] = True
    internal = np.flatnonzero(feature >= 0)
    if np.any(used[internal, feature[internal]]):
        raise TreeStructureError(f"tree {t}: expected each feature at most once per path in a multiway tree")
