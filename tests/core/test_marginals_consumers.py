"""The forest's consumers (ONNX export, explanations, rules, importances) support a marginals part.

A two-class fit with ``marginals_share > 0`` mixes its trees with DP one-way marginals
(``p ~ p_marginals ** s * p_trees ** (1 - s)``); every consumer must reproduce or explain that mix, and a
trees-only forest must give what it gave before.
"""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from edprf_core import DPForest, EDPRFClassifier, explain_row, load_embedded
from edprf_core._importances import marginals_importances
from edprf_core._marginals import NoisyMarginals, marginal_evidence, marginal_log_ratio_tables, marginals_temper
from edprf_core.encoding import FeatureGrid, encode_features
from edprf_core.explain import forest_rules_text, leaf_rule, released_importances
from edprf_core.export import encoding_spec, forest_to_onnx, onnx_inputs
from edprf_core.prediction import leaf_terms
from tests.core.test_rules_and_explanations import tiny_forest

N_ROWS = 10_000
TOLERANCE = 1e-6
SHARED = {
    # name: marginals_share, on the files of tests/protocol/test_onnx_export.py; heart has five classes, so
    # "auto" gives it no marginals part: it asks for one (the mix works for any number of classes)
    "diabetes_prediction": "auto",
    "bank_marketing": "auto",
    "heart_disease_cleveland": 0.25,
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


def without_marginals(forest: DPForest) -> DPForest:
    """The same trees without the marginals part (a trees-only forest)."""
    parts = tuple((label, replace(p, marginals_share=0.0, marginals_bins=0), n) for label, p, n in forest.parts)
    return replace(forest, parts=parts, marginals=None, _routing={})


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
    trees_alone = forest.trees_proba(rows, pooling=pooling)
    assert np.max(np.abs(expected - trees_alone)) > 0.01


def test_onnx_inputs_follow_two_grids_and_the_spec_says_so():
    # auto bins on 1,500 rows: the marginals' rule (5 bins) and the trees' rule choose different grids
    forest, rows = mixed_forest(n_bins="auto", n_trees="auto", max_depth="auto", n_rows_public=1500)
    assert forest.marginals_bins != forest.grid_bins
    model = forest_to_onnx(forest)
    spec = json.loads({p.key: p.value for p in model.metadata_props}["edprf.encoding"])
    assert spec == json.loads(json.dumps(encoding_spec(forest)))
    assert spec["format"] == "edprf.onnx-encoding.v4"
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
    assert spec["format"] == "edprf.onnx-encoding.v3"
    assert not {"inputs", "marginals"} & set(spec)
    assert all("marginals_edges" not in f for f in spec["features"])
    model = forest_to_onnx(forest)
    assert [i.name for i in model.graph.input] == ["codes"]
    assert not any(n.name.startswith("marginals") or "marginals" in n.output[0] for n in model.graph.node)
    assert "edprf.marginals_share" not in {p.key for p in model.metadata_props}
    assert onnx_inputs(rows, spec).keys() == {"codes"}
    assert np.max(np.abs(run_onnx(model, onnx_inputs(rows, spec)) - forest.predict_proba(rows))) <= TOLERANCE


@pytest.mark.slow
@pytest.mark.parametrize("name", list(SHARED))
def test_onnx_reproduces_the_mix_on_shared_data(name):
    from tests.protocol.test_onnx_export import shared_rows

    X, y, schema = shared_rows(name)
    share = SHARED[name]
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


# ------------------------------------------------------------------------------------------ hand-built forest

TINY_MARGINALS = (
    np.array([[50, 10], [30, 30], [5, 40]], dtype=np.int64),  # age < 30, 30 <= age < 60, age >= 60
    np.array([[20, 20], [40, 10], [25, 50]], dtype=np.int64),  # red, green, blue
)


def tiny_mixed_forest(leaf: str = "counts", share: float = 0.5, marginals=TINY_MARGINALS, epsilon: float = 1.0):
    """:func:`tests.core.test_rules_and_explanations.tiny_forest` (age < 30 -> [5, 1]; else color = green ->
    [0, 7]; else [3, 3]) mixed with hand-set noisy marginals of weight ``share`` (on the declared age edges)."""
    trees = tiny_forest(leaf)
    ((label, params, n),) = trees.parts
    params = replace(params, marginals_share=share, marginals_bins=4)
    released = NoisyMarginals(marginals, epsilon, "add-remove", 2)
    return replace(trees, parts=((label, params, n),), marginals=released, _routing={})


TINY_ROWS = pd.DataFrame({"age": [12.0, 45.0, 75.0, 45.0], "color": ["red", "green", "blue", "blue"]})


# ------------------------------------------------------------------------------------------------ explanations


def softmax(v: np.ndarray) -> np.ndarray:
    e = np.exp(v - v.max())
    return e / e.sum()


@pytest.mark.parametrize("leaf", ["counts", "label"])
@pytest.mark.parametrize("pooling", ["log-linear", "mean"])
def test_explanation_adds_up_to_the_mixed_probabilities(leaf, pooling):
    forest, rows = mixed_forest(leaf)
    rows = rows.iloc[:30]
    expected = forest.predict_proba(rows, pooling=pooling)
    s = forest.marginals_share
    grid = FeatureGrid.from_schema(forest.schema, forest.marginals_bins)
    codes = encode_features(rows, forest.schema, grid)
    log_prior, tables = marginal_log_ratio_tables(forest.marginals)
    temper = marginals_temper(forest.schema.n_features)
    trees_only = [explain_row(without_marginals(forest), rows.iloc[[i]], pooling=pooling) for i in range(3)]
    for i in range(len(rows)):
        e = explain_row(forest, rows.iloc[[i]], pooling=pooling)
        assert e.marginals_share == s
        assert np.allclose(e.probabilities, expected[i], rtol=0, atol=1e-12)
        # the link of the total is the probability: softmax for both mixed links
        assert e.link == ("softmax" if leaf == "counts" and pooling == "log-linear" else "mix")
        assert np.allclose(softmax(e.total()), expected[i], rtol=0, atol=1e-12)
        # one marginals term per feature: s * temper * the log-ratio of the row's bin, labelled by feature
        assert [m.feature for m in e.marginals] == list(forest.schema.feature_names)
        for j, m in enumerate(e.marginals):
            assert np.allclose(m.contribution, s * temper * tables[j][codes[i, j]], rtol=0, atol=0)
        assert np.all(e.floor == 0)  # no probability of these rows falls below 1e-12
        if e.link == "softmax":
            assert np.allclose(e.bias - s * log_prior, (1 - s) * np.log(leaf_terms(forest).prior), atol=1e-15)
        else:  # the trees' contributions are the trees' own probabilities
            trees = forest.trees_proba(rows.iloc[[i]], pooling=pooling)
            assert np.allclose(e.tree_total(), trees[0], rtol=0, atol=1e-12)
            assert np.allclose(e.bias, s * log_prior, atol=0)
    # the trees' contributions are the trees-only explanation's, weighted by 1 - s (log-linear) or as they are
    for i, before in enumerate(trees_only):
        e = explain_row(forest, rows.iloc[[i]], pooling=pooling)
        factor = (1 - s) if e.link == "softmax" else 1.0
        for t, (a, b) in enumerate(zip(e.trees, before.trees)):
            assert a.rule == b.rule and a.tree == b.tree == t
            assert np.allclose(a.contribution, factor * b.contribution, rtol=0, atol=1e-15)


def test_precomputed_leaf_terms_give_the_same_explanation():
    forest, rows = mixed_forest()
    terms = leaf_terms(forest)
    for i in range(5):
        a, b = explain_row(forest, rows.iloc[[i]]), explain_row(forest, rows.iloc[[i]], terms=terms)
        assert np.array_equal(a.total(), b.total()) and np.array_equal(a.probabilities, b.probabilities)


def test_the_floor_term_keeps_the_sum_exact_when_it_binds():
    # huge noisy counts at a large epsilon: almost no shrinkage, so the marginals give "no" far below 1e-12
    extreme = (
        np.array([[1_000_000, 0], [0, 1_000_000], [0, 1_000_000]], dtype=np.int64),
        np.array([[1_000_000, 0], [0, 1_000_000], [0, 1_000_000]], dtype=np.int64),
    )
    forest = tiny_mixed_forest("label", share=0.5, marginals=extreme, epsilon=100.0)
    row = pd.DataFrame({"age": [75.0], "color": ["green"]})  # votes: all "yes", so p_trees("no") = 0 too
    assert forest.marginals_proba(row)[0, 0] < 1e-12
    e = explain_row(forest, row)
    assert e.link == "mix" and np.any(e.floor != 0)
    assert np.allclose(softmax(e.total()), forest.predict_proba(row)[0], rtol=0, atol=1e-15)
    assert any(line.startswith("probability floor (1e-12) of the mix: ") for line in e.lines())


def test_explanation_text_labels_the_marginals_part():
    forest = tiny_mixed_forest()
    e = explain_row(forest, TINY_ROWS.iloc[[1]])
    text = e.lines()
    assert text[1].startswith("mix: probabilities = softmax(0.5 * log p_marginals + 0.5 * log p_trees)")
    assert any(line.startswith("marginals part (one noisy class histogram per feature") for line in text)
    assert "  age, bin 30 <= age < 60: [" in "\n".join(text)
    assert "  color, bin color = green: [" in "\n".join(text)
    assert [m.bin for m in e.marginals] == ["30 <= age < 60", "color = green"]


def test_trees_only_explanations_are_unchanged():
    forest = tiny_mixed_forest()
    plain = without_marginals(forest)
    e = explain_row(plain, TINY_ROWS.iloc[[0]])
    assert e.marginals == () and e.marginals_share == 0 and e.floor is None
    assert np.allclose(softmax(e.total()), plain.predict_proba(TINY_ROWS.iloc[[0]])[0], atol=1e-12)
    assert not any("marginals" in line or line.startswith("mix:") for line in e.lines())
    assert any(line.startswith("sum of contributions: ") for line in e.lines())


# ------------------------------------------------------------------------------------------------------ rules


def test_rules_text_has_the_marginals_section():
    forest = tiny_mixed_forest()
    lines = forest_rules_text(forest)
    log_prior, tables = marginal_log_ratio_tables(forest.marginals)
    assert lines[0].startswith("marginals part (weight s = 0.5 in the mix: probabilities = softmax(0.5 * ")
    prior = np.exp(log_prior)
    assert lines[1] == f"  class prior (from the noisy class totals): no={prior[0]:.4f}, yes={prior[1]:.4f}"
    r = tables[0][1]
    assert "  feature age (3 bins):" in lines
    assert f"    30 <= age < 60: noisy counts [no=30, yes=30]; log-ratio [no={r[0]:+.4f}, yes={r[1]:+.4f}]" in lines
    assert "  feature color (3 values):" in lines
    assert any(line.startswith("    color = blue: noisy counts [no=25, yes=50]; log-ratio [") for line in lines)
    # then the trees, as without marginals, their header naming the trees' weight; the last lines are the trees'
    start = lines.index(
        "trees' part (weight 1 - s = 0.5 in the mix): rules (conditions on the public grid in the schema's units; "
        "values outside the declared bounds are clipped to them; released noisy counts or labels, no epsilon spent):"
    )
    assert lines[start + 1 :] == [
        "  tree 0 (part local, 3 leaves):",
        "    IF age < 30 THEN noisy counts [no=5, yes=1]",
        "    IF age >= 30 AND color = green THEN noisy counts [no=0, yes=7]",
        "    IF age >= 30 AND color != green THEN noisy counts [no=3, yes=3]",
    ]
    assert leaf_rule(forest, 4).conditions == ("age >= 30", "color != green")  # leaves read as before


def test_rules_text_bounds_the_marginals_section():
    forest, _ = mixed_forest()
    lines = forest_rules_text(forest, max_trees=1, max_leaves=3, max_features=2)
    assert sum(line.startswith("  feature ") for line in lines) == 2
    assert f"  ... {forest.schema.n_features - 2} more features not shown (--show-features)" in lines
    assert any(line.endswith("more bins of this feature not shown (--show-leaves)") for line in lines)
    assert lines[-1] == f"  ... {forest.n_trees - 1} more trees not shown (--show-trees)"
    with pytest.raises(ValueError, match="max_features"):
        forest_rules_text(forest, max_features=0)


# ------------------------------------------------------------------------------------------------ importances


def test_importances_mix_the_trees_and_the_marginals():
    forest = tiny_mixed_forest(share=0.5)
    imp = released_importances(forest)
    assert imp.sum() == pytest.approx(1.0)
    _, tables = marginal_log_ratio_tables(forest.marginals)
    spread = []
    for table, counts in zip(tables, TINY_MARGINALS):
        rows = counts.sum(axis=1)
        spread.append(rows @ (table.max(axis=1) - table.min(axis=1)) / rows.sum())
    marginals = np.array(spread) / sum(spread)
    assert np.allclose(marginals_importances(forest.marginals), marginals)
    plain = without_marginals(forest)
    assert np.allclose(imp, 0.5 * released_importances(plain) + 0.5 * marginals)


def test_a_feature_no_tree_splits_on_gets_weight_from_the_marginals():
    X, y, _, schema = bank()
    forest = EDPRFClassifier(schema, n_trees=1, max_depth=1, n_bins=8, random_state=0).fit(X, y).forest_
    assert forest.marginals is not None
    split_on = set(forest.trees.feature[forest.trees.feature >= 0].tolist())
    imp = released_importances(forest)
    assert imp.sum() == pytest.approx(1.0) and np.all(imp >= 0)
    # a stump splits on one feature; every feature gets weight through the marginals part
    assert len(split_on) == 1 and np.all(imp > 0)
    assert np.allclose(released_importances(without_marginals(forest))[sorted(split_on)], 1.0)


def test_the_encoding_format_names_what_changed_and_onnx_inputs_checks_it():
    """The support outputs and the numeric-token rule (0.2.0) came under the old format names, so a consumer could
    not tell the encodings apart: the formats are now v3 (trees only) and v4 (with marginals).  An earlier export's
    encoding (v1, v2) is still read, under the current rules; any other format is refused, naming what was
    expected and what was given."""
    from edprf_core.export import ENCODING_FORMATS

    X, y, rows, schema = bank()
    forest = EDPRFClassifier(schema, n_trees=2, max_depth=3, n_bins=8, marginals_share=0.0, random_state=0)
    spec = encoding_spec(forest.fit(X, y).forest_)
    assert set(ENCODING_FORMATS) == {f"edprf.onnx-encoding.v{k}" for k in (1, 2, 3, 4)}
    current = onnx_inputs(rows.iloc[:20], spec)["codes"]
    old = {**spec, "format": "edprf.onnx-encoding.v1"}
    del old["outputs"], old["support"]  # what a v1 encoding lacked
    assert np.array_equal(onnx_inputs(rows.iloc[:20], old)["codes"], current)
    for wrong in ("edprf.onnx-encoding.v9", None):
        bad = {k: v for k, v in spec.items() if k != "format"} | ({"format": wrong} if wrong else {})
        with pytest.raises(ValueError, match=rf"expected format one of edprf\.onnx-encoding\.v1, .*got {wrong!r}"):
            onnx_inputs(rows.iloc[:20], bad)
