"""What `edprf simulate` prints and draws says what the run was: a seeded run is NOT differentially private from
the first line and in the plot's title (researcher's review: the caveat came only at line ~49)."""

from __future__ import annotations

import pytest

from edprf_core.forest import DRAFTED_REASON
from edprf_fl.simulation import SimulationReport, SimulationSettings, SimulationTimings, report_lines
from edprf_fl.simulation._plot import report_title


def _report(seeded: bool, guarantee: str = "epsilon = 1 ...") -> SimulationReport:
    """A completed run's report, without running one."""
    parties = [
        {"party_id": f"party-{i:04d}", "node_id": i, "status": "accepted", "release_bytes": 300, "n_trees": 1}
        for i in range(2)
    ]
    federated = {
        "status": "completed",
        "parties": parties,
        "n_trees": 2,
        "model_bytes": 900,
        "merge_seconds": 0.01,
        "guarantee": guarantee,
        "central_evaluation": {"accuracy": 0.8, "n": 100},
    }
    settings = SimulationSettings(parties=2, seeded_noise=seeded)
    return SimulationReport(settings, "wall", "IID", 2, federated, None, SimulationTimings(0.1, 0.2, 0.3))


@pytest.mark.parametrize(
    ("seeded", "guarantee", "mark"),
    [
        (True, "NOT differentially private: ...", "seeded research run: NOT differentially private"),
        (
            True,
            f"NOT differentially private: {DRAFTED_REASON}",
            "seeded research run: NOT differentially private, drafted schema",
        ),
        (False, f"NOT differentially private: {DRAFTED_REASON}", "drafted schema: NOT differentially private"),
    ],
)
def test_a_run_that_is_not_dp_says_so_in_its_first_line_and_its_plot_title(seeded, guarantee, mark):
    report = _report(seeded, guarantee)
    first = "\n".join(report_lines(report)).strip().splitlines()[0]
    assert first == f"{mark} (see the guarantee below)"
    title = report_title(report)
    assert title.splitlines()[0].startswith("Cost of federating: wall, 2 parties (IID)")
    assert title.splitlines()[1] == mark


def test_a_dp_run_has_no_mark():
    report = _report(False)
    assert "\n".join(report_lines(report)).strip().startswith("wall: 2 parties (IID)")
    assert "\n" not in report_title(report) and "NOT" not in report_title(report)


def test_the_json_option_says_it_writes_a_copy_of_simulation_json(capsys):
    from edprf_fl.cli._main import main

    with pytest.raises(SystemExit):
        main(["simulate", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--json JSON_PATH also write a copy of simulation.json" in text
    assert "the report as JSON" not in text


def test_without_matplotlib_the_output_says_why_there_is_no_plot(tmp_path, capsys, monkeypatch):
    """The deploy extra has no matplotlib: `edprf simulate` wrote no plot and said nothing about it."""
    from edprf_fl.cli._main import main
    from edprf_fl.simulation import NO_PLOT_TEXT, _plot

    monkeypatch.setattr(_plot, "_pyplot", lambda: None)
    argv = [
        "simulate",
        "--parties",
        "2",
        "--no-baselines",
        "--evaluation-epsilon",
        "0",
        "--output",
        str(tmp_path / "r"),
    ]
    assert main(argv) == 0
    assert f"\nplot: {NO_PLOT_TEXT}" in capsys.readouterr().out
    assert not (tmp_path / "r" / "accuracy.png").exists()


def test_the_report_plot_has_intervals_the_majority_line_over_accuracy_only_and_says_what_the_baselines_are(
    tmp_path, monkeypatch
):
    """Review rev-research R9: no intervals though the table had them; the majority-class accuracy drawn across the
    balanced-accuracy and AUC bars (chance 0.25 and 0.5 there); nothing said the DP baselines were seeded fits or
    that a baseline carried the residual pass; no time-series note."""
    pytest.importorskip("matplotlib")
    from matplotlib.axes import Axes

    from edprf_fl.simulation import plot_report

    bars, lines = [], []
    real_bar, real_hlines = Axes.bar, Axes.hlines
    monkeypatch.setattr(
        Axes, "bar", lambda self, x, h, *a, **k: bars.append((list(x), k)) or real_bar(self, x, h, *a, **k)
    )
    monkeypatch.setattr(
        Axes,
        "hlines",
        lambda self, y, lo, hi, **k: lines.append((list(y), list(lo), list(hi))) or real_hlines(self, y, lo, hi, **k),
    )
    report = _report(False)
    metrics = {"accuracy": 0.8, "accuracy_ci95": [0.7, 0.85], "roc_auc": 0.9, "roc_auc_ci95": [0.85, 0.95], "n": 100}
    federated = {**report.federated, "central_evaluation": metrics}
    baselines = {
        "central_edprf": {**metrics, "residual_pass": True, "n_trees": 1},
        "majority_class": {"accuracy": 0.4, "n_trees": 0},
    }
    report = SimulationReport(
        report.settings, "wall_robot_navigation", "IID", 2, federated, baselines, SimulationTimings(0.1, 0.2, 0.3)
    )
    assert plot_report(report, tmp_path / "accuracy.png") == tmp_path / "accuracy.png"
    accuracy = next(k for _, k in bars if k["label"] == "accuracy")
    assert [round(v, 6) for v in accuracy["yerr"][0]] == [0.1, 0.1] and [round(v, 6) for v in accuracy["yerr"][1]] == [
        0.05,
        0.05,
    ]
    assert len(lines) == 1 and set(lines[0][0]) == {0.4}  # the majority line, over the accuracy bars only
    accuracy_xs = next(x for x, k in bars if k["label"] == "accuracy")
    width = 0.8 / 3
    assert lines[0][1] == pytest.approx([x - width / 2 for x in accuracy_xs])
    title = report_title(report).splitlines()
    assert title[1] == "DP baselines: seeded research fits, the median of their noise draws, never released"
    assert title[2] == "note: rows of this dataset are a time series"
