"""onnx_inputs reads a DataFrame by column name, as edprf predict reads a file: columns the schema does not read
(an identifier, the label, notes) are ignored; a missing feature column is still refused."""

from __future__ import annotations

import numpy as np
import pytest

from edprf_core import DataValidationError, load_embedded
from edprf_core.export import encoding_spec, onnx_inputs
from protocol import load_classifier


def test_extra_columns_are_ignored_and_a_missing_feature_is_refused(bank_model):
    spec = encoding_spec(load_classifier(bank_model["model"]).forest_)
    X, y, _ = load_embedded("bank_marketing")
    rows = X.iloc[:50].astype(str).reset_index(drop=True)
    plain = onnx_inputs(rows, spec)
    hospital = rows[list(reversed(rows.columns))].copy()  # any order
    hospital.insert(0, "patient_id", [f"P{i:04d}" for i in range(len(rows))])
    hospital["outcome"] = y.iloc[:50].to_numpy()
    hospital["notes"] = "free text"
    fed = onnx_inputs(hospital, spec)
    assert set(fed) == set(plain) == set(spec["inputs"])
    for name in plain:
        np.testing.assert_array_equal(fed[name], plain[name])
    with pytest.raises(DataValidationError, match=r"missing columns \['age'\]"):
        onnx_inputs(hospital.drop(columns=["age"]), spec)
    misspelt = hospital.rename(columns={"age": "Age"})  # the near miss is named, though other columns are extra
    with pytest.raises(DataValidationError, match=r"missing columns \['age'\].*'Age'"):
        onnx_inputs(misspelt, spec)
