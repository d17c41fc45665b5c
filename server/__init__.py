"""The coordinator: Flower ServerApp, validation and merge of releases, model store, evaluation."""

from ._config import DEFAULT_RUN_CONFIG, CoordinatorConfig
from ._coordinator import MODEL_FILE, REPORT_FILE, run_federation
from ._report import PartyOutcome, RunReport

__all__ = [
           "DEFAULT_RUN_CONFIG",
           "MODEL_FILE",
           "REPORT_FILE",
           "CoordinatorConfig",
           "PartyOutcome",
           "RunReport",
           "run_federation",
]
