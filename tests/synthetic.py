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
    return Schema(
        features=tuple(features), label=LabelSpec("label", tuple(f"k{j}" for j in range(n_classes))), name="synthetic"
    )


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


def skewed_wall_federation(alpha: float, seed: int, **fit_params):
    """Five parties with Dirichlet(``alpha``) label skew on the embedded wall robot data, one tree each.

    Returns ``(merged forest, test rows, test class indices)``; every fifth row is a test row.
    """
    from edprf_core import EDPRFClassifier, load_embedded, merge_forests
    from edprf_core.encoding import encode_labels
    from edprf_fl.simulation import Partitioning, partition_rows

    data, labels, schema = load_embedded("wall_robot_navigation")
    test = np.arange(len(data)) % 5 == 0
    Xtr, ytr, Xte, yte = data[~test], labels[~test], data[test], labels[test]
    parts = partition_rows(Xtr, ytr, 5, Partitioning("dirichlet", alpha, ""), np.random.default_rng(seed))
    forests = [
        EDPRFClassifier(schema, epsilon=1.0, n_trees=1, n_bins=20, random_state=10 * seed + i, **fit_params)
        .fit(Xtr.iloc[rows], ytr.iloc[rows])
        .forest_
        for i, rows in enumerate(parts)
    ]
    return merge_forests(forests, labels=[f"p{i}" for i in range(5)]), Xte, encode_labels(yte, schema)
