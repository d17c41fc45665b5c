"""Released trees as readable rules: conditions in the schema's units, leaves with what they released.

A path from the root to a leaf restricts each feature to a set of codes of
the public grid.  A continuous feature's codes are bins of its declared (or
equal-width) edges, so a set of consecutive bins reads as an interval in the
schema's units (``30 <= age < 45``); values outside the declared bounds are
clipped to them first, so the first and last bins reach to -inf and +inf.  A
categorical feature's codes are its declared categories.  The code after the
last bin or category (``missing = "separate"``) reads as "missing"; an imputed
missing value (``missing = <constant>``) and a catch-all category follow the
schema's rules before any condition applies.

A forest with a marginals part (``marginals_share > 0``) also released one
noisy (bin x class) count histogram per feature on a second public grid; its
rules text starts with them, bin by bin, each with the per-class log-ratio
``log(p_j(c | bin) / q_j(c))`` (``q_j`` the feature's own class distribution) its predictions use
(:func:`edprf_core._marginals.marginal_log_ratio_tables`), and the mix weight.

Privacy cost: none.  Every condition comes from the released structure and
the public schema, every leaf outcome from a released label or noisy counts,
every histogram line from the released noisy marginals; nothing reads data.
The names shown come from the model file, which may be hostile: they are
shown with control characters escaped and cut to a bounded length.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ._encoding import FeatureGrid
from ._forest import DPForest, check_is_forest
from ._marginals import MARGINALS_TEMPER_C, marginal_log_ratio_tables, marginals_temper
from ._marginals_merge import marginals_release_epsilons
from ._schema import CategoricalFeature, ContinuousFeature

__all__ = [
    "DEFAULT_MAX_FEATURES",
    "MAX_NAME_CHARS",
    "LeafRule",
    "code_condition",
    "forest_rules_text",
    "leaf_rule",
    "shown_name",
]

MAX_NAME_CHARS = 60
"""Longest feature, category or class name shown (longer names are cut, with their length)."""
DEFAULT_MAX_FEATURES = 20
"""Features of the marginals part :func:`forest_rules_text` shows unless told otherwise."""


def shown_name(value: object) -> str:
    """``str(value)`` with non-printable characters escaped and at most :data:`MAX_NAME_CHARS` characters."""
    text = "".join(c if c.isprintable() else f"\\u{ord(c):04x}" for c in str(value))
    return text if len(text) <= MAX_NAME_CHARS else f"{text[:MAX_NAME_CHARS]}...({len(text)} chars)"


def _number(v: float) -> str:
    return format(float(v), ".6g")


@dataclass(frozen=True)
class LeafRule:
    """One leaf: its tree, its tree-local index, the conditions of its path, and what it released.

    Attributes
    ----------
    tree : int
    leaf : int
        Tree-local node index (breadth-first, root 0).
    conditions : tuple of str
        One condition per feature the path restricts, in feature order.
    counts : tuple of int or None
        The released noisy class counts (``leaf="counts"``), else None.
    label : str
        The released class (label leaves) or the class with the largest noisy count.
    """

    tree: int
    leaf: int
    conditions: tuple[str, ...]
    counts: tuple[int, ...] | None
    label: str

    def text(self, classes: tuple[str, ...]) -> str:
        """``IF cond AND cond THEN noisy counts [a=1, b=2]`` (or ``THEN class c``)."""
        condition = " AND ".join(self.conditions) if self.conditions else "always"
        if self.counts is not None:
            outcome = "noisy counts [" + ", ".join(f"{c}={n}" for c, n in zip(classes, self.counts)) + "]"
        else:
            outcome = f"class {self.label}"
        return f"IF {condition} THEN {outcome}"


class _Paths:
    """Parents and child positions of every node (public structure), for rule texts."""

    def __init__(self, forest: DPForest) -> None:
        self.forest = forest
        trees = forest.trees
        _, self.parent = trees.depths_and_parents()
        base = trees.tree_offsets[trees.tree_of_node()]
        self.first = np.where(trees.feature >= 0, base + trees.first_child, -1)
        grid = forest.grid
        self.n_codes = np.asarray(grid.n_codes, dtype=np.int64)
        self.is_cat = np.asarray(grid.is_categorical, dtype=bool)

    def allowed_codes(self, node: int) -> dict[int, NDArray[np.bool_]]:
        """Per restricted feature, which of its codes reach ``node``."""
        trees = self.forest.trees
        allowed: dict[int, NDArray[np.bool_]] = {}
        child = node
        parent = int(self.parent[child])
        while parent >= 0:
            f = int(trees.feature[parent])
            position = child - int(self.first[parent])
            codes = np.arange(self.n_codes[f])
            if self.forest.split_mode == "multiway":
                keep = codes == position
            elif self.is_cat[f]:
                keep = (codes == trees.split[parent]) if position == 0 else (codes != trees.split[parent])
            else:
                keep = (codes < trees.split[parent]) if position == 0 else (codes >= trees.split[parent])
            allowed[f] = allowed.get(f, np.ones(codes.size, dtype=bool)) & keep
            child, parent = parent, int(self.parent[parent])
        return dict(sorted(allowed.items()))

    def conditions(self, node: int) -> tuple[str, ...]:
        schema, grid = self.forest.schema, self.forest.grid
        out = []
        for f, mask in self.allowed_codes(node).items():
            feature = schema.features[f]
            if isinstance(feature, ContinuousFeature):
                text = _continuous_condition(feature.name, grid.edges[f], mask)
            else:
                text = _categorical_condition(feature, mask)
            if text:
                out.append(text)
        return tuple(out)


def _continuous_condition(name: str, edges: NDArray[np.float64], mask: NDArray[np.bool_]) -> str:
    n_bins = edges.size + 1
    bins, missing = mask[:n_bins], (bool(mask[n_bins]) if mask.size > n_bins else None)
    shown = shown_name(name)
    if bins.all():
        return "" if missing in (None, True) else f"{shown} is not missing"
    if not bins.any():
        return f"{shown} is missing" if missing else "never"
    ranges = []
    padded = np.concatenate([[False], bins, [False]]).astype(np.int8)
    starts = np.flatnonzero(np.diff(padded) == 1)
    ends = np.flatnonzero(np.diff(padded) == -1) - 1
    for lo, hi in zip(starts, ends):
        if lo > 0 and hi < edges.size:
            ranges.append(f"{_number(edges[lo - 1])} <= {shown} < {_number(edges[hi])}")
        elif lo > 0:
            ranges.append(f"{shown} >= {_number(edges[lo - 1])}")
        else:
            ranges.append(f"{shown} < {_number(edges[hi])}")
    text = " or ".join(ranges)
    if missing:
        text += f" or {shown} is missing"
    return f"({text})" if " or " in text else text


def _categorical_condition(feature: CategoricalFeature, mask: NDArray[np.bool_]) -> str:
    labels = [shown_name(c) for c in feature.categories] + (["missing"] if mask.size > len(feature.categories) else [])
    shown = shown_name(feature.name)
    kept = [labels[i] for i in np.flatnonzero(mask)]
    left = [labels[i] for i in np.flatnonzero(~mask)]
    if not left:
        return ""
    if len(kept) == 1:
        return f"{shown} = {kept[0]}"
    if len(left) == 1:
        return f"{shown} != {left[0]}"
    if len(kept) <= len(left):
        return f"{shown} in {{{', '.join(kept)}}}"
    return f"{shown} not in {{{', '.join(left)}}}"


def code_condition(
    feature: ContinuousFeature | CategoricalFeature, edges: NDArray[np.float64], n_codes: int, code: int
) -> str:
    """The condition that selects one code of ``feature`` on a grid (its interior ``edges``, ``n_codes`` codes).

    ``30 <= age < 45``, ``age >= 60``, ``age is missing``, ``color = red``; empty when the feature has one code
    only (every value).  Privacy cost: none (public schema and grid).
    """
    mask = np.zeros(n_codes, dtype=bool)
    mask[code] = True
    if isinstance(feature, ContinuousFeature):
        return _continuous_condition(feature.name, edges, mask)
    return _categorical_condition(feature, mask)


def _rule(forest: DPForest, paths: _Paths, node: int) -> LeafRule:
    trees = forest.trees
    t = int(np.searchsorted(trees.tree_offsets, node, side="right") - 1)
    classes = forest.schema.classes
    counts = None
    if trees.has_counts()[node]:
        counts = tuple(int(v) for v in trees.leaf_counts[node])
        label = shown_name(classes[int(np.argmax(counts))])
    else:
        label = shown_name(classes[int(trees.leaf_class[node])])
    return LeafRule(
        tree=t, leaf=node - int(trees.tree_offsets[t]), conditions=paths.conditions(node), counts=counts, label=label
    )


def leaf_rule(forest: DPForest, node: int) -> LeafRule:
    """The rule of leaf ``node`` (a global node index).  Privacy cost: none (released structure only).

    A marginals part (if any) does not change the trees, so their leaves read the same.
    """
    check_is_forest(forest, "leaf_rule", marginals_supported=True)
    if not 0 <= node < forest.trees.n_nodes or forest.trees.feature[node] >= 0:
        raise ValueError(f"node {node}: expected the index of a leaf among {forest.trees.n_nodes} nodes")
    return _rule(forest, _Paths(forest), node)


def forest_rules_text(
    forest: DPForest, *, max_trees: int = 3, max_leaves: int = 32, max_features: int = DEFAULT_MAX_FEATURES
) -> list[str]:
    """The first ``max_trees`` trees as rules, ``max_leaves`` leaves each, and what was left out.

    With a marginals part, its section comes first: the mix weight, the class prior, and for the first
    ``max_features`` features each bin of the marginals' grid (up to ``max_leaves``) with its released noisy
    counts and per-class log-ratio; then the trees' rules as without one.

    Parameters
    ----------
    forest : DPForest
    max_trees : int >= 1
    max_leaves : int >= 1
        Leaves shown per tree (in breadth-first order); bins shown per feature of the marginals part.
    max_features : int >= 1
        Features of the marginals part shown (in the schema's order).

    Returns
    -------
    list of str
        Lines of text; the last lines say how many trees and leaves were not shown (and the marginals
        section's last lines, how many features and bins).

    Privacy cost: none (released structure, counts and marginals; public schema).
    """
    check_is_forest(forest, "forest_rules_text", marginals_supported=True)
    for name, value in (("max_trees", max_trees), ("max_leaves", max_leaves), ("max_features", max_features)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
    trees = forest.trees
    paths = _Paths(forest)
    classes = tuple(shown_name(c) for c in forest.schema.classes)
    lines = []
    header = (
        "rules (conditions on the public grid in the schema's units; values outside the declared bounds are "
        "clipped to them; released noisy counts or labels, no epsilon spent):"
    )
    if forest.marginals is not None:  # first, so the last lines still say what the trees' rules left out
        lines += _marginals_text(forest, classes, int(max_features), int(max_leaves))
        header = f"trees' part (weight 1 - s = {1 - forest.marginals_share:g} in the mix): {header}"
    lines.append(header)
    shown_trees = min(trees.n_trees, int(max_trees))
    part_of = np.repeat(np.arange(len(forest.parts)), [n for _, _, n in forest.parts])
    for t in range(shown_trees):
        a, b = int(trees.tree_offsets[t]), int(trees.tree_offsets[t + 1])
        leaves = a + np.flatnonzero(trees.feature[a:b] < 0)
        part = shown_name(forest.parts[int(part_of[t])][0])
        lines.append(f"  tree {t} (part {part}, {leaves.size} leaves):")
        for node in leaves[:max_leaves]:
            lines.append(f"    {_rule(forest, paths, int(node)).text(classes)}")
        if leaves.size > max_leaves:
            lines.append(f"    ... {leaves.size - max_leaves} more leaves of tree {t} not shown (--show-leaves)")
    if trees.n_trees > shown_trees:
        lines.append(f"  ... {trees.n_trees - shown_trees} more trees not shown (--show-trees)")
    return lines


def _marginals_text(forest: DPForest, classes: tuple[str, ...], max_features: int, max_bins: int) -> list[str]:
    """The marginals part's section of :func:`forest_rules_text`.  Privacy cost: none (released values)."""
    marginals, schema = forest.marginals, forest.schema
    s = forest.marginals_share
    grid = FeatureGrid.from_schema(schema, forest.marginals_bins)
    log_prior, tables = marginal_log_ratio_tables(marginals)
    temper = marginals_temper(marginals.n_features)
    extra = marginals.residual_pass
    d = marginals.n_features
    summed = sum(p.marginals_share > 0 for _, p, _ in forest.parts)
    if summed <= 1:
        released = (
            f"one noisy class-count histogram per feature on a {forest.marginals_bins}-bin public grid, epsilon "
            f"{marginals.epsilon:g} / {d} each"
        )
    else:  # a merged model holds the sum; each party released its own histograms at its release's epsilon
        spent = marginals_release_epsilons(forest.parts)
        each = f"{spent[0]:g}" if len(spent) == 1 else f"{spent[0]:g} to {spent[-1]:g}"
        released = (
            f"one noisy class-count histogram per feature on a {forest.marginals_bins}-bin public grid from each of "
            f"{summed} parties, epsilon {each} / {d} each, summed (the sum's noise is that of one release at "
            f"epsilon {marginals.epsilon:.6g} / {d}: a description of the noise, not what any party spent)"
        )
    if extra is None:
        scoring = (
            f"  log p_marginals = log prior + {temper:.4g} * the sum over features of the row's bin's log-ratio "
            "log(p(class | bin) / p(class | feature)), p(class | feature) the feature's class distribution over its "
            f"bins, up to a constant (temper min(1, {MARGINALS_TEMPER_C:g} / sqrt(d)); a bin whose counts are "
            "small against the noise does not fall back to the prior: its log-ratio is noise, and flooring its "
            "counts at 0 keeps the noise's positive part, which pulls it toward an even class mix, i.e. toward the "
            "rarer class; `edprf predict` flags the rows that reach such a bin: support 'low')"
        )
    else:
        released += (
            f", then one backfitting pass on the same rows' residuals, one noisy integer sum per bin of each "
            f"feature, epsilon {extra.epsilon:g} / {marginals.n_features} each"
        )
        scoring = (
            f"  log-odds of {classes[1]} = log prior odds + the sum over features of the row's bin's term: the bin's "
            f"log-ratio tempered by {temper:.4g}, then moved by a damped Newton step on its noisy residual sum "
            "(shown in units of one row's residual y - p), one feature after the other"
        )
    lines = [
        (
            f"marginals part (weight s = {s:g} in the mix: probabilities = softmax({s:g} * log p_marginals + "
            f"{1 - s:g} * log p_trees); released on a random {s:.0%} of the rows, disjoint from the trees' rows: "
            f"{released}; no epsilon spent here):"
        ),
        "  class prior (from the noisy class totals): "
        + ", ".join(f"{c}={p:.4f}" for c, p in zip(classes, np.exp(log_prior))),
        scoring,
    ]
    shown = min(marginals.n_features, max_features)
    for j in range(shown):
        feature, counts, table = schema.features[j], marginals.counts[j], tables[j]
        kind = "bins" if isinstance(feature, ContinuousFeature) else "values"
        lines.append(f"  feature {shown_name(feature.name)} ({grid.n_codes[j]} {kind}):")
        for b in range(min(grid.n_codes[j], max_bins)):
            condition = code_condition(feature, grid.edges[j], grid.n_codes[j], b) or "any value"
            noisy = ", ".join(f"{c}={int(n)}" for c, n in zip(classes, counts[b]))
            if extra is None:
                ratio = ", ".join(f"{c}={r:+.4f}" for c, r in zip(classes, table[b]))
                lines.append(f"    {condition}: noisy counts [{noisy}]; log-ratio [{ratio}]")
            else:
                residual = extra.sums[j][b] / extra.quantum
                term = temper * (table[b][1] - table[b][0])
                lines.append(
                    f"    {condition}: noisy counts [{noisy}]; noisy residual sum {residual:+.2f}; term {term:+.4f}"
                )
        if grid.n_codes[j] > max_bins:
            lines.append(f"    ... {grid.n_codes[j] - max_bins} more bins of this feature not shown (--show-leaves)")
    if marginals.n_features > shown:
        lines.append(f"  ... {marginals.n_features - shown} more features not shown (--show-features)")
    return lines
