"""Is a release the answer to the request the coordinator sent?  (Checked after the decoder's own checks.)

A party that returns a valid, signed release on another grid, with other
parameters, or made for another run or request, must not reach the merge: it
would either fail the whole run there (mixed grids) or claim a guarantee the
request did not ask for.  Each mismatch is a rejection with a stable reason;
the run goes on with the others.
"""

from __future__ import annotations

import hashlib

from edprf_core import TrainingParameters
from protocol import VerifiedRelease
from protocol.messages import TrainRequest

from ._config import CoordinatorConfig
from ._outcomes import OutcomeReason

__all__ = ["count_content_digest", "request_mismatch"]

_AUTO_RULES = ("declared-size", "dp-count")


def request_mismatch(
    release: VerifiedRelease, request: TrainRequest, cfg: CoordinatorConfig
) -> tuple[OutcomeReason, str] | None:
    """``(reason, message)`` when ``release`` does not answer ``request``; None when it does.

    Reasons: ``replayed_release`` (made for another run or request),
    ``request_mismatch`` (parameters other than requested), ``seeded_release``
    (a fixed seed the request did not ask for), ``sampler_not_exact`` (the run
    requires the exact sampler).
    """
    if release.request_id != request.request_id:
        return OutcomeReason.REPLAYED_RELEASE, "the release answers another request"
    if not cfg.request_tag and release.run_id != request.run_id:
        return OutcomeReason.REPLAYED_RELEASE, "the release was made for another run"
    p = release.params
    expected = {
        "epsilon": request.epsilon,
        "n_trees": request.n_trees,
        "split_mode": request.split_mode,
        "n_bins": request.n_bins,
        "relation": request.relation,
        "leaf": request.leaf,
        "marginals_share": request.marginals_share,
        "marginals_bins": request.marginals_bins,
    }
    wrong = [
        f"{name} expected {value!r}, got {getattr(p, name)!r}"
        for name, value in expected.items()
        if getattr(p, name) != value
    ]
    wrong += _depth_mismatch(p, request)
    if wrong:
        return OutcomeReason.REQUEST_MISMATCH, f"parameters other than requested: {'; '.join(wrong)}"
    if p.seeded and request.seed < 0:
        return (
            OutcomeReason.SEEDED_RELEASE,
            "the release used a fixed seed; the request asked for cryptographic randomness",
        )
    if cfg.require_exact_sampling and p.sampler != "exact":
        return (
            OutcomeReason.SAMPLER_NOT_EXACT,
            f"the release was drawn by the {p.sampler} sampler; this run requires exact",
        )
    return None


def _depth_mismatch(p: TrainingParameters, request: TrainRequest) -> list[str]:
    """The depth, depth rule and DP row count's ε against what the request determines.

    ``"fixed"``: exactly ``max_depth``, rule ``fixed``, nothing spent on a row count (``count_epsilon`` 0).
    ``"auto"``: a depth up to ``max_depth`` chosen from a size, so a rule ``declared-size`` or ``dp-count``;
    which one, and the count's share of ε (``count_epsilon``, up to the decoder's bound
    ``MAX_COUNT_EPSILON_SHARE`` of ``protocol._parameters``), are the party's (its policy declares a public row count or
    not), not the request's, so neither is compared.  (``TrainingParameters`` already ties
    ``count_epsilon > 0`` to ``dp-count``.)
    """
    wrong = []
    if request.depth_rule == "fixed":
        if p.depth_rule != "fixed":
            wrong.append(f"depth_rule expected 'fixed', got {p.depth_rule!r}")
        if p.max_depth != request.max_depth:
            wrong.append(f"max_depth expected {request.max_depth}, got {p.max_depth}")
        if p.count_epsilon != 0:
            wrong.append(f"count_epsilon expected 0 (a fixed depth counts no rows), got {p.count_epsilon!r}")
    else:
        if p.depth_rule not in _AUTO_RULES:
            wrong.append(
                f"depth_rule expected one of {_AUTO_RULES} (auto: a depth chosen from a declared size or a DP count), "
                f"got {p.depth_rule!r}"
            )
        if p.max_depth > request.max_depth:
            wrong.append(f"max_depth expected at most {request.max_depth} (auto), got {p.max_depth}")
    return wrong


def count_content_digest(release: VerifiedRelease) -> bytes | None:
    """A digest of a count-leaf release's trees, counts and marginals (None for label leaves).

    Two parties' releases drawn on disjoint rows with independent noise do not repeat one another's every
    split and noisy count: identical contents under two party ids mean one party copied the other's release (every
    party receives the releases of a global model sent for evaluation).  Counted twice, a copy would make its
    values the tightest spread of three parts and pull a third party's onto them
    (:mod:`edprf_core._leaf_distribution`).  Label leaves are left out: two honest parties may well choose the same
    few splits and labels.  An exact copy only: a copier that changes one count is not caught (its say stays within
    the merge's bound), and the first of the two to arrive is kept, whichever copied.  Privacy cost: none
    (post-processing of releases).
    """
    trees = release.forest.trees
    if trees.leaf_counts is None:
        return None
    digest = hashlib.sha256()
    for array in (trees.tree_offsets, trees.feature, trees.split, trees.first_child, trees.leaf_counts):
        digest.update(array.tobytes())
    marginals = release.forest.marginals
    for histogram in marginals.counts if marginals is not None else ():
        digest.update(histogram.tobytes())
    return digest.digest()
