"""``edprf inspect --rules``, ``edprf explain`` and ``edprf export`` as subprocesses, on a global model built here."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from edprf_core import Schema, load_embedded
from edprf_core.encoding import FeatureGrid, encode_features
from edprf_core.explain import forest_rules_text
from protocol import build_global_model, decode_release, encode_release, load_global_model, save_atomic

WALL = "wall_robot_navigation"
EDPRF = Path(sys.executable).parent / "edprf"


def edprf(*args) -> subprocess.CompletedProcess:
    return subprocess.run([str(EDPRF), *map(str, args)], capture_output=True, text=True, timeout=300, check=False)


@pytest.fixture(scope="module")
def model_file(tmp_path_factory, forests, party_keys, policy, wall_schema) -> Path:
    releases = [
        decode_release(encode_release(forests[WALL, "binary"], p, party_keys[p]), wall_schema, policy)
        for p in ("hospital-a", "hospital-b")
    ]
    path = tmp_path_factory.mktemp("model") / "global-model.edprf"
    save_atomic(path, build_global_model(wall_schema, releases, {"run": "test"}))
    return path


@pytest.fixture(scope="module")
def rows_file(tmp_path_factory) -> Path:
    X, y, _ = load_embedded(WALL)
    path = tmp_path_factory.mktemp("data") / "mine.csv"
    X.iloc[2000:2200].assign(Class=y.iloc[2000:2200].to_numpy()).to_csv(path, index=False)
    return path


def test_inspect_rules(model_file):
    done = edprf("inspect", model_file, "--rules", "--show-trees", "2", "--show-leaves", "4")
    assert done.returncode == 0, done.stdout + done.stderr
    forest = load_global_model(model_file).forest
    expected = forest_rules_text(forest, max_trees=2, max_leaves=4)
    out = done.stdout.splitlines()
    start = out.index(expected[0])
    assert out[start : start + len(expected)] == expected
    assert "  ... 8 more trees not shown (--show-trees)" in out
    assert "  tree 0 (part hospital-a, " in done.stdout and "noisy counts [" in done.stdout
    assert any(line.startswith("feature importances (") for line in out)
    plain = edprf("inspect", model_file)
    assert plain.returncode == 0 and "rules (" not in plain.stdout


def test_explain_a_row(model_file, rows_file):
    done = edprf("explain", model_file, rows_file, "--row", "3", "--show-trees", "4")
    assert done.returncode == 0, done.stdout + done.stderr
    forest = load_global_model(model_file).forest
    X, _, _ = load_embedded(WALL)
    proba = forest.predict_proba(X.iloc[[2003]])[0]
    shown = re.search(r"predicted class: (\S+) \(probabilities (.*)\)", done.stdout)
    assert shown and shown.group(1) == str(forest.classes[np.argmax(proba)])
    values = [float(part.split("=")[1]) for part in shown.group(2).split(", ")]
    assert np.allclose(values, proba, atol=5e-5)
    assert "(4 of 10 shown)" in done.stdout and "... 6 more trees not shown" in done.stdout
    missing = edprf("explain", model_file, rows_file, "--row", "500")
    assert missing.returncode == 1 and "no row 500" in missing.stderr


def _probabilities(done: subprocess.CompletedProcess) -> list[float]:
    shown = re.search(r"predicted class: \S+ \(probabilities (.*)\)", done.stdout)
    assert shown, done.stdout + done.stderr
    return [float(part.split("=")[1]) for part in shown.group(1).split(", ")]


def test_explain_reads_rows_as_predict_does(model_file, rows_file, tmp_path):
    """A blank line is not a row (it made --row 2 and --row 3 explain the same record), --line names predict's
    line, and a refused or malformed row is named by its line with predict's verdict (it said "at row 0")."""
    lines = rows_file.read_text().splitlines()
    odd = tmp_path / "odd.csv"
    # line 1 header, 2-3 rows, 4 blank, 5 a row, 6 a malformed row, 7 a row with an undeclared class column value
    broken = lines[4].split(",")
    broken[0] = "not-a-number"
    odd.write_text("\n".join([lines[0], lines[1], lines[2], "", lines[3], "1,2,3", ",".join(broken), lines[5]]) + "\n")
    predicted = tmp_path / "p.csv"
    done = edprf("predict", model_file, odd, "-o", predicted)
    assert done.returncode == 0, done.stderr
    header, *rows = predicted.read_text().splitlines()
    probability_columns = [k for k, name in enumerate(header.split(",")) if name.startswith("p_")]
    assert [r.split(",")[0] for r in rows] == ["2", "3", "5", "6", "7", "8"]
    third = edprf("explain", model_file, odd, "--row", "2")
    by_line = edprf("explain", model_file, odd, "--line", "5")
    assert third.returncode == 0 and by_line.returncode == 0, third.stderr + by_line.stderr
    assert "row 2, line 5 of" in third.stdout and "; line 5 of" in by_line.stdout
    expected = [float(rows[2].split(",")[k]) for k in probability_columns]
    assert np.allclose(_probabilities(third), expected, atol=5e-5)
    assert _probabilities(by_line) == _probabilities(third)
    assert _probabilities(edprf("explain", model_file, odd, "--row", "1")) != _probabilities(third)
    malformed = edprf("explain", model_file, odd, "--row", "3")
    assert malformed.returncode == 1 and "line 6 of" in malformed.stderr and "is malformed" in malformed.stderr
    refused = edprf("explain", model_file, odd, "--line", "7")
    assert refused.returncode == 1 and "line 7 of" in refused.stderr and "'refused'" in refused.stderr
    assert "row 0" not in refused.stderr
    blank = edprf("explain", model_file, odd, "--line", "4")
    assert blank.returncode == 1 and "no row on line 4" in blank.stderr
    both = edprf("explain", model_file, odd, "--row", "1", "--line", "2")
    assert both.returncode == 2 and "not allowed with argument" in both.stderr


def test_export_onnx(model_file, rows_file, tmp_path):
    ort = pytest.importorskip("onnxruntime")
    out = tmp_path / "model.onnx"
    done = edprf("export", model_file, "--format", "onnx", "-o", out)
    assert done.returncode == 0, done.stdout + done.stderr
    spec_path = tmp_path / "model.encoding.json"
    assert out.is_file() and spec_path.is_file() and "guarantee:" in done.stdout
    spec = json.loads(spec_path.read_text())
    schema = Schema.from_toml(spec["schema_toml"])
    X, _, _ = load_embedded(WALL)
    rows = X.iloc[2000:4000]
    codes = encode_features(rows, schema, FeatureGrid.from_schema(schema, spec["n_bins"])).astype(np.float64)
    session = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"])
    got = session.run([spec["output"]], {spec["input"]: codes})[0]
    assert np.max(np.abs(got - load_global_model(model_file).forest.predict_proba(rows))) <= 1e-6


def test_explain_and_export_do_not_import_flower(model_file, tmp_path):
    code = (
        "import sys; from edprf_fl.cli._main import main; "
        f"main(['export', {str(model_file)!r}, '-o', {str(tmp_path / 'm.onnx')!r}]); "
        f"main(['inspect', {str(model_file)!r}, '--rules']); "
        "print('flwr' in sys.modules, 'ray' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "False False"


def test_inspect_rules_of_a_single_release(tmp_path, capsys, signed_wall_release, wall_schema, policy):
    from edprf_fl.cli._main import main

    path = save_atomic(tmp_path / "a.release", signed_wall_release)
    assert main(["inspect", str(path), "--rules", "--show-trees", "1", "--show-leaves", "2"]) == 0
    out = capsys.readouterr().out.splitlines()
    forest = decode_release(signed_wall_release, wall_schema, policy).forest  # parts labelled by party id
    expected = forest_rules_text(forest, max_trees=1, max_leaves=2)
    start = out.index(expected[0])
    assert out[start : start + len(expected)] == expected
    assert "  ... 4 more trees not shown (--show-trees)" in out


def test_predict_and_evaluate_take_the_pooling_export_takes(tmp_path, model_file, rows_file):
    """`edprf export --pooling mean` wrote a graph whose probabilities differed (up to 0.024) from `edprf predict`'s,
    which had no --pooling (walkthrough).  predict and evaluate now take export's choices and default: for the
    same rule, the same probabilities."""
    import pandas as pd

    ort = pytest.importorskip("onnxruntime")
    out = tmp_path / "mean.onnx"
    done = edprf("export", model_file, "-o", out, "--pooling", "mean")
    assert done.returncode == 0, done.stderr
    assert "mean pooling" in done.stdout
    spec = json.loads(out.with_suffix(".encoding.json").read_text())
    from edprf_core.export import onnx_inputs

    rows = pd.read_csv(rows_file, dtype=str, keep_default_na=False)
    graph = ort.InferenceSession(str(out)).run(["probabilities"], onnx_inputs(rows, spec))[0]
    columns = [f"p_{c}" for c in spec["classes"]]
    predicted = {}
    for pooling in ("mean", "log-linear"):
        target = tmp_path / f"{pooling}.csv"
        done = edprf("predict", model_file, rows_file, "-o", target, "--pooling", pooling)
        assert done.returncode == 0, done.stderr
        predicted[pooling] = pd.read_csv(target)[columns].to_numpy()
    assert (
        "; pooling mean;"
        in edprf("predict", model_file, rows_file, "-o", tmp_path / "again.csv", "--pooling", "mean").stderr
    )
    assert np.allclose(predicted["mean"], graph, atol=2e-6, rtol=0)
    assert not np.allclose(predicted["log-linear"], graph, atol=1e-3, rtol=0)  # the rules differ: so do the graphs
    forest = load_global_model(model_file).forest
    X = pd.read_csv(rows_file)[list(forest.schema.feature_names)]
    assert np.allclose(predicted["log-linear"], forest.predict_proba(X), atol=2e-6, rtol=0)  # the default
    metrics = {}
    for pooling in ("mean", "log-linear"):
        target = tmp_path / f"{pooling}.json"
        done = edprf("evaluate", model_file, rows_file, "--pooling", pooling, "--json", target)
        assert done.returncode == 0, done.stderr
        metrics[pooling] = json.loads(target.read_text())
        assert metrics[pooling]["pooling"] == pooling
    key = "brier" if len(metrics["mean"]["classes"]) == 2 else "brier_multiclass"  # the Brier score's key by its scale
    assert metrics["mean"][key] != metrics["log-linear"][key]
