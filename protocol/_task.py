"""What the coordinator asks of a party, as flat key/value records.

Both Flower sides build and read these through one definition, so a key
cannot drift.  Values are checked on arrival like any untrusted input.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from edprf_core import LEAF_OUTPUTS, RELATIONS, SPLIT_MODES

from ._ids import check_request_id

__all__ = [
    "DEPTH_REQUESTS",
    "METRICS_KEY",
    "MODEL_KEY",
    "REQUEST_KEY",
    "RESULT_KEY",
    "EvaluateRequest",
    "TaskError",
    "TrainRequest",
]

# names of the records inside Flower messages, shared by party and coordinator
REQUEST_KEY = "request"
RESULT_KEY = "result"
MODEL_KEY = "model"
METRICS_KEY = "metrics"


DEPTH_REQUESTS = ("fixed", "auto")
"""How a request sets the depth: exactly ``max-depth``, or chosen by each party up to it."""


class TaskError(ValueError):
    """A request record that is missing keys or holds values of the wrong kind."""


def _kebab(name: str) -> str:
    return name.replace("_", "-")


def _read(cls: type, record: Mapping[str, Any]) -> dict[str, Any]:
    out = {}
    for f in fields(cls):
        key = _kebab(f.name)
        if key not in record:
            raise TaskError(f"request: missing key {key!r}")
        value = record[key]
        expected = {"float": (int, float), "int": (int,), "str": (str,), "bool": (bool,)}[str(f.type)]
        if isinstance(value, bool) and str(f.type) != "bool" or not isinstance(value, expected):
            raise TaskError(f"request: {key} expected {f.type}, got {type(value).__name__}")
        out[f.name] = float(value) if str(f.type) == "float" else value
    return out


def _check_ids(request_id: object, run_id: object) -> None:
    """Both ids follow the release encoder's rule (:func:`protocol._ids.check_request_id`): a party
    checks them before it reserves anything, so a request it could not answer costs no epsilon."""
    try:
        check_request_id(request_id, "request-id", required=True)
        check_request_id(run_id, "run-id")
    except ValueError as exc:
        raise TaskError(str(exc)) from None


@dataclass(frozen=True)
class TrainRequest:
    """Ask a party for one DP release.

    ``seed`` < 0 means "no seed" (the party draws cryptographic randomness);
    a party accepts a seed only if its policy allows seeded randomness.

    ``leaf`` says what the leaves release (``"counts"``: noisy class counts,
    ``"label"``: the paper's label).  ``depth_rule``: ``"fixed"`` grows
    exactly ``max_depth`` levels; ``"auto"`` lets each party choose its depth
    (at most ``max_depth``) from the row count its policy declares public, or
    from a DP count of its rows charged within ``epsilon``, so a big hospital
    and a small clinic each grow what their data support.  Records from
    coordinators that predate these keys read as ``"label"`` and ``"fixed"``.
    """

    request_id: str
    run_id: str
    schema_fingerprint: str
    epsilon: float
    max_depth: int
    n_trees: int
    split_mode: str
    n_bins: int
    relation: str
    seed: int
    leaf: str = "counts"
    depth_rule: str = "fixed"

    def __post_init__(self) -> None:
        _check_ids(self.request_id, self.run_id)
        if self.leaf not in LEAF_OUTPUTS:
            raise TaskError(f"leaf: expected one of {LEAF_OUTPUTS}, got {self.leaf!r}")
        if self.depth_rule not in DEPTH_REQUESTS:
            raise TaskError(f"depth-rule: expected one of {DEPTH_REQUESTS}, got {self.depth_rule!r}")
        if not math.isfinite(self.epsilon) or self.epsilon <= 0:
            raise TaskError(f"epsilon: expected a positive finite number, got {self.epsilon!r}")
        for name, low in (("max_depth", 1), ("n_trees", 1), ("n_bins", 2)):
            if getattr(self, name) < low:
                raise TaskError(f"{_kebab(name)}: expected >= {low}, got {getattr(self, name)}")
        for name, allowed in (("split_mode", SPLIT_MODES), ("relation", RELATIONS)):
            if getattr(self, name) not in allowed:
                raise TaskError(f"{_kebab(name)}: expected one of {allowed}, got {getattr(self, name)!r}")

    def to_record(self) -> dict[str, Any]:
        return {_kebab(f.name): getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> TrainRequest:
        return cls(**_read(cls, {"leaf": "label", "depth-rule": "fixed", **record}))  # records before these keys


@dataclass(frozen=True)
class EvaluateRequest:
    """Ask a party to evaluate the global model on its held-out rows.

    ``epsilon`` is the budget of the noised metrics; ``exact`` asks for
    un-noised metrics, which a party returns only if its policy allows it.
    ``seed`` < 0 (the default, also when a record has no ``seed`` key) means
    cryptographic randomness and exact noise; a seed is honoured only if the
    party's policy allows seeded randomness (research sampler).
    """

    request_id: str
    run_id: str
    epsilon: float
    exact: bool
    seed: int = -1

    def __post_init__(self) -> None:
        _check_ids(self.request_id, self.run_id)
        if not math.isfinite(self.epsilon) or self.epsilon < 0:
            raise TaskError(f"epsilon: expected a finite number >= 0, got {self.epsilon!r}")

    def to_record(self) -> dict[str, Any]:
        return {_kebab(f.name): getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> EvaluateRequest:
        return cls(**_read(cls, {"seed": -1, **record}))  # records from before the seed field
