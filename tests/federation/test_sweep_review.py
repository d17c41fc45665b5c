"""`edprf sweep` after the simulation review (S2 #3, #4, #6, #8, #9, #12; S3 #10, #11, #14): a skew axis, the
marginals part, the realised partition, the columns a paper table needs, and the time-series caveat."""

from __future__ import annotations

import csv

import pytest

from edprf_fl.cli._main import build_parser, main
from edprf_fl.simulation import SimulationSettings, _sweep, sweep_grid, sweep_table


def _csv_rows(path) -> list[dict[str, str]]:
    with path.open() as fh:
        return list(csv.DictReader(fh))


# 1. (S2 #3) the skew axis: --alphas


def test_alphas_are_an_axis_of_dirichlet_configurations_only(tmp_path, monkeypatch):
    """`--alpha 0.1,1` failed ('invalid float value') and a sweep ran one alpha; an iid configuration must not be
    repeated per alpha."""
    assert build_parser().parse_args(["sweep", "--alphas", "0.1,1"]).alphas == [0.1, 1.0]
    base = SimulationSettings(parties=2, max_depth=2)
    configs = sweep_grid(base, {"partition": ["iid", "dirichlet"], "alpha": [0.1, 1.0]})
    assert [(c["partition"], c["alpha"]) for c in configs] == [("iid", ""), ("dirichlet", 0.1), ("dirichlet", 1.0)]
    ran: list[SimulationSettings] = []

    def fake_run(settings, out_dir, **_):  # the settings each run gets; the run itself is not under test here
        ran.append(settings)
        raise _Stop

    monkeypatch.setattr(_sweep, "run_simulation", fake_run)
    for config in configs:
        with pytest.raises(_Stop):
            _sweep.run_sweep(base, [config], 1, tmp_path / str(len(ran)))
    assert [(s.partition, s.alpha) for s in ran] == [("iid", base.alpha), ("dirichlet", 0.1), ("dirichlet", 1.0)]
    rows = [
        {
            **c,
            **dict.fromkeys(key for key, _ in _sweep._TABLE_COLUMNS),
            "seed": 0,
            "federated_accuracy": a,
            "accepted": 2,
        }
        for c, a in zip(configs, (0.9, 0.5, 0.8))
    ]
    table = sweep_table(rows, configs).splitlines()
    assert table[4].startswith("| epsilon | parties | partition | alpha | max_depth |")
    assert [line.split(" | ")[2:5] for line in table[6:9]] == [
        ["iid", "", "2"],
        ["dirichlet", "0.1", "2"],
        ["dirichlet", "1.0", "2"],
    ]
    assert [line.split(" | ")[6] for line in table[6:9]] == ["0.9000", "0.5000", "0.8000"]


class _Stop(Exception):
    pass


def test_alphas_without_a_dirichlet_partition_or_beside_alpha_are_refused(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(_sweep, "run_simulation", lambda *a, **k: pytest.fail("a run started"))
    for argv, said in (
        (["--alphas", "0.1,1"], "--alphas 0.1,1 are concentrations of the dirichlet partition"),
        (["--alphas", "0.1", "--alpha", "1", "--partitions", "dirichlet"], "--alpha and --alphas: give one"),
    ):
        assert main(["sweep", *argv, "--output", str(tmp_path / "out")]) == 1
        assert said in capsys.readouterr().err


# 2. (S2 #4) the marginals part


@pytest.fixture(scope="module")
def bank_sweep(tmp_path_factory):
    """One real two-class run (embedded bank data, 2 parties, depth 2; ~8 s), its sweep.csv and sweep.md."""
    out = tmp_path_factory.mktemp("bank") / "sweep"
    argv = ["sweep", "--dataset", "bank_marketing", "--epsilons", "1", "--seeds", "1", "--parties", "2"]
    assert main([*argv, "--max-depth", "2", "--engine", "in-process", "--output", str(out)]) == 0
    [row] = _csv_rows(out / "sweep.csv")
    return out, row, (out / "sweep.md").read_text()


def test_the_marginals_part_is_in_the_csv_and_said_in_the_table(bank_sweep):
    """On two classes 90% of each party's rows go to class histograms; sweep.md said nothing of it."""
    import json

    out, row, table = bank_sweep
    marginals = json.loads((out / "run-0000" / "report.json").read_text())["marginals"]
    assert marginals["share"] > 0  # the run has a marginals part: what the columns must carry
    assert float(row["marginals_share"]) == marginals["share"]
    assert int(row["marginals_bins"]) == marginals["bins"]
    assert float(row["federated_trees_alone_accuracy"]) == marginals["test_accuracy_trees_alone"]
    assert float(row["federated_marginals_alone_accuracy"]) == marginals["test_accuracy_marginals_alone"]
    assert 0 < float(row["central_marginals_share"]) < 1 and row["central_residual_pass"] in ("True", "False")
    share = f"{100 * marginals['share']:g}%"
    assert f"each party spends {share} of its rows on one-way class histograms" in table
    assert "the depth and trees axes act on the rest only" in table


# 3. (S2 #6, #12) the realised partition


@pytest.fixture(scope="module")
def skewed_sweep(tmp_path_factory):
    """One real run that leaves parties with a single row: wall robot (4 classes), 8 parties, Dirichlet 0.02,
    seed 0 (~6 s); its directory, sweep.csv row, sweep.md and stderr."""
    out = tmp_path_factory.mktemp("skew") / "sweep"
    argv = ["sweep", "--epsilons", "1", "--seeds", "1", "--parties", "8", "--max-depth", "2"]
    argv += ["--partitions", "dirichlet", "--alpha", "0.02", "--engine", "in-process", "--output", str(out)]
    import contextlib
    import io

    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        assert main(argv) == 0
    [row] = _csv_rows(out / "sweep.csv")
    return out, row, (out / "sweep.md").read_text(), err.getvalue()


def test_each_run_records_its_partition_exactly_and_the_csv_summarises_it(skewed_sweep):
    """simulation.json had no per-party rows or class counts (only the workspace CSVs told); sweep runs wrote
    no simulation.json at all."""
    import json

    import pandas as pd

    out, row, _, _ = skewed_sweep
    run = out / "run-0000"
    block = json.loads((run / "simulation.json").read_text())["realised_partition"]
    assert len(block) == 8
    for party, held in block.items():  # exactly what the party holds on disk
        data = pd.read_csv(run / "workspace" / party / "data.csv")
        counts = data["Class"].astype(str).value_counts().to_dict()
        assert held["rows"] == len(data) == held["training_rows"]  # a sweep's runs hold nothing out
        assert {c: n for c, n in held["class_counts"].items() if n} == counts
        assert len(held["class_counts"]) == 4  # every class, zeros too
    sizes = sorted(b["rows"] for b in block.values())
    single = sum(sum(1 for n in b["class_counts"].values() if n) == 1 for b in block.values())
    assert (int(row["party_rows_min"]), int(row["party_rows_max"])) == (sizes[0], sizes[-1])
    assert float(row["party_rows_median"]) == (sizes[3] + sizes[4]) / 2
    assert int(row["single_class_parties"]) == single
    assert int(row["starved_parties"]) == sum(s < 4 for s in sizes) > 0  # this seed leaves 1-row parties


def test_a_party_with_fewer_rows_than_classes_is_warned_of(skewed_sweep):
    """Under Dirichlet 0.1 a party had 1 row and trained on 0; the only sign was a stderr log line."""
    import json

    out, _, table, err = skewed_sweep
    block = json.loads((out / "run-0000" / "simulation.json").read_text())["realised_partition"]
    small = [p for p, b in block.items() if b["rows"] < 4]
    assert small
    for party in small:
        rows = block[party]["rows"]
        assert f"warning: {party} trains on {rows} rows, fewer than the 4 classes (it holds {rows})" in err
    assert "a party trains on fewer rows than there are classes, or on none" in table


def test_a_party_left_with_no_training_rows_is_warned_of():
    """The hold-out can leave a 1-row party nothing to train on: its expected training rows say so."""
    import numpy as np
    import pandas as pd

    from edprf_fl.simulation._partition import partition_summary, partition_warnings

    labels = pd.Series(["a", "b", "a", "b", "a"])
    block = partition_summary(labels, [np.array([0, 1, 2, 3]), np.array([], dtype=int), np.array([4])], ["a", "b"])
    assert [b["rows"] for b in block.values()] == [4, 0, 1]
    assert block["party-0000"]["class_counts"] == {"a": 2, "b": 2}
    assert partition_warnings(block) == [
        "warning: party-0001 trains on 0 rows (it holds 0): the partition left it empty",
        "warning: party-0002 trains on 1 rows, fewer than the 2 classes (it holds 1)",
    ]
    held_out = partition_summary(labels, [np.arange(5)], ["a", "b"], holdout=0.5)
    assert held_out["party-0000"]["training_rows"] is None  # the party's own keyed draw: unknown here
    assert held_out["party-0000"]["expected_training_rows"] == 2  # round(5 * 0.5), as the coordinator expects


# 4. (S2 #8, S3 #10, #11, #14) run_dir, balanced accuracy, the count's epsilon, paired runs, NaN runs


def test_the_csv_names_each_run_s_directory_and_the_baselines_balanced_accuracy(bank_sweep):
    """Row i was run-%04d i by order only; only the federated model had balanced accuracy (bank: majority
    accuracy 0.883 against 0.887 federated, so accuracy says little)."""
    import json

    out, row, table = bank_sweep
    assert row["run_dir"] == "run-0000" and (out / row["run_dir"] / "report.json").is_file()
    baselines = json.loads((out / "run-0000" / "simulation.json").read_text())["baselines"]
    assert float(row["central_balanced_accuracy"]) == baselines["central_edprf"]["balanced_accuracy"]
    assert float(row["non_private_balanced_accuracy"]) == baselines["non_private_rf"]["balanced_accuracy"]
    assert "Paired runs: configurations run at the same seed share the split" in table


def test_every_model_has_f1_and_brier_and_the_baselines_auc_and_balanced_accuracy(bank_sweep):
    """The simulation review (S2 #8): for paper tables on imbalanced data, only the federated model had balanced
    accuracy, no model had F1 or Brier, and the party-alone and non-private models had no AUC in sweep.csv."""
    import json

    out, row, _ = bank_sweep
    fed = json.loads((out / "run-0000" / "report.json").read_text())["central_evaluation"]
    baselines = json.loads((out / "run-0000" / "simulation.json").read_text())["baselines"]
    models = {
        "federated": fed,
        "central": baselines["central_edprf"],
        "party_alone_median": baselines["party_alone_median"],
        "non_private": baselines["non_private_rf"],
        "majority": baselines["majority_class"],
    }
    for prefix, ev in models.items():
        assert float(row[f"{prefix}_f1_macro"]) == ev["f1_macro"], prefix
        assert float(row[f"{prefix}_brier"]) == ev["brier"], prefix  # two classes: the positive class's Brier
    for prefix in ("party_alone_median", "non_private", "majority"):
        assert float(row[f"{prefix}_roc_auc"]) == models[prefix]["roc_auc"], prefix
    for prefix in ("party_alone_median", "majority"):
        assert float(row[f"{prefix}_balanced_accuracy"]) == models[prefix]["balanced_accuracy"], prefix
    assert row["brier_scale"] == fed["brier_scale"] and "0-1" in row["brier_scale"]
    assert float(row["majority_balanced_accuracy"]) == 0.5  # a constant model: what accuracy alone hides
    draws = baselines["central_edprf"]["accuracy_draws"]
    assert len(draws) == 5 and float(row["central_accuracy_draws_mean"]) == pytest.approx(sum(draws) / 5, abs=1e-15)


def test_the_count_epsilon_is_carried_when_the_report_gives_it():
    from edprf_fl.simulation import SimulationTimings
    from edprf_fl.simulation._run import SimulationReport

    parties = [
        {"party_id": f"party-{i}", "node_id": i, "status": "accepted", "max_depth": 3, "count_epsilon": e}
        for i, e in enumerate((0.05, 0.05))
    ]
    federated = {"parties": parties, "central_evaluation": {}}
    report = SimulationReport(SimulationSettings(), "wall", "IID", 3, federated, {}, SimulationTimings(0.1, 0.2, 0.3))
    assert _sweep._metrics(report)["count_epsilon"] == 0.05
    for p in parties:
        del p["count_epsilon"]
    assert _sweep._metrics(report)["count_epsilon"] == ""  # not in this report: an empty cell, not a guess


def test_a_cell_says_over_how_many_runs_its_mean_is_when_runs_are_nan():
    """The mean skipped NaN runs while the header still said 'over N seeds'."""
    nan = float("nan")
    assert _sweep._mean_and_spread([0.8, nan, 0.6], 3) == "0.7000 ± 0.1414 (2 of 3 runs)"
    assert _sweep._mean_and_spread([0.8, 0.6], 2) == "0.7000 ± 0.1414"
    assert _sweep._mean_and_spread([nan, nan], 2) == "nan"  # no value: no "± nan" (review rev-research2 N4)
    assert _sweep._mean_and_spread([0.8, nan], 2) == "0.8000 (1 of 2 runs)"
    assert "A mean skips runs without a value (NaN)" in _sweep._spread_text(3)


# 5. (S2 #9) the time-series caveat


def test_the_wall_robot_s_time_series_caveat_is_in_the_sweep_s_output_and_table(skewed_sweep, bank_sweep):
    """`edprf demo` said random splits of the wall robot's rows are optimistic; sweep (whose default dataset it
    is) said nothing."""
    from edprf_fl.simulation._marks import TIME_SERIES_NOTE

    assert TIME_SERIES_NOTE == "rows of this dataset are a time series; random splits are optimistic for every method."
    _, row, table, err = skewed_sweep
    assert row["dataset"] == "wall_robot_navigation"
    assert f"note: {TIME_SERIES_NOTE}" in err
    assert f"Note (wall_robot_navigation): {TIME_SERIES_NOTE}" in table
    assert "time series" not in bank_sweep[2]  # not said of data it does not concern


def test_a_multiclass_run_s_brier_column_is_the_sum_over_classes():
    """The whole-change review: only the two-class Brier key was tested; more classes report brier_multiclass."""
    from edprf_fl.simulation import _sweep

    metrics = {"f1_macro": 0.5, "brier_multiclass": 0.3, "brier_scale": "sum over classes, 0-2"}
    out = _sweep._more_metrics(metrics, {"central_edprf": metrics | {"accuracy_draws": [0.5, 0.7]}})
    assert out["federated_brier"] == out["central_brier"] == 0.3 and out["brier_scale"] == "sum over classes, 0-2"
    assert (
        out["central_accuracy_draws_mean"] == pytest.approx(0.6)
        and out["non_private_brier"] != out["non_private_brier"]
    )
