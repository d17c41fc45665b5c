"""scikit-learn's order of the classes (library-user review S2-1).

The estimators gave ``classes_`` in the schema's declared order.  scikit-learn's probability scorers assume it sorted:
with ``("no-default", "default")`` declared (the positive class second, as the shipped bank schema advises) the
``roc_auc`` scorer reported 1 - AUC (0.083 for 0.917), ``neg_log_loss`` was wrong, a grid search on ``roc_auc`` picked
the noisiest ε, and ``CalibratedClassifierCV`` failed.  Now ``classes_`` is sorted and ``predict_proba``'s columns
follow it; the model (``forest_``, the release) keeps the declared order, and ``predict`` is unchanged.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.calibration import CalibratedClassifierCV
from sklearn.metrics import get_scorer, log_loss, roc_auc_score

from edprf_core import (
    ContinuousFeature,
    DPMarginalsClassifier,
    EDPRFClassifier,
    LabelSpec,
    ReleasedForestClassifier,
    Schema,
)
from edprf_core._class_order import sorted_classes

N = 3000


def _task(classes: tuple) -> tuple[pd.DataFrame, pd.Series, Schema]:
    """One feature that orders the classes: the k-th declared class sits at x near its sorted rank, so a good model
    ranks well only when its columns are read under the right names."""
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 10, N)
    ranks = np.clip(((x + rng.normal(0, 1.0, N)) / 10 * len(classes)).astype(int), 0, len(classes) - 1)
    y = pd.Series(np.asarray(sorted(classes))[ranks])
    schema = Schema(features=(ContinuousFeature("x", 0.0, 10.0),), label=LabelSpec("y", classes), name="class-order")
    return pd.DataFrame({"x": x}), y, schema


def _estimators(schema: Schema):
    yield "forest", EDPRFClassifier(schema, epsilon=5.0, n_rows_public=N, marginals_share=0.0, random_state=0)
    yield "mixed", EDPRFClassifier(schema, epsilon=5.0, n_rows_public=N, random_state=0)
    yield "marginals", DPMarginalsClassifier(schema, epsilon=5.0, n_rows_public=N, random_state=0)


@pytest.mark.parametrize("classes", [("no-default", "default"), (2, 0, 1)])
def test_classes_are_sorted_and_the_columns_follow_them(classes):
    X, y, schema = _task(classes)
    declared = list(schema.classes)
    for name, estimator in _estimators(schema):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # seeded on purpose (a test), said by the guarantee
            clf = estimator.fit(X, y)
        assert list(clf.classes_) == sorted(classes), name
        proba = clf.predict_proba(X)
        model_proba = clf.forest_.predict_proba(X) if hasattr(clf, "forest_") else None
        if model_proba is not None:  # the model keeps the declared order: the same numbers, columns by name
            for j, c in enumerate(clf.classes_):
                assert np.array_equal(proba[:, j], model_proba[:, declared.index(c)]), name
            assert list(clf.forest_.classes) == declared
        assert np.allclose(np.exp(clf.predict_log_proba(X)), proba)
        if len(classes) == 2:
            positive = clf.classes_[1]  # scikit-learn's positive class: the larger label
            truth = roc_auc_score(y == positive, proba[:, 1])
            assert truth > 0.85, name  # the task is easy: a model scored under the wrong names would be near 0.15
            assert get_scorer("roc_auc")(clf, X, y) == pytest.approx(truth)
        else:
            assert get_scorer("roc_auc_ovr")(clf, X, y) == pytest.approx(
                roc_auc_score(y.astype(int), proba, multi_class="ovr")
            )
            assert get_scorer("roc_auc_ovr")(clf, X, y) > 0.8, name
        assert get_scorer("neg_log_loss")(clf, X, y) == pytest.approx(-log_loss(y, proba, labels=clf.classes_))
        # predict is the declared class of the most probable column, whatever the order (rows without a tie)
        top = np.sort(proba, axis=1)
        clear = top[:, -1] > top[:, -2]
        assert clear.mean() > 0.9
        assert np.array_equal(clf.predict(X)[clear], np.asarray(clf.classes_)[np.argmax(proba, axis=1)][clear]), name


def test_a_released_forest_gives_the_same_order():
    X, y, schema = _task(("no-default", "default"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fitted = EDPRFClassifier(schema, epsilon=5.0, n_rows_public=N, random_state=0).fit(X, y)
    released = ReleasedForestClassifier(fitted.forest_)
    assert list(released.classes_) == ["default", "no-default"]
    assert np.array_equal(released.predict_proba(X), fitted.predict_proba(X))
    assert np.array_equal(released.predict(X), fitted.forest_.predict(X))
    assert get_scorer("roc_auc")(released, X, y) > 0.85


def test_calibration_fits_on_unsorted_declared_classes():
    """It failed with IndexError (scikit-learn indexes predict_proba's columns by the sorted labels)."""
    X, y, schema = _task(("no-default", "default"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        calibrated = CalibratedClassifierCV(
            EDPRFClassifier(schema, epsilon=5.0, n_rows_public=N, random_state=0), cv=3
        ).fit(X, y)
    assert list(calibrated.classes_) == ["default", "no-default"]
    assert get_scorer("roc_auc")(calibrated, X, y) > 0.85


def test_classes_that_do_not_sort_keep_the_declared_order():
    assert list(sorted_classes(("b", "a"))) == ["a", "b"]
    assert sorted_classes(("z", 1)).tolist() == ["z", "1"]  # no order between a text and a number: as declared


def test_predict_and_score_break_ties_as_predict_proba_orders_the_columns():
    """Whole-change review F3: predict gave ties to the class declared first while classes_[argmax(predict_proba)]
    gave them to the class sorted first (61 of 3,000 rows with four label trees).  predict is now scikit-learn's
    classes_[argmax(predict_proba)], and score counts the same predictions."""
    X, y, schema = _task(("yes", "no"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf = EDPRFClassifier(
            schema, epsilon=0.05, leaf="label", n_trees=4, max_depth=2, marginals_share=0.0, random_state=0
        ).fit(X, y)
    proba = clf.predict_proba(X)
    tied = proba[:, 0] == proba[:, 1]
    assert tied.sum() > 0, "the test needs ties"
    expected = np.asarray(clf.classes_)[np.argmax(proba, axis=1)]
    assert np.array_equal(clf.predict(X), expected)
    assert clf.score(X, y) == pytest.approx(np.mean(clf.predict(X) == y.to_numpy()))
    released = ReleasedForestClassifier(clf.forest_)
    assert np.array_equal(released.predict(X), expected) and released.score(X, y) == clf.score(X, y)
