"""A simulated federation's model file says its row counts were the simulated parties' exact sizes.

`edprf simulate` printed "row counts were public here", but `edprf inspect`, `predict`, `evaluate` and
`export` on `<out>/global-model.edprf` printed only "... the global model is epsilon-DP per record ...",
although the manifest's consortium_rows and max_party_rows were exact, data-derived sizes.
"""

from __future__ import annotations

import json

import pytest

from edprf_fl.cli._main import main
from edprf_fl.simulation import prepare_workspace, simulate_federation
from protocol import ROW_COUNTS_KEY, SIMULATION_ROW_COUNTS_NOTE, load_classifier, load_global_model
from server import REPORT_FILE

from .test_simulation import _settings


@pytest.mark.slow
def test_a_simulated_model_states_its_row_count_assumption_wherever_its_guarantee_is_printed(tmp_path, capsys):
    prepared = prepare_workspace(
        _settings(parties=2, max_depth=2, evaluation_epsilon=0.0, seeded_noise=False), tmp_path
    )
    cfg = prepared.config
    assert cfg.sim_dir and cfg.consortium_rows > 0 and cfg.max_party_rows > 0  # from the split, as simulate sets them
    simulate_federation(cfg, 2)
    model = tmp_path / "global-model.edprf"
    view = load_global_model(model)
    assert view.manifest[ROW_COUNTS_KEY] == "simulation"
    assert view.manifest["parameters"]["consortium_rows"] == cfg.consortium_rows
    assert view.forest.dp and SIMULATION_ROW_COUNTS_NOTE in view.forest.guarantee()  # a DP run: the condition shows
    assert SIMULATION_ROW_COUNTS_NOTE in load_classifier(model).provenance.guarantee  # predict's and evaluate's lines
    assert SIMULATION_ROW_COUNTS_NOTE in json.loads((tmp_path / REPORT_FILE).read_text())["guarantee"]
    capsys.readouterr()
    assert main(["inspect", str(model)]) == 0
    printed = capsys.readouterr().out
    assert "guarantee: " in printed and "Simulation: this run read the exact row counts" in printed
