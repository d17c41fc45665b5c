"""The ε accountant: exact sequential composition, caps enforced before training, clones share it."""

from __future__ import annotations

import copy
import pickle
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import FitFailedWarning
from sklearn.model_selection import GridSearchCV, cross_val_score

import edprf_core
import edprf_core.accounting
from edprf_core import BudgetAccountant, BudgetError, BudgetExceededError, DataValidationError, EDPRFClassifier, budget
from edprf_core.accounting import default_accountant, process_accountant, set_default_accountant
from tests.synthetic import make_data, make_schema

EPS = 0.3


@pytest.fixture(autouse=True)
def no_default_accountant():
    """Every test starts and ends without a process default."""
    previous = set_default_accountant(None)
    yield
    set_default_accountant(previous)


@pytest.fixture
def small():
    schema = make_schema()
    X, y = make_data(schema, 300, seed=0)
    return schema, X, y


def _clf(schema, **kw):
    return EDPRFClassifier(schema, **({"epsilon": EPS, "n_trees": 2, "max_depth": 2, "random_state": 0} | kw))


def test_exported():
    for name in ("BudgetAccountant", "BudgetExceededError", "budget"):
        assert name in edprf_core.__all__
    for name in (
        "BudgetAccountant",
        "BudgetExceededError",
        "budget",
        "default_accountant",
        "process_accountant",
        "set_default_accountant",
    ):
        assert name in edprf_core.accounting.__all__
    assert issubclass(BudgetExceededError, BudgetError)


def test_ten_tenths_reach_a_cap_of_one_exactly():
    acc = BudgetAccountant(1.0)
    for _ in range(10):
        acc.spend(0.1, "q")
    assert acc.total == 1.0 and acc.remaining == 0.0  # float sums would give 0.9999999999999999
    with pytest.raises(BudgetExceededError):
        acc.spend(1e-12, "one more")
    assert len(acc.spends) == 10 and acc.spends[0].epsilon == 0.1 and acc.spends[0].label == "q"


def test_refused_spend_records_nothing_and_says_what_is_left():
    acc = BudgetAccountant(1.0)
    acc.spend(0.7, "first")
    with pytest.raises(BudgetExceededError, match=r"fit needs ε=0\.5, the accountant has 0\.3 of 1\.0 left"):
        acc.spend(0.5, "fit")
    assert acc.total == 0.7 and acc.remaining == pytest.approx(0.3) and len(acc.spends) == 1
    acc.spend(0.3, "exactly the rest")
    assert acc.remaining == 0.0


def test_no_cap_records_without_limit():
    acc = BudgetAccountant()
    for _ in range(1000):
        acc.spend(5.0)
    assert acc.total == 5000.0 and acc.remaining == float("inf")


@pytest.mark.parametrize("bad", [0, 0.0, -0.1, float("nan"), float("inf"), True, "1.0", None])
def test_invalid_epsilon_is_refused(bad):
    with pytest.raises(BudgetError):
        BudgetAccountant(1.0).spend(bad)


@pytest.mark.parametrize("bad", [0, -1.0, float("nan"), float("inf"), True, "2"])
def test_invalid_cap_is_refused(bad):
    with pytest.raises(BudgetError):
        BudgetAccountant(bad)


def test_numpy_floats_are_read_by_their_decimal_value():
    acc = BudgetAccountant(0.3)
    for _ in range(3):
        acc.spend(np.float64(0.1))
    assert acc.remaining == 0.0


def test_copies_are_the_accountant_and_pickling_is_refused():
    acc = BudgetAccountant(2.0)
    assert copy.copy(acc) is acc and copy.deepcopy(acc) is acc
    assert copy.deepcopy({"a": [acc]})["a"][0] is acc
    with pytest.raises(TypeError, match="n_jobs=1"):
        pickle.dumps(acc)


def test_concurrent_spends_never_exceed_the_cap():
    acc = BudgetAccountant(2.0)

    def one(_):
        try:
            acc.spend(0.1)
            return True
        except BudgetExceededError:
            return False

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(one, range(50)))
    assert sum(results) == 20 and acc.total == 2.0


# ----------------------------------------------------------------- the estimator
def test_fit_charges_epsilon_and_refuses_before_training(small):
    schema, X, y = small
    acc = BudgetAccountant(2 * EPS)
    clf = _clf(schema, accountant=acc)
    clf.fit(X, y)
    clf.fit(X, y)  # repeated fit on the same data: sequential composition
    assert acc.total == pytest.approx(2 * EPS) and len(acc.spends) == 2
    assert "EDPRFClassifier.fit" in acc.spends[0].label
    fresh = _clf(schema, accountant=acc)
    with pytest.raises(BudgetExceededError, match="nothing was trained"):
        fresh.fit(X, y)
    assert not hasattr(fresh, "forest_") and len(acc.spends) == 2


def test_accountant_survives_clone_and_get_params(small):
    schema, _, _ = small
    acc = BudgetAccountant(1.0)
    clf = _clf(schema, accountant=acc)
    assert clone(clf).accountant is acc and clf.get_params()["accountant"] is acc


def test_cross_val_score_charges_k_times_epsilon(small):
    schema, X, y = small
    acc = BudgetAccountant()
    scores = cross_val_score(_clf(schema, accountant=acc), X, y, cv=5)
    assert scores.shape == (5,) and acc.total == pytest.approx(5 * EPS) and len(acc.spends) == 5


def test_cap_of_three_epsilon_stops_the_fourth_fold(small):
    schema, X, y = small
    acc = BudgetAccountant(0.9)  # 3 * 0.3 in floats is 0.8999999999999999, which would stop the third fold
    with pytest.raises(BudgetExceededError):
        cross_val_score(_clf(schema, accountant=acc), X, y, cv=5, error_score="raise")
    assert len(acc.spends) == 3 and acc.total == pytest.approx(3 * EPS)
    # with scikit-learn's default error_score the refused folds score NaN, and still nothing more is spent
    acc2 = BudgetAccountant(0.9)
    with pytest.warns(FitFailedWarning, match="BudgetExceededError"):
        scores = cross_val_score(_clf(schema, accountant=acc2), X, y, cv=5)
    assert np.isfinite(scores).sum() == 3 and len(acc2.spends) == 3


def test_grid_search_charges_candidates_times_folds_plus_refit(small):
    schema, X, y = small
    acc = BudgetAccountant()
    with pytest.warns(edprf_core.PrivacyLeakWarning, match="chosen by a search"):  # the refit (review K7)
        GridSearchCV(_clf(schema, accountant=acc), {"max_depth": [1, 2]}, cv=3).fit(X, y)
    assert len(acc.spends) == 2 * 3 + 1 and acc.total == pytest.approx(7 * EPS)


def test_layout_errors_cost_nothing_but_value_errors_are_charged(small):
    schema, X, y = small
    acc = BudgetAccountant()
    with pytest.raises(DataValidationError, match="missing columns"):
        _clf(schema, accountant=acc).fit(X.drop(columns="x1"), y)
    assert acc.total == 0  # decided from the column names alone
    bad = X.copy()
    bad.loc[5, "c0"] = "undeclared"
    with pytest.raises(DataValidationError, match="undeclared"):
        _clf(schema, accountant=acc).fit(bad, y)
    assert acc.total == pytest.approx(EPS)  # the refusal depends on a value: it counts


def test_no_accountant_no_default_means_no_accounting(small):
    schema, X, y = small
    assert default_accountant() is None
    _clf(schema).fit(X, y)  # nothing to charge, nothing raised


def _recorded_since(before: int) -> list[float]:
    return [spend.epsilon for spend in process_accountant().spends[before:]]


def test_the_process_record_holds_every_fit_once_whatever_was_charged(small):
    """Review rev-sk K6: with accountant=None outside a block nothing was charged, and nothing said afterwards what
    the process had fitted; the process record holds each fit once: none charged, an own accountant, a block, the
    record itself given as the accountant."""
    schema, X, y = small
    before = len(process_accountant().spends)
    _clf(schema).fit(X, y)  # nothing charged
    own = BudgetAccountant()
    _clf(schema, accountant=own, epsilon=0.5).fit(X, y)
    with budget(None) as block:
        _clf(schema, epsilon=0.25).fit(X, y)
    _clf(schema, accountant=process_accountant(), epsilon=0.125).fit(X, y)
    assert _recorded_since(before) == [EPS, 0.5, 0.25, 0.125]
    assert own.total == 0.5 and block.total == 0.25
    assert (
        process_accountant().epsilon_cap is None and process_accountant() is edprf_core.accounting.process_accountant()
    )


def test_the_process_record_leaves_out_a_fit_its_cap_refused(small):
    schema, X, y = small
    before = len(process_accountant().spends)
    with budget(EPS) as block, pytest.raises(BudgetExceededError):
        _clf(schema).fit(X, y)
        _clf(schema).fit(X, y)  # over the block's cap: refused before training, so not recorded
    assert _recorded_since(before) == [EPS] and block.total == EPS


def test_budget_context_installs_and_restores_the_default(small):
    schema, X, y = small
    outer = BudgetAccountant()
    set_default_accountant(outer)
    with budget(2 * EPS) as acc:
        assert default_accountant() is acc
        _clf(schema).fit(X, y)
        cross = clone(_clf(schema))
        cross.fit(X, y)
        with pytest.raises(BudgetExceededError):
            _clf(schema).fit(X, y)
    assert default_accountant() is outer
    # the block's fits are inside the outer accountant's scope too: its cap must hold for them (sequential
    # composition); only the refused fit is in neither
    assert acc.total == pytest.approx(2 * EPS) and outer.total == pytest.approx(2 * EPS)
    _clf(schema).fit(X, y)
    assert outer.total == pytest.approx(3 * EPS)


def test_explicit_accountant_takes_precedence_over_the_default(small):
    schema, X, y = small
    mine = BudgetAccountant()
    with budget(None) as default:
        _clf(schema, accountant=mine).fit(X, y)
    assert mine.total == pytest.approx(EPS) and default.total == 0


def test_default_must_be_an_accountant():
    with pytest.raises(TypeError):
        set_default_accountant(1.0)
    with pytest.raises(TypeError):
        edprf_core.EDPRFClassifier(make_schema(), accountant=3.0).fit(*make_data(make_schema(), 20, seed=0))


def test_a_budget_block_while_another_threads_block_is_open_is_refused(small):
    """Review K4: thread A's exit restored "no default" while B's block was open, and B's 2 fits charged nothing."""
    import threading

    schema, X, y = small
    opened, release = threading.Event(), threading.Event()

    def hold():
        with budget(10.0):
            opened.set()
            release.wait(30)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert opened.wait(30)
        with pytest.raises(BudgetError, match="one budget block at a time per process"), budget(10.0):
            pass  # pragma: no cover - refused on entry
    finally:
        release.set()
        holder.join(30)
    with budget(10.0) as outer:  # free again once the other thread's block is closed
        with budget(5.0) as inner:  # nested in one thread: still works, both charged
            _clf(schema).fit(X, y)
        assert default_accountant() is outer
    assert (outer.total, inner.total) == (EPS, EPS) and default_accountant() is None


def test_a_fitted_estimator_pickled_in_a_block_is_not_refit_uncharged(small):
    """Review K3: a fitted estimator pickled inside budget() and refit in worker processes was never charged."""
    schema, X, y = small
    with budget(10.0) as acc:
        fitted = _clf(schema).fit(X, y)
        shipped = pickle.dumps(fitted)
    copy_ = pickle.loads(shipped)  # as a worker process holds it: no block open
    assert np.array_equal(copy_.predict(X), fitted.predict(X))  # predicting needs no block
    with pytest.raises(BudgetError, match="pickled inside a budget\\(\\) block and no budget\\(\\) block is open"):
        copy_.fit(X, y)
    with budget(10.0) as here:  # a block open in this process: charged there
        copy_.fit(X, y)
    assert (acc.total, here.total) == (EPS, EPS)
    saved = pickle.loads(pickle.dumps(fitted))  # saved outside any block: unchanged
    saved.fit(X, y)


def test_a_marked_copy_fits_when_charged_and_a_charged_refit_drops_the_mark(small):
    """Review rev-s65 F3: the mark refused fits that are charged (an accountant of the copy's own) and stayed after a
    charged refit, refusing every later fit outside a block."""
    schema, X, y = small
    with budget(10.0):
        shipped = pickle.dumps(_clf(schema).fit(X, y))
    own = BudgetAccountant(5.0)
    pickle.loads(shipped).set_params(accountant=own).fit(X, y)  # charged to its own accountant: allowed
    assert own.total == EPS
    copy_ = pickle.loads(shipped)
    with budget(10.0) as here:
        copy_.fit(X, y)  # charged here: the mark is spent
    copy_.fit(X, y)  # a later fit outside any block is any estimator's uncharged fit
    assert here.total == EPS


def test_a_marginals_model_pickled_in_a_block_is_refused_too(small):
    from edprf_core import DPMarginalsClassifier

    schema, X, y = small
    with budget(10.0):
        shipped = pickle.dumps(DPMarginalsClassifier(schema, n_bins=5, random_state=0).fit(X, y))
    with pytest.raises(BudgetError, match="DPMarginalsClassifier was pickled inside a budget"):
        pickle.loads(shipped).fit(X, y)
