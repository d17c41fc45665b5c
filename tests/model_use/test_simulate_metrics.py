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
