"""The coordinator's codes: a party's outcome and its reason, the run's status, a skipped evaluation's reason.

String enums: a member *is* its string, so ``report.json`` and every comparison with a plain
string (``p.status == "accepted"``) are unchanged.
"""

from __future__ import annotations

from enum import StrEnum

__all__ = ["EvaluationSkip", "OutcomeReason", "PartyStatus", "RunStatus"]


class PartyStatus(StrEnum):
    """What became of one node's answer to the train request."""

    ACCEPTED = "accepted"
    """Its release decoded, matched the request and is in the model."""
    DROPPED = "dropped"
    """Valid, but left out by selective aggregation or the quality test (``reason`` says which)."""
    REJECTED = "rejected"
    """The coordinator refused the reply (``reason``: a decoder :class:`protocol.Reason` or a request mismatch)."""
    REFUSED = "refused"
    """The party refused the request (``reason``: a :class:`protocol.RefusalReason`)."""
    FAILED = "failed"
    """Flower reported an error for the node (``reason = "client_error"``)."""
    NO_REPLY = "no_reply"
    """No reply within ``round-timeout`` (``reason = "timeout"``)."""
    NOT_ASKED = "not_asked"
    """Would have served, but no train request was sent: too few parties would (readiness round,
    ``reason = "too_few_ready"``)."""


class RunStatus(StrEnum):
    """Where a run is: running until it ends ``completed`` (a model was saved) or ``failed``."""

    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"


class OutcomeReason(StrEnum):
    """The coordinator's own reason codes in a party's outcome.

    A ``rejected`` outcome may also carry a decoder's :class:`protocol.Reason` and a ``refused``
    one the party's :class:`protocol.RefusalReason`; these are the codes the coordinator adds.
    """

    TIMEOUT = "timeout"
    """``no_reply``: nothing arrived within ``round-timeout``."""
    CLIENT_ERROR = "client_error"
    """``failed``: Flower reported an error instead of a reply."""
    MALFORMED = "malformed"
    """``rejected``: the reply has no result record."""
    DUPLICATE_PARTY = "duplicate_party"
    """``rejected``: a second release of a party already in this run."""
    DUPLICATE_CONTENT = "duplicate_content"
    """``rejected``: the trees and counts of another party's release in this run, under its own id."""
    REPLAYED_RELEASE = "replayed_release"
    """``rejected``: a release of another run or request, without its party's binding to this run."""
    REQUEST_MISMATCH = "request_mismatch"
    """``rejected``: training parameters other than requested."""
    SEEDED_RELEASE = "seeded_release"
    """``rejected``: a fixed seed, where the request asked for cryptographic randomness."""
    SAMPLER_NOT_EXACT = "sampler_not_exact"
    """``rejected``: not drawn by the exact sampler, which the run requires."""
    FLAGGED_LOW_QUALITY = "flagged_low_quality"
    """``dropped``: the quality test flagged the party's trees (``exclude-flagged``)."""
    NOT_SELECTED = "not_selected"
    """``dropped``: its trees did not raise validation accuracy (``selective-aggregation``)."""
    TOO_FEW_READY = "too_few_ready"
    """``not_asked``: ready, but fewer than ``min-parties`` parties would serve the request, so no train request
    was sent (``readiness-check``)."""


class EvaluationSkip(StrEnum):
    """Why the evaluation round was not run (``federated_evaluation["skipped"]`` in the report)."""

    PARTY_ROWS_NOT_DECLARED = "party_rows_not_declared"
    """``max-party-rows`` is 0: the coordinator cannot tell whether the round would inform."""
    UNINFORMATIVE = "uninformative"
    """The planned interval is wider than ``evaluation-max-interval-width``."""
    RESUMED_RELEASES = "resumed_releases"
    """Every accepted release was resent for a reused ``request-tag``: not evaluated again (the message says whether
    the earlier run evaluated it; ``evaluate-resumed=true`` asks)."""
    MODEL_TOO_LARGE_FOR_TRANSPORT = "model_too_large_for_transport"
    """The global model exceeds what a Flower message carries."""
