"""The simulation's typed surface: validated settings, the command's defaults, the report's JSON layout, the sweep grid."""

from __future__ import annotations

import csv
import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest

from edprf_fl import Provenance
from edprf_fl.cli._main import build_parser, main
from edprf_fl.simulation import (
    SettingsError,
    SimulationReport,
    SimulationSettings,
    SimulationTimings,
    simulation_caveats,
    sweep_grid,
)

REPO = Path(__file__).resolve().parents[2]


def _parsed(command: str, *argv: str):
    return build_parser().parse_args([command, *argv])


@pytest.mark.parametrize("command", ["simulate", "sweep"])
def test_the_commands_defaults_are_the_settings_defaults(command):
    from edprf_fl.cli._simulation_args import settings_from_args

    assert settings_from_args(_parsed(command)) == SimulationSettings()


def test_the_light_defaults_and_choices_are_the_settings_and_the_cores():
    """The parser reads stdlib-only copies (``edprf --help`` imports no core): they must say what the checks do."""
    from edprf_core.forest import LEAF_OUTPUTS
    from edprf_core.forest import SPLIT_MODES as CORE_SPLIT_MODES
    from edprf_fl.simulation import LEAVES, SETTING_DEFAULTS, SPLIT_MODES

    assert dict(SETTING_DEFAULTS) == dataclasses.asdict(SimulationSettings())
    assert list(SETTING_DEFAULTS) == list(SimulationSettings.field_names())
    assert LEAVES == tuple(sorted(LEAF_OUTPUTS))
    assert SPLIT_MODES == CORE_SPLIT_MODES


def test_every_public_name_of_the_simulation_loads_on_first_use():
    """The package imports its names lazily: each one in ``__all__`` has a home and is found there."""
    from edprf_fl import simulation

    assert set(simulation._HOMES) == set(simulation.__all__)
    assert all(getattr(simulation, name) is not None for name in simulation.__all__)


def test_flags_reach_the_settings_by_their_names(tmp_path):
    from edprf_fl.cli._simulation_args import settings_from_args

    (tmp_path / "d.csv").write_text("")
    args = _parsed(
        "simulate",
        *("--data", str(tmp_path / "d.csv"), "--schema", str(tmp_path / "s.toml")),
        *("--max-depth", "4", "--n-trees", "2", "--n-bins", "8", "--no-header", "--no-baselines"),
        *("--shuffle-labels-party", "1", "--shuffle-labels-party", "2", "--parties", "3"),
    )
    got = settings_from_args(args)
    assert (got.max_depth, got.n_trees, got.n_bins, got.header, got.baselines) == (4, 2, 8, False, False)
    assert got.shuffled_label_parties == (1, 2)
    assert _parsed("simulate", "--max-depth", "auto").max_depth == "auto"


def test_tolerated_parties_reaches_the_coordinator_and_the_model(tmp_path):
    """``--tolerated-parties 2``: the coordinator's config, its report and the model file say 2; 0 is refused by its
    flag's name."""
    from edprf_fl.cli._simulation_args import settings_from_args
    from edprf_fl.simulation import prepare_workspace

    settings = settings_from_args(_parsed("simulate", "--tolerated-parties", "2", "--no-baselines"))
    assert settings.tolerated_parties == 2
    assert prepare_workspace(settings, tmp_path / "run").config.tolerated_parties == 2
    with pytest.raises(ValueError, match=r"--tolerated-parties: expected an integer in \[1, 1000\], got 0"):
        settings_from_args(_parsed("simulate", "--tolerated-parties", "0"))


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--schema", "s.toml"], "--schema describes --data, and no --data was given: the embedded --dataset"),
        (["--no-header"], "--no-header describes --data, and no --data was given"),
        (["--sep", ";"], "--sep describes --data, and no --data was given"),
        (["--data", "d.csv", "--schema", "s.toml", "--dataset", "bank_marketing"], "--dataset 'bank_marketing' names"),
        # given at their defaults, they were let through (the settings compare with the default)
        (["--sep", ","], "--sep describes --data, and no --data was given: the embedded --dataset 'wall_robot_nav"),
        (["--data", "d.csv", "--schema", "s.toml", "--dataset", "wall_robot_navigation"], "--dataset 'wall_robot_nav"),
    ],
)
def test_options_that_would_be_ignored_are_refused(tmp_path, monkeypatch, flags, message):
    """`--schema` without `--data` ran the embedded dataset without a word, as did `--dataset` beside `--data`."""
    from edprf_fl.cli._simulation_args import settings_from_args

    monkeypatch.chdir(tmp_path)
    (tmp_path / "d.csv").write_text("")
    with pytest.raises(ValueError, match=message):
        settings_from_args(_parsed("simulate", *flags))


@pytest.mark.parametrize(
    ("changes", "setting", "flag"),
    [
        ({"epsilon": 0.0}, "epsilon", "--epsilon"),
        ({"epsilon": 0.1234567}, "epsilon", "--epsilon"),
        ({"evaluation_epsilon": -1.0}, "evaluation_epsilon", "--evaluation-epsilon"),
        ({"max_depth": 31}, "max_depth", "--max-depth"),
        ({"max_depth": "deep"}, "max_depth", "--max-depth"),
        ({"n_trees": 0}, "n_trees", "--n-trees"),
        ({"n_bins": 1}, "n_bins", "--n-bins"),
        ({"parties": True}, "parties", "--parties"),
        ({"test_size": 0.0}, "test_size", "--test-size"),
        ({"test_size": 1.0}, "test_size", "--test-size"),
        ({"seed": -1}, "seed", "--seed"),  # was scikit-learn's random_state message, after reading the data
        ({"seed": 2**31}, "seed", "--seed"),
        ({"validation_size": 1.0}, "validation_size", "--validation-size"),
        ({"partition": "dirichlet", "alpha": 0.0}, "alpha", "--alpha"),
        ({"engine": "grpc"}, "engine", "--engine"),
        ({"shuffled_label_parties": (5,)}, "shuffled_label_parties", "--shuffle-labels-party"),
        ({"sep": ";;"}, "sep", "--sep"),
    ],
)
def test_a_setting_out_of_range_is_refused_by_name(changes, setting, flag):
    from edprf_fl.cli._simulation_args import flag_of

    with pytest.raises(SettingsError) as refused:
        SimulationSettings(**changes)
    assert isinstance(refused.value, ValueError)  # callers catching ValueError keep working
    assert str(refused.value).startswith(setting)
    assert refused.value.describe(flag_of).startswith(flag)


def test_data_needs_an_existing_file_and_a_schema(tmp_path):
    with pytest.raises(SettingsError, match=r"^data .*missing.csv: no such file"):
        SimulationSettings(data=tmp_path / "missing.csv", schema=tmp_path / "s.toml")
    (tmp_path / "d.csv").write_text("a\n1\n")
    with pytest.raises(SettingsError, match="^data needs schema: bounds"):
        SimulationSettings(data=tmp_path / "d.csv")
    with pytest.raises(SettingsError, match="^partition column needs column NAME$"):
        SimulationSettings(partition="column")
    settings = SimulationSettings(data=str(tmp_path / "d.csv"), schema=str(tmp_path / "s.toml"))
    assert settings.data == tmp_path / "d.csv" and isinstance(settings.schema, Path)


def test_settings_are_frozen_and_derive_the_depth_cap():
    settings = SimulationSettings()
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.epsilon = 2.0  # type: ignore[misc]
    assert settings.auto_depth and settings.depth_cap == 12
    assert SimulationSettings(max_depth=4).depth_cap == 4


def test_wrong_settings_fail_before_flower_is_imported():
    """Flower (and Ray) take seconds to import: the simulation package loads them on first use only."""
    code = (
        "import sys\nfrom edprf_fl.simulation import SettingsError, SimulationSettings\n"
        "try:\n    SimulationSettings(max_depth=0)\nexcept SettingsError:\n    pass\n"
        "print(sorted(m for m in ('flwr', 'ray') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def _report(baselines: dict | None) -> SimulationReport:
    parties = [
        {"party_id": "party-0000", "node_id": 7, "n_trees": 1, "release_bytes": 300},
        {"party_id": "", "node_id": 8, "n_trees": 0, "release_bytes": 0},
    ]
    timings = SimulationTimings(
        prepare_s=1.0,
        federation_s=2.0,
        wall_s=4.0,
        baselines_s=None if baselines is None else 1.0,
        coordinator={"train_round_s": 1.5},
    )
    settings = SimulationSettings(parties=2, max_depth=3, seeded_noise=True, seed=9)
    return SimulationReport(settings, "wall", "IID", 3, {"parties": parties, "status": "completed"}, baselines, timings)


def test_the_report_keeps_the_layout_of_simulation_json(tmp_path):
    report = _report({"majority_class": {"accuracy": 0.4, "n_trees": 0}})
    got = report.to_dict()
    assert list(got) == [
        "dataset", "parties", "partition", "epsilon", "max_depth", "n_trees", "split_mode", "seed",
        "seeded_noise", "not_dp", "engine",
        "federated", "federation_seconds", "per_party_trees", "bytes_per_party", "simulation_caveats",
        "baselines", "timings", "wall_seconds",
    ]  # fmt: skip
    # review rev-research R13: a run's report opens with the code and the command that made it (run_simulation's)
    made = Provenance("0.2.10", "pyproject.toml", "c1cb76d", "edprf simulate")
    assert list(dataclasses.replace(report, provenance=made).to_dict()) == ["provenance", *got]
    assert got["per_party_trees"] == {"party-0000": 1, "8": 0} and got["bytes_per_party"] == [300, 0]
    assert got["timings"] == {
        "prepare_s": 1.0,
        "federation_s": 2.0,
        "baselines_s": 1.0,
        "coordinator_train_round_s": 1.5,
    }
    assert got["federation_seconds"] == 2.0 and got["wall_seconds"] == 4.0 and report.completed
    assert (
        "NOT differentially private as run" in got["simulation_caveats"][0]
        and "--seed 9" in got["simulation_caveats"][0]
    )
    # the exact row counts read as public are the model's guarantee's to state (test_simulated_row_counts): not here
    assert simulation_caveats(SimulationSettings(parties=2)) == []
    assert not any("max-party-rows" in c for c in got["simulation_caveats"])
    # accepted, with a word on what it means: a DP run's guarantee says it, a seeded run's caveats do
    large = simulation_caveats(SimulationSettings(parties=2, epsilon=1e6))
    assert len(large) == 1 and "needs every party's policy to allow it" in large[-1]
    assert not any("protects little" in c for c in large)
    seeded = simulation_caveats(SimulationSettings(parties=2, epsilon=1e6, seeded_noise=True))
    assert seeded[-2].startswith("epsilon 1e+06 per record is a bound that protects little")
    at_10 = simulation_caveats(SimulationSettings(parties=2, epsilon=10.0))  # above the policies' default of 1
    assert len(at_10) == 1 and "at epsilon 10 needs every party's policy to allow it" in at_10[-1]
    assert simulation_caveats(SimulationSettings(parties=2, epsilon=1.0)) == []
    assert (report.federated_metrics, report.contributions, report.guarantee) == ({}, [], None)
    skipped = _report(None).to_dict()
    assert "baselines" not in skipped and "baselines_s" not in skipped["timings"]
    report.write_json(tmp_path / "r.json")
    assert '"n_trees": 1' in (tmp_path / "r.json").read_text()


def test_the_sweep_grid_is_the_product_of_the_axes_checked_before_any_run():
    base = SimulationSettings(max_depth=3)
    grid = sweep_grid(base, {"epsilon": [0.5, 1.0], "parties": [2, 3], "partition": ["iid"]})
    assert [(c["epsilon"], c["parties"]) for c in grid] == [(0.5, 2), (0.5, 3), (1.0, 2), (1.0, 3)]
    assert all(c["max_depth"] == 3 and c["n_trees"] == 1 for c in grid)  # unswept axes: the base's values
    with pytest.raises(SettingsError, match="^max_depth: expected"):
        sweep_grid(base, {"max_depth": [2, 50]})


@pytest.mark.slow
def test_a_small_sweep_writes_its_table_and_rows(tmp_path, capsys):
    out = tmp_path / "sweep"
    argv = ["sweep", "--epsilons", "0.5,1", "--parties", "2", "--max-depth", "2", "--seeds", "1", "--output", str(out)]
    assert main(argv) == 0
    with (out / "sweep.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    assert [r["epsilon"] for r in rows] == ["0.5", "1.0"] and {r["accepted"] for r in rows} == {"2"}
    assert all(0 < float(r["federated_accuracy"]) <= 1 for r in rows)
    top = (out / "sweep.md").read_text().splitlines()
    # the code and the command that made the rows (review rev-research R13), then the table
    assert top[0].startswith("Provenance") and top[1].startswith("- 2 runs (seed 0) by edprf-fl ") and top[2] == ""
    table = top[3:]
    assert table[0].startswith("Seeded research runs, NOT differentially private releases")
    assert table[4].startswith("| epsilon | parties | partition | max_depth | n_trees | federated |")
    assert len(top) == 15 and table[6].startswith("| 0.5 | 2 | iid | 2 | 1 | ")
    assert table[9] == "Data: 5456 rows read, all used (sweep.csv: rows_read, rows_left_out)."  # the embedded data
    assert table[11].startswith("Note (wall_robot_navigation): rows of this dataset are a time series")
    assert (out / "accuracy_vs_epsilon.png").is_file()
    assert "sweep.md" in capsys.readouterr().out


def test_a_sweep_value_out_of_range_is_named_by_its_list_flag_before_any_run(tmp_path, capsys):
    out = tmp_path / "never"
    assert main(["sweep", "--max-depths", "2,50", "--seeds", "1", "--output", str(out)]) == 1
    assert (
        "edprf sweep: error: --max-depths: expected 'auto' or an integer in [1, 30], got 50" in capsys.readouterr().err
    )
    assert not out.exists()  # refused before the first run


def test_the_simulation_defaults_are_the_coordinators_where_they_mean_the_same():
    """A simulated federation asks what a deployed coordinator asks by default (depth and seed differ on purpose:
    the simulation lets each party choose its depth, and seeds its partition)."""
    from dataclasses import fields

    from server import CoordinatorConfig

    coordinator = {f.name: f.default for f in fields(CoordinatorConfig)}
    shared = [
        "epsilon",
        "evaluation_epsilon",
        "evaluation_max_interval_width",
        "exclude_flagged",
        "leaf",
        "n_bins",
        "n_trees",
        "split_mode",
    ]
    simulation_defaults = SimulationSettings()
    assert {k: getattr(simulation_defaults, k) for k in shared} == {k: coordinator[k] for k in shared}


def test_trees_no_party_would_release_are_refused_before_flower_starts(tmp_path, capsys):
    """`--n-trees 1000` (depth up to 12): every simulated party refused the request after Flower started, each
    refusal logged twice; the node bound is public, so the command refuses it first, naming the flags."""
    from edprf_fl.cli._main import main

    assert main(["simulate", "--n-trees", "1000", "--no-baselines", "--output", str(tmp_path / "o")]) == 1
    err = capsys.readouterr().err
    assert "--n-trees 1000 of depth up to 12 (--max-depth) on 20 bins, --split-mode binary" in err
    assert "may hold 8,191,000 nodes, above the parties' max-release-nodes 1,000,000" in err
    assert "[2/4]" not in err and not (tmp_path / "o").exists()  # no federation, no workspace left behind
