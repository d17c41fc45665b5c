"""Hints of a fit's refusals and warnings, from a scikit-learn user's review (rev-sk K2, K10).

- An undeclared label got the feature cells' hint ("declare such a cell among the schema's missing_values").
- A numpy array in another column order got no word that an array is read in the schema's order.
- ColumnTransformer's default names (``remainder__age``) got a "did you mean" per column before the one hint
  that matters, ``verbose_feature_names_out=False``.
- NaN labels raised numpy's ``RuntimeWarning: invalid value encountered in cast`` beside the clear error.
- Labels read through aliases or text numbers gave scikit-learn's scorers wrong scores with no word at runtime.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.compose import ColumnTransformer
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer

from edprf_core import (
    DataValidationError,
    DPMarginalsClassifier,
    EDPRFClassifier,
    EDPRFWarning,
    LabelSpec,
    Schema,
    SeededNoiseWarning,
    example_schema,
)
from tests.synthetic import make_data, make_schema


@pytest.fixture(scope="module")
def small():
    schema = make_schema()
    X, y = make_data(schema, 200, seed=0)
    return schema, X, y


def _clf(schema, make=EDPRFClassifier):
    return (
        make(schema, n_bins=5, random_state=0)
        if make is DPMarginalsClassifier
        else make(schema, n_trees=1, max_depth=2, n_bins=5, random_state=0)
    )


@pytest.mark.parametrize("make", [EDPRFClassifier, DPMarginalsClassifier])
def test_an_undeclared_label_gets_the_labels_hint(small, make):
    schema, X, y = small
    with pytest.raises(DataValidationError) as refused:
        _clf(schema, make).fit(X, y.map({"k0": "no", "k1": "yes"}))
    text = str(refused.value)
    assert "[label] aliases" in text and "schema.read_labels(y)" in text
    assert "missing_values" not in text  # the feature cells' hint


def test_nan_labels_raise_the_error_alone(small):
    schema = example_schema("diabetes_prediction")
    X = pd.DataFrame({f: [] for f in schema.feature_names})  # the labels are read before any cell
    y = pd.Series([0.0, np.nan, 1.0])
    X = pd.concat([X, pd.DataFrame([[None] * schema.n_features] * 3, columns=schema.feature_names)])
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        with pytest.raises(DataValidationError, match="label column 'diabetes': missing value"):
            EDPRFClassifier(schema, random_state=0).fit(X, y)


def test_an_array_in_another_order_hints_a_dataframe(small):
    schema, X, y = small
    with pytest.raises(DataValidationError) as refused:
        _clf(schema).fit(X[X.columns[::-1]].to_numpy(), y)
    assert "X is an array, read in the schema's feature order ['x0', 'x1', 'x2', 'c0', 'c1']" in str(refused.value)
    assert "pass a DataFrame" in str(refused.value)
    with pytest.raises(DataValidationError) as framed:
        bad = X.copy()
        bad.loc[3, "c0"] = "undeclared"
        _clf(schema).fit(bad, y)
    assert "X is an array" not in str(framed.value)


def test_prefixed_columns_get_one_hint_first(small):
    schema, X, y = small
    prefixed = ColumnTransformer(
        [("u", FunctionTransformer(lambda d: d, feature_names_out="one-to-one"), ["x0"])], remainder="passthrough"
    ).set_output(transform="pandas")
    with pytest.raises(DataValidationError) as refused:
        make_pipeline(prefixed, _clf(schema)).fit(X, y)
    text = str(refused.value)
    assert "every column of X carries a ColumnTransformer's <step>__ prefix (u__x0)" in text
    assert text.index("verbose_feature_names_out=False") < text.index("X has")
    assert "did you mean" not in text


@pytest.mark.parametrize("make", [EDPRFClassifier, DPMarginalsClassifier])
def test_labels_read_through_the_schema_are_warned_once(make):
    schema = Schema(
        features=make_schema().features,
        label=LabelSpec("label", (0, 1), aliases=(("2", 1),)),  # a grade 2 is class 1
        name="aliased",
    )
    X, _ = make_data(make_schema(), 200, seed=0)
    raw = pd.Series(np.arange(200) % 3)  # 0, 1, 2: the 2s read as 1
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _clf(schema, make).fit(X, raw)
    read = [w for w in caught if issubclass(w.category, EDPRFWarning) and "read some labels" in str(w.message)]
    assert len(read) == 1
    assert "(2 as 1)" in str(read[0].message) and "schema.read_labels(y)" in str(read[0].message)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _clf(schema, make).fit(X, raw.astype(str).where(raw < 2, "1"))  # text numbers: "0" is not 0 for a scorer
    assert any("read some labels through the schema ('0' as 0, '1' as 1)" in str(w.message) for w in caught)
    with warnings.catch_warnings():  # labels given as the declared classes (1.0 equals 1 for a scorer too)
        warnings.simplefilter("error", EDPRFWarning)
        warnings.simplefilter("ignore", SeededNoiseWarning)
        _clf(schema, make).fit(X, schema.read_labels(raw))
        _clf(schema, make).fit(X, schema.read_labels(raw).astype(float))


def test_fits_inside_labels_read_by_caller_are_not_warned():
    """A party fits on its file's text labels ("0", "1") read by the schema, and runs no scikit-learn scorer: it fits
    inside ``labels_read_by_caller`` (client/_party.py), where the warning, and its pass over y, are skipped."""
    from edprf_core.encoding import labels_read_by_caller

    schema = Schema(features=make_schema().features, label=LabelSpec("label", (0, 1)), name="numeric")
    X, _ = make_data(make_schema(), 200, seed=0)
    text = pd.Series(np.arange(200) % 2).astype(str)
    with warnings.catch_warnings():
        warnings.simplefilter("error", EDPRFWarning)
        warnings.simplefilter("ignore", SeededNoiseWarning)
        with labels_read_by_caller():
            _clf(schema).fit(X, text)
    with pytest.warns(EDPRFWarning, match="read some labels through the schema"):
        _clf(schema).fit(X, text)  # the same fit outside the block: warned again


def test_a_party_fits_inside_labels_read_by_caller():
    """The party's release fit is the project's one fit on raw file labels: it is in the block (source check)."""
    from pathlib import Path

    source = (Path(__file__).resolve().parents[2] / "client" / "_party.py").read_text()
    fit = source.index("clf = _estimator_class()(")
    assert "labels_read_by_caller()," in source[fit - 300 : fit]
