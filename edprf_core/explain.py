"""Explanations read from a released forest only (no data): per-row contributions, leaf rules, importances."""

from ._explanation import Explanation, MarginalContribution, TreeContribution, explain_row
from ._importances import released_importances
from ._rules import LeafRule, forest_rules_text, leaf_rule, shown_name

__all__ = [
    "Explanation",
    "LeafRule",
    "MarginalContribution",
    "TreeContribution",
    "explain_row",
    "forest_rules_text",
    "leaf_rule",
    "released_importances",
    "shown_name",
]
