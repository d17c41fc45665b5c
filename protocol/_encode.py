"""Encoding one party's DP forest as a (signed) release."""

from __future__ import annotations

import math

import numpy as np

from edprf_core import DPForest, TrainingParameters
from edprf_core.encoding import FeatureGrid
from edprf_core.forest import check_is_forest

from . import release_pb2 as pb
from ._canonical import serialize_canonical
from ._envelope import FORMAT_VERSION, check_request_id
from ._errors import InvalidRelease
from ._keys import PrivateKey
from ._parameters import check_party_id, parameters_to_message
from ._signature import sign_release_bytes
from ._structure import check_trees

__all__ = ["encode_release"]


def encode_release(
    forest: DPForest,
    party_id: str,
    signing_key: PrivateKey | None = None,
    *,
    allow_non_dp: bool = False,
    run_id: str = "",
    request_id: str = "",
) -> bytes:
    """Serialize ``forest`` as an ``edprf.v1.SignedRelease``.

    The release carries the schema fingerprint, the party id, the training
    parameters, the trees (with ``leaf="counts"``, the leaves' noisy class
    counts) and, when ``marginals_share > 0``, the marginals part's noisy
    histograms; nothing else (no exact counts, no timestamps).

    Parameters
    ----------
    forest : DPForest
        A single-part forest (as fitted by one party); merged forests are
        refused, since their parts belong to other parties.
    party_id : str
        1-64 characters ``[A-Za-z0-9._-]``, starting alphanumeric.
    signing_key : Ed25519 or EC P-384 private key, optional
        Signs the exact Release bytes; None sends an unsigned release.
    allow_non_dp : bool, default False
        Research only: permit a forest whose parameters say ``dp = False``.
    run_id, request_id : str
        The run and the request this release answers (at most 256 printable
        characters each), inside the signed bytes: a coordinator rejects a
        release replayed into another run or request.

    Returns
    -------
    bytes

    Raises
    ------
    ValueError
        For a merged forest, a non-DP forest (unless allowed), a bad party id,
        an unsupported key, or trees or marginals a decoder would refuse.
    """
    check_is_forest(forest, "encode_release", marginals_supported=True)
    check_party_id(party_id)
    check_request_id(run_id, "run_id")
    check_request_id(request_id, "request_id")
    if len(forest.parts) != 1:
        labels = [label for label, _, _ in forest.parts]
        raise ValueError(
            f"forest: expected a single-part forest (one party's release), got {len(forest.parts)} parts {labels}"
        )
    _, params, n_part = forest.parts[0]
    if not params.dp and not allow_non_dp:
        raise ValueError(
            "forest: expected dp=True, got a forest trained with a research-only option "
            "(pass allow_non_dp=True for research releases only)"
        )
    if not params.n_trees == n_part == forest.n_trees:
        raise ValueError(
            f"forest: expected parameters.n_trees == trees sent, got {params.n_trees} declared and "
            f"{forest.n_trees} trees"
        )
    try:
        check_trees(forest.trees, forest.grid, forest.schema.n_classes, params.split_mode, params.max_depth, params.dp)
    except InvalidRelease as exc:
        raise ValueError(f"forest: trees a decoder would refuse ({exc})") from None
    trees = forest.trees
    release = pb.Release(
        format_version=FORMAT_VERSION,
        schema_fingerprint=forest.schema.fingerprint,
        party_id=party_id,
        parameters=parameters_to_message(params),
        run_id=run_id,
        request_id=request_id,
        trees=pb.Trees(
            nodes_per_tree=np.diff(trees.tree_offsets).tolist(),
            feature=trees.feature.tolist(),
            split=trees.split.tolist(),
            first_child=trees.first_child.tolist(),
            leaf_class=trees.leaf_class.tolist(),
            leaf_counts=_leaf_counts(forest, params.leaf),
        ),
        marginals=_marginals(forest, params),
    )
    return serialize_canonical(sign_release_bytes(serialize_canonical(release), signing_key))


def _marginals(forest: DPForest, params: TrainingParameters) -> pb.Marginals | None:
    """The marginals part's counts, feature-major and each histogram row-major (None without one).

    Checked against what a decoder derives from the parameters alone: the grid of
    ``marginals_bins``, the budget ``epsilon - count_epsilon`` and the relation.
    """
    marginals = forest.marginals
    if params.marginals_share == 0:
        if marginals is not None:
            raise ValueError("forest: parameters say marginals_share = 0 but the forest has a marginals part")
        return None
    if marginals is None:
        raise ValueError(f"forest: parameters say marginals_share = {params.marginals_share:g}, got no marginals part")
    if marginals.residual_pass is not None:
        raise ValueError(
            "forest: a release carries histograms only, but this marginals part ran a residual pass (one data "
            "holder's fit: a federation sums histograms); fit with residual_pass=False"
        )
    expected = FeatureGrid.from_schema(forest.schema, params.marginals_bins).n_codes
    if tuple(marginals.n_codes) != tuple(expected) or marginals.n_classes != forest.schema.n_classes:
        raise ValueError(
            f"forest: marginals expected {tuple(expected)} codes x {forest.schema.n_classes} classes, got "
            f"{tuple(marginals.n_codes)} x {marginals.n_classes}"
        )
    if not math.isclose(marginals.epsilon, params.forest_epsilon, rel_tol=1e-12) or marginals.relation != (
        params.relation
    ):
        raise ValueError(
            f"forest: marginals expected epsilon {params.forest_epsilon:g} under {params.relation}, got "
            f"{marginals.epsilon:g} under {marginals.relation} (a decoder takes both from the parameters)"
        )
    return pb.Marginals(counts=np.concatenate([h.ravel() for h in marginals.counts]).tolist())


def _leaf_counts(forest: DPForest, leaf: str) -> list[int]:
    """The leaves' counts, flattened leaf by leaf in node order (empty for label releases)."""
    trees = forest.trees
    has = trees.has_counts()
    leaves = trees.feature < 0
    if leaf != "counts":
        if has.any():
            raise ValueError("forest: parameters say leaf='label' but the trees carry counts")
        return []
    if not np.array_equal(has, leaves):
        raise ValueError("forest: parameters say leaf='counts' but some leaves carry no counts")
    return trees.leaf_counts[leaves].ravel().tolist()
