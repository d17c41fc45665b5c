"""The largest release an honest party can send for a request: a size cap checked before any parsing.

A release's size is bounded by public parameters only: the request's trees, depth, split mode, grid and leaf
output, the schema's features and classes, the marginals grid.  The bound holds for every release whose trees pass
the decoder's structural checks (:func:`protocol._structure.check_trees`); :func:`protocol.encode_release` runs the
same checks, so it holds for every release an honest party can send.  A forged release above it is refused unread
(``too_large``), so one party cannot make the coordinator parse (and hold) up to ``max-release-bytes`` for a
release of a few kilobytes.  Privacy cost: none (public parameters only).

Notes
-----
Write ``D`` for the request's ``max_depth`` (a release's own depth is at most it), ``n_f`` for the codes of feature
``f`` on the request's grid, ``k`` for the classes, and ``vlen(x)`` for the bytes of ``x`` as a varint.  The trees
are six packed arrays; a ``sint32`` value ``v >= 0`` is sent as ``2 v`` (zigzag), -1 as 1 (one byte), and never
takes more than 5 bytes.

**Nodes per level of one tree.**  A feature with one code is never split (the decoder refuses it).  A node's path
admits a box of the grid (the codes left to each feature); the children of a split cut their parent's box into
non-empty parts (rule 3 of :mod:`protocol._structure`: a split divides the codes its path still admits on its
feature in two non-empty parts; a multiway split on a feature its path has not used takes one code per child).  So
the nodes of one level, and the leaves, have disjoint non-empty boxes: at most ``C = prod_f n_f`` of each.

- Binary: along a path ``sum_f (admitted codes of f - 1)`` drops by at least one per split, from
  ``S = sum_f (n_f - 1)`` at the root: no path has more than ``D' = min(D, S)`` splits.  Level ``L`` holds at most
  ``N_L = min(2**L, C)`` nodes; a binary tree has one leaf more than it has splits, so at most ``N_D'`` leaves.
- Multiway: a split on ``f`` has ``n_f`` children and uses ``f`` once per path, so no path has more than
  ``D' = min(D, m)`` splits (``m`` features of two codes or more).  Level ``L`` holds at most ``N_L``, the product
  of the ``L`` widest ``n_f``, and the tree at most ``N_D'`` leaves.  Both by induction on a subtree whose path has
  used the features ``U``: its root splits on some ``f`` not in ``U``, and ``n_f`` times the bound of its children
  (without ``f``, one level less) is a product of distinct widths, at most the product of the widest.
  (:func:`edprf_core.forest.max_tree_nodes` is the same count, with features of one code as levels too.)

Either way a tree has at most ``N_D'`` leaves and fewer splits than leaves (every split has two children or more),
and its splits stand on levels ``L < D'``, at most ``N_L`` of them on level ``L``.

**Bytes per node.**

- A leaf: ``feature``, ``split`` and ``first_child`` -1 (1 byte each), ``leaf_class < k`` (``vlen(2 (k - 1))``), and
  with ``leaf = "counts"`` its ``k`` counts: ``uint64`` (never negative: clamped at 0), at most
  :data:`edprf_core.forest.MAX_LEAF_COUNT` ``= 2**31 - 1`` (the decoder refuses more), so 5 bytes each.
- A split on level ``L``: its feature index and split value, at most ``vlen(2 f) + vlen(2 (n_f - 1))`` (binary: a
  threshold ``1..n_f - 1`` or a category ``0..n_f - 1``; multiway: 1 byte for -1), the widest over the features of
  two codes or more; ``first_child``, an index on level ``L + 1`` of a breadth-first tree, so below
  ``T_{L+1} = N_0 + ... + N_{L+1}`` (``vlen(2 (T_{L+1} - 1))``); ``leaf_class`` -1 (1 byte).  This grows with ``L``.
- Per tree one ``nodes_per_tree`` entry, ``vlen(T_D')``.

So one tree takes at most ``N_D'`` leaves' bytes, ``N_D' - 1`` splits' bytes placed on the deepest levels first (at
most ``N_L`` on level ``L``: where a split takes the most), and ``vlen(T_D')``: splits and leaves are counted
apart, each at its own most, which no tree exceeds on either count.

**The marginals part.**  ``sum_f n_f * k`` ``sint32`` cells on the marginals grid, each within
:data:`edprf_core.marginals.RELEASE_RANGE` (+-(2**31 - 1), signed noisy counts): 5 bytes each.

**Everything else** (the parameters, the ids, the fingerprints, the signature, every field's tag and length prefix,
the packed arrays' own): :data:`FIXED_RELEASE_BYTES`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import accumulate
from typing import TYPE_CHECKING

from edprf_core import Schema
from edprf_core.encoding import FeatureGrid
from edprf_core.forest import MAX_LEAF_COUNT
from edprf_core.marginals import RELEASE_RANGE

if TYPE_CHECKING:
    from .messages import TrainRequest

__all__ = ["FIXED_RELEASE_BYTES", "largest_release_bytes", "request_release_bytes"]

FIXED_RELEASE_BYTES = 4096
"""Bytes of a release outside its trees' and marginals' values, about 1.6 times what they can take (2,553 bytes):
the party id (64 ASCII characters), the run and request ids (256 printable characters of up to 4 bytes each, 1,027
bytes each with their tag and length), the schema fingerprint and key id (71 bytes each), the parameters (at most
65 bytes), the signature (ECDSA P-384 in DER, at most 104 bytes), and the tag and length prefix (counted at 10
bytes, a varint's most) of the signed release, the trees, the marginals part and each of their seven packed
arrays."""

_SINT32_BYTES = 5
"""Most bytes of a ``sint32`` varint (zigzag of -(2**31) .. 2**31 - 1)."""


def _varint_bytes(value: int) -> int:
    """Bytes of the non-negative ``value`` as a protobuf varint."""
    return max(1, (value.bit_length() + 6) // 7)


def _sint_bytes(value: int) -> int:
    """Bytes of ``value`` as a ``sint32`` varint (zigzag)."""
    return min(_SINT32_BYTES, _varint_bytes(2 * value if value >= 0 else -2 * value - 1))


def _level_nodes(n_codes: Sequence[int], split_mode: str, max_depth: int) -> list[int]:
    """Most nodes on each level of one valid tree, from the root to the deepest level a path can reach (see the
    module docstring)."""
    if split_mode == "binary":
        deepest = min(max_depth, sum(max(n - 1, 0) for n in n_codes))
        cells = math.prod(n_codes)
        return [min(2**level, cells) for level in range(deepest + 1)]
    if split_mode != "multiway":
        raise ValueError(f"split_mode: expected 'binary' or 'multiway', got {split_mode!r}")
    widths = sorted((n for n in n_codes if n >= 2), reverse=True)[:max_depth]
    return list(accumulate(widths, lambda nodes, width: nodes * width, initial=1))


def _largest_tree_bytes(grid: FeatureGrid, split_mode: str, max_depth: int, n_classes: int, counts: bool) -> int:
    """Most bytes one tree's nodes take in the packed arrays, its ``nodes_per_tree`` entry included."""
    n_codes = grid.n_codes
    levels = _level_nodes(n_codes, split_mode, max_depth)
    through = list(accumulate(levels))  # nodes on levels 0..L: a first child on level L + 1 is below through[L + 1]
    head = max(
        (
            _sint_bytes(f) + (_sint_bytes(n - 1) if split_mode == "binary" else 1)
            for f, n in enumerate(n_codes)
            if n >= 2
        ),
        default=0,
    )
    # the splits a tree can hold (one fewer than its leaves), placed where they take the most: the deepest levels
    left, splits = levels[-1] - 1, 0
    for level in reversed(range(len(levels) - 1)):
        placed = min(levels[level], left)
        splits += placed * (head + _sint_bytes(through[level + 1] - 1) + 1)
        left -= placed
    leaf = 3 + _sint_bytes(n_classes - 1) + (n_classes * _varint_bytes(MAX_LEAF_COUNT) if counts else 0)
    return splits + levels[-1] * leaf + _varint_bytes(through[-1])


def largest_release_bytes(
    schema: Schema,
    *,
    n_trees: int,
    max_depth: int,
    split_mode: str,
    n_bins: int,
    marginals_bins: int = 0,
    leaf: str = "counts",
) -> int:
    """The most bytes a ``SignedRelease`` answering these parameters can take (the module docstring proves it).

    Parameters
    ----------
    schema : Schema
    n_trees : int
    max_depth : int
        The deepest tree the request allows (an automatic depth is at most it).
    split_mode : {"binary", "multiway"}
    n_bins : int
        The trees' grid.
    marginals_bins : int, default 0
        The marginals part's grid; 0 means no marginals part.
    leaf : {"counts", "label"}, default "counts"
        What the leaves release; ``"label"`` sends no counts.

    Returns
    -------
    int

    Notes
    -----
    Privacy cost: none (public parameters only).
    """
    k = schema.n_classes
    tree = _largest_tree_bytes(FeatureGrid.from_schema(schema, n_bins), split_mode, max_depth, k, leaf != "label")
    marginals = 0
    if marginals_bins:
        cell = max(_sint_bytes(RELEASE_RANGE[0]), _sint_bytes(RELEASE_RANGE[1]))
        marginals = sum(FeatureGrid.from_schema(schema, marginals_bins).n_codes) * k * cell
    return FIXED_RELEASE_BYTES + n_trees * tree + marginals


def request_release_bytes(schema: Schema, request: TrainRequest) -> int:
    """:func:`largest_release_bytes` for the parameters of a train ``request``: the coordinator's cap on its
    replies, and the room a party keeps for the release it may store.  Privacy cost: none (public parameters)."""
    return largest_release_bytes(
        schema,
        n_trees=request.n_trees,
        max_depth=request.max_depth,
        split_mode=request.split_mode,
        n_bins=request.n_bins,
        marginals_bins=request.marginals_bins,
        leaf=request.leaf,
    )
