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
A party's vote (its trees' majority) is compared with the vote of the *other*
parties on the validation rows, corrected for chance agreement: Cohen's
``kappa_p = (a_p - e_p) / (1 - e_p)``, with ``a_p`` the observed agreement and
``e_p`` the agreement two independent voters with the same class frequencies
would reach.  Honest parties agree well beyond chance; a party whose trees
ignore the label (shuffled labels, another schema's data) sits near
``kappa = 0`` and a flipped label map below it.

DP noise makes honest parties' trees differ from run to run, and that
variation, not only the sampling of validation rows, is what an honest party's
kappa varies by.  So the reference is the rest of the consortium: under the
null hypothesis "party p is like the others" (IID honest parties: their
kappas are exchangeable draws from one distribution, taken as normal), the
leave-one-out statistic

``t_p = (kappa_p - mean_others) / (sd_others * sqrt(1 + 1 / (N - 1)))``

follows Student's t with ``N - 2`` degrees of freedom (the prediction interval
of one new draw from the others' sample).  A party is flagged when the
one-sided p-value ``P(T <= t_p)`` is below ``alpha`` *and* its kappa is below
half the consortium's median.  The second condition is there because honest
kappas are not normal: a DP tree that drew a poor split now and then gives a
heavy lower tail, and the t test alone flagged 3-5 % of honest IID parties at
alpha = 1 % (``benchmarks/bench_flags.py``); a party that ignores the label
sits near kappa = 0, far below both.  Under the null the flag rate is then at
most ``alpha`` (the t test's level), and measured below it.  Needs at least 4 parties (2 degrees of
freedom).  Under label skew the parties are not exchangeable and honest
parties with unusual class mixes are flagged more often: the report says so.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
from numpy.typing import NDArray
from scipy import stats

from edprf_core import DPForest

__all__ = ["MIN_PARTIES_FOR_FLAGS", "PartyContribution", "entropy_bits", "leave_one_out_p_value", "part_votes",
           "party_contributions", "tree_information"]


def entropy_bits(counts: NDArray[np.float64]) -> NDArray[np.float64]:
    """Shannon entropy in bits of count vectors along the last axis (0 for empty)."""
    counts = np.asarray(counts, dtype=np.float64)
    total = counts.sum(axis=-1, keepdims=True)
    p = np.divide(counts, total, out=np.zeros_like(counts), where=total > 0)
    logs = np.log2(p, out=np.zeros_like(p), where=p > 0)
    return -(p * logs).sum(axis=-1)


def _leaves(forest: DPForest, codes: NDArray[np.int32]) -> NDArray[np.int64]:
    """Global leaf index reached by each row in each tree: shape (n_trees, n_rows)."""
    return forest._table().leaves(codes)


def _information_from_leaves(forest: DPForest, leaves: NDArray[np.int64], y: NDArray[np.int64]) -> NDArray[np.float64]:
    k = forest.schema.n_classes
    n_nodes = forest.trees.n_nodes
    counts = np.bincount((leaves * k + y[None, :]).ravel(), minlength=n_nodes * k).reshape(n_nodes, k)
    route_p = counts.sum(axis=1) / max(1, y.size)
    h_leaf = entropy_bits(counts)
    h_root = float(entropy_bits(np.bincount(y, minlength=k)))
    tree_of = np.repeat(np.arange(forest.n_trees), np.diff(forest.trees.tree_offsets))
    th = np.bincount(tree_of, weights=route_p * h_leaf, minlength=forest.n_trees)
    return h_root - th


def tree_information(forest: DPForest, codes: NDArray[np.int32], y: NDArray[np.int64]) -> NDArray[np.float64]:
    """``T_info`` in bits of every tree, from the rows ``codes`` with class indices ``y``."""
    return _information_from_leaves(forest, _leaves(forest, codes), y)


def _votes_by_part(forest: DPForest, leaves: NDArray[np.int64]) -> list[NDArray[np.int64]]:
    k = forest.schema.n_classes
    cls = forest.trees.leaf_class[leaves].astype(np.int64)  # (n_trees, n_rows)
    n_rows = cls.shape[1]
    bounds = np.cumsum([0] + [n for _, _, n in forest.parts])
    out = []
    for i in range(len(forest.parts)):
        part = cls[bounds[i] : bounds[i + 1]]
        flat = (np.arange(n_rows)[None, :] * k + part).ravel()
        out.append(np.bincount(flat, minlength=n_rows * k).reshape(n_rows, k))
    return out


def part_votes(forest: DPForest, codes: NDArray[np.int32]) -> list[NDArray[np.int64]]:
    """Votes of each part's trees, one (n_rows, n_classes) array per part of the merged forest."""
    return _votes_by_part(forest, _leaves(forest, codes))


@dataclass(frozen=True)
class PartyContribution:
    party: str
    n_trees: int
    information_bits: float  # mean T_info of the party's trees
    accuracy: float  # its own trees' vote on the validation rows
    agreement_with_global: float  # share of rows where its vote equals the global vote
    disagreement_with_others: float  # share of rows where its vote differs from the other parties' vote
    kappa_with_others: float  # chance-corrected agreement with the other parties' vote
    p_value: float
    flagged: bool

    def to_dict(self) -> dict:
        return asdict(self)


def _vote(votes: NDArray[np.int64]) -> NDArray[np.int64]:
    return np.argmax(votes, axis=1)


def party_contributions(forest: DPForest, codes: NDArray[np.int32], y: NDArray[np.int64],
                        alpha: float = 0.01) -> list[PartyContribution]:
    """Contribution and quality flags of every part of a merged forest."""
    leaves = _leaves(forest, codes)
    info = _information_from_leaves(forest, leaves, y)
    k = forest.schema.n_classes
    n_rows = codes.shape[0]
    by_part = _votes_by_part(forest, leaves)
    total_votes = sum(by_part)
    global_vote = _vote(total_votes)
    bounds = np.cumsum([0] + [n for _, _, n in forest.parts])
    own_votes, agreement, chance, kappa = [], [], [], []
    for mine in by_part:
        own, others = _vote(mine), _vote(total_votes - mine)
        own_votes.append(own)
        a = float(np.mean(own == others))
        e = float(np.dot(np.bincount(own, minlength=k) / n_rows, np.bincount(others, minlength=k) / n_rows))
        agreement.append(a)
        chance.append(e)
        kappa.append((a - e) / (1 - e) if e < 1 else 0.0)
    out = []
    kappa_med = float(np.median(kappa))
    for i, (label, _, n) in enumerate(forest.parts):
        p_value = leave_one_out_p_value(np.asarray(kappa), i)
        far_below = kappa[i] < 0.5 * kappa_med
        out.append(PartyContribution(
            party=label, n_trees=int(n), information_bits=float(np.mean(info[bounds[i] : bounds[i + 1]])),
            accuracy=float(np.mean(own_votes[i] == y)),
            agreement_with_global=float(np.mean(own_votes[i] == global_vote)),
            disagreement_with_others=1.0 - agreement[i], kappa_with_others=float(kappa[i]), p_value=p_value,
            flagged=bool(p_value < alpha and far_below)))
    return out


MIN_PARTIES_FOR_FLAGS = 4
"""Fewer parties leave the leave-one-out test with under 2 degrees of freedom: no flags."""


def leave_one_out_p_value(kappa: NDArray[np.float64], i: int) -> float:
    """One-sided p-value that ``kappa[i]`` is as low as a new draw from the others' distribution.

    Student's t prediction interval with ``N - 2`` degrees of freedom (module
    docstring); 1.0 with fewer than :data:`MIN_PARTIES_FOR_FLAGS` parties.
    Others that agree exactly (zero spread) make any lower kappa significant.
    """
    n = kappa.size
    if n < MIN_PARTIES_FOR_FLAGS:
        return 1.0
    others = np.delete(kappa, i)
    spread = float(np.std(others, ddof=1))
    gap = float(kappa[i] - others.mean())
    if spread == 0.0:
        return 0.0 if gap < 0 else 1.0
    t = gap / (spread * np.sqrt(1.0 + 1.0 / others.size))
    return float(stats.t.cdf(t, df=others.size - 1))
