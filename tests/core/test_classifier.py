"""Estimator conventions, prediction correctness, merging, shipped schemas."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.model_selection import cross_val_score

from edprf_core import EDPRFClassifier, PrivacyLeakWarning, SchemaError, example_schema, load_embedded, merge_forests
from edprf_core.datasets import available_schemas, embedded_datasets, read_csv
from edprf_core.research import PaperEDPRFClassifier
from tests.conftest import SHARED_DATA
from tests.synthetic import make_data, make_schema


def _reference_predict_one(forest, codes_row, tree):
    """Slow per-row traversal written from the documented node encoding."""
    t = forest.trees.tree(tree)
    node = 0
    while t["feature"][node] >= 0:
        f = t["feature"][node]
        code = codes_row[f]
        if forest.split_mode == "multiway":
            offset = code
        elif forest.grid.is_categorical[f]:
            offset = int(code != t["split"][node])
        else:
            offset = int(code >= t["split"][node])
        node = t["first_child"][node] + offset
    return t["leaf_class"][node]


@pytest.mark.parametrize("split_mode", ["binary", "multiway"])
def test_vectorized_prediction_matches_reference_traversal(split_mode):
    schema = make_schema(n_classes=3)
    X, y = make_data(schema, 1500, seed=3)
    clf = EDPRFClassifier(
        schema, epsilon=2.0, n_trees=7, max_depth=4, split_mode=split_mode, n_bins=4, random_state=0
    ).fit(X, y)
    forest = clf.forest_
    codes = forest.encode(X.iloc[:200])
    votes = forest.votes(X.iloc[:200])
    for i in range(200):
        expected = np.bincount([_reference_predict_one(forest, codes[i], t) for t in range(7)], minlength=3)
        assert votes[i].tolist() == expected.tolist()
    proba = clf.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert set(clf.predict(X)) <= set(schema.classes)


def test_learns_the_signal_at_large_epsilon():
    schema = make_schema()
    X, y = make_data(schema, 4000, seed=0)
    Xt, yt = make_data(schema, 2000, seed=1)
    clf = EDPRFClassifier(schema, epsilon=50.0, n_trees=5, max_depth=3, n_bins=8, random_state=0).fit(X, y)
    assert clf.score(Xt, yt) > 0.95
    noisy = EDPRFClassifier(schema, epsilon=1e-4, n_trees=5, max_depth=3, n_bins=8, random_state=0).fit(X, y)
    assert noisy.score(Xt, yt) < 0.8


def test_sklearn_clone_and_cross_val_score(schema, data):
    X, y = data
    clf = EDPRFClassifier(schema, epsilon=5.0, n_trees=3, max_depth=3, random_state=0)
    cloned = clone(clf)
    assert cloned.get_params() == clf.get_params()
    scores = cross_val_score(clf, X, y, cv=3)
    assert scores.shape == (3,) and np.all(scores > 0.6)


def test_random_state_reproducible_and_default_is_random(schema, data):
    X, y = data
    a = EDPRFClassifier(schema, n_trees=3, random_state=42).fit(X, y).forest_.trees
    b = EDPRFClassifier(schema, n_trees=3, random_state=42).fit(X, y).forest_.trees
    c = EDPRFClassifier(schema, n_trees=3).fit(X, y)
    d = EDPRFClassifier(schema, n_trees=3).fit(X, y)
    assert a.equals(b)
    assert not c.forest_.trees.equals(d.forest_.trees)
    assert c.privacy_.seeded is False and "fixed seed" not in c.forest_.guarantee()
    assert EDPRFClassifier(schema, random_state=1).fit(X, y).privacy_.seeded is True


def test_stop_when_pure_warns_and_marks_model_not_dp(schema, data):
    X, y = data
    with pytest.warns(PrivacyLeakWarning, match="stop_when_pure"):
        clf = PaperEDPRFClassifier(schema, stop_when_pure=True, split_mode="multiway", random_state=0).fit(X, y)
    assert clf.dp_ is False and clf.forest_.dp is False
    assert clf.forest_.guarantee().startswith("NOT differentially private")


def test_privacy_metadata(schema, data):
    clf = EDPRFClassifier(schema, epsilon=0.5, n_trees=4, max_depth=3, random_state=0).fit(*data)
    p = clf.privacy_
    assert (p.epsilon, p.relation, p.schedule, p.split_mode, p.n_trees, p.max_depth, p.dp) == (
        0.5,
        "add-remove",
        "harmonic",
        "binary",
        4,
        3,
        True,
    )
    assert "epsilon = 0.5" in clf.forest_.guarantee()


def test_merge_concatenates_and_states_the_federation_caveat(schema):
    parts = []
    for seed in range(3):
        X, y = make_data(schema, 500, seed=seed)
        parts.append(
            EDPRFClassifier(schema, epsilon=1.0 + seed, n_trees=2 + seed, random_state=seed, marginals_share=0.0).fit(
                X, y
            )
        )
    merged = merge_forests([p.forest_ for p in parts], labels=["a", "b", "c"])
    assert merged.n_trees == 2 + 3 + 4
    assert merged.epsilon == 3.0
    assert "each person's records sit at one party" in merged.guarantee()
    X, _ = make_data(schema, 100, seed=9)
    expected = sum(p.forest_.votes(X) for p in parts)
    assert np.array_equal(merged.votes(X), expected)


def test_merge_multiclass_keeps_every_tree():
    schema = make_schema(n_classes=4)
    forests = [
        EDPRFClassifier(schema, n_trees=3, random_state=s).fit(*make_data(schema, 400, s)).forest_ for s in range(2)
    ]
    merged = merge_forests(forests)
    assert merged.n_trees == 6
    assert merged.votes(make_data(schema, 50, 7)[0]).sum(axis=1).tolist() == [6] * 50


def test_merge_refuses_mismatched_schema(schema, data):
    other = make_schema(n_continuous=2)
    a = EDPRFClassifier(schema, random_state=0).fit(*data).forest_
    b = EDPRFClassifier(other, random_state=0).fit(*make_data(other, 300, 1)).forest_
    with pytest.raises(SchemaError, match="schema fingerprint expected"):
        merge_forests([a, b])
    c = EDPRFClassifier(schema, split_mode="multiway", random_state=0).fit(*data).forest_
    with pytest.raises(SchemaError, match="split mode/grid expected"):
        merge_forests([a, c])


def test_example_schemas_load_and_embedded_data_conform():
    assert set(available_schemas()) >= {
        "wall_robot_navigation",
        "bank_marketing",
        "diabetes_prediction",
        "heart_disease_cleveland",
    }
    for name in available_schemas():
        schema = example_schema(name)
        assert schema.provenance and all(f.source for f in schema.features), name
    for name in embedded_datasets():
        X, y, schema = load_embedded(name)
        clf = EDPRFClassifier(schema, n_trees=2, max_depth=2, random_state=0).fit(X, y)
        assert clf.predict(X.iloc[:5]).shape == (5,)


@pytest.mark.skipif(not SHARED_DATA.is_dir(), reason="../shared/data is not present")
def test_shared_datasets_conform_to_their_schemas():
    diabetes = example_schema("diabetes_prediction")
    X, y = read_csv(SHARED_DATA / "diabetes_prediction" / "diabetes_prediction_dataset.csv", diabetes)
    EDPRFClassifier(diabetes, n_trees=2, max_depth=2, random_state=0).fit(X, y)
    heart = example_schema("heart_disease_cleveland")
    names = [f.name for f in heart.features] + [heart.label.column]
    frame = pd.read_csv(
        SHARED_DATA / "heart_disease_cleveland" / "processed.cleveland.data", header=None, names=names, na_values=["?"]
    ).dropna()
    EDPRFClassifier(heart, n_trees=2, max_depth=2, random_state=0).fit(frame[names[:-1]], frame[names[-1]])


def test_core_does_not_import_flower():
    code = "import sys, edprf_core; from edprf_core import EDPRFClassifier; print('flwr' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize("n_classes", [2, 3, 5])
@pytest.mark.parametrize("depth", [1, 4, 6, 7, 8, 9])
def test_leaf_mask_predictor_agrees_with_routing_table(n_classes, depth):
    """The fast path (one to four 64-bit words of leaves) and the level-wise walk agree;
    trees with more than 256 leaves fall back to the walk."""
    from edprf_core._leafmask import LeafMaskPredictor

    schema = make_schema(n_classes=n_classes, n_categorical=3, n_categories=4)
    X, y = make_data(schema, 2000, seed=depth)
    forest = EDPRFClassifier(schema, n_trees=6, max_depth=depth, n_bins=8, random_state=depth).fit(X, y).forest_
    codes = forest.encode(X)
    compiled = LeafMaskPredictor.compile(forest.trees, forest.grid)
    assert (compiled is None) == (depth > 8)
    walk = forest._table().votes(codes, n_classes)
    assert np.array_equal(forest.votes(X), walk)
    if compiled is not None:
        assert np.array_equal(compiled.votes(codes, forest.grid.n_codes, n_classes), walk)
