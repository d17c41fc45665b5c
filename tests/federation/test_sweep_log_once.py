"""edprf sweep and edprf simulate show the parties' seeded-noise warning once, not once per party per run
(hospital-analyst walkthrough: 72 timestamped lines for 16 runs buried the [k/16] progress lines), and a
sweep says it has started before its first run ends (nothing was printed for the first ~30 s)."""

from __future__ import annotations

import logging

import pytest

from edprf_core import SeededNoiseWarning
from edprf_fl.cli._main import main
from edprf_fl.simulation import _sweep

from .test_sweep import TINY, _report

SEEDED = "EDPRFClassifier.fit with random_state set: NOT differentially private"


def _party_lines(caplog, text: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "edprf.party" and text in r.getMessage()]


@pytest.fixture
def logging_runs(monkeypatch):
    """Runs that log what simulated parties log (the seeded-noise warning of each party's fit, and another
    warning), without running a federation."""
    party_log = logging.getLogger("edprf.party")

    def run(settings, out_dir, **_):
        for _party in range(settings.parties):
            party_log.warning("training: %s", SeededNoiseWarning(SEEDED))
            party_log.warning("local data: %s; left out", "line 7: 3 fields, expected 25")
        out_dir.mkdir(parents=True)
        return _report(settings)

    monkeypatch.setattr(_sweep, "run_simulation", run)


def test_a_sweep_shows_the_seeded_noise_warning_once_and_every_other_warning(tmp_path, caplog, capsys, logging_runs):
    argv = ["sweep", "--epsilons", "1,2,4", "--seeds", "2", "--parties", "3", "--output", str(tmp_path / "s")]
    assert main(argv) == 0
    assert len(_party_lines(caplog, "random_state set")) == 1  # was 18: 3 parties x 6 runs
    assert len(_party_lines(caplog, "local data")) == 18  # any other warning: untouched
    err = capsys.readouterr().err
    assert "starting run 1 of 6; a line follows as each run finishes" in err
    assert err.index("starting run 1 of 6") < err.index("[1/6]")
    # after the sweep the parties' logger is as it was
    logging.getLogger("edprf.party").warning("training: %s", SeededNoiseWarning(SEEDED))
    assert len(_party_lines(caplog, "random_state set")) == 2
    assert not logging.getLogger("edprf.party").filters


@pytest.mark.slow
def test_simulate_with_seeded_noise_shows_it_once_per_run(tmp_path, caplog):
    argv = ["simulate", "--seeded-noise", "--parties", "3", "--max-depth", "2", "--engine", "in-process"]
    assert main([*argv, "--output", str(tmp_path / "sim")]) == 0
    assert len(_party_lines(caplog, "random_state set")) == 1


@pytest.mark.slow
def test_a_real_sweep_shows_it_once(tmp_path, caplog, capsys):
    argv = ["sweep", *TINY, "--output", str(tmp_path / "s")]
    argv[argv.index("--epsilons") + 1] = "1,2"
    assert main(argv) == 0
    assert len(_party_lines(caplog, "random_state set")) == 1  # was 4: 2 parties x 2 runs
    assert "starting run 1 of 2" in capsys.readouterr().err
