"""Structured fuzzing of the release checks a coordinator runs: decode, then conformance to the request.

The adversary is a registered party: it signs whatever it sends with its own
key.  Starting from a valid release that answers the request, each input
changes one to three fields of the Release (a training parameter, the run or
request id, the format version) and is signed again.  The only acceptable
outcomes are a rejection (``InvalidRelease`` from the decoder, or a reason from
:func:`request_mismatch`) or an accepted release that answers the request
exactly (same run, request and parameters).  Anything else is a *wrong
accept*.  Used by the test suite (a few thousand inputs) and by
``benchmarks/fuzz_conformance.py`` (hundreds of thousands).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from edprf_core import DPForest
from protocol import InvalidRelease, PartyKeyRegistry, ReleasePolicy, decode_release, encode_release
from protocol import release_pb2 as pb
from protocol._signature import sign_release_bytes
from protocol.messages import TrainRequest
from server import CoordinatorConfig
from server._conformance import request_mismatch

__all__ = ["FuzzOutcome", "fuzz_conformance"]

_INT_FIELDS = ("max_depth", "n_trees", "n_bins")
_ENUM_FIELDS = ("relation", "split_mode", "sampler", "leaf", "depth_rule")
_BOOL_FIELDS = ("seeded", "dp")


@dataclass
class FuzzOutcome:
    inputs: int = 0
    rejected_by_decoder: int = 0
    rejected_by_conformance: int = 0
    accepted: int = 0
    wrong_accepts: int = 0


def _mutate(release: pb.Release, rng: np.random.Generator) -> None:
    p = release.parameters
    for _ in range(int(rng.integers(1, 4))):
        kind = int(rng.integers(0, 8))
        if kind == 0:
            p.epsilon = float(rng.choice([p.epsilon * (1 + 1e-12), p.epsilon / 2, p.epsilon + 1e-9, 0.999999]))
        elif kind == 1:
            name = str(rng.choice(_INT_FIELDS))
            setattr(p, name, max(0, getattr(p, name) + int(rng.choice([-1, 1, 2]))))
        elif kind == 2:
            name = str(rng.choice(_ENUM_FIELDS))
            setattr(p, name, int(rng.integers(0, 4)))
        elif kind == 3:
            name = str(rng.choice(_BOOL_FIELDS))
            setattr(p, name, not getattr(p, name))
        elif kind == 4:
            release.run_id = str(rng.choice(["", release.run_id + "x", release.run_id.upper(), "run-0"]))
        elif kind == 5:
            release.request_id = str(rng.choice(["", release.request_id + " ", "run-0/train", "x/train"]))
        elif kind == 6:
            release.format_version = int(rng.integers(0, 4))
            if release.format_version == 1 and rng.random() < 0.5:
                release.run_id = release.request_id = ""
        else:
            release.party_id = str(rng.choice([release.party_id, "hospital-a", "hospital-b"]))


def fuzz_conformance(
    forest: DPForest,
    party: str,
    key,
    registry: PartyKeyRegistry,
    request: TrainRequest,
    cfg: CoordinatorConfig,
    n: int,
    seed: int = 0,
) -> FuzzOutcome:
    """Run ``n`` mutated, re-signed releases of ``party`` through decode + conformance."""
    rng = np.random.default_rng(seed)
    schema = forest.schema
    policy = ReleasePolicy(
        max_epsilon=request.epsilon,
        max_depth=request.max_depth,
        max_n_trees=request.n_trees,
        max_bytes=1 << 22,
        require_signature=True,
        allowed_relations=(request.relation,),
    )
    base = pb.SignedRelease.FromString(
        encode_release(forest, party, key, run_id=request.run_id, request_id=request.request_id)
    ).release
    out = FuzzOutcome()
    for _ in range(n):
        release = pb.Release.FromString(base)
        _mutate(release, rng)
        data = sign_release_bytes(release.SerializeToString(deterministic=True), key).SerializeToString(
            deterministic=True
        )
        out.inputs += 1
        try:
            got = decode_release(data, schema, policy, registry)
        except InvalidRelease:
            out.rejected_by_decoder += 1
            continue
        if request_mismatch(got, request, cfg) is not None:
            out.rejected_by_conformance += 1
            continue
        out.accepted += 1
        q = got.params
        answers = (
            got.request_id == request.request_id
            and got.run_id == request.run_id
            and q.epsilon == request.epsilon
            and q.max_depth == request.max_depth
            and q.n_trees == request.n_trees
            and q.n_bins == request.n_bins
            and q.split_mode == request.split_mode
            and q.schedule == "harmonic"
            and q.relation == request.relation
            and q.composition == "parallel"
            and q.variant == "pf"
            and q.dp
            and (not q.seeded or request.seed >= 0)
        )
        out.wrong_accepts += not answers
    return out
