"""The coordinator: Flower ServerApp, validation and merge of releases, model store, evaluation."""

from ._config import DEFAULT_RUN_CONFIG, CoordinatorConfig
from ._outcomes import EvaluationSkip, OutcomeReason, PartyStatus, RunStatus
from ._report import PartyOutcome, RunReport

_FEDERATION_NAMES = ("MODEL_FILE", "REPORT_FILE", "run_federation")
"""Names from the coordinator module, which imports Flower: loaded on first use, so that reading a model's
report text (``edprf inspect``) works in the slim install."""


def __getattr__(name: str):
    if name in _FEDERATION_NAMES:
        from . import _coordinator

        return getattr(_coordinator, name)
    raise AttributeError(f"module 'server' has no attribute {name!r}")


__all__ = [
    "DEFAULT_RUN_CONFIG",
    "MODEL_FILE",
    "REPORT_FILE",
    "CoordinatorConfig",
    "EvaluationSkip",
    "OutcomeReason",
    "PartyOutcome",
    "PartyStatus",
    "RunReport",
    "RunStatus",
    "run_federation",
]
