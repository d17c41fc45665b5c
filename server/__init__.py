"""The coordinator: Flower ServerApp, validation and merge of releases, model store, evaluation.

Reading a model's report (the text of contributions and evaluations, the metrics of a forest) works in the
slim install; the federation itself (:func:`run_federation`) imports Flower and loads on first use.
"""

# The packages this one builds on, whole, before any of their submodules: Flower's simulation loads the
# ServerApp and the ClientApps on several threads at once (its check of a ClientApp's module imports it
# outside Flower's import lock).  A thread that meets a package another thread is still initializing waits
# for it only when it imports the package itself; importing a submodule (``protocol.messages``) goes on
# concurrently, and two threads importing one package's submodules in different orders can get a partially
# initialized module ("cannot import name 'PrivateKey' from partially initialized module 'protocol._keys'",
# seen in CI).  Imported whole first, each package is initialized by one thread while the others wait.
import edprf_core  # noqa: F401  (isort: keep first)
import protocol  # noqa: F401

from ._config import DEFAULT_RUN_CONFIG, CoordinatorConfig
from ._contribution_text import contribution_lines, contribution_verdict
from ._metrics import classification_metrics, forest_metrics
from ._outcomes import EvaluationSkip, OutcomeReason, PartyStatus, RunStatus
from ._report import REPORT_FORMAT, PartyOutcome, RunReport
from ._summary import bounded_influence_lines, federated_evaluation_lines, influence_cut_lines, summary_lines

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
    "REPORT_FORMAT",
    "CoordinatorConfig",
    "EvaluationSkip",
    "OutcomeReason",
    "PartyOutcome",
    "PartyStatus",
    "RunReport",
    "RunStatus",
    "bounded_influence_lines",
    "classification_metrics",
    "contribution_lines",
    "contribution_verdict",
    "federated_evaluation_lines",
    "forest_metrics",
    "influence_cut_lines",
    "run_federation",
    "summary_lines",
]
