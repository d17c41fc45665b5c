"""The released forest: its arrays, its training parameters, the values they take, and the merge of forests."""

from ._exact_selection import MAX_FIT_ROWS
from ._forest import (
    DEPTH_RULES,
    DRAFTED_REASON,
    FEDERATION_NOTE,
    LARGE_EPSILON,
    LEAF_OUTPUTS,
    MAX_DEPTH_LIMIT,
    RELATIONS,
    DPForest,
    TrainingParameters,
    check_is_forest,
    large_epsilon_note,
    merge_forests,
)
from ._tree import MAX_FIT_NODES, MAX_LEAF_COUNT, SPLIT_MODES, ForestArrays, TreeStructureError, max_tree_nodes

__all__ = [
    "DEPTH_RULES",
    "DRAFTED_REASON",
    "FEDERATION_NOTE",
    "LARGE_EPSILON",
    "LEAF_OUTPUTS",
    "MAX_DEPTH_LIMIT",
    "MAX_FIT_NODES",
    "MAX_FIT_ROWS",
    "MAX_LEAF_COUNT",
    "RELATIONS",
    "SPLIT_MODES",
    "DPForest",
    "ForestArrays",
    "TrainingParameters",
    "TreeStructureError",
    "check_is_forest",
    "large_epsilon_note",
    "max_tree_nodes",
    "merge_forests",
]
