"""Level-wise construction of many DP trees at once.

All nodes of one layer, across all trees, are counted in a single
``np.bincount`` over (node, feature-bin, class); utilities of every candidate
of every node come from cumulative sums of those counts; one vectorized
mechanism call selects every split of the layer.  Rows move to their child by
array indexing.  There is no Python loop over rows or nodes.

Privacy structure (what the mechanisms see and what the trees reveal)
---------------------------------------------------------------------
- The set of candidates at a node is a function of the public grid and of the
  node's path (itself an output of earlier mechanisms), never of the rows.
- A node becomes a leaf only when its layer is the last or when its path has
  exhausted every candidate (a public fact); never because of its rows
  (unless ``stop_when_pure``, which is research-only and marks the model
  non-DP).  Empty nodes run their mechanism like any other: with all-zero
  counts, permute-and-flip picks uniformly.
- Every split node spends its layer's budget, every leaf the remainder of its
  path's budget (see :mod:`edprf_core._budget`), so each root-to-leaf path
  spends exactly the tree's ε.
- With ``plan.leaf_counts`` a leaf releases its class-count vector with
  discrete Laplace noise of scale ``sensitivity / eps_leaf`` instead of a
  label (:func:`edprf_core.mechanisms.discrete_laplace_counts`: eps_leaf-DP, the same
  budget the label mechanism would spend; L1 sensitivity 1 under add-remove,
  2 under replace-one).  The released counts are clamped to 0..MAX_LEAF_COUNT and the leaf's
  label is the argmax of the noisy counts: both are post-processing of the
  noisy vector and cost nothing more.  The leaves of one layer hold disjoint
  rows, so they compose in parallel like the label mechanism does.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import numpy as np
from numpy.typing import NDArray

from ._count_noise import discrete_laplace_counts
from ._encoding import FeatureGrid
from ._exact_selection import ExactPermuteAndFlip, integer_weighted_gini
from ._mechanisms import ExponentialMechanism, LaplaceMechanism, PermuteAndFlip
from ._tree import MAX_LEAF_COUNT, ForestArrays

__all__ = ["BuildPlan", "TreeStreams", "build_forest"]

_UTILITY_BLOCK = 1 << 21
MAX_NODES = 20_000_000
MAX_HISTOGRAM_BYTES = 4 << 30
_SELECTION_BLOCK_BYTES = 256 << 20
"""Memory of one block of split selections: its nodes' validity, utilities and the mechanism's noise (per candidate),
and their histograms (per bin and class)."""
_HISTOGRAM_BYTES_PER_CELL = 16
"""Bytes per (node, bin, class) of a histogram: the int64 bincount and its float64 copy."""
_SELECTION_BYTES_PER_CANDIDATE = 48
"""Bytes per (node, candidate) while a block is selected: validity's int64 sums (16), its bool, the utility and its
noisy copies (8 each), the masks."""


class TreeStreams:
    """Generator-like adapter: each row of a draw comes from its tree's own stream.

    ``rows_tree[i]`` is the tree of row ``i`` (rows sorted by tree).  Every
    tree's noise is drawn from that tree's generator, so a tree's randomness
    does not depend on how many nodes the other trees have.
    """

    def __init__(self, generators: list[np.random.Generator], rows_tree: NDArray[np.intp]) -> None:
        self._gens = generators
        self._bounds = np.searchsorted(rows_tree, np.arange(len(generators) + 1))
        self._n = rows_tree.size

    def _draw(self, method: str, size: tuple[int, ...], **kwargs: float) -> NDArray[np.float64]:
        if size[0] != self._n:
            raise ValueError(f"expected {self._n} rows of noise, got a request for {size[0]}")
        out = np.empty(size, dtype=np.float64)
        for t, gen in enumerate(self._gens):
            a, b = self._bounds[t], self._bounds[t + 1]
            if b > a:
                out[a:b] = getattr(gen, method)(size=(b - a, *size[1:]), **kwargs)
        return out

    def standard_exponential(self, size: tuple[int, ...]) -> NDArray[np.float64]:
        return self._draw("standard_exponential", size)

    def gumbel(self, size: tuple[int, ...]) -> NDArray[np.float64]:
        return self._draw("gumbel", size)

    def laplace(self, loc: float, scale: float, size: tuple[int, ...]) -> NDArray[np.float64]:
        return self._draw("laplace", size, loc=loc, scale=scale)

    def geometric(self, p: float, size: tuple[int, ...]) -> NDArray[np.float64]:
        return self._draw("geometric", size, p=p)


@dataclass(frozen=True)
class BuildPlan:
    """Everything the builder needs besides the data (all public).

    ``layer_epsilons[k-1]`` is the budget of a split at layer ``k``; a leaf at
    layer ``l`` gets ``tree_epsilon - sum(layer_epsilons[:l-1])``.
    """

    split_mode: str
    n_layers: int
    tree_epsilon: float
    layer_epsilons: tuple[float, ...]
    split_mechanism: PermuteAndFlip | ExponentialMechanism | ExactPermuteAndFlip
    leaf_mechanism: PermuteAndFlip | LaplaceMechanism | ExactPermuteAndFlip
    stop_when_pure: bool = False
    integer_utilities: bool = False
    leaf_counts: bool = False
    count_sensitivity: int = 1
    exact_counts: bool = False

    def leaf_epsilon(self, layer: int) -> float:
        return self.tree_epsilon - float(np.sum(self.layer_epsilons[: layer - 1]))


@dataclass(frozen=True)
class _Candidates:
    """Binary-mode candidates: rows with bin codes in [lo, hi) of the feature go left."""

    feature: NDArray[np.int64]
    split: NDArray[np.int64]
    lo: NDArray[np.int64]
    hi: NDArray[np.int64]
    seg_lo: NDArray[np.int64]
    seg_hi: NDArray[np.int64]

    @classmethod
    def from_grid(cls, grid: FeatureGrid, offsets: NDArray[np.int64]) -> _Candidates:
        feat, split, lo, hi = [], [], [], []
        for f, (k, cat) in enumerate(zip(grid.n_codes, grid.is_categorical)):
            if k < 2:
                continue
            o = int(offsets[f])
            if cat:
                values = [0] if k == 2 else list(range(k))
                for c in values:
                    feat.append(f), split.append(c), lo.append(o + c), hi.append(o + c + 1)
            else:
                for j in range(1, k):
                    feat.append(f), split.append(j), lo.append(o), hi.append(o + j)
        f_arr = np.asarray(feat, dtype=np.int64)
        n_codes = np.asarray(grid.n_codes, dtype=np.int64)
        return cls(
            f_arr,
            np.asarray(split, dtype=np.int64),
            np.asarray(lo, dtype=np.int64),
            np.asarray(hi, dtype=np.int64),
            offsets[f_arr],
            offsets[f_arr] + n_codes[f_arr],
        )


def _weighted_gini(v: NDArray[np.float64]) -> NDArray[np.float64]:
    """``|v| * Gini(v) = |v| - sum_c v_c^2 / |v|`` over the last axis (0 when empty)."""
    n = v.sum(axis=-1)
    sq = np.einsum("...c,...c->...", v, v)
    return n - sq / np.maximum(n, 1.0)


def _binary_utilities(
    counts: NDArray[np.float64],
    cand: _Candidates,
    impurity: Callable[[NDArray[np.float64]], NDArray[np.float64]] = _weighted_gini,
) -> NDArray[np.float64]:
    """Utility of every candidate at every node of ``counts`` (nodes, bins, classes)."""
    n_nodes, _, n_classes = counts.shape
    m = cand.feature.size
    util = np.empty((n_nodes, m))
    per_block = max(1, _UTILITY_BLOCK // max(1, m * n_classes))
    for a in range(0, n_nodes, per_block):
        c = counts[a : a + per_block]
        cz = np.concatenate([np.zeros((c.shape[0], 1, n_classes)), np.cumsum(c, axis=1)], axis=1)
        left = cz[:, cand.hi] - cz[:, cand.lo]
        total = cz[:, cand.seg_hi] - cz[:, cand.seg_lo]
        util[a : a + per_block] = -(impurity(left) + impurity(total - left))
    return util


def _binary_validity(allowed: NDArray[np.bool_], cand: _Candidates) -> NDArray[np.bool_]:
    """Candidates that split a node's admissible codes in two (public: from the path only)."""
    az = np.concatenate([np.zeros((allowed.shape[0], 1), dtype=np.int64), np.cumsum(allowed, axis=1)], axis=1)
    left_allowed = az[:, cand.hi] - az[:, cand.lo]
    seg_allowed = az[:, cand.seg_hi] - az[:, cand.seg_lo]
    return (left_allowed > 0) & (left_allowed < seg_allowed)


def _multiway_utilities(
    counts: NDArray[np.float64],
    offsets: NDArray[np.int64],
    impurity: Callable[[NDArray[np.float64]], NDArray[np.float64]] = _weighted_gini,
) -> NDArray[np.float64]:
    return -np.add.reduceat(impurity(counts), offsets, axis=1)


def _occupied_histograms(
    node_of_row: NDArray[np.int64],
    row_cells: NDArray[np.integer],
    n_bins: int,
    n_classes: int,
):
    """Yield ``(nodes, counts)``: (node, feature bin, class) counts of the nodes that hold rows.

    ``row_cells[i, f]`` is ``bin * n_classes + class`` of row ``i``'s feature ``f`` (bins shifted per feature).

    Only occupied nodes are histogrammed: an empty node's utilities are all 0
    (weighted Gini of empty children), which its zero row in the caller's
    utility matrix already gives.  When the histogram would exceed
    ``MAX_HISTOGRAM_BYTES`` the nodes are taken in blocks instead of refusing:
    how many nodes are occupied depends on the data, so a refusal would tell
    the outside something no mechanism paid for.  Nothing derived from the
    occupancy leaves this function except the counts feeding the mechanisms.
    """
    present = np.bincount(node_of_row) > 0  # a count per node index instead of a sort (same result as np.unique)
    occupied = np.flatnonzero(present)
    compact = (np.cumsum(present) - 1)[node_of_row]
    per_node = n_bins * n_classes * _HISTOGRAM_BYTES_PER_CELL
    block = max(1, MAX_HISTOGRAM_BYTES // per_node)
    if occupied.size > block:
        order = np.argsort(compact, kind="stable")
        bounds = np.searchsorted(compact[order], np.arange(0, occupied.size + block, block))
    for b, start in enumerate(range(0, occupied.size, block)):
        stop = min(start + block, occupied.size)
        if occupied.size > block:
            take = order[bounds[b] : bounds[b + 1]]
            local, cells = compact[take] - start, row_cells[take]
        else:
            local, cells = compact, row_cells
        counts = _histogram(local, cells, n_bins * n_classes, stop - start)
        yield occupied[start:stop], counts.reshape(stop - start, n_bins, n_classes)


_HISTOGRAM_ROWS_AT_ONCE = 1 << 16
"""Rows whose histogram indices :func:`_histogram` computes at a time (at least; more for a wide histogram)."""


def _histogram(local: NDArray[np.int64], cells: NDArray[np.integer], width: int, n_nodes: int) -> NDArray[np.float64]:
    """``np.bincount((local[:, None] * width + cells).ravel(), minlength=n_nodes * width)`` as float64.

    The indices of a block of rows at a time, in one reused buffer: all at once they were a rows x features int64
    matrix (4 million rows x 30 features: 960 MB at a fit's peak).  A block holds at least as many indices as the
    histogram has cells, so that adding the blocks' counts costs no more than counting.  The same counts.
    Privacy cost: none (the histogram itself is unchanged).
    """
    size = n_nodes * width
    at_once = max(_HISTOGRAM_ROWS_AT_ONCE, size // max(1, cells.shape[1]))
    if local.size <= at_once:
        return np.bincount((local[:, None] * width + cells).ravel(), minlength=size).astype(np.float64)
    counts = np.zeros(size, dtype=np.int64)
    buffer = np.empty((at_once, cells.shape[1]), dtype=np.int64)
    for a in range(0, local.size, at_once):
        idx = buffer[: min(at_once, local.size - a)]
        np.multiply(local[a : a + idx.shape[0], None], width, out=idx)
        idx += cells[a : a + idx.shape[0]]
        counts += np.bincount(idx.ravel(), minlength=size)
    return counts.astype(np.float64)


def _children_allowed(
    allowed: NDArray[np.bool_],
    splits: NDArray[np.int64],
    feature: NDArray[np.int64],
    split: NDArray[np.int64],
    bin_feature: NDArray[np.int64],
    bin_code: NDArray[np.int64],
    is_cat: NDArray[np.bool_],
) -> NDArray[np.bool_]:
    """The codes still admissible at the two children of each split node (left, right, in node order).

    Written a block of split nodes at a time into the next layer's array: the temporaries are a block's, not the
    layer's (one byte per node and grid code each).  Public: from the paths only.
    """
    n_bins = bin_feature.size
    out = np.empty((2 * splits.size, n_bins), dtype=bool)
    block = max(1, _SELECTION_BLOCK_BYTES // max(1, 4 * n_bins))
    for a in range(0, splits.size, block):
        f_s, s_s = feature[a : a + block, None], split[a : a + block, None]
        in_seg = bin_feature[None, :] == f_s
        goes_left = np.where(is_cat[f_s], bin_code[None, :] == s_s, bin_code[None, :] < s_s)
        parent = allowed[splits[a : a + block]]
        out[2 * a : 2 * (a + block) : 2] = parent & (~in_seg | goes_left)
        out[2 * a + 1 : 2 * (a + block) : 2] = parent & (~in_seg | ~goes_left)
    return out


def _node_validity(
    state: NDArray[np.bool_], cand: _Candidates | None, n_codes: NDArray[np.int64], nodes: slice
) -> NDArray[np.bool_]:
    """The candidates that split each of a layer's ``nodes`` (public: from their paths only).

    ``state`` is the layer's path state: binary trees (``cand`` given), the codes still admissible at each node;
    multiway trees, the features used on each node's path.
    """
    if cand is not None:
        return _binary_validity(state[nodes], cand)
    return ~state[nodes] & (n_codes >= 2)[None, :]


def _selected_splits(
    splits: NDArray[np.int64],
    block: int,
    validity: Callable[[slice], NDArray[np.bool_]],
    node_of_row: NDArray[np.int64],
    row_cells: NDArray[np.integer],
    n_bins: int,
    n_classes: int,
    plan: BuildPlan,
    layer: int,
    tree: NDArray[np.int64],
    tree_generators: list[np.random.Generator],
    utilities: Callable[[NDArray[np.float64]], NDArray[np.float64]],
) -> NDArray[np.intp]:
    """The split mechanism's choice at every split node of a layer (``splits``: their indices, ascending).

    The layer's nodes are taken ``block`` at a time: each block's validity and utilities (candidates x nodes) are
    built, its split nodes selected, and the block's arrays dropped, so the memory is a block's, not the layer's
    (a single deep tree on a wide grid needed gigabytes per layer).  The draws are the same as in one call: each
    tree's noise comes from its own stream (:class:`TreeStreams`) in node order, the blocks in that order too, and
    an empty node keeps utility 0 (:func:`_occupied_histograms`).  Privacy cost: that of the mechanism's
    selections, ``plan.layer_epsilons[layer - 1]`` each (see :func:`build_forest`).
    """
    starts = np.arange(0, int(splits[-1]) + block + 1, block)  # each block's first node, and the end
    blocks = starts.size - 1
    first_split = np.searchsorted(splits, starts)
    if blocks > 1:  # the rows of each block, by one sort (one block: all the rows, no sort)
        order = np.argsort(node_of_row, kind="stable")
        first_row = np.searchsorted(node_of_row[order], starts)
    choice = np.empty(splits.size, dtype=np.intp)
    for b in range(blocks):
        a, these = int(starts[b]), splits[first_split[b] : first_split[b + 1]]
        if not these.size:
            continue
        valid = validity(slice(a, a + block))
        util = np.zeros(valid.shape)
        if blocks > 1:
            take = order[first_row[b] : first_row[b + 1]]
            nodes, cells = node_of_row[take] - a, row_cells[take]
        else:
            nodes, cells = node_of_row, row_cells
        for occupied, counts in _occupied_histograms(nodes, cells, n_bins, n_classes):
            util[occupied] = utilities(counts)
        streams = TreeStreams(tree_generators, tree[these])
        chosen = plan.split_mechanism.select(util[these - a], plan.layer_epsilons[layer - 1], streams, valid[these - a])
        choice[first_split[b] : first_split[b + 1]] = chosen
    return choice


_ROW_CELLS_AT_ONCE = 1 << 16
"""Sample rows whose cells :func:`_row_cells` computes at a time (a few MiB of int64 per feature block)."""


def _row_cells(
    codes: NDArray[np.integer],
    y: NDArray[np.integer],
    offsets: NDArray[np.int64],
    n_classes: int,
    rows: NDArray[np.int64],
    dtype: type[np.integer] = np.int64,
) -> NDArray[np.integer]:
    """``(codes[r] + offsets) * n_classes + y[r]`` of each sample row ``r`` of ``rows``, in their order, as ``dtype``
    (int32 only when every value fits: the caller's ``n_bins * n_classes`` at most 2**31 - 1).

    Built in place, a block of rows at a time: computing it for every row, then gathering the sample rows, held
    the rows x features int64 matrix twice, plus a temporary per operation (5 million rows x 30 features: 3 GB
    above the codes at a fit's peak).  The same integers.  Privacy cost: none (arithmetic on the fit's own codes).
    """
    out = np.empty((rows.size, codes.shape[1]), dtype=dtype)
    labels = np.asarray(y, dtype=np.int64)
    for a in range(0, rows.size, _ROW_CELLS_AT_ONCE):
        at = rows[a : a + _ROW_CELLS_AT_ONCE]
        block = out[a : a + at.size]
        block[...] = codes[at]
        block += offsets[None, :]
        block *= n_classes
        block += labels[at][:, None]
    return out


def build_forest(
    codes: NDArray[np.int32],
    y: NDArray[np.int32],
    grid: FeatureGrid,
    n_classes: int,
    plan: BuildPlan,
    sample_tree: NDArray[np.intp],
    sample_rows: NDArray[np.intp],
    tree_generators: list[np.random.Generator],
) -> ForestArrays:
    """Grow one tree per generator; ``sample_tree[i]`` is the tree of sample row ``sample_rows[i]``.

    Privacy cost: each tree is ``plan.tree_epsilon``-DP with respect to the
    rows it receives (see the module docstring); how trees compose is decided
    by the caller's row assignment.
    """
    n_trees = len(tree_generators)
    n_codes = np.asarray(grid.n_codes, dtype=np.int64)
    offsets = np.zeros(n_codes.size, dtype=np.int64)
    np.cumsum(n_codes[:-1], out=offsets[1:])
    n_bins = int(n_codes.sum())
    is_cat = np.asarray(grid.is_categorical, dtype=bool)
    bin_feature = np.repeat(np.arange(n_codes.size), n_codes)
    bin_code = np.arange(n_bins) - offsets[bin_feature]
    binary = plan.split_mode == "binary"
    impurity = integer_weighted_gini if plan.integer_utilities else _weighted_gini
    cand = _Candidates.from_grid(grid, offsets) if binary else None

    # active nodes of the current layer, sorted by (tree, local index)
    tree = np.arange(n_trees, dtype=np.int64)
    local = np.zeros(n_trees, dtype=np.int64)
    allowed = np.ones((n_trees, n_bins), dtype=bool) if binary else None
    used = np.zeros((n_trees, n_codes.size), dtype=bool) if not binary else None
    tree_next = np.ones(n_trees, dtype=np.int64)
    rows = np.asarray(sample_rows, dtype=np.int64)
    # (shifted bin, class) of every sample row and feature, once: a layer's histogram index adds only the node;
    # gathered again only when rows leave (in leaves)
    # (4 bytes a cell when every one fits: n_bins * n_classes below 2**31; the histograms' indices are int64 anyway)
    narrow = n_bins * n_classes <= np.iinfo(np.int32).max
    row_cells = _row_cells(codes, y, offsets, n_classes, rows, np.int32 if narrow else np.int64)
    row_class = np.asarray(y, dtype=np.int64)[rows]
    node_of_row = np.asarray(sample_tree, dtype=np.int64)
    records: list[tuple[NDArray[np.int64], ...]] = []

    for layer in range(1, plan.n_layers + 1):
        n_nodes = tree.size
        # the last layer holds only leaves: class counts suffice (most multiway nodes live there)
        class_totals = np.bincount(node_of_row * n_classes + row_class, minlength=n_nodes * n_classes)
        class_totals = class_totals.reshape(n_nodes, n_classes).astype(np.float64)
        if layer < plan.n_layers:
            validity = partial(_node_validity, allowed if binary else used, cand, n_codes)
            width = cand.feature.size if binary else n_codes.size  # candidates per node
            per_node = _SELECTION_BYTES_PER_CANDIDATE * width + _HISTOGRAM_BYTES_PER_CELL * n_bins * n_classes
            block = max(1, _SELECTION_BLOCK_BYTES // per_node)
            if n_nodes <= block:  # one block: the layer's validity once, for its leaves and its selections
                layer_valid = validity(slice(0, n_nodes))
                validity = partial(operator.getitem, layer_valid)
                is_leaf = ~layer_valid.any(axis=1)
            else:
                is_leaf = np.zeros(n_nodes, dtype=bool)
                for a in range(0, n_nodes, block):  # a block of nodes at a time (see _selected_splits)
                    is_leaf[a : a + block] = ~validity(slice(a, a + block)).any(axis=1)
        else:
            is_leaf = np.ones(n_nodes, dtype=bool)
        if plan.stop_when_pure:
            is_leaf |= (class_totals > 0).sum(axis=1) <= 1
        feature = np.full(n_nodes, -1, dtype=np.int64)
        split = np.full(n_nodes, -1, dtype=np.int64)
        first_child = np.full(n_nodes, -1, dtype=np.int64)
        leaf_class = np.full(n_nodes, -1, dtype=np.int64)
        leaf_counts = np.full((n_nodes, n_classes), -1, dtype=np.int64) if plan.leaf_counts else None

        leaves = np.flatnonzero(is_leaf)
        if leaves.size:
            streams = TreeStreams(tree_generators, tree[leaves])
            eps_leaf = plan.leaf_epsilon(layer)
            if plan.leaf_counts:
                noisy = discrete_laplace_counts(
                    class_totals[leaves].astype(np.int64),
                    eps_leaf,
                    plan.count_sensitivity,
                    rng=None if plan.exact_counts else streams,
                )
                leaf_class[leaves] = np.argmax(noisy, axis=1)
                # clamped to the wire's range 0..MAX_LEAF_COUNT: post-processing, so no dataset can fail here
                leaf_counts[leaves] = np.clip(noisy, 0, MAX_LEAF_COUNT)
            elif isinstance(plan.leaf_mechanism, LaplaceMechanism):
                noisy = plan.leaf_mechanism.randomise(class_totals[leaves], eps_leaf, streams)
                leaf_class[leaves] = np.argmax(noisy, axis=1)
            else:
                leaf_class[leaves] = plan.leaf_mechanism.select(class_totals[leaves], eps_leaf, streams)

        splits = np.flatnonzero(~is_leaf)
        if splits.size == 0:
            records.append((tree, local, feature, split, first_child, leaf_class, leaf_counts))
            break
        choice = _selected_splits(
            splits,
            block,
            validity,
            node_of_row,
            row_cells,
            n_bins,
            n_classes,
            plan,
            layer,
            tree,
            tree_generators,
            lambda counts: (
                _binary_utilities(counts, cand, impurity) if binary else _multiway_utilities(counts, offsets, impurity)
            ),
        )
        if binary:
            feature[splits] = cand.feature[choice]
            split[splits] = cand.split[choice]
            n_children = np.full(splits.size, 2, dtype=np.int64)
        else:
            feature[splits] = choice
            n_children = n_codes[choice]
        total_children = int(n_children.sum())
        if total_children + sum(r[0].size for r in records) > MAX_NODES:
            raise MemoryError(f"the forest would exceed {MAX_NODES} nodes; lower max_depth, n_bins or n_trees")
        # tree-local indices of the children, in breadth-first order
        tree_s = tree[splits]
        excl = np.cumsum(n_children) - n_children
        group_start = np.r_[True, tree_s[1:] != tree_s[:-1]]
        start_excl = np.maximum.accumulate(np.where(group_start, excl, 0))
        first_child[splits] = tree_next[tree_s] + excl - start_excl
        tree_next += np.bincount(tree_s, weights=n_children, minlength=n_trees).astype(np.int64)
        records.append((tree, local, feature, split, first_child, leaf_class, leaf_counts))

        # route rows of split nodes to their child; rows in leaves are done
        split_index = np.cumsum(~is_leaf) - 1
        keep = ~is_leaf[node_of_row]
        if not keep.all():
            rows, node_of_row, row_cells, row_class = rows[keep], node_of_row[keep], row_cells[keep], row_class[keep]
        f_row = feature[node_of_row]
        code_row = codes[rows, f_row].astype(np.int64)
        if binary:
            s_row = split[node_of_row]
            step = np.where(is_cat[f_row], code_row != s_row, code_row >= s_row).astype(np.int64)
        else:
            step = code_row
        node_of_row = excl[split_index[node_of_row]] + step

        # next layer's nodes and their public path state
        within = np.arange(total_children) - np.repeat(excl, n_children)
        parent = np.repeat(splits, n_children)
        tree = tree[parent]
        local = first_child[parent] + within
        if layer + 1 == plan.n_layers:
            continue  # the next layer holds only leaves: no path state needed
        if binary:
            allowed = _children_allowed(allowed, splits, feature[splits], split[splits], bin_feature, bin_code, is_cat)
        else:
            child_used = used[parent].copy()
            child_used[np.arange(total_children), feature[parent]] = True
            used = child_used

    counts_parts = [r[6] for r in records]
    all_tree, all_local, *fields = (np.concatenate(parts) for parts in zip(*(r[:6] for r in records)))
    order = np.lexsort((all_local, all_tree))
    sizes = np.bincount(all_tree, minlength=n_trees)
    tree_offsets = np.zeros(n_trees + 1, dtype=np.int64)
    np.cumsum(sizes, out=tree_offsets[1:])
    feature, split, first_child, leaf_class = (a[order].astype(np.int32) for a in fields)
    counts = np.concatenate(counts_parts)[order] if plan.leaf_counts else None
    return ForestArrays(tree_offsets, feature, split, first_child, leaf_class, counts)
