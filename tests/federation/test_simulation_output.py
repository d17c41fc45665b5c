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
