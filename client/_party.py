"""A party's side of the federation, independent of Flower's message types.

Privacy argument of one party
-----------------------------
Every reply depends on the party's data only through:
- a release: an eDPRF forest whose ε is reserved in the ledger before
  training (ε-DP per record, see :mod:`edprf_core`);
- noised evaluation counts: the held-out (correct, total) pair is a sum of
  per-record terms, so it has L1 sensitivity 2 under add/remove; it is released
  with exact discrete Laplace noise of scale 2/ε (integers, OpenDP's sampler),
  ε reserved in the ledger first;
- exact metrics, only when the party's policy says so explicitly (not DP).
The rows themselves come from a per-record data path (:func:`load_local_data`):
each line's fate (kept, mapped, dropped) depends on that line only, so the
rows of neighbouring files are neighbouring (a stable transformation).
Refusals are decided before any data are read, from the request, the policy,
the ledger and the schema, except ``invalid_local_data``, which depends on the
file's existence and header only; their texts name the rule and the requested
value, never anything read from the data.  Any other failure becomes the
constant reason ``internal_error`` (see :mod:`client._flower_handlers`); the
detail stays in the party's own log.
The ledger sums every reservation exactly (sequential composition over
requests); a request that would pass the lifetime cap is refused before any
computation.
"""

from __future__ import annotations

import logging
import math
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from edprf_core import (
    DataValidationError,
    DPForest,
    EDPRFClassifier,
    Schema,
    discrete_laplace_counts,
    encode_labels,
    load_schema,
)
from protocol import ReleasePolicy, encode_release, load_global_model, load_private_key
from protocol._task import EvaluateRequest, TrainRequest

from ._ledger import EPSILON_UNIT, BudgetExhausted, BudgetLedger, epsilon_units
from ._local_data import LocalData, load_local_data, new_salt
from ._policy import PartyPolicy, load_policy

__all__ = ["Party", "PartySetup", "Refusal"]

log = logging.getLogger("edprf.party")


class Refusal(Exception):
    """A request the party will not serve; ``reason`` is a stable code."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True)
class PartySetup:
    """Where a party's files are (all local paths)."""

    data_path: Path
    schema_path: Path
    policy_path: Path
    ledger_path: Path
    signing_key_path: Path | None = None

    @classmethod
    def from_configs(cls, node_config: Mapping[str, Any], run_config: Mapping[str, Any]) -> PartySetup:
        """Deployment: node config keys ``data-path``, ``schema-path``, ``policy-path``,
        ``ledger-path`` and optionally ``signing-key``.  Simulation: the run config's
        ``sim-dir`` and the node's ``partition-id`` locate ``party-NNNN/``.
        """
        if "data-path" in node_config:
            missing = [k for k in ("schema-path", "policy-path", "ledger-path") if k not in node_config]
            if missing:
                raise ValueError(f"node config: missing keys {missing}")
            key = node_config.get("signing-key") or None
            return cls(Path(str(node_config["data-path"])), Path(str(node_config["schema-path"])),
                       Path(str(node_config["policy-path"])), Path(str(node_config["ledger-path"])),
                       Path(str(key)) if key else None)
        sim_dir = run_config.get("sim-dir")
        if not sim_dir or "partition-id" not in node_config:
            raise ValueError("node config needs data-path/schema-path/policy-path/ledger-path "
                             "(deployment) or the run config sim-dir with a partition-id (simulation)")
        party_dir = Path(str(sim_dir)) / f"party-{int(node_config['partition-id']):04d}"
        key = party_dir / "signing-key.pem"
        return cls(party_dir / "data.csv", Path(str(sim_dir)) / "schema.toml", party_dir / "policy.toml",
                   party_dir / "ledger.sqlite", key if key.is_file() else None)


class Party:
    """Serves train and evaluate requests under the party's policy and ledger."""

    def __init__(self, setup: PartySetup) -> None:
        self.setup = setup
        self.policy: PartyPolicy = load_policy(setup.policy_path)
        self.schema: Schema = load_schema(setup.schema_path)
        if self.policy.schema_fingerprint and self.policy.schema_fingerprint != self.schema.fingerprint:
            raise ValueError(f"local schema fingerprint {self.schema.fingerprint} differs from the policy's "
                             f"{self.policy.schema_fingerprint}")
        self.ledger = BudgetLedger(setup.ledger_path, self.policy.lifetime_epsilon_cap)

    # ---------------------------------------------------------------- helpers
    def _data(self) -> LocalData:
        salt = self.ledger.secret("holdout-salt", new_salt)
        try:
            return load_local_data(self.setup.data_path, self.schema, self.policy.holdout_fraction, salt)
        except (DataValidationError, ValueError) as exc:
            # only file-level problems get here (no file, missing or unknown columns); row-level
            # problems, down to no usable row at all, are handled in load_local_data, never reported
            log.error("local data cannot be used: %s", exc)
            raise Refusal("invalid_local_data", "the party's local data file cannot be used with the schema; "
                                                "details are in the party's log") from None

    def _check_train(self, req: TrainRequest) -> None:
        p = self.policy
        if req.schema_fingerprint != self.schema.fingerprint:
            raise Refusal("schema_mismatch", f"request schema {req.schema_fingerprint} differs from the party's "
                                             f"{self.schema.fingerprint}")
        self._check_epsilon(req.epsilon, p.max_release_epsilon, "policy_epsilon", "release")
        if req.max_depth > p.max_depth:
            raise Refusal("policy_depth", f"depth {req.max_depth} exceeds the party's maximum {p.max_depth}")
        if req.n_trees > p.max_trees:
            raise Refusal("policy_trees", f"{req.n_trees} trees exceed the party's maximum {p.max_trees}")
        if req.n_bins > p.max_bins:
            raise Refusal("policy_bins", f"{req.n_bins} bins exceed the party's maximum {p.max_bins}")
        if req.relation != p.relation:
            raise Refusal("policy_relation", f"relation {req.relation!r} differs from the party's {p.relation!r}")
        if req.seed >= 0 and not p.allow_seeded_randomness:
            raise Refusal("policy_seed", "a fixed seed was requested but the party's policy requires "
                                         "cryptographic randomness")

    def _seed(self, seed: int) -> np.random.SeedSequence | None:
        """A requested research seed, made party-specific (and so independent of node ids)."""
        if seed < 0:
            return None
        return np.random.SeedSequence([seed, zlib.crc32(self.policy.party_id.encode("utf-8"))])

    # ------------------------------------------------------------------ train
    def train(self, req: TrainRequest) -> bytes:
        """Serve a release request; returns the (signed) release bytes.

        Privacy cost: ``req.epsilon``, reserved in the ledger before training.
        """
        self._check_train(req)
        detail = _release_detail(req)
        previous = self.ledger.find(req.request_id)
        if previous is not None:
            # A repeated request id (a coordinator resuming after a crash, or a retry) gets the
            # release already made for it: resending it is post-processing, no new epsilon.
            entry, payload = previous
            if entry.kind != "release" or entry.epsilon != req.epsilon or entry.detail != detail:
                raise Refusal("request_id_reused",
                              f"request {req.request_id} was served before with other parameters "
                              f"(epsilon {entry.epsilon:g}, {entry.detail or entry.kind}); a new request needs a new id")
            if entry.state == "released" and payload is not None:
                log.info("request %s already served; resending the stored release", req.request_id)
                return payload
            raise Refusal("request_spent", f"request {req.request_id} was started before and did not complete; "
                                           "its epsilon stays spent")
        data = self._data()
        try:
            self.ledger.reserve(req.request_id, "release", req.epsilon, run_id=req.run_id, detail=detail)
        except BudgetExhausted as exc:
            raise Refusal("budget_exhausted", str(exc)) from None
        try:
            clf = EDPRFClassifier(
                self.schema, epsilon=req.epsilon, n_estimators=req.n_trees, max_depth=req.max_depth,
                split_mode=req.split_mode, n_bins=req.n_bins, schedule=req.schedule, neighbouring=req.relation,
                random_state=self._seed(req.seed),
            ).fit(data.X_train, data.y_train)
            key = load_private_key(self.setup.signing_key_path) if self.setup.signing_key_path else None
            payload = encode_release(clf.forest_, self.policy.party_id, signing_key=key)
        except BaseException as exc:
            self.ledger.fail(req.request_id, f"{type(exc).__name__}")
            log.exception("training failed after the reservation; its epsilon stays spent")
            raise Refusal("internal_error", "training failed at the party; details are in the party's log") from None
        self.ledger.complete(req.request_id, payload)
        log.info("released %d trees at epsilon %g (remaining %g)", req.n_trees, req.epsilon, self.ledger.remaining())
        return payload

    # --------------------------------------------------------------- evaluate
    def evaluate(self, model: bytes, req: EvaluateRequest) -> dict[str, float | int]:
        """Evaluate the global model on the held-out rows.

        Returns ``correct`` and ``total`` as integers: noised with the exact
        discrete Laplace sampler (L1 sensitivity 2 under add/remove, scale
        ``2 / req.epsilon``, ``req.epsilon`` reserved in the ledger first), or
        exact if the request asks and the policy allows (not DP).

        Both counts are sums of per-record terms: a held-out row adds 1 to
        ``total`` and 1 to ``correct`` when the predicted class index equals
        its label's class index (both read by the schema, cell by cell), so
        adding or removing one record moves each by at most 1.
        """
        if req.exact and not self.policy.allow_exact_metrics:
            raise Refusal("policy_exact_metrics", "exact metrics are not allowed by the party's policy")
        if not req.exact:
            self._check_epsilon(req.epsilon, self.policy.max_evaluation_epsilon, "policy_evaluation_epsilon",
                                "evaluation")
        forest = self._evaluation_model(model)
        if forest.schema.fingerprint != self.schema.fingerprint:
            raise Refusal("schema_mismatch", "the global model uses another schema")
        data = self._data()
        if not req.exact:
            try:
                self.ledger.reserve(req.request_id, "evaluation", req.epsilon, run_id=req.run_id,
                                    detail="noised held-out accuracy")
            except BudgetExhausted as exc:
                raise Refusal("budget_exhausted", str(exc)) from None
        correct, total = held_out_counts(forest, data)
        if req.exact:
            return {"correct": correct, "total": total, "epsilon": 0.0, "exact": 1}
        noisy = discrete_laplace_counts(np.array([correct, total]), req.epsilon, sensitivity=2, rng=None)
        self.ledger.complete(req.request_id)
        return {"correct": int(noisy[0]), "total": int(noisy[1]), "epsilon": req.epsilon, "exact": 0}

    def _evaluation_model(self, model: bytes) -> DPForest:
        """Decode the coordinator's model within the party's own limits (before any ε is reserved)."""
        p = self.policy
        if len(model) > p.max_evaluation_model_bytes:
            raise Refusal("policy_model_size", f"the evaluation model has {len(model)} bytes; the party's policy "
                                               f"allows {p.max_evaluation_model_bytes}")
        limits = ReleasePolicy(max_epsilon=math.inf, max_depth=p.max_depth, max_trees=p.max_trees,
                               max_bytes=p.max_evaluation_model_bytes, max_bins=p.max_bins,
                               allowed_relations=(p.relation,))
        try:
            forest = load_global_model(model, policy=limits, max_bytes=p.max_evaluation_model_bytes).forest
        except Exception:  # the coordinator's bytes: say so, with a constant text
            log.exception("the evaluation model could not be decoded within the party's limits")
            raise Refusal("bad_model", "the evaluation model could not be decoded within the party's limits; "
                                       "details are in the party's log") from None
        if forest.n_trees > p.max_evaluation_trees:
            raise Refusal("policy_model_size", f"the evaluation model has {forest.n_trees} trees; the party's "
                                               f"policy allows {p.max_evaluation_trees}")
        return forest

    def _check_epsilon(self, epsilon: float, maximum: float, reason: str, what: str) -> None:
        """The request's ε against the policy's [min-epsilon, maximum] (request values only in the text)."""
        low = self.policy.min_epsilon
        try:
            epsilon_units(epsilon)
        except ValueError:
            raise Refusal("epsilon_precision", f"{what} epsilon {epsilon!r} is not a positive multiple of "
                                               f"{EPSILON_UNIT:g} (the ledger counts exactly)") from None
        if not low <= epsilon <= maximum:
            raise Refusal(reason, f"{what} epsilon {epsilon:g} is outside [{low:g}, {maximum:g}] allowed by the "
                                  "party's policy")


def held_out_counts(forest: DPForest, data: LocalData) -> tuple[int, int]:
    """(correct, total) on the held-out rows, each a sum of one term per record."""
    total = len(data.y_holdout)
    if total == 0:
        return 0, 0
    truth = encode_labels(data.y_holdout, forest.schema)
    predicted = np.argmax(forest.votes(data.X_holdout), axis=1)
    return int(np.sum(predicted == truth)), int(total)


def _release_detail(req: TrainRequest) -> str:
    """The ledger's description of a release: also what a repeated request id must match."""
    return (f"{req.n_trees} trees, depth {req.max_depth}, {req.split_mode}, {req.n_bins} bins, "
            f"{req.schedule}, {req.relation}")
