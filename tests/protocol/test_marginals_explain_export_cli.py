"""``edprf explain`` and ``edprf export`` handlers and the ``inspect --rules`` importance lines on a model with a
marginals part.

Model files cannot carry a marginals part yet (the wire format is changed elsewhere), so the handlers run
in-process with the model loader replaced by a fitted forest.
"""

from __future__ import annotations

import argparse
import json

import numpy as np
import pytest

from edprf_core import EDPRFClassifier, load_embedded
from edprf_core.explain import explain_row, released_importances
from edprf_fl.cli import _explain, _export
from edprf_fl.cli._model_rules import importance_lines


@pytest.fixture(scope="module")
def mixed():
    X, y, schema = load_embedded("bank_marketing")
    forest = EDPRFClassifier(schema, n_trees=4, max_depth=5, n_bins=8, random_state=3).fit(X[:6000], y[:6000]).forest_
    assert forest.marginals is not None and forest.marginals.residual_pass is not None  # 6000 rows, 16 features
    return forest, X.iloc[6000:6100]


@pytest.fixture
def rows_file(tmp_path, mixed):
    path = tmp_path / "mine.csv"
    mixed[1].to_csv(path, index=False)
    return path


def test_explain_prints_the_marginals_part(mixed, rows_file, monkeypatch, capsys):
    forest, _ = mixed
    monkeypatch.setattr(_explain, "load_forest", lambda path, keys: forest)
    args = argparse.Namespace(
        model=rows_file.with_name("model.edprf"),
        data=rows_file,
        row=3,
        line=None,
        sep=",",
        decimal=".",
        no_header=False,
        pooling="log-linear",
        show_trees=2,
        keys=None,
    )
    assert _explain.run_explain(args) == 0
    out = capsys.readouterr().out.splitlines()
    expected = explain_row(forest, _explain.read_row(rows_file, forest.schema, row=3).frame).lines(2)
    assert out[1].startswith("cells: ") and out[2:] == expected
    assert any(
        line.startswith(f"mix: probabilities = softmax({forest.marginals_share:g} * log p_marginals") for line in out
    )
    assert any(line.startswith("marginals terms, by how much they move") for line in out)


def test_export_writes_both_inputs(mixed, tmp_path, monkeypatch, capsys):
    ort = pytest.importorskip("onnxruntime")
    from edprf_core.export import onnx_inputs

    forest, rows = mixed
    monkeypatch.setattr(_explain, "load_forest", lambda path, keys: forest)
    out = tmp_path / "model.onnx"
    args = argparse.Namespace(
        model=tmp_path / "m.edprf", output=out, format="onnx", pooling="log-linear", keys=None, force=False
    )
    assert _export.run_export(args) == 0
    printed = capsys.readouterr().out
    assert "inputs 'codes' and 'marginals_codes' float64 (n_rows, 15)" in printed
    assert f"mixed with a marginals part of weight {forest.marginals_share:g}" in printed
    spec = json.loads(_export.encoding_path(out).read_text(encoding="utf-8"))
    session = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"])
    got = session.run(["probabilities"], onnx_inputs(rows, spec))[0]
    assert np.max(np.abs(got - forest.predict_proba(rows))) <= 1e-6


def test_importance_lines_say_how_the_parts_mix(mixed):
    forest, _ = mixed
    lines = importance_lines(forest)
    share = forest.marginals_share
    assert lines[0].startswith(f"feature importances ({1 - share:g} * the trees' (decrease in weighted Gini impurity")
    assert f"+ {share:g} * the marginals part's (the spread over classes" in lines[0]
    imp = released_importances(forest)
    top = forest.schema.feature_names[int(np.argmax(imp))]
    assert lines[1] == f"  {top}: {imp.max():.4f}"
