"""Editing releases through the generated protobuf API, as an attacker would."""

from __future__ import annotations

from collections.abc import Callable

from protocol import release_pb2 as pb
from protocol._signature import sign_release_bytes


def tamper(data: bytes, edit: Callable[[pb.Release], None], signing_key=None) -> bytes:
    """Apply ``edit`` to the Release inside ``data``; re-sign with ``signing_key`` (else unsigned)."""
    release = pb.Release.FromString(pb.SignedRelease.FromString(data).release)
    edit(release)
    raw = release.SerializeToString(deterministic=True)
    return sign_release_bytes(raw, signing_key).SerializeToString(deterministic=True)


def tamper_envelope(data: bytes, edit: Callable[[pb.SignedRelease], None]) -> bytes:
    """Apply ``edit`` to the SignedRelease wrapper (signature, key id, algorithm)."""
    signed = pb.SignedRelease.FromString(data)
    edit(signed)
    return signed.SerializeToString(deterministic=True)


def first_internal(trees: pb.Trees, start: int = 0) -> int:
    """Index of the first split node at or after ``start``."""
    return next(i for i in range(start, len(trees.feature)) if trees.feature[i] >= 0)


def first_leaf(trees: pb.Trees) -> int:
    return next(i for i in range(len(trees.feature)) if trees.feature[i] < 0)


def caterpillar(depth: int, feature: int = 0, split: int = 1) -> dict[str, list[int]]:
    """A valid-looking tree of ``2 * depth + 1`` nodes: each split has a leaf and a split child.

    Binary layout (two children per split); in multiway mode on a 2-code feature too.
    """
    n = 2 * depth + 1
    return {
        "nodes_per_tree": [n],
        "feature": [feature, -1] * depth + [-1],
        "split": [split, -1] * depth + [-1],
        "first_child": [x for i in range(depth) for x in (2 * i + 1, -1)] + [-1],
        "leaf_class": [-1, 0] * depth + [0],
    }


def replace_trees(release: pb.Release, arrays: dict[str, list[int]]) -> None:
    """Replace every tree array of ``release`` (and its declared n_trees)."""
    for name, values in arrays.items():
        container = getattr(release.trees, name)
        del container[:]
        container.extend(values)
    release.parameters.n_trees = len(arrays["nodes_per_tree"])
