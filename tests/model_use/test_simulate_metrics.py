"""The coordinator's central test metrics and summary lines use the shared clinical metrics (intervals, warning)."""

from __future__ import annotations

import numpy as np
import pytest

from edprf_core.metrics import clinical_report


def test_central_metrics_carry_intervals_and_the_one_class_warning():
    from server import RunReport, classification_metrics
    from server._summary import summary_lines

    classes = np.array(["no", "yes"], dtype=object)
    truth = np.array(["no"] * 80 + ["yes"] * 20, dtype=object)
    constant = np.tile([0.8, 0.2], (100, 1))
    metrics = classification_metrics(truth, constant, classes)
    report = clinical_report((truth == "yes").astype(int), constant, tuple(classes))
    assert metrics["accuracy"] == report.accuracy.value == 0.8
    assert metrics["accuracy_ci95"] == [report.accuracy.low, report.accuracy.high]
    for key in ("accuracy", "balanced_accuracy", "f1_macro", "roc_auc", "brier"):
        low, high = metrics[f"{key}_ci95"]
        assert low <= metrics[key] <= high, key
    assert metrics["warning"].startswith("WARNING: the model predicts class 'no' for 100 of 100 rows")
    lines = summary_lines(
        RunReport(run_id="r", parameters={}, schema_fingerprint="", central_evaluation=metrics, status="completed")
    )
    assert any(
        line.startswith("on the coordinator's test data (100 rows): accuracy 0.8000 (95% CI ")
        and "balanced accuracy 0.5000 (95% CI " in line
        for line in lines
    )
    assert metrics["warning"] in lines


def test_the_simulate_table_shows_intervals_and_the_warning():
    from edprf_fl.simulation import results_table

    fed = {
        "accuracy": 0.8,
        "accuracy_ci95": [0.71, 0.87],
        "balanced_accuracy": 0.5,
        "balanced_accuracy_ci95": [0.45, 0.55],
        "n": 100,
        "warning": "WARNING: constant",
    }
    table = results_table({"central_evaluation": fed, "n_trees": 3}, None)
    assert "| federated eDPRF | 3 |  | 0.8000 [0.710, 0.870] | 0.5000 [0.450, 0.550] | n/a | n/a | n/a |" in table
    assert "on 100 central test rows" in table and "federated eDPRF: WARNING: constant" in table


def test_the_simulate_table_names_the_marginals_part_and_the_pass():
    """An analyst reading "1 tree" for a model that is mostly one-way histograms would misread it."""
    from edprf_fl.simulation import results_table

    metrics = {"accuracy": 0.9, "accuracy_ci95": [0.88, 0.92], "n": 100}
    federated = {"central_evaluation": metrics, "n_trees": 5, "marginals": {"share": 0.9, "bins": 20}}
    baselines = {
        "central_edprf": metrics | {"n_trees": 1, "max_depth": 3, "marginals_share": 0.9, "residual_pass": True},
        "party_alone_median": metrics | {"n_trees": 1},
    }
    table = results_table(federated, baselines)
    assert "| federated eDPRF | 5 + marginals (90 % of rows) |  | 0.9000" in table
    assert "| central eDPRF (pooled rows; needs a trusted curator) | 1 + marginals (90 % of rows) + pass |  |" in table
    assert "| each party alone: median party | 1 |  |" in table
    assert "+ pass: one residual pass on those rows" in table
    plain = results_table(
        {"central_evaluation": metrics, "n_trees": 3}, {"party_alone_median": metrics | {"n_trees": 1}}
    )
    assert "marginals" not in plain


def test_central_metrics_on_integer_classes_that_are_not_indices():
    """clinical_report reads labels now: classes (1, 2) with a test set of class 2 only gave indices [1, 1, ...]
    that are also class values; they must stay indices (found merging the library walkthrough's fix, stop 44)."""
    from server import classification_metrics

    classes = np.array([1, 2])
    metrics = classification_metrics(np.array([2] * 10), np.tile([0.2, 0.8], (10, 1)), classes)
    assert metrics["accuracy"] == 1.0


def test_central_metrics_name_a_value_that_is_not_a_class():
    from server import classification_metrics

    with pytest.raises(ValueError, match=r"expected classes among \['no', 'yes'\], got 'maybe'"):
        classification_metrics(np.array(["no", "maybe"], dtype=object), np.tile([0.5, 0.5], (2, 1)), ["no", "yes"])
    for odd in (None, 1, float("nan")):  # mixed with text: named too (np.unique could not sort them)
        with pytest.raises(ValueError, match=r"expected classes among \['no', 'yes'\], got "):
            classification_metrics(
                np.array(["no", odd, "yes"], dtype=object), np.tile([0.5, 0.5], (3, 1)), ["no", "yes"]
            )


def test_binary_reports_use_the_binary_brier_of_the_last_class_and_multiclass_a_labelled_key():
    """Analyst review S2 #5: simulate's table and report.json showed the two-class sum (0-2) as "Brier", twice the
    binary Brier score ``evaluate --positive-class`` gives.  Two classes: ``brier`` is sklearn's binary Brier of the
    last declared class, named in ``brier_class``; more classes: only ``brier_multiclass`` (sum over classes)."""
    from sklearn.metrics import brier_score_loss

    from edprf_fl.simulation import results_table
    from server import classification_metrics

    rng = np.random.default_rng(0)
    classes = np.array(["no", "yes"], dtype=object)
    truth = np.where(rng.random(200) < 0.3, "yes", "no").astype(object)
    p1 = np.clip(0.3 + 0.4 * (truth == "yes") + rng.normal(0, 0.15, 200), 0.01, 0.99)
    metrics = classification_metrics(truth, np.c_[1 - p1, p1], classes)
    assert metrics["brier"] == pytest.approx(brier_score_loss(truth == "yes", p1))
    assert metrics["brier_class"] == "yes" and "brier_multiclass" not in metrics
    table = results_table({"central_evaluation": metrics, "n_trees": 3}, None)
    assert "| Brier (binary, class 'yes' (0-1)) |" in table
    assert f"{metrics['brier']:.4f} [" in table

    y3 = rng.integers(0, 3, 300)
    proba = rng.dirichlet(np.ones(3), 300)
    metrics3 = classification_metrics(y3, proba, np.array([0, 1, 2]))
    assert "brier" not in metrics3 and metrics3["brier_scale"] == "sum over classes, 0-2"
    assert metrics3["brier_multiclass"] == pytest.approx(((proba - np.eye(3)[y3]) ** 2).sum(axis=1).mean())
    table3 = results_table({"central_evaluation": metrics3, "n_trees": 3}, None)
    assert "| Brier (sum over classes, 0-2) |" in table3 and f"{metrics3['brier_multiclass']:.4f} [" in table3

    report = clinical_report((truth == "yes").astype(int), np.c_[1 - p1, p1], tuple(classes))  # no positive class
    assert report.brier.value == pytest.approx(metrics["brier"])
    assert "Brier score (yes)" in str(report) and report.as_dict()["brier_class"] == "yes"
    report3 = clinical_report(y3, proba, (0, 1, 2))
    assert "Brier score (sum over classes, 0-2)" in str(report3)
    assert "brier" not in report3.as_dict() and "brier_multiclass" in report3.as_dict()
