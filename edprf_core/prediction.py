"""Prediction from released forests: leaf terms, pooled leaf distributions, scoring rows with reasons, the
memory budgets of the compiled predictors, each row's support (whether released evidence, or only noise, stands
behind its prediction), and the clipping tally of a file read in chunks (the units warning of ``edprf predict``
and ``edprf evaluate``).
"""

from ._domain_warning import CLIPPING_WARNING_SHARE, ClippingTally, clipping_message
from ._encoding import ClippedColumn
from ._leaf_distribution import PartPooling, leaf_distributions
from ._leaf_terms import LeafTerms, leaf_indices, leaf_terms
from ._leafmask import COMPILE_BLOCK_BYTES, MAX_COMPILE_CELLS, leafmask_budget
from ._predict import dense_budget
from ._row_scoring import RowScores, read_labels, score_rows
from ._support import RowSupport, row_support

__all__ = [
    "CLIPPING_WARNING_SHARE",
    "COMPILE_BLOCK_BYTES",
    "MAX_COMPILE_CELLS",
    "ClippedColumn",
    "ClippingTally",
    "LeafTerms",
    "PartPooling",
    "RowScores",
    "RowSupport",
    "clipping_message",
    "dense_budget",
    "leaf_distributions",
    "leaf_indices",
    "leaf_terms",
    "leafmask_budget",
    "read_labels",
    "row_support",
    "score_rows",
]
