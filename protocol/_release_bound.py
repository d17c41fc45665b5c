"""The largest release an honest party can send for a request: a size cap checked before any parsing.

A release's size is a function of public parameters only: the request's trees, depth, split mode and grid, the
schema's features and classes, the marginals grid.  Every field is bounded by the wire format's widest encoding:

- per tree node (every node counted, leaves and splits alike): ``feature``, ``split``, ``first_child`` and
  ``leaf_class`` are ``sint32`` (at most 5 bytes each as varints), and ``leaf_counts`` one ``uint64`` per class (at
  most 10 bytes each, though the decoder refuses counts above ``2**31 - 1``, 5 bytes);
- per tree: one ``uint32`` of ``nodes_per_tree`` (5 bytes);
- the marginals part: one ``sint32`` cell per code of the marginals grid and class (5 bytes each);
- everything else (parameters, the ids, at most 256 characters of up to 4 bytes each, the fingerprints, the
  signature, the fields' tags and lengths): :data:`FIXED_RELEASE_BYTES`, several times what they can take.

An honest release is never larger; a forged one above the bound is refused unread (``too_large``), so one party
cannot make the coordinator parse (and hold) up to ``max-release-bytes`` for a release of a few kilobytes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from edprf_core import Schema
from edprf_core.encoding import FeatureGrid
from edprf_core.forest import max_tree_nodes

if TYPE_CHECKING:
    from .messages import TrainRequest

__all__ = ["FIXED_RELEASE_BYTES", "largest_release_bytes", "request_release_bytes"]

FIXED_RELEASE_BYTES = 1 << 16
"""Bytes of a release outside its trees and marginals (parameters, ids, signature, framing), with room to spare:
the three ids take at most 64 + 2 * 1024 bytes, the signature and key id under 300."""

_NODE_FIELD_BYTES = 4 * 5
_COUNT_BYTES = 10
_TREE_BYTES = 5
_CELL_BYTES = 5


def largest_release_bytes(
    schema: Schema, *, n_trees: int, max_depth: int, split_mode: str, n_bins: int, marginals_bins: int = 0
) -> int:
    """The most bytes a ``SignedRelease`` answering these parameters can take (see the module docstring).

    ``max_depth`` is the deepest tree the request allows (an automatic depth is at most it); ``marginals_bins``
    0 means no marginals part.  Privacy cost: none (public parameters only).
    """
    nodes = max_tree_nodes(FeatureGrid.from_schema(schema, n_bins).n_codes, split_mode, max_depth)
    k = schema.n_classes
    trees = n_trees * (_TREE_BYTES + nodes * (_NODE_FIELD_BYTES + k * _COUNT_BYTES))
    marginals = sum(FeatureGrid.from_schema(schema, marginals_bins).n_codes) * k * _CELL_BYTES if marginals_bins else 0
    return FIXED_RELEASE_BYTES + trees + marginals


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
    )
