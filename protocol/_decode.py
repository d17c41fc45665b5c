"""Decoding an untrusted release into a DPForest, or refusing it with a reason.

Order of checks (each before anything that depends on it): size cap;
strict parse; format version; party id; provenance (when a registry is
configured); schema fingerprint; parameters; policy; array lengths against
caps derived from the policy and the public grid; tree structure and domain;
leaf counts (their layout follows the validated structure); the marginals
part (its presence from ``marginals_share``, its shapes from the schema and
the marginals grid, its budget and relation from the parameters).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from edprf_core import DPForest, Schema, TrainingParameters
from edprf_core.encoding import FeatureGrid
from edprf_core.forest import MAX_LEAF_COUNT, ForestArrays
from edprf_core.marginals import RELEASE_RANGE, NoisyMarginals

from . import release_pb2 as pb
from ._envelope import ReleaseEnvelope, as_bytes, open_envelope
from ._errors import InvalidRelease, Reason
from ._parameters import parameters_from_message
from ._policy import ReleasePolicy
from ._registry import PartyKeyRegistry
from ._signature import SignatureStatus
from ._structure import check_trees, max_nodes_per_tree

__all__ = ["SignedCharge", "VerifiedRelease", "decode_envelope", "decode_release", "signed_charge"]

NODE_FIELDS = ("feature", "split", "first_child", "leaf_class")


@dataclass(frozen=True, eq=False)
class VerifiedRelease:
    """A release that passed every check of :func:`decode_release`.

    Attributes
    ----------
    party_id : str
    forest : DPForest
        One part, labelled ``party_id``.
    params : TrainingParameters
    signed : bool
        True only when the signature was verified against a key registry.
    key_id : str
        Key id the release claims ("" when unsigned).
    raw : bytes
        The SignedRelease bytes exactly as received.
    signature_status : SignatureStatus
    signature_detail : str
    format_version : int
    run_id, request_id : str
        The run and request the release answers, inside the signed bytes.
    """

    party_id: str
    forest: DPForest
    params: TrainingParameters
    signed: bool
    key_id: str
    raw: bytes
    signature_status: SignatureStatus
    signature_detail: str
    format_version: int = 1
    run_id: str = ""
    request_id: str = ""

    @property
    def epsilon(self) -> float:
        """ε per record of this release."""
        return float(self.params.epsilon)

    @property
    def n_trees(self) -> int:
        return self.forest.n_trees


def decode_release(
    data: bytes | bytearray | memoryview,
    schema: Schema,
    policy: ReleasePolicy,
    registry: PartyKeyRegistry | None = None,
) -> VerifiedRelease:
    """Decode and check an untrusted ``SignedRelease``.

    Parameters
    ----------
    data : bytes
        Serialized ``edprf.v1.SignedRelease``.
    schema : Schema
        The federation's public schema; the release must carry its fingerprint.
    policy : ReleasePolicy
    registry : PartyKeyRegistry, optional
        When given, the release must be signed by the registered key of the
        party it names.  Required when ``policy.require_signature``.

    Returns
    -------
    VerifiedRelease

    Raises
    ------
    InvalidRelease
        For every defect of ``data``; its ``reason`` says which.  Nothing
        else is raised for any content of ``data``.
    ValueError
        When ``policy.require_signature`` and no registry is given.
    """
    if policy.require_signature and registry is None:
        raise ValueError("policy requires signatures: expected a PartyKeyRegistry, got None")
    envelope = open_envelope(as_bytes(data), policy.max_bytes, registry)
    return decode_envelope(envelope, schema, policy, enforce_signature=registry is not None)


@dataclass(frozen=True)
class SignedCharge:
    """What a release signed by its party's registered key shows the party charged: its ε, for its run."""

    party_id: str
    run_id: str
    epsilon: float


def signed_charge(
    data: bytes | bytearray | memoryview, schema: Schema, max_bytes: int, registry: PartyKeyRegistry
) -> SignedCharge | None:
    """The charge a release shows when it is signed by the registered key of the party it names, carries
    ``schema``'s fingerprint and its parameters parse, whatever else is wrong with it (a policy limit, its
    trees); None otherwise.

    For the coordinator's spend record (:mod:`protocol._spend_record`): a party signs a release only after
    its ledger charged the release's ε, so a release the coordinator refuses still counts against that
    party.  An unsigned or forged release shows nothing (anyone could have made it), neither does one
    above ``max_bytes`` (it is not read), nor one made for another schema (the party's release to another
    consortium, replayed here, was charged to that consortium's ledger).  Never raises for any content of
    ``data``.

    Privacy cost: none (public parameters of a release the party sent).
    """
    try:
        envelope = open_envelope(as_bytes(data), max_bytes, registry)
        if (
            envelope.signature.status is not SignatureStatus.VERIFIED
            or envelope.release.schema_fingerprint != schema.fingerprint
        ):
            return None
        params = parameters_from_message(envelope.release.parameters)
    except InvalidRelease:
        return None
    return SignedCharge(envelope.release.party_id, envelope.release.run_id, float(params.epsilon))


def decode_envelope(
    envelope: ReleaseEnvelope, schema: Schema, policy: ReleasePolicy, enforce_signature: bool, what: str = "release"
) -> VerifiedRelease:
    """Check an opened envelope against ``schema`` and ``policy`` (see :func:`decode_release`)."""
    check = envelope.signature
    if enforce_signature and check.failure_reason is not None:
        raise InvalidRelease(check.failure_reason, f"{what}: {check.detail}")
    release = envelope.release
    if release.schema_fingerprint != schema.fingerprint:
        raise InvalidRelease(
            Reason.SCHEMA_MISMATCH,
            f"{what}: schema fingerprint expected {schema.fingerprint}, got {release.schema_fingerprint!r}",
        )
    params = parameters_from_message(release.parameters)
    _check_policy(params, policy, what)
    grid = FeatureGrid.from_schema(schema, params.n_bins)
    trees = _trees_from_message(release.trees, params, grid, what)
    try:
        check_trees(trees, grid, schema.n_classes, params.split_mode, params.max_depth, params.dp)
    except InvalidRelease as exc:
        raise InvalidRelease(exc.reason, f"{what}: {exc.message}") from None
    # the counts' layout follows the (now valid) structure: one row per leaf
    trees = replace(trees, leaf_counts=_leaf_counts(release.trees, params, trees, schema.n_classes, what))
    party = release.party_id
    forest = DPForest(
        schema=schema,
        grid_bins=params.n_bins,
        split_mode=params.split_mode,
        trees=trees,
        parts=((party, params, params.n_trees),),
        marginals=_marginals(release, params, schema, what),
    )
    return VerifiedRelease(
        party_id=party,
        forest=forest,
        params=params,
        signed=check.status is SignatureStatus.VERIFIED,
        key_id=envelope.signed.key_id,
        raw=envelope.raw,
        signature_status=check.status,
        signature_detail=check.detail,
        format_version=release.format_version,
        run_id=release.run_id,
        request_id=release.request_id,
    )


def _told_apart(limit: float, value: float) -> tuple[str, str]:
    """``limit`` and ``value`` as short numbers (``:g``), or in full where those would read the same."""
    short = f"{limit:g}", f"{value:g}"
    return short if short[0] != short[1] else (repr(limit), repr(value))


def _check_policy(params: TrainingParameters, policy: ReleasePolicy, what: str) -> None:
    if not params.dp and not policy.allow_non_dp:
        raise InvalidRelease(
            Reason.NOT_DP,
            f"{what}: expected dp = true, got a release trained with a research-only option that breaks the guarantee",
        )
    checks = (
        (
            Reason.POLICY_RELATION,
            params.relation not in policy.allowed_relations,
            f"relation expected one of {policy.allowed_relations}, got {params.relation!r}",
        ),
        (
            Reason.POLICY_EPSILON,
            params.epsilon > policy.max_epsilon,
            "epsilon expected <= {}, got {}".format(*_told_apart(policy.max_epsilon, params.epsilon)),
        ),
        (
            Reason.POLICY_DEPTH,
            params.max_depth > policy.max_depth,
            f"max_depth expected <= {policy.max_depth}, got {params.max_depth}",
        ),
        (
            Reason.POLICY_TREES,
            params.n_trees > policy.max_n_trees,
            f"n_trees expected <= {policy.max_n_trees}, got {params.n_trees}",
        ),
        (
            Reason.POLICY_BINS,
            params.n_bins > policy.max_n_bins,
            f"n_bins expected <= {policy.max_n_bins}, got {params.n_bins}",
        ),
        (
            Reason.POLICY_BINS,
            params.marginals_bins > policy.max_n_bins,
            f"marginals_bins expected <= {policy.max_n_bins}, got {params.marginals_bins}",
        ),
    )
    for reason, failed, message in checks:
        if failed:
            raise InvalidRelease(reason, f"{what}: {message}")


def _trees_from_message(message: pb.Trees, params: TrainingParameters, grid: FeatureGrid, what: str) -> ForestArrays:
    """Build ForestArrays after checking every length against its cap."""
    n_trees = params.n_trees
    if len(message.nodes_per_tree) != n_trees:
        raise InvalidRelease(
            Reason.BAD_STRUCTURE,
            f"{what}: nodes_per_tree expected {n_trees} entries "
            f"(parameters.n_trees), got {len(message.nodes_per_tree)}",
        )
    lengths = {name: len(getattr(message, name)) for name in NODE_FIELDS}
    n_nodes = lengths["feature"]
    if len(set(lengths.values())) != 1:
        raise InvalidRelease(Reason.BAD_STRUCTURE, f"{what}: node arrays expected equal lengths, got {lengths}")
    per_tree_cap = max_nodes_per_tree(grid, params.split_mode, params.max_depth)
    if n_nodes > n_trees * per_tree_cap:
        raise InvalidRelease(
            Reason.BAD_STRUCTURE,
            f"{what}: expected at most {n_trees * per_tree_cap} nodes for {n_trees} "
            f"{params.split_mode} trees of depth {params.max_depth}, got {n_nodes}",
        )
    sizes = np.fromiter(message.nodes_per_tree, dtype=np.int64, count=n_trees)
    if sizes.min() < 1 or sizes.max() > per_tree_cap:
        t = int(np.flatnonzero((sizes < 1) | (sizes > per_tree_cap))[0])
        raise InvalidRelease(
            Reason.BAD_STRUCTURE, f"{what}: tree {t}: expected 1..{per_tree_cap} nodes, got {int(sizes[t])}"
        )
    if int(sizes.sum()) != n_nodes:
        raise InvalidRelease(
            Reason.BAD_STRUCTURE,
            f"{what}: nodes_per_tree sums to {int(sizes.sum())}, expected {n_nodes} (the node arrays)",
        )
    offsets = np.zeros(n_trees + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    nodes = {name: np.fromiter(getattr(message, name), dtype=np.int32, count=n_nodes) for name in NODE_FIELDS}
    return ForestArrays(tree_offsets=offsets, **nodes)


def _leaf_counts(
    message: pb.Trees, params: TrainingParameters, trees: ForestArrays, n_classes: int, what: str
) -> np.ndarray | None:
    """The (n_nodes, n_classes) count table of a ``leaf = counts`` release (-1 rows at split nodes).

    Each leaf's ``leaf_class`` must be a class of its largest count: a party releases the argmax of its noisy
    counts, and the counts clamped to the wire's range keep that class among the largest (clamping is
    monotone).  Votes read from ``leaf_class`` (the report's per-party accuracy, agreement and κ) then say what
    the counts say; a forged label is refused.
    """
    feature = trees.feature
    n_values = len(message.leaf_counts)
    if params.leaf != "counts":
        if n_values:
            raise InvalidRelease(
                Reason.BAD_STRUCTURE,
                f"{what}: leaf_counts expected empty (parameters.leaf = {params.leaf!r}), got {n_values} values",
            )
        return None
    leaves = np.flatnonzero(feature == -1)
    if n_values != leaves.size * n_classes:
        raise InvalidRelease(
            Reason.BAD_STRUCTURE,
            f"{what}: leaf_counts expected {leaves.size} leaves x {n_classes} "
            f"classes = {leaves.size * n_classes} values, got {n_values}",
        )
    values = np.fromiter(message.leaf_counts, dtype=np.uint64, count=n_values)
    if n_values and int(values.max()) > MAX_LEAF_COUNT:
        raise InvalidRelease(
            Reason.BAD_STRUCTURE, f"{what}: leaf_counts expected values 0..{MAX_LEAF_COUNT}, got {int(values.max())}"
        )
    table = values.astype(np.int64).reshape(leaves.size, n_classes)
    label = trees.leaf_class[leaves].astype(np.int64)  # a declared class at every leaf (check_trees)
    off = np.flatnonzero(table[np.arange(leaves.size), label] != table.max(axis=1, initial=0))
    if off.size:
        i = int(off[0])
        raise InvalidRelease(
            Reason.BAD_STRUCTURE,
            f"{what}: node {int(leaves[i])}: leaf_class expected a class of the leaf's largest count "
            f"({int(table[i].max())}), got class {int(label[i])} (count {int(table[i, label[i]])})",
        )
    counts = np.full((feature.size, n_classes), -1, dtype=np.int64)
    counts[leaves] = table
    return counts


def _marginals(release: pb.Release, params: TrainingParameters, schema: Schema, what: str) -> NoisyMarginals | None:
    """The marginals part: present exactly when ``marginals_share > 0``, shaped by the schema and its grid.

    The number of counts expected is ``sum_j n_codes[j] * n_classes`` of
    ``FeatureGrid.from_schema(schema, marginals_bins)`` (the policy caps
    ``marginals_bins``), checked before any array is built; the budget and the
    relation are the parameters' (``epsilon - count_epsilon``), never sent twice.
    """
    present = release.HasField("marginals")
    if params.marginals_share == 0:
        if present:
            raise InvalidRelease(
                Reason.BAD_STRUCTURE, f"{what}: marginals expected absent (parameters.marginals_share = 0), got some"
            )
        return None
    if not present:
        raise InvalidRelease(
            Reason.BAD_STRUCTURE,
            f"{what}: marginals expected (parameters.marginals_share = {params.marginals_share:g}), got none",
        )
    n_codes = FeatureGrid.from_schema(schema, params.marginals_bins).n_codes
    k = schema.n_classes
    sizes = [int(n) * k for n in n_codes]
    n_values = len(release.marginals.counts)
    if n_values != sum(sizes):
        raise InvalidRelease(
            Reason.BAD_STRUCTURE,
            f"{what}: marginals expected {sum(sizes)} counts ({len(n_codes)} features on the "
            f"{params.marginals_bins}-bin grid x {k} classes), got {n_values}",
        )
    values = np.fromiter(release.marginals.counts, dtype=np.int64, count=n_values)
    low, high = RELEASE_RANGE
    if n_values and (int(values.min()) < low or int(values.max()) > high):
        raise InvalidRelease(
            Reason.BAD_STRUCTURE,
            f"{what}: marginals expected counts within {low}..{high}, got {int(values.min())}..{int(values.max())}",
        )
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    counts = tuple(values[offsets[j] : offsets[j + 1]].reshape(int(n_codes[j]), k) for j in range(len(n_codes)))
    return NoisyMarginals(counts, params.forest_epsilon, params.relation, k)
