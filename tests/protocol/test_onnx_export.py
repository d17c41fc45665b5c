"""The ONNX export reproduces predict_proba within 1e-6 on 10,000 rows of each shared dataset."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from edprf_core import EDPRFClassifier, Schema, example_schema, merge_forests
from edprf_core.datasets import read_csv
from edprf_core.encoding import FeatureGrid, conforming_rows, encode_features
from edprf_core.export import encoding_spec, forest_to_onnx, onnx_inputs
from tests.conftest import SHARED_DATA

ort = pytest.importorskip("onnxruntime")

N_ROWS = 10_000
TOLERANCE = 1e-6
SHARED = {
    # name: (file, read_csv keywords)
    "diabetes_prediction": ("diabetes_prediction_dataset.csv", {}),
    "bank_marketing": ("bank-full.csv", {"sep": ";"}),
    "heart_disease_cleveland": ("processed.cleveland.data", {"header": False}),
    "wall_robot_navigation": ("sensor_readings_24.data", {"header": False}),
}


def shared_rows(name: str) -> tuple[pd.DataFrame, pd.Series, Schema]:
    """A shared dataset's rows that satisfy its example schema (rows with refused cells dropped, row by row)."""
    file, kwargs = SHARED[name]
    path = SHARED_DATA / name / file
    if not path.is_file():
        pytest.skip(f"needs {path}")
    schema = example_schema(name)
    X, y = read_csv(path, schema, **kwargs)
    keep, _ = conforming_rows(X, y, schema)
    return X[keep].reset_index(drop=True), y[keep].reset_index(drop=True), schema


def run_onnx(model, codes: np.ndarray | dict[str, np.ndarray]) -> np.ndarray:
    """The graph's probabilities on ``codes`` (the trees' codes), or on a whole feed (``onnx_inputs``)."""
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    feed = codes if isinstance(codes, dict) else {"codes": codes.astype(np.float64)}
    return session.run(["probabilities"], feed)[0]


def federated_forest(X: pd.DataFrame, y: pd.Series, schema: Schema, leaf: str, seed: int):
    """Three parties' forests (4 trees each, depth 5) merged as the coordinator merges them (a party releases
    histograms, never a residual pass: residual_pass=False)."""
    parts = np.array_split(np.random.default_rng(seed).permutation(len(X))[:6000], 3)
    forests = [
        EDPRFClassifier(
            schema, epsilon=1.0, n_trees=4, max_depth=5, n_bins=8, leaf=leaf, random_state=seed + i, residual_pass=False
        )
        .fit(X.iloc[rows], y.iloc[rows])
        .forest_
        for i, rows in enumerate(parts)
    ]
    return merge_forests(forests, labels=["hospital-a", "hospital-b", "hospital-c"])


@pytest.mark.slow
@pytest.mark.parametrize("name", list(SHARED))
def test_onnx_reproduces_predict_proba_on_shared_data(name):
    X, y, schema = shared_rows(name)
    rng = np.random.default_rng(7)
    rows = X.iloc[rng.choice(len(X), N_ROWS, replace=len(X) < N_ROWS)]  # heart has 297 rows: drawn with replacement
    for leaf, poolings in (("counts", ("log-linear", "mean")), ("label", ("log-linear",))):
        forest = federated_forest(X, y, schema, leaf, seed=11)
        assert forest.n_trees == 12
        assert (forest.marginals is not None) == (schema.n_classes == 2)  # the default's marginals part
        feed = onnx_inputs(rows, encoding_spec(forest))
        for pooling in poolings:
            expected = forest.predict_proba(rows, pooling=pooling)
            got = run_onnx(forest_to_onnx(forest, pooling=pooling), feed)
            assert got.shape == (N_ROWS, schema.n_classes)
            assert np.max(np.abs(got - expected)) <= TOLERANCE, (name, leaf, pooling)
            assert np.allclose(got.sum(axis=1), 1.0)


def test_multiway_trees_export():
    schema = example_schema("wall_robot_navigation")
    from edprf_core import load_embedded

    X, y, _ = load_embedded("wall_robot_navigation")
    forest = (
        EDPRFClassifier(schema, n_trees=3, max_depth=3, n_bins=5, split_mode="multiway", random_state=0)
        .fit(X.iloc[:3000], y.iloc[:3000])
        .forest_
    )
    rows = X.iloc[3000:5000]
    assert (
        np.max(np.abs(run_onnx(forest_to_onnx(forest), forest.encode(rows)) - forest.predict_proba(rows))) <= TOLERANCE
    )


def test_encoding_travels_with_the_graph_and_its_recipe_gives_the_codes():
    from edprf_core import load_embedded

    X, y, schema = load_embedded("bank_marketing")
    forest = EDPRFClassifier(schema, n_trees=3, max_depth=4, n_bins=8, random_state=0).fit(X, y).forest_
    model = forest_to_onnx(forest)
    spec = json.loads({p.key: p.value for p in model.metadata_props}["edprf.encoding"])
    assert spec == json.loads(json.dumps(encoding_spec(forest)))
    assert spec["classes"] == list(schema.classes) and spec["schema_fingerprint"] == schema.fingerprint
    # the Python recipe: the package's encoder under the exported schema and grid
    exported = Schema.from_toml(spec["schema_toml"])
    assert exported.fingerprint == schema.fingerprint
    rows = X.iloc[:2000]
    codes = encode_features(rows, exported, FeatureGrid.from_schema(exported, spec["n_bins"]))
    assert np.array_equal(codes, forest.encode(rows))
    # the language-neutral recipe, written from the JSON alone (clean rows: no missing or undeclared cells)
    by_hand = np.column_stack(
        [
            np.searchsorted(f["edges"], np.clip(rows[f["name"]].to_numpy(float), f["lower"], f["upper"]), side="right")
            if f["kind"] == "continuous"
            else pd.Index([str(c) for c in f["categories"]]).get_indexer(rows[f["name"]].astype(str))
            for f in spec["features"]
        ]
    )
    assert np.array_equal(by_hand, codes)


def test_onnx_inputs_names_every_problem_and_its_rows_by_their_position():
    """onnx_inputs raised at the first refused column only, naming 'row 203' where the CLI reports the file's line
    205 (walkthrough).  It now names every kind of problem, how many rows have one, and says its row numbers are
    X's 0-based positions; with another index, each row's label too."""
    from edprf_core import DataValidationError, load_embedded

    X, y, schema = load_embedded("wall_robot_navigation")
    forest = EDPRFClassifier(schema, n_trees=1, max_depth=3, n_bins=8, random_state=0).fit(X, y).forest_
    spec = json.loads(json.dumps(encoding_spec(forest)))
    rows = X.iloc[:210].astype(str).reset_index(drop=True)
    rows.loc[203, "US3"], rows.loc[205, "US3"], rows.loc[200, "US3"], rows.loc[7, "US7"] = "abc", "NaN", "", "x"
    with pytest.raises(DataValidationError) as refused:
        onnx_inputs(rows, spec)
    text = str(refused.value)
    assert text.startswith(
        "4 of 210 rows of X cannot be encoded under the schema's rules (rows named by their 0-based position in X, "
        "X.iloc[i], not by a file's line number): "
    )
    assert "column 'US3': not a finite number at row 203: 'abc', row 205: 'NaN'" in text
    assert "column 'US3': missing value" in text and "at row 200: ''" in text
    assert "column 'US7': not a finite number at row 7: 'x'" in text
    rows.index += 1000
    with pytest.raises(DataValidationError, match=r"at index 1203 \(iloc 203\): 'abc'"):
        onnx_inputs(rows, spec)
    assert onnx_inputs(X.iloc[:5], spec)["codes"].shape == (5, schema.n_features)
