"""The pooled probabilities of a forest as one additive term per leaf (public accessor).

:meth:`edprf_core.DPForest.predict_proba` pools the trees' leaf distributions.
Both pooling rules are a sum over trees of one vector per leaf, followed by a
fixed link:

- **log-linear** (every tree released counts): ``p(. | x) = softmax(b +
  sum_t v_{l_t(x)})`` with ``b = log pi`` (the consortium's class mix) and,
  for the leaf ``l`` of tree ``t``, ``v_lk = T**POOLING_EXPONENT * a_tk *
  (log p_l(k) - log ref_tk)`` (``a_tk`` the tree's class share, ``ref_t`` its
  root distribution, or ``pi`` without label-shift correction);
- **mean** (and label votes): ``p(. | x) = sum_t v_{l_t(x)}`` with ``v_l =
  normalize(p_l * f_t) / T`` (``f_t`` the label-shift factors of the tree's
  part, 1 without correction; a label leaf's ``p_l`` is one-hot, so its
  vector is its vote share ``1 / T``), ``b = 0``, identity link.

:func:`leaf_terms` precomputes these vectors from the forest's own pooling
quantities (it calls the methods :meth:`~edprf_core.DPForest.predict_proba`
uses, so the two cannot drift apart silently: ``tests/core/test_rules_and_
explanations.py`` checks they agree).  Explanations
(:mod:`edprf_core._explanation`) and the ONNX export
(:mod:`edprf_core._onnx_export`) are built on them.

Privacy cost: none.  Every vector is a function of released values (tree
structure, clamped noisy leaf counts) and public parameters (leaf budgets,
sensitivity); nothing here reads data (post-processing theorem).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from ._leaf_distribution import POOLING_EXPONENT, POOLINGS, consortium_prior
from ._release import DPForest

__all__ = ["LINKS", "LeafTerms", "leaf_indices", "leaf_terms"]

LINKS = ("softmax", "identity")
"""How the summed leaf vectors become probabilities: softmax (log-linear pooling) or none (mean, votes)."""


@dataclass(frozen=True, eq=False)
class LeafTerms:
    """One additive vector per leaf, a bias and a link: the forest's pooling rule, precomputed.

    Attributes
    ----------
    bias : ndarray, shape (n_classes,)
        Added once (``log pi`` for log-linear pooling, 0 for the mean).
    node_terms : ndarray, shape (n_nodes, n_classes)
        The vector of every leaf (rows of split nodes are 0).
    link : {"softmax", "identity"}
    pooling : {"log-linear", "mean"}
        The rule actually used (a forest with label trees always pools by the mean).
    """

    bias: NDArray[np.float64]
    node_terms: NDArray[np.float64]
    link: str
    pooling: str

    def probabilities(self, scores: NDArray[np.float64]) -> NDArray[np.float64]:
        """Apply the link to ``bias + sum of leaf vectors`` (shape (n_rows, n_classes))."""
        if self.link == "identity":
            return scores
        shifted = scores - scores.max(axis=1, keepdims=True)
        out = np.exp(shifted)
        return out / out.sum(axis=1, keepdims=True)

    def pool(self, leaves: NDArray[np.int64]) -> NDArray[np.float64]:
        """Probabilities of rows routed to ``leaves`` (global node indices, shape (n_trees, n_rows))."""
        return self.probabilities(self.bias[None, :] + self.node_terms[leaves].sum(axis=0))


def leaf_indices(forest: DPForest, X: ArrayLike | pd.DataFrame) -> NDArray[np.int64]:
    """Global index of the leaf each row of ``X`` reaches in every tree, shape (n_trees, n_rows).

    ``X`` is encoded under the forest's public schema (its rules for clipping,
    missing and unknown values).  Privacy cost: none (a per-row map under
    public rules; reads only ``X``, which the caller supplies).
    """
    return forest._table().leaves(forest.encode(X))


def leaf_terms(forest: DPForest, *, pooling: str = "log-linear", label_shift: bool = True) -> LeafTerms:
    """The per-leaf vectors that reproduce ``forest.predict_proba(X, pooling=..., label_shift=...)``.

    Parameters
    ----------
    forest : DPForest
    pooling : {"log-linear", "mean"}, default "log-linear"
        As in :meth:`~edprf_core.DPForest.predict_proba`; a forest with any
        label-only tree pools by the mean whatever is asked.
    label_shift : bool, default True
        As in :meth:`~edprf_core.DPForest.predict_proba`.

    Returns
    -------
    LeafTerms

    Privacy cost: none (post-processing of released values and public
    parameters; no data is read).
    """
    if pooling not in POOLINGS:
        raise ValueError(f"pooling must be one of {POOLINGS}, got {pooling!r}")
    trees = forest.trees
    n_classes, n_trees = forest.schema.n_classes, forest.n_trees
    leaves = trees.feature < 0
    dist = forest.node_distributions()
    tree_of = trees.tree_of_node()
    terms = np.zeros((trees.n_nodes, n_classes))
    if forest.has_counts and pooling == "log-linear" and trees.tree_has_counts().all():
        prior = consortium_prior(trees, n_classes)
        roots = trees.tree_offsets[:-1]
        log_ref = np.log(dist[roots]) if label_shift else np.broadcast_to(np.log(prior), (n_trees, n_classes))
        scale = float(n_trees) ** POOLING_EXPONENT
        shares = forest._class_shares()
        with np.errstate(divide="ignore"):  # split-node rows are dropped below
            raw = scale * shares[tree_of] * (np.log(dist) - log_ref[tree_of])
        terms[leaves] = raw[leaves]
        return LeafTerms(bias=np.log(prior), node_terms=terms, link="softmax", pooling="log-linear")
    p = dist
    if forest.has_counts and label_shift:
        p = dist * forest._label_shift()[tree_of]
        total = p.sum(axis=1, keepdims=True)
        p = np.divide(p, total, out=np.zeros_like(p), where=total > 0)
    terms[leaves] = p[leaves] / float(n_trees)
    return LeafTerms(bias=np.zeros(n_classes), node_terms=terms, link="identity", pooling="mean")
