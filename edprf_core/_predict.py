"""Vectorized prediction: every tree and every row at once, level by level.

Each node keeps four numbers: its feature, its first child's global index, and
what the row's code of that feature adds to it: ``code >= split`` (continuous
binary split), ``code != split`` (categorical binary split) or
``min(code, n_codes - 1)`` (multiway).  Leaves route to themselves (their
first child is themselves and nothing is added).  One step is a handful of
numpy gathers over a (trees x rows) block, repeated ``depth`` times, with no
Python loop over rows or nodes.

Memory is 17 bytes per node whatever the grid, compiled in blocks of nodes so
that no temporary exceeds :data:`COMPILE_BLOCK_NODES` entries.  A dense routing
table (``next = table[node, code]``, one gather per step instead of four) costs
4 bytes per node and grid code, so a model's size would not bound it: it is
added only while it stays within :func:`dense_budget` (at most
:data:`DENSE_BYTES_PER_NODE` per node, or :data:`DENSE_FLOOR_BYTES` in all),
which keeps the fast path for every forest of ordinary size.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ._encoding import FeatureGrid
from ._tree import ForestArrays

__all__ = ["RoutingTable"]

_BLOCK_ELEMENTS = 1 << 16
COMPILE_BLOCK_NODES = 1 << 18
"""Nodes compiled per step (temporaries of a few arrays of this length)."""
BYTES_PER_NODE = 17
"""Memory of the compiled form per node: feature, split, first child, limit (int32) and a kind flag."""

DENSE_BYTES_PER_NODE = 64
"""A dense table is built when it costs at most this per node ..."""
DENSE_FLOOR_BYTES = 32 << 20
"""... or at most this in all."""


def dense_budget(n_nodes: int) -> int:
    """Largest dense routing table (bytes) :meth:`RoutingTable.compile` builds for ``n_nodes`` nodes."""
    return max(DENSE_FLOOR_BYTES, DENSE_BYTES_PER_NODE * int(n_nodes))


_NEVER = np.iinfo(np.int32).max  # a leaf's threshold: no code reaches it, so a leaf adds nothing


@dataclass(frozen=True, eq=False)
class RoutingTable:
    """Compiled form of a forest for prediction (derived from public structure only).

    ``step[node](code)`` is ``code >= threshold`` when ``categorical`` is False and
    ``code != threshold`` when True (binary trees), or ``min(code, limit)`` (multiway);
    the next node is ``first[node] + step``.  ``table`` (when not None) holds that next
    node for every node and code, ``width`` codes per node.
    """

    roots: NDArray[np.int32]
    feature: NDArray[np.int32]
    first: NDArray[np.int32]
    threshold: NDArray[np.int32]
    categorical: NDArray[np.bool_]
    leaf_class: NDArray[np.int32]
    multiway: bool
    depth: int
    any_categorical: bool = False
    table: NDArray[np.int32] | None = None
    width: int = 0

    @classmethod
    def compile(cls, forest: ForestArrays, grid: FeatureGrid, split_mode: str, depth: int) -> RoutingTable:
        n_codes = np.asarray(grid.n_codes, dtype=np.int64)
        is_cat = np.asarray(grid.is_categorical, dtype=bool)
        n = forest.n_nodes
        feature = np.empty(n, dtype=np.int32)
        first = np.empty(n, dtype=np.int32)
        threshold = np.empty(n, dtype=np.int32)
        categorical = np.zeros(n, dtype=bool)
        multiway = split_mode == "multiway"
        offsets = forest.tree_offsets
        for a in range(0, n, COMPILE_BLOCK_NODES):
            b = min(n, a + COMPILE_BLOCK_NODES)
            node = np.arange(a, b, dtype=np.int64)
            internal = forest.feature[a:b] >= 0
            f = np.where(internal, forest.feature[a:b], 0).astype(np.int64)
            tree = np.searchsorted(offsets, node, side="right") - 1
            feature[a:b] = f
            first[a:b] = np.where(internal, offsets[tree] + forest.first_child[a:b], node)
            if multiway:
                threshold[a:b] = np.where(internal, n_codes[f] - 1, 0)  # the limit: min(code, 0) = 0 at a leaf
            else:
                threshold[a:b] = np.where(internal, forest.split[a:b], _NEVER)
                categorical[a:b] = internal & is_cat[f]
        width = int(n_codes.max())
        table = None
        if 4 * n * width <= dense_budget(n):
            table = np.empty((n, width), dtype=np.int32)
            code = np.arange(width, dtype=np.int64)[None, :]
            for a in range(0, n, max(1, COMPILE_BLOCK_NODES // width)):
                b = min(n, a + max(1, COMPILE_BLOCK_NODES // width))
                limit = threshold[a:b, None].astype(np.int64)
                if multiway:
                    step = np.minimum(code, limit)
                else:
                    step = np.where(categorical[a:b, None], code != limit, code >= limit)
                table[a:b] = first[a:b, None] + step
            table = table.ravel()
        return cls(
            roots=offsets[:-1].astype(np.int32),
            feature=feature,
            first=first,
            threshold=threshold,
            categorical=categorical,
            leaf_class=forest.leaf_class.astype(np.int32),
            multiway=multiway,
            depth=int(depth),
            any_categorical=bool(categorical.any()),
            table=table,
            width=width,
        )

    def leaf_classes(self, codes: NDArray[np.int32], trees: slice) -> NDArray[np.int32]:
        """Class voted by each tree in ``trees`` for each row: shape (n_trees, n_rows)."""
        return self.leaf_class[self.leaves(codes, trees)]

    def leaves(self, codes: NDArray[np.int32], trees: slice = slice(None)) -> NDArray[np.int64]:
        """Global index of the leaf each row reaches in each tree of ``trees``: (n_trees, n_rows)."""
        n_rows, n_features = codes.shape
        flat = np.ascontiguousarray(codes, dtype=np.int32).ravel()
        row_base = (np.arange(n_rows, dtype=np.int64) * n_features)[None, :]
        node = np.repeat(self.roots[trees][:, None], n_rows, axis=1).astype(np.int64)
        if self.table is not None:
            width = np.int64(self.width)
            for _ in range(self.depth):
                node = self.table[node * width + flat[row_base + self.feature[node]]]
            return node.astype(np.int64, copy=False)
        for _ in range(self.depth):
            value = flat[row_base + self.feature[node]]
            limit = self.threshold[node]
            if self.multiway:
                step = np.minimum(value, limit)
            elif self.any_categorical:
                step = np.where(self.categorical[node], value != limit, value >= limit)
            else:
                step = value >= limit
            node = self.first[node] + step
        return node.astype(np.int64, copy=False)

    def votes(self, codes: NDArray[np.int32], n_classes: int) -> NDArray[np.int64]:
        """Number of trees voting for each class: shape (n_rows, n_classes).

        Rows with identical codes get identical votes, so each distinct code
        row is walked once (prediction-time only; nothing here is released).
        """
        distinct, inverse = np.unique(codes, axis=0, return_inverse=True)
        if distinct.shape[0] < codes.shape[0]:
            return self._votes(distinct, n_classes)[inverse.ravel()]
        return self._votes(codes, n_classes)

    def _votes(self, codes: NDArray[np.int32], n_classes: int) -> NDArray[np.int64]:
        n_rows = codes.shape[0]
        n_trees = self.roots.size
        counts = np.zeros(n_rows * n_classes, dtype=np.int64)
        per_block = max(1, _BLOCK_ELEMENTS // max(n_rows, 1))
        row_index = np.arange(n_rows, dtype=np.int64)[None, :]
        for start in range(0, n_trees, per_block):
            cls = self.leaf_classes(codes, slice(start, start + per_block))
            counts += np.bincount((cls * n_rows + row_index).ravel(), minlength=n_rows * n_classes)
        return counts.reshape(n_classes, n_rows).T
