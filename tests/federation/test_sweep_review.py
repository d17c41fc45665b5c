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
