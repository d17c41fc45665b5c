"""eDPRF: differentially private random forests with permute-and-flip.

The algorithm only; no networking.  Usable alone, scikit-learn style::

    from edprf_core import EDPRFClassifier, example_schema
    clf = EDPRFClassifier(example_schema("wall_robot_navigation"), epsilon=1.0).fit(X, y)

:class:`DPMarginalsClassifier` is the other estimator: DP one-way marginals (noisy per-feature bin x class
counts), one data holder's model with no wire format yet.

The names here are what a user of the estimator needs: the estimators, the public schema, the released
forest, the privacy budget, explanations and the errors.  The rest lives in public submodules:

- :mod:`edprf_core.schema`: schemas, drafting and checking data against one;
- :mod:`edprf_core.encoding`: rows to codes by the schema alone;
- :mod:`edprf_core.tables`: reading untrusted CSV/Parquet tables, whole or in chunks;
- :mod:`edprf_core.datasets`: example schemas and the shipped datasets;
- :mod:`edprf_core.mechanisms`: the DP mechanisms and the randomness;
- :mod:`edprf_core.accounting`: the budget accountant, layer schedules, tree composition;
- :mod:`edprf_core.forest`: the released forest, its parameters and their values, merging;
- :mod:`edprf_core.shape`: depth, bins and branching from public sizes;
- :mod:`edprf_core.prediction`: leaf terms, pooled leaf distributions, scoring rows;
- :mod:`edprf_core.explain`: explanations, leaf rules and importances of a released forest;
- :mod:`edprf_core.metrics`: clinical metrics with confidence intervals;
- :mod:`edprf_core.export`: ONNX export;
- :mod:`edprf_core.count_text`: counts in words ("1 tree", "3 trees") for the packages' messages;
- :mod:`edprf_core.code_version`: the version of the code that runs, from its source.
"""

from ._accountant import BudgetAccountant, BudgetExceededError, budget
from ._data_check import check_data
from ._datasets import example_schema, load_embedded
from ._draft import draft_schema
from ._exceptions import (
    BudgetError,
    DataValidationError,
    DomainClippingWarning,
    EDPRFError,
    EDPRFWarning,
    PrivacyLeakWarning,
    SchemaError,
    SeededNoiseWarning,
)
from ._explanation import explain_row
from ._forest import DPForest, TrainingParameters, merge_forests
from ._schema import CategoricalFeature, ContinuousFeature, LabelSpec, Schema, load_schema

__all__ = [
    "BudgetAccountant",
    "BudgetError",
    "BudgetExceededError",
    "CategoricalFeature",
    "ContinuousFeature",
    "DPForest",
    "DPMarginalsClassifier",
    "DataValidationError",
    "DomainClippingWarning",
    "EDPRFClassifier",
    "EDPRFError",
    "EDPRFWarning",
    "LabelSpec",
    "PrivacyLeakWarning",
    "ReleasedForestClassifier",
    "Schema",
    "SchemaError",
    "SeededNoiseWarning",
    "TrainingParameters",
    "budget",
    "check_data",
    "check_pipeline",
    "draft_schema",
    "example_schema",
    "explain_row",
    "load_embedded",
    "load_schema",
    "merge_forests",
]


def __getattr__(name: str) -> object:
    """Load the estimators and check_pipeline (and scikit-learn with them) on first use: reading data needs
    none of them."""
    if name == "EDPRFClassifier":
        from ._classifier import EDPRFClassifier

        globals()[name] = EDPRFClassifier
        return EDPRFClassifier
    if name == "DPMarginalsClassifier":
        from ._marginals_classifier import DPMarginalsClassifier

        globals()[name] = DPMarginalsClassifier
        return DPMarginalsClassifier
    if name == "check_pipeline":
        from ._fit_context import check_pipeline

        globals()[name] = check_pipeline
        return check_pipeline
    if name == "ReleasedForestClassifier":
        from ._released_classifier import ReleasedForestClassifier

        globals()[name] = ReleasedForestClassifier
        return ReleasedForestClassifier
    raise AttributeError(f"module 'edprf_core' has no attribute {name!r}")
