"""The released forest: its arrays, its training parameters, the values they take, the merge of forests, and where
the merge's bounded influence cuts a party's say."""

from ._exact_selection import MAX_FIT_ROWS
from ._forest import (
    DEPTH_RULES,
    DRAFTED_REASON,
    FEDERATION_NOTE,
    LARGE_EPSILON,
    LEAF_OUTPUTS,
    MAX_DEPTH_LIMIT,
    POOLING_NOTE,
    RELATIONS,
    DPForest,
    TrainingParameters,
    check_is_forest,
    large_epsilon_note,
    merge_forests,
)
from ._influence_cuts import CUT_REPORT_SHARE, InfluenceCut, influence_cuts
from ._leaf_distribution import (
    BOUNDED_INFLUENCE_PARTS,
    MAX_TOLERATED_PARTIES,
    TOLERATED_PARTIES,
    bounded_influence_parts,
    tolerated_among,
)
from ._tree import MAX_FIT_NODES, MAX_LEAF_COUNT, SPLIT_MODES, ForestArrays, TreeStructureError, max_tree_nodes

__all__ = [
    "BOUNDED_INFLUENCE_PARTS",
    "CUT_REPORT_SHARE",
    "DEPTH_RULES",
    "DRAFTED_REASON",
    "FEDERATION_NOTE",
    "LARGE_EPSILON",
    "LEAF_OUTPUTS",
    "MAX_DEPTH_LIMIT",
    "MAX_FIT_NODES",
    "MAX_FIT_ROWS",
    "MAX_LEAF_COUNT",
    "MAX_TOLERATED_PARTIES",
    "POOLING_NOTE",
    "RELATIONS",
    "SPLIT_MODES",
    "TOLERATED_PARTIES",
    "DPForest",
    "ForestArrays",
    "InfluenceCut",
    "TrainingParameters",
    "TreeStructureError",
    "bounded_influence_parts",
    "check_is_forest",
    "influence_cuts",
    "large_epsilon_note",
    "max_tree_nodes",
    "merge_forests",
    "tolerated_among",
]
