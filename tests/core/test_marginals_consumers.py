"""The forest's consumers (ONNX export, explanations, rules, importances) support a marginals part.

A two-class fit with ``marginals_share > 0`` mixes its trees with DP one-way marginals
(``p ~ p_marginals ** s * p_trees ** (1 - s)``); every consumer must reproduce or explain that mix, and a
trees-only forest must give what it gave before.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from edprf_core import EDPRFClassifier, example_schema, load_embedded
from edprf_core._marginals import marginal_evidence, marginal_log_ratio_tables, marginals_temper
from edprf_core.datasets import read_csv
from edprf_core.encoding import FeatureGrid, conforming_rows, encode_features
from edprf_core.export import encoding_spec, forest_to_onnx, onnx_inputs
from tests.conftest import SHARED_DATA

N_ROWS = 10_000
TOLERANCE = 1e-6
SHARED = {
    # name: (file, read_csv keywords, marginals_share), the files of tests/protocol/test_onnx_export.py;
    # heart has five classes, so "auto" gives it no marginals part: it asks for one (the mix works for any K)
    "diabetes_prediction": ("diabetes_prediction_dataset.csv", {}, "auto"),
    "bank_marketing": ("bank-full.csv", {"sep": ";"}, "auto"),
    "heart_disease_cleveland": ("processed.cleveland.data", {"header": False}, 0.25),
}


def bank(n_rows: int = 6000):
    X, y, schema = load_embedded("bank_marketing")
    return X.iloc[:n_rows], y.iloc[:n_rows], X.iloc[n_rows : n_rows + 4000], schema


def mixed_forest(leaf: str = "counts", seed: int = 3, **params):
    """A seeded two-class fit with a marginals part on the embedded bank data (trees on an 8-bin grid)."""
    X, y, rows, schema = bank()
    params = {"epsilon": 1.0, "n_trees": 4, "max_depth": 5, "n_bins": 8} | params
    forest = EDPRFClassifier(schema, leaf=leaf, random_state=seed, **params).fit(X, y).forest_
    assert forest.marginals is not None and forest.marginals_share > 0
    return forest, rows


def run_onnx(model, feed: dict[str, np.ndarray]) -> np.ndarray:
    ort = pytest.importorskip("onnxruntime")
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    assert sorted(i.name for i in session.get_inputs()) == sorted(feed)
    return session.run(["probabilities"], feed)[0]


# ------------------------------------------------------------------------------------------------- marginals


def test_log_ratio_tables_are_what_the_evidence_sums():
    forest, rows = mixed_forest()
    codes = encode_features(rows, forest.schema, FeatureGrid.from_schema(forest.schema, forest.marginals_bins))
    log_prior, tables = marginal_log_ratio_tables(forest.marginals)
    expected_prior, evidence = marginal_evidence(forest.marginals, codes)
    assert np.array_equal(log_prior, expected_prior)
    assert [t.shape for t in tables] == [(n, 2) for n in forest.marginals.n_codes]
    assert np.allclose(sum(t[codes[:, j]] for j, t in enumerate(tables)), evidence, rtol=0, atol=1e-12)
    # a prior is a distribution
    assert np.isclose(np.exp(log_prior).sum(), 1.0)


# ------------------------------------------------------------------------------------------------------ ONNX


@pytest.mark.parametrize("leaf", ["counts", "label"])
@pytest.mark.parametrize("pooling", ["log-linear", "mean"])
def test_onnx_reproduces_the_mixed_predict_proba(leaf, pooling):
    forest, rows = mixed_forest(leaf)
    model = forest_to_onnx(forest, pooling=pooling)
    spec = encoding_spec(forest)
    got = run_onnx(model, onnx_inputs(rows, spec))
    expected = forest.predict_proba(rows, pooling=pooling)
    assert got.shape == expected.shape == (len(rows), 2)
    assert np.max(np.abs(got - expected)) <= TOLERANCE
    # the mix is not the trees alone: the marginals part moves the probabilities
    trees_alone = forest._tree_proba(rows, pooling=pooling, label_shift=True, tolerated_parties=None)
    assert np.max(np.abs(expected - trees_alone)) > 0.01


def test_onnx_inputs_follow_two_grids_and_the_spec_says_so():
    # auto bins on 1,500 rows: the marginals' rule (5 bins) and the trees' rule choose different grids
    forest, rows = mixed_forest(n_bins="auto", n_trees="auto", max_depth="auto", n_rows_public=1500)
    assert forest.marginals_bins != forest.grid_bins
    model = forest_to_onnx(forest)
    spec = json.loads({p.key: p.value for p in model.metadata_props}["edprf.encoding"])
    assert spec == json.loads(json.dumps(encoding_spec(forest)))
    assert spec["format"] == "edprf.onnx-encoding.v2"
    assert spec["inputs"] == ["codes", "marginals_codes"]
    assert spec["marginals"] == {
        "input": "marginals_codes",
        "n_bins": forest.marginals_bins,
        "share": forest.marginals_share,
    }
    feed = onnx_inputs(rows, spec)
    schema = forest.schema
    assert np.array_equal(feed["codes"], forest.encode(rows))
    marginals_grid = FeatureGrid.from_schema(schema, forest.marginals_bins)
    assert np.array_equal(feed["marginals_codes"], encode_features(rows, schema, marginals_grid))
    # the language-neutral recipe for the second input, from the JSON alone (the embedded rows are clean)
    by_hand = np.column_stack(
        [
            np.searchsorted(
                f["marginals_edges"], np.clip(rows[f["name"]].to_numpy(float), f["lower"], f["upper"]), side="right"
            )
            if f["kind"] == "continuous"
            else pd.Index([str(c) for c in f["categories"]]).get_indexer(rows[f["name"]].astype(str))
            for f in spec["features"]
        ]
    )
    assert np.array_equal(by_hand, feed["marginals_codes"])
    assert np.max(np.abs(run_onnx(model, feed) - forest.predict_proba(rows))) <= TOLERANCE
    assert {p.key: p.value for p in model.metadata_props}["edprf.marginals_share"] == repr(forest.marginals_share)


def test_an_out_of_range_marginals_code_reads_its_own_features_table():
    forest, rows = mixed_forest()
    feed = onnx_inputs(rows.iloc[:50], encoding_spec(forest))
    top = np.asarray(forest.marginals.n_codes, dtype=np.float64) - 1
    high, low = dict(feed), dict(feed)
    high["marginals_codes"] = feed["marginals_codes"] * 0 + top + 5
    low["marginals_codes"] = feed["marginals_codes"] * 0 - 3
    model = forest_to_onnx(forest)
    at_top, at_zero = dict(feed), dict(feed)
    at_top["marginals_codes"] = feed["marginals_codes"] * 0 + top
    at_zero["marginals_codes"] = feed["marginals_codes"] * 0
    assert np.array_equal(run_onnx(model, high), run_onnx(model, at_top))
    assert np.array_equal(run_onnx(model, low), run_onnx(model, at_zero))


def test_trees_only_export_is_unchanged():
    X, y, rows, schema = bank()
    forest = EDPRFClassifier(schema, n_trees=3, max_depth=4, n_bins=8, marginals_share=0.0, random_state=0)
    forest = forest.fit(X, y).forest_
    assert forest.marginals is None
    spec = encoding_spec(forest)
    assert spec["format"] == "edprf.onnx-encoding.v1"
    assert not {"inputs", "marginals"} & set(spec)
    assert all("marginals_edges" not in f for f in spec["features"])
    model = forest_to_onnx(forest)
    assert [i.name for i in model.graph.input] == ["codes"]
    assert not any(n.name.startswith("marginals") or "marginals" in n.output[0] for n in model.graph.node)
    assert "edprf.marginals_share" not in {p.key for p in model.metadata_props}
    assert onnx_inputs(rows, spec).keys() == {"codes"}
    assert np.max(np.abs(run_onnx(model, onnx_inputs(rows, spec)) - forest.predict_proba(rows))) <= TOLERANCE


def shared_rows(name: str):
    file, kwargs, _ = SHARED[name]
    path = SHARED_DATA / name / file
    if not path.is_file():
        pytest.skip(f"needs {path}")
    schema = example_schema(name)
    X, y = read_csv(path, schema, **kwargs)
    keep, _ = conforming_rows(X, y, schema)
    return X[keep].reset_index(drop=True), y[keep].reset_index(drop=True), schema


@pytest.mark.slow
@pytest.mark.parametrize("name", list(SHARED))
def test_onnx_reproduces_the_mix_on_shared_data(name):
    X, y, schema = shared_rows(name)
    share = SHARED[name][2]
    rows = X.iloc[np.random.default_rng(7).choice(len(X), N_ROWS, replace=len(X) < N_ROWS)]
    train = np.random.default_rng(11).permutation(len(X))[:6000]
    for leaf, poolings in (("counts", ("log-linear", "mean")), ("label", ("log-linear",))):
        clf = EDPRFClassifier(
            schema, epsilon=1.0, n_trees=4, max_depth=5, n_bins=8, leaf=leaf, random_state=11, marginals_share=share
        )
        forest = clf.fit(X.iloc[train], y.iloc[train]).forest_
        assert forest.marginals is not None
        feed = onnx_inputs(rows, encoding_spec(forest))
        for pooling in poolings:
            expected = forest.predict_proba(rows, pooling=pooling)
            got = run_onnx(forest_to_onnx(forest, pooling=pooling), feed)
            assert np.max(np.abs(got - expected)) <= TOLERANCE, (name, leaf, pooling)
            assert np.allclose(got.sum(axis=1), 1.0)


def test_the_graph_uses_the_library_temper():
    forest, _ = mixed_forest()
    model = forest_to_onnx(forest)
    from onnx import numpy_helper

    tables = next(n for n in model.graph.node if n.output[0] == "marginals_tables")
    stacked = numpy_helper.to_array(tables.attribute[0].t)
    _, expected = marginal_log_ratio_tables(forest.marginals)
    assert np.allclose(stacked, marginals_temper(forest.schema.n_features) * np.concatenate(expected), atol=0)
