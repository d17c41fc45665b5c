"""Synthetic public schemas and data drawn inside their domains (shared by tests)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from edprf_core import CategoricalFeature, ContinuousFeature, LabelSpec, Schema


def make_schema(n_continuous: int = 3, n_categorical: int = 2, n_categories: int = 3, n_classes: int = 2) -> Schema:
    features = [ContinuousFeature(f"x{i}", 0.0, 10.0, source="synthetic") for i in range(n_continuous)]
    features += [
        CategoricalFeature(f"c{i}", tuple(f"v{j}" for j in range(n_categories)), source="synthetic")
        for i in range(n_categorical)
    ]
    return Schema(features=tuple(features), label=LabelSpec("label", tuple(f"k{j}" for j in range(n_classes))),
                  name="synthetic")


def make_data(schema: Schema, n: int, seed: int, signal: bool = True) -> tuple[pd.DataFrame, pd.Series]:
    """Rows inside the schema's domain; with ``signal`` the label follows x0 (and c0)."""
    rng = np.random.default_rng(seed)
    cols = {}
    for f in schema.features:
        if isinstance(f, ContinuousFeature):
            cols[f.name] = rng.uniform(f.lower, f.upper, n)
        else:
            cols[f.name] = rng.choice(np.asarray(f.categories, dtype=object), n)
    X = pd.DataFrame(cols)
    k = schema.n_classes
    if signal:
        first = schema.features[0]
        idx = np.minimum((X[first.name].to_numpy() - first.lower) / (first.upper - first.lower) * k, k - 1).astype(int)
    else:
        idx = rng.integers(0, k, n)
    y = pd.Series(np.asarray(schema.classes, dtype=object)[idx], name=schema.label.column)
    return X, y
