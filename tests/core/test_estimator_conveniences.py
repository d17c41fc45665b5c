"""scikit-learn conventions beyond the estimator checks: a legacy RandomState as random_state, log
probabilities, no record weights, and a one-line repr."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from edprf_core import DPMarginalsClassifier, EDPRFClassifier, TrainingParameters, load_embedded


@pytest.fixture(scope="module")
def wall():
    X, y, schema = load_embedded("wall_robot_navigation")
    return X.iloc[:800], y.iloc[:800], schema


def _small(schema, **kw):
    return EDPRFClassifier(schema, epsilon=1.0, n_trees=2, max_depth=3, n_bins=8, **kw)


def test_a_random_state_instance_seeds_reproducibly_and_moves_on(wall):
    X, y, schema = wall
    a = _small(schema, random_state=np.random.RandomState(3)).fit(X, y).predict_proba(X)
    b = _small(schema, random_state=np.random.RandomState(3)).fit(X, y).predict_proba(X)
    np.testing.assert_array_equal(a, b)
    rs = np.random.RandomState(3)
    clf = _small(schema, random_state=rs)
    first = clf.fit(X, y).predict_proba(X)
    second = clf.fit(X, y).predict_proba(X)  # the RandomState moved on: another draw, as in scikit-learn
    assert not np.array_equal(first, second)
    assert "NOT differentially private" in clf.forest_.guarantee()  # seeded: a research run
    marginals = [DPMarginalsClassifier(schema, epsilon=1.0, random_state=np.random.RandomState(3)) for _ in range(2)]
    np.testing.assert_array_equal(*(m.fit(X, y).predict_proba(X) for m in marginals))


def test_predict_log_proba_is_the_log_of_predict_proba(wall):
    X, y, schema = wall
    for clf in (_small(schema, random_state=0), DPMarginalsClassifier(schema, epsilon=1.0, random_state=0)):
        clf.fit(X, y)
        with np.errstate(divide="ignore"):
            np.testing.assert_array_equal(clf.predict_log_proba(X), np.log(clf.predict_proba(X)))


def test_no_sample_weight_parameter_so_meta_estimators_subsample_rows_instead():
    """scikit-learn's meta-estimators (bagging, boosting) pass weights to any fit that declares them; record
    weights would multiply what one record changes, so fit declares none."""
    from sklearn.utils.validation import has_fit_parameter

    assert not has_fit_parameter(EDPRFClassifier, "sample_weight")
    assert not has_fit_parameter(DPMarginalsClassifier, "sample_weight")


def test_the_estimator_repr_is_one_line_with_the_schema_named(wall):
    _, _, schema = wall
    assert "\n" not in repr(schema)
    text = repr(_small(schema))  # scikit-learn wraps the parameters; the schema is one of them, in one line
    assert len(text) < 400
    assert f"fingerprint={schema.fingerprint[:19]!r}" in text and "24 features" in text and "label='Class'" in text


@pytest.mark.parametrize("epsilon", [np.float32(1.0), np.int64(1), np.float64(0.5)])
def test_numpy_scalars_are_accepted_as_epsilon(wall, epsilon):
    """Library-user review S2-2: np.float32(1.0) and np.int64(1) (a grid over np.arange) were refused with
    "epsilon must be a positive finite number, got np.float32(1.0)".  Any real number is accepted, kept as a float
    (the release carries a float), and charged as that float."""
    from edprf_core import BudgetAccountant

    X, y, schema = wall
    accountant = BudgetAccountant(10.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf = EDPRFClassifier(schema, epsilon=epsilon, n_rows_public=800, accountant=accountant, random_state=0)
        clf.fit(X, y)
    assert type(clf.privacy_.epsilon) is float and clf.privacy_.epsilon == float(epsilon)
    assert accountant.total == pytest.approx(float(epsilon))
    with pytest.raises(ValueError, match="epsilon: expected a positive finite number, got str"):
        TrainingParameters(epsilon="1")
    with pytest.raises(ValueError, match="got bool"):
        TrainingParameters(epsilon=True)


@pytest.mark.privacy  # in the gate: mutation campaign 3 (stop 56)
@pytest.mark.parametrize("estimator", ["EDPRFClassifier", "DPMarginalsClassifier"])
def test_a_float32_epsilon_is_charged_spent_and_printed_as_written(wall, estimator):
    """Library-user review F10: ``np.float32(0.1)`` was charged 0.10000000149011612 while the guarantee printed 0.1
    (invariant 6: the printed guarantee is what was spent).  It is read as the decimal it prints, everywhere."""
    import edprf_core
    from edprf_core import BudgetAccountant

    X, y, schema = wall
    accountant = BudgetAccountant(10.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf = getattr(edprf_core, estimator)(
            schema, epsilon=np.float32(0.1), n_rows_public=800, accountant=accountant, random_state=0
        ).fit(X, y)
    assert clf.privacy_.epsilon == 0.1 and [s.epsilon for s in accountant.spends] == [0.1]
    assert "0.10000000149" not in str(clf.privacy_)


def test_score_names_a_sample_weight_of_another_length_and_explain_row_refuses_several_rows(wall):
    """Library-user review S3-1 and S3-7: a sample_weight of the wrong length failed with numpy's "Axis must be
    specified when shapes of a and weights differ"; explain_row given several rows explained the first alone."""
    from edprf_core import DataValidationError, explain_row

    X, y, schema = wall
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf = _small(schema, random_state=0).fit(X, y)
    with pytest.raises(DataValidationError, match=r"sample_weight: expected one weight per row, shape \(800,\), got"):
        clf.score(X, y, sample_weight=np.ones(3))
    assert clf.score(X, y, sample_weight=np.ones(800)) == clf.score(X, y)
    with pytest.raises(ValueError, match="row: expected one row, got 2"):
        explain_row(clf, X.iloc[:2])
    assert explain_row(clf, X.iloc[:1]).lines()


def test_a_frame_whose_columns_a_column_transformer_renamed_is_refused_with_the_fix(wall):
    """Library-user review S3-8: a ColumnTransformer's output (num__x, ...) or a frame of numbered columns was
    refused without the cause or the fix."""
    import pandas as pd

    from edprf_core import DataValidationError

    X, y, schema = wall
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf = _small(schema, random_state=0).fit(X, y)
    prefixed = X.rename(columns=lambda c: f"num__{c}")
    with pytest.raises(DataValidationError, match="verbose_feature_names_out=False"):
        clf.predict(prefixed)
    numbered = pd.DataFrame(X.to_numpy())
    with pytest.raises(DataValidationError, match="columns are numbered, not named"):
        clf.predict(numbered)
    assert np.array_equal(clf.predict(X.to_numpy()), clf.predict(X))  # an array is read in the schema's order


def test_a_refused_cell_at_fit_says_it_was_charged_and_how_to_keep_the_good_rows(wall):
    """Library-user review S3-10: a cell the schema refuses ('?' in a numeric column) failed the fit without the way
    forward, and that fit had been charged.  The error now says both; following it fits."""
    import pandas as pd

    from edprf_core import BudgetAccountant, DataValidationError
    from edprf_core.encoding import conforming_rows

    X, y, schema = wall
    bad = X.astype(object).copy()
    bad.iloc[3, 0] = "?"
    accountant = BudgetAccountant(10.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(DataValidationError, match=r"this fit was charged .*conforming_rows\(X, y, schema\)"):
            _small(schema, random_state=0, accountant=accountant).fit(bad, y)
        assert accountant.total == 1.0
        keep, _ = conforming_rows(pd.DataFrame(bad), y, schema)
        assert keep.sum() == len(y) - 1
        _small(schema, random_state=0).fit(bad[keep], y[keep])


def test_a_float32_cap_is_read_as_written_too():
    """Whole-change review (stop 55) S3-4: the accountant kept ``np.float32(0.7)`` as 0.699999988 and refused a fit
    at ``np.float32(0.7)`` now charged 0.7.  The cap and every spend read a narrow float as it prints."""
    from edprf_core import BudgetAccountant

    accountant = BudgetAccountant(np.float32(0.7))
    accountant.spend(np.float32(0.7), "a fit")
    assert accountant.total == pytest.approx(0.7) and [s.epsilon for s in accountant.spends] == [0.7]


def test_a_fitted_forest_has_schema_like_the_other_estimators():
    """Review K8: using-a-model.md's ``clf.schema_.read_labels(y)`` failed with AttributeError on a local
    EDPRFClassifier (DPMarginalsClassifier and ReleasedForestClassifier have ``schema_``)."""
    from edprf_core import EDPRFClassifier, load_embedded

    X, y, schema = load_embedded("wall_robot_navigation")
    clf = EDPRFClassifier(schema, max_depth=2, n_trees=1, random_state=0)
    assert not hasattr(clf, "schema_")  # set by fit, as scikit-learn's fitted attributes
    clf.fit(X[:200], y[:200])
    assert clf.schema_ is clf.forest_.schema
    assert list(clf.schema_.read_labels(y[:5])) == list(y[:5])
