"""The one exception a decoder raises on untrusted bytes, with a reason code."""

from __future__ import annotations

from enum import StrEnum

from edprf_core import EDPRFError

__all__ = ["InvalidRelease", "Reason"]


class Reason(StrEnum):
    """Why a release (or a global model) was refused.

    The values are stable strings, fit for logs and for a coordinator's
    manifest of rejections.
    """

    TOO_LARGE = "too_large"
    """More bytes than the policy's ``max_bytes`` (checked before parsing)."""
    MALFORMED = "malformed"
    """Not a protobuf message of the expected type, unknown fields, or a non-canonical encoding."""
    UNKNOWN_VERSION = "unknown_version"
    """A ``format_version`` this decoder does not implement."""
    SCHEMA_MISMATCH = "schema_mismatch"
    """Another schema fingerprint than the federation's, or releases on different grids."""
    BAD_PARAMETERS = "bad_parameters"
    """Training parameters or party id outside their declared values (unknown enum, ε not finite, ...)."""
    NOT_DP = "not_dp"
    """``dp = false``: trained with a research option that breaks the guarantee."""
    POLICY_EPSILON = "policy_epsilon"
    POLICY_DEPTH = "policy_depth"
    POLICY_TREES = "policy_trees"
    POLICY_BINS = "policy_bins"
    POLICY_RELATION = "policy_relation"
    BAD_STRUCTURE = "bad_structure"
    """Arrays that are not proper trees: offsets, sizes, cycles, shared or dangling children, depth."""
    INDEX_OUT_OF_RANGE = "index_out_of_range"
    """A feature, class, threshold or category outside the declared domain."""
    BAD_SIGNATURE = "bad_signature"
    """A signature that does not verify under the claimed party's registered key."""
    UNSIGNED = "unsigned"
    """No signature although a key registry is configured."""
    UNKNOWN_PARTY = "unknown_party"
    """A party without a key in the configured registry."""
    DUPLICATE_PARTY = "duplicate_party"
    """Two releases of one party in one global model (their ε would add up)."""


class InvalidRelease(EDPRFError):
    """Untrusted bytes refused by the decoder.

    Parameters
    ----------
    reason : Reason
        Machine-readable cause.
    message : str
        What was expected and what was found.

    Attributes
    ----------
    reason : Reason
    message : str
    """

    def __init__(self, reason: Reason, message: str) -> None:
        super().__init__(f"{reason.value}: {message}")
        self.reason = Reason(reason)
        self.message = message

    def __reduce__(self) -> tuple[type, tuple[Reason, str]]:
        return (type(self), (self.reason, self.message))
