"""The Python API's prediction errors say what to do (analyst review F9): an extra column names
X[clf.feature_names_in_]; a refused cell names its rows and says that the whole call fails, as in scikit-learn,
while edprf predict scores the other rows."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from edprf_core import DataValidationError
from protocol import load_classifier


def _rows(bank_model, n=20):
    clf = load_classifier(bank_model["model"])
    X = pd.read_csv(bank_model["data"]).head(n)[list(clf.feature_names_in_)]
    return clf, X


def test_an_extra_column_names_feature_names_in(bank_model):
    clf, X = _rows(bank_model)
    with pytest.raises(DataValidationError, match=r"unknown columns \['patient_id'\]") as caught:
        clf.predict_proba(X.assign(patient_id=range(len(X))))
    assert "X[clf.feature_names_in_]" in str(caught.value)
    clf.predict_proba(X.assign(patient_id=range(len(X)))[clf.feature_names_in_])  # the advice works


def test_a_refused_cell_names_its_rows_and_the_cli(bank_model):
    clf, X = _rows(bank_model)
    X = X.astype({"age": float})
    X.loc[[3, 7], "age"] = np.nan
    with pytest.raises(DataValidationError) as caught:
        clf.predict_proba(X)
    message = str(caught.value)
    assert "column 'age': missing value" in message and "at row 3: nan, row 7: nan" in message
    assert "one refused cell fails the whole call, as in scikit-learn" in message
    assert "`edprf predict` on a file instead scores the other rows" in message
    assert clf.predict_proba(X.drop(index=[3, 7])).shape == (len(X) - 2, 2)
