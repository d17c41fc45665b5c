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
``kappa = 0`` and a flipped label map below it.  DP noise makes honest parties
differ, so the reference is the consortium itself: under "party p is as good
as half the median honest kappa", its agreements are at least
``Binomial(n, e_p + kappa_med / 2 * (1 - e_p))``; a one-sided binomial test at
level ``alpha / N`` (Bonferroni over N parties) flags the parties whose
disagreement chance does not explain.  Needs at least 3 parties.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
from numpy.typing import NDArray
from scipy import stats

from edprf_core import DPForest

__all__ = ["PartyContribution", "entropy_bits", "part_votes", "party_contributions", "tree_information"]


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
    n_parts = len(forest.parts)
    own_votes, agreement, chance, kappa = [], [], [], []
    for mine in by_part:
        own, others = _vote(mine), _vote(total_votes - mine)
        own_votes.append(own)
        a = float(np.mean(own == others))
        e = float(np.dot(np.bincount(own, minlength=k) / n_rows, np.bincount(others, minlength=k) / n_rows))
        agreement.append(a)
        chance.append(e)
        kappa.append((a - e) / (1 - e) if e < 1 else 0.0)
    kappa_med = float(np.median(kappa))
    out = []
    for i, (label, _, n) in enumerate(forest.parts):
        p_value = 1.0
        if n_parts >= 3 and kappa_med > 0:
            expected = chance[i] + 0.5 * kappa_med * (1 - chance[i])
            p_value = float(stats.binom.cdf(round(agreement[i] * n_rows), n_rows, expected))
        out.append(PartyContribution(
            party=label, n_trees=int(n), information_bits=float(np.mean(info[bounds[i] : bounds[i + 1]])),
            accuracy=float(np.mean(own_votes[i] == y)),
            agreement_with_global=float(np.mean(own_votes[i] == global_vote)),
            disagreement_with_others=1.0 - agreement[i], kappa_with_others=float(kappa[i]), p_value=p_value,
            flagged=bool(p_value < alpha / n_parts)))
    return out
