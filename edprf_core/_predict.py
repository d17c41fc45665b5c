"""Vectorized prediction: every tree and every row at once, level by level.

Each node gets a row of a routing table indexed by the code of its feature:
``next = table[node, code[row, feature[node]]]``; leaves route to themselves.
One step is a handful of numpy gathers over a (trees x rows) block, repeated
``depth`` times, with no Python loop over rows or nodes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ._encoding import FeatureGrid
from ._tree import ForestArrays

__all__ = ["RoutingTable"]

_BLOCK_ELEMENTS = 1 << 16


@dataclass(frozen=True, eq=False)
class RoutingTable:
    """Compiled form of a forest for prediction (derived from public structure only)."""

    roots: NDArray[np.int32]
    feature: NDArray[np.int32]
    table: NDArray[np.int32]
    leaf_class: NDArray[np.int32]
    width: int
    depth: int

    @classmethod
    def compile(cls, forest: ForestArrays, grid: FeatureGrid, split_mode: str, depth: int) -> RoutingTable:
        n_codes = np.asarray(grid.n_codes, dtype=np.int64)
        is_cat = np.asarray(grid.is_categorical, dtype=bool)
        width = int(n_codes.max())
        tree_of = forest.tree_of_node()
        base = forest.tree_offsets[tree_of]
        node = np.arange(forest.n_nodes, dtype=np.int64)
        internal = forest.feature >= 0
        f = np.where(internal, forest.feature, 0).astype(np.int64)
        first = base + forest.first_child
        code = np.arange(width, dtype=np.int64)[None, :]
        if split_mode == "multiway":
            offset = np.minimum(code, n_codes[f][:, None] - 1)
        else:
            s = forest.split.astype(np.int64)[:, None]
            offset = np.where(is_cat[f][:, None], code != s, code >= s).astype(np.int64)
        table = np.where(internal[:, None], first[:, None] + offset, node[:, None])
        return cls(
            roots=forest.tree_offsets[:-1].astype(np.int32),
            feature=f.astype(np.int32),
            table=table.astype(np.int32).ravel(),
            leaf_class=forest.leaf_class.astype(np.int32),
            width=width,
            depth=int(depth),
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
        for _ in range(self.depth):
            value = flat[row_base + self.feature[node]]
            node = self.table[node * np.int64(self.width) + value].astype(np.int64)
        return node

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
