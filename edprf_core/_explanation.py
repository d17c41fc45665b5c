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

Privacy cost: none.  The explanation reads the released forest and the one
row the caller passes (the caller's own data); no party's data is read.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from ._forest import DPForest, check_is_forest
from ._leaf_terms import LeafTerms, leaf_indices, leaf_terms
from ._rules import LeafRule, _Paths, _rule, shown_name

__all__ = ["Explanation", "TreeContribution", "explain_row"]


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
class Explanation:
    """A prediction taken apart by tree.

    ``link(bias + sum of contributions)`` equals ``forest.predict_proba`` on the row.
    """

    classes: tuple[str, ...]
    probabilities: NDArray[np.float64]
    bias: NDArray[np.float64]
    link: str
    pooling: str
    trees: tuple[TreeContribution, ...]
    clipping: tuple[tuple[str, NDArray[np.float64]], ...] = ()

    def total(self) -> NDArray[np.float64]:
        """``bias + the trees' contributions + the clipping terms`` (before the softmax of log-linear pooling)."""
        return (
            self.bias
            + np.sum([t.contribution for t in self.trees], axis=0)
            + np.sum([c for _, c in self.clipping], axis=0) * (len(self.clipping) > 0)
        )

    def _weight_on(self, tree: int, k: int) -> float:
        """Tree ``tree``'s push on class ``k``: its share (mean), or its log ratio less the others' mean (softmax)."""
        c = self.trees[tree].contribution
        if self.link != "softmax" or c.size < 2:
            return float(c[k])
        return float(c[k] - np.delete(c, k).mean())

    def lines(self, max_trees: int = 10) -> list[str]:
        """Text: the probabilities, how they add up, and the ``max_trees`` trees that weigh most on the top class."""
        top = int(np.argmax(self.probabilities))
        probs = ", ".join(f"{c}={p:.4f}" for c, p in zip(self.classes, self.probabilities))
        out = [f"predicted class: {self.classes[top]} (probabilities {probs})"]
        if self.link == "softmax":
            out.append(
                "pooling: log-linear: probabilities = softmax(log prior + sum of the trees' contributions); "
                "a contribution is the tree's weighted log likelihood ratio per class, times its part's weight"
            )
            out.append("log prior (consortium class mix): " + _vector(self.classes, self.bias))
        else:
            out.append(f"pooling: {self.pooling}: probabilities = sum of the trees' contributions (each tree's share)")
        for part, c in self.clipping:
            out.append(
                f"bounded influence: part {part}'s score clipped to the others' range: " + _vector(self.classes, c)
            )
        out.append("sum of contributions: " + _vector(self.classes, self.total() - self.bias))
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


def _vector(classes: tuple[str, ...], v: NDArray[np.float64]) -> str:
    return "[" + ", ".join(f"{c}={x:+.4f}" for c, x in zip(classes, v)) + "]"


def explain_row(
    forest: DPForest,
    row: ArrayLike | pd.DataFrame,
    *,
    pooling: str = "log-linear",
    label_shift: bool = True,
    tolerated_parties: int | None = None,
    terms: LeafTerms | None = None,
) -> Explanation:
    """Explain the prediction of one row (the first row of ``row``).

    Parameters
    ----------
    forest : DPForest
    row : DataFrame or array-like with one row
        The caller's own row, encoded under the forest's public schema.
    pooling, label_shift, tolerated_parties
        As in :meth:`~edprf_core.DPForest.predict_proba`.
    terms : LeafTerms, optional
        Precomputed :func:`~edprf_core.prediction.leaf_terms` of the forest (to explain many rows).

    Notes
    -----
    Privacy cost: none (post-processing of the released forest; reads only ``row``).
    """
    check_is_forest(forest, "explain_row")
    frame = row.iloc[:1] if isinstance(row, pd.DataFrame) else np.asarray(row, dtype=object).reshape(1, -1)
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
    return Explanation(
        classes=tuple(shown_name(c) for c in forest.schema.classes),
        probabilities=terms.probabilities(pooled[None, :])[0],
        bias=bias,
        link=terms.link,
        pooling=terms.pooling,
        trees=contributions,
        clipping=clipping,
    )
