"""Training parameters and party ids on the wire (enum tables, validation)."""

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
    "schedule": {"harmonic": pb.SCHEDULE_HARMONIC, "uniform": pb.SCHEDULE_UNIFORM, "linear": pb.SCHEDULE_LINEAR},
    "composition": {"parallel": pb.COMPOSITION_PARALLEL, "sequential": pb.COMPOSITION_SEQUENTIAL},
    "split_mode": {"binary": pb.SPLIT_MODE_BINARY, "multiway": pb.SPLIT_MODE_MULTIWAY},
    "variant": {"pf": pb.VARIANT_PERMUTE_AND_FLIP, "tradition": pb.VARIANT_TRADITION},
    "sampler": {"numpy": pb.SAMPLER_NUMPY, "exact": pb.SAMPLER_EXACT},
    "leaf": {"label": pb.LEAF_OUTPUT_LABEL, "counts": pb.LEAF_OUTPUT_COUNTS},
    "depth_rule": {
        "fixed": pb.DEPTH_RULE_FIXED,
        "declared-size": pb.DEPTH_RULE_DECLARED_SIZE,
        "dp-count": pb.DEPTH_RULE_DP_COUNT,
    },
}
_FROM_WIRE = {name: {v: k for k, v in table.items()} for name, table in ENUM_TABLES.items()}
# releases written before a field existed
_FROM_WIRE["sampler"][pb.SAMPLER_UNSPECIFIED] = "numpy"
_FROM_WIRE["leaf"][pb.LEAF_OUTPUT_UNSPECIFIED] = "label"
_FROM_WIRE["depth_rule"][pb.DEPTH_RULE_UNSPECIFIED] = "fixed"
_PLAIN_FIELDS = ("epsilon", "max_depth", "n_trees", "n_bins", "exploit_monotonicity", "dp", "seeded", "count_epsilon")
VERSION_3_FIELDS = ("leaf", "count_epsilon", "depth_rule")
"""Parameters a release before format version 3 must leave unset."""


def check_party_id(party_id: object) -> str:
    """Return ``party_id`` if it matches :data:`PARTY_ID_PATTERN`, else raise ValueError."""
    if not isinstance(party_id, str) or PARTY_ID_PATTERN.fullmatch(party_id) is None:
        raise ValueError(f"party id: expected 1-64 characters [A-Za-z0-9._-] starting alphanumeric, got {party_id!r}")
    return party_id


def parameters_to_message(params: TrainingParameters) -> pb.TrainingParameters:
    """The wire form of ``params``."""
    return pb.TrainingParameters(
        epsilon=float(params.epsilon),
        max_depth=int(params.max_depth),
        n_trees=int(params.n_trees),
        n_bins=int(params.n_bins),
        exploit_monotonicity=bool(params.exploit_monotonicity),
        dp=bool(params.dp),
        seeded=bool(params.seeded),
        count_epsilon=float(params.count_epsilon),
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
    values: dict[str, object] = {name: getattr(message, name) for name in _PLAIN_FIELDS}
    for name, table in _FROM_WIRE.items():
        wire = getattr(message, name)
        if wire not in table:
            raise InvalidRelease(
                Reason.BAD_PARAMETERS, f"parameters.{name}: expected one of {sorted(table)}, got enum value {wire}"
            )
        values[name] = table[wire]
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
