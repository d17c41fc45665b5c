"""Class distributions of leaves, estimated from released noisy counts.

A tree that releases counts (``leaf="counts"``) gives, at every leaf ``l``, a
vector ``c_l = max(0, n_l + Z_l)`` where ``n_l`` are the leaf's true class
counts and ``Z_l`` discrete Laplace noise of scale ``b_l = Delta / eps_l``.
Reading ``c_l / |c_l|`` as the leaf's class distribution is noisy for small
leaves: a leaf with 3 rows and noise of scale 5 says little.  Two steps use
the released counts better.

1. **Consistency up the tree.**  The rows of a split node are exactly the
   rows of its children, so its counts are the sum of theirs.  The estimate
   of an internal node is the sum of its leaves' released counts (each
   leaf's noise is independent, so a node over ``k`` leaves has ``k`` times
   the variance but also ``k`` times the rows).
2. **Shrinkage toward the ancestors.**  From the root down, a node's
   distribution is ``p_v = (c_v + m * p_parent) / (|c_v| + m)``, with
   ``p_parent`` the parent's shrunk distribution and the uniform distribution
   above the root.  ``m`` is a pseudo-count of ``SHRINKAGE * Delta / eps_leaf``
   rows: a leaf whose noisy size is about the noise scale is pulled halfway
   to its parent, a leaf far larger than the noise keeps its own counts.

Privacy: both steps read only released values (the clamped noisy counts and
the tree structure) and public parameters (the leaf budgets, the
sensitivity).  They are post-processing of an ε-DP release and cost no ε
(post-processing theorem: any function of a DP output, computed without
further access to the data, is DP with the same ε).

A tree that releases labels only gives the one-hot distribution of its leaf
label.  How :meth:`edprf_core.DPForest.predict_proba` combines the trees is
item 4 (default) or the arithmetic mean with item 3 (``pooling="mean"``).

3. **Label-shift correction across parts** (merged forests only).  Parties
   differ in their class mix: a clinic that sees mostly one diagnosis grows
   leaves that say that diagnosis everywhere.  When parties share how features
   depend on the class and differ only in the class shares (label skew), a
   party's leaf distribution ``p_j(y | x)`` is proportional to
   ``p(x | y) * pi_j(y)``, so ``p_j(y | x) * pi(y) / pi_j(y)``, renormalized,
   estimates the consortium's ``p(y | x)``.  ``pi_j`` is part ``j``'s class
   mix read off the sum of its leaves' released counts (each of its rows sits
   in exactly one leaf of each tree; +1 per class keeps it positive) and
   ``pi`` the same over all parts.  A single part is left unchanged
   (``pi = pi_j``).  Parts that released labels have no counts and are left
   unchanged.  Post-processing of released counts: no ε.

4. **Log-linear pooling across trees** (the default of ``predict_proba``).
   A tree's leaf gives the likelihood ratio ``r_t(k | x) = p_t(k | x) /
   pi_t(k)``, with ``pi_t`` the tree's own root distribution (the sum of its
   leaves' counts, shrunk like any node): under label skew ``r_t`` does not
   depend on the party's class mix, and a leaf with no information (shrunk
   to its ancestors) gives a ratio near 1, i.e. no vote.  The trees combine
   as ``log p(k | x) = log pi(k) + T**POOLING_EXPONENT * sum_t a_tk log
   r_t(k | x) + const``, ``pi`` the consortium's class mix (item 3) and
   ``a_tk`` tree ``t``'s share of the rows of class ``k`` over all trees
   (:func:`class_share_weights`): a party that saw almost no rows of class
   ``k`` has no say on ``k``, instead of injecting the noise of its near-empty
   class-``k`` counts.  With equal shares ``a_tk = 1 / T`` this is the
   geometric mean of the ratios (exponent 0) up to the product of experts
   (exponent 1).  Post-processing of released counts and structure: no ε.

   Why not the arithmetic mean: the mean of ``T`` flat distributions stays
   flat, so minority classes rarely win (wall robot, 5 IID parties: balanced
   accuracy 0.62, accuracy 79.8 against 91.0 for the central model), and under
   label skew the label-shift factors multiply noise (wall, Dirichlet 0.5:
   74.5 +- 4.5).  Validation numbers are at :data:`POOLING_EXPONENT`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ._tree import ForestArrays

__all__ = [
    "POOLINGS",
    "POOLING_EXPONENT",
    "SHRINKAGE",
    "PartPooling",
    "class_share_weights",
    "consortium_prior",
    "corrected_class_totals",
    "label_shift_factors",
    "leaf_distributions",
    "log_linear_pool",
    "released_class_totals",
]

SHRINKAGE = 8.0
"""Pseudo-count of the shrinkage in units of the leaf noise scale (see the module docstring).

Chosen on validation rows only (seeds 0-3, each seed's training rows split
75/25) among 0.5 ... 32 by ROC AUC: 4 to 16 are within 0.001 of the best on
diabetes and bank marketing at epsilon = 1 and 0.1; 8 is the middle."""


POOLINGS = ("log-linear", "mean")
"""How :meth:`edprf_core.DPForest.predict_proba` combines trees (item 4, or the mean with item 3)."""

POOLING_EXPONENT = 0.25
"""Log-linear pooling multiplies the share-weighted log ratios by ``T ** POOLING_EXPONENT``.

Chosen on validation rows only (seeds 0-3, each seed's training rows split
75/25, the test rows untouched), 5 parties IID and Dirichlet 0.5 plus the
central defaults, diabetes / wall robot / bank marketing at epsilon = 1,
among 0, 0.25, 0.5, 0.75, 1 by log loss (mean ratio to the arithmetic mean's
over the 9 settings: 0.93, **0.89**, 0.91, 1.00, 1.20).  At 0.25, against the
mean with label-shift correction (validation): accuracy wall IID 79.6 vs
77.6 and Dirichlet 77.0 +- 1.2 vs 71.4 +- 3.2, diabetes and bank within
+-0.7 points, binary ROC AUC 0.001 to 0.007 higher (a binary AUC does not depend on the
exponent), ECE of the central model 0.020 vs 0.026 (bank) and 0.027 vs 0.036
(diabetes).  Exponent 0.5 gains about 1 more point on the wall robot at a
worse calibration (central bank ECE 0.032); 1 (product of experts) is
overconfident (ECE 0.07)."""


def leaf_distributions(trees: ForestArrays, n_classes: int, pseudo_counts: NDArray[np.float64],
                       ) -> NDArray[np.float64]:
    """Class distribution of every node, shape ``(n_nodes, n_classes)``.

    Parameters
    ----------
    trees : ForestArrays
        Released trees; leaves with counts (``trees.has_counts()``) are
        smoothed as in the module docstring, other leaves are one-hot at their
        label.  Rows of split nodes hold the shrunk estimates of count trees
        (used by their children) and are not meant for prediction.
    n_classes : int
    pseudo_counts : ndarray of float, shape (n_trees,)
        The shrinkage pseudo-count ``m`` of each tree (0 disables shrinkage).

    Privacy cost: none (post-processing of released values).
    """
    n = trees.n_nodes
    out = np.zeros((n, n_classes))
    leaves = trees.feature < 0
    has = trees.has_counts()
    labelled = leaves & ~has
    out[np.flatnonzero(labelled), trees.leaf_class[labelled]] = 1.0
    if not has.any():
        return out
    depth, parent = trees.depths_and_parents()
    sums = np.where(has[:, None], trees.leaf_counts, 0).astype(np.float64)
    for level in range(int(depth.max()), 0, -1):
        nodes = np.flatnonzero(depth == level)
        np.add.at(sums, parent[nodes], sums[nodes])
    tree_of = trees.tree_of_node()
    m = np.asarray(pseudo_counts, dtype=np.float64)[tree_of][:, None]
    prior = np.full((n, n_classes), 1.0 / n_classes)
    for level in range(int(depth.max()) + 1):
        nodes = np.flatnonzero(depth == level)
        above = prior[nodes] if level == 0 else out[parent[nodes]]
        total = sums[nodes].sum(axis=1, keepdims=True) + m[nodes]
        smoothed = np.divide(sums[nodes] + m[nodes] * above, total, out=above.copy(), where=total > 0)
        keep = labelled[nodes]
        out[nodes] = np.where(keep[:, None], out[nodes], smoothed)
    return out


def label_shift_factors(trees: ForestArrays, n_classes: int, part_sizes: list[int]) -> NDArray[np.float64]:
    """Per tree, the factors ``pi(y) / pi_j(y)`` of its part ``j`` (see the module docstring), shape (n_trees, K).

    ``part_sizes`` gives the number of consecutive trees of each part.  Trees
    without counts get factors 1.  Privacy cost: none (post-processing).
    """
    n_parts = len(part_sizes)
    factors = np.ones((trees.n_trees, n_classes))
    if n_parts < 2 or trees.leaf_counts is None:
        return factors
    part_of_tree = np.repeat(np.arange(n_parts), part_sizes)
    per_tree = released_class_totals(trees, n_classes)
    trees_with_counts = trees.tree_has_counts()
    per_part = np.zeros((n_parts, n_classes))
    np.add.at(per_part, part_of_tree[trees_with_counts], per_tree[trees_with_counts])
    n_trees_part = np.bincount(part_of_tree[trees_with_counts], minlength=n_parts)
    counted = n_trees_part > 0
    if counted.sum() < 2:
        return factors
    # each tree of a part covers that part's rows once (disjoint rows per tree under parallel composition)
    local = per_part[counted] + 1.0
    local /= local.sum(axis=1, keepdims=True)
    overall = per_part[counted].sum(axis=0) + 1.0
    overall /= overall.sum()
    ratio = np.ones((n_parts, n_classes))
    ratio[counted] = overall[None, :] / local
    factors[trees_with_counts] = ratio[part_of_tree[trees_with_counts]]
    return factors


def _discrete_laplace_positive_part(scale: NDArray[np.float64]) -> NDArray[np.float64]:
    """``E[max(0, Z)]`` for ``Z`` discrete Laplace, ``P(Z = z)`` proportional to ``exp(-|z| / scale)``."""
    t = np.exp(-1.0 / np.maximum(scale, 1e-12))
    return t / (1.0 - t * t)


def consortium_prior(trees: ForestArrays, n_classes: int) -> NDArray[np.float64]:
    """The consortium's class mix ``pi`` (item 3): all parts' leaf counts summed, +1 per class, normalized.

    Trees without counts are ignored (uniform when none has counts).
    Privacy cost: none (post-processing of released counts).
    """
    if trees.leaf_counts is None:
        return np.full(n_classes, 1.0 / n_classes)
    total = released_class_totals(trees, n_classes).sum(axis=0) + 1.0
    return total / total.sum()


def released_class_totals(trees: ForestArrays, n_classes: int) -> NDArray[np.float64]:
    """Each tree's leaves' released (clamped) class counts summed, shape ``(n_trees, n_classes)``; 0 without counts.

    Privacy cost: none (post-processing of released counts).
    """
    totals = np.zeros((trees.n_trees, n_classes))
    if trees.leaf_counts is not None:
        has = trees.has_counts()
        np.add.at(totals, trees.tree_of_node()[has], trees.leaf_counts[has].astype(np.float64))
    return totals


def class_share_weights(trees: ForestArrays, n_classes: int, noise_scales: NDArray[np.float64],
                        ) -> NDArray[np.float64]:
    """Tree ``t``'s share ``a_tk`` of the rows of class ``k`` over all trees, shape ``(n_trees, n_classes)``.

    A tree's class-``k`` total is the sum of its leaves' released counts,
    less the mass the clamping at 0 adds to leaves without class-``k`` rows
    (``n_leaves * E[max(0, Z)]``, ``Z`` the leaf noise of scale
    ``noise_scales[t]``), floored at 0, plus 1.  Each column sums to 1.
    Trees without counts get weight 0 (all trees 1 / T when none has counts).

    Parameters
    ----------
    trees : ForestArrays
    n_classes : int
    noise_scales : ndarray of float, shape (n_trees,)
        Scale ``Delta / eps_leaf`` of each tree's leaf-count noise.

    Privacy cost: none (post-processing of released counts and public budgets).
    """
    if trees.leaf_counts is None:
        return np.full((trees.n_trees, n_classes), 1.0 / trees.n_trees)
    rows = corrected_class_totals(trees, n_classes, noise_scales) + 1.0
    rows[~trees.tree_has_counts()] = 0.0
    return rows / rows.sum(axis=0, keepdims=True)


def corrected_class_totals(trees: ForestArrays, n_classes: int, noise_scales: NDArray[np.float64],
                           ) -> NDArray[np.float64]:
    """Each tree's released class totals less the mass clamping adds, shape ``(n_trees, n_classes)``.

    A tree's class-``k`` total is the sum of its leaves' released counts;
    clamping the noise at 0 adds ``E[max(0, Z)]`` per leaf in expectation to
    every class, even to classes a leaf never saw (``Z`` the discrete Laplace
    leaf noise of scale ``noise_scales[t]``), which makes every tree's class
    mix look more even than it is.  Returned: ``max(0, total - n_leaves *
    E[max(0, Z)])``; 0 for trees without counts.

    Privacy cost: none (post-processing of released counts and public budgets).
    """
    totals = released_class_totals(trees, n_classes)
    n_leaves = np.bincount(trees.tree_of_node()[trees.has_counts()], minlength=trees.n_trees).astype(np.float64)
    clamp_mass = n_leaves * _discrete_laplace_positive_part(np.asarray(noise_scales, dtype=np.float64))
    return np.maximum(totals - clamp_mass[:, None], 0.0)


def log_linear_pool(weighted_log_ratios: NDArray[np.float64], prior: NDArray[np.float64], n_trees: int,
                    exponent: float = POOLING_EXPONENT) -> NDArray[np.float64]:
    """Item 4: ``p(k | x)`` proportional to ``pi(k) * exp(T**exponent * sum_t a_tk log r_t(k | x))``.

    Parameters
    ----------
    weighted_log_ratios : ndarray, shape (n_samples, n_classes)
        ``sum_t a_tk log r_t(k | x)`` per row.
    prior : ndarray, shape (n_classes,)
        The consortium's class mix ``pi`` (positive).
    n_trees : int >= 1
    exponent : float >= 0
        0 gives the (share-weighted) geometric mean of the ratios, 1 the
        product of experts.

    Privacy cost: none (post-processing).
    """
    score = np.log(prior)[None, :] + float(n_trees) ** exponent * weighted_log_ratios
    score -= score.max(axis=1, keepdims=True)
    out = np.exp(score)
    return out / out.sum(axis=1, keepdims=True)


@dataclass(frozen=True)
class PartPooling:
    """Each part's additive terms of log-linear pooling on some rows (item 4), to pool any subset of parts.

    Log-linear pooling of a set ``S`` of trees is
    ``pi_S(k) * exp(T_S**e * sum_{t in S} a_tk l_tk(x) / sum_{t in S} a_tk)``:
    the class shares of a subset are the forest's shares renormalized over
    the subset (each tree's unnormalized share depends on that tree only),
    and ``pi_S`` is the subset's released counts summed, plus 1 per class.
    Every term is a sum over trees, so keeping one sum per part pools any
    subset of parts exactly as the merged forest of those parts would
    (``tests/core/test_pooling.py`` checks it against :func:`merge_forests`).

    Attributes
    ----------
    numerators : ndarray, shape (n_parts, n_rows, n_classes)
        Per part, ``sum_t a_tk * (log p_t(k | x) - log p_t(k | root))``.
    weights : ndarray, shape (n_parts, n_classes)
        Per part, ``sum_t a_tk``.
    class_totals : ndarray, shape (n_parts, n_classes)
        Per part, the sum of its leaves' released (clamped) counts.
    n_trees : ndarray of int, shape (n_parts,)

    Privacy cost: none (post-processing of the parts' releases).
    """

    numerators: NDArray[np.float64]
    weights: NDArray[np.float64]
    class_totals: NDArray[np.float64]
    n_trees: NDArray[np.int64]

    @property
    def n_parts(self) -> int:
        return int(self.n_trees.size)

    def pool(self, parts: Sequence[int]) -> NDArray[np.float64]:
        """Class probabilities of the merged forest of ``parts`` (indices), shape (n_rows, n_classes)."""
        idx = np.asarray(list(parts), dtype=np.int64)
        if idx.size == 0:
            raise ValueError("parts: expected at least one part index, got none")
        weights = self.weights[idx].sum(axis=0)
        ratio = self.numerators[idx].sum(axis=0) / np.where(weights > 0, weights, 1.0)
        prior = self.class_totals[idx].sum(axis=0) + 1.0
        return log_linear_pool(ratio, prior / prior.sum(), int(self.n_trees[idx].sum()))
