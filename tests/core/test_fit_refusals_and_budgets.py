"""Found by a walkthrough of the estimator API: refusals that charged, budgets that did not hold, labels as text.

- A fit refused for its shape (X and y of different lengths) or its columns (one named twice, the label among
  the features) charged the accountant first; the docs say such a refusal costs nothing.
- A label column left in X became a feature name that ``predict`` then demanded.
- Inside nested ``budget()`` blocks only the innermost cap held; and under ``budget()`` a search with
  ``n_jobs > 1`` on processes fitted in workers that no block charged (a cap of 2 exceeded silently).
- ``edprf_core.datasets.read_csv`` gave numeric classes as text, so ``accuracy_score(y, clf.predict(X))`` was 0.
"""

from __future__ import annotations

import pickle

import pandas as pd
import pytest

from edprf_core import (
    BudgetAccountant,
    BudgetExceededError,
    DataValidationError,
    EDPRFClassifier,
    budget,
    example_schema,
    load_embedded,
)
from edprf_core.datasets import read_csv


@pytest.fixture(scope="module")
def wall():
    X, y, schema = load_embedded("wall_robot_navigation")
    return X[:300], y[:300], schema


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda X, y: (X, y[:-1]), "X has 300 rows but y has 299"),
        (lambda X, y: (pd.concat([X, X[["US1"]]], axis=1), y), "X names a column twice: ['US1']"),
        (lambda X, y: (X.assign(Class=y.to_numpy()), y), "X holds the label column 'Class'"),
    ],
    ids=["rows", "twice", "label"],
)
def test_a_fit_refused_for_its_layout_costs_nothing(wall, make, message):
    X, y, schema = wall
    accountant = BudgetAccountant(5.0)
    with pytest.raises(DataValidationError) as refused:
        EDPRFClassifier(schema, epsilon=1.0, accountant=accountant).fit(*make(X, y))
    assert message in str(refused.value) and accountant.total == 0.0


@pytest.mark.parametrize("share", ["auto", 0.0])
def test_an_impossible_residual_pass_is_refused_before_the_charge(wall, share):
    """residual_pass=True on four classes (or with no marginals part) charged the fit, then raised."""
    X, y, schema = wall
    accountant = BudgetAccountant(5.0)
    with pytest.raises(ValueError, match="residual_pass=True needs a marginals part on a two-class task"):
        EDPRFClassifier(schema, residual_pass=True, marginals_share=share, accountant=accountant).fit(X, y)
    assert accountant.total == 0.0


def test_an_enclosing_budget_cap_holds_inside_a_nested_block(wall):
    X, y, schema = wall
    with budget(1.0) as outer:
        with budget(5.0) as inner:
            EDPRFClassifier(schema, epsilon=0.75, max_depth=2).fit(X, y)
            with pytest.raises(BudgetExceededError, match="an enclosing budget\\(\\) block's accountant has 0.25"):
                EDPRFClassifier(schema, epsilon=0.5, max_depth=2).fit(X, y)
        assert inner.total == outer.total == 0.75
        EDPRFClassifier(schema, epsilon=0.25, max_depth=2).fit(X, y)  # what is left of the outer cap
        assert outer.total == 1.0


def test_an_estimator_that_would_fit_uncharged_in_another_process_cannot_be_pickled(wall):
    X, y, schema = wall
    unfitted = EDPRFClassifier(schema, epsilon=1.0, max_depth=2)
    with budget(2.0):
        with pytest.raises(TypeError, match="cannot be pickled inside a budget\\(\\) block"):
            pickle.dumps(unfitted)
        fitted = EDPRFClassifier(schema, epsilon=1.0, max_depth=2).fit(X, y)
        assert pickle.loads(pickle.dumps(fitted)).predict(X[:3]).shape == (3,)  # a fitted model is saved
    assert pickle.loads(pickle.dumps(unfitted)).epsilon == 1.0  # outside a block nothing is charged anyway


def test_a_fit_on_no_rows_says_its_model_is_noise(wall):
    from edprf_core import DPMarginalsClassifier, EDPRFWarning

    X, y, schema = wall
    for estimator in (EDPRFClassifier(schema, epsilon=1.0), DPMarginalsClassifier(schema, epsilon=1.0)):
        with pytest.warns(EDPRFWarning, match="fit on 0 rows: the model is noise alone"):
            estimator.fit(X.iloc[:0], y.iloc[:0])


def test_missing_columns_are_shown_beside_the_columns_x_has(wall):
    """ColumnTransformer's prefixed names (imp__US1) were refused as 24 missing columns, without the names given."""
    X, y, schema = wall
    with pytest.raises(DataValidationError, match=r"X has \['imp__US1', 'imp__US2'"):
        EDPRFClassifier(schema).fit(X.add_prefix("imp__"), y)


def test_read_csv_gives_numeric_classes_as_numbers(tmp_path):
    schema = example_schema("wall_robot_navigation")
    X, y, _ = load_embedded("wall_robot_navigation")
    path = tmp_path / "wall.csv"
    X[:20].assign(Class=y[:20].to_numpy()).to_csv(path, index=False)
    _, labels = read_csv(path, schema)
    assert list(labels) == list(y[:20])
    heart = example_schema("heart_disease_cleveland")
    rows = "63,1,1,145,233,1,2,150,0,2.3,3,0,6,0\n67,1,4,160,286,0,2,108,1,1.5,2,3,3,2\n"
    (tmp_path / "heart.csv").write_text(rows)
    _, labels = read_csv(tmp_path / "heart.csv", heart, header=False)
    assert labels.tolist() == [0, 2] and labels.dtype.kind == "i"
    _, text = read_csv(tmp_path / "heart.csv", heart, header=False, labels="text")
    assert text.tolist() == ["0", "2"]


@pytest.mark.parametrize("where", ["accountant", "budget block"])
def test_a_process_pool_is_told_why_before_its_own_error_and_nothing_is_charged(wall, caplog, where):
    """`cross_val_score(EDPRFClassifier(schema, accountant=acc), X, y, cv=3, n_jobs=2)` failed with joblib's
    'PicklingError: Could not pickle the task', the reason buried in a remote traceback (walkthrough).  The
    reason is now logged first, once; nothing is charged, and n_jobs=1 still charges each fold once."""
    import contextlib
    import logging
    import re
    from pickle import PicklingError

    from sklearn.model_selection import cross_val_score

    X, y, schema = wall
    given = BudgetAccountant(2.0)
    if where == "accountant":
        reason, block, estimator = "a BudgetAccountant cannot be pickled: ", contextlib.nullcontext(given), given
    else:
        reason, block, estimator = (
            "an unfitted EDPRFClassifier cannot be pickled inside a budget() block",
            budget(2.0),
            None,
        )
    with block as charged:
        clf = EDPRFClassifier(schema, epsilon=0.5, max_depth=2, accountant=estimator)
        with caplog.at_level(logging.ERROR), pytest.raises(PicklingError):
            cross_val_score(clf, X, y, cv=3, n_jobs=2)
        said = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
        assert len(said) == 1 and said[0].startswith(reason) and "n_jobs=1 (or a threading backend)" in said[0]
        assert charged.total == 0.0
        caplog.clear()
        with pytest.raises(TypeError, match=re.escape(reason.split(":")[0])):  # the main thread: the error says it
            pickle.dumps(clf)
        assert not caplog.records
        cross_val_score(clf, X, y, cv=3, n_jobs=1)
        assert charged.total == pytest.approx(1.5) and len(charged.spends) == 3


@pytest.mark.parametrize(
    "make",
    [lambda y: pd.concat([y, y], axis=1), lambda y: y.to_numpy().reshape(1, -1), lambda y: [[v, v] for v in y]],
    ids=["frame", "row", "list"],
)
def test_a_2d_y_is_refused_before_the_charge(wall, make):
    """Review K11: y of two columns was refused after the charge, "the error depends on the values"; its shape
    is layout."""
    X, y, schema = wall
    accountant = BudgetAccountant(5.0)
    with pytest.raises(DataValidationError, match=r"y must be 1-D \(one label per row\), got shape") as refused:
        EDPRFClassifier(schema, accountant=accountant).fit(X, make(y))
    assert "nothing was charged" in str(refused.value) and accountant.total == 0.0
