"""A Flower grid whose nodes answer the coordinator's train request with real, signed releases.

Each node fits the estimator a party runs on its own rows with the request's parameters, encodes and signs its
release with the party's registered key (the real encoder); a node's ``hook`` may then change the release (a
hostile party: it signs what it changes with its own key).  The replies go through the real
:func:`server.run_federation` (decode, conformance, quality checks, merge, report).  Requests other than TRAIN get no
reply: the tests turn the readiness and evaluation rounds off.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from flwr.app import ConfigRecord, Message, MessageType, RecordDict

from edprf_core import DPForest, EDPRFClassifier, Schema
from protocol import encode_release, generate_signing_key, release_pb2, save_public_key
from protocol._signature import sign_release_bytes
from protocol.messages import REQUEST_KEY, RESULT_KEY, TrainRequest

__all__ = ["Node", "ReleaseGrid", "fit_for", "parties_on", "released", "resigned"]

Hook = Callable[[bytes, TrainRequest, "Node", Schema], bytes]
"""``hook(release bytes, request, node, schema) -> the bytes the node sends``."""


@dataclass
class Node:
    """One party behind a node: its id, rows, signing key and optional hook."""

    party_id: str
    X: pd.DataFrame
    y: pd.Series
    key: object
    hook: Hook | None = None


def fit_for(request: TrainRequest, schema: Schema, X: pd.DataFrame, y: pd.Series, **change) -> DPForest:
    """The forest a party fits for ``request`` (seeded with the request's seed), with ``change`` to its settings."""
    params = {
        "epsilon": request.epsilon,
        "n_trees": request.n_trees,
        "n_bins": request.n_bins,
        "split_mode": request.split_mode,
        "leaf": request.leaf,
        "relation": request.relation,
        "max_depth": request.max_depth,
        "random_state": request.seed,
    }
    return EDPRFClassifier(schema, **(params | change)).fit(X, y).forest_


def released(forest: DPForest, request: TrainRequest, node: Node) -> bytes:
    """``forest`` as ``node``'s party releases it for ``request``: encoded and signed with its key."""
    return encode_release(forest, node.party_id, node.key, run_id=request.run_id, request_id=request.request_id)


def resigned(payload: bytes, key: object, change: Callable[[release_pb2.Release], None]) -> bytes:
    """``payload``'s release changed by ``change`` and signed again with ``key`` (the party's own)."""
    release = release_pb2.Release.FromString(release_pb2.SignedRelease.FromString(payload).release)
    change(release)
    return sign_release_bytes(release.SerializeToString(deterministic=True), key).SerializeToString(deterministic=True)


def parties_on(
    X: pd.DataFrame, y: pd.Series, n: int, keys_dir: Path, seed: int = 0, algorithm: str = "ed25519"
) -> dict[int, Node]:
    """``n`` parties on disjoint random shares of the rows (nodes 100, 101, ...), keys registered in ``keys_dir``."""
    keys_dir.mkdir(parents=True, exist_ok=True)
    shares = np.array_split(np.random.default_rng(seed).permutation(len(X)), n)
    nodes = {}
    for i, rows in enumerate(shares):
        party = f"party-{i}"
        key = generate_signing_key(algorithm)
        save_public_key(key, keys_dir / f"{party}.pub.pem")
        nodes[100 + i] = Node(party, X.iloc[rows], y.iloc[rows], key)
    return nodes


class ReleaseGrid:
    """The nodes of ``nodes`` (node id -> :class:`Node`) answering TRAIN requests on ``schema``."""

    def __init__(self, schema: Schema, nodes: dict[int, Node]) -> None:
        self.schema, self.nodes = schema, nodes

    def get_node_ids(self) -> list[int]:
        return list(self.nodes)

    def get_nodes(self) -> list:
        return []

    def send_and_receive(self, messages, timeout=None):
        replies = []
        for m in messages:
            if m.metadata.message_type != MessageType.TRAIN:
                continue
            node = self.nodes[m.metadata.dst_node_id]
            request = TrainRequest.from_record(dict(m.content.config_records[REQUEST_KEY]))
            payload = released(fit_for(request, self.schema, node.X, node.y), request, node)
            if node.hook is not None:
                payload = node.hook(payload, request, node, self.schema)
            reply = Message(
                RecordDict({RESULT_KEY: ConfigRecord({"status": "released", "release": payload})}), reply_to=m
            )
            reply.metadata.__dict__["_src_node_id"] = m.metadata.dst_node_id
            replies.append(reply)
        return replies
