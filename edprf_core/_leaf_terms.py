"""The pooled probabilities of a forest as per-leaf vectors, part weights and a link (public accessor).

:meth:`edprf_core.DPForest.predict_proba` works in three steps
(:mod:`edprf_core._leaf_distribution`, items 4-5):

1. every tree adds the vector of the leaf a row reaches to its part's score
   (log-linear: ``a_tk (log p_l(k) - log ref_tk) / w_jk``; mean: ``p_l / T_j``);
2. the parts' scores are combined by :func:`bounded_part_mean`: with at
   least ``2 f + 1`` parts each class's score is clipped to the range the
   other parts span (widened by ``PLAUSIBLE_CLIP_MARGIN`` for a part of
   plausible size, ``CLIP_MARGIN`` otherwise) and each part's weight is
   capped, then the weighted mean is taken;
3. log-linear pooling: ``softmax(log pi + T**POOLING_EXPONENT * pooled)``;
   mean pooling: ``pooled / sum(pooled)``.  A forest of label trees returns
   its vote shares.

:func:`leaf_terms` precomputes what these steps need from the forest's own
pooling quantities (the methods ``predict_proba`` calls, so the two cannot
drift apart silently: ``tests/core/test_rules_and_explanations.py`` checks
they agree).  Explanations (:mod:`edprf_core._explanation`) and the ONNX
export (:mod:`edprf_core._onnx_export`) are built on them.

Privacy cost: none.  Every vector and weight is a function of released
values (tree structure, clamped noisy leaf counts) and public parameters
(leaf budgets, sensitivity, the tolerated number of hostile parts); nothing
here reads data (post-processing theorem).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from ._forest import DPForest
from ._leaf_distribution import (
    POOLING_EXPONENT,
    POOLINGS,
    bounded_part_mean,
    capped_part_weights,
    clipped_part_values,
    part_clip_margins,
    tolerated_among,
)

__all__ = ["LINKS", "LeafTerms", "leaf_indices", "leaf_terms"]

LINKS = ("softmax", "normalize", "identity")
"""How the pooled scores become probabilities: log-linear (softmax), mean (normalize), votes (identity)."""


@dataclass(frozen=True, eq=False)
class LeafTerms:
    """Everything :meth:`~edprf_core.DPForest.predict_proba` computes once per model, precomputed.

    Attributes
    ----------
    node_terms : ndarray, shape (n_nodes, n_classes)
        The vector of every leaf in its part's score (rows of split nodes are 0).
    part_of_tree : ndarray of int, shape (n_trees,)
    weights : ndarray, shape (n_parts, n_classes)
        Each part's weight per class (before the cap of the bounded mean).
    tolerated : int
        ``f`` of :func:`~edprf_core._leaf_distribution.bounded_part_mean`, as the forest's parts can bound it
        (:func:`~edprf_core._leaf_distribution.tolerated_among`).
    prior : ndarray, shape (n_classes,)
        The consortium's class mix (log-linear pooling; ones otherwise).
    scale : float
        ``T ** POOLING_EXPONENT`` (log-linear pooling; 1 otherwise).
    link : {"softmax", "normalize", "identity"}
    pooling : {"log-linear", "mean", "votes"}
        The rule actually used (a forest with label trees pools by the mean, one with labels only votes).
    """

    node_terms: NDArray[np.float64]
    part_of_tree: NDArray[np.int64]
    weights: NDArray[np.float64]
    tolerated: int
    prior: NDArray[np.float64]
    scale: float
    link: str
    pooling: str

    @property
    def n_parts(self) -> int:
        return int(self.weights.shape[0])

    @property
    def clips(self) -> bool:
        """Whether the bounded mean clips values and caps weights (``f > 0`` and ``n_parts >= 2 f + 1``)."""
        return self.tolerated > 0 and self.n_parts >= 2 * self.tolerated + 1

    def effective_weights(self) -> NDArray[np.float64]:
        """The parts' weights after the cap, normalized per class (0 for a class no part weighs)."""
        w = capped_part_weights(self.weights, self.tolerated) if self.clips else self.weights
        total = w.sum(axis=0)
        return w / np.where(total > 0, total, 1.0)

    def part_scores(self, leaves: NDArray[np.int64]) -> NDArray[np.float64]:
        """Per part, the sum of its trees' leaf vectors; ``leaves`` shape (n_trees, n_rows) -> (n_parts, n_rows, K)."""
        out = np.zeros((self.n_parts, leaves.shape[1], self.node_terms.shape[1]))
        np.add.at(out, self.part_of_tree, self.node_terms[leaves])
        return out

    def clipped_scores(self, scores: NDArray[np.float64]) -> NDArray[np.float64]:
        """The parts' scores as the bounded mean uses them (clipped to the range of the others)."""
        return clipped_part_values(scores, self.tolerated, self.clip_margins()) if self.clips else scores

    def clip_margins(self) -> NDArray[np.float64]:
        """Each part's clip margin, in widths (:func:`~edprf_core._leaf_distribution.part_clip_margins`)."""
        return part_clip_margins(self.weights, self.tolerated)

    def probabilities(self, pooled: NDArray[np.float64]) -> NDArray[np.float64]:
        """Apply the link to the pooled scores (shape (n_rows, n_classes))."""
        if self.link == "identity":
            return pooled
        if self.link == "normalize":
            return pooled / pooled.sum(axis=1, keepdims=True)
        score = np.log(self.prior)[None, :] + self.scale * pooled
        score -= score.max(axis=1, keepdims=True)
        out = np.exp(score)
        return out / out.sum(axis=1, keepdims=True)

    def pool(self, leaves: NDArray[np.int64]) -> NDArray[np.float64]:
        """Probabilities of rows routed to ``leaves`` (global node indices, shape (n_trees, n_rows))."""
        return self.probabilities(bounded_part_mean(self.part_scores(leaves), self.weights, self.tolerated))


def leaf_indices(forest: DPForest, X: ArrayLike | pd.DataFrame) -> NDArray[np.int64]:
    """Global index of the leaf each row of ``X`` reaches in every tree, shape (n_trees, n_rows).

    ``X`` is encoded under the forest's public schema (its rules for clipping,
    missing and unknown values).  Privacy cost: none (a per-row map under
    public rules; reads only ``X``, which the caller supplies).
    """
    return forest._table().leaves(forest.encode(X))


def leaf_terms(
    forest: DPForest, *, pooling: str = "log-linear", label_shift: bool = True, tolerated_parties: int | None = None
) -> LeafTerms:
    """What reproduces ``forest.predict_proba(X, pooling=..., label_shift=..., tolerated_parties=...)``.

    Parameters
    ----------
    forest : DPForest
    pooling : {"log-linear", "mean"}, default "log-linear"
    label_shift : bool, default True
    tolerated_parties : int >= 0, optional
        As in :meth:`~edprf_core.DPForest.predict_proba` (default: the forest's
        :attr:`~edprf_core.DPForest.tolerated_parties`).

    Returns
    -------
    LeafTerms

    Privacy cost: none (post-processing of released values and public
    parameters; no data is read).
    """
    if pooling not in POOLINGS:
        raise ValueError(f"pooling must be one of {POOLINGS}, got {pooling!r}")
    tolerated = forest.tolerated_parties if tolerated_parties is None else tolerated_parties
    if isinstance(tolerated, bool) or not isinstance(tolerated, (int, np.integer)) or tolerated < 0:
        raise ValueError(f"tolerated_parties must be an integer >= 0, got {tolerated_parties!r}")
    bounded = tolerated_among(len(forest.parts), tolerated)  # what the bounded mean applies with this many parts
    trees = forest.trees
    n_classes, n_trees = forest.schema.n_classes, forest.n_trees
    part_of_tree = np.repeat(np.arange(len(forest.parts)), [n for _, _, n in forest.parts]).astype(np.int64)
    if not forest.has_counts:  # vote shares: one part, no bound, the sum is the probability
        terms = np.zeros((trees.n_nodes, n_classes))
        leaves = np.flatnonzero(trees.feature < 0)
        terms[leaves, trees.leaf_class[leaves]] = 1.0 / n_trees
        return LeafTerms(
            node_terms=terms,
            part_of_tree=np.zeros(n_trees, dtype=np.int64),
            weights=np.ones((1, n_classes)),
            tolerated=0,
            prior=np.ones(n_classes),
            scale=1.0,
            link="identity",
            pooling="votes",
        )
    if pooling == "log-linear" and not trees.tree_has_counts().all():
        pooling = "mean"
    vectors, weights = forest._pooling_terms(pooling, label_shift, int(tolerated))
    if pooling == "log-linear":
        return LeafTerms(
            node_terms=np.asarray(vectors),
            part_of_tree=part_of_tree,
            weights=np.asarray(weights),
            tolerated=bounded,
            prior=np.asarray(forest._prior(int(tolerated))),
            scale=float(n_trees) ** POOLING_EXPONENT,
            link="softmax",
            pooling="log-linear",
        )
    return LeafTerms(
        node_terms=np.asarray(vectors),
        part_of_tree=part_of_tree,
        weights=np.asarray(weights),
        tolerated=bounded,
        prior=np.ones(n_classes),
        scale=1.0,
        link="normalize",
        pooling="mean",
    )
