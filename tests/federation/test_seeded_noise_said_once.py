"""A seeded simulation says NOT differentially private once, not once per party per run (hospital-analyst
walkthrough: 72 timestamped lines for 16 runs buried the [k/16] progress lines; under Ray every party's
process printed it), and a sweep says it has started before its first run ends (nothing was printed for the
first ~30 s).

A simulated party logs its fit's seeded-noise warning at DEBUG: the run's guarantee (and `edprf simulate`'s
caveats, `edprf sweep`'s header) state it once for every party.  A deployed party logs it at WARNING: its own
operator's log is the place for it.
"""

from __future__ import annotations

import logging
from dataclasses import replace

import pytest

from client import Party, PartySetup, load_policy
from edprf_fl.cli._main import main
from edprf_fl.simulation import _sweep

from .test_party import _request, party_files  # noqa: F401 (a fixture)
from .test_sweep import TINY, _report

SEEDED = "with random_state set"


def _party_records(caplog, text: str) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "edprf.party" and text in r.getMessage()]


@pytest.mark.parametrize(("simulated", "level"), [(True, logging.DEBUG), (False, logging.WARNING)])
def test_a_simulated_party_logs_the_seeded_noise_warning_at_debug(party_files, caplog, simulated, level):  # noqa: F811
    setup, schema = party_files
    setup.policy_path.write_text(replace(load_policy(setup.policy_path), allow_seeded_randomness=True).to_toml())
    with caplog.at_level(logging.DEBUG, logger="edprf.party"):
        Party(replace(setup, simulated=simulated)).train(_request(schema, seed=7))
    [record] = _party_records(caplog, SEEDED)
    assert record.levelno == level and record.getMessage().startswith("training: EDPRFClassifier.fit with random")


def test_a_simulation_s_party_setup_says_it_is_simulated(tmp_path):
    node = {"partition-id": 0}
    assert PartySetup.from_configs(node, {"sim-dir": str(tmp_path)}).simulated
    deployed = {k: str(tmp_path / k) for k in ("data-path", "schema-path", "policy-path", "ledger-path")}
    assert not PartySetup.from_configs(deployed, {}).simulated


def test_a_sweep_says_it_has_started_before_its_first_run_ends(tmp_path, capsys, monkeypatch):
    def run(settings, out_dir, **_):
        out_dir.mkdir(parents=True)
        return _report(settings)

    monkeypatch.setattr(_sweep, "run_simulation", run)
    argv = ["sweep", "--epsilons", "1,2,4", "--seeds", "2", "--parties", "3", "--output", str(tmp_path / "s")]
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert "starting run 1 of 6; a line follows as each run finishes" in err
    assert err.index("starting run 1 of 6") < err.index("[1/6]")


@pytest.mark.slow
def test_simulate_with_seeded_noise_says_it_once(tmp_path, caplog, capsys):
    argv = ["simulate", "--seeded-noise", "--parties", "3", "--max-depth", "2", "--engine", "in-process"]
    assert main([*argv, "--output", str(tmp_path / "sim")]) == 0
    assert all(r.levelno < logging.WARNING for r in _party_records(caplog, SEEDED))  # was one line, filtered
    out = capsys.readouterr().out
    assert out.count("guarantee: NOT differentially private: ") == 1 and "fixed research seed" in out


@pytest.mark.slow
def test_a_real_sweep_says_it_once(tmp_path, caplog, capsys):
    argv = ["sweep", *TINY, "--output", str(tmp_path / "s")]
    argv[argv.index("--epsilons") + 1] = "1,2"
    assert main(argv) == 0
    assert all(r.levelno == logging.DEBUG for r in _party_records(caplog, SEEDED))  # was 4 warnings: 2 parties x 2
    assert "starting run 1 of 2" in capsys.readouterr().err
