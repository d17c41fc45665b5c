"""How much each party's trees contribute, and which parties look broken.

Everything here runs on the coordinator's own validation data (data it may
use: public, or its own), never on a party's records.  It is post-processing
of DP releases, so every party's guarantee is unchanged.  It is *not* DP with
respect to the validation data itself, which is why that set must be one the
coordinator is entitled to look at.

Information content of a tree (entropy-based)
---------------------------------------------
Let route ``l`` be a root-to-leaf path and ``p_l`` the share of validation rows
that follow it.  ``TH = sum_l p_l H(Y | route l)`` is the expected entropy of
the outcome at the leaves, ``TH' = H(Y)`` the same for the empty tree (one
route).  ``T_info = TH' - TH`` (bits) is the information the tree's routes
carry about the label; it is 0 for a tree whose splits are unrelated to the
label, such as one grown on shuffled labels.

Low-quality parties
-------------------
Statistic.  For each party ``j`` the coordinator reads its trees' class
probabilities ``P_j(k | x)`` (the leaves' smoothed DP counts, the same
distributions :meth:`edprf_core.DPForest.predict_proba` averages; one-hot
leaf labels for trees that released labels) on its validation rows and
computes the *probability lift*

``L_j = mean_i P_j(y_i | x_i) - sum_k q_k mean_i P_j(k | x_i)``

with ``q_k`` the share of class ``k`` among the validation labels: how much
more probability the party's trees put on the true class than on a label drawn
at random from the same class frequencies.  A party whose trees ignore the
label (shuffled labels, another schema's data) has ``L_j`` near 0, of either
sign; honest parties have ``L_j > 0``.  The lift uses the probabilities, not
the leaves' majority labels: shallow DP trees often give the majority class at
every leaf, so their votes carry little information (Cohen's kappa of the
vote against the others near 0, like a label-blind party's, for some honest
parties on the wall data: ``benchmarks/results/design_figures.md``), while their
probabilities still do.  The party's own class mix needs no correction: ``q`` is the
validation rows' and enters both terms.  Everything here is deterministic (no
randomness is drawn).

Standard error.  With the party's probabilities fixed, ``n * L_j`` is a linear
permutation statistic ``sum_i a(i, y_i)`` of the validation labels; its
variance over relabellings is Hoeffding's
``1/(n-1) sum_i sum_k n_k (a_ik - a_i. - a_.k + a_..)^2`` (``a_i.`` the row
mean under ``q``, ``a_.k`` the column mean), which gives the standard error
``se_j`` of ``L_j`` due to the sampling of validation rows (Hoeffding's
combinatorial central limit theorem: ``(L_j - E L_j) / se_j`` is close to
normal for a few hundred rows).

Test.  Let ``M_j`` be the median lift of the *other* parties.  The one-sided
p-value is that of ``H0: E L_j >= LIFT_SHARE * M_j`` (the party carries at
least a tenth of a typical party's lift): ``p_j = Phi((L_j - 0.1 M_j) / se_j)``.
A party is flagged when ``p_j < alpha``, unless the test is *inconclusive*:
more than ``WEAK_SHARE_LIMIT`` (15 %) of the other parties themselves sit
below ``2 * LIFT_SHARE * M_j``, so that the consortium's honest parties are
too uneven for "much weaker than the others" to single out a bad one; or
``M_j <= 0`` (the consortium learnt nothing the rows can see); or fewer than
:data:`MIN_PARTIES_FOR_FLAGS` parties; or the party's own released class
counts put less than ``MIN_MINORITY_SHARE`` (10 %) of its rows outside its
largest class (label skew, below).

Calibration (``benchmarks/bench_flags.py``).  ``alpha`` bounds the part of the
error due to the validation rows; the rest of an honest party's spread comes
from DP noise in its tree (a split drawn badly), which is not normal and not
known to the coordinator, so the share 0.1 and the guard (2 * 0.1, 15 %) were
chosen on calibration seeds 1000-1199 (diabetes and wall robot, 5/10/20
parties, epsilon = 1, one tree per party, leaf counts, IID and Dirichlet-0.5
label skew, a party with shuffled labels at 2-20 % of the rows) and the rates
are reported on fresh seeds in ``benchmarks/results/flags.md`` (the
calibration-seed rates: ``benchmarks/results/design_figures.md``).  Measured, not
proved: a setting whose honest trees are more uneven than these can exceed ``alpha``.

Label skew.  The lift needs no exchangeability of class mixes, and the guard
stops flags when many honest parties are weak, as under strong skew.  An
honest party that holds (almost) a single class cannot learn how the features
separate the classes: its trees are label-blind and no statistic of its
predictions tells it from a party with shuffled labels.  Its released counts
do tell (a shuffled party keeps its data's class mix), so a party whose
released mix is more than 90 % one class is not tested.  This is the skew
rule's price: a party whose data are broken *and* one-class is never flagged.
Honest skewed parties with a few minority rows are still flagged more often
than IID ones (measured in ``benchmarks/results/flags.md``; what the one-class
exemption changed on the calibration seeds: ``benchmarks/results/design_figures.md``).

Descriptive fields (not used by the flag): ``kappa_with_others`` is Cohen's
``kappa = (a - e) / (1 - e)`` of the party's vote against the other parties'
vote (``a`` the observed agreement, ``e`` the agreement of independent voters
with the same class frequencies), ``disagreement_with_others = 1 - a``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass

import numpy as np
from numpy.typing import NDArray

from edprf_core import DPForest

__all__ = [
    "LIFT_SHARE",
    "MIN_MINORITY_SHARE",
    "MIN_PARTIES_FOR_FLAGS",
    "WEAK_SHARE_LIMIT",
    "PartyContribution",
    "entropy_bits",
    "lift_flags",
    "minority_shares",
    "part_votes",
    "party_contributions",
    "probability_lift",
    "tree_information",
]

MIN_PARTIES_FOR_FLAGS = 4
"""Fewer parties leave too few others to say what a typical party's lift is: no flags."""

LIFT_SHARE = 0.1
"""A party is flagged when its lift is significantly below this share of the others' median lift."""

WEAK_SHARE_LIMIT = 0.15
"""Inconclusive when more than this share of the other parties sit below ``2 * LIFT_SHARE`` of their median."""

MIN_MINORITY_SHARE = 0.1
"""A party whose released counts put less than this share of its rows outside its largest class is not tested."""


def entropy_bits(counts: NDArray[np.float64]) -> NDArray[np.float64]:
    """Shannon entropy in bits of count vectors along the last axis (0 for empty)."""
    counts = np.asarray(counts, dtype=np.float64)
    total = counts.sum(axis=-1, keepdims=True)
    p = np.divide(counts, total, out=np.zeros_like(counts), where=total > 0)
    logs = np.log2(p, out=np.zeros_like(p), where=p > 0)
    return -(p * logs).sum(axis=-1)


def _leaves_by_part(forest: DPForest, codes: NDArray[np.int32]) -> Iterator[NDArray[np.int64]]:
    """Per part, one at a time, the global leaf index each row reaches in each of its trees: (its trees, n_rows).

    Memory of one part's trees, not of the whole forest's (scale review: 1,000 trees on 72,000 validation rows
    took about 2 GB for the leaves alone, and their class distributions 5.8 GB more with 10 classes).
    """
    table, bounds = forest._table(), forest.part_bounds
    for i in range(len(forest.parts)):
        yield table.leaves(codes, slice(int(bounds[i]), int(bounds[i + 1])))


def _node_class_counts(forest: DPForest, tree_leaves: Iterable[NDArray[np.int64]], y: NDArray[np.int64]) -> NDArray:
    """(n_nodes, n_classes) counts of the rows ``y`` reaching each node, from each tree's row of leaf indices."""
    k = forest.schema.n_classes
    n_nodes = forest.trees.n_nodes
    counts = np.zeros(n_nodes * k, dtype=np.int64)
    for leaves in tree_leaves:  # tree by tree: no (n_trees, n_rows) temporary
        counts += np.bincount(leaves * k + y, minlength=n_nodes * k)
    return counts.reshape(n_nodes, k)


def _information(forest: DPForest, counts: NDArray[np.int64], y: NDArray[np.int64]) -> NDArray[np.float64]:
    """``T_info`` of every tree from the node-class counts of the rows ``y``."""
    k = forest.schema.n_classes
    route_p = counts.sum(axis=1) / max(1, y.size)
    h_leaf = entropy_bits(counts)
    h_root = float(entropy_bits(np.bincount(y, minlength=k)))
    tree_of = forest.trees.tree_of_node()
    th = np.bincount(tree_of, weights=route_p * h_leaf, minlength=forest.n_trees)
    return h_root - th


def tree_information(forest: DPForest, codes: NDArray[np.int32], y: NDArray[np.int64]) -> NDArray[np.float64]:
    """``T_info`` in bits of every tree, from the rows ``codes`` with class indices ``y``."""
    part_leaves = _leaves_by_part(forest, codes)
    return _information(forest, _node_class_counts(forest, (row for part in part_leaves for row in part), y), y)


def _part_vote(forest: DPForest, leaves: NDArray[np.int64]) -> NDArray[np.int64]:
    """The votes of one part's trees (their leaves ``leaves``, (its trees, n_rows)): (n_rows, n_classes)."""
    k = forest.schema.n_classes
    n_rows = leaves.shape[1]
    flat = (np.arange(n_rows)[None, :] * k + forest.trees.leaf_class[leaves].astype(np.int64)).ravel()
    return np.bincount(flat, minlength=n_rows * k).reshape(n_rows, k)


def part_votes(forest: DPForest, codes: NDArray[np.int32]) -> list[NDArray[np.int64]]:
    """Votes of each part's trees, one (n_rows, n_classes) array per part of the merged forest."""
    return [_part_vote(forest, leaves) for leaves in _leaves_by_part(forest, codes)]


def _part_probabilities(nodes: NDArray[np.float64], leaves: NDArray[np.int64]) -> NDArray[np.float64]:
    """The mean of one part's trees' leaf distributions ``nodes[leaves]`` (smoothed DP counts; one-hot for label
    leaves), added up tree by tree: memory of one (n_rows, n_classes) array, not of every tree's."""
    mean = np.zeros((leaves.shape[1], nodes.shape[1]))
    for tree in leaves:
        mean += nodes[tree]
    return mean / max(1, leaves.shape[0])


def probability_lift(proba: NDArray[np.float64], y: NDArray[np.int64]) -> tuple[float, float]:
    """Probability lift of one party on labelled rows, and its standard error (module docstring).

    Parameters
    ----------
    proba : ndarray of float, shape (n_rows, n_classes)
        The party's class probabilities on the rows.
    y : ndarray of int, shape (n_rows,)
        Class indices of the rows.

    Returns
    -------
    (lift, se) : tuple of float
        ``lift = mean_i proba[i, y_i] - sum_k q_k mean_i proba[i, k]`` with ``q``
        the class shares of ``y``; ``se`` its standard deviation over
        relabellings of the rows (Hoeffding's permutation variance).  Both 0
        with fewer than 2 rows.

    Privacy cost: none for the parties (post-processing of releases); exact,
    not DP, in the coordinator's rows ``y``.
    """
    proba = np.asarray(proba, dtype=np.float64)
    y = np.asarray(y, dtype=np.int64)
    n, k = proba.shape
    if n < 2:
        return 0.0, 0.0
    share = np.bincount(y, minlength=k) / n
    row = proba @ share  # chance-level probability of each row's label
    col = proba.mean(axis=0)
    grand = float(share @ col)
    lift = float(proba[np.arange(n), y].mean() - grand)
    dev = proba - row[:, None] - col[None, :] + grand
    variance = float((dev**2 @ (share * n)).sum()) / (n - 1)
    return lift, float(np.sqrt(variance)) / n


def lift_flags(
    lift: NDArray[np.float64],
    se: NDArray[np.float64],
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.bool_]]:
    """Per party: the test's p-value, its threshold and whether the test is inconclusive (module docstring).

    ``p_value[j] = Phi((lift[j] - LIFT_SHARE * median(others)) / se[j])``; a
    party with ``se = 0`` gets 0 or 1.  Inconclusive (p-value 1, threshold
    NaN) with fewer than :data:`MIN_PARTIES_FOR_FLAGS` parties, when the
    others' median lift is not positive, or when more than
    :data:`WEAK_SHARE_LIMIT` of the others are below ``2 * LIFT_SHARE`` times
    their median.  Privacy cost: none (post-processing).
    """
    lift = np.asarray(lift, dtype=np.float64)
    se = np.asarray(se, dtype=np.float64)
    n = lift.size
    p_value, threshold = np.ones(n), np.full(n, np.nan)
    inconclusive = np.ones(n, dtype=bool)
    if n < MIN_PARTIES_FOR_FLAGS:
        return p_value, threshold, inconclusive
    for j in range(n):
        others = np.delete(lift, j)
        typical = float(np.median(others))
        if typical <= 0 or np.mean(others < 2 * LIFT_SHARE * typical) > WEAK_SHARE_LIMIT:
            continue
        inconclusive[j] = False
        threshold[j] = LIFT_SHARE * typical
        gap = lift[j] - threshold[j]
        p_value[j] = _normal_cdf(gap / se[j]) if se[j] > 0 else (0.0 if gap < 0 else 1.0)
    return p_value, threshold, inconclusive


def _normal_cdf(z: float) -> float:
    """The standard normal distribution function at ``z``, ``erfc(-z / sqrt 2) / 2`` (accurate in both tails).

    Written out rather than taken from ``scipy.stats``, whose import alone took about half a second of every
    coordinator's start-up (``import server``).
    """
    return 0.5 * math.erfc(-float(z) / math.sqrt(2.0))


def minority_shares(forest: DPForest) -> NDArray[np.float64]:
    """Per part, the share of its released class counts outside its largest class (NaN without counts).

    Read off the part's class totals less the mass that clamping the leaf noise
    at 0 adds (:meth:`edprf_core.DPForest.part_class_totals`): uncorrected,
    every leaf adds about half a noise scale to every class, so a party that
    saw one class would look mixed (on the wall robot, with 4 classes and 16
    leaves, most of its counts).  Privacy cost: none (post-processing).
    """
    out = np.full(len(forest.parts), np.nan)
    if forest.trees.leaf_counts is None:
        return out
    mix = forest.part_class_totals()
    total = mix.sum(axis=1)
    seen = total > 0
    out[seen] = 1.0 - mix[seen].max(axis=1) / total[seen]
    return out


@dataclass(frozen=True)
class PartyContribution:
    party: str
    n_trees: int
    information_bits: float  # mean T_info of the party's trees
    accuracy: float  # its own trees' vote on the validation rows
    agreement_with_global: float  # share of rows where its vote equals the global model's prediction
    disagreement_with_others: float  # share of rows where its vote differs from the other parties' vote
    kappa_with_others: float  # chance-corrected agreement with the other parties' vote (descriptive)
    p_value: float  # one-sided p-value of "its lift is at least LIFT_SHARE of the others' median" (1 if untested)
    flagged: bool
    probability_lift: float = 0.0  # the test's statistic (module docstring)
    lift_threshold: float | None = None  # LIFT_SHARE * the others' median lift; None when untested
    flag_inconclusive: bool = True  # too few or too uneven parties to test this one

    def to_dict(self) -> dict:
        return asdict(self)


def _vote(votes: NDArray[np.int64]) -> NDArray[np.int64]:
    return np.argmax(votes, axis=1)


def party_contributions(
    forest: DPForest,
    codes: NDArray[np.int32],
    y: NDArray[np.int64],
    alpha: float = 0.01,
    *,
    global_predicted: NDArray[np.int64] | None = None,
) -> list[PartyContribution]:
    """Contribution and quality flags of every part of a merged forest.

    Parameters
    ----------
    forest : DPForest
        The merged releases, one part per party.
    codes : ndarray of int32, shape (n_rows, n_features)
        The coordinator's validation rows, encoded on the forest's grid.
    y : ndarray of int, shape (n_rows,)
        Their class indices.
    alpha : float in (0, 1), default 0.01
        Level of the probability-lift test (module docstring); a party is
        flagged when its p-value is below ``alpha`` and the test is conclusive.
    global_predicted : ndarray of int, shape (n_rows,), optional
        The global model's predicted class of each row (``forest.predict_proba(X).argmax(1)``: trees and
        marginals pooled as the model pools them), which ``agreement_with_global`` compares each party's vote
        with.  Default: the trees' pooled prediction from ``codes``, which is the global model's only without a
        marginals part (required with one: the marginals read the rows on their own grid).

    Privacy cost: none for the parties (post-processing of their DP releases,
    no new release); every number is exact, not DP, in the coordinator's own
    validation rows.
    """
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    k = forest.schema.n_classes
    n_rows = codes.shape[0]
    nodes = forest.node_distributions()
    counts = np.zeros((forest.trees.n_nodes, k), dtype=np.int64)
    by_part, lifts = [], []
    for leaves in _leaves_by_part(forest, codes):  # one part's trees at a time (memory: scale review)
        counts += _node_class_counts(forest, leaves, y)
        by_part.append(_part_vote(forest, leaves))
        lifts.append(probability_lift(_part_probabilities(nodes, leaves), y))
    info = _information(forest, counts, y)
    lifts = np.array(lifts, dtype=np.float64).reshape(-1, 2)
    p_values, thresholds, inconclusive = lift_flags(lifts[:, 0], lifts[:, 1])
    inconclusive |= minority_shares(forest) < MIN_MINORITY_SHARE  # (almost) one class: nothing to learn
    total_votes = sum(by_part)
    if global_predicted is None:
        if forest.marginals is not None:
            raise ValueError(
                "party_contributions: a forest with a marginals part needs global_predicted (the global model's "
                "prediction of the rows: its marginals read them on their own grid)"
            )
        global_predicted = np.argmax(  # the model's own pooling (its defaults), not a vote
            forest._tree_proba(codes, pooling="log-linear", label_shift=True, tolerated_parties=None), axis=1
        )
    global_predicted = np.asarray(global_predicted, dtype=np.int64)
    if global_predicted.shape != (n_rows,):
        raise ValueError(f"global_predicted: expected shape ({n_rows},), got {global_predicted.shape}")
    bounds = forest.part_bounds
    out = []
    for i, (label, _, n) in enumerate(forest.parts):
        own, others = _vote(by_part[i]), _vote(total_votes - by_part[i])
        a = float(np.mean(own == others))
        e = float(np.dot(np.bincount(own, minlength=k) / n_rows, np.bincount(others, minlength=k) / n_rows))
        out.append(
            PartyContribution(
                party=label,
                n_trees=int(n),
                information_bits=float(np.mean(info[bounds[i] : bounds[i + 1]])),
                accuracy=float(np.mean(own == y)),
                agreement_with_global=float(np.mean(own == global_predicted)),
                disagreement_with_others=1.0 - a,
                kappa_with_others=(a - e) / (1 - e) if e < 1 else 0.0,
                p_value=float(p_values[i]),
                flagged=bool(p_values[i] < alpha and not inconclusive[i]),
                probability_lift=float(lifts[i, 0]),
                lift_threshold=None if inconclusive[i] else float(thresholds[i]),
                flag_inconclusive=bool(inconclusive[i]),
            )
        )
    return out
