"""The ONNX graph's support outputs are ``row_support``'s flags, row for row: a hospital serving the graph sees
which rows were scored from noise, as ``edprf predict``'s ``support`` column shows them.

Exact equality, the share included: the graph's flag targets sum 0/1 per tree, so the counts it divides are
integers below 2**24, exact in the ensemble's float32 output and cast exactly to double; the share is then the
same IEEE double division as ``row_support``'s (``low / max(count, 1)``, NaN when ``count`` is 0).  Each model
is seeded (``random_state``): its noise, hence which leaves and bins are within noise, is fixed.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from edprf_core import EDPRFClassifier, load_embedded
from edprf_core.export import encoding_spec, forest_to_onnx, onnx_inputs
from edprf_core.prediction import RowSupport, row_support
from tests.protocol.test_onnx_export import federated_forest, shared_rows

ort = pytest.importorskip("onnxruntime")

OUTPUTS = ["probabilities", "support_low", "support_low_features", "support_low_leaf_share"]


def graph_outputs(forest, rows: pd.DataFrame) -> tuple[dict[str, np.ndarray], dict]:
    """The exported graph's outputs on ``rows`` (fed from the exported encoding alone) and that encoding."""
    model = forest_to_onnx(forest)
    spec = json.loads({p.key: p.value for p in model.metadata_props}["edprf.encoding"])
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    assert [o.name for o in session.get_outputs()] == OUTPUTS == spec["outputs"]
    return dict(zip(OUTPUTS, session.run(None, onnx_inputs(rows, spec)))), spec


def assert_support_matches(forest, rows: pd.DataFrame) -> tuple[RowSupport, dict]:
    """The graph's support outputs equal ``row_support(forest, rows)`` exactly, and the labels the documented recipe
    builds from them (``RowSupport(...).labels()``, docs/using-a-model.md) are ``edprf predict``'s."""
    got, spec = graph_outputs(forest, rows)
    expected = row_support(forest, rows)
    n, d = len(rows), forest.schema.n_features
    assert got["support_low"].dtype == np.bool_ and got["support_low"].shape == (n,)
    assert got["support_low_features"].dtype == np.bool_ and got["support_low_features"].shape == (n, d)
    assert got["support_low_leaf_share"].dtype == np.float64 and got["support_low_leaf_share"].shape == (n,)
    assert np.array_equal(got["support_low"], expected.low)
    assert np.array_equal(got["support_low_features"], expected.low_features)
    assert np.array_equal(got["support_low_leaf_share"], expected.low_leaf_share, equal_nan=True)
    assert spec["support"]["assessed"] is expected.assessed
    names = tuple(f["name"] for f in spec["features"])
    served = RowSupport(
        got["support_low"],
        got["support_low_leaf_share"],
        got["support_low_features"],
        names,
        spec["support"]["assessed"],
    )
    assert np.array_equal(served.labels(), expected.labels())
    # the probabilities stay those of predict_proba (float32 leaf sums: the 1e-6 of test_onnx_export)
    assert np.max(np.abs(got["probabilities"] - forest.predict_proba(rows))) <= 1e-6
    return expected, got


def diabetes_probe(X: pd.DataFrame, rng: np.random.Generator) -> tuple[pd.DataFrame, np.ndarray]:
    """400 ordinary rows of ``X``, then 200 with HbA1c 12-15 % and 200 with blood glucose 380-400 mg/dL (schema
    bounds 3-15 and 50-400; the training rows reach HbA1c 9 and glucose 300): the mask marks those beyond."""
    ordinary = X.iloc[rng.choice(len(X), 400, replace=False)]
    hba1c = X.iloc[rng.choice(len(X), 200, replace=False)].assign(HbA1c_level=rng.uniform(12.0, 15.0, 200))
    glucose = X.iloc[rng.choice(len(X), 200, replace=False)].assign(blood_glucose_level=rng.uniform(380, 400, 200))
    rows = pd.concat([ordinary, hba1c, glucose], ignore_index=True)
    return rows, np.repeat([False, True], [400, 400])


def test_default_two_class_model_with_marginals_flags_out_of_support_rows_as_predict_does():
    """(a) The default model on diabetes (marginals part): HbA1c 12-15 and glucose 380-400 lie beyond every
    training row, so their marginals bin holds only noise; with this seed all 400 are low in the graph as in
    row_support, named after that feature, and most ordinary rows are ok."""
    X, y, schema = shared_rows("diabetes_prediction")
    assert pd.to_numeric(X["HbA1c_level"]).max() <= 9.0 and pd.to_numeric(X["blood_glucose_level"]).max() <= 300
    forest = EDPRFClassifier(schema, random_state=3).fit(X, y).forest_
    assert forest.marginals is not None
    rows, beyond = diabetes_probe(X, np.random.default_rng(5))
    expected, got = assert_support_matches(forest, rows)
    assert got["support_low"][beyond].all()
    assert all(label.startswith("low: ") and "HbA1c_level" in label for label in expected.labels()[400:600])
    j = {name: i for i, name in enumerate(schema.feature_names)}
    assert got["support_low_features"][400:600, j["HbA1c_level"]].all()
    assert got["support_low_features"][600:, j["blood_glucose_level"]].all()
    assert np.mean(got["support_low"][~beyond]) < 0.1
    # the default's few count trees put rows in leaves of both kinds: the leaf flags are exercised too
    assert {0.0, 1.0} <= set(got["support_low_leaf_share"].tolist())


@pytest.mark.parametrize(("split_mode", "max_depth", "n_bins"), [("binary", 5, 10), ("multiway", 2, 5)])
def test_trees_only_multiclass_model_flags_rows_by_their_leaves(split_mode, max_depth, n_bins):
    """(b) Wall robot (4 classes, no marginals part): no feature is flagged; a row is low when more than half of
    its trees' leaves are within noise.  Rows with every sensor at 4.5-5 m (away from the
    readings of the training rows' bulk) next to ordinary rows: with these seeds all far rows and few ordinary
    ones are low, and the graph agrees with row_support."""
    X, y, schema = load_embedded("wall_robot_navigation")
    forest = (
        EDPRFClassifier(
            schema,
            n_trees=10 if split_mode == "binary" else 20,
            max_depth=max_depth,
            n_bins=n_bins,
            split_mode=split_mode,
            random_state=1,
        )
        .fit(X.iloc[:4000], y.iloc[:4000])
        .forest_
    )
    assert forest.marginals is None
    rng = np.random.default_rng(2)
    far = pd.DataFrame(rng.uniform(4.5, 5.0, (200, schema.n_features)), columns=list(schema.feature_names))
    rows = pd.concat([X.iloc[4000:4800], far], ignore_index=True)
    _, got = assert_support_matches(forest, rows)
    assert not got["support_low_features"].any()
    assert got["support_low"][800:].all() and got["support_low"][:800].mean() < 0.15
    assert np.unique(got["support_low_leaf_share"][:800]).size >= 5  # leaves of both kinds, mixed per row
    assert np.array_equal(got["support_low"], got["support_low_leaf_share"] > 0.5)


@pytest.mark.parametrize("leaf", ["counts", "label"])
def test_merged_multi_party_forest(leaf):
    """(c) Three parties merged (the bounded mean active), bank marketing with its marginals part: the same flags.
    Balance 90,000-100,000 (schema bound 100,000) is beyond the training rows: low in both."""
    X, y, schema = load_embedded("bank_marketing")
    forest = federated_forest(X, y, schema, leaf, seed=11)
    assert forest.marginals is not None and len(forest.parts) == 3
    rng = np.random.default_rng(4)
    ordinary = X.iloc[rng.choice(len(X), 500, replace=False)]
    rich = X.iloc[rng.choice(len(X), 100, replace=False)].assign(balance=rng.uniform(90_000, 100_000, 100))
    rows = pd.concat([ordinary, rich], ignore_index=True)
    _, got = assert_support_matches(forest, rows)
    assert got["support_low"][500:].all()
    assert got["support_low_features"][500:, list(schema.feature_names).index("balance")].all()
    if leaf == "label":  # no tree released counts: the share is NaN, only the marginals flag rows
        assert np.isnan(got["support_low_leaf_share"]).all()


def test_a_model_without_released_counts_flags_nothing_and_says_so():
    """Label leaves and no marginals part: row_support assesses nothing (labels 'n/a').  The graph still has the
    outputs (one serving code for every model): all false, share NaN, and the encoding says assessed false, so the
    recipe labels every row 'n/a', never 'ok'."""
    X, y, schema = load_embedded("wall_robot_navigation")
    forest = EDPRFClassifier(schema, n_trees=5, max_depth=4, leaf="label", random_state=0).fit(X, y).forest_
    expected, got = assert_support_matches(forest, X.iloc[:300])
    assert not expected.assessed and set(expected.labels()) == {"n/a"}
    assert not got["support_low"].any() and not got["support_low_features"].any()
    assert np.isnan(got["support_low_leaf_share"]).all()
    spec = encoding_spec(forest)
    assert spec["support"]["assessed"] is False and "n/a" in spec["support"]["meaning"]
    assert spec["output"] == "probabilities" and spec["input"] == "codes"  # older consumers unchanged
