"""`edprf sweep`: seeded research runs that say so, options that are not silently ignored, a grid checked
against the data before the first run, rows kept on Ctrl-C, and a table that says what its cells are."""

from __future__ import annotations

import csv
import math
import warnings

import pytest

from edprf_fl.cli._main import build_parser, main
from edprf_fl.cli._simulation_args import settings_from_args
from edprf_fl.simulation import SimulationReport, SimulationSettings, SimulationTimings, _sweep, sweep_grid, sweep_table

TINY = ("--epsilons", "1", "--seeds", "1", "--parties", "2", "--max-depth", "2", "--engine", "in-process")
"""The quickest real sweep: one run of two parties."""


def _parsed(command: str, *argv: str):
    return build_parser().parse_args([command, *argv])


def _report(
    settings: SimulationSettings, accepted: int = 2, guarantee: str = "NOT differentially private"
) -> SimulationReport:
    """What run_simulation returns, without running: ``accepted`` of the settings' parties accepted."""
    parties = [
        {
            "party_id": f"party-{i:04d}",
            "node_id": i,
            "status": "accepted" if i < accepted else "refused",
            "reason": "" if i < accepted else "budget_exhausted",
            "message": "",
            "max_depth": 2,
            "n_trees": settings.n_trees if i < accepted else 0,
            "release_bytes": 100 if i < accepted else 0,
        }
        for i in range(settings.parties)
    ]
    federated = {
        "parties": parties,
        "status": "completed",
        "guarantee": guarantee,
        "central_evaluation": {"accuracy": 0.5 + settings.seed / 10, "roc_auc": 0.7},
    }
    central = {"accuracy": 0.6, "n_trees": settings.parties * settings.n_trees, "max_depth": settings.max_depth}
    baselines = {"central_edprf": central, "majority_class": {"accuracy": 0.4}}
    return SimulationReport(settings, "wall", "IID", 2, federated, baselines, SimulationTimings(0.1, 0.2, 0.3))


@pytest.fixture
def fake_runs(monkeypatch):
    """run_simulation replaced by :func:`_report` (no data split, no Flower); the settings of each call."""
    calls: list[SimulationSettings] = []

    def run(settings, out_dir, **_):
        calls.append(settings)
        out_dir.mkdir(parents=True)
        return _report(settings)

    monkeypatch.setattr(_sweep, "run_simulation", run)
    return calls


@pytest.fixture
def no_runs(monkeypatch):
    """Fail the test if a run starts."""
    monkeypatch.setattr(_sweep, "run_simulation", lambda *a, **k: pytest.fail("a run started"))


def _csv_rows(path) -> list[dict[str, str]]:
    with path.open() as fh:
        return list(csv.DictReader(fh))


# 1. seeded research runs, said everywhere


@pytest.mark.slow
def test_a_sweep_says_its_runs_are_seeded_research_runs_and_not_dp(tmp_path, capsys):
    out = tmp_path / "sweep"
    assert main(["sweep", *TINY, "--output", str(out)]) == 0
    printed = capsys.readouterr()
    table = (out / "sweep.md").read_text()
    first = table.splitlines()[3]  # after the provenance (review rev-research R13)
    assert first.startswith("Seeded research runs, NOT differentially private releases")
    assert "No evaluation round, no party hold-out" in first and "epsilon is the budget" in first
    assert "'central DP' is the same seeded algorithm trained centrally" in first
    assert "drafted" not in table  # the embedded dataset's schema is declared
    assert printed.out.startswith(first) and "Seeded research runs" in printed.err  # said before the first run too
    [row] = _csv_rows(out / "sweep.csv")
    assert (row["seeded_noise"], row["schema_drafted"]) == ("True", "False")


def test_the_plots_say_seeded_research_runs():
    from edprf_fl.simulation._plot import _sweep_runs_text

    assert _sweep_runs_text([{"seed": 0}], 1).startswith("seeded research runs, NOT differentially private\n")
    assert "drafted schema" in _sweep_runs_text([{"seed": 0, "schema_drafted": True}], 1)


@pytest.mark.slow
def test_a_sweep_on_a_drafted_schema_says_that_too(tmp_path, capsys):
    from edprf_core import PrivacyLeakWarning, draft_schema, load_embedded

    X, y, schema = load_embedded("wall_robot_navigation")
    data = tmp_path / "wall.csv"
    X.assign(**{schema.label.column: y}).to_csv(data, index=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        draft_schema(X.assign(**{schema.label.column: y}), schema.label.column).save(tmp_path / "drafted.toml")
    argv = ["sweep", *TINY, "--data", str(data), "--schema", str(tmp_path / "drafted.toml")]
    assert main([*argv, "--output", str(tmp_path / "sweep")]) == 0
    first = (tmp_path / "sweep" / "sweep.md").read_text().splitlines()[3]  # after the provenance
    assert "Also NOT differentially private because its schema was drafted from data" in first
    assert _csv_rows(tmp_path / "sweep" / "sweep.csv")[0]["schema_drafted"] == "True"


def test_the_sweep_help_offers_none_of_what_each_run_sets(capsys):
    with pytest.raises(SystemExit):
        main(["sweep", "--help"])
    text = capsys.readouterr().out
    assert "NOT differentially private" in text and "production randomness" not in text
    for flag in ("--seed", "--seeded-noise", "--evaluation-epsilon", "--party-holdout", "--evaluation-max-interval"):
        assert f"[{flag} " not in text and f"[{flag}]" not in text and f"\n  {flag} " not in text  # usage, options


def test_the_options_a_sweep_refuses_are_what_each_run_sets():
    from edprf_fl.cli._sweep import _SET_BY_EACH_RUN

    base = SimulationSettings(seed=7, seeded_noise=False, evaluation_epsilon=0.5, party_holdout=0.3)
    run = _sweep._settings_of(base, {"epsilon": 2.0}, seed=1)
    changed = {f for f in SimulationSettings.field_names() if getattr(run, f) != getattr(base, f)} - {"epsilon"}
    assert changed == {"seed", *_sweep._RESEARCH_RUN} and changed <= set(_SET_BY_EACH_RUN)


# 2. no option silently ignored


@pytest.mark.parametrize(
    "argv",
    [
        ["--seed", "1"],
        ["--seeded-noise"],
        ["--evaluation-epsilon", "0.1"],
        ["--party-holdout", "0.2"],
        ["--evaluation-max-interval-width", "0.5"],
    ],
)
def test_an_option_of_what_each_run_sets_is_refused_with_the_reason(capsys, argv):
    with pytest.raises(SystemExit) as stop:
        main(["sweep", *argv])
    assert stop.value.code == 2
    assert f"argument {argv[0]}: not an option of edprf sweep: " in capsys.readouterr().err


@pytest.mark.parametrize(
    ("single", "listed"),
    [
        (["--epsilon", "2"], ["--epsilons", "1,2"]),
        (["--parties", "3"], ["--parties-list", "2,3"]),
        (["--partition", "dirichlet"], ["--partitions", "iid"]),
        (["--max-depth", "3"], ["--max-depths", "2,3"]),
        (["--n-trees", "2"], ["--n-trees-list", "1,2"]),
    ],
)
def test_a_setting_and_its_list_are_refused_together(tmp_path, capsys, no_runs, single, listed):
    assert main(["sweep", *single, *listed, "--output", str(tmp_path / "o")]) == 1
    assert f"edprf sweep: error: {single[0]} and {listed[0]}: give one" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_the_options_given_are_noted_one_at_its_default_value_too():
    """What ``--resume`` compares with the record (review rev-s65 F6: noted by a second parse, not by the actions'
    classes swapped through argparse's private ``_actions``); the values themselves as without the note."""
    from edprf_fl.cli._simulation_args import DEFAULTS
    from edprf_fl.cli._sweep import GIVEN

    assert not hasattr(_parsed("sweep"), GIVEN)  # absent when none was given
    argv = ["--n-bins", str(DEFAULTS.n_bins), "--seeds=3", "--no-header", "--resume", "--epsilon", "1", "-v"]
    args = build_parser().parse_args(["-v", "sweep", *argv])
    assert getattr(args, GIVEN) == {"n_bins", "seeds", "no_header", "resume", "epsilon"}  # -v is no sweep option
    assert (args.n_bins, args.seeds, args.no_header, args.resume, args.epsilon) == (DEFAULTS.n_bins, 3, True, True, 1)
    assert (args.seed_start, args.overwrite, args.data) == (0, False, None) and not hasattr(args, "alpha")
    assert getattr(_parsed("sweep", "--resume", "DIR"), GIVEN) == {"resume"}  # a value after an optional one
    assert not hasattr(_parsed("simulate", "--n-bins", "20"), GIVEN)  # edprf sweep's alone


@pytest.mark.parametrize(
    ("argv", "axis", "expected"),
    [
        (["--epsilon", "2"], "epsilon", [2.0]),
        ([], "epsilon", [0.25, 0.5, 1.0, 2.0]),
        (["--partition", "dirichlet"], "partition", ["dirichlet"]),
        (["--max-depth", "3"], "max_depth", [3]),
        (["--n-trees", "2"], "n_trees", [2]),
        (["--parties", "3"], "parties", [3]),
    ],
)
def test_a_setting_alone_is_a_list_of_one_value(argv, axis, expected):
    from edprf_fl.cli._sweep import _axis_values

    args = _parsed("sweep", *argv)
    configs = sweep_grid(settings_from_args(args), _axis_values(args))
    assert sorted({c[axis] for c in configs}) == expected


def test_alpha_or_column_without_their_partition_are_refused_by_both_commands(tmp_path, capsys, no_runs):
    from edprf_fl.cli._simulation_args import refuse_unused_partition_options

    for argv in (["simulate", "--alpha", "0.1"], ["sweep", "--alpha", "0.1", "--partitions", "iid,column"]):
        assert main([*argv, "--output", str(tmp_path / "o")]) == 1
        assert "--alpha 0.1 is the concentration of the dirichlet partition" in capsys.readouterr().err
    for argv in (
        ["simulate", "--alpha", "0.1", "--partition", "dirichlet"],
        ["sweep", "--partitions", "iid,dirichlet"],
    ):
        refuse_unused_partition_options(_parsed(*argv), ["dirichlet"])  # accepted
    refuse_unused_partition_options(_parsed("simulate"), ["iid"])  # the default alpha is not "given"
    for argv in (["simulate", "--column", "region"], ["sweep", "--column", "region", "--partitions", "iid,dirichlet"]):
        assert main([*argv, "--output", str(tmp_path / "o")]) == 1
        assert "--column 'region' assigns rows to parties in the column partition" in capsys.readouterr().err
    refuse_unused_partition_options(_parsed("simulate", "--column", "region", "--partition", "column"), ["column"])
    assert settings_from_args(_parsed("simulate", "--alpha", "0.1", "--partition", "dirichlet")).alpha == 0.1


# 3. an existing --output, refused parties


def test_an_existing_sweep_output_is_refused_and_overwrite_replaces_it(tmp_path, capsys, fake_runs):
    out = tmp_path / "sweep"
    (out / "run-0000" / "workspace").mkdir(parents=True)  # an old run's spent ledgers
    (out / "sweep.csv").write_text("old\n")
    assert main(["sweep", *TINY, "--output", str(out)]) == 1
    err = capsys.readouterr().err
    assert f"--output {out} already holds a run (sweep.csv, run-*" in err and "--overwrite" in err
    assert not fake_runs
    assert main(["sweep", *TINY, "--output", str(out), "--overwrite"]) == 0
    assert len(fake_runs) == 1 and not (out / "run-0000" / "workspace").exists()
    assert [r["seed"] for r in _csv_rows(out / "sweep.csv")] == ["0"]


def test_refused_parties_are_in_the_table_and_warned_of(tmp_path, monkeypatch):
    def run(settings, out_dir, **_):
        out_dir.mkdir(parents=True)  # as a run does
        return _report(settings, accepted=1)

    monkeypatch.setattr(_sweep, "run_simulation", run)
    base = SimulationSettings(max_depth=2, parties=2)
    configs = [{"epsilon": 1.0, "parties": 2, "partition": "iid", "max_depth": 2, "n_trees": 1}]
    said: list[str] = []
    rows = _sweep.run_sweep(base, configs, 1, tmp_path, progress=said.append)
    assert any("warning: 1/2 parties' releases accepted (party-0001: refused budget_exhausted)" in s for s in said)
    table = sweep_table(rows, configs)
    assert table.splitlines()[6].endswith("| 1/2 |")
    assert "WARNING: parties' releases were not accepted in runs of epsilon 1.0, parties 2" in table


# 4. --seeds


@pytest.mark.parametrize("seeds", ["0", "-1"])
def test_seeds_must_be_a_positive_integer(capsys, seeds):
    with pytest.raises(SystemExit) as stop:
        main(["sweep", "--seeds", seeds])
    assert stop.value.code == 2
    assert f"argument --seeds: expected an integer >= 1, got {seeds}" in capsys.readouterr().err


# 5. Ctrl-C


def test_an_interrupted_sweep_keeps_its_finished_rows(tmp_path, capsys, monkeypatch):
    finished: list[int] = []

    def run(settings, out_dir, **_):
        if finished:
            raise KeyboardInterrupt
        finished.append(settings.seed)
        out_dir.mkdir(parents=True)  # as a run does
        return _report(settings)

    monkeypatch.setattr(_sweep, "run_simulation", run)
    out = tmp_path / "sweep"
    assert main(["sweep", *TINY, "--seeds", "3", "--output", str(out)]) == 130
    err = capsys.readouterr().err
    assert f"sweep interrupted after 1 finished run; its rows are in {out / 'sweep.csv'}" in err
    assert [r["seed"] for r in _csv_rows(out / "sweep.csv")] == ["0"]
    # the finished runs' table too, marked as such (review rev-research R3: only the CSV was left)
    table = (out / "sweep.md").read_text()
    assert table.startswith("INTERRUPTED: 1 of 3 runs finished; this table and the plots hold those only.")
    assert f"the finished runs' table is in {out / 'sweep.md'} (marked INTERRUPTED)" in err


def test_a_model_no_better_than_the_majority_class_is_named_in_the_table():
    """Review rev-research R11: runs below the majority class that predict several classes were not flagged."""
    configs = [{"epsilon": e, "parties": 2, "partition": "iid", "max_depth": 2, "n_trees": 1} for e in (0.5, 1.0)]
    rows = [
        {
            **_sweep._metrics(_report(SimulationSettings(parties=2, epsilon=c["epsilon"]))),
            **c,
            "alpha": "",
            "seed": 0,
        }
        for c in configs
    ]
    rows[0] |= {"federated_accuracy": 0.35, "majority_accuracy": 0.40}
    rows[1] |= {"federated_accuracy": 0.80, "majority_accuracy": 0.40}
    table = sweep_table(rows, configs)
    assert "Bounded influence counted less" not in table
    rows[1] |= {"influence_cuts": 4}  # review rev-research R11: four cuts a run at alpha 0.1 went unsaid
    table = sweep_table(rows, configs)
    cut = table.split("Bounded influence counted less than half of a party's claim at some leaves in runs of ")[1]
    assert cut.startswith("epsilon 1.0, parties 2, partition iid, max_depth 2, n_trees 1 (sweep.csv: influence_cuts")
    flagged = table.split("no more accurate than always predicting the majority class in runs of ")[1].split(" (")[0]
    assert flagged == "epsilon 0.5, parties 2, partition iid, max_depth 2, n_trees 1", table


# 6. the grid against the data


def test_a_configuration_the_data_cannot_be_split_for_is_refused_before_the_first_run(tmp_path, capsys, no_runs):
    out = tmp_path / "sweep"
    assert main(["sweep", "--parties-list", "3,5000", "--epsilons", "1", "--seeds", "1", "--output", str(out)]) == 1
    err = capsys.readouterr().err
    assert "parties 5000, partition iid, seed 0: 3927 rows cannot be split among 5000 parties" in err
    assert not out.exists()


def test_the_grid_is_checked_for_every_seed_the_runs_use(monkeypatch):
    """The review: a column whose rarest value reaches the training rows under seed 0 but not under a later seed
    passed the check (made with seed 0 alone) and failed in a later run (here: seed 1's)."""
    import numpy as np
    import pandas as pd

    from edprf_fl.simulation import _prepare

    X = pd.DataFrame({"site": ["A"] * 100 + ["B"] * 99 + ["C"], "x": np.random.default_rng(0).normal(size=200)})
    y = pd.Series(np.random.default_rng(1).integers(0, 2, 200), name="y")
    monkeypatch.setattr(_prepare, "load_simulation_data", lambda settings, progress=None: (X, y, None, "sites"))
    base = SimulationSettings(parties=3, partition="column", column="site")
    assert len(sweep_grid(base, {}, seeds=1)) == 1  # seed 0's training rows hold the three sites
    with pytest.raises(ValueError, match=r"seed 1: column 'site' has 2 values, fewer than 3 parties"):
        sweep_grid(base, {}, seeds=2)


# 7. --max-depths auto


def test_max_depths_takes_auto_and_the_plot_orders_it_after_the_depths(tmp_path):
    from edprf_fl.simulation import plot_sweep

    assert _parsed("sweep", "--max-depths", "auto,3").max_depths == ["auto", 3]
    configs = sweep_grid(SimulationSettings(), {"max_depth": ["auto", 3], "epsilon": [1.0]})
    rows = [
        {**c, "seed": s, "federated_accuracy": 0.8, "central_accuracy": 0.9, "majority_accuracy": 0.4}
        for c in configs
        for s in (0, 1)
    ]
    assert plot_sweep(rows, configs, tmp_path) in ([], [tmp_path / "accuracy_vs_max_depth.png"])


def test_the_depth_plot_draws_auto_apart_and_never_joins_it_to_a_fixed_depth(tmp_path, monkeypatch):
    """'auto' is the depth each party chose, no point on the depth axis: a line from depth 4 to it read as accuracy
    rising with depth, and the central line joined two different models (review rev-research R2)."""
    matplotlib = pytest.importorskip("matplotlib")
    from matplotlib.axes import Axes

    from edprf_fl.simulation import plot_sweep

    calls = []
    real = Axes.errorbar

    def recording(self, x, y, *args, **kwargs):
        calls.append((list(x), kwargs.get("fmt", "")))
        return real(self, x, y, *args, **kwargs)

    monkeypatch.setattr(Axes, "errorbar", recording)
    configs = sweep_grid(SimulationSettings(), {"max_depth": [2, 4, "auto"], "epsilon": [1.0]})
    rows = [
        {**c, "seed": s, "federated_accuracy": 0.8, "central_accuracy": 0.9, "majority_accuracy": 0.4}
        for c in configs
        for s in (0, 1)
    ]
    assert plot_sweep(rows, configs, tmp_path) == [tmp_path / "accuracy_vs_max_depth.png"]
    assert matplotlib.get_backend().lower() == "agg"
    lines = [(x, fmt) for x, fmt in calls if "-" in fmt]
    markers = [(x, fmt) for x, fmt in calls if "-" not in fmt]
    assert lines and all(x == [0, 1] for x, _ in lines), calls  # the fixed depths 2 and 4, joined
    assert markers and all(x == [2] for x, _ in markers), calls  # auto, on its own


# 8. what ± is; alpha


def test_the_table_says_what_its_cells_are_and_one_seed_has_no_spread(tmp_path, fake_runs):
    base = SimulationSettings(max_depth=2, parties=2, alpha=0.3)
    configs = [
        {"epsilon": 1.0, "parties": 2, "partition": partition, "max_depth": 2, "n_trees": 1}
        for partition in ("iid", "dirichlet")
    ]
    rows = _sweep.run_sweep(base, configs, 2, tmp_path)
    assert [r["alpha"] for r in rows] == ["", "", 0.3, 0.3]
    lines = sweep_table(rows, configs).splitlines()
    assert lines[1].startswith(
        "Cells: accuracy on the central test rows, mean ± sample standard deviation over 2 seeds;"
    )
    assert lines[4].startswith("| epsilon | parties | partition | alpha | max_depth | n_trees | federated |")
    assert lines[7].startswith(f"| 1.0 | 2 | dirichlet | 0.3 | 2 | 1 | 0.5500 ± {math.sqrt(0.005):.4f} |")
    one = sweep_table([r for r in rows if r["seed"] == 0], configs).splitlines()
    assert one[1].startswith("Cells: accuracy on the central test rows, one seed per configuration;")
    assert one[6].startswith("| 1.0 | 2 | iid |  | 2 | 1 | 0.5000 | ") and "±" not in "\n".join(one[6:])


def test_a_release_no_party_would_make_is_refused_before_the_first_run():
    """`--n-trees-list 10,1000`: the 1000-tree configuration failed at its turn, after the first runs had spent
    their parties' budgets, leaving no sweep.md (review of stop 43)."""
    from edprf_fl.simulation import SettingsError

    base = SimulationSettings(parties=3, epsilon=1.0)
    with pytest.raises(SettingsError, match="may hold 8,191,000 nodes, above the parties' max-release-nodes"):
        sweep_grid(base, {"n_trees": [10, 1000]})
    assert len(sweep_grid(base, {"n_trees": [10, 20]})) == 2


# 9. what 'central DP' is


def test_the_central_model_s_trees_and_depth_are_in_the_csv_and_the_table(tmp_path, fake_runs):
    """Review: 'central DP' is the federation's forest at a fixed depth but the estimator's own choice at auto (1 tree
    of depth 6, say); the sweep did not show which."""
    base = SimulationSettings(parties=3)
    configs = [{"epsilon": 1.0, "parties": 3, "partition": "iid", "max_depth": 2, "n_trees": 2}]
    [row] = _sweep.run_sweep(base, configs, 1, tmp_path)
    assert (row["central_n_trees"], row["central_max_depth"], row["central_depth"]) == (6, 2, 2)
    table = sweep_table([row], configs)
    assert "at a fixed max_depth it is the federation's forest (parties x n_trees trees of that depth)" in table
    assert "at max_depth auto the estimator's own choice of trees and depth" in table
    header, _, cells = table.splitlines()[4:7]
    assert "| central model | party depths (mean, max) | accepted |" in header
    assert cells.endswith("| 6 x 2 | 2.0, 2 | 2/3 |")
    auto = [dict(row, central_n_trees=1, central_max_depth=depth, seed=depth) for depth in (5, 6)]
    assert _sweep._central_model_text(auto) == "1 x 5-6"


def test_rows_the_schema_s_rules_left_out_are_said_once_and_kept_in_the_csv_and_the_table(tmp_path, monkeypatch):
    """Review rev-research R1: a sweep on heart disease used 297 of the file's 303 rows (6 with '?' in ca or thal,
    whose rule refuses a missing cell) and said so nowhere; a paper would have quoted 303."""
    from edprf_fl.simulation._prepare import RowsRead

    rows_read = RowsRead(303, 6, ("column 'ca': missing value ... 4 rows", "column 'thal': missing value ... 2 rows"))

    def run(settings, out_dir, **_):
        out_dir.mkdir(parents=True)
        report = _report(settings)
        return SimulationReport(**{**report.__dict__, "rows_read": rows_read})

    monkeypatch.setattr(_sweep, "run_simulation", run)
    said: list[str] = []
    configs = [{"epsilon": e, "parties": 2, "partition": "iid", "max_depth": 2, "n_trees": 1} for e in (1.0, 2.0)]
    rows = _sweep.run_sweep(SimulationSettings(parties=2), configs, 1, tmp_path, progress=said.append)
    data_lines = [line for line in said if "data: " in line]
    assert data_lines == [
        (
            "      data: 303 rows read, 6 left out by the schema's rules (column 'ca': missing value ... 4 rows; column "
            "'thal': missing value ... 2 rows), 297 used"
        )
    ], said
    assert all((r["rows_read"], r["rows_left_out"]) == (303, 6) for r in rows)
    table = sweep_table(rows, configs)
    assert "Data: 303 rows read, 6 left out by the schema's rules, 297 used: report 297 as the data's size" in table
    # ROC AUC beside accuracy for the central and party-alone baselines too (review rev-research R10)
    assert (
        "| federated | federated AUC | central DP | central DP AUC | party alone (median) | party alone AUC |" in table
    )
    assert SimulationReport(**{**_report(SimulationSettings()).__dict__, "rows_read": rows_read}).to_dict()[
        "rows_read"
    ] == {
        "read": 303,
        "left_out": 6,
        "used": 297,
        "reasons": list(rows_read.reasons),
        "test_rows": 0,
        "test_rows_repeated": 0,
    }


def test_test_rows_that_repeat_a_training_row_are_counted_and_said_above_one_percent():
    """Review rev-research R12: 5.6 % of the diabetes file's test rows repeated a training row (the file holds
    3,854 duplicate rows) and nothing said so, while the wall robot gets its time-series caveat."""
    import pandas as pd

    from edprf_fl.simulation._prepare import RowsRead, repeated_rows

    X_train = pd.DataFrame({"a": [1.0, 2.0, 3.0], "b": ["x", "y", "z"]})
    y_train = pd.Series(["p", "q", "p"])
    X_test = pd.DataFrame({"a": [1.0, 2.0, 3.0, 4.0], "b": ["x", "y", "q", "x"]})
    y_test = pd.Series(["p", "p", "p", "p"])  # row 0 repeats; row 1 differs by its label only; rows 2, 3 by a cell
    assert repeated_rows(X_train, y_train, X_test, y_test) == 1
    assert RowsRead(100, test_rows=100, test_rows_repeated=1).repeats_text() is None  # 1 %: not above it
    note = RowsRead(100, test_rows=100, test_rows_repeated=6).repeats_text()
    assert note.startswith("6 of the 100 central test rows (6.0%) repeat a training row exactly (label included)")
    rows = [{"rows_read": 100, "rows_left_out": 0, "test_rows": 100, "test_rows_repeated": 6}]
    assert _sweep._rows_read_lines(rows)[1].startswith("Duplicates: up to 6.0% of a run's central test rows")


def test_the_data_s_rows_read_and_left_out_come_from_the_schema_s_rules(tmp_path):
    from edprf_fl.simulation._prepare import read_simulation_data

    schema = tmp_path / "schema.toml"
    schema.write_text(
        'name = "t"\n[label]\ncolumn = "y"\nclasses = ["a", "b"]\n'
        '[[features]]\nname = "x"\nkind = "continuous"\nlower = 0.0\nupper = 10.0\nmissing = "refuse"\n'
    )
    data = tmp_path / "d.csv"
    data.write_text("x,y\n" + "".join(f"{i % 10},{'ab'[i % 2]}\n" for i in range(20)) + ",a\n3,c\n")
    X, _, _, _, rows = read_simulation_data(SimulationSettings(data=data, schema=schema))
    assert (rows.read, rows.left_out, rows.used, len(X)) == (22, 2, 20, 20)
    assert len(rows.reasons) == 2 and rows.text().startswith("22 rows read, 2 left out by the schema's rules (")
    assert rows.text().endswith("), 20 used")


def test_the_csv_has_the_whole_run_s_wall_time_and_the_eta_reads_it(tmp_path, fake_runs, monkeypatch):
    """Review: sweep.csv's seconds is the federation's time only; the runs' baselines take longer than it."""
    import itertools
    import time

    clock = itertools.count(0.0, 100.0)  # each reading 100 s after the last
    monkeypatch.setattr(time, "perf_counter", lambda: next(clock))
    base = SimulationSettings(parties=2)
    configs = [{"epsilon": 1.0, "parties": 2, "partition": "iid", "max_depth": 2, "n_trees": 1}]
    said: list[str] = []
    rows = _sweep.run_sweep(base, configs, 2, tmp_path, progress=said.append)
    assert [(r["seconds"], r["wall_seconds"]) for r in rows] == [(0.2, 0.3)] * 2  # the report's federation_s, wall_s
    assert "(eta 100 s)" in said[-2] and "(eta 0 s)" in said[-1]


def test_the_table_says_what_a_central_spread_is_and_the_depths_the_parties_grew(tmp_path, fake_runs):
    """Review: central's ± is over seeds of a median of 5 draws (understating one draw's spread), federated's over
    one draw per seed; and the depths the parties chose (auto) explain why a dirichlet split can beat iid."""
    base = SimulationSettings(parties=2)
    configs = [{"epsilon": 1.0, "parties": 2, "partition": "dirichlet", "max_depth": "auto", "n_trees": 1}]
    rows = _sweep.run_sweep(base, configs, 2, tmp_path)
    rows = [dict(r, depths_used=used) for r, used in zip(rows, ("3 6", "4 5"))]
    lines = sweep_table(rows, configs).splitlines()
    assert "'central DP' and 'party alone' are each the draw of median accuracy of 5 draws" in lines[1]
    assert "'federated' is one draw per seed" in lines[1] and "understates how far one draw" in lines[1]
    assert "each party chooses its depth from a DP count of its own rows" in lines[2]
    assert "the big parties can grow deeper trees" in lines[2]
    assert lines[6].endswith("| 4.5, 6 | 2/2 |")
    fixed = [dict(c, max_depth=2) for c in configs]
    assert "DP count" not in sweep_table([dict(r, max_depth=2) for r in rows], fixed)


# 10. the plots


def test_a_wide_epsilon_grid_is_plotted_on_a_log_scale():
    from edprf_fl.simulation._plot import _log_scaled

    assert _log_scaled("epsilon", [0.25, 0.5, 1.0, 2.0]) and _log_scaled("epsilon", [0.1, 1.0])
    assert not _log_scaled("epsilon", [0.5, 1.0, 2.0]) and not _log_scaled("parties", [2, 50])


def test_identical_central_lines_are_drawn_once_per_epsilon(tmp_path):
    """Review: the central model pools the rows whatever the partition, so each partition drew the same central line
    over the others; one line per epsilon instead."""
    from edprf_fl.simulation import plot_sweep
    from edprf_fl.simulation._plot import _central_lines

    others = ["epsilon", "partition", "max_depth", "n_trees"]
    keys = [(eps, partition, 2, 1) for eps in (0.5, 2.0) for partition in ("dirichlet", "iid")]
    rows = [
        {"parties": parties, "epsilon": eps, "partition": partition, "max_depth": 2, "n_trees": 1, "seed": 0}
        | {"federated_accuracy": 0.5, "central_accuracy": eps / 10 + parties / 100, "majority_accuracy": 0.4}
        for eps, partition, _, _ in keys
        for parties in (2, 5)
    ]
    lines = _central_lines(rows, "parties", [2, 5], others, keys, ["epsilon", "partition"])
    assert [(label, means, first) for label, (means, _), first in lines] == [
        ("central DP epsilon=0.5 (any partition)", [0.07, 0.1], 0),
        ("central DP epsilon=2.0 (any partition)", [0.22, 0.25], 2),
    ]
    rows[0]["central_accuracy"] = 0.0  # another central model for one configuration: a line of its own
    assert len(_central_lines(rows, "parties", [2, 5], others, keys, ["epsilon", "partition"])) == 3
    configs = [{k: r[k] for k in ("epsilon", "parties", "partition", "max_depth", "n_trees")} for r in rows]
    assert plot_sweep(rows, configs, tmp_path) in (
        [],
        [tmp_path / "accuracy_vs_epsilon.png", tmp_path / "accuracy_vs_parties.png"],
    )


# 11. --seed-start


def test_seed_start_moves_the_seeds_the_runs_use(tmp_path, fake_runs):
    out = tmp_path / "sweep"
    assert main(["sweep", *TINY, "--seeds", "2", "--seed-start", "5", "--output", str(out)]) == 0
    assert [s.seed for s in fake_runs] == [5, 6]
    assert [r["seed"] for r in _csv_rows(out / "sweep.csv")] == ["5", "6"]
    assert _parsed("sweep").seed_start == 0


def test_a_seed_start_out_of_range_is_refused_before_the_first_run(tmp_path, capsys, no_runs):
    with pytest.raises(SystemExit) as stop:
        main(["sweep", "--seed-start", "-1"])
    assert stop.value.code == 2
    assert "argument --seed-start: expected an integer >= 0, got '-1'" in capsys.readouterr().err
    out = tmp_path / "sweep"
    assert main(["sweep", *TINY, "--seeds", "2", "--seed-start", "2147483647", "--output", str(out)]) == 1
    err = capsys.readouterr().err
    assert (
        "--seed-start 2147483647 with --seeds 2: the seeds 2147483647 .. 2147483648 must lie in [0, 2147483647]" in err
    )
    assert not out.exists()


def test_simulation_json_says_whether_a_run_was_seeded_and_the_table_names_a_multiclass_auc():
    """Review rev-research R7 and R8: whether a run drew seeded noise (NOT DP) was in a sentence only, and the AUC of
    several classes (macro one-vs-rest, a conservative interval) was named as a two-class one."""
    from edprf_fl.simulation._summary import results_table

    dp = _report(SimulationSettings()).to_dict()
    seeded = _report(SimulationSettings(seeded_noise=True)).to_dict()
    assert (dp["seeded_noise"], dp["not_dp"]) == (False, "")
    assert seeded["seeded_noise"] is True and "NOT differentially private" in seeded["not_dp"]
    metrics = {"accuracy": 0.9, "roc_auc": 0.95, "n": 10}
    two = results_table({"central_evaluation": {**metrics, "brier": 0.1}, "n_trees": 1}, {})
    four = results_table({"central_evaluation": {**metrics, "brier_multiclass": 0.1}, "n_trees": 1}, {})
    assert "logit-DeLong for ROC AUC, log-scale" in two and "one-vs-rest" not in two
    assert "logit-DeLong for ROC AUC, macro one-vs-rest, log-scale" in four
