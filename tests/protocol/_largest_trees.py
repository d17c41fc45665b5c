"""The largest trees the decoder accepts on a grid, for the release-size bound's tests.

Built breadth-first, node by node: a node below ``max_depth`` splits while its path leaves a candidate, on the
candidate that takes the most bytes (multiway: the widest feature its path has not used, the last of equals;
binary: the last feature whose path still admits two codes, a category at its largest code, an interval cut in
the middle, so that as many paths as the grid allows reach ``max_depth``); every leaf carries
the last class and, with counts, every class at ``MAX_LEAF_COUNT`` (the widest varint the decoder accepts); a
marginals part has every cell at the wire's largest or smallest.
The trees pass :func:`protocol._structure.check_trees` (``encode_release`` checks them), so a release of them is
one the coordinator must accept.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, replace

import numpy as np

from edprf_core import DPForest
from edprf_core.encoding import FeatureGrid
from edprf_core.forest import MAX_LEAF_COUNT, ForestArrays
from tests.forged_releases import MARGINALS_ALTERNATING, forge_marginals

__all__ = ["largest_forest", "largest_tree"]


@dataclass(frozen=True)
class _Path:
    """What a path leaves: each feature's admitted codes (binary) and the features it used (multiway)."""

    admitted: tuple[frozenset[int] | tuple[int, int], ...]
    used: frozenset[int] = frozenset()


def _size(codes: frozenset[int] | tuple[int, int]) -> int:
    return len(codes) if isinstance(codes, frozenset) else codes[1] - codes[0]


def _split(grid: FeatureGrid, split_mode: str, path: _Path) -> tuple[int, int, list[_Path]] | None:
    """``(feature, split value, children's paths)`` of the widest candidate on ``path``; None when none is left."""
    n_codes = grid.n_codes
    if split_mode == "multiway":
        unused = [f for f in range(len(n_codes)) if f not in path.used and n_codes[f] >= 2]
        if not unused:
            return None
        f = max(unused, key=lambda j: (n_codes[j], j))
        return f, -1, [replace(path, used=path.used | {f})] * n_codes[f]
    open_ = [f for f, codes in enumerate(path.admitted) if _size(codes) >= 2]
    if not open_:
        return None
    f = open_[-1]
    codes = path.admitted[f]
    if isinstance(codes, frozenset):  # a category: left takes it alone, right excludes it
        value = max(codes)
        sides = (frozenset({value}), codes - {value})
    else:  # a threshold in the middle of [lo, hi), the upper one of two: left [lo, value), right [value, hi)
        value = (codes[0] + codes[1] + 1) // 2
        sides = ((codes[0], value), (value, codes[1]))
    return f, value, [_Path(path.admitted[:f] + (side,) + path.admitted[f + 1 :]) for side in sides]


def largest_tree(grid: FeatureGrid, split_mode: str, max_depth: int, n_classes: int, counts: bool) -> ForestArrays:
    """One tree of the most bytes on ``grid`` (see the module docstring), as a one-tree :class:`ForestArrays`."""
    root = _Path(
        tuple(
            frozenset(range(n)) if categorical else (0, n)
            for n, categorical in zip(grid.n_codes, grid.is_categorical, strict=True)
        )
    )
    rows: list[tuple[int, int, int, int]] = []
    queue: deque[tuple[_Path, int]] = deque([(root, 0)])
    next_free = 1
    while queue:
        path, depth = queue.popleft()
        split = _split(grid, split_mode, path) if depth < max_depth else None
        if split is None:
            rows.append((-1, -1, -1, n_classes - 1))
            continue
        feature, value, children = split
        rows.append((feature, value, next_free, -1))
        next_free += len(children)
        queue.extend((child, depth + 1) for child in children)
    feature, split_value, first_child, leaf_class = (np.array(column, dtype=np.int32) for column in zip(*rows))
    leaf_counts = None
    if counts:
        leaf_counts = np.where((feature < 0)[:, None], MAX_LEAF_COUNT, -1) * np.ones((1, n_classes), dtype=np.int64)
    return ForestArrays(
        tree_offsets=np.array([0, feature.size], dtype=np.int64),
        feature=feature,
        split=split_value,
        first_child=first_child,
        leaf_class=leaf_class,
        leaf_counts=leaf_counts,
    )


def largest_forest(fitted: DPForest) -> DPForest:
    """``fitted`` (one party's fit) with each tree replaced by :func:`largest_tree` of its parameters, and every
    cell of its marginals part (if any) at the wire's largest or smallest (5 bytes each)."""
    _, params, n_trees = fitted.parts[0]
    tree = largest_tree(
        fitted.grid, params.split_mode, params.max_depth, fitted.schema.n_classes, params.leaf == "counts"
    )
    size = tree.n_nodes

    def tiled(values: np.ndarray) -> np.ndarray:
        return np.concatenate([values] * n_trees)

    trees = ForestArrays(
        tree_offsets=np.arange(n_trees + 1, dtype=np.int64) * size,
        feature=tiled(tree.feature),
        split=tiled(tree.split),
        first_child=tiled(tree.first_child),
        leaf_class=tiled(tree.leaf_class),
        leaf_counts=None if tree.leaf_counts is None else tiled(tree.leaf_counts),
    )
    forest = replace(fitted, trees=trees, _routing={})
    return forest if forest.marginals is None else forge_marginals(MARGINALS_ALTERNATING, forest)
