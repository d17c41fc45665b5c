"""The codes a party's reply carries: its status, and the reason of a refusal.

Both are string enums: a member *is* its string (``RefusalReason.POLICY_DEPTH == "policy_depth"``),
so the wire records, the coordinator's report and the tests keep the same strings.  The set of
refusal reasons is fixed and documented here: a party sends no other code, and every code's
meaning names a policy rule, a request value or the party's set-up, never its data.
"""

from __future__ import annotations

from enum import StrEnum

__all__ = ["REFUSAL_REASONS", "RefusalReason", "ReplyStatus"]


class ReplyStatus(StrEnum):
    """The ``status`` of a party's reply record."""

    RELEASED = "released"
    """A training request served: the record holds the release and its run binding."""
    EVALUATED = "evaluated"
    """An evaluation request served: the metrics record holds the (noised) counts."""
    REFUSED = "refused"
    """Not served: the record holds a :class:`RefusalReason` and a message."""
    READY = "ready"
    """A readiness query (Flower's ``query`` message, the train request's record) answered: the party would
    train and release for that request now."""
    WOULD_RESEND = "would_resend"
    """A readiness query answered: the party holds a release made under that request id and would resend it,
    spending nothing."""


class RefusalReason(StrEnum):
    """Why a party refused a request (the meaning of each is in :data:`REFUSAL_REASONS`)."""

    BAD_REQUEST = "bad_request"
    BAD_MODEL = "bad_model"
    BUDGET_EXHAUSTED = "budget_exhausted"
    EPSILON_RESOLUTION = "epsilon_resolution"
    HELD_OUT_CHANGED = "held_out_changed"
    INTERNAL_ERROR = "internal_error"
    INVALID_LOCAL_DATA = "invalid_local_data"
    NOT_REGISTERED = "not_registered"
    PARTY_SETUP = "party_setup"
    POLICY_BINS = "policy_bins"
    POLICY_DEPTH = "policy_depth"
    POLICY_EPSILON = "policy_epsilon"
    POLICY_EVALUATION_EPSILON = "policy_evaluation_epsilon"
    POLICY_EXACT_METRICS = "policy_exact_metrics"
    POLICY_MARGINALS = "policy_marginals"
    POLICY_MIN_EPSILON = "policy_min_epsilon"
    POLICY_MODEL_BYTES = "policy_model_bytes"
    POLICY_MODEL_NODES = "policy_model_nodes"
    POLICY_MODEL_PARTS = "policy_model_parts"
    POLICY_MODEL_SCHEMA = "policy_model_schema"
    POLICY_MODEL_TREES = "policy_model_trees"
    POLICY_MODEL_WORK = "policy_model_work"
    POLICY_RELATION = "policy_relation"
    POLICY_RELEASE_NODES = "policy_release_nodes"
    POLICY_SEED = "policy_seed"
    POLICY_TREES = "policy_trees"
    REQUEST_ID_REUSED = "request_id_reused"
    REQUEST_SPENT = "request_spent"
    ROUND_CLOSED = "round_closed"
    SCHEMA_MISMATCH = "schema_mismatch"


REFUSAL_REASONS: dict[RefusalReason, str] = {
    RefusalReason.BAD_REQUEST: "the request record is missing keys or holds values of the wrong kind",
    RefusalReason.BAD_MODEL: "the global model sent for evaluation is malformed or fails its checks",
    RefusalReason.BUDGET_EXHAUSTED: "the request would pass the party's lifetime epsilon cap",
    RefusalReason.EPSILON_RESOLUTION: "the requested epsilon is not a multiple of 1e-6 (the ledger's unit)",
    RefusalReason.HELD_OUT_CHANGED: "the model holds a release of this party trained before its held-out rows were "
    "drawn as they are now (an upgrade), or signed by its key and unknown to its ledger (a lost or replaced "
    "ledger): they may include that release's training rows (decided from the ledger and the key, before any row "
    "is read)",
    RefusalReason.INTERNAL_ERROR: "the party failed while serving the request (any exception); details in its log",
    RefusalReason.INVALID_LOCAL_DATA: "the party's data file cannot be used with the schema (file level only)",
    RefusalReason.NOT_REGISTERED: "the party's id or signing key is not one the coordinator registered (checked before "
    "any epsilon is reserved)",
    RefusalReason.PARTY_SETUP: "the party's configuration (policy, schema, key, ledger, paths) is unusable",
    RefusalReason.POLICY_BINS: "more bins than the policy's max-n-bins",
    RefusalReason.POLICY_DEPTH: "deeper than the policy's max-depth",
    RefusalReason.POLICY_EPSILON: "release epsilon above the policy's max-release-epsilon",
    RefusalReason.POLICY_EVALUATION_EPSILON: "evaluation epsilon above max-evaluation-epsilon (or evaluations disabled)",
    RefusalReason.POLICY_EXACT_METRICS: "exact metrics asked for, not allowed by the policy",
    RefusalReason.POLICY_MARGINALS: "a marginals part asked for, not allowed by the policy's allow-marginals",
    RefusalReason.POLICY_MIN_EPSILON: "epsilon below the policy's min-epsilon",
    RefusalReason.POLICY_MODEL_BYTES: "evaluation model larger than max-evaluation-model-bytes",
    RefusalReason.POLICY_MODEL_NODES: (
        "evaluation model with more nodes than max-evaluation-nodes, or whose memory "
        "estimated from its header passes max-evaluation-memory-bytes"
    ),
    RefusalReason.POLICY_MODEL_PARTS: "evaluation model with more releases than max-evaluation-parts",
    RefusalReason.POLICY_MODEL_SCHEMA: "evaluation model whose embedded schema text is larger than the party accepts",
    RefusalReason.POLICY_MODEL_TREES: "evaluation model with more trees than max-evaluation-trees",
    RefusalReason.POLICY_MODEL_WORK: (
        "evaluation model whose work estimated from its header passes max-evaluation-work"
    ),
    RefusalReason.POLICY_RELATION: "neighbouring relation other than the policy's",
    RefusalReason.POLICY_RELEASE_NODES: "release larger (nodes, from public parameters) than max-release-nodes",
    RefusalReason.POLICY_SEED: "a fixed seed asked for, not allowed by the policy",
    RefusalReason.POLICY_TREES: "more trees than the policy's max-n-trees",
    RefusalReason.REQUEST_ID_REUSED: (
        "the request id was used before: by a release with other parameters or for a coordinator with other "
        "registered keys, or by any earlier evaluation"
    ),
    RefusalReason.ROUND_CLOSED: (
        "the run's round-timeout had passed, counted from when the message reached the party, before the party "
        "reserved its epsilon (decided before any row is read): the coordinator had stopped waiting; nothing was spent"
    ),
    RefusalReason.REQUEST_SPENT: (
        "the request id was started before and has not completed (still running in another process of the "
        "party, interrupted, or failed): its epsilon stays spent; a new request needs a new id"
    ),
    RefusalReason.SCHEMA_MISMATCH: "the request or model uses another schema than the party's",
}
"""Every reason code a party may send, with its meaning (the fixed, documented set)."""
