"""What a coordinator accepts from a party: limits checked on every release."""

from __future__ import annotations

import math
from dataclasses import dataclass

from edprf_core.config_checks import Boolean, Integer, Number, check_fields
from edprf_core.forest import MAX_DEPTH_LIMIT, RELATIONS

__all__ = ["INSPECTION_POLICY", "ReleasePolicy"]

_MiB = 1 << 20


@dataclass(frozen=True)
class ReleasePolicy:
    """Limits a decoder enforces on untrusted releases.

    Raises ``TypeError`` for a value of the wrong type and ``ValueError`` for
    one out of range.

    Parameters
    ----------
    max_epsilon : float > 0, default 10.0
        Largest ε per record accepted (``math.inf`` accepts any finite ε).
    max_depth : int in [1, 30], default 12
        Largest declared ``max_depth``.
    max_n_trees : int >= 1, default 1000
        Largest number of trees in one release.
    max_bytes : int >= 1, default 64 MiB
        Size cap of the serialized ``SignedRelease``, checked before parsing.
    max_n_bins : int >= 2, default 64
        Largest ``n_bins`` (the grid, and so memory, grows with it).
    require_signature : bool, default False
        Require a key registry when decoding (with a registry every release
        must be signed by its party's registered key).
    allowed_relations : tuple of str, default ("add-remove", "replace-one")
        Neighbouring relations accepted.
    allow_non_dp : bool, default False
        Accept ``dp = false`` releases (research only; never in production).
    """

    max_epsilon: float = 10.0
    max_depth: int = 12
    max_n_trees: int = 1000
    max_bytes: int = 64 * _MiB
    max_n_bins: int = 64
    require_signature: bool = False
    allowed_relations: tuple[str, ...] = RELATIONS
    allow_non_dp: bool = False

    def __post_init__(self) -> None:
        check_fields(self, _RULES, key=str, type_errors=True)
        object.__setattr__(self, "max_epsilon", float(self.max_epsilon))
        for name in ("max_depth", "max_n_trees", "max_bytes", "max_n_bins"):
            object.__setattr__(self, name, int(getattr(self, name)))
        relations = self.allowed_relations
        if isinstance(relations, str):
            raise TypeError(f"allowed_relations: expected a sequence of relations, got the string {relations!r}")
        relations = tuple(relations)
        unknown = [r for r in relations if r not in RELATIONS]
        if not relations or unknown:
            raise ValueError(f"allowed_relations: expected a non-empty subset of {RELATIONS}, got {relations!r}")
        object.__setattr__(self, "allowed_relations", relations)


_RULES = {
    "max_epsilon": Number(0, low_open=True, finite=False, text="a number > 0"),
    "max_depth": Integer(1, MAX_DEPTH_LIMIT),
    "max_n_trees": Integer(1),
    "max_bytes": Integer(1),
    "max_n_bins": Integer(2),
    "require_signature": Boolean(),
    "allow_non_dp": Boolean(),
}
"""Each limit with its rule: a value of the wrong kind raises TypeError, one out of range ValueError."""


INSPECTION_POLICY = ReleasePolicy(
    max_epsilon=math.inf,
    max_depth=MAX_DEPTH_LIMIT,
    max_n_trees=1_000_000,
    max_bytes=1024 * _MiB,
    max_n_bins=4096,
    allow_non_dp=True,
)
"""Accepts every well-formed release (for inspection tools and re-loading a
global model): structure and domain checks still apply, the limits are only
those of the format."""
