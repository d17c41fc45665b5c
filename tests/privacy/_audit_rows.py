"""Public schemas and row tables of the audits' neighbouring pairs (binary features, two classes)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from edprf_core import CategoricalFeature, LabelSpec, Schema

__all__ = ["LEAF_SCHEMA", "SPLIT_SCHEMA", "rows"]


def _binary(name: str) -> CategoricalFeature:
    return CategoricalFeature(name, (0, 1), source="audit")


SPLIT_SCHEMA = Schema(features=(_binary("f1"), _binary("f2")), label=LabelSpec("y", (0, 1)), name="audit-split")
"""Two binary features: one split candidate each (a two-category feature has one one-vs-rest split)."""
LEAF_SCHEMA = Schema(features=(_binary("f1"),), label=LabelSpec("y", (0, 1)), name="audit-leaf")
"""One binary feature: a single candidate, so the root split is always on f1 and the leaves are fixed."""


def rows(schema: Schema, *groups: tuple[int, tuple[int, ...]]) -> tuple[pd.DataFrame, pd.Series]:
    """``(count, (feature values..., label))`` groups as a DataFrame and a label Series."""
    table = np.array([values for count, values in groups for _ in range(count)], dtype=np.int64)
    X = pd.DataFrame(table[:, :-1], columns=list(schema.feature_names))
    return X, pd.Series(table[:, -1], name=schema.label.column)
