"""Review rev-research R3, R9, R10: a sweep stopped by Ctrl-C is finished by ``--resume`` (its rows those of an
uninterrupted sweep), sweeps of other seeds (``--seed-start``) become one table with ``edprf sweep-report``,
which refuses rows of other data or settings by name; the plots carry the dataset's note and, on two classes,
ROC AUC beside accuracy."""

from __future__ import annotations

import csv
import json
import shutil
import sys
from pathlib import Path

import pytest

from edprf_fl.cli._main import main
from edprf_fl.simulation import _sweep

from .test_sweep import TINY, _report

GRID = ("--epsilons", "0.5,1", "--parties", "2", "--max-depth", "2", "--engine", "in-process")
"""Two configurations, the quickest real ones (about 1.5 s a run)."""

TIMED = {"seconds", "wall_seconds", "command"}
"""Columns that differ between two sweeps of the same runs: the times, and the command that ran them."""


def _edprf(monkeypatch, *argv: str) -> int:
    """``edprf ARGV`` as the shell runs it: ``sys.argv`` is what the provenance records."""
    with monkeypatch.context() as m:
        m.setattr(sys, "argv", ["edprf", *argv])
        return main(list(argv))


def _csv_rows(path) -> list[dict[str, str]]:
    with path.open() as fh:
        return list(csv.DictReader(fh))


def _table(path) -> str:
    """sweep.md from its table on (the provenance above it names the commands, which differ)."""
    text = path.read_text()
    return text[text.index("Seeded research runs") :]


@pytest.fixture(scope="module")
def whole(tmp_path_factory):
    """An uninterrupted real sweep of the two configurations with seeds 0 and 1 (4 runs, ~6 s)."""
    out = tmp_path_factory.mktemp("whole") / "sweep"
    with pytest.MonkeyPatch.context() as m:
        assert _edprf(m, "sweep", *GRID, "--seeds", "2", "--output", str(out)) == 0
    return out


# 1. --resume


@pytest.mark.slow
def test_a_resumed_sweep_has_the_rows_of_an_uninterrupted_one(whole, tmp_path, monkeypatch, capsys):
    real, started = _sweep.run_simulation, []

    def stopped_in_the_third_run(settings, out_dir, **kwargs):
        started.append(out_dir.name)
        if len(started) == 3:  # Ctrl-C while the third run writes its files: a half-written run-0002
            (out_dir / "workspace").mkdir(parents=True)
            (out_dir / "report.json").write_text("{}")
            (out_dir / "left-by-the-interruption").write_text("x")  # gone after the resume (review rev-s64 F6)
            raise KeyboardInterrupt
        return real(settings, out_dir, **kwargs)

    monkeypatch.setattr(_sweep, "run_simulation", stopped_in_the_third_run)
    out = tmp_path / "sweep"
    argv = ["sweep", *GRID, "--seeds", "2", "--output", str(out)]
    assert _edprf(monkeypatch, *argv) == 130
    err = capsys.readouterr().err
    assert f"{out / 'run-0002'} holds the unfinished run (no row in sweep.csv)" in err and "--resume" in err
    assert len(_csv_rows(out / "sweep.csv")) == 2
    monkeypatch.setattr(_sweep, "run_simulation", real)
    assert _edprf(monkeypatch, *argv, "--resume") == 0
    err = capsys.readouterr().err
    assert f"removed {out / 'run-0002'}: the run an interruption stopped (no row in sweep.csv); it runs again" in err
    assert "resuming the sweep in" in err and "starting run 1 of 2" in err  # the two runs left, no more
    got, expected = _csv_rows(out / "sweep.csv"), _csv_rows(whole / "sweep.csv")
    assert [{k: v for k, v in r.items() if k not in TIMED} for r in got] == [
        {k: v for k, v in r.items() if k not in TIMED} for r in expected
    ]  # the same runs in the same directories, the same metrics to the last digit
    assert [r["command"].endswith("--resume") for r in got] == [False, False, True, True]
    assert _table(out / "sweep.md") == _table(whole / "sweep.md")
    top = (out / "sweep.md").read_text().splitlines()
    assert top[1].startswith("- 2 runs (seeds 0-1) by edprf-fl") and top[1].endswith(f"--output {out}`")
    assert top[2].startswith("- 2 runs (seeds 0-1) by edprf-fl") and top[2].endswith(f"--output {out} --resume`")
    assert (out / "accuracy_vs_epsilon.png").is_file() and (out / "run-0002" / "simulation.json").is_file()
    assert not (out / "run-0002" / "left-by-the-interruption").exists()  # removed, not run over


def _made_here(settings):
    """:func:`_report` with this code's provenance, as run_simulation gives it."""
    from dataclasses import replace

    from edprf_fl import Provenance

    return replace(_report(settings), provenance=Provenance.current())


def _fake_sweep(monkeypatch, out, *argv: str) -> None:
    """A sweep of TINY's configuration with run_simulation faked (no Flower, no data split)."""

    def run(settings, out_dir, **_):
        out_dir.mkdir(parents=True)
        return _made_here(settings)

    monkeypatch.setattr(_sweep, "run_simulation", run)
    assert _edprf(monkeypatch, "sweep", *TINY, *argv, "--output", str(out)) == 0


def _fake_resume(monkeypatch, out) -> None:
    """``edprf sweep --resume OUT`` (every option from its sweep.json) with run_simulation faked."""
    monkeypatch.setattr(_sweep, "run_simulation", lambda s, d, **_: (d.mkdir(parents=True), _made_here(s))[1])
    assert main(["sweep", "--resume", str(out)]) == 0


def test_resume_refuses_other_options_and_names_them(tmp_path, monkeypatch, capsys):
    out = tmp_path / "sweep"
    _fake_sweep(monkeypatch, out, "--seeds", "2")
    monkeypatch.setattr(_sweep, "run_simulation", lambda *a, **k: pytest.fail("a run started"))
    assert main(["sweep", *TINY, "--seeds", "2", "--n-bins", "8", "--output", str(out), "--resume"]) == 1
    err = capsys.readouterr().err
    assert f"--resume: the sweep in {out} was run with other options; --n-bins: 20 there, 8 here" in err
    argv = ["sweep", *TINY, "--epsilons", "1,2", "--seeds", "3"]
    argv.remove("--epsilons")
    argv.remove("1")  # TINY's --epsilons 1 replaced
    assert main([*argv, "--output", str(out), "--resume"]) == 1
    err = capsys.readouterr().err
    assert "--epsilons: 1 there, 1,2 here; --seeds: 2 there, 3 here" in err
    # all pairs done: nothing runs, the table and plots are written again
    (out / "sweep.md").unlink()
    assert main(["sweep", *TINY, "--seeds", "2", "--output", str(out), "--resume"]) == 0
    assert "resuming the sweep in" in capsys.readouterr().err and (out / "sweep.md").is_file()


def test_resume_needs_a_sweep_started_by_this_version(tmp_path, capsys):
    out = tmp_path / "sweep"
    assert main(["sweep", *TINY, "--resume"]) == 1
    assert (
        "--resume needs the directory of the sweep to finish: --resume DIR (or --output DIR)" in capsys.readouterr().err
    )
    assert main(["sweep", *TINY, "--resume", "--overwrite", "--output", str(out)]) == 1
    assert "--resume and --overwrite: give one" in capsys.readouterr().err
    out.mkdir()
    (out / "sweep.csv").write_text("epsilon\n1.0\n")  # an older sweep: no sweep.json
    assert main(["sweep", *TINY, "--resume", "--output", str(out)]) == 1
    assert f"--resume: {out} holds no sweep record (sweep.json)" in capsys.readouterr().err


# 2. edprf sweep-report


@pytest.mark.slow
def test_a_report_of_two_seed_start_halves_is_the_table_of_one_sweep_over_all_seeds(
    whole, tmp_path, monkeypatch, capsys
):
    first, second, report = tmp_path / "first", tmp_path / "second", tmp_path / "report"
    assert _edprf(monkeypatch, "sweep", *GRID, "--seeds", "1", "--output", str(first)) == 0
    assert _edprf(monkeypatch, "sweep", *GRID, "--seeds", "1", "--seed-start", "1", "--output", str(second)) == 0
    capsys.readouterr()
    assert _edprf(monkeypatch, "sweep-report", str(first), str(second), "--output", str(report)) == 0
    printed = capsys.readouterr()
    assert _table(report / "sweep.md") == _table(whole / "sweep.md")
    assert printed.out.startswith("Seeded research runs") and "4 runs from 2 sweeps" in printed.err
    top = (report / "sweep.md").read_text().splitlines()
    assert top[1].startswith("- 2 runs (seed 0) by edprf-fl") and top[1].endswith(f"--output {first}`")
    assert top[2].startswith("- 2 runs (seed 1) by edprf-fl") and "--seed-start 1" in top[2]
    assert top[3].startswith(f"- this table from {first}, {second} by edprf-fl") and "sweep-report" in top[3]
    assert f" in {Path.cwd()}: `" in top[3]  # the report's working directory (review rev-research2 N14)
    assert (report / "accuracy_vs_epsilon.png").is_file() and (report / "sweep.csv").is_file()


@pytest.fixture
def halves(tmp_path, monkeypatch):
    """Two faked sweeps of TINY's configuration: seed 0, and seeds 1-2 (--seed-start 1)."""
    first, second = tmp_path / "first", tmp_path / "second"
    _fake_sweep(monkeypatch, first)
    _fake_sweep(monkeypatch, second, "--seeds", "2", "--seed-start", "1")
    return first, second


def test_a_report_refuses_rows_of_other_data_or_settings_by_name(halves, tmp_path, capsys):
    first, second = halves
    out = tmp_path / "report"
    assert main(["sweep-report", str(first), str(second), "--output", str(out)]) == 0
    assert "| 1.0 | 2 | iid | 2 | 1 | 0.6000 ± 0.1000 |" in (out / "sweep.md").read_text()  # seeds 0, 1, 2
    capsys.readouterr()

    def refused(sweep_dir, said: str) -> None:
        assert main(["sweep-report", str(first), str(sweep_dir), "--output", str(tmp_path / "never")]) == 1
        assert said in capsys.readouterr().err
        assert not (tmp_path / "never").exists()

    other = tmp_path / "settings"  # another --n-bins in its record
    shutil.copytree(second, other)
    record = json.loads((other / "sweep.json").read_text())
    record["settings"]["n_bins"] = 8
    (other / "sweep.json").write_text(json.dumps(record))
    refused(other, f"--n-bins: expected 20 (as in {first / 'sweep.json'}), got 8 in {other / 'sweep.json'}")

    for column, value, said in (
        ("data_sha256", "sha256:other", "expected data_sha256 'sha256:"),
        ("seeded_noise", "False", "expected seeded_noise True (as in"),
    ):
        shutil.rmtree(other)
        shutil.copytree(second, other)
        rows = _csv_rows(other / "sweep.csv")
        rows[1][column] = value
        _write_rows(other / "sweep.csv", rows)
        refused(other, f"{other / 'sweep.csv'} (run-0001): {said}")

    rows = [{k: v for k, v in r.items() if k != "influence_cuts"} for r in _csv_rows(second / "sweep.csv")]
    _write_rows(other / "sweep.csv", rows)  # an older version's columns
    refused(other, f"{other / 'sweep.csv'}: expected the columns of {first / 'sweep.csv'}, got missing influence_cuts")

    refused(first, "seed 0: in " + f"{first / 'sweep.csv'} (run-0000) and in {first / 'sweep.csv'} (run-0000)")
    assert main(["sweep-report", str(first), "--output", str(first)]) == 1
    assert f"--output {first} is one of the sweeps read" in capsys.readouterr().err
    assert main(["sweep-report", str(tmp_path / "none"), "--output", str(tmp_path / "never")]) == 1
    assert f"{tmp_path / 'none'}: no such directory" in capsys.readouterr().err


def _write_rows(path, rows: list[dict[str, str]]) -> None:
    with path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


# 3. the plots: the dataset's note (R9), ROC AUC on two classes (R10)


def test_the_sweep_plots_carry_the_dataset_s_note():
    from edprf_fl.simulation._plot import _sweep_runs_text

    wall = _sweep_runs_text([{"seed": 0, "dataset": "wall_robot_navigation"}], 1)
    assert wall.endswith(
        "\nnote: rows of this dataset are a time series; random splits are optimistic for every method."
    )
    assert "note" not in _sweep_runs_text([{"seed": 0, "dataset": "bank_marketing"}], 1)


def test_two_class_sweeps_draw_roc_auc_beside_accuracy(tmp_path):
    pytest.importorskip("matplotlib")
    from edprf_fl.simulation import plot_sweep

    def row(epsilon: float, seed: int, scale: str) -> dict:
        models = ("federated", "central", "party_alone_median")
        return {
            "epsilon": epsilon,
            "parties": 2,
            "partition": "iid",
            "alpha": "",
            "max_depth": 2,
            "n_trees": 1,
            "seed": seed,
            "majority_accuracy": 0.88,
            "brier_scale": scale,
            **{f"{m}_{metric}": 0.7 + epsilon / 10 for m in models for metric in ("accuracy", "roc_auc")},
        }

    binary = [row(e, s, "binary, class 'yes' (0-1)") for e in (0.5, 1.0) for s in (0, 1)]
    assert plot_sweep(binary, [], tmp_path) == [
        tmp_path / "accuracy_vs_epsilon.png",
        tmp_path / "roc_auc_vs_epsilon.png",
    ]
    several = [row(e, s, "sum over classes, 0-2") for e in (0.5, 1.0) for s in (0, 1)]
    (tmp_path / "multi").mkdir()
    assert plot_sweep(several, [], tmp_path / "multi") == [tmp_path / "multi" / "accuracy_vs_epsilon.png"]


# review rev-research2 N1, N2, N15: the data identified by content


WALL = Path(__file__).resolve().parents[2] / "edprf_core" / "datasets"


def _wall_copy(directory: Path) -> list[str]:
    """A copy of the wall robot's data and schema in ``directory``: the options that read it."""
    directory.mkdir()
    shutil.copy(WALL / "wall_robot_navigation.csv.gz", directory / "wall.csv.gz")
    shutil.copy(WALL / "wall_robot_navigation.schema.toml", directory / "wall.schema.toml")
    return ["--data", str(directory / "wall.csv.gz"), "--schema", str(directory / "wall.schema.toml")]


def _rewrite_rows(path: Path, keep: int) -> None:
    """The wall data with only its first ``keep`` rows (gzip), in place."""
    import gzip

    lines = gzip.decompress(path.read_bytes()).decode().splitlines(keepends=True)
    path.write_bytes(gzip.compress("".join(lines[: keep + 1]).encode()))


def test_resume_refuses_data_or_a_schema_changed_in_place(tmp_path, monkeypatch, capsys):
    data = _wall_copy(tmp_path / "data")
    out = tmp_path / "sweep"
    _fake_sweep(monkeypatch, out, *data, "--seeds", "2")
    record = json.loads((out / "sweep.json").read_text())
    rows = _csv_rows(out / "sweep.csv")
    assert record["data_sha256"].startswith("sha256:") and record["schema_fingerprint"].startswith("sha256:")
    assert {r["data_sha256"] for r in rows} == {record["data_sha256"]}
    _write_rows(out / "sweep.csv", rows[:1])  # seed 1 to be run again
    monkeypatch.setattr(_sweep, "run_simulation", lambda *a, **k: pytest.fail("a run started"))
    argv = ["sweep", *TINY, *data, "--seeds", "2", "--output", str(out), "--resume"]
    _rewrite_rows(tmp_path / "data" / "wall.csv.gz", 5000)  # the data changed in place: same path, same name
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert (
        f"--resume: the data (data_sha256): expected {record['data_sha256']} (as in {out / 'sweep.json'}), got " in err
    )
    assert f"in {tmp_path / 'data' / 'wall.csv.gz'}: the data changed since the sweep started" in err
    shutil.copy(WALL / "wall_robot_navigation.csv.gz", tmp_path / "data" / "wall.csv.gz")
    schema = tmp_path / "data" / "wall.schema.toml"
    schema.write_text(schema.read_text().replace("upper = 5.0", "upper = 6.0", 1))
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert f"--resume: the schema (schema_fingerprint): expected {record['schema_fingerprint']} (as in" in err
    assert f"in {schema}: the schema changed" in err
    assert len(_csv_rows(out / "sweep.csv")) == 1  # nothing ran, nothing removed


def test_a_report_refuses_other_data_by_content_and_takes_the_same_data_at_another_path(tmp_path, monkeypatch, capsys):
    first, second, third = tmp_path / "first", tmp_path / "second", tmp_path / "third"
    _fake_sweep(monkeypatch, first, *_wall_copy(tmp_path / "a"))
    _fake_sweep(monkeypatch, second, *_wall_copy(tmp_path / "b"), "--seed-start", "1")  # a copy elsewhere
    capsys.readouterr()
    assert main(["sweep-report", str(first), str(second), "--output", str(tmp_path / "ab")]) == 0
    # review rev-research2 N15: not refused by its path ('--data: expected ... got ...'), and said in the table
    sha = json.loads((first / "sweep.json").read_text())["data_sha256"]
    said = (
        f"NOTE: data read from 2 paths, same content (data_sha256 {sha[:19]}...): {tmp_path / 'a' / 'wall.csv.gz'} "
        f"({first}); {tmp_path / 'b' / 'wall.csv.gz'} ({second})."
    )
    schema_said = "NOTE: schema read from 2 paths, same fingerprint (schema_fingerprint sha256:"
    err, table = capsys.readouterr().err, (tmp_path / "ab" / "sweep.md").read_text()
    assert said in err and said in table and schema_said in table and "expected" not in err
    assert main(["sweep-report", str(first), "--output", str(tmp_path / "a1")]) == 0
    assert "NOTE: data read" not in (tmp_path / "a1" / "sweep.md").read_text()  # one path: nothing to say
    data = _wall_copy(tmp_path / "c")
    _rewrite_rows(tmp_path / "c" / "wall.csv.gz", 5000)  # a re-export: same name, other rows
    _fake_sweep(monkeypatch, third, *data, "--seed-start", "2")
    capsys.readouterr()
    assert main(["sweep-report", str(first), str(third), "--output", str(tmp_path / "never")]) == 1
    err = capsys.readouterr().err
    assert "data_sha256: expected sha256:" in err and f"(as in {first / 'sweep.json'}), got sha256:" in err
    assert f"in {third / 'sweep.json'}: rows of different data make no single table" in err
    (third / "sweep.json").unlink()  # the rows alone still carry the hash
    assert main(["sweep-report", str(first), str(third), "--output", str(tmp_path / "never")]) == 1
    assert f"{third / 'sweep.csv'} (run-0000): expected data_sha256 'sha256:" in capsys.readouterr().err
    assert not (tmp_path / "never").exists()


def test_rows_without_a_data_hash_are_refused_by_resume_and_noted_by_a_report(tmp_path, monkeypatch, capsys):
    old, new = tmp_path / "old", tmp_path / "new"
    _fake_sweep(monkeypatch, old, "--seeds", "2")
    _fake_sweep(monkeypatch, new, "--seed-start", "2")
    rows = [{k: v for k, v in r.items() if k != "data_sha256"} for r in _csv_rows(old / "sweep.csv")]
    _write_rows(old / "sweep.csv", rows[:1])  # an older edprf's sweep, interrupted after one run
    record = json.loads((old / "sweep.json").read_text())
    del record["data_sha256"], record["schema_fingerprint"]
    (old / "sweep.json").write_text(json.dumps(record))
    monkeypatch.setattr(_sweep, "run_simulation", lambda *a, **k: pytest.fail("a run started"))
    assert main(["sweep", *TINY, "--seeds", "2", "--output", str(old), "--resume"]) == 1
    assert f"--resume: {old / 'sweep.json'} records no hash of its data" in capsys.readouterr().err
    assert main(["sweep-report", str(old), str(new), "--output", str(tmp_path / "report")]) == 0
    said = f"NOTE: the rows of {old} carry no hash of their data"
    assert said in capsys.readouterr().err and said in (tmp_path / "report" / "sweep.md").read_text()


# review rev-research2 N3: one process writes in a sweep directory at a time


def test_a_second_process_on_a_sweep_directory_is_refused_naming_the_first(tmp_path, monkeypatch, capsys):
    import os

    from edprf_fl.simulation import sweep_lock

    out = tmp_path / "sweep"
    _fake_sweep(monkeypatch, out, "--seeds", "2")
    rows = _csv_rows(out / "sweep.csv")
    _write_rows(out / "sweep.csv", rows[:1])  # run-0001 is live in the other process
    monkeypatch.setattr(_sweep, "run_simulation", lambda *a, **k: pytest.fail("a run started"))
    held = f"{out} is in use by another edprf (pid {os.getpid()}: edprf sweep --output {out})"
    with sweep_lock(out, f"edprf sweep --output {out}"):  # a separate open file: flock refuses it as another's
        assert main(["sweep", *TINY, "--seeds", "2", "--output", str(out), "--resume"]) == 1
        assert held in capsys.readouterr().err
        assert (out / "run-0001").is_dir()  # the live run left alone
        assert main(["sweep", *TINY, "--output", str(out), "--overwrite"]) == 1
        assert held in capsys.readouterr().err and len(_csv_rows(out / "sweep.csv")) == 1
        assert main(["sweep-report", str(tmp_path / "other"), "--output", str(out)]) == 1  # no such sweep first
        capsys.readouterr()
        report = tmp_path / "report"
        report.mkdir()
        with sweep_lock(report, "edprf sweep-report"):
            assert main(["sweep-report", str(out), "--output", str(report)]) == 1
            assert (
                f"{report} is in use by another edprf (pid {os.getpid()}: edprf sweep-report)"
                in capsys.readouterr().err
            )
    # the lock goes with its holder: the resume runs now
    monkeypatch.setattr(_sweep, "run_simulation", lambda s, d, **_: (d.mkdir(parents=True), _made_here(s))[1])
    shutil.rmtree(out / "run-0001")
    assert main(["sweep", *TINY, "--seeds", "2", "--output", str(out), "--resume"]) == 0
    assert len(_csv_rows(out / "sweep.csv")) == 2


def test_resume_of_a_missing_directory_says_so(tmp_path, capsys):
    """Review rev-research2 N15: 'no such directory', a wrong argument (exit 2), before the options or the data
    are read; not 'holds no sweep record'."""
    for argv in (["--output", str(tmp_path / "none"), "--resume"], ["--resume", str(tmp_path / "none")]):
        assert main(["sweep", *TINY, *argv]) == 2
        err = capsys.readouterr().err
        assert f"edprf sweep: error: --resume: no such directory: {tmp_path / 'none'}" in err
        assert "sweep record" not in err and not (tmp_path / "none").exists()


# review rev-research2 N15: --resume DIR takes the options from DIR/sweep.json


def _interrupted_after_one_run(out) -> None:
    """``out``'s sweep as Ctrl-C leaves it after its first run: one row, the later runs' directories gone."""
    rows = _csv_rows(out / "sweep.csv")
    _write_rows(out / "sweep.csv", rows[:1])
    for run in rows[1:]:
        shutil.rmtree(out / run["run_dir"])


def test_resume_takes_every_option_from_the_sweep_s_record(tmp_path, monkeypatch, capsys):
    data = _wall_copy(tmp_path / "data")
    out = tmp_path / "sweep"
    asked = ["--partitions", "iid,dirichlet", "--alphas", "0.3", "--n-bins", "8", "--leaf", "label"]
    _fake_sweep(monkeypatch, out, *data, *asked, "--seeds", "2", "--seed-start", "4", "--shuffle-labels-party", "1")
    whole = _csv_rows(out / "sweep.csv")
    _interrupted_after_one_run(out)
    ran = []

    def run(settings, out_dir, **_):
        ran.append(settings)
        out_dir.mkdir(parents=True)
        return _made_here(settings)

    monkeypatch.setattr(_sweep, "run_simulation", run)
    capsys.readouterr()
    with monkeypatch.context() as m:
        m.chdir(tmp_path)  # the record's paths are absolute: the data is found from anywhere
        assert main(["sweep", "--resume", "sweep"]) == 0
    err = capsys.readouterr().err
    said = (
        f"resuming with the recorded options (sweep/sweep.json): --epsilons 1 --parties-list 2 --partitions "
        "iid,dirichlet --alphas 0.3 --max-depths 2 --seeds 2 --seed-start 4 "
        f"--data {tmp_path / 'data' / 'wall.csv.gz'} --schema {tmp_path / 'data' / 'wall.schema.toml'} "
        "--leaf label --n-bins 8 --shuffle-labels-party 1"
    )
    assert said in err and "resuming the sweep in sweep: 1 of its runs finished" in err
    assert [(s.partition, s.seed) for s in ran] == [("iid", 5), ("dirichlet", 4), ("dirichlet", 5)]
    assert {(s.n_bins, s.leaf, s.shuffled_label_parties, s.data) for s in ran} == {
        (8, "label", (1,), tmp_path / "data" / "wall.csv.gz")
    }
    assert [s.alpha for s in ran if s.partition == "dirichlet"] == [0.3, 0.3]
    got = _csv_rows(out / "sweep.csv")
    assert [{k: v for k, v in r.items() if k not in TIMED} for r in got] == [
        {k: v for k, v in r.items() if k not in TIMED} for r in whole
    ]


def test_resume_compares_the_options_given_with_the_record(tmp_path, monkeypatch, capsys):
    data = _wall_copy(tmp_path / "data")
    out = tmp_path / "sweep"
    _fake_sweep(monkeypatch, out, *data, "--n-bins", "8", "--seeds", "2")
    _interrupted_after_one_run(out)
    monkeypatch.setattr(_sweep, "run_simulation", lambda *a, **k: pytest.fail("a run started"))
    capsys.readouterr()
    # an option given at its default is still given: compared, never replaced by the record's value
    assert main(["sweep", "--resume", str(out), "--n-bins", "20", "--seeds", "3"]) == 1
    err = capsys.readouterr().err
    assert "--n-bins: 8 there, 20 here; --seeds: 2 there, 3 here" in err and "drop them" in err
    assert main(["sweep", "--resume", str(out), "--dataset", "bank_marketing"]) == 1
    err = capsys.readouterr().err  # a difference from the record, not '--data was given: drop one'
    assert "--dataset: wall_robot_navigation there, bank_marketing here" in err and "drop one" not in err
    assert main(["sweep", "--resume", str(out), "--output", str(tmp_path)]) == 1
    assert f"--resume {out} and --output {tmp_path}: give the sweep's directory once" in capsys.readouterr().err
    assert main(["sweep", "--resume"]) == 1
    assert "--resume needs the directory of the sweep to finish" in capsys.readouterr().err
    (tmp_path / "data").rename(tmp_path / "moved")  # the recorded data elsewhere now: said, and found by --data
    assert main(["sweep", "--resume", str(out)]) == 1
    err = capsys.readouterr().err
    assert f"--resume: the recorded --data {tmp_path / 'data' / 'wall.csv.gz'} is missing (moved, or the" in err
    moved = [
        "--data",
        str(tmp_path / "moved" / "wall.csv.gz"),
        "--schema",
        str(tmp_path / "moved" / "wall.schema.toml"),
    ]
    assert main(["sweep", "--resume", str(out), *moved, "--seeds", "3"]) == 1  # the same data: only --seeds differs
    assert "was run with other options; --seeds: 2 there, 3 here (its command" in capsys.readouterr().err
    (tmp_path / "moved").rename(tmp_path / "data")
    _rewrite_rows(tmp_path / "data" / "wall.csv.gz", 5000)  # the data changed since: refused as before
    assert main(["sweep", "--resume", str(out)]) == 1
    err = capsys.readouterr().err
    assert "resuming with the recorded options" in err
    assert f"in {tmp_path / 'data' / 'wall.csv.gz'}: the data changed since the sweep started" in err
    assert len(_csv_rows(out / "sweep.csv")) == 1  # nothing ran, nothing removed


def test_a_resume_with_the_data_at_a_new_path_records_it_for_the_next_resume(tmp_path, monkeypatch, capsys):
    """Closing note of h-resume: sweep.json kept naming the old path, and a second resume without --data refused."""
    import stat

    _fake_sweep(monkeypatch, out := tmp_path / "sweep", *_wall_copy(tmp_path / "data"), "--seeds", "3")
    before = json.loads((out / "sweep.json").read_text())
    _interrupted_after_one_run(out)
    (tmp_path / "data").rename(tmp_path / "moved")
    moved = {"data": str(tmp_path / "moved" / "wall.csv.gz"), "schema": str(tmp_path / "moved" / "wall.schema.toml")}
    ran = []

    def second_run_stopped(settings, out_dir, **_):  # the resume is interrupted in turn, after one more run
        if ran:
            raise KeyboardInterrupt
        ran.append(out_dir.name)
        out_dir.mkdir(parents=True)
        return _made_here(settings)

    monkeypatch.setattr(_sweep, "run_simulation", second_run_stopped)
    capsys.readouterr()
    assert main(["sweep", "--resume", str(out), "--data", moved["data"], "--schema", moved["schema"]]) == 130
    err = capsys.readouterr().err
    said = f"{out / 'sweep.json'} now names --data {moved['data']} (was {tmp_path / 'data' / 'wall.csv.gz'}); --schema"
    assert said in err and "where a later --resume finds it" in err
    after = json.loads((out / "sweep.json").read_text())
    assert {k: after["settings"][k] for k in moved} == moved
    assert {**after, "settings": {**after["settings"], **before["settings"]}} == before  # nothing else changed
    assert stat.S_IMODE((out / "sweep.json").stat().st_mode) == 0o600
    assert not [p.name for p in out.iterdir() if p.name.startswith(".sweep.json")]  # no temporary file left
    _fake_resume(monkeypatch, out)  # no --data: the record's new path
    err = capsys.readouterr().err
    assert f"--data {moved['data']} --schema {moved['schema']}" in err and "is missing" not in err
    assert "now names" not in err  # already the record's
    assert [r["seed"] for r in _csv_rows(out / "sweep.csv")] == ["0", "1", "2"]


# review rev-research2 N6: a row cut off while it was written


def test_a_cut_off_last_row_is_run_again_by_resume_and_refused_by_a_report_by_line(tmp_path, monkeypatch, capsys):
    out = tmp_path / "sweep"
    _fake_sweep(monkeypatch, out, "--seeds", "3")
    whole = (out / "sweep.csv").read_bytes()
    lines = whole.splitlines(keepends=True)
    (out / "sweep.csv").write_bytes(b"".join(lines[:3]) + lines[3][: len(lines[3]) * 2 // 5])  # a kill mid-row
    capsys.readouterr()
    assert main(["sweep-report", str(out), "--output", str(tmp_path / "never")]) == 1
    err = capsys.readouterr().err
    assert f"{out / 'sweep.csv'} line 4: an incomplete row (" in err and "no end of line): cut off while" in err
    assert "Traceback" not in err and not (tmp_path / "never").exists()
    _fake_sweep(monkeypatch, out, "--seeds", "3", "--resume")
    err = capsys.readouterr().err
    assert f"dropped {out / 'sweep.csv'} line 4: an incomplete row" in err and "its run runs again" in err
    assert "resuming the sweep in" in err and "2 of its runs finished" in err and "starting run 1 of 1" in err
    again = _csv_rows(out / "sweep.csv")
    assert [r["run_dir"] for r in again] == ["run-0000", "run-0001", "run-0002"]
    assert (out / "sweep.csv").read_bytes().endswith(b"\n") and (out / "sweep.md").is_file()
    # a row short of fields in the middle (an edited file): refused by its line, never a traceback
    rows = (out / "sweep.csv").read_text().splitlines(keepends=True)
    rows[2] = ",".join(rows[2].split(",")[:10]) + "\n"
    (out / "sweep.csv").write_text("".join(rows))
    assert main(["sweep-report", str(out), "--output", str(tmp_path / "never")]) == 1
    err = capsys.readouterr().err
    assert f"{out / 'sweep.csv'} line 3: an incomplete row (10 of {len(again[0])} fields)" in err
    assert "not the last row" in err and "--resume drops it" not in err


def test_a_torn_last_row_whose_seed_is_no_integer_is_dropped_and_run_again(tmp_path, monkeypatch, capsys):
    """Review rev-s64 F11: a whole line whose seed is not an integer (a write torn by a kill or a power loss) was
    kept in the table, and its run run again beside it."""
    out = tmp_path / "sweep"
    _fake_sweep(monkeypatch, out, "--seeds", "3")
    whole = _csv_rows(out / "sweep.csv")
    for seed in ("", "\x00\x00"):
        torn = [dict(r) for r in whole]
        torn[2]["seed"] = seed
        _write_rows(out / "sweep.csv", torn)
        shutil.rmtree(out / "run-0002", ignore_errors=True)
        capsys.readouterr()
        assert main(["sweep-report", str(out), "--output", str(tmp_path / "never")]) == 1
        err = capsys.readouterr().err
        assert f"{out / 'sweep.csv'} line 4: an incomplete row (seed {seed!r}, not an integer)" in err
        assert "edprf sweep --resume drops it and runs its run again" in err and not (tmp_path / "never").exists()
        _fake_resume(monkeypatch, out)
        err = capsys.readouterr().err
        assert f"dropped {out / 'sweep.csv'} line 4: an incomplete row (seed {seed!r}, not an integer: cut off" in err
        assert "2 of its runs finished" in err and "starting run 1 of 1" in err
        again = _csv_rows(out / "sweep.csv")
        assert [(r["run_dir"], r["seed"]) for r in again] == [("run-0000", "0"), ("run-0001", "1"), ("run-0002", "2")]
    # a last line short of fields, with its end of line: dropped too
    (out / "sweep.csv").write_text("".join((out / "sweep.csv").read_text().splitlines(keepends=True)[:3]) + "1.0,2\n")
    _fake_resume(monkeypatch, out)
    assert f"dropped {out / 'sweep.csv'} line 4: an incomplete row (2 of " in capsys.readouterr().err
    assert len(_csv_rows(out / "sweep.csv")) == 3
    # a torn row in the middle is no interrupted write: refused by its line, nothing dropped or run
    rows = _csv_rows(out / "sweep.csv")
    rows[0]["seed"] = "x"
    _write_rows(out / "sweep.csv", rows)
    monkeypatch.setattr(_sweep, "run_simulation", lambda *a, **k: pytest.fail("a run started"))
    assert main(["sweep", "--resume", str(out)]) == 1
    err = capsys.readouterr().err
    assert f"{out / 'sweep.csv'} line 2: an incomplete row (seed 'x', not an integer)" in err
    assert "not the last row" in err and len(_csv_rows(out / "sweep.csv")) == 3


# review rev-research2 N10: --resume removes the one run an interruption left, never others


def test_resume_removes_only_the_next_run_and_refuses_a_lost_sweep_csv(tmp_path, monkeypatch, capsys):
    out = tmp_path / "sweep"
    _fake_sweep(monkeypatch, out, "--seeds", "3")
    for d in out.glob("run-*"):
        (d / "simulation.json").write_text("{}")
    keep = (out / "sweep.csv").read_text()
    monkeypatch.setattr(_sweep, "run_simulation", lambda *a, **k: pytest.fail("a run started"))
    argv = ["sweep", *TINY, "--seeds", "3", "--output", str(out), "--resume"]
    for lost in ("", None):  # sweep.csv empty, then missing
        (out / "sweep.csv").write_text(lost) if lost is not None else (out / "sweep.csv").unlink()
        assert main(argv) == 1
        err = capsys.readouterr().err
        assert f"--resume: {out / 'sweep.csv'} is missing or holds no row, but {out} holds run-0000, run-0001, " in err
        assert sorted(d.name for d in out.glob("run-*")) == ["run-0000", "run-0001", "run-0002"]  # none removed
    rows = _csv_rows_text(keep)
    _write_rows(out / "sweep.csv", [rows[0], rows[2]])  # run-0001's row lost, not the last run's
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert f"--resume: {out} holds run-0001 without a row in sweep.csv: not an interrupted run's" in err
    assert "not an interrupted run's" in err and (out / "run-0001").is_dir()
    _write_rows(out / "sweep.csv", rows[:1])  # run-0001 and run-0002 without rows: only run-0001 is the interrupted
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "holds run-0002 without a row in sweep.csv, besides the run an interruption stops (run-0001, " in err
    assert (out / "run-0001").is_dir() and (out / "run-0002").is_dir()


def _csv_rows_text(text: str) -> list[dict[str, str]]:
    import io

    return list(csv.DictReader(io.StringIO(text)))


# review rev-research2 N4, N8: cells over different seeds; settings without sweep.json


def _tiny(*epsilons: str) -> list[str]:
    """TINY with other epsilons."""
    argv = list(TINY)
    argv[argv.index("--epsilons") + 1] = ",".join(epsilons)
    return argv


def _fake_grid_sweep(monkeypatch, out, argv) -> None:
    monkeypatch.setattr(_sweep, "run_simulation", lambda s, d, **_: (d.mkdir(parents=True), _made_here(s))[1])
    assert main(["sweep", *argv, "--output", str(out)]) == 0


def test_a_report_of_cells_over_different_seeds_says_each_cell_s_n(tmp_path, monkeypatch, capsys):
    first, second, third, out = (tmp_path / n for n in ("first", "second", "third", "report"))
    _fake_grid_sweep(monkeypatch, first, [*_tiny("1"), "--seeds", "2"])  # eps 1: seeds 0-1
    _fake_grid_sweep(monkeypatch, second, [*_tiny("1", "2"), "--seeds", "2", "--seed-start", "2"])  # 1, 2: 2-3
    _fake_grid_sweep(monkeypatch, third, [*_tiny("4"), "--seed-start", "4"])  # eps 4: seed 4 alone
    capsys.readouterr()
    assert main(["sweep-report", str(first), str(second), str(third), "--output", str(out)]) == 0
    text = (out / "sweep.md").read_text()
    assert "mean ± sample standard deviation over the seeds of each cell, 1-4 seeds per cell" in text
    assert "over 4 seeds" not in text and "± nan" not in text
    assert "| 1.0 | 2 | iid | 2 | 1 | 0.6500 ± 0.1291 |" in text  # seeds 0-3: the table's most, no n
    assert "| 2.0 | 2 | iid | 2 | 1 | 0.7500 ± 0.0707 (n = 2) |" in text
    assert "| 4.0 | 2 | iid | 2 | 1 | 0.9000 (n = 1) |" in text
    from edprf_fl.simulation._plot import _sweep_runs_text

    rows = [{"epsilon": e, "seed": s} for e, seeds in ((1.0, range(4)), (2.0, (2, 3))) for s in seeds]
    assert "over 2-4 seeds per point, not paired across points" in _sweep_runs_text(rows, 4)


def test_a_report_of_an_interrupted_sweep_keeps_its_interrupted_head(tmp_path, monkeypatch, capsys):
    out = tmp_path / "sweep"
    _fake_sweep(monkeypatch, out, "--seeds", "3")
    _write_rows(out / "sweep.csv", _csv_rows(out / "sweep.csv")[:2])
    capsys.readouterr()
    assert main(["sweep-report", str(out), "--output", str(tmp_path / "report")]) == 0
    head = (tmp_path / "report" / "sweep.md").read_text().splitlines()[0]
    assert head == (
        f"INTERRUPTED: {out}: 2 of the 3 runs of its grid finished (sweep.json); this table holds those only "
        "(edprf sweep --resume finishes it)."
    )


def test_a_report_refuses_other_settings_without_sweep_json(tmp_path, monkeypatch, capsys):
    first, second = tmp_path / "first", tmp_path / "second"
    _fake_sweep(monkeypatch, first)
    _fake_sweep(monkeypatch, second, "--seed-start", "1", "--n-bins", "8")
    for d in (first, second):
        (d / "sweep.json").unlink()  # sweep.csv copied alone off a cluster
    capsys.readouterr()
    assert main(["sweep-report", str(first), str(second), "--output", str(tmp_path / "never")]) == 1
    err = capsys.readouterr().err
    assert f"{second / 'sweep.csv'} (run-0000): expected settings_fingerprint 'sha256:" in err
    assert "rows of different settings beyond the grid (compare their sweep.json) make no single table" in err
    _fake_sweep(monkeypatch, tmp_path / "same", "--seed-start", "1")
    (tmp_path / "same" / "sweep.json").unlink()
    assert main(["sweep-report", str(first), str(tmp_path / "same"), "--output", str(tmp_path / "ok")]) == 0
    old = [{k: v for k, v in r.items() if k != "settings_fingerprint"} for r in _csv_rows(second / "sweep.csv")]
    _write_rows(second / "sweep.csv", old)  # an older edprf's rows, without their sweep.json
    assert main(["sweep-report", str(first), str(second), "--output", str(tmp_path / "never")]) == 1
    err = capsys.readouterr().err
    assert f"{second}: no sweep.json, and rows without settings_fingerprint" in err
    assert not (tmp_path / "never").exists()


# review rev-research2 N5: rows of different code


def _made_by_other_code(monkeypatch, out, *argv: str) -> None:
    """A faked sweep whose rows say another edprf made them (0.2.99, a dirty tree)."""
    from dataclasses import replace

    from edprf_fl import Provenance

    other = Provenance("0.2.99", "pyproject.toml", "abc1234-dirty", "edprf sweep ...")
    monkeypatch.setattr(
        _sweep,
        "run_simulation",
        lambda s, d, **_: (d.mkdir(parents=True), replace(_report(s), provenance=other))[1],
    )
    assert main(["sweep", *TINY, *argv, "--output", str(out)]) == 0


def test_rows_of_other_code_are_refused_unless_allowed_and_then_said(tmp_path, monkeypatch, capsys):
    from edprf_fl import Provenance

    here = Provenance.current()
    here_text = f"edprf-fl {here.edprf_version}" + (f" (git {here.git_describe})" if here.git_describe else "")
    first, second = tmp_path / "first", tmp_path / "second"
    _fake_sweep(monkeypatch, first)
    _made_by_other_code(monkeypatch, second, "--seed-start", "1")
    capsys.readouterr()
    argv = ["sweep-report", str(first), str(second), "--output", str(tmp_path / "report")]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert f"come from 2 versions of the code ({here_text}; edprf-fl 0.2.99 (git abc1234-dirty))" in err
    assert "give --allow-mixed-code" in err and not (tmp_path / "report").exists()
    assert main([*argv, "--allow-mixed-code"]) == 0
    top = (tmp_path / "report" / "sweep.md").read_text().split("\n\n")[1]
    assert top.startswith("WARNING: these rows come from 2 versions of the code") and "--allow-mixed-code" in top

    out = tmp_path / "sweep"  # begun by other code, resumed by this
    _made_by_other_code(monkeypatch, out, "--seeds", "2")
    _write_rows(out / "sweep.csv", _csv_rows(out / "sweep.csv")[:1])
    capsys.readouterr()
    resume = ["sweep", *TINY, "--seeds", "2", "--output", str(out), "--resume"]
    monkeypatch.setattr(_sweep, "run_simulation", lambda *a, **k: pytest.fail("a run started"))
    assert main(resume) == 1
    err = capsys.readouterr().err
    assert f"--resume: the rows in {out}/sweep.csv and this resume (the last) come from 2 versions" in err
    assert (out / "run-0001").is_dir() and "resuming the sweep" not in err  # refused before anything is removed
    assert main(["sweep", *TINY, "--output", str(tmp_path / "new"), "--allow-mixed-code"]) == 1
    assert "--allow-mixed-code applies to --resume only" in capsys.readouterr().err
    _fake_sweep(monkeypatch, out, "--seeds", "2", "--resume", "--allow-mixed-code")
    assert "WARNING: these rows come from 2 versions of the code" in (out / "sweep.md").read_text()


# review rev-research2 N11, N12, N16: what the messages and records say


def test_interrupt_messages_say_what_was_written(tmp_path, monkeypatch, capsys):
    from edprf_fl import simulation

    calls = []

    def second_run_stopped(settings, out_dir, **_):
        calls.append(out_dir.name)
        if len(calls) == 2:
            raise KeyboardInterrupt
        out_dir.mkdir(parents=True)
        return _made_here(settings)

    monkeypatch.setattr(_sweep, "run_simulation", second_run_stopped)
    out = tmp_path / "sweep"
    assert main(["sweep", *TINY, "--seeds", "2", "--output", str(out)]) == 130
    err = capsys.readouterr().err
    assert "(marked INTERRUPTED), no plot (one value per axis, or no matplotlib)" in err and "with their" not in err

    def stopped(*a, **k):
        raise KeyboardInterrupt

    calls.clear()
    monkeypatch.setattr(simulation, "plot_sweep", stopped)  # a second Ctrl-C while the plots are drawn
    assert main(["sweep", *TINY, "--seeds", "2", "--output", str(tmp_path / "again")]) == 130
    err = capsys.readouterr().err
    assert "second interrupt: the finished runs' table is in" in err and "their plots were not written" in err
    assert (tmp_path / "again" / "sweep.md").read_text().startswith("INTERRUPTED: 1 of 2 runs finished")
    monkeypatch.setattr(_sweep, "run_simulation", lambda s, d, **_: (d.mkdir(parents=True), _made_here(s))[1])
    assert main(["sweep", *TINY, "--output", str(tmp_path / "last")]) == 130  # Ctrl-C in the final plots
    err = capsys.readouterr().err
    assert "interrupted while writing the table and plots: every run finished" in err
    assert f"edprf sweep --resume {tmp_path / 'last'} runs nothing and writes them again" in err


PEP_3118 = "'T{d:val:q:i1:q:i2:}' is not a valid PEP 3118 buffer format string"
"""What numpy's C code raised in place of a Ctrl-C's KeyboardInterrupt (CI rehearsal 4 at 71544bb)."""


def _ctrl_c(*_, **__):
    """A Ctrl-C: its KeyboardInterrupt recorded, as SIGINT's handler records it."""
    from edprf_fl import record_interrupt

    record_interrupt(interrupt := KeyboardInterrupt())
    raise interrupt


def _ctrl_c_made_an_error(*_, **__):
    """A Ctrl-C whose KeyboardInterrupt C code turned into another error."""
    from edprf_fl import record_interrupt

    record_interrupt(KeyboardInterrupt())
    raise ValueError(PEP_3118)


def test_an_error_c_code_made_of_an_interrupt_still_says_what_was_written(tmp_path, monkeypatch, capsys):
    """Final read, item 10: after a Ctrl-C, C code may raise another error in place of the KeyboardInterrupt; the
    sweep then said nothing of its finished runs (exit 130 from edprf's own handler, but no message and no table)."""
    from edprf_fl import simulation

    def second_run(stop):
        calls = []

        def run(settings, out_dir, **_):
            calls.append(out_dir.name)
            if len(calls) == 2:
                stop()
            out_dir.mkdir(parents=True)
            return _made_here(settings)

        return run

    def sweep(name: str, *argv: str) -> str:
        assert main(["sweep", *TINY, *argv, "--output", str(tmp_path / name)]) == 130
        err = capsys.readouterr().err
        assert PEP_3118 not in err
        return err

    monkeypatch.setattr(_sweep, "run_simulation", second_run(_ctrl_c_made_an_error))
    err = sweep("runs", "--seeds", "2")
    assert f"sweep interrupted after 1 finished run; its rows are in {tmp_path / 'runs' / 'sweep.csv'}" in err
    assert f"the finished runs' table is in {tmp_path / 'runs' / 'sweep.md'} (marked INTERRUPTED)" in err
    assert (tmp_path / "runs" / "sweep.md").read_text().startswith("INTERRUPTED: 1 of 2 runs finished")
    # the second Ctrl-C, while the finished runs' plots are drawn, turned into an error
    monkeypatch.setattr(_sweep, "run_simulation", second_run(_ctrl_c))
    monkeypatch.setattr(simulation, "plot_sweep", _ctrl_c_made_an_error)
    err = sweep("second", "--seeds", "2")
    assert "sweep interrupted after 1 finished run" in err
    assert "second interrupt: the finished runs' table is in" in err and "their plots were not written" in err

    def a_real_error(*_, **__):
        raise ValueError("not an interrupt")

    monkeypatch.setattr(_sweep, "run_simulation", second_run(_ctrl_c))
    monkeypatch.setattr(simulation, "plot_sweep", a_real_error)  # after the first Ctrl-C, but no second one
    err = sweep("error", "--seeds", "2")
    assert "sweep interrupted after 1 finished run" in err and "second interrupt" not in err
    monkeypatch.setattr(_sweep, "run_simulation", lambda s, d, **_: (d.mkdir(parents=True), _made_here(s))[1])
    monkeypatch.setattr(simulation, "plot_sweep", _ctrl_c_made_an_error)  # in the final plots
    err = sweep("last")
    assert "interrupted while writing the table and plots: every run finished" in err
    # an error without an interrupt is itself: said as the error, nothing said of an interrupt
    monkeypatch.setattr(_sweep, "run_simulation", second_run(a_real_error))
    assert main(["sweep", *TINY, "--seeds", "2", "--output", str(tmp_path / "failed")]) == 1
    err = capsys.readouterr().err
    assert "not an interrupt" in err and "interrupted" not in err


def test_a_report_onto_a_report_names_no_run_and_the_record_holds_what_the_runs_used(
    halves, tmp_path, monkeypatch, capsys
):
    first, second = halves
    out = tmp_path / "report"
    assert main(["sweep-report", str(first), str(second), "--output", str(out)]) == 0
    text = (out / "sweep.md").read_text()
    assert "party alone AUC: the party and draw of median accuracy, not a median of the parties' AUCs" in text
    capsys.readouterr()
    assert main(["sweep-report", str(first), str(second), "--output", str(out)]) == 1
    err = capsys.readouterr().err
    assert f"--output {out} already holds a sweep's or a sweep report's files (sweep.csv, sweep.md)" in err
    assert "ledgers" not in err and "run" not in err.split("already holds")[1].split(":")[0]
    settings = json.loads((first / "sweep.json").read_text())["settings"]
    assert (settings["seeded_noise"], settings["evaluation_epsilon"], settings["party_holdout"]) == (True, 0.0, 0.0)
    assert "seed" not in settings


def test_a_central_line_s_label_has_no_empty_alpha():
    from edprf_fl.simulation._plot import _central_lines

    def row(partition, alpha, epsilon, central):
        axes = {"parties": 2, "partition": partition, "alpha": alpha, "max_depth": 2, "n_trees": 1}
        return {**axes, "epsilon": epsilon, "seed": 0, "central_accuracy": central}

    rows = [row("iid", "", e, 0.6 + e / 10) for e in (1.0, 2.0)] + [row("dirichlet", 0.5, e, 0.7) for e in (1.0, 2.0)]
    others = ["parties", "partition", "alpha", "max_depth", "n_trees"]
    keys = [(2, "dirichlet", 0.5, 2, 1), (2, "iid", "", 2, 1)]
    labels = [
        label for label, _, _ in _central_lines(rows, "epsilon", [1.0, 2.0], others, keys, ["partition", "alpha"])
    ]
    assert labels == ["central DP partition=dirichlet, alpha=0.5", "central DP partition=iid"]


def test_one_central_model_over_different_seeds_is_one_legend_entry(tmp_path):
    """Review rev-research2 N4: a report of sweeps of different grids (iid over seeds 0-3 at epsilon 1, dirichlet over
    0-1) drew the one central model as two lines, its means at epsilon 1 being over different seeds."""
    from edprf_fl.simulation import plot_sweep
    from edprf_fl.simulation._plot import _central_lines

    def row(partition, alpha, epsilon, seed):
        axes = {"parties": 2, "partition": partition, "alpha": alpha, "max_depth": 2, "n_trees": 1}
        central = {"central_accuracy": 0.6 + epsilon / 10 + seed / 100, "central_n_trees": 2, "central_max_depth": 2}
        return {
            **axes,
            "epsilon": epsilon,
            "seed": seed,
            **central,
            "federated_accuracy": 0.5,
            "majority_accuracy": 0.4,
        }

    seeds = {("iid", 0.5): (0, 1), ("iid", 1.0): (0, 1, 2, 3), ("iid", 2.0): (2, 3)}
    seeds |= {("dirichlet", 0.5): (0, 1), ("dirichlet", 1.0): (0, 1)}
    rows = [
        row(partition, 0.5 if partition == "dirichlet" else "", epsilon, seed)
        for (partition, epsilon), run in seeds.items()
        for seed in run
    ]
    others = ["parties", "partition", "alpha", "max_depth", "n_trees"]
    keys = [(2, "dirichlet", 0.5, 2, 1), (2, "iid", "", 2, 1)]
    xs = [0.5, 1.0, 2.0]
    lines = _central_lines(rows, "epsilon", xs, others, keys, ["partition", "alpha"])
    assert [(label, [round(m, 4) for m in means], first) for label, (means, _), first in lines] == [
        ("central DP (any partition, alpha) (2-4 seeds per point)", [0.655, 0.715, 0.825], 0)
    ]  # epsilon 1: over seeds 0-3, each seed once
    rows[0]["central_accuracy"] = 0.1  # another model at a seed both ran: a line of its own, as before
    labels = [label for label, _, _ in _central_lines(rows, "epsilon", xs, others, keys, ["partition", "alpha"])]
    assert labels == [
        "central DP partition=dirichlet, alpha=0.5",
        "central DP partition=iid (2-4 seeds per point)",
    ]
    configs = [{k: r[k] for k in ("epsilon", *others)} for r in rows]
    assert plot_sweep(rows, configs, tmp_path) in ([], [tmp_path / "accuracy_vs_epsilon.png"])


def test_the_time_series_note_follows_the_wall_robot_s_schema_to_a_file(tmp_path, monkeypatch, capsys):
    """Review rev-research2 N9: the UCI file under the embedded schema got no note."""
    from edprf_core import example_schema
    from edprf_fl.simulation._plot import _sweep_runs_text

    _fake_sweep(monkeypatch, tmp_path / "sweep", *_wall_copy(tmp_path / "data"))
    assert "note: rows of this dataset are a time series" in capsys.readouterr().err
    wall = example_schema("wall_robot_navigation").fingerprint
    row = {"seed": 0, "dataset": "sensor_readings_24.data", "schema_fingerprint": wall}
    assert _sweep_runs_text([row], 1).endswith("random splits are optimistic for every method.")
    said = "Note (sensor_readings_24.data): rows of this dataset are a time series; random splits are optimistic"
    assert _sweep._dataset_notes([row]) == [f"{said} for every method."]
    assert _sweep._dataset_notes([{**row, "schema_fingerprint": "sha256:other"}]) == []


def test_a_report_writes_the_checked_rows_and_a_later_report_reads_them(halves, tmp_path, monkeypatch, capsys):
    """Review rev-research2 N13: the merged rows existed only in memory, and a report was no input."""
    first, second = halves
    report, third, later = tmp_path / "report", tmp_path / "third", tmp_path / "later"
    assert main(["sweep-report", str(first), str(second), "--output", str(report)]) == 0
    rows = _csv_rows(report / "sweep.csv")
    assert [r["seed"] for r in rows] == ["0", "1", "2"]
    assert [r["run_dir"] for r in rows] == [
        str((first / "run-0000").resolve()),
        str((second / "run-0000").resolve()),
        str((second / "run-0001").resolve()),
    ]
    assert list(rows[0]) == list(_csv_rows(first / "sweep.csv")[0])  # the sweeps' columns
    _fake_sweep(monkeypatch, third, "--seed-start", "3")
    capsys.readouterr()
    assert main(["sweep-report", str(report), str(third), "--output", str(later)]) == 0
    assert "4 runs from 2 sweeps" in capsys.readouterr().err
    assert main(["sweep-report", str(report), str(second), "--output", str(tmp_path / "never")]) == 1
    assert "seed 1: in " in capsys.readouterr().err  # seeds already in the report: refused as before
