"""The message contract between coordinator and party: what the coordinator asks, as flat key/value records.

Both Flower sides build and read these through one definition, so a key
cannot drift.  Values are checked on arrival like any untrusted input.
:class:`TrainRequest` and :class:`EvaluateRequest` are the requests; the ``*_KEY``
constants name the records inside a Flower message; :class:`TaskError` is raised
for a request record that does not conform.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from edprf_core import EDPRFError
from edprf_core.config_checks import Integer, Number, OneOf, check_fields, from_kebab, kebab_values
from edprf_core.forest import LEAF_OUTPUTS, RELATIONS, SPLIT_MODES

from ._ids import check_request_id
from ._registration import check_registration_text
from ._spend_record import check_spend_record_text

__all__ = [
    "DEPTH_REQUESTS",
    "METRICS_KEY",
    "MODEL_KEY",
    "REQUEST_KEY",
    "RESULT_KEY",
    "EvaluateRequest",
    "TaskError",
    "TrainRequest",
    "train_request_id",
]


def train_request_id(tag_or_run: str) -> str:
    """A train request's id: the run's ``request-tag``, else its run id, then ``/train``.  A party keeps its
    release under this id in its ledger and resends it when asked under the same id."""
    return f"{tag_or_run}/train"


# names of the records inside Flower messages, shared by party and coordinator
REQUEST_KEY = "request"
RESULT_KEY = "result"
MODEL_KEY = "model"
METRICS_KEY = "metrics"


DEPTH_REQUESTS = ("fixed", "auto")
"""How a request sets the depth: exactly ``max-depth``, or chosen by each party up to it."""


class TaskError(EDPRFError, ValueError):
    """A request record that is missing keys or holds values of the wrong kind."""


def _read(cls: type, record: Mapping[str, Any]) -> dict[str, Any]:
    # every field present and of its type; keys of newer coordinators are ignored
    return from_kebab(cls, record, what="request", unknown="ignore", values="check", complete=True, error=TaskError)


def _check_ids(request_id: object, run_id: object) -> None:
    """Both ids follow the release encoder's rule (:func:`protocol._ids.check_request_id`): a party
    checks them before it reserves anything, so a request it could not answer costs no epsilon."""
    try:
        check_request_id(request_id, "request-id", required=True)
        check_request_id(run_id, "run-id")
    except ValueError as exc:
        raise TaskError(str(exc)) from None


_TRAIN_RULES = {
    "leaf": OneOf(LEAF_OUTPUTS),
    "depth_rule": OneOf(DEPTH_REQUESTS),
    "epsilon": Number(0, low_open=True),
    "max_depth": Integer(1, text=">= 1"),
    "n_trees": Integer(1, text=">= 1"),
    "n_bins": Integer(2, text=">= 2"),
    "split_mode": OneOf(SPLIT_MODES),
    "relation": OneOf(RELATIONS),
    "marginals_share": Number(0, 1, high_open=True),
    "marginals_bins": Integer(0, text=">= 0 (0: no marginals part)"),
}
"""A train request's values (their types are checked when the record is read)."""


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

    ``marginals_share`` in [0, 1) and ``marginals_bins``: the share of its rows
    each party gives to the marginals part (one-way class histograms, summed
    across parties) and that part's grid, one for the whole consortium (the
    coordinator fixes both from public figures); ``0`` and ``0``: trees only,
    which is also how records before these keys read.

    ``registered_parties``: the coordinator's registered parties, as digests
    (:func:`protocol._registration.registration_text`), so that a party whose id
    or signing key the coordinator would reject refuses before it reserves
    epsilon; ``""`` when the coordinator registers no keys (and in older records).

    ``spend_record``: the coordinator's record of the ε each registered party's verified releases charged
    (:mod:`protocol._spend_record`); a party whose ledger holds less counts the difference as spent before it
    serves (a host restored from a snapshot).  ``""``: no record (no keys, and older records).
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
    marginals_share: float = 0.0
    marginals_bins: int = 0
    registered_parties: str = ""
    spend_record: str = ""

    def __post_init__(self) -> None:
        _check_ids(self.request_id, self.run_id)
        check_fields(self, _TRAIN_RULES, error=TaskError)
        try:
            check_registration_text(self.registered_parties)
            check_spend_record_text(self.spend_record)
        except (TypeError, ValueError) as exc:
            raise TaskError(f"request {exc}") from None
        share, bins = self.marginals_share, self.marginals_bins
        if (share > 0) != (bins > 0) or bins == 1:
            raise TaskError(
                f"request marginals-bins: expected >= 2 exactly when marginals-share > 0 (else 0), got "
                f"{bins!r} with marginals-share {share!r}"
            )

    def to_record(self) -> dict[str, Any]:
        return kebab_values(self)

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> TrainRequest:
        # records before these keys: label leaves, a fixed depth, no marginals part
        defaults = {
            "leaf": "label",
            "depth-rule": "fixed",
            "marginals-share": 0.0,
            "marginals-bins": 0,
            "registered-parties": "",
            "spend-record": "",
        }
        return cls(**_read(cls, {**defaults, **record}))


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
        check_fields(self, {"epsilon": Number(0)}, error=TaskError)

    def to_record(self) -> dict[str, Any]:
        return kebab_values(self)

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> EvaluateRequest:
        return cls(**_read(cls, {"seed": -1, **record}))  # records from before the seed field
