"""eDPRF: differentially private random forests with permute-and-flip.

The algorithm only; no networking.  Usable alone, scikit-learn style::

    from edprf_core import EDPRFClassifier, example_schema
    clf = EDPRFClassifier(example_schema("wall_robot_navigation"), epsilon=1.0).fit(X, y)
"""

from ._accountant import BudgetAccountant, BudgetExceededError, budget, default_accountant, set_default_accountant
from ._budget import (
    HarmonicSchedule,
    LayerSchedule,
    LinearSchedule,
    ParallelComposition,
    SequentialComposition,
    UniformSchedule,
)
from ._clinical_metrics import ClinicalReport, Estimate, clinical_report
from ._count_noise import discrete_laplace_counts
from ._data_check import DataCheck, check_data
from ._datasets import available_schemas, embedded_datasets, example_schema, load_embedded, read_csv
from ._depth_rule import branching_factor, public_bins, public_depth, public_shape
from ._draft import draft_schema
from ._encoding import FeatureGrid, conforming_rows, encode_features, encode_labels
from ._exact_selection import MAX_FIT_ROWS
from ._exceptions import (
    BudgetError,
    DataValidationError,
    DomainClippingWarning,
    EDPRFError,
    EDPRFWarning,
    PrivacyLeakWarning,
    SchemaError,
)
from ._explanation import Explanation, TreeContribution, explain_row
from ._importances import released_importances
from ._leaf_distribution import PartPooling, leaf_distributions
from ._leaf_terms import LeafTerms, leaf_indices, leaf_terms
from ._mechanisms import (
    ExponentialMechanism,
    LaplaceMechanism,
    PermuteAndFlip,
    permute_and_flip_literal,
    permute_and_flip_probabilities,
)
from ._onnx_export import encoding_spec, forest_to_onnx
from ._randomness import make_generator, spawn_generators
from ._release import (
    COMPOSITIONS,
    DEPTH_RULES,
    FEDERATION_NOTE,
    LEAF_OUTPUTS,
    MAX_DEPTH_LIMIT,
    RELATIONS,
    SAMPLERS,
    SCHEDULES,
    VARIANTS,
    DPForest,
    TrainingParameters,
    merge_forests,
)
from ._rules import LeafRule, forest_rules_text, leaf_rule
from ._schema import CategoricalFeature, ContinuousFeature, LabelSpec, Schema, load_schema
from ._text_table import MAX_LINE_CHARS, TextTable, read_table
from ._tree import MAX_LEAF_COUNT, SPLIT_MODES, ForestArrays, TreeStructureError

__all__ = [
    "COMPOSITIONS",
    "DEPTH_RULES",
    "FEDERATION_NOTE",
    "LEAF_OUTPUTS",
    "MAX_DEPTH_LIMIT",
    "MAX_FIT_ROWS",
    "MAX_LEAF_COUNT",
    "MAX_LINE_CHARS",
    "RELATIONS",
    "SAMPLERS",
    "SCHEDULES",
    "SPLIT_MODES",
    "VARIANTS",
    "BudgetAccountant",
    "BudgetError",
    "BudgetExceededError",
    "CategoricalFeature",
    "ClinicalReport",
    "ContinuousFeature",
    "DPForest",
    "DataCheck",
    "DataValidationError",
    "DomainClippingWarning",
    "EDPRFClassifier",
    "EDPRFError",
    "EDPRFWarning",
    "Estimate",
    "Explanation",
    "ExponentialMechanism",
    "FeatureGrid",
    "ForestArrays",
    "HarmonicSchedule",
    "LabelSpec",
    "LaplaceMechanism",
    "LayerSchedule",
    "LeafRule",
    "LeafTerms",
    "LinearSchedule",
    "ParallelComposition",
    "PartPooling",
    "PermuteAndFlip",
    "PrivacyLeakWarning",
    "ReleasedForestClassifier",
    "Schema",
    "SchemaError",
    "SequentialComposition",
    "TextTable",
    "TrainingParameters",
    "TreeContribution",
    "TreeStructureError",
    "UniformSchedule",
    "available_schemas",
    "branching_factor",
    "budget",
    "check_data",
    "clinical_report",
    "conforming_rows",
    "default_accountant",
    "discrete_laplace_counts",
    "draft_schema",
    "embedded_datasets",
    "encode_features",
    "encode_labels",
    "encoding_spec",
    "example_schema",
    "explain_row",
    "forest_rules_text",
    "forest_to_onnx",
    "leaf_distributions",
    "leaf_indices",
    "leaf_rule",
    "leaf_terms",
    "load_embedded",
    "load_schema",
    "make_generator",
    "merge_forests",
    "permute_and_flip_literal",
    "permute_and_flip_probabilities",
    "public_bins",
    "public_depth",
    "public_shape",
    "read_csv",
    "read_table",
    "released_importances",
    "set_default_accountant",
    "spawn_generators",
]


def __getattr__(name: str) -> object:
    """Load the estimators (and scikit-learn with them) on first use: reading data needs neither."""
    if name == "EDPRFClassifier":
        from ._classifier import EDPRFClassifier

        globals()[name] = EDPRFClassifier
        return EDPRFClassifier
    if name == "ReleasedForestClassifier":
        from ._released_classifier import ReleasedForestClassifier

        globals()[name] = ReleasedForestClassifier
        return ReleasedForestClassifier
    raise AttributeError(f"module 'edprf_core' has no attribute {name!r}")
