"""Fast prediction for binary trees: leaf bitmasks combined over features.

For a tree with at most 64·W leaves, every leaf gets a bit.  For each feature
``f`` and each code ``v`` of ``f``, ``mask[f, v]`` holds the bits of the leaves
whose path admits ``v`` on ``f`` (all leaves if the tree never tests ``f``).
A row reaches the one leaf whose bit survives ``AND_f mask[f, code_f]``.
Features are grouped so that each group's joint code indexes one precomputed
table, so a tree costs one gather per group and row, with no loop over levels.
(The idea is that of QuickScorer, Lucchese et al. 2015, specialised to the
small discrete codes of a public grid.)  Derived from public structure only.

Memory.  The tables cost ``8 * words * sum(group sizes)`` bytes per tree, whatever
the tree's size: for a forest of tiny trees that is far more per node than
routing (:class:`edprf_core._predict.RoutingTable`), so :meth:`LeafMaskPredictor.compile`
declines (returns None) when the tables would pass :func:`leafmask_budget`, and the
forest is routed instead.  Compilation runs in blocks of trees whose temporaries
(a node x code admission table, a leaf x code bit table) stay under
:data:`COMPILE_BLOCK_BYTES`, so its peak is the tables plus that block.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ._encoding import FeatureGrid
from ._tree import ForestArrays

__all__ = [
    "COMPILE_BLOCK_BYTES",
    "LEAFMASK_BYTES_PER_NODE",
    "MAX_WORDS",
    "LeafMaskPredictor",
    "leafmask_budget",
    "leafmask_table_bytes",
]

MAX_WORDS = 4
_GROUP_TABLE_SIZE = 1024
COMPILE_BLOCK_BYTES = 32 << 20
"""Temporaries of one compilation block (bytes): about 20 bytes per node and grid code."""
LEAFMASK_BYTES_PER_NODE = 128
"""Tables are built only when they cost at most this per node of the forest ..."""
LEAFMASK_FLOOR_BYTES = 32 << 20
"""... or at most this in all (small forests always get the fast path)."""
MAX_COMPILE_CELLS = 1 << 27
"""Largest node x grid code count compiled into tables (the compile's time is linear in it)."""


def _feature_groups(n_codes: NDArray[np.int64]) -> list[list[int]]:
    groups: list[list[int]] = [[]]
    size = 1
    for f, k in enumerate(n_codes):
        if groups[-1] and size * int(k) > _GROUP_TABLE_SIZE:
            groups.append([])
            size = 1
        groups[-1].append(f)
        size *= int(k)
    return groups


def _group_sizes(n_codes: NDArray[np.int64]) -> list[int]:
    return [int(np.prod(n_codes[g])) for g in _feature_groups(n_codes)]


def leafmask_table_bytes(n_trees: int, words: int, n_codes: NDArray[np.int64] | tuple[int, ...]) -> int:
    """Bytes of the compiled tables of ``n_trees`` trees of ``words`` 64-bit words on a grid."""
    return 8 * int(n_trees) * int(words) * sum(_group_sizes(np.asarray(n_codes, dtype=np.int64)))


def leafmask_budget(n_nodes: int) -> int:
    """Largest table size (bytes) :meth:`LeafMaskPredictor.compile` builds for a forest of ``n_nodes``."""
    return max(LEAFMASK_FLOOR_BYTES, LEAFMASK_BYTES_PER_NODE * int(n_nodes))


def _tree_block(forest: ForestArrays, a: int, b: int) -> ForestArrays:
    """Trees ``a:b`` of ``forest`` as a forest of their own (views of the node arrays)."""
    lo, hi = int(forest.tree_offsets[a]), int(forest.tree_offsets[b])
    return ForestArrays(
        tree_offsets=forest.tree_offsets[a : b + 1] - lo,
        feature=forest.feature[lo:hi],
        split=forest.split[lo:hi],
        first_child=forest.first_child[lo:hi],
        leaf_class=forest.leaf_class[lo:hi],
    )


def _blocks(tree_offsets: NDArray[np.int64], nodes_per_block: int) -> list[tuple[int, int]]:
    """Consecutive tree ranges of at most ``nodes_per_block`` nodes each (at least one tree per range)."""
    n_trees = tree_offsets.size - 1
    out, a = [], 0
    while a < n_trees:
        b = int(np.searchsorted(tree_offsets, tree_offsets[a] + nodes_per_block, side="right")) - 1
        b = min(n_trees, max(b, a + 1))
        out.append((a, b))
        a = b
    return out


def _leaf_admits(
    forest: ForestArrays, grid: FeatureGrid, parent: NDArray[np.int64], depth: NDArray[np.int32]
) -> NDArray[np.bool_]:
    """Codes each node's path admits: bool array (n_nodes, total codes)."""
    n_codes = np.asarray(grid.n_codes, dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(n_codes)[:-1]])
    bin_feature = np.repeat(np.arange(n_codes.size), n_codes)
    bin_code = np.arange(int(n_codes.sum())) - offsets[bin_feature]
    is_cat = np.asarray(grid.is_categorical, dtype=bool)
    admits = np.ones((forest.n_nodes, bin_code.size), dtype=bool)
    tree_of = forest.tree_of_node()
    for level in range(1, int(depth.max(initial=0)) + 1):
        nodes = np.flatnonzero(depth == level)
        p = parent[nodes]
        f, s = forest.feature[p].astype(np.int64), forest.split[p].astype(np.int64)
        is_left = nodes == forest.tree_offsets[tree_of[nodes]] + forest.first_child[p]
        left_codes = np.where(is_cat[f][:, None], bin_code[None, :] == s[:, None], bin_code[None, :] < s[:, None])
        goes = np.where(is_left[:, None], left_codes, ~left_codes)
        admits[nodes] = admits[p] & ((bin_feature[None, :] != f[:, None]) | goes)
    return admits


def _block_masks(
    forest: ForestArrays, grid: FeatureGrid, leaves_per_tree: NDArray[np.int64], words: int
) -> tuple[NDArray[np.uint64], NDArray[np.int32], NDArray[np.int64]]:
    """Per tree of a block, the leaf bits each grid code admits, (trees, words, codes), the leaves' classes and
    the leaves' node indices within the block (-1 for unused bits)."""
    is_leaf = forest.feature < 0
    tree_of = forest.tree_of_node()
    depth, parent = forest.depths_and_parents()
    admits = _leaf_admits(forest, grid, parent, depth)
    leaves = np.flatnonzero(is_leaf)
    leaf_tree = tree_of[leaves]
    first_leaf = np.concatenate([[0], np.cumsum(leaves_per_tree)[:-1]])
    rank = np.arange(leaves.size) - first_leaf[leaf_tree]
    word, bit = rank // 64, (rank % 64).astype(np.uint64)
    masks = np.zeros((forest.n_trees, words, admits.shape[1]), dtype=np.uint64)
    bits = admits[leaves].astype(np.uint64) << bit[:, None]
    np.bitwise_or.at(masks, (leaf_tree, word), bits)
    leaf_class = np.full((forest.n_trees, 64 * words), -1, dtype=np.int32)
    leaf_class[leaf_tree, rank] = forest.leaf_class[leaves]
    leaf_node = np.full((forest.n_trees, 64 * words), -1, dtype=np.int64)
    leaf_node[leaf_tree, rank] = leaves
    return masks, leaf_class, leaf_node


@dataclass(frozen=True, eq=False)
class LeafMaskPredictor:
    """Compiled binary forest: per tree and feature group, a table of leaf bitmasks."""

    groups: tuple[tuple[int, ...], ...]
    tables: tuple[NDArray[np.uint64], ...]  # per group: (n_trees, words, joint codes)
    leaf_class: NDArray[np.int32]  # (n_trees, 64 * words), -1 for unused bits
    words: int
    leaf_node: NDArray[np.int64] | None = None  # (n_trees, 64 * words): global node index of each bit, -1 unused

    @classmethod
    def compile(cls, forest: ForestArrays, grid: FeatureGrid) -> LeafMaskPredictor | None:
        """None when a tree has more than ``64 * MAX_WORDS`` leaves, the tables would pass
        :func:`leafmask_budget` (routing is then cheaper in memory), or the forest has more than
        :data:`MAX_COMPILE_CELLS` node x code cells (compiling would take longer than routing saves)."""
        is_leaf = forest.feature < 0
        tree_of = forest.tree_of_node()
        leaves_per_tree = np.bincount(tree_of[is_leaf], minlength=forest.n_trees)
        words = int(np.ceil(leaves_per_tree.max() / 64))
        if words > MAX_WORDS:
            return None
        n_codes = np.asarray(grid.n_codes, dtype=np.int64)
        if (
            leafmask_table_bytes(forest.n_trees, words, n_codes) > leafmask_budget(forest.n_nodes)
            or forest.n_nodes * int(n_codes.sum()) > MAX_COMPILE_CELLS
        ):
            return None
        offsets = np.concatenate([[0], np.cumsum(n_codes)[:-1]])
        groups = _feature_groups(n_codes)
        tables = [np.empty((forest.n_trees, words, size), dtype=np.uint64) for size in _group_sizes(n_codes)]
        leaf_class = np.full((forest.n_trees, 64 * words), -1, dtype=np.int32)
        leaf_node = np.full((forest.n_trees, 64 * words), -1, dtype=np.int64)
        per_node = 20 * int(n_codes.sum()) + 8 * words * max(_group_sizes(n_codes))
        for a, b in _blocks(forest.tree_offsets, max(1, COMPILE_BLOCK_BYTES // per_node)):
            block = _tree_block(forest, a, b)
            masks, block_class, block_node = _block_masks(block, grid, leaves_per_tree[a:b], words)
            leaf_class[a:b] = block_class
            leaf_node[a:b] = np.where(block_node >= 0, block_node + int(forest.tree_offsets[a]), -1)
            for table_out, g in zip(tables, groups):
                table = np.full((b - a, words, 1), np.uint64(0xFFFFFFFFFFFFFFFF), dtype=np.uint64)
                for f in g:
                    part = masks[:, :, offsets[f] : offsets[f] + n_codes[f]]
                    table = (table[:, :, :, None] & part[:, :, None, :]).reshape(b - a, words, -1)
                table_out[a:b] = table
        return cls(tuple(tuple(g) for g in groups), tuple(tables), leaf_class, words, leaf_node)

    def _keys(self, codes: NDArray[np.int32], n_codes: tuple[int, ...]) -> list[NDArray[np.int64]]:
        keys = []
        for g in self.groups:
            key = np.zeros(codes.shape[0], dtype=np.int64)
            for f in g:
                key = key * n_codes[f] + codes[:, f]
            keys.append(key)
        return keys

    def _leaf_bits(self, t: int, keys: list[NDArray[np.int64]], n_rows: int) -> NDArray[np.int64]:
        """Bit index (leaf rank) of the leaf each row reaches in tree ``t``."""
        leaf = np.zeros(n_rows, dtype=np.int64)
        for w in range(self.words):
            mask = self.tables[0][t, w][keys[0]]
            for table, key in zip(self.tables[1:], keys[1:]):
                mask &= table[t, w][key]
            # one bit survives: its index is the number of bits below it, popcount(mask - 1)
            if self.words == 1:
                return np.bitwise_count(mask - np.uint64(1))
            hit = mask != 0
            leaf[hit] = 64 * w + np.bitwise_count(mask[hit] - np.uint64(1)).astype(np.int64)
        return leaf

    def part_sums(
        self,
        codes: NDArray[np.int32],
        n_codes: tuple[int, ...],
        node_values: NDArray[np.float64],
        part_bounds: NDArray[np.int64],
    ) -> NDArray[np.float64]:
        """Per part, the sum over its trees of ``node_values`` at the leaf each row reaches.

        ``node_values`` has shape ``(n_nodes, n_values)``; part ``j`` holds trees
        ``part_bounds[j]:part_bounds[j + 1]``.  Returns ``(n_parts, n_rows, n_values)``:
        one gathered vector per tree and row, no loop over levels.
        """
        n_rows, n_values = codes.shape[0], node_values.shape[1]
        keys = self._keys(codes, n_codes)
        # per tree and value, a table of 64 * words entries: each gather reads a cache-resident 1-D table
        by_bit = np.where(
            (self.leaf_node >= 0)[:, None, :], node_values[np.maximum(self.leaf_node, 0)].transpose(0, 2, 1), 0.0
        )
        out = np.zeros((part_bounds.size - 1, n_values, n_rows))
        for j in range(part_bounds.size - 1):
            for t in range(int(part_bounds[j]), int(part_bounds[j + 1])):
                bits = self._leaf_bits(t, keys, n_rows)
                for k in range(n_values):
                    out[j, k] += np.take(by_bit[t, k], bits)
        return out.transpose(0, 2, 1)

    def votes(self, codes: NDArray[np.int32], n_codes: tuple[int, ...], n_classes: int) -> NDArray[np.int64]:
        """Trees voting for each class, shape (n_rows, n_classes)."""
        n_rows = codes.shape[0]
        keys = self._keys(codes, n_codes)
        votes = np.zeros((n_classes, n_rows), dtype=np.int64)
        one_word_binary = self.words == 1 and n_classes == 2
        for t in range(self.leaf_class.shape[0]):
            if one_word_binary:
                mask = self.tables[0][t, 0][keys[0]]
                for table, key in zip(self.tables[1:], keys[1:]):
                    mask &= table[t, 0][key]
                class_one = np.bitwise_or.reduce(
                    np.left_shift(np.uint64(1), np.flatnonzero(self.leaf_class[t] == 1).astype(np.uint64)),
                    initial=np.uint64(0),
                )
                votes[1] += (mask & class_one) != 0
                continue
            leaf = np.zeros(n_rows, dtype=np.int64)
            for w in range(self.words):
                mask = self.tables[0][t, w][keys[0]]
                for table, key in zip(self.tables[1:], keys[1:]):
                    mask &= table[t, w][key]
                hit = mask != 0
                leaf[hit] = 64 * w + np.frexp(mask[hit].astype(np.float64))[1] - 1
            cls = self.leaf_class[t][leaf]
            for k in range(n_classes):
                votes[k] += cls == k
        if one_word_binary:
            votes[0] = self.leaf_class.shape[0] - votes[1]
        return votes.T
