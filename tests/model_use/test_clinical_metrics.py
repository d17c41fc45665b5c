"""edprf_core._clinical_metrics and _metric_intervals: values agree with scikit-learn, intervals with their definitions and coverage."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import t as student_t
from sklearn.metrics import (
    balanced_accuracy_score,
    brier_score_loss,
    confusion_matrix,
    f1_score,
    roc_auc_score,
)

from edprf_core._clinical_metrics import ONE_CLASS_SHARE, one_class_warning
from edprf_core._metric_intervals import Z95, _balanced_accuracy, delong_auc, wilson_interval
from edprf_core.metrics import clinical_report, macro_f1_estimate


def test_wilson_interval_matches_its_closed_form_and_known_values():
    # 0 of 10: the upper bound is z^2 / (n + z^2) exactly
    e = wilson_interval(0, 10)
    assert e.value == 0 and e.low == 0
    assert e.high == pytest.approx(Z95**2 / (10 + Z95**2), rel=1e-12)
    half = wilson_interval(5, 10)
    assert (half.low, half.high) == pytest.approx((0.2366, 0.7634), abs=1e-4)
    assert math.isnan(wilson_interval(0, 0).value)


def test_wilson_interval_covers_about_95_percent():
    rng = np.random.default_rng(0)
    p, n, runs = 0.1, 60, 4000
    hits = rng.binomial(n, p, size=runs)
    covered = sum(wilson_interval(int(h), n).low <= p <= wilson_interval(int(h), n).high for h in hits)
    assert 0.93 <= covered / runs <= 0.975


def _pairwise_delong(pos: np.ndarray, neg: np.ndarray) -> tuple[float, float]:
    """DeLong's AUC and standard error from the O(m n) kernel (the definition)."""
    kernel = (pos[:, None] > neg[None, :]) + 0.5 * (pos[:, None] == neg[None, :])
    v10, v01 = kernel.mean(axis=1), kernel.mean(axis=0)
    return kernel.mean(), math.sqrt(v10.var(ddof=1) / pos.size + v01.var(ddof=1) / neg.size)


def test_delong_auc_equals_sklearn_and_the_pairwise_definition_with_ties():
    rng = np.random.default_rng(1)
    y = rng.random(300) < 0.3
    score = np.round(rng.random(300) + 0.4 * y, 1)  # many ties
    e = delong_auc(y, score)
    assert e.value == pytest.approx(roc_auc_score(y, score), abs=1e-12)
    auc, se = _pairwise_delong(score[y], score[~y])
    assert e.value == pytest.approx(auc, abs=1e-12)
    # the interval on the logit scale, Student's t at (smaller class - 1) degrees of freedom
    half = student_t.ppf(0.975, min(y.sum(), (~y).sum()) - 1) * se / (auc * (1 - auc))
    logit = math.log(auc / (1 - auc))
    expected = (1 / (1 + math.exp(-(logit - half))), 1 / (1 + math.exp(-(logit + half))))
    assert (e.low, e.high) == pytest.approx(expected, abs=1e-12)
    assert math.isnan(delong_auc(np.zeros(5, bool), np.arange(5.0)).value)  # no positive row: undefined


def test_binary_report_matches_sklearn_at_the_threshold():
    rng = np.random.default_rng(2)
    y = (rng.random(500) < 0.25).astype(int)
    p1 = np.clip(0.25 + 0.3 * (y - 0.25) + rng.normal(0, 0.2, 500), 0, 1)
    proba = np.column_stack([1 - p1, p1])
    r = clinical_report(y, proba, ("neg", "pos"), positive=1, threshold=0.3)
    decided = (p1 >= 0.3).astype(int)
    assert (r.confusion == confusion_matrix(y, decided, labels=[0, 1])).all()
    tn, fp, fn, tp = r.confusion.ravel()
    pos = r.per_class[1]
    assert pos.sensitivity.value == tp / (tp + fn) and pos.specificity.value == tn / (tn + fp)
    assert pos.ppv.value == tp / (tp + fp) and pos.npv.value == tn / (tn + fn)
    assert r.balanced_accuracy.value == pytest.approx(balanced_accuracy_score(y, decided))
    assert r.roc_auc.value == pytest.approx(roc_auc_score(y, p1))
    assert r.brier.value == pytest.approx(brier_score_loss(y, p1))
    for e in (r.accuracy, r.balanced_accuracy, r.roc_auc, r.brier, pos.sensitivity, pos.ppv):
        assert e.low <= e.value <= e.high
    # the threshold table's row at the decision threshold is the decision's own counts
    row = next(t for t in pos.thresholds if t.threshold == 0.3)
    assert row.flagged == tp + fp and row.sensitivity == pos.sensitivity
    # calibration bins partition the rows and their mean predictions lie in the bins
    assert sum(b.n for b in pos.calibration) == 500
    assert all(b.low <= b.mean_predicted <= b.high for b in pos.calibration if b.n)


def test_multiclass_report_per_class_and_macro_auc():
    rng = np.random.default_rng(3)
    y = rng.integers(0, 3, 400)
    logits = rng.normal(size=(400, 3)) + 1.5 * np.eye(3)[y]
    proba = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    r = clinical_report(y, proba, ("a", "b", "c"))
    pred = proba.argmax(axis=1)
    assert (r.predicted == pred).all()
    assert r.accuracy.value == pytest.approx((pred == y).mean())
    assert r.balanced_accuracy.value == pytest.approx(balanced_accuracy_score(y, pred))
    assert r.roc_auc.value == pytest.approx(roc_auc_score(y, proba, multi_class="ovr", average="macro"))
    assert r.brier.value == pytest.approx(((proba - np.eye(3)[y]) ** 2).sum(axis=1).mean())
    for k, c in enumerate(r.per_class):
        assert c.roc_auc.value == pytest.approx(roc_auc_score(y == k, proba[:, k]))
    f1 = macro_f1_estimate(y, pred, 3)
    assert f1.value == pytest.approx(f1_score(y, pred, average="macro"))
    assert f1.low <= f1.value <= f1.high


def test_balanced_accuracy_interval_covers_about_95_percent():
    rng = np.random.default_rng(4)
    recalls, n = np.array([0.9, 0.6]), np.array([40, 160])
    truth = recalls.mean()
    covered = 0
    for _ in range(2000):
        e = _balanced_accuracy(rng.binomial(n, recalls), n)
        covered += e.low <= truth <= e.high
    assert 0.93 <= covered / 2000 <= 0.98


def test_balanced_accuracy_interval_holds_the_mean_recall_of_a_constant_model():
    """Five classes, four small, a model predicting the large one: recalls 1, 0, 0, 0, 0, balanced accuracy 0.2.
    The normal interval around Agresti-Coull-adjusted recalls read [0.242, 0.443] (walkthrough, heart disease)."""
    e = _balanced_accuracy(np.array([33, 0, 0, 0, 0]), np.array([33, 11, 7, 7, 3]))
    assert e.value == pytest.approx(0.2) and e.low <= 0.2 <= e.high
    assert e.high - e.value > e.value - e.low  # asymmetric: it cannot go far below 0.2
    rng = np.random.default_rng(5)
    for _ in range(500):
        n = rng.integers(1, 30, rng.integers(2, 6))
        e = _balanced_accuracy(rng.binomial(n, rng.uniform(0, 1, n.size)), n)
        assert 0.0 <= e.low <= e.value <= e.high <= 1.0


@pytest.mark.parametrize(
    ("classes", "shown"), [(np.array([0, 1]), "class 0 "), (np.array(["no", "yes"]), "class 'no' ")]
)
def test_one_class_warning_names_the_class_as_declared(classes, shown):
    """Classes held in a numpy array were shown as ``np.int64(0)`` and ``np.str_('no')``."""
    warning = one_class_warning(np.zeros(10, dtype=int), classes)
    assert shown in warning and "np." not in warning


def test_one_class_warning_fires_at_the_share_and_not_below():
    n = 1000
    almost = np.zeros(n, dtype=int)
    almost[: int(n * (1 - ONE_CLASS_SHARE))] = 1
    assert "WARNING" in one_class_warning(almost, ("no", "yes")) and "'no'" in one_class_warning(almost, ("no", "yes"))
    almost[: int(n * (1 - ONE_CLASS_SHARE)) + 1] = 1
    assert one_class_warning(almost, ("no", "yes")) == ""
    proba = np.tile([0.9, 0.1], (50, 1))
    assert "WARNING" in clinical_report(np.r_[np.zeros(40, int), np.ones(10, int)], proba, ("no", "yes")).warning


def test_report_refuses_inconsistent_inputs():
    with pytest.raises(ValueError, match="proba: expected shape"):
        clinical_report([0, 1], np.ones((3, 2)) / 2, (0, 1))
    with pytest.raises(ValueError, match="class indices"):
        clinical_report([0, 2], np.ones((2, 2)) / 2, (0, 1))
    with pytest.raises(ValueError, match="threshold"):
        clinical_report([0, 1], np.ones((2, 2)) / 2, (0, 1), positive=1, threshold=1.5)


@pytest.mark.parametrize("bins", [0, -1, 10**8, True, 2.5])
def test_an_absurd_number_of_calibration_bins_is_refused_before_anything_is_allocated(bins):
    """10**8 bins allocated three 800 MB arrays per class (numpy's _ArrayMemoryError, or the OOM killer)."""
    with pytest.raises(ValueError, match=r"n_calibration_bins: expected an integer in \[1, 1000\], got "):
        clinical_report([0, 1], np.ones((2, 2)) / 2, (0, 1), n_calibration_bins=bins)
    assert len(clinical_report([0, 1], np.ones((2, 2)) / 2, (0, 1), n_calibration_bins=1000).per_class[0].calibration)


def test_a_class_the_model_never_predicts_is_named():
    """Four classes, a model that predicts only two of them (no single class above 99 %): the one-class warning is
    silent, and the report names the two classes whose sensitivity is 0 (the walkthrough's evaluate on wall robot
    said nothing).  A class absent from the rows is not named; a model predicting every class present warns not."""
    classes = ("a", "b", "c", "d")
    y = np.array([0] * 40 + [1] * 30 + [2] * 20 + [3] * 10)
    proba = np.zeros((100, 4))
    proba[:50, 0] = proba[50:, 1] = 1.0  # predicts a or b only
    report = clinical_report(y, proba, classes, indices=True)
    assert report.warning == ""  # the one-class warning: not a constant model
    assert report.unpredicted == (
        "WARNING: the model predicts none of these rows' class 'c' (20 rows), 'd' (10 rows): its sensitivity for "
        "them is 0, whatever the accuracy"
    )
    assert report.as_dict()["unpredicted"] == report.unpredicted
    from edprf_fl.cli._evaluate_cmd import format_report

    assert report.unpredicted in format_report(report)  # edprf evaluate prints it in its warning box
    # the library prints what edprf evaluate prints (the walkthrough found the formatter private to the CLI)
    assert str(report) == "\n".join(report.text_lines()).strip("\n") and "summary (95% intervals):" in str(report)
    assert [line for line in format_report(report) if "--json" not in line] == report.text_lines()
    assert clinical_report(y[:70], proba[:70], classes, indices=True).unpredicted == ""  # c and d absent
    proba[90:, :] = [0, 0, 0.2, 0.8]
    proba[70:90, :] = [0, 0, 0.9, 0.1]
    assert clinical_report(y, proba, classes, indices=True).unpredicted == ""
    proba[:] = [1, 0, 0, 0]  # a constant: the one-class warning says it, the other stays silent
    constant = clinical_report(y, proba, classes, indices=True)
    assert constant.warning.startswith("WARNING: the model predicts class 'a' for 100") and constant.unpredicted == ""


def test_a_class_of_one_row_the_model_never_predicts_is_one_row_not_one_rows():
    from edprf_core._clinical_metrics import unpredicted_class_warning

    warning = unpredicted_class_warning([0, 0, 1, 2, 2], [0, 0, 0, 0, 0], ("a", "b", "c"))
    assert "class 'b' (1 row), 'c' (2 rows): its sensitivity for them is 0" in warning


def test_report_notes_approximate_intervals_when_the_smaller_class_has_fewer_than_30_rows():
    """The note appears with 29 positive rows (text and JSON) and not with 30."""
    from edprf_core._metric_intervals import FEW_EVENTS

    rng = np.random.default_rng(3)
    for positives, noted in ((FEW_EVENTS - 1, True), (FEW_EVENTS, False)):
        y = np.r_[np.ones(positives, int), np.zeros(200, int)]
        p1 = np.clip(0.3 * y + rng.random(y.size) * 0.7, 0, 1)
        r = clinical_report(y, np.c_[1 - p1, p1], [0, 1], positive=1)
        assert bool(r.interval_note) is noted
        assert ("interval approximate: few events" in str(r)) is noted
        assert bool(r.as_dict()["interval_note"]) is noted


def test_calibration_slope_and_intercept_are_the_logistic_recalibration_fits():
    """Risks p = sigmoid(x) on rows whose true log-odds are 0.3 + 1.2 x (underconfident: slope 1.2).  The slope
    equals scikit-learn's unpenalised logistic regression of y on logit(p), the intercept the offset fit with slope
    1 (checked against its score equation: mean of y equals mean of sigmoid(a + logit p)); the Wald intervals of
    n = 20,000 rows hold the true slope 1.2, and a calibrated model's intervals hold 1 and 0."""
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(11)
    x = rng.normal(-2.0, 1.5, 20000)
    y = (rng.random(x.size) < 1 / (1 + np.exp(-(0.3 + 1.2 * x)))).astype(int)
    p1 = 1 / (1 + np.exp(-x))
    r = clinical_report(y, np.c_[1 - p1, p1], [0, 1])
    reference = LogisticRegression(C=np.inf, tol=1e-10, max_iter=1000).fit(x[:, None], y)
    assert r.calibration_slope.value == pytest.approx(reference.coef_[0, 0], abs=1e-4)
    assert r.calibration_slope.low <= 1.2 <= r.calibration_slope.high and r.calibration_slope.low > 1.0
    a = r.calibration_intercept.value
    assert np.mean(1 / (1 + np.exp(-(a + x)))) == pytest.approx(y.mean(), abs=1e-8)
    d = r.as_dict()
    assert d["calibration_slope"]["value"] == r.calibration_slope.value and "calibration_intercept" in d
    assert "calibration slope (1; 1 = calibrated, > 1: probabilities too moderate, < 1: too extreme) | 1." in str(r)

    calibrated = (rng.random(x.size) < p1).astype(int)
    c = clinical_report(calibrated, np.c_[1 - p1, p1], [0, 1])
    assert c.calibration_slope.low <= 1.0 <= c.calibration_slope.high
    assert c.calibration_intercept.low <= 0.0 <= c.calibration_intercept.high
    assert clinical_report(np.arange(30) % 3, np.full((30, 3), 1 / 3), [0, 1, 2]).calibration_slope is None


def test_a_brier_interval_stays_on_its_scale():
    """A binary Brier score lies in [0, 1]: its interval too, however few and wrong the rows (the log-scale upper
    end of 3 rows with squared errors 0.01, 0.01 and 0.81 passes 1)."""
    from edprf_core._metric_intervals import brier_estimate

    errors = np.array([0.01, 0.01, 0.81])
    assert brier_estimate(errors, maximum=1.0).high <= 1.0 < brier_estimate(errors).high
    assert brier_estimate(errors[:1], maximum=1.0).high == 1.0


def test_the_auc_of_constant_scores_gets_no_exact_bound_label():
    """Every score the same: AUC 1/2 and DeLong's SE 0; the interval is the widest, said so, never the bound
    meant for an AUC of 1 (which printed [0.5, 1.0] "AUC at 1: exact bound" for a majority-class row)."""

    positive = np.array([True] * 10 + [False] * 30)
    estimate = delong_auc(positive, np.full(positive.size, 0.3))
    assert estimate.value == 0.5 and (estimate.low, estimate.high) == (0.0, 1.0)
    assert "AUC at 1" not in estimate.method and "no spread" in estimate.method


def test_balanced_accuracy_of_rows_missing_a_class_says_over_which_classes():
    """The numbers audit: on rows of one class, "balanced accuracy 0.980" was that class's recall (the specificity)
    with no word; the method now says the mean is over the classes present."""
    e = _balanced_accuracy(np.array([196, 0]), np.array([200, 0]))
    assert e.value == pytest.approx(0.98) and "over the 1 of 2 classes present among the rows" in e.method
    both = _balanced_accuracy(np.array([196, 5]), np.array([200, 10]))
    assert both.method == "mover-wilson mean"
    report = clinical_report(np.zeros(200, dtype=int), np.c_[np.full(200, 0.9), np.full(200, 0.1)], [0, 1])
    assert "over the 1 of 2 classes present" in report.balanced_accuracy.method


def test_too_few_events_give_no_calibration_numbers_and_one_class_is_not_a_constant_model():
    """Analyst review F11: from one event the report printed a calibration intercept (0.543) and cited coverage
    measured at 10-30 events; an extract without events got "the model ... is (nearly) a constant".  Now: below
    10 events "too few events to estimate" and n/a; one class present says so instead."""
    from edprf_core._metric_intervals import TOO_FEW_EVENTS

    rng = np.random.default_rng(0)
    p1 = rng.uniform(0.0, 0.3, 30)
    y = np.zeros(30, dtype=int)
    y[0] = 1
    r = clinical_report(y, np.c_[1 - p1, p1], [0, 1], positive=1, indices=True)
    assert np.isnan(r.calibration_intercept.value) and np.isnan(r.calibration_slope.value)
    text = str(r)
    assert "too few events to estimate: the smaller class has 1 row" in text and "0.90-0.95" not in text
    assert f"too few events to estimate (fewer than {TOO_FEW_EVENTS})" in text
    y[:TOO_FEW_EVENTS] = 1
    assert np.isfinite(
        clinical_report(y, np.c_[1 - p1, p1], [0, 1], positive=1, indices=True).calibration_intercept.value
    )
    none = clinical_report(np.zeros(30, dtype=int), np.c_[1 - p1, p1], [0, 1], positive=1, indices=True)
    assert none.warning.startswith("WARNING: only class 0 occurs among these 30 rows")
    assert "constant" not in none.warning


def test_the_slope_row_says_its_direction_and_ppv_npv_their_prevalence():
    """Analyst review F12: "calibration slope ... (1 = calibrated)" left the direction to the docs, and nothing said
    PPV and NPV hold at the extract's prevalence.  Both rows say it now (prevalence 20.0% here: 20 of 100)."""
    rng = np.random.default_rng(1)
    p1 = rng.uniform(0.0, 1.0, 100)
    y = (np.arange(100) < 20).astype(int)
    text = str(clinical_report(y, np.c_[1 - p1, p1], [0, 1], positive=1, indices=True))
    assert "calibration slope (1; 1 = calibrated, > 1: probabilities too moderate, < 1: too extreme)" in text
    assert "| PPV (1; at this extract's prevalence 20.0%) |" in text
    assert "| NPV (1; at this extract's prevalence 20.0%) |" in text
