"""The models a simulated federation is compared with: central DP, each party alone, non-private, majority."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from edprf_core import Schema

    from ._prepare import PreparedWorkspace
    from ._settings import SimulationSettings

__all__ = ["raw_features", "train_baselines"]


def train_baselines(settings: SimulationSettings, workspace: PreparedWorkspace) -> dict[str, dict[str, Any]]:
    """Metrics on the central test rows of the models the federation is compared with.

    ``central_edprf``: the best central DP model a trusted curator could fit on the pooled rows;
    ``party_alone_median`` / ``party_alone_best``: each party alone, with the federation's request;
    ``non_private_rf``: scikit-learn's forest on the raw features; ``majority_class``: the prior.
    Each entry also holds ``n_trees`` (the central model ``max_depth`` too), and the eDPRF ones
    ``marginals_share`` and ``residual_pass``.  Research seeds throughout
    (``settings.seed``): a comparison, never a release.
    """
    import numpy as np
    from sklearn.ensemble import RandomForestClassifier

    from edprf_core import EDPRFClassifier
    from edprf_core.encoding import encode_labels
    from server import classification_metrics, forest_metrics

    schema, X_train, y_train = workspace.schema, workspace.X_train, workspace.y_train
    X_test, y_test, parts = workspace.X_test, workspace.y_test, workspace.parts
    pooled = np.concatenate(parts)
    n_trees = settings.parties * settings.n_trees
    auto, leaf = settings.auto_depth, settings.leaf
    # the best central DP model a trusted curator could fit on the pooled rows: the estimator's defaults
    central = EDPRFClassifier(
        schema,
        epsilon=settings.epsilon,
        n_trees="auto" if auto else n_trees,
        max_depth="auto" if auto else settings.max_depth,
        leaf=leaf,
        n_bins=settings.n_bins,
        split_mode=settings.split_mode,
        random_state=settings.seed,
    )
    central.fit(X_train.iloc[pooled], y_train.iloc[pooled])
    out = {
        "central_edprf": forest_metrics(central.forest_, X_test, y_test)
        | {
            "n_trees": central.n_trees_,
            "max_depth": central.max_depth_,
            "marginals_share": central.marginals_share_,
            "residual_pass": bool(central.residual_pass_),
        }
    }
    # each party alone: what a party gets without the consortium (same request, its own rows only)
    alone = []
    for i, rows in enumerate(parts):
        if len(rows) == 0:
            continue
        own = EDPRFClassifier(
            schema,
            epsilon=settings.epsilon,
            n_trees=settings.n_trees,
            max_depth="auto" if auto else settings.max_depth,
            leaf=leaf,
            n_bins=settings.n_bins,
            split_mode=settings.split_mode,
            random_state=settings.seed + 7919 * (i + 1),
        )
        own.fit(X_train.iloc[rows], y_train.iloc[rows])
        alone.append(
            forest_metrics(own.forest_, X_test, y_test)
            | {"marginals_share": own.marginals_share_, "residual_pass": bool(own.residual_pass_)}
        )
    if alone:
        by_accuracy = sorted(alone, key=lambda m: m["accuracy"])
        out["party_alone_median"] = by_accuracy[(len(by_accuracy) - 1) // 2] | {"n_trees": settings.n_trees}
        out["party_alone_best"] = by_accuracy[-1] | {"n_trees": settings.n_trees}
    classes = np.asarray(schema.classes)
    y_true = classes[encode_labels(y_test, schema)]
    # all cores: the trees are the same whatever n_jobs (their seeds are drawn first), only built at once
    rf = RandomForestClassifier(n_estimators=100, random_state=settings.seed, n_jobs=-1)
    rf.fit(raw_features(X_train, schema), encode_labels(y_train, schema))
    proba = np.zeros((len(X_test), len(classes)))
    proba[:, rf.classes_] = rf.predict_proba(raw_features(X_test, schema))
    out["non_private_rf"] = classification_metrics(y_true, proba, classes) | {"n_trees": 100}
    majority = np.bincount(encode_labels(y_train, schema), minlength=len(classes)).astype(float)
    prior = np.tile(majority / majority.sum(), (len(X_test), 1))
    out["majority_class"] = classification_metrics(y_true, prior, classes) | {"n_trees": 0}
    return out


def raw_features(X: pd.DataFrame | np.ndarray, schema: Schema) -> np.ndarray:
    """Continuous columns as numbers (missing: NaN), categorical columns as the declared category's index.

    What the non-private reference forest sees: the features before any DP binning.
    """
    import numpy as np
    import pandas as pd

    from edprf_core import CategoricalFeature
    from edprf_core.encoding import FeatureGrid, encode_features

    grid = FeatureGrid.from_schema(schema, 2)
    codes = encode_features(X, schema, grid)
    out = np.empty(codes.shape, dtype=np.float64)
    for j, f in enumerate(schema.features):
        if isinstance(f, CategoricalFeature):
            out[:, j] = codes[:, j]
        else:
            out[:, j] = pd.to_numeric(
                pd.Series(np.asarray(X[f.name] if isinstance(X, pd.DataFrame) else X[:, j])), errors="coerce"
            ).to_numpy(dtype=np.float64)
    return out
