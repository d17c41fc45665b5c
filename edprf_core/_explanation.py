"""Why the forest gives one row its probabilities: each tree's leaf, rule, released values and contribution.

Each tree adds the vector of the leaf a row reaches to its part's score;
the parts' scores are combined by a bounded weighted mean (with three parts
or more, a part's score is clipped to the range the others span and its
weight capped); log-linear pooling then takes ``softmax(log pi + T**e *
pooled)``, mean pooling ``pooled / sum(pooled)`` (:mod:`edprf_core._leaf_terms`).
A tree's contribution is its vector times its part's normalized weight
(times ``T**e`` under log-linear pooling, divided by ``sum(pooled)`` under
the mean), and every part whose score the bound clipped gets one more term,
the clipping's effect; so

- log-linear pooling: ``softmax(log pi + contributions + clipping terms)``;
- mean pooling and label votes: the contributions (and clipping terms) add
  up to the probabilities themselves.

A forest with a marginals part (``marginals_share = s > 0``) predicts
``softmax(s * log p_m + (1 - s) * log p_t)`` (each part's probabilities
floored at 1e-12, :func:`edprf_core._marginals.mix_probabilities`), with
``log p_m = log prior_m + temper * sum_j log(p_j(c | bin_j) / q_j(c))`` up to
a constant per row (``q_j``: feature ``j``'s own class distribution over its
bins).  The marginals part adds one term per feature,
``s * temper * log(p_j(c | bin_j) / q_j(c))`` (the row's bin on the
marginals' grid), and ``s * log prior_m`` to the bias; the floor, when it
binds, adds one more term.  A marginals part with a residual pass
(:mod:`edprf_core._residual_pass`) replaces each log-ratio by the feature's
fitted additive term ``F_j(bin_j) / temper``, split evenly between the two
classes (:func:`edprf_core._marginals.marginal_log_ratio_tables`).  The trees' part is weighted by ``1 - s``:

- log-linear pooling: every tree contribution, clipping term and the log
  prior are scaled by ``1 - s``, so ``softmax(bias + contributions + clipping
  terms + marginals terms + floor)`` is the probability (link ``"softmax"``);
- mean pooling and label votes: the tree contributions stay the trees' own
  probabilities (they add up to ``p_t``), and the probability is
  ``softmax(bias + (1 - s) * log(max(p_t, 1e-12)) + marginals terms +
  floor)`` (link ``"mix"``).

Privacy cost: none.  The explanation reads the released forest and the one
row the caller passes (the caller's own data); no party's data is read.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from ._encoding import FeatureGrid, encode_features
from ._forest import DPForest, check_is_forest
from ._leaf_terms import LeafTerms, leaf_indices, leaf_terms
from ._marginals import MIX_FLOOR, marginal_log_ratio_tables, marginals_temper, mix_probabilities
from ._rules import LeafRule, _Paths, _rule, code_condition, shown_name

__all__ = ["Explanation", "MarginalContribution", "TreeContribution", "explain_row"]
MAX_SHOWN_FEATURES = 20
"""Marginals terms :meth:`Explanation.lines` shows (those weighing most first; the rest are counted)."""


@dataclass(frozen=True)
class TreeContribution:
    """One tree's part in a prediction.

    Attributes
    ----------
    tree : int
    part : str
        The part (party) that released the tree.
    rule : LeafRule
        The leaf the row reaches, its conditions and its released counts or label.
    contribution : ndarray, shape (n_classes,)
        The leaf's additive vector (see the module docstring).
    """

    tree: int
    part: str
    rule: LeafRule
    contribution: NDArray[np.float64]


@dataclass(frozen=True)
class MarginalContribution:
    """One feature's term in the marginals part of a prediction.

    Attributes
    ----------
    feature : str
    bin : str
        The row's bin of the feature on the marginals' public grid, as a condition in the schema's units.
    contribution : ndarray, shape (n_classes,)
        ``s * temper * log(p_j(c | bin) / q_j(c))``: additive in the mix's log space (module docstring).
    """

    feature: str
    bin: str
    contribution: NDArray[np.float64]


@dataclass(frozen=True)
class Explanation:
    """A prediction taken apart by tree (and, with a marginals part, by feature).

    ``link(total())`` equals ``forest.predict_proba`` on the row: the softmax for the links
    ``"softmax"`` and ``"mix"``, the identity for ``"normalize"`` and ``"identity"`` (module docstring).

    Attributes
    ----------
    marginals : tuple of MarginalContribution
        The marginals part's terms, one per feature (empty without a marginals part).
    marginals_share : float in [0, 1)
        ``s``, the marginals part's weight in the mix (0 without one).
    floor : ndarray of shape (n_classes,) or None
        With a marginals part: the effect of flooring either part's probabilities at :data:`~edprf_core._marginals.MIX_FLOOR`
        (zero unless a class's probability fell below it); None without one.
    residual_pass : bool
        Whether the marginals part ran a residual pass (its terms are then the fitted additive terms).
    """

    classes: tuple[str, ...]
    probabilities: NDArray[np.float64]
    bias: NDArray[np.float64]
    link: str
    pooling: str
    trees: tuple[TreeContribution, ...]
    clipping: tuple[tuple[str, NDArray[np.float64]], ...] = ()
    marginals: tuple[MarginalContribution, ...] = ()
    marginals_share: float = 0.0
    floor: NDArray[np.float64] | None = None
    residual_pass: bool = False

    def tree_total(self) -> NDArray[np.float64]:
        """The trees' contributions plus the clipping terms (link ``"mix"``: the trees' probabilities ``p_t``)."""
        return np.sum([t.contribution for t in self.trees], axis=0) + np.sum([c for _, c in self.clipping], axis=0) * (
            len(self.clipping) > 0
        )

    def marginals_total(self) -> NDArray[np.float64]:
        """The marginals part's terms summed over features (zeros without a marginals part)."""
        return np.sum([m.contribution for m in self.marginals], axis=0) * (len(self.marginals) > 0)

    def total(self) -> NDArray[np.float64]:
        """What the link turns into the probabilities.

        ``bias + the trees' contributions + the clipping terms`` (before the softmax of log-linear pooling),
        plus the marginals terms and the floor with a marginals part; link ``"mix"``: ``bias + (1 - s) *
        log(max(tree_total(), MIX_FLOOR)) + the marginals terms + the floor``.
        """
        trees = self.tree_total()
        if self.link == "mix":
            trees = (1.0 - self.marginals_share) * np.log(np.maximum(trees, MIX_FLOOR))
        if not self.marginals:
            return self.bias + trees
        return self.bias + trees + self.marginals_total() + self.floor

    def _weight_on(self, tree: int, k: int) -> float:
        """Tree ``tree``'s push on class ``k``: its share (mean), or its log ratio less the others' mean (softmax)."""
        return self._push(self.trees[tree].contribution, k, self.link == "softmax")

    @staticmethod
    def _push(c: NDArray[np.float64], k: int, log_space: bool) -> float:
        if not log_space or c.size < 2:
            return float(c[k])
        return float(c[k] - np.delete(c, k).mean())

    def lines(self, max_trees: int = 10) -> list[str]:
        """Text: the probabilities, how they add up, and the ``max_trees`` trees that weigh most on the top class.

        With a marginals part also the mix, and the marginals terms that weigh most (up to
        :data:`MAX_SHOWN_FEATURES`).
        """
        top = int(np.argmax(self.probabilities))
        probs = ", ".join(f"{c}={p:.4f}" for c, p in zip(self.classes, self.probabilities))
        out = [f"predicted class: {self.classes[top]} (probabilities {probs})"]
        s = self.marginals_share
        if not self.marginals:
            out += self._trees_lines()
        else:
            out.append(
                f"mix: probabilities = softmax({s:g} * log p_marginals + {1 - s:g} * log p_trees): the marginals "
                f"part's weight is its share s = {s:g} of the rows, the trees' 1 - s = {1 - s:g}"
            )
            out += self._mixed_lines()
        for part, c in self.clipping:
            out.append(
                f"bounded influence: part {part}'s score was clipped to the others' range, which adds "
                + _vector(self.classes, c)
                + f" to the sum below (not in part {part}'s tree lines, which show its trees before the clipping)"
            )
        if not self.marginals:
            out.append("sum of contributions: " + _vector(self.classes, self.total() - self.bias))
        else:
            out += self._marginals_lines(top)
        order = sorted(range(len(self.trees)), key=lambda i: -abs(self._weight_on(i, top)))
        shown = order[:max_trees]
        against = " against the other classes" if self.link == "softmax" else ""
        out.append(
            f"trees, by how much they move {self.classes[top]}{against} ({len(shown)} of {len(self.trees)} shown):"
        )
        for i in shown:
            t = self.trees[i]
            out.append(f"  tree {t.tree} (part {t.part}), leaf {t.rule.leaf}: {_vector(self.classes, t.contribution)}")
            out.append(f"    {t.rule.text(self.classes)}")
        if len(order) > len(shown):
            out.append(f"  ... {len(order) - len(shown)} more trees not shown (--show-trees)")
        return out

    def _trees_lines(self) -> list[str]:
        """How a trees-only forest's contributions add up."""
        if self.link != "softmax":
            return [f"pooling: {self.pooling}: probabilities = sum of the trees' contributions (each tree's share)"]
        return [
            (
                "pooling: log-linear: probabilities = softmax(log prior + sum of the trees' contributions); "
                "a contribution is the tree's weighted log likelihood ratio per class, times its part's weight"
            ),
            "log prior (consortium class mix): " + _vector(self.classes, self.bias),
        ]

    def _mixed_lines(self) -> list[str]:
        """How the trees' part and the marginals part add up (a forest with a marginals part)."""
        s = self.marginals_share
        if self.link == "softmax":
            return [
                (
                    "pooling: log-linear: probabilities = softmax(log prior + sum of the trees' contributions + "
                    "sum of the marginals terms); a tree's contribution is its weighted log likelihood ratio per "
                    f"class, times its part's weight, times the trees' weight {1 - s:g}"
                ),
                f"log prior ({1 - s:g} * the trees' consortium class mix + {s:g} * the marginals' class prior): "
                + _vector(self.classes, self.bias),
            ]
        trees = self.tree_total()
        return [
            f"pooling: {self.pooling}: probabilities = softmax(log prior + the trees' part + sum of the marginals "
            f"terms); the trees' probabilities are the sum of the trees' contributions (each tree's share): "
            + _vector(self.classes, trees),
            f"the trees' part = {1 - s:g} * log(max(the trees' probabilities, {MIX_FLOOR:g})): "
            + _vector(self.classes, (1 - s) * np.log(np.maximum(trees, MIX_FLOOR))),
            f"log prior ({s:g} * the marginals' class prior): " + _vector(self.classes, self.bias),
        ]

    def _marginals_lines(self, top: int) -> list[str]:
        """The sums of both parts, the floor when it binds, and the marginals terms weighing most on ``top``."""
        s = self.marginals_share
        out = []
        if self.link == "softmax":
            out.append(
                f"sum of the trees' contributions (weighted by {1 - s:g}): " + _vector(self.classes, self.tree_total())
            )
        out.append(
            f"marginals part (one noisy class histogram per feature, on rows the trees did not see): sum of its "
            f"terms: {_vector(self.classes, self.marginals_total())}"
        )
        if np.any(self.floor != 0):
            out.append(f"probability floor ({MIX_FLOOR:g}) of the mix: " + _vector(self.classes, self.floor))
        order = sorted(self.marginals, key=lambda m: -abs(self._push(m.contribution, top, True)))
        shown = order[:MAX_SHOWN_FEATURES]
        term = (
            f"{s:g} * the feature's additive term for the bin (its tempered log-ratio, corrected by one backfitting "
            "pass on the residuals), split evenly between the two classes"
            if self.residual_pass
            else f"{s:g} * temper * log(p(class | bin) / p(class | feature)), p(class | feature) the feature's class "
            "distribution over its bins"
        )
        out.append(
            f"marginals terms, by how much they move {self.classes[top]} against the other classes ({len(shown)} of "
            f"{len(order)} features shown; a term is {term}):"
        )
        out += [f"  {m.feature}, bin {m.bin}: {_vector(self.classes, m.contribution)}" for m in shown]
        if len(order) > len(shown):
            out.append(f"  ... {len(order) - len(shown)} more features not shown")
        return out


def _vector(classes: tuple[str, ...], v: NDArray[np.float64]) -> str:
    return "[" + ", ".join(f"{c}={x:+.4f}" for c, x in zip(classes, v)) + "]"


def explain_row(
    forest: DPForest | object,
    row: ArrayLike | pd.DataFrame,
    *,
    pooling: str = "log-linear",
    label_shift: bool = True,
    tolerated_parties: int | None = None,
    terms: LeafTerms | None = None,
) -> Explanation:
    """Explain the prediction of one row.

    Parameters
    ----------
    forest : DPForest, or a fitted estimator holding one as ``forest_``
        The released forest; a fitted :class:`~edprf_core.EDPRFClassifier` or the classifier
        :func:`protocol.load_classifier` returns is read through its ``forest_``.
    row : DataFrame or array-like with one row
        The caller's own row, encoded under the forest's public schema.  Several rows raise ``ValueError``
        (explain them one at a time, with ``terms`` computed once).
    pooling, label_shift, tolerated_parties
        As in :meth:`~edprf_core.DPForest.predict_proba`.
    terms : LeafTerms, optional
        Precomputed :func:`~edprf_core.prediction.leaf_terms` of the forest (to explain many rows).

    Notes
    -----
    Privacy cost: none (post-processing of the released forest; reads only ``row``).
    """
    if not isinstance(forest, DPForest) and isinstance(getattr(forest, "forest_", None), DPForest):
        forest = forest.forest_  # a fitted estimator: its released forest
    check_is_forest(forest, "explain_row", marginals_supported=True)
    frame = row if isinstance(row, pd.DataFrame) else np.asarray(row, dtype=object)
    if frame.ndim == 1:
        frame = frame.reshape(1, -1)
    if frame.shape[0] != 1:  # it explained the first and said nothing of the others (library-user review S3-7)
        raise ValueError(
            f"row: expected one row, got {frame.shape[0]}; explain each row in turn, passing "
            "terms=edprf_core.prediction.leaf_terms(forest) to compute the forest's terms once"
        )
    terms = (
        terms
        if terms is not None
        else leaf_terms(forest, pooling=pooling, label_shift=label_shift, tolerated_parties=tolerated_parties)
    )
    leaves = leaf_indices(forest, frame)[:, 0]
    scores = terms.part_scores(leaves[:, None])[:, 0, :]
    clipped = terms.clipped_scores(scores[:, None, :])[:, 0, :]
    weight = terms.effective_weights()
    pooled = (weight * clipped).sum(axis=0)
    factor = (
        np.full(pooled.shape, terms.scale)
        if terms.link == "softmax"
        else np.full(pooled.shape, 1.0 / pooled.sum())
        if terms.link == "normalize"
        else np.ones(pooled.shape)
    )
    paths = _Paths(forest)
    names = [shown_name(label) for label, _, _ in forest.parts]
    real_part = np.repeat(np.arange(len(forest.parts)), [n for _, _, n in forest.parts])  # votes pool as one part
    contributions = tuple(
        TreeContribution(
            tree=t,
            part=names[int(real_part[t])],
            rule=_rule(forest, paths, int(leaf)),
            contribution=factor * weight[terms.part_of_tree[t]] * terms.node_terms[int(leaf)],
        )
        for t, leaf in enumerate(leaves)
    )
    clipping = tuple(
        (names[j], factor * weight[j] * (clipped[j] - scores[j]))
        for j in range(terms.n_parts)
        if np.any(clipped[j] != scores[j])
    )
    bias = np.log(terms.prior) if terms.link == "softmax" else np.zeros(pooled.shape)
    classes = tuple(shown_name(c) for c in forest.schema.classes)
    tree_probabilities = terms.probabilities(pooled[None, :])[0]
    if forest.marginals is None:
        return Explanation(
            classes=classes,
            probabilities=tree_probabilities,
            bias=bias,
            link=terms.link,
            pooling=terms.pooling,
            trees=contributions,
            clipping=clipping,
        )
    return _mixed(forest, frame, classes, tree_probabilities, bias, terms, contributions, clipping)


def _mixed(
    forest: DPForest,
    frame: ArrayLike | pd.DataFrame,
    classes: tuple[str, ...],
    tree_probabilities: NDArray[np.float64],
    tree_bias: NDArray[np.float64],
    terms: LeafTerms,
    contributions: tuple[TreeContribution, ...],
    clipping: tuple[tuple[str, NDArray[np.float64]], ...],
) -> Explanation:
    """The explanation of a forest with a marginals part (module docstring).  Privacy cost: none."""
    marginals, schema = forest.marginals, forest.schema
    s = forest.marginals_share
    grid = FeatureGrid.from_schema(schema, forest.marginals_bins)
    codes = encode_features(frame, schema, grid)[0]
    log_prior, tables = marginal_log_ratio_tables(marginals)
    temper = marginals_temper(marginals.n_features)
    terms_m = tuple(
        MarginalContribution(
            feature=shown_name(f.name),
            bin=code_condition(f, grid.edges[j], grid.n_codes[j], int(codes[j])) or "any value",
            contribution=s * temper * tables[j][int(codes[j])],
        )
        for j, f in enumerate(schema.features)
    )
    marginals_proba = forest.marginals_proba(frame)[0]
    # each part's log probability, and what the floor of the mix adds to it (0 unless it binds)
    evidence = np.sum([table[int(codes[j])] for j, table in enumerate(tables)], axis=0)
    log_m = _log_softmax(log_prior + temper * evidence)
    floor = s * (np.maximum(log_m, np.log(MIX_FLOOR)) - log_m)
    if terms.link == "softmax":
        link = "softmax"
        log_t = _log_softmax(tree_bias + sum(c.contribution for c in contributions) + sum(c for _, c in clipping))
        floor = floor + (1.0 - s) * (np.maximum(log_t, np.log(MIX_FLOOR)) - log_t)
        bias = (1.0 - s) * tree_bias + s * log_prior
        contributions = tuple(
            TreeContribution(c.tree, c.part, c.rule, (1.0 - s) * c.contribution) for c in contributions
        )
        clipping = tuple((part, (1.0 - s) * c) for part, c in clipping)
    else:  # mean pooling and votes: the trees' part is (1 - s) * log of their probabilities
        link, bias = "mix", s * log_prior
    return Explanation(
        classes=classes,
        probabilities=mix_probabilities(tree_probabilities[None, :], marginals_proba[None, :], s)[0],
        bias=bias,
        link=link,
        pooling=terms.pooling,
        trees=contributions,
        clipping=clipping,
        marginals=terms_m,
        marginals_share=s,
        floor=floor,
        residual_pass=marginals.residual_pass is not None,
    )


def _log_softmax(score: NDArray[np.float64]) -> NDArray[np.float64]:
    shifted = score - score.max()
    return shifted - np.log(np.exp(shifted).sum())
