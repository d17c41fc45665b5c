"""Per-row support: how much released (noisy) mass stands behind a row's prediction, in units of its noise.

A schema's bounds are public and often wider than the data (HbA1c 3-15 % against training rows up to 9 %).  A
row in a region with no training rows still gets a probability: the tree leaves and marginals bins it reaches
hold pure noise; the estimators' shrinkage does not bring such a count back to the class prior: the floor at 0
keeps the noise's positive part, which looks like an even class mix, so the noise moves the probability either
way and often toward the rarer class.  That probability says nothing about the row.  :func:`row_support` finds those rows.

The rule
--------
Every count the model holds was released with discrete Laplace noise of a known scale ``b``:

- a tree leaf ``l`` released ``c_lk = max(0, n_lk + Z_lk)`` for each of the ``K`` classes, ``b_l = Delta /
  eps_l``, ``eps_l`` the ε that leaf spent (:meth:`DPForest.spent_epsilons`) and ``Delta`` the sensitivity of
  its part's neighbouring relation (1 add-remove, 2 replace-one);
- a marginals bin ``v`` of feature ``j`` released the signed ``h_vk = n_vk + Z_vk``, ``b = Delta d / eps``
  (:attr:`NoisyMarginals.noise_scale`; a federation's summed histograms carry their effective budget, so
  ``b`` is the scale of the summed noise).

With ``a = exp(-1 / b)``, a discrete Laplace ``Z`` has variance ``2 a / (1 - a)**2``; its positive part has mean
``mu+ = a / (1 - a**2)`` and second moment ``a / (1 - a)**2``, so variance ``v+ = a / (1 - a)**2 - mu+**2``.

- A leaf is *within noise* when its released mass ``S_l = sum_k c_lk`` is at most what an empty leaf
  (``n_l = 0``) releases plus ``Z_SCORE`` standard deviations: ``S_l <= K mu+ + Z_SCORE sqrt(K v+)``.
- A marginals bin is *within noise* when ``sum_k h_vk <= Z_SCORE sqrt(2 K a / (1 - a)**2)``: its mass is
  within ``Z_SCORE`` standard deviations of zero.

A row has **low support** when most of the evidence behind it is noise: when more than half of the trees that
released counts put it in a leaf within noise, or when the marginals bin of any feature it reaches is within
noise (that feature's term is then noise: the model knows nothing about the row's value of that feature, and
the term can push the probability either way).  The features whose bin is within noise
are named.  An empty region is caught unless its noise happens to exceed ``Z_SCORE`` standard deviations
(about 2 % of empty bins for ``Z_SCORE = 2``, from the normal approximation of the noise sum); a region with
fewer training rows than about ``Z_SCORE`` noise standard deviations is flagged too: its counts cannot be told
from noise.

Limits (not measured here): a federation's marginals are the parties' histograms summed after each was floored
at its own release range, which biases the noise of an empty bin upwards, so more than the ~2 % of empty bins
may pass as evidence; and the rule "any feature's bin" flags more ordinary rows as the number of features grows
or ε shrinks (a thin bin of one feature is enough).  Read ``low`` as "some of this row's evidence is noise",
and the named features as where.  The flag does not change the probability: a bin within noise keeps its term
(making it 0 costs accuracy on the rows a model is validated on, ``results/low_support_fallback.md``).

Privacy: post-processing only.  The rule reads released values (the clamped noisy leaf counts, the noisy
marginals, the tree structure) and public parameters (the ε each count spent, the relation, the number of
features); no row of any party is read and no ε is spent (post-processing theorem).  The caller's rows only
choose which released counts are looked at.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from ._encoding import FeatureGrid, encode_features
from ._forest import LEAF_COUNT_SENSITIVITY, DPForest
from ._marginals import NoisyMarginals

__all__ = ["OK_SUPPORT", "Z_SCORE", "RowSupport", "bin_signal_to_noise", "bins_within_noise", "row_support"]

Z_SCORE = 2.0
"""How many noise standard deviations above an empty count a leaf's or bin's released mass must reach to count as
evidence."""

OK_SUPPORT = "ok"
"""The support label of a row with released evidence behind it."""

LOW_SUPPORT = "low"
TREES_WORD = "tree leaves"
"""Named in a low row's label when most of its tree leaves are within noise."""


def _discrete_laplace_moments(scale: NDArray[np.float64]) -> tuple[NDArray[np.float64], ...]:
    """``(variance of Z, mean of max(0, Z), variance of max(0, Z))`` for discrete Laplace noise of ``scale``."""
    a = np.exp(-1.0 / np.maximum(np.asarray(scale, dtype=np.float64), 1e-12))
    second = a / (1.0 - a) ** 2  # E[max(0, Z)**2], half of Var(Z)
    mean_pos = a / (1.0 - a * a)
    return 2.0 * second, mean_pos, second - mean_pos**2


@dataclass(frozen=True, eq=False)
class RowSupport:
    """Per row: whether released evidence stands behind its prediction (:func:`row_support`).

    Attributes
    ----------
    low : ndarray of bool, shape (n_rows,)
        Low support: most count trees' leaves, or some feature's marginals bin, within noise.
    low_leaf_share : ndarray of float, shape (n_rows,)
        Share of the trees that released counts whose leaf for this row is within noise (NaN when no tree
        released counts).
    low_features : ndarray of bool, shape (n_rows, n_features)
        Whether the row's marginals bin of each feature is within noise (all False without a marginals part).
    feature_names : tuple of str
        The schema's features, the columns of ``low_features``.
    assessed : bool
        False when the model holds no released counts at all (label trees only): nothing is flagged.
    """

    low: NDArray[np.bool_]
    low_leaf_share: NDArray[np.float64]
    low_features: NDArray[np.bool_]
    feature_names: tuple[str, ...]
    assessed: bool = True

    def labels(self) -> NDArray[np.object_]:
        """Per row, ``"ok"`` or ``"low: "`` followed by the features whose bin is within noise and/or ``"tree
        leaves"`` (``"n/a"`` everywhere when not assessed)."""
        n = self.low.shape[0]
        if not self.assessed:
            return np.full(n, "n/a", dtype=object)
        out = np.full(n, OK_SUPPORT, dtype=object)
        rows = np.flatnonzero(self.low)
        if rows.size == 0:
            return out
        names = np.asarray(self.feature_names, dtype=object)
        trees = (self.low_leaf_share[rows] > 0.5) & np.isfinite(self.low_leaf_share[rows])
        flags = self.low_features[rows]
        # one string per distinct pattern of flags (few), not one join per row
        patterns, inverse = np.unique(np.column_stack([flags, trees]), axis=0, return_inverse=True)
        texts = []
        for p in patterns:
            named = [*names[p[:-1]], *([TREES_WORD] if p[-1] else [])]
            texts.append(f"{LOW_SUPPORT}: {', '.join(named)}")
        out[rows] = np.asarray(texts, dtype=object)[inverse.ravel()]
        return out


def _leaf_low(forest: DPForest) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
    """Per node: ``(released counts, within noise)`` as two columns ``[is count leaf, is count leaf within
    noise]`` of shape (n_nodes, 2)."""
    trees = forest.trees
    has = trees.has_counts()
    values = np.zeros((trees.n_nodes, 2))
    if not has.any():
        return values, has
    node_spend, _ = forest.spent_epsilons()
    per_tree = np.concatenate([np.full(n, LEAF_COUNT_SENSITIVITY[p.relation]) for _, p, n in forest.parts])
    sensitivity = per_tree.astype(np.float64)[trees.tree_of_node()]
    scale = sensitivity[has] / node_spend[has]
    k = trees.leaf_counts.shape[1]
    _, mean_pos, var_pos = _discrete_laplace_moments(scale)
    mass = trees.leaf_counts[has].astype(np.float64).sum(axis=1)
    within = mass <= k * mean_pos + Z_SCORE * np.sqrt(k * var_pos)
    values[has, 0] = 1.0
    values[np.flatnonzero(has)[within], 1] = 1.0
    return values, has


def bin_signal_to_noise(marginals: NoisyMarginals) -> list[NDArray[np.float64]]:
    """Per feature, per bin: the bin's released mass ``sum_k h_vk`` in standard deviations of an empty bin's.

    An empty bin's mass is the sum of ``K`` signed discrete Laplace noises of scale ``t``
    (:attr:`NoisyMarginals.noise_scale`; for a federation's sum, the scale of the summed noise), of standard
    deviation ``sqrt(2 K a / (1 - a)**2)``, ``a = exp(-1 / t)``.

    Privacy cost: none (post-processing of the released histograms and the public noise scale).
    """
    var, _, _ = _discrete_laplace_moments(np.asarray([marginals.noise_scale]))
    sd = float(np.sqrt(marginals.n_classes * var[0]))
    return [h.sum(axis=1) / sd for h in marginals.counts]


def bins_within_noise(marginals: NoisyMarginals, z_score: float = Z_SCORE) -> list[NDArray[np.bool_]]:
    """Per feature, per bin: whether the bin's released mass is within ``z_score`` noise standard deviations of
    zero (:func:`bin_signal_to_noise` ``<= z_score``), the support rule's test of a marginals bin.

    Privacy cost: none (post-processing of the released histograms and public parameters).
    """
    return [snr <= z_score for snr in bin_signal_to_noise(marginals)]


def _bin_low(forest: DPForest) -> list[NDArray[np.bool_]]:
    """Per feature, per marginals bin: whether its released mass is within noise (empty without marginals)."""
    return [] if forest.marginals is None else bins_within_noise(forest.marginals)


def support_flags(forest: DPForest) -> tuple[NDArray[np.float64], list[NDArray[np.bool_]]]:
    """What :func:`row_support` reads of ``forest``, per released count, for a graph that routes rows itself.

    Returns
    -------
    node_flags : ndarray of float, shape (n_nodes, 2)
        Per node ``[is count leaf, is count leaf within noise]`` (0 or 1; zeros for inner nodes and label
        leaves): summed over the leaves a row reaches, the count trees it reaches and the low ones.
    bin_flags : list of ndarray of bool
        Per feature, per marginals bin (the marginals part's grid): whether its released mass is within noise;
        empty without a marginals part.

    Privacy cost: none (as :func:`row_support`: post-processing of released values and public parameters).
    """
    node_flags, _ = _leaf_low(forest)
    return node_flags, _bin_low(forest)


def row_support(forest: DPForest, X: ArrayLike | pd.DataFrame) -> RowSupport:
    """Whether released evidence stands behind each row's prediction, or only noise (see the module notes).

    Parameters
    ----------
    forest : DPForest
        A released or merged forest.
    X : array-like or DataFrame, shape (n_samples, n_features)
        Rows as for :meth:`DPForest.predict_proba` (values outside the bounds are clipped, as there).

    Returns
    -------
    RowSupport
        ``low`` per row, the share of count trees whose leaf is within noise, and per feature whether the
        row's marginals bin is within noise; :meth:`RowSupport.labels` gives ``"ok"`` / ``"low: HbA1c_level"``.

    Notes
    -----
    A tree leaf is within noise when its released mass ``sum_k c_lk`` is at most ``K mu+ + Z sqrt(K v+)``, the
    mean plus ``Z`` (:data:`Z_SCORE` = 2) standard deviations of what an empty leaf releases (``K`` clamped
    discrete Laplace noises of the leaf's scale ``Delta / eps_leaf``: mean ``mu+ = a / (1 - a**2)``, variance
    ``v+ = a / (1 - a)**2 - mu+**2``, ``a = exp(-1 / scale)``); a marginals bin is within noise when ``sum_k
    h_vk <= Z sqrt(K * 2 a / (1 - a)**2)`` (``Z`` standard deviations of ``K`` signed noises of scale
    ``Delta d / eps``).  A row is low when more than half of the count trees' leaves it reaches are within
    noise, or the bin of any feature is.

    Privacy cost: none.  Post-processing of released values (noisy counts, structure) and public parameters
    (each count's ε, the relation, ``d``); no ε is spent and no party's row is read.
    """
    return support_of_codes(forest, forest.encode(X), X)


def support_of_codes(forest: DPForest, codes: NDArray[np.int32], X: ArrayLike | pd.DataFrame) -> RowSupport:
    """:func:`row_support` of rows already encoded on ``forest.grid`` (``codes``); ``X``, the same rows, is
    encoded again only when the marginals part has its own grid.

    Privacy cost: none (as :func:`row_support`: post-processing of released values and public parameters).
    """
    n = codes.shape[0]
    names = tuple(forest.schema.feature_names)
    node_values, has = _leaf_low(forest)
    share = np.full(n, np.nan)
    if has.any() and n:
        summed = forest._part_scores(node_values, codes).sum(axis=0)  # (n, 2): count trees reached, low ones
        share = np.where(summed[:, 0] > 0, summed[:, 1] / np.maximum(summed[:, 0], 1.0), np.nan)
    low_features = np.zeros((n, len(names)), dtype=bool)
    bins = _bin_low(forest)
    if bins and n:
        if forest.marginals_bins != forest.grid_bins:
            codes = encode_features(X, forest.schema, FeatureGrid.from_schema(forest.schema, forest.marginals_bins))
        for j, low in enumerate(bins):
            low_features[:, j] = low[codes[:, j]]
    low = low_features.any(axis=1) | (np.nan_to_num(share, nan=0.0) > 0.5)
    return RowSupport(low, share, low_features, names, assessed=bool(has.any() or bins))
