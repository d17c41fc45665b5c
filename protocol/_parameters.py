"""Training parameters and party ids on the wire (enum tables, validation).

Only the production configuration travels: the harmonic layer schedule,
parallel composition across trees, permute-and-flip, and the monotone noise
scale exactly under add-remove.  The encoder refuses a forest trained with
another (a research option of :mod:`edprf_core.research`); the wire has no
field for one, so the decoder restores these values.
"""

from __future__ import annotations

import re

from edprf_core import TrainingParameters

from . import release_pb2 as pb
from ._errors import InvalidRelease, Reason

__all__ = [
    "ENUM_TABLES",
    "MAX_COUNT_EPSILON_SHARE",
    "PARTY_ID_PATTERN",
    "check_party_id",
    "parameters_from_message",
    "parameters_to_message",
]

MAX_COUNT_EPSILON_SHARE = 0.5
"""Largest share of a release's ε its DP row count may claim: the estimator's own maximum
``count_epsilon_share`` (:class:`edprf_core.EDPRFClassifier`).  A release claiming more leaves
its trees a budget no honest party would choose (``count_epsilon`` near ``epsilon`` leaves
nearly nothing, and the noise scales of its leaves grow without bound), so the decoder
refuses it."""

PARTY_ID_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
"""Party ids double as key file names (``<party_id>.pub.pem``): no path characters."""

# TrainingParameters field -> {core string value: wire enum value}
ENUM_TABLES: dict[str, dict[str, int]] = {
    "relation": {"add-remove": pb.RELATION_ADD_REMOVE, "replace-one": pb.RELATION_REPLACE_ONE},
    "split_mode": {"binary": pb.SPLIT_MODE_BINARY, "multiway": pb.SPLIT_MODE_MULTIWAY},
    "sampler": {"numpy": pb.SAMPLER_NUMPY, "exact": pb.SAMPLER_EXACT},
    "leaf": {"label": pb.LEAF_OUTPUT_LABEL, "counts": pb.LEAF_OUTPUT_COUNTS},
    "depth_rule": {
        "fixed": pb.DEPTH_RULE_FIXED,
        "declared-size": pb.DEPTH_RULE_DECLARED_SIZE,
        "dp-count": pb.DEPTH_RULE_DP_COUNT,
    },
}
_FROM_WIRE = {name: {v: k for k, v in table.items()} for name, table in ENUM_TABLES.items()}
_PLAIN_FIELDS = (
    "epsilon",
    "max_depth",
    "n_trees",
    "n_bins",
    "dp",
    "seeded",
    "count_epsilon",
    "marginals_share",
    "marginals_bins",
)

PRODUCTION_OPTIONS = {"schedule": "harmonic", "composition": "parallel", "variant": "pf"}
"""The values of the research options every release has (the wire carries no field for them)."""


def check_party_id(party_id: object) -> str:
    """Return ``party_id`` if it matches :data:`PARTY_ID_PATTERN`, else raise ValueError."""
    if not isinstance(party_id, str) or PARTY_ID_PATTERN.fullmatch(party_id) is None:
        raise ValueError(f"party id: expected 1-64 characters [A-Za-z0-9._-] starting alphanumeric, got {party_id!r}")
    return party_id


def _research_options(params: TrainingParameters) -> list[str]:
    """The research options ``params`` uses (empty for a production configuration)."""
    used = [
        f"{name}={getattr(params, name)!r}"
        for name, value in PRODUCTION_OPTIONS.items()
        if getattr(params, name) != value
    ]
    if params.exploit_monotonicity != (params.relation == "add-remove"):
        used.append(f"exploit_monotonicity={params.exploit_monotonicity!r} under {params.relation}")
    return used


def parameters_to_message(params: TrainingParameters) -> pb.TrainingParameters:
    """The wire form of ``params``.

    Raises
    ------
    ValueError
        For parameters that use a research option (:mod:`edprf_core.research`):
        the wire format carries only the production configuration; or that
        record inputs which were not DP (``inputs_not_dp``, which the wire
        cannot carry).
    """
    if params.inputs_not_dp:  # not on the wire: a decoded release would read as DP
        raise ValueError(
            "parameters: a release must not carry a fit whose inputs were not DP, got "
            f"{'; '.join(params.inputs_not_dp)}"
        )
    research = _research_options(params)
    if research:
        raise ValueError(
            f"parameters: a release carries only the production configuration, got the research options "
            f"{', '.join(research)} (edprf_core.research models cannot be sent to a federation)"
        )
    return pb.TrainingParameters(
        epsilon=float(params.epsilon),
        max_depth=int(params.max_depth),
        n_trees=int(params.n_trees),
        n_bins=int(params.n_bins),
        dp=bool(params.dp),
        seeded=bool(params.seeded),
        count_epsilon=float(params.count_epsilon),
        marginals_share=float(params.marginals_share),
        marginals_bins=int(params.marginals_bins),
        **{name: table[getattr(params, name)] for name, table in ENUM_TABLES.items()},
    )


def parameters_from_message(message: pb.TrainingParameters) -> TrainingParameters:
    """Rebuild :class:`edprf_core.TrainingParameters` from untrusted wire values.

    Raises
    ------
    InvalidRelease
        ``bad_parameters`` for an unknown enum value or values
        :class:`~edprf_core.TrainingParameters` refuses.
    """
    values: dict[str, object] = {name: getattr(message, name) for name in _PLAIN_FIELDS} | PRODUCTION_OPTIONS
    for name, table in _FROM_WIRE.items():
        wire = getattr(message, name)
        if wire not in table:
            raise InvalidRelease(
                Reason.BAD_PARAMETERS, f"parameters.{name}: expected one of {sorted(table)}, got enum value {wire}"
            )
        values[name] = table[wire]
    values["exploit_monotonicity"] = values["relation"] == "add-remove"
    try:
        params = TrainingParameters(**values)
    except ValueError as exc:
        raise InvalidRelease(Reason.BAD_PARAMETERS, f"parameters: {exc}") from None
    if not params.count_epsilon <= MAX_COUNT_EPSILON_SHARE * params.epsilon:
        raise InvalidRelease(
            Reason.BAD_PARAMETERS,
            f"parameters: count_epsilon expected <= {MAX_COUNT_EPSILON_SHARE:g} * epsilon = "
            f"{MAX_COUNT_EPSILON_SHARE * params.epsilon:g}, got {params.count_epsilon:g}",
        )
    return params
