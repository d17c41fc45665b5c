"""Feature names and counts behave as in a scikit-learn estimator (DecisionTreeClassifier as reference), except that
a DataFrame is matched by column name under the schema at fit and predict alike (any column order; the schema's
ignored columns dropped by rule)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.tree import DecisionTreeClassifier

from edprf_core import DataValidationError, EDPRFClassifier
from tests.synthetic import make_data, make_schema

SCHEMA = make_schema(n_continuous=3, n_categorical=0)  # numeric, so the reference tree can fit the same X


@pytest.fixture(scope="module")
def data():
    X, y = make_data(SCHEMA, 300, seed=0)
    return X, y


def _outcome(action):
    """What an action did: ("raised", type, message) or ("warned", [(category, message), ...])."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            action()
        except Exception as exc:  # noqa: BLE001 - the outcome is what we compare
            return (
                "raised",
                isinstance(exc, ValueError),
                str(exc).replace("EDPRFClassifier", "EST").replace("DecisionTreeClassifier", "EST"),
            )
    return (
        "warned",
        sorted(
            (
                w.category.__name__,
                str(w.message).replace("EDPRFClassifier", "EST").replace("DecisionTreeClassifier", "EST"),
            )
            for w in caught
        ),
    )


def _both(fit_X, y, method_X, method="predict"):
    ours = EDPRFClassifier(SCHEMA, epsilon=5.0, n_trees=2, max_depth=2, random_state=0).fit(fit_X, y)
    ref = DecisionTreeClassifier(max_depth=2, random_state=0).fit(fit_X, y)
    return (_outcome(lambda: getattr(ours, method)(method_X)), _outcome(lambda: getattr(ref, method)(method_X)))


CASES = {
    "same frame": lambda X: (X, X),
    "frame then array": lambda X: (X, X.to_numpy()),
    "array then frame": lambda X: (X.to_numpy(), X),
    "array then array": lambda X: (X.to_numpy(), X.to_numpy()),
    "array then narrower array": lambda X: (X.to_numpy(), X.to_numpy()[:, :2]),
    "frame then narrower array": lambda X: (X, X.to_numpy()[:, :2]),
}


@pytest.mark.parametrize("method", ["predict", "predict_proba"])
@pytest.mark.parametrize("case", list(CASES))
def test_feature_name_and_count_checks_match_scikit_learn(data, case, method):
    X, y = data
    fit_X, method_X = CASES[case](X)
    ours, ref = _both(fit_X, y, method_X, method)
    assert ours == ref


def test_the_cases_do_warn_and_fail(data):
    """Guard: the comparison above covers warnings and errors, not only silent passes."""
    X, y = data
    assert "X does not have valid feature names" in _both(X, y, X.to_numpy())[0][1][0][1]
    assert "fitted without feature names" in _both(X.to_numpy(), y, X)[0][1][0][1]
    assert "is expecting 3 features" in _both(X.to_numpy(), y, X.to_numpy()[:, :2])[0][2]


def test_score_checks_names_like_predict(data):
    X, y = data
    clf = EDPRFClassifier(SCHEMA, epsilon=5.0, n_trees=2, max_depth=2, random_state=0).fit(X, y)
    assert clf.score(X[X.columns[::-1]], y) == clf.score(X, y)  # matched by name, as predict
    with pytest.raises(DataValidationError, match=r"missing columns \['x0'\]"):
        clf.score(X.rename(columns={"x0": "z0"}), y)


def test_predict_matches_frame_columns_by_name_as_fit_does(data):
    """fit read a DataFrame by name in any order; predict insisted on fit's order (scikit-learn's rule)."""
    X, y = data
    reordered = X[X.columns[::-1]]
    clf = EDPRFClassifier(SCHEMA, epsilon=5.0, n_trees=2, max_depth=2, random_state=0).fit(reordered, y)
    assert list(clf.feature_names_in_) == list(SCHEMA.feature_names)  # the schema's order, not the frame's
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert np.array_equal(clf.predict_proba(X), clf.predict_proba(reordered))
    with pytest.warns(UserWarning, match="X does not have valid feature names"):  # an array: schema order
        assert np.array_equal(clf.predict_proba(X.to_numpy()), clf.predict_proba(X))
    with pytest.raises(DataValidationError, match=r"missing columns \['x1'\].*did you mean"):
        clf.predict(X.rename(columns={"x1": "x_1"}))
    with pytest.raises(DataValidationError, match=r"unknown columns \['extra'\]"):
        clf.predict(X.assign(extra=1.0))
    with pytest.raises(DataValidationError, match="X holds the label column"):
        clf.predict(X.assign(**{SCHEMA.label.column: 0}))


def test_ignored_columns_are_dropped_at_fit_and_predict(data):
    """A frame with a declared ignored column at fit made that column required at predict ('Feature names seen at
    fit time, yet now missing: - duration', bank marketing) and n_features_in_ counted it."""
    from dataclasses import replace

    X, y = data
    schema = replace(SCHEMA, ignored_columns=("note",))
    with_note = X.assign(note="free text")
    clf = EDPRFClassifier(schema, epsilon=5.0, n_trees=2, max_depth=2, random_state=0).fit(with_note, y)
    assert clf.n_features_in_ == schema.n_features
    assert list(clf.feature_names_in_) == list(schema.feature_names)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        expected = clf.predict_proba(X)
        assert np.array_equal(clf.predict_proba(with_note), expected)
        assert np.array_equal(clf.predict_proba(with_note[["note", *reversed(schema.feature_names)]]), expected)
    plain = EDPRFClassifier(schema, epsilon=5.0, n_trees=2, max_depth=2, random_state=0).fit(X, y)
    assert np.array_equal(plain.predict(with_note), plain.predict(X))
    with pytest.raises(DataValidationError, match=r"missing columns \['x2'\]"):
        clf.predict(with_note.drop(columns="x2"))


def test_attributes_are_the_schemas_when_the_frame_matches_it(data):
    X, y = data
    clf = EDPRFClassifier(SCHEMA, n_trees=2, max_depth=2, random_state=0).fit(X, y)
    assert clf.n_features_in_ == SCHEMA.n_features
    assert clf.feature_names_in_.dtype == object and list(clf.feature_names_in_) == list(SCHEMA.feature_names)
    clf.fit(X.to_numpy(), y)  # refit on an array: names are forgotten, as in scikit-learn
    assert clf.n_features_in_ == SCHEMA.n_features and not hasattr(clf, "feature_names_in_")
    reordered = X[X.columns[::-1]]
    clf.fit(reordered, y)  # read by name under the schema; the schema's names are recorded
    assert list(clf.feature_names_in_) == list(SCHEMA.feature_names)
    assert clf.predict(reordered).shape == (len(X),)


def test_frame_without_the_schemas_features_is_refused_clearly(data):
    X, y = data
    with pytest.raises(DataValidationError, match=r"missing columns \['x2'\]; the schema 'synthetic' declares"):
        EDPRFClassifier(SCHEMA, random_state=0).fit(X.drop(columns="x2"), y)
    with pytest.raises(DataValidationError, match=r"X has 2 feature\(s\) \(shape=\(300, 2\)\), expected 3"):
        EDPRFClassifier(SCHEMA, random_state=0).fit(X.to_numpy()[:, :2], y)


def test_layouts_scikit_learn_refuses(data):
    X, y = data
    from scipy.sparse import csr_matrix

    clf = EDPRFClassifier(SCHEMA, n_trees=2, max_depth=2, random_state=0)
    with pytest.raises(TypeError, match="sparse"):
        clf.fit(csr_matrix(X.to_numpy()), y)
    with pytest.raises(ValueError, match="Complex data not supported"):
        clf.fit(X.to_numpy() + 1j, y)
    clf.fit(X, y)
    with pytest.raises(ValueError, match="Reshape your data"):
        clf.predict(X.to_numpy()[0])
    with pytest.raises(ValueError, match="requires y to be passed"):
        clf.fit(X, None)


def test_column_vector_y_is_raveled_with_a_warning(data):
    from sklearn.exceptions import DataConversionWarning

    X, y = data
    a = EDPRFClassifier(SCHEMA, n_trees=2, max_depth=2, random_state=0).fit(X, y)
    with pytest.warns(DataConversionWarning, match="column-vector y"):
        b = EDPRFClassifier(SCHEMA, n_trees=2, max_depth=2, random_state=0).fit(X, y.to_frame())
    assert np.array_equal(a.predict(X), b.predict(X))


def test_tags_follow_the_schema():
    from sklearn.utils import get_tags

    from edprf_core import CategoricalFeature, ContinuousFeature, LabelSpec, Schema

    tags = get_tags(EDPRFClassifier(SCHEMA))
    assert tags.estimator_type == "classifier" and tags.non_deterministic
    assert not get_tags(EDPRFClassifier(SCHEMA, random_state=0)).non_deterministic  # a seed reproduces the fit
    assert tags.input_tags.string and not tags.input_tags.allow_nan and not tags.input_tags.categorical
    assert not tags.input_tags.sparse
    imputing = Schema(
        features=(
            ContinuousFeature("a", 0.0, 1.0, missing=0.5),
            CategoricalFeature("b", ("u", "v"), missing="separate"),
        ),
        label=LabelSpec("y", (0, 1)),
    )
    tags = get_tags(EDPRFClassifier(imputing))
    assert tags.input_tags.allow_nan and tags.input_tags.categorical
    X = np.array([[np.nan, None], [0.2, "u"], [0.9, "v"], [np.nan, "v"]], dtype=object)
    EDPRFClassifier(imputing, n_trees=1, max_depth=1, random_state=0).fit(X, [0, 1, 1, 0]).predict(X)
    assert not get_tags(EDPRFClassifier()).input_tags.allow_nan  # no schema yet: nothing is promised
