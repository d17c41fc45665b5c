"""A library of forged releases: a hostile party's forest with honest shapes and forged leaf counts.

Shared by ``tests/core/test_bounded_influence.py``, the hostile ClientApps of the federation and
deployment tests, and ``benchmarks/bench_hostile_party.py``.  Every forgery of :data:`ATTACKS` keeps what the
coordinator can check (schema, grid, parameters, tree shapes, counts inside the wire range
``[0, MAX_LEAF_COUNT]``), so it passes the decoder and the conformance checks; only the counts lie.
The forgeries of :data:`REFUSED_ATTACKS` change what the coordinator checks (the shapes): the decoder must
refuse them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np
import pandas as pd

from edprf_core import DPForest
from edprf_core.forest import MAX_LEAF_COUNT

__all__ = [
    "ATTACKS",
    "MARGINALS_ALTERNATING",
    "MARGINALS_ATTACKS",
    "REFUSED_ATTACKS",
    "SELF_CONTAINED_ATTACKS",
    "forge",
    "forge_marginals",
    "forge_release_bytes",
    "seeded_federation",
]

ATTACKS = (
    "rarest-class",
    "majority-class",
    "zero-counts",
    "labels-rotated",
    "counts-scaled",
    "copied-release",
    "inverted",
    "inverted-plausible",
    "one-class-per-tree",
)
"""Attacks of issue 20: rarest / majority class at 2**31 - 1 in every leaf, every count 0, the
class columns rotated, every count x1000, another party's release with counts rotated and x1000,
every leaf's mass (2**31 - 1, or the leaf's own released size) on the class the honest model rates
least on the hostile party's rows reaching that leaf, tree ``t`` all class ``t mod K`` at 2**31 - 1."""


MARGINALS_ATTACKS = (
    "marginals-rarest-max",
    "marginals-majority-erased",
    "marginals-rarest-erased",
    "marginals-scaled",
    "marginals-one-cell",
)
"""Forged marginals parts (signed cells inside the wire range ``RELEASE_RANGE``): every cell of the class the
party's own histograms hold least at ``2**31 - 1``; every cell of the class they hold most, or least, at
``-(2**31 - 1)`` (erasing it from the sum); every cell x1000; the least-held class's columns of every feature but
the first at their column floor and its whole released mass, d times over, plus what those columns gave up, in
the first feature's first bin (review rev-eval E5: about 21,000 rows in one cell on the wall robot before the
column ceiling).  :data:`MARGINALS_ALTERNATING` is measured on its own."""

MARGINALS_ALTERNATING = "marginals-alternating"
"""Every cell at ``2**31 - 1`` or ``-(2**31 - 1)`` in a checkerboard over (bin, class): no knowledge of the data
(review rev-eval E6)."""


def forge_marginals(attack: str, own: DPForest) -> DPForest:
    """``own`` (a forest with a marginals part) with its histograms forged by ``attack`` (:data:`MARGINALS_ATTACKS`);
    its trees, parameters and shapes are kept, so it passes the decoder and the conformance checks."""
    from edprf_core.marginals import RELEASE_RANGE, NoisyMarginals

    m = own.marginals
    if m is None:
        raise ValueError("forge_marginals: the hostile forest must have a marginals part (marginals_share > 0)")
    low, high = RELEASE_RANGE
    totals = np.mean([h.sum(axis=0) for h in m.counts], axis=0)
    counts = [h.copy() for h in m.counts]
    if attack == "marginals-rarest-max":
        for h in counts:
            h[:, int(np.argmin(totals))] = high
    elif attack == "marginals-majority-erased":
        for h in counts:
            h[:, int(np.argmax(totals))] = low
    elif attack == "marginals-rarest-erased":
        for h in counts:
            h[:, int(np.argmin(totals))] = low
    elif attack == "marginals-scaled":
        counts = [np.clip(h * 1000, low, high) for h in counts]
    elif attack == "marginals-one-cell":
        counts = _one_cell(m, counts, int(np.argmin(totals)))
    elif attack == MARGINALS_ALTERNATING:
        counts = [np.where(np.indices(h.shape).sum(axis=0) % 2 == 0, high, low).astype(np.int64) for h in counts]
    else:
        raise ValueError(
            f"forge_marginals: unknown attack {attack!r}; expected one of {(*MARGINALS_ATTACKS, MARGINALS_ALTERNATING)}"
        )
    return replace(own, marginals=NoisyMarginals(tuple(counts), m.epsilon, m.relation, m.n_classes))


def _one_cell(m, counts: list[np.ndarray], k: int) -> list[np.ndarray]:
    """``counts`` with class ``k``'s column of every feature but the first at its column floor (spread over its
    bins) and the first feature's first cell holding what the others gave up: the first column sums to ``d``
    times the class's mass plus the other columns' floors, and the class mass (the mean of the column sums)
    stays what the party released."""
    from edprf_core.marginals import column_floor

    given_up = 0
    for h in counts[1:]:
        floor = int(column_floor(m, h.shape[0]))
        given_up += int(h[:, k].sum()) - floor // h.shape[0] * h.shape[0]
        h[:, k] = floor // h.shape[0]
    counts[0][0, k] += given_up  # the first column now sums to d times the mass less the other columns' floors
    return counts


def _with_counts(forest: DPForest, counts: np.ndarray) -> DPForest:
    """``forest`` with ``counts`` at its leaves, each leaf's label their argmax (as the decoder requires)."""
    leaves = forest.trees.feature < 0
    out = np.where(leaves[:, None], np.clip(np.rint(counts), 0, MAX_LEAF_COUNT), forest.trees.leaf_counts)
    label = np.where(leaves, np.argmax(out, axis=1), forest.trees.leaf_class).astype(forest.trees.leaf_class.dtype)
    trees = replace(forest.trees, leaf_counts=out.astype(np.int64), leaf_class=label)
    return replace(forest, trees=trees, _routing={})


def _one_hot(n_nodes: int, n_classes: int, cls: np.ndarray, mass: np.ndarray | float) -> np.ndarray:
    counts = np.zeros((n_nodes, n_classes))
    counts[np.arange(n_nodes), cls] = mass
    return counts


def forge(
    attack: str,
    own: DPForest,
    *,
    honest_model: Callable[[pd.DataFrame], np.ndarray] | None = None,
    own_rows: pd.DataFrame | None = None,
    other: DPForest | None = None,
) -> DPForest:
    """The hostile party's release for ``attack``, built from its own honestly shaped forest ``own``.

    Parameters
    ----------
    attack : one of :data:`ATTACKS`
    own : DPForest
        A forest the hostile party fitted with the requested parameters (leaf counts); its shapes are kept.
    honest_model : callable, optional
        ``X -> class probabilities`` of the honest parties' model (``inverted*``: the attacker is
        assumed to know it, the worst case).
    own_rows : DataFrame, optional
        The hostile party's own feature rows (``inverted*``: where it measures the honest model).
    other : DPForest, optional
        Another party's release (``copied-release``).
    """
    trees = own.trees
    if trees.leaf_counts is None:
        raise ValueError("forge: the hostile forest must release leaf counts (leaf='counts')")
    counts = trees.leaf_counts.astype(np.float64)
    n_nodes, n_classes = counts.shape
    leaves = trees.feature < 0
    totals = counts[leaves].sum(axis=0)
    if attack == "rarest-class":
        return _with_counts(own, _one_hot(n_nodes, n_classes, np.full(n_nodes, int(np.argmin(totals))), MAX_LEAF_COUNT))
    if attack == "majority-class":
        return _with_counts(own, _one_hot(n_nodes, n_classes, np.full(n_nodes, int(np.argmax(totals))), MAX_LEAF_COUNT))
    if attack == "zero-counts":
        return _with_counts(own, np.zeros_like(counts))
    if attack == "labels-rotated":
        return _with_counts(own, np.roll(counts, 1, axis=1))
    if attack == "counts-scaled":
        return _with_counts(own, counts * 1000.0)
    if attack == "copied-release":
        if other is None:
            raise ValueError("forge: copied-release needs the other party's release")
        copied = replace(other, parts=own.parts, _routing={})
        return _with_counts(copied, np.roll(other.trees.leaf_counts.astype(np.float64), 1, axis=1) * 1000.0)
    if attack == "one-class-per-tree":
        cls = trees.tree_of_node() % n_classes
        return _with_counts(own, _one_hot(n_nodes, n_classes, cls, MAX_LEAF_COUNT))
    if attack in ("inverted", "inverted-plausible"):
        if honest_model is None or own_rows is None:
            raise ValueError(f"forge: {attack} needs the honest model and the hostile party's rows")
        proba = honest_model(own_rows)
        leaf_of_row = own._table().leaves(own.encode(own_rows))  # (n_trees, n_rows)
        rated = np.full((n_nodes, n_classes), 1.0 / n_classes)
        for t in range(own.n_trees):
            sums = np.zeros((n_nodes, n_classes))
            np.add.at(sums, leaf_of_row[t], proba)
            seen = sums.sum(axis=1) > 0
            rated[seen] = sums[seen] / sums[seen].sum(axis=1, keepdims=True)
        least = np.argmin(rated, axis=1)
        mass = MAX_LEAF_COUNT if attack == "inverted" else np.maximum(counts.sum(axis=1), 1.0)
        return _with_counts(own, _one_hot(n_nodes, n_classes, least, mass))
    raise ValueError(f"forge: unknown attack {attack!r}; expected one of {ATTACKS}")


SELF_CONTAINED_ATTACKS = (
    "rarest-class",
    "majority-class",
    "zero-counts",
    "labels-rotated",
    "counts-scaled",
    "one-class-per-tree",
)
"""The attacks a party can mount from its own release alone (what the hostile ClientApps use)."""


REFUSED_ATTACKS = ("root-only",)
"""Forged shapes the decoder refuses (``bad_structure``).  ``root-only``: every tree a single leaf holding
``2**31 - 1`` of the class the party's own counts (or labels) hold least, under the genuine parameters (a fixed
depth of, say, 4).  Honest code never stops a path above the depth limit while a split candidate is left on it
(:mod:`edprf_core._builder`), and a root has every candidate left."""


def _forged_shape_bytes(payload: bytes, schema, attack: str, signing_key) -> bytes:
    """The Release inside ``payload`` with its trees replaced, edited through the protobuf API (the encoder
    refuses such trees), re-signed with ``signing_key`` when given."""
    from protocol import INSPECTION_POLICY, decode_release
    from protocol import release_pb2 as pb
    from protocol._signature import sign_release_bytes

    if attack != "root-only":
        raise ValueError(f"forge_release_bytes: expected one of {REFUSED_ATTACKS}, got {attack!r}")
    trees = decode_release(payload, schema, INSPECTION_POLICY).forest.trees
    leaves = trees.feature < 0
    if trees.leaf_counts is not None:
        rarest = int(np.argmin(trees.leaf_counts[leaves].sum(axis=0)))
    else:
        rarest = int(np.argmin(np.bincount(trees.leaf_class[leaves], minlength=schema.n_classes)))
    release = pb.Release.FromString(pb.SignedRelease.FromString(payload).release)
    n = trees.n_trees
    arrays = {"nodes_per_tree": [1] * n, "feature": [-1] * n, "split": [-1] * n, "first_child": [-1] * n}
    arrays["leaf_class"] = [rarest] * n
    counts = [MAX_LEAF_COUNT if c == rarest else 0 for c in range(schema.n_classes)]
    arrays["leaf_counts"] = counts * n if trees.leaf_counts is not None else []
    for name, values in arrays.items():
        field = getattr(release.trees, name)
        del field[:]
        field.extend(values)
    raw = release.SerializeToString(deterministic=True)
    return sign_release_bytes(raw, signing_key).SerializeToString(deterministic=True)


def forge_release_bytes(payload: bytes, schema, attack: str, signing_key=None) -> bytes:
    """Re-issue a party's own genuine release with forged counts: same party, run, request, parameters, shapes.

    ``payload`` is the party's honest ``SignedRelease``; the result is signed with ``signing_key``
    (the party's registered key) when given, so it passes the decoder, the signature check and the
    coordinator's conformance checks.  ``attack`` is one of :data:`SELF_CONTAINED_ATTACKS`, or of
    :data:`REFUSED_ATTACKS` (forged shapes, same party, run, request and parameters: the decoder refuses it).
    """
    from protocol import INSPECTION_POLICY, decode_release, encode_release

    if attack in REFUSED_ATTACKS:
        return _forged_shape_bytes(payload, schema, attack, signing_key)
    if attack not in SELF_CONTAINED_ATTACKS:
        raise ValueError(
            f"forge_release_bytes: expected one of {SELF_CONTAINED_ATTACKS + REFUSED_ATTACKS}, got {attack!r}"
        )
    genuine = decode_release(payload, schema, INSPECTION_POLICY)
    forged = forge(attack, genuine.forest)
    return encode_release(
        forged,
        genuine.party_id,
        signing_key,
        allow_non_dp=not forged.dp,
        run_id=genuine.run_id,
        request_id=genuine.request_id,
    )


def seeded_federation(seed: int):
    """Wall robot, 4 honest IID parties + 1 hostile party's own forest (2 trees each, epsilon = 1, seeded).

    Seed ``s``: 1000 test rows drawn by ``default_rng(s)``, the rest split in 5 shares, party ``i`` fitted with
    ``random_state = 100 + 10 s + i`` (seed 0 is the fixture of ``tests/core/test_bounded_influence.py``); returns the 4 honest forests, the hostile party's own forest, its rows, the test rows and their class indices.
    """
    forests, rows, X_test, truth = seeded_parties(seed, 5)
    return forests[:4], forests[4], rows[4], X_test, truth


def seeded_parties(seed: int, n_parties: int, first_state: int = 100):
    """Wall robot: 1000 test rows drawn by ``default_rng(seed)``, the rest in ``n_parties`` IID shares, party ``i``
    fitted with 2 trees at epsilon = 1 and ``random_state = first_state + 10 seed + i``; returns the forests, each
    party's rows, the test rows and their class indices."""
    from edprf_core import EDPRFClassifier, load_embedded
    from edprf_core.encoding import encode_labels

    X, y, schema = load_embedded("wall_robot_navigation")
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(X))
    test, train = order[:1000], order[1000:]
    shares = np.array_split(train, n_parties)
    forests = [
        EDPRFClassifier(
            schema,
            epsilon=1.0,
            n_trees=2,
            max_depth="auto",
            max_depth_cap=8,
            n_bins=20,
            random_state=first_state + 10 * seed + i,
        )
        .fit(X.iloc[rows], y.iloc[rows])
        .forest_
        for i, rows in enumerate(shares)
    ]
    truth = encode_labels(y.iloc[test], schema)
    return forests, [X.iloc[rows] for rows in shares], X.iloc[test], truth
