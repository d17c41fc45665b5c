"""A step fitted on the training rows before the estimator, or a search's refit, voids the guarantee (review K1, K7).

A ``MinMaxScaler`` or ``SimpleImputer`` fitted in a ``Pipeline`` on the same rows made the estimator's input a
function of every row (one added record moved 4,849 of 20,000 other rows' bins), yet ``dp_`` stayed True and the
guarantee read "epsilon = 1 differential privacy per record"; ``GridSearchCV.best_estimator_`` also said ``dp_``
True.  A fit now finds both in its caller frames, warns and marks the model NOT DP, as a seed does; the charge is
unchanged.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.compose import ColumnTransformer
from sklearn.impute import SimpleImputer
from sklearn.model_selection import GridSearchCV, cross_val_score
from sklearn.pipeline import FeatureUnion, Pipeline, make_pipeline
from sklearn.preprocessing import FunctionTransformer, MinMaxScaler, Normalizer

import edprf_core
from edprf_core import (
    BudgetAccountant,
    DPMarginalsClassifier,
    EDPRFClassifier,
    PrivacyLeakWarning,
    budget,
    check_pipeline,
)
from tests.synthetic import make_data, make_schema

DP_SETTINGS = {"epsilon": 1.0, "n_trees": 1, "max_depth": 2, "n_bins": 5, "marginals_share": 0}
"""Unseeded (a DP fit when nothing else breaks it) and small: no DP row count, one shallow tree."""


@pytest.fixture(scope="module")
def small():
    schema = make_schema()
    X, y = make_data(schema, 300, seed=0)
    return schema, X, y


def _names_kept(*transformers):
    return ColumnTransformer(list(transformers), remainder="passthrough", verbose_feature_names_out=False).set_output(
        transform="pandas"
    )


def _fit_recording(pipe, X, y):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pipe.fit(X, y)
    return [w for w in caught if issubclass(w.category, PrivacyLeakWarning)]


@pytest.mark.parametrize(
    "step",
    [
        _names_kept(("scale", MinMaxScaler(feature_range=(0, 10)), ["x0"])),
        _names_kept(("impute", SimpleImputer(strategy="median"), ["x1"])),
        make_pipeline(_names_kept(("scale", MinMaxScaler(feature_range=(0, 10)), ["x0"]))),  # nested
    ],
    ids=["scaler", "imputer", "nested"],
)
@pytest.mark.parametrize("make", [EDPRFClassifier, DPMarginalsClassifier], ids=["forest", "marginals"])
def test_a_step_fitted_on_the_rows_makes_the_model_not_dp(small, step, make):
    schema, X, y = small
    settings = DP_SETTINGS if make is EDPRFClassifier else {"epsilon": 1.0, "n_bins": 5}
    acc = BudgetAccountant()
    estimator = make(schema, accountant=acc, **settings)
    leaks = _fit_recording(Pipeline([("prep", step), ("model", estimator)]), X, y)
    assert estimator.dp_ is False and acc.total == 1.0  # charged as any fit
    assert estimator.guarantee_.startswith("NOT differentially private: its X came through a Pipeline step")
    assert "'prep' > " in estimator.guarantee_ and "no per-record bound holds for the raw rows" in estimator.guarantee_
    assert len(leaks) == 1 and "'prep' >" in str(leaks[0].message)
    assert estimator.privacy_.inputs_not_dp and estimator.privacy_.not_dp_reasons()[-1].startswith("its X came")
    if make is EDPRFClassifier:  # the forest carries it, as a seed: repr, reasons, verdict, the export's text
        assert "NOT DP" in repr(estimator.forest_) and not estimator.forest_.dp
        assert estimator.forest_.verdict().startswith("NOT differentially private: its X came")


def test_a_frozen_step_fitted_on_the_rows_is_opened(small):
    """Review rev-s65 F2: a FrozenEstimator holds its fitted step in ``estimator`` (its own __dict__ learns nothing),
    so a scaler fitted on the same rows and frozen into the pipeline escaped the walk and check_pipeline."""
    from sklearn.frozen import FrozenEstimator

    schema, X, y = small
    frozen = FrozenEstimator(_names_kept(("scale", MinMaxScaler(feature_range=(0, 10)), ["x0"])).fit(X))
    estimator = EDPRFClassifier(schema, **DP_SETTINGS)
    pipe = Pipeline([("prep", frozen), ("model", estimator)])
    with pytest.warns(PrivacyLeakWarning):
        assert check_pipeline(pipe) == [
            "'prep' > 'frozen' > 'scale' (MinMaxScaler: data_max_, data_min_, data_range_, ...)"
        ]
    leaks = _fit_recording(pipe, X, y)
    assert estimator.dp_ is False and len(leaks) == 1 and "'prep' > 'frozen' > 'scale'" in str(leaks[0].message)


@pytest.mark.parametrize(
    "step",
    [
        "passthrough",
        FunctionTransformer(np.asarray),  # stateless
        _names_kept(("same", FunctionTransformer(lambda v: v), ["x0"]), ("gone", "drop", [])),
        FeatureUnion([("norm", Normalizer())]),  # row by row: learns nothing
    ],
    ids=["passthrough", "function", "column-transformer", "feature-union"],
)
def test_stateless_steps_keep_the_model_dp(small, step):
    schema, X, y = small
    estimator = EDPRFClassifier(schema, **DP_SETTINGS)
    if isinstance(step, FeatureUnion):
        X = X[[f"x{i}" for i in range(3)]]  # Normalizer needs numbers: check the walk only
        assert check_pipeline(Pipeline([("u", step), ("m", estimator)])) == []
        return
    leaks = _fit_recording(Pipeline([("prep", step), ("model", estimator)]), X, y)
    assert estimator.dp_ is True and leaks == []


def test_a_plain_fit_and_a_pipeline_of_the_estimator_alone_stay_dp(small):
    schema, X, y = small
    assert EDPRFClassifier(schema, **DP_SETTINGS).fit(X, y).dp_ is True
    estimator = EDPRFClassifier(schema, **DP_SETTINGS)
    assert _fit_recording(make_pipeline(estimator), X, y) == [] and estimator.dp_ is True


def test_a_search_refit_is_not_dp_and_its_folds_are_not_flagged(small):
    schema, X, y = small
    acc = BudgetAccountant()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        search = GridSearchCV(EDPRFClassifier(schema, accountant=acc, **DP_SETTINGS), {"max_depth": [1, 2]}, cv=3)
        search.fit(X, y)
    leaks = [w for w in caught if issubclass(w.category, PrivacyLeakWarning)]
    assert acc.total == 7.0  # 2 candidates x 3 folds + the refit, as before
    best = search.best_estimator_
    assert best.dp_ is False
    assert "its settings were chosen by a search on scores of these rows" in best.guarantee_
    assert len(leaks) == 1 and "GridSearchCV's refit" in str(leaks[0].message)  # the 6 fold fits: no warning


def test_a_search_of_one_candidate_chose_nothing(small):
    schema, X, y = small
    search = GridSearchCV(EDPRFClassifier(schema, **DP_SETTINGS), {"max_depth": [2]}, cv=3).fit(X, y)
    assert search.best_estimator_.dp_ is True


def test_cross_validation_folds_stay_dp(small):
    schema, X, y = small
    with budget(None) as acc:
        cross_val_score(EDPRFClassifier(schema, **DP_SETTINGS), X, y, cv=3, error_score="raise")
    assert acc.total == 3.0  # the folds' models are not marked: no search chose anything


def test_check_pipeline_names_the_steps_before_fitting(small):
    schema, _, _ = small
    assert "check_pipeline" in edprf_core.__all__
    pipe = Pipeline(
        [
            (
                "prep",
                _names_kept(("scale", MinMaxScaler(), ["x0"]), ("units", FunctionTransformer(np.asarray), ["x1"])),
            ),
            ("model", EDPRFClassifier(schema)),
        ]
    )
    with pytest.warns(PrivacyLeakWarning, match="'prep' > 'scale' \\(MinMaxScaler, not fitted yet"):
        steps = check_pipeline(pipe)
    assert len(steps) == 1  # the FunctionTransformer and the remainder 'passthrough' are fine
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert check_pipeline(Pipeline([("keep", "passthrough"), ("model", EDPRFClassifier(schema))])) == []
    with pytest.raises(TypeError, match="expected a scikit-learn Pipeline, got EDPRFClassifier"):
        check_pipeline(EDPRFClassifier(schema))


def test_check_pipeline_after_fitting_names_what_was_learned(small):
    schema, X, y = small
    pipe = Pipeline([("prep", _names_kept(("impute", SimpleImputer(), ["x1"]))), ("model", EDPRFClassifier(schema))])
    with pytest.warns(PrivacyLeakWarning):
        pipe.fit(X, y)
    with pytest.warns(PrivacyLeakWarning, match="SimpleImputer: .*statistics_"):
        assert len(check_pipeline(pipe)) == 1


def test_a_release_of_a_fit_marked_not_dp_is_refused_by_the_wire(small):
    from protocol._parameters import parameters_to_message

    schema, X, y = small
    estimator = EDPRFClassifier(schema, **DP_SETTINGS)
    _fit_recording(Pipeline([("prep", _names_kept(("s", MinMaxScaler(), ["x0"]))), ("model", estimator)]), X, y)
    with pytest.raises(ValueError, match="a release must not carry a fit whose inputs were not DP"):
        parameters_to_message(estimator.privacy_)


def test_the_onnx_export_carries_the_reason(small):
    pytest.importorskip("onnx")
    from edprf_core.export import forest_to_onnx

    schema, X, y = small
    estimator = EDPRFClassifier(schema, **DP_SETTINGS)
    _fit_recording(Pipeline([("prep", _names_kept(("s", MinMaxScaler(), ["x0"]))), ("model", estimator)]), X, y)
    props = {p.key: p.value for p in forest_to_onnx(estimator.forest_).metadata_props}
    assert props["edprf.guarantee"].startswith("NOT differentially private: its X came through a Pipeline step")


def test_a_search_over_a_pipeline_gives_both_reasons(small):
    schema, X, y = small
    pipe = Pipeline(
        [("prep", _names_kept(("s", MinMaxScaler(), ["x0"]))), ("model", EDPRFClassifier(schema, **DP_SETTINGS))]
    )
    with pytest.warns(PrivacyLeakWarning):
        search = GridSearchCV(pipe, {"model__max_depth": [1, 2]}, cv=2).fit(X, y)
    reasons = search.best_estimator_[-1].forest_.not_dp_reasons()
    assert [r[:12] for r in reasons[-2:]] == ["its X came t", "its settings"]
