"""A whole column in other units: edprf predict and evaluate print the Python API's units warning over all rows read
and exit EXIT_CLIPPED (4) unless --allow-clipped; onnx_inputs warns as predict_proba does."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from edprf_core import DomainClippingWarning, example_schema, load_embedded
from edprf_core._encoding import clipped_columns
from edprf_core.export import encoding_spec, onnx_inputs
from edprf_core.prediction import ClippingTally, score_rows
from edprf_fl.cli import main
from edprf_fl.cli._model_args import EXIT_CLIPPED
from protocol import load_classifier

SCHEMA = example_schema("bank_marketing")
UNITS = "The data may be in other units than the schema"


def _file(tmp_path, months: int, rows: int = 100, label: bool = False):
    """``rows`` embedded bank rows whose first ``months`` have their age in months (12 times the years: far above
    the declared upper bound of 100 for every adult)."""
    X, y, _ = load_embedded("bank_marketing")
    frame = X.iloc[:rows].copy()
    frame["age"] = frame["age"].astype(float)
    frame.loc[frame.index[:months], "age"] = frame["age"].iloc[:months] * 12
    if label:
        frame[SCHEMA.label.column] = y.iloc[:rows].to_numpy()
    path = tmp_path / f"in-{months}.csv"
    frame.to_csv(path, index=False)
    return path


def test_tally_over_chunks_equals_one_call_on_all_rows(bank_model):
    rng = np.random.default_rng(0)
    X, _, _ = load_embedded("bank_marketing")
    frame = X.iloc[:3000].copy()
    frame["balance"] = rng.normal(0, 60_000, len(frame))  # bounds -10000..100000: some out on both sides
    frame["age"] = rng.uniform(0, 150, len(frame))
    frame = frame.astype(object)
    frame.iloc[5, 0] = "not a number"  # neither clipped nor counted
    frame.iloc[6, 0] = ""  # missing: neither
    tally = ClippingTally(SCHEMA)
    for start in range(0, len(frame), 700):
        tally.add(frame.iloc[start : start + 700])
    assert tally.columns() == clipped_columns(frame, SCHEMA)
    assert set(tally.columns()) == {"age", "balance"}
    # the same tally fed by score_rows as it parses the cells (what predict and evaluate do)
    forest = load_classifier(bank_model["model"]).forest_
    scoring = ClippingTally(SCHEMA)
    for start in range(0, len(frame), 700):
        score_rows(forest, frame.iloc[start : start + 700].reset_index(drop=True), clipping=scoring)
    assert scoring.columns() == tally.columns()


@pytest.mark.parametrize("command", ["predict", "evaluate"])
def test_a_column_in_other_units_warns_and_exits_4_unless_allowed(tmp_path, capsys, bank_model, command):
    data = _file(tmp_path, months=30, label=command == "evaluate")  # 30 % of the rows
    out = ["-o", str(tmp_path / "out.csv")] if command == "predict" else []
    assert main([command, str(bank_model["model"]), str(data), *out]) == EXIT_CLIPPED
    err = capsys.readouterr().err
    assert f"edprf {command}: warning: values outside the schema's declared bounds were clipped: 'age' 30%" in err
    assert UNITS in err and "--allow-clipped" in err
    if command == "predict":
        assert len(pd.read_csv(tmp_path / "out.csv")) == 100  # OUT is written all the same
        out = ["-o", str(tmp_path / "out.csv"), "--force"]
    assert main([command, str(bank_model["model"]), str(data), *out, "--allow-clipped"]) == 0
    assert UNITS in capsys.readouterr().err


@pytest.mark.parametrize("command", ["predict", "evaluate"])
def test_a_few_clipped_rows_are_no_units_problem(tmp_path, capsys, bank_model, command):
    data = _file(tmp_path, months=10, label=command == "evaluate")  # 10 %: below the 20 % of the rule
    out = ["-o", str(tmp_path / "out.csv")] if command == "predict" else []
    assert main([command, str(bank_model["model"]), str(data), *out]) == 0
    err = capsys.readouterr().err
    assert UNITS not in err and "--allow-clipped" not in err


def test_onnx_inputs_warns_as_predict_proba_does(tmp_path, bank_model):
    forest = load_classifier(bank_model["model"]).forest_
    rows = pd.read_csv(_file(tmp_path, months=30))
    with pytest.warns(DomainClippingWarning, match=UNITS):
        onnx_inputs(rows, encoding_spec(forest))
    with warnings.catch_warnings():
        warnings.simplefilter("error", DomainClippingWarning)
        onnx_inputs(pd.read_csv(_file(tmp_path, months=0)), encoding_spec(forest))
