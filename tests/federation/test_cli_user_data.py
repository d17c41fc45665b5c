"""The newcomer's path with their own data, through the `edprf` command."""

from __future__ import annotations

import json
import tomllib

import numpy as np
import pytest

from edprf_core import example_schema, load_schema
from edprf_fl import simulation
from edprf_fl.cli._main import build_parser, main
from server import CoordinatorConfig
from server._config import DEFAULT_RUN_CONFIG
from tests.conftest import SHARED_DATA

HEART = SHARED_DATA / "heart_disease_cleveland" / "processed.cleveland.data"
BANK = SHARED_DATA / "bank_marketing" / "bank-full.csv"


@pytest.fixture
def no_flower(monkeypatch):
    """Fail the test if the simulation engine is started."""

    def started(*_, **__):
        raise AssertionError("Flower was started before the arguments were checked")

    from edprf_fl.simulation import _engine

    monkeypatch.setattr(simulation, "simulate_federation", started)
    monkeypatch.setattr(_engine, "simulate_federation", started)  # what run_simulation calls


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--epsilon", "0"], "--epsilon: expected a positive number"),
        (["--max-depth", "50"], "--max-depth: expected 'auto' or an integer in [1, 30]"),
        (["--parties", "0"], "--parties: expected an integer >= 1"),
        (["--data", "missing.csv", "--schema", "x.toml"], "--data missing.csv: no such file"),
        (["--evaluation-epsilon", "-1"], "--evaluation-epsilon: expected a number >= 0"),
    ],
)
def test_bad_parameters_fail_before_flower_starts(tmp_path, capsys, no_flower, argv, message):
    assert main(["simulate", *argv, "--output", str(tmp_path / "o")]) == 1
    assert message in capsys.readouterr().err


def test_a_renamed_column_fails_before_flower_starts(tmp_path, capsys, no_flower):
    data = tmp_path / "wall.csv"
    data.write_text("US1,US2\n0.1,0.2\n")
    schema = tmp_path / "s.toml"
    example_schema("wall_robot_navigation").save(schema)
    assert main(["simulate", "--data", str(data), "--schema", str(schema), "--output", str(tmp_path / "o")]) == 1
    assert "missing from the header" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()  # a failed run leaves no empty --output behind


def test_a_failed_run_keeps_an_output_directory_it_did_not_create(tmp_path, capsys, no_flower):
    kept = tmp_path / "mine"
    kept.mkdir()
    assert main(["simulate", "--data", str(tmp_path / "w.csv"), "--schema", "x.toml", "--output", str(kept)]) == 1
    assert kept.is_dir()
    schema = tmp_path / "s.toml"
    example_schema("wall_robot_navigation").save(schema)
    (tmp_path / "w.csv").write_text("US1,US2\n0.1,0.2\n")
    assert main(["simulate", "--data", str(tmp_path / "w.csv"), "--schema", str(schema), "--output", str(kept)]) == 1
    assert kept.is_dir() and not any(kept.iterdir())


def test_an_unwritable_json_path_is_refused_before_the_federation_runs(tmp_path, capsys):
    out = tmp_path / "out"
    for json_path, said in ((tmp_path / "no" / "r.json", "does not exist"), (tmp_path, "is a directory")):
        assert main(["simulate", "--json", str(json_path), "--output", str(out)]) != 0
        assert f"--json {json_path}: " in capsys.readouterr().err and not out.exists()  # no ledger was charged


def test_a_rerun_into_the_same_output_is_refused_unless_overwrite(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["simulate", "--prepare-only", "--parties", "2", "--max-depth", "3", "--output", str(out)]) == 0
    marker = out / "workspace" / "party-0000" / "ledger.sqlite"
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_bytes(b"old ledger")
    assert main(["simulate", "--prepare-only", "--parties", "2", "--max-depth", "3", "--output", str(out)]) == 1
    assert "pass --overwrite" in capsys.readouterr().err
    assert (
        main(["simulate", "--prepare-only", "--parties", "2", "--max-depth", "3", "--output", str(out), "--overwrite"])
        == 0
    )
    assert not marker.exists()  # nothing of the old run is mixed into the new one


@pytest.mark.parametrize("seeded", [False, True])
def test_prepare_only_writes_the_run_config_its_command_names(tmp_path, capsys, seeded):
    """The printed ``flwr run`` command lacked ``require-exact-sampling=false`` for seeded runs (the coordinator
    would have rejected every release): it now names a run config holding every setting of the run."""
    argv = ["simulate", "--prepare-only", "--parties", "2", "--max-depth", "3", "--output", str(tmp_path / "o")]
    assert main(argv + (["--seeded-noise", "--seed", "5"] if seeded else [])) == 0
    run_config = tmp_path / "o" / "run-config.toml"
    assert f"--run-config {run_config}" in capsys.readouterr().out
    got = tomllib.loads(run_config.read_text())
    expected = CoordinatorConfig.from_run_config(got)  # the keys are the coordinator's own
    assert got == expected.run_config() and set(got) == set(DEFAULT_RUN_CONFIG)  # every key, the app's defaults aside
    assert got["sim-dir"] == str(tmp_path / "o" / "workspace") and got["max-depth"] == 3
    assert got["require-exact-sampling"] is not seeded and got["seed"] == (5 if seeded else -1)


@pytest.mark.slow
@pytest.mark.skipif(not HEART.is_file(), reason="needs ../shared/data/heart_disease_cleveland")
def test_heart_file_without_header_and_with_missing_values_end_to_end(tmp_path):
    schema = tmp_path / "heart.toml"
    example_schema("heart_disease_cleveland").save(schema)
    out = tmp_path / "out"
    code = main(
        [
            "simulate",
            "--data",
            str(HEART),
            "--schema",
            str(schema),
            "--no-header",
            "--parties",
            "2",
            "--max-depth",
            "2",
            "--seeded-noise",
            "--validation-size",
            "0",
            "--output",
            str(out),
        ]
    )
    assert code == 0
    result = json.loads((out / "simulation.json").read_text())
    assert result["federated"]["status"] == "completed"
    assert result["federated"]["central_evaluation"]["accuracy"] > 0  # the central test split was scored


@pytest.mark.skipif(not BANK.is_file(), reason="needs ../shared/data/bank_marketing")
def test_schema_draft_and_check_on_a_semicolon_file(tmp_path, capsys):
    drafted = tmp_path / "bank.toml"
    assert main(["schema", "draft", str(BANK), "--label", "y", "--sep", ";", "--output", str(drafted)]) == 0
    assert "DRAFT" in capsys.readouterr().err
    schema = load_schema(drafted)
    assert schema.drafted and "DRAFTED FROM DATA" in drafted.read_text()
    assert drafted.stat().st_mode & 0o777 == 0o600  # its lists are the rows' values (rev-data S2-5)
    assert main(["schema", "check", str(drafted), str(BANK), "--sep", ";"]) == 0
    out = capsys.readouterr().out
    assert "rows read: 45211" in out and "NOT differentially private" in out
    assert main(["schema", "draft", str(BANK), "--label", "y", "--sep", ";", "--output", str(drafted)]) == 1
    # deleting only `drafted = true` leaves a draft (rev-data S1): every source still says DRAFTED FROM DATA
    edited = tmp_path / "bank-edited.toml"
    edited.write_text(drafted.read_text().replace("drafted = true\n", ""))
    assert main(["schema", "check", str(edited), str(BANK), "--sep", ";"]) == 0
    assert "drafted = true is gone, but 'DRAFTED FROM DATA' is still written in" in capsys.readouterr().out
    argv = ["party", "init-policy", "--schema", str(edited), "--party-id", "h", "--output", str(tmp_path / "p.toml")]
    assert main(argv) == 1
    assert "drafted = true is gone" in capsys.readouterr().err and not (tmp_path / "p.toml").exists()


def test_schema_draft_names_a_column_that_looks_like_an_identifier(tmp_path, capsys):
    """A bank's account number drafted as a continuous feature (bank review): the draft warns, naming
    ignored_columns; a measurement with decimals that differs on every row, a code column, and the label do not."""
    rng = np.random.default_rng(0)
    n = 150
    rows = ["account,balance,segment,outcome"] + [
        f"{10**9 + 7 * i},{rng.normal(1000, 300):.2f},{'ab'[i % 2]},{'yn'[i % 3 == 0]}" for i in range(n)
    ]
    data = tmp_path / "bank.csv"
    data.write_text("\n".join(rows) + "\n")
    assert main(["schema", "draft", str(data), "--label", "outcome", "--output", str(tmp_path / "d.toml")]) == 0
    err = capsys.readouterr().err
    warned = [line for line in err.splitlines() if "different value on every row" in line]
    assert len(warned) == 1 and "'account'" in warned[0] and "ignored_columns" in warned[0], err


@pytest.mark.skipif(not BANK.is_file(), reason="needs ../shared/data/bank_marketing")
def test_a_wrong_separator_is_named_by_every_command(tmp_path, capsys):
    """Without --sep ';' the bank file failed with "the first line must be a header" and nothing pointed at --sep."""
    drafted = tmp_path / "bank.toml"
    assert main(["schema", "draft", str(BANK), "--label", "y", "--sep", ";", "--output", str(drafted)]) == 0
    capsys.readouterr()
    assert main(["schema", "check", str(drafted), str(BANK)]) == 1
    err = capsys.readouterr().err
    said = err.splitlines()  # the progress line that starts the check, then the error
    assert said[0].startswith(f"checking {BANK} (") and said[1].startswith("edprf schema check: error: "), err
    assert "is that the separator? pass --sep ';'" in err
    assert main(["schema", "draft", str(BANK), "--label", "y"]) == 1
    assert "is that the separator? pass --sep ';'" in capsys.readouterr().err


def test_a_file_without_header_is_named(tmp_path, capsys):
    schema = tmp_path / "wall.toml"
    example_schema("wall_robot_navigation").save(schema)
    data = tmp_path / "rows.csv"
    data.write_text("0.5,0.5,0.5,0.5,Move-Forward\n" * 3)
    assert main(["schema", "check", str(schema), str(data)]) == 1
    assert "if the file has no header, pass --no-header" in capsys.readouterr().err


def test_schema_draft_names_the_columns_of_a_file_without_header(tmp_path, capsys):
    """Cleveland's file has no header: draft took its first record for the column names, and said nothing."""
    data = tmp_path / "rows.csv"
    data.write_text("63.0,1.0,?,0\n41.0,0.0,3.0,1\n57.0,1.0,2.0,0\n")
    drafted = tmp_path / "s.toml"
    assert main(["schema", "draft", str(data), "--label", "num", "-o", str(drafted)]) == 1
    assert "the first line holds numbers, not names" in capsys.readouterr().err
    assert main(["schema", "draft", str(data), "--label", "num", "--names", "age,sex", "-o", str(drafted)]) == 1
    assert "--names gives 2 names; the first line of" in capsys.readouterr().err
    assert main(["schema", "draft", str(data), "--label", "num", "--names", "age,sex,ca,num", "-o", str(drafted)]) == 0
    with_flag = tmp_path / "with-no-header.toml"  # docs/your-own-data.md: every command reads it with --no-header
    argv = ["schema", "draft", str(data), "--no-header", "--label", "num", "--names", "age,sex,ca,num"]
    assert main([*argv, "-o", str(with_flag)]) == 0
    assert with_flag.read_text() == drafted.read_text()
    capsys.readouterr()
    schema = load_schema(drafted)
    assert schema.feature_names == ("age", "sex", "ca") and schema.label.column == "num"
    assert main(["schema", "check", str(drafted), str(data), "--no-header"]) == 0
    assert "rows read: 3" in capsys.readouterr().out
    # a label elsewhere would make the schema read its own file shifted (sex taking num's values): refused
    argv = ["schema", "draft", str(data), "--label", "sex", "--names", "age,sex,ca,num", "--force", "-o", str(drafted)]
    assert main(argv) == 1
    assert "--label 'sex' is not the last of --names" in capsys.readouterr().err


def test_schema_draft_refuses_a_first_line_that_names_a_column_twice_and_warns_on_numbers(tmp_path, capsys):
    """A headerless file whose first record held a text label drafted columns '1', '2' and '1.1' (pandas'
    names for a repeated one, names no file has), without a word (stop 43 walkthrough)."""
    data = tmp_path / "rows.csv"
    data.write_text("1,2,1,a\n3,2,0,b\n5,1,1,a\n")
    assert main(["schema", "draft", str(data), "--label", "a"]) == 1
    err = capsys.readouterr().err
    assert "the first line names '1' more than once" in err and "--names NAME,..." in err
    data.write_text("1,2,3,a\n3,2,0,b\n5,1,1,a\n")
    assert main(["schema", "draft", str(data), "--label", "a"]) == 0  # a header may hold numbers: drafted, with a word
    err = capsys.readouterr().err
    assert "3 of its 4 names are numbers ('1', '2', '3'): if it is a data line, name the columns with --names" in err
    data.write_text("age,dose,y\n3,2,0\n5,1,1\n")
    assert main(["schema", "draft", str(data), "--label", "y"]) == 0
    assert "names are numbers" not in capsys.readouterr().err
    assert main(["schema", "draft", str(data), "--label", "y", "--sep", ";;"]) == 1  # the header check's csv reader
    err = capsys.readouterr().err  # raised a TypeError with a traceback (review of stop 44)
    assert "--sep: expected one character, got ';;'" in err and "Traceback" not in err


def test_a_mistyped_option_is_refused_by_its_subcommand_with_the_closest_option(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["schema", "draft", "x.csv", "--label", "y", "--outptu", "s.toml"])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: edprf schema draft")
    assert "unrecognized arguments: --outptu s.toml (did you mean --output?)" in err
    # --no-header is accepted as by every other command that reads a data file; without --names it is one line
    assert main(["schema", "draft", "x.csv", "--label", "y", "--no-header"]) == 1
    assert "--no-header needs --names NAME,...: a file without a header line" in capsys.readouterr().err


def test_a_missing_directory_is_named_by_the_file_asked_for(tmp_path, capsys):
    from protocol import save_atomic

    with pytest.raises(FileNotFoundError) as failed:
        save_atomic(tmp_path / "nowhere" / "model.onnx", b"x")
    assert failed.value.filename == str(tmp_path / "nowhere" / "model.onnx")
    data = tmp_path / "d.csv"
    data.write_text("a,y\n1,0\n2,1\n")
    assert main(["schema", "draft", str(data), "--label", "y", "-o", str(tmp_path / "nowhere" / "s.toml")]) == 1
    err = capsys.readouterr().err
    assert f"error: {tmp_path / 'nowhere' / 's.toml'}: No such file or directory" in err and "Errno" not in err


def test_edprf_run_names_an_unknown_run_config_key_before_submitting(capsys, monkeypatch):
    """Flower refused a typo (min-party) after submission with 'Invalid run configuration' and no key named."""
    from pathlib import Path

    from edprf_fl.cli import _run_cmd

    monkeypatch.setattr(_run_cmd.subprocess, "run", lambda *a, **k: pytest.fail("flwr run was called"))
    app = str(Path(__file__).resolve().parents[2])
    assert main(["run", app, "--run-config", "min-party=1 epsilon=0.5"]) == 1
    err = capsys.readouterr().err
    assert "unknown keys ['min-party'] ('min-party': did you mean 'min-parties'?)" in err
    assert "[tool.flwr.app.config]" in err


@pytest.mark.parametrize(("status", "warned"), [("pending", True), ("running", False)])
def test_edprf_run_says_why_a_run_stays_pending(capsys, monkeypatch, status, warned):
    """A SuperExec with a wrong secret exits quietly and the run waited, pending, with nothing said."""
    from edprf_fl.cli import _run_cmd

    class Run:
        run_id, connection = 7, None

        def status(self, env=None):
            return status, ""

    monkeypatch.setattr(_run_cmd, "PENDING_WARNING_SECONDS", 0.05)
    watch = _run_cmd._pending_watch(Run(), None)
    watch.join(timeout=60)  # the timer's check has run (not a guess at how long it takes)
    err = capsys.readouterr().err
    assert ("run 7 still pending after" in err and "SuperExec" in err) == warned


@pytest.mark.parametrize(
    ("detach", "ctrl_c"),
    [
        (False, "Ctrl-C cancels it (`FLWR_TELEMETRY_ENABLED=0 FLWR_DISABLE_UPDATE_CHECK=1 flwr stop 7 consortium`)."),
        (
            True,
            (
                "Ctrl-C stops waiting and leaves the run pending; `FLWR_TELEMETRY_ENABLED=0 FLWR_DISABLE_UPDATE_CHECK=1 "
                "flwr stop 7 consortium` cancels it."
            ),
        ),
    ],
)
def test_edprf_run_says_within_30_s_once_that_a_pending_run_needs_a_superexec(capsys, monkeypatch, detach, ctrl_c):
    """With flower-superexec down, `edprf run` printed 'Starting logstream' and then nothing: the walkthrough
    stopped waiting after 59 s, before the warning's 60 s, with the run still pending."""
    import io

    from edprf_fl.cli import _run_cmd

    timers = []

    class Timer:  # runs the check at once, and records after how long it was asked to
        def __init__(self, interval, check):
            self.interval, self.check, self.daemon = interval, check, False
            timers.append(self)

        def start(self):
            self.check()

        def cancel(self):
            pass

    run = _run_cmd.FlowerRun(7, "consortium")
    monkeypatch.setattr(_run_cmd.threading, "Timer", Timer)
    monkeypatch.setattr(_run_cmd, "submit", lambda *a, **k: run)
    monkeypatch.setattr(_run_cmd, "follow", lambda *a, **k: None)
    monkeypatch.setattr(_run_cmd.FlowerRun, "status", lambda self, env=None: ("pending", ""))
    monkeypatch.setattr(_run_cmd.FlowerRun, "final_status", lambda self, env=None: ("finished:stopped", ""))
    _run_cmd.run_and_follow(".", "consortium", None, detach_on_interrupt=detach, out=io.StringIO())
    assert [t.interval for t in timers] == [30.0]
    [said] = [line for line in capsys.readouterr().err.splitlines() if "pending" in line]  # once
    assert said.startswith("edprf run: run 7 still pending after 30 s: no SuperExec has started it. ")
    assert "Is flower-superexec (the ServerApp's executor) running" in said and said.endswith(ctrl_c)


@pytest.mark.parametrize(
    ("status", "hinted"),
    [("unknown", True), ("running", True), ("finished:failed", False), ("finished:stopped", False)],
)
def test_edprf_run_says_how_to_stop_a_run_whose_end_it_did_not_see(capsys, monkeypatch, status, hinted):
    """The log stream ended without the run ending (a SuperLink lost under `edprf run`): the exit status was 1
    with no word that the run may go on charging parties once the SuperLink is back (stop 40 walkthrough)."""
    import io

    from edprf_fl.cli import _run_cmd

    run = _run_cmd.FlowerRun(12, "consortium")
    monkeypatch.setattr(_run_cmd, "submit", lambda *a, **k: run)
    monkeypatch.setattr(_run_cmd, "follow", lambda *a, **k: None)
    monkeypatch.setattr(_run_cmd, "_pending_watch", lambda *a, **k: type("W", (), {"cancel": lambda self: None})())
    monkeypatch.setattr(_run_cmd.FlowerRun, "final_status", lambda self, env=None: (status, "connection refused"))
    assert _run_cmd.run_and_follow(".", "consortium", None, out=io.StringIO()) == 1
    err = capsys.readouterr().err
    assert f"run 12 {status}: connection refused" in err
    said = "flwr ls consortium --run-id 12" in err and "flwr stop 12 consortium" in err
    assert said == hinted


def test_version_and_verbose_after_the_subcommand(capsys):
    with pytest.raises(SystemExit) as done:
        build_parser().parse_args(["--version"])
    assert done.value.code == 0 and "edprf" in capsys.readouterr().out
    args = build_parser().parse_args(["simulate", "-v", "--parties", "2"])
    assert args.verbose == 1 and args.parties == 2


def test_every_option_has_help():
    parser = build_parser()
    for name, command in parser._subparsers._group_actions[0].choices.items():
        for action in command._actions:
            if action.option_strings and action.dest not in ("help",):
                assert action.help, f"edprf {name} {action.option_strings[0]} has no help text"


def test_the_settings_check_uses_the_core_depth_limit():
    from edprf_core._depth_rule import AUTO_DEPTH_CAP
    from edprf_core.forest import MAX_DEPTH_LIMIT

    assert simulation.MAX_DEPTH_LIMIT == MAX_DEPTH_LIMIT
    assert simulation.AUTO_DEPTH_CAP == AUTO_DEPTH_CAP


def test_an_inestimable_federated_accuracy_is_said_so_not_a_crash():
    """Tiny held-out sets: the noisy totals can sum to <= 0 and the report holds null (NaN) for the accuracy."""
    from edprf_fl.simulation import evaluation_line

    for value in (None, float("nan")):
        line = evaluation_line({"accuracy": value, "ci95": None, "epsilon_per_party": 0.1, "parties": 2})
        assert "not estimable" in line
    line = evaluation_line({"accuracy": 0.8125, "ci95": [0.7, 0.9], "epsilon_per_party": 0.1, "parties": 2})
    assert line.endswith("0.8125 (95% interval 0.700-0.900)")


def test_the_summary_states_what_federating_buys_and_costs_in_points():
    from edprf_fl.simulation import SimulationTimings, cost_lines, timing_line

    federated = {"central_evaluation": {"accuracy": 0.80, "roc_auc": 0.90}}
    baselines = {
        "party_alone_median": {"accuracy": 0.75, "roc_auc": 0.85},
        "central_edprf": {"accuracy": 0.90, "roc_auc": float("nan")},
        "majority_class": {"accuracy": 0.40, "roc_auc": 0.5},
    }
    timings = SimulationTimings(
        prepare_s=0.5, federation_s=1.5, wall_s=4.25, baselines_s=1.0, coordinator={"train_round_s": 0.75}
    )
    lines = cost_lines(federated, baselines)
    assert "median party alone: +5.0 points of accuracy, +5.0 of ROC AUC" in lines[1]
    assert "central DP" in lines[2] and "-10.0 points of accuracy" in lines[2] and "ROC AUC" not in lines[2]
    assert lines[3].endswith("majority class: +40.0 points of accuracy")
    assert not any("best party" in line for line in lines)  # no such baseline: no line
    assert cost_lines({"central_evaluation": {}}, None) == []
    assert timing_line(timings, "in-process") == (
        "wall time: 4.2 s on the in-process engine: preparing the parties' files 0.5 s; "
        "federation 1.5 s (train round 0.8 s); baselines 1.0 s"
    )


def test_a_comparison_with_a_drawn_baseline_gives_the_spread_of_its_noise_draws():
    """The demo compared one draw of the federation's noise with one seeded draw of each baseline's: the verdict's
    sign flipped from run to run (-0.9 to +7.9 points against the median party, walkthrough of stop 43)."""
    from edprf_fl.simulation import cost_lines, results_table

    federated = {"central_evaluation": {"accuracy": 0.80, "roc_auc": 0.90}, "n_trees": 5}
    drawn = {"accuracy": 0.78, "roc_auc": 0.85, "n_trees": 1, "draws": 5}
    baselines = {"party_alone_median": drawn | {"accuracy_draws": [0.78, 0.76, 0.82, 0.79, 0.77]}}
    lines = cost_lines(federated, baselines)
    assert lines[1].endswith("+2.0 points of accuracy, +5.0 of ROC AUC (its 5 noise draws: accuracy 0.760 to 0.820)")
    assert "a gap within a baseline's spread" in lines[2]
    assert "of 5 draws of their noise" in results_table(federated, baselines)
    single = {
        "party_alone_median": {"accuracy": 0.75, "roc_auc": 0.85, "n_trees": 1}
    }  # one draw: no spread, no caveat line
    assert len(cost_lines(federated, single)) == 2 and "draws" not in results_table(federated, single)


def test_the_dp_baselines_are_the_median_of_several_noise_draws(tmp_path):
    from edprf_fl.simulation import BASELINE_DRAWS, SimulationSettings, prepare_workspace, train_baselines
    from edprf_fl.simulation._baselines import party_alone_draws

    settings = SimulationSettings(parties=3, max_depth=3)
    baselines = train_baselines(settings, prepare_workspace(settings, tmp_path))
    central = baselines["central_edprf"]
    assert central["draws"] == BASELINE_DRAWS == len(central["accuracy_draws"]) == 5
    assert len(set(central["accuracy_draws"])) > 1  # different noise in each draw
    assert central["accuracy"] == sorted(central["accuracy_draws"])[2]  # the median draw's metrics
    assert baselines["party_alone_median"]["draws"] == party_alone_draws(3) == 5
    assert party_alone_draws(50) == 2 and party_alone_draws(300) == 1  # at most 100 fits for the parties alone
    assert baselines["non_private_rf"].get("draws") is None


def test_the_contribution_table_shows_each_partys_statistic_threshold_and_p_value():
    from edprf_fl.simulation import contribution_table

    rows = [
        {
            "party": "a",
            "n_trees": 1,
            "information_bits": 0.5,
            "accuracy": 0.8,
            "agreement_with_global": 0.9,
            "probability_lift": 0.3,
            "lift_threshold": 0.03,
            "p_value": 0.9,
            "flag_inconclusive": False,
            "flagged": False,
        },
        {
            "party": "b",
            "n_trees": 1,
            "information_bits": 0.1,
            "accuracy": 0.4,
            "agreement_with_global": 0.5,
            "probability_lift": 0.001,
            "lift_threshold": 0.03,
            "p_value": 2e-9,
            "flag_inconclusive": False,
            "flagged": True,
        },
        {
            "party": "c",
            "n_trees": 1,
            "information_bits": 0.5,
            "accuracy": 0.8,
            "agreement_with_global": 0.9,
            "probability_lift": 0.3,
            "lift_threshold": None,
            "p_value": 1.0,
            "flag_inconclusive": True,
            "flagged": False,
        },
    ]
    text = contribution_table(rows, alpha=0.01).splitlines()
    words, table = text[:3], text[text.index("the statistics behind these lines:") + 1 :]
    assert words[0].startswith("- a: its tree raises the probability given to the right answer by 30.0 points")
    assert words[0].endswith("not significantly below the other parties at the 0.01 level")
    assert "b: its tree raises" in words[1] and "SIGNIFICANTLY BELOW the other parties at the 0.01 level" in words[1]
    assert words[2].endswith("not compared with the others (it takes at least 4 parties)")
    assert table[2].endswith("| 0.300 (0.030) | 9.0e-01 | no |")
    assert table[3].endswith("| 0.001 (0.030) | 2.0e-09 | YES |")
    assert table[4].endswith("| 0.300 (no test) | – | no |")
    assert "alpha = 0.01" in table[5]


@pytest.mark.parametrize(
    ("run_config", "app_default", "tag"),
    [
        (None, "", "12"),  # none given: the run id named its requests
        ("request-tag='trial-3' epsilon=0.5", "", "trial-3"),
        (None, "trial-4", "trial-4"),  # the app's pyproject gives it
        ("request-tag='trial-3'", "trial-4", "trial-3"),
    ],
)
def test_an_interrupted_run_says_how_to_use_its_releases_without_spending_again(
    tmp_path, capsys, monkeypatch, run_config, app_default, tag
):
    """Deployment walkthrough: a party reserved and released 1.3 s after `flwr stop` was accepted (its reply then
    dropped); `edprf run` said only that what parties reserved stays spent."""
    import io

    from edprf_fl.cli import _run_cmd

    def interrupted(*a, **k):
        raise KeyboardInterrupt

    (tmp_path / "pyproject.toml").write_text(f'[tool.flwr.app.config]\nrequest-tag = "{app_default}"\n')
    monkeypatch.setattr(_run_cmd, "submit", lambda *a, **k: _run_cmd.FlowerRun(12, "consortium"))
    monkeypatch.setattr(_run_cmd, "_pending_watch", lambda *a, **k: type("W", (), {"cancel": lambda self: None})())
    monkeypatch.setattr(_run_cmd, "follow", interrupted)
    monkeypatch.setattr(_run_cmd.FlowerRun, "stop", lambda self, env=None: (0, ""))
    _run_cmd.run_and_follow(str(tmp_path), "consortium", run_config, out=io.StringIO())
    err = capsys.readouterr().err
    assert "may still spend on it for a few seconds" in err and "`edprf budget` shows the entry released" in err
    assert f"submit with request-tag='{tag}', the same run config and a new output-dir" in err


def _bank_schema(tmp_path):
    from edprf_core import CategoricalFeature, ContinuousFeature, LabelSpec, Schema

    schema = Schema(
        features=(
            ContinuousFeature("age", 18.0, 110.0),
            ContinuousFeature("balance", -1e6, 1e7, missing="separate"),
            CategoricalFeature("segment", ("retail", "société"), unknown="refuse"),
        ),
        label=LabelSpec("default", ("no", "yes")),
    )
    path = tmp_path / "bank.toml"
    schema.save(path)
    return path


def test_schema_check_names_a_file_not_in_utf8_and_decimal_commas(tmp_path, capsys):
    """Bank review S2-3 and S2-4: the rows lost were counted, their cause was not named."""
    schema = _bank_schema(tmp_path)
    latin = tmp_path / "latin.csv"
    latin.write_bytes("age,balance,segment,default\n40,10.5,société,no\n41,11.5,retail,yes\n".encode("cp1252"))
    assert main(["schema", "check", str(schema), str(latin)]) == 0  # a row is kept: the exit status is unchanged
    out = capsys.readouterr().out
    assert (
        "  warning (a problem for `edprf party check`): 1 row (50.0%) hold bytes that are not valid UTF-8" in out
        and "line 2)" in out
    )
    assert "Latin-1/cp1252?" in out and "iconv -f cp1252 -t utf-8 in.csv > out.csv" in out
    partial = tmp_path / "partial.csv"
    partial.write_text("age;balance;segment;default\n40;1234,56;retail;no\n41;1234;retail;yes\n")
    assert main(["schema", "check", "--sep", ";", str(schema), str(partial)]) == 0
    out = capsys.readouterr().out
    assert (
        "  warning (a problem for `edprf party check`): column 'balance': 1 row (50.0%) are not a finite number" in out
    )
    assert "a biased training set; decimal comma, or a thousands comma? 1 of them are written like 1234,56" in out


def test_schema_check_exits_1_with_a_clear_line_when_no_row_satisfies_the_schema(tmp_path, capsys):
    """Bank review S3-4: every row dropped must not look like success; the exit status is in the usage."""
    schema = _bank_schema(tmp_path)
    data = tmp_path / "commas.csv"
    data.write_text("age;balance;segment;default\n40;1234,56;retail;no\n41;1,5;retail;yes\n")
    assert main(["schema", "check", "--sep", ";", str(schema), str(data)]) == 1
    captured = capsys.readouterr()
    assert "rows read: 2; rows kept: 0 (0.0%)" in captured.out
    assert (
        "2 rows (100.0%) are not a finite number and are dropped; no row is kept; decimal comma, or a thousands comma?"
        in captured.out
    )
    said = captured.err.splitlines()  # after the check's progress lines
    assert said[-2].startswith("      checked in ") and said[-1].startswith(
        f"no row of {data} satisfies the schema's rules (exit status 1)"
    )
    data.write_text("age;balance;segment;default\n40;1234.56;retail;no\n41;1,5;retail;yes\n")
    assert main(["schema", "check", "--sep", ";", str(schema), str(data)]) == 0  # one row kept: 0, as before
    progress = ("checking ", "      ")  # stderr holds the check's progress lines only
    assert all(line.startswith(progress) for line in capsys.readouterr().err.splitlines())
    with pytest.raises(SystemExit):
        main(["schema", "check", "--help"])
    usage = " ".join(capsys.readouterr().out.split())
    assert "exit status: 0 when at least one row satisfies the schema's rules" in usage and "1 when none does" in usage


def _one_yes(tmp_path, rows: int = 40):
    """A file whose class 'yes' has a single row (bank review S3-2: sklearn's raw 'least populated class')."""
    schema = _bank_schema(tmp_path)
    data = tmp_path / "rare.csv"
    lines = [f"{30 + i},{100 + i}.5,retail,{'yes' if i == 0 else 'no'}\n" for i in range(rows)]
    data.write_text("age,balance,segment,default\n" + "".join(lines))
    return schema, data


def test_a_class_too_rare_for_the_stratified_test_split_is_named_with_its_flag_and_the_fix(tmp_path, capsys, no_flower):
    schema, data = _one_yes(tmp_path)
    out = tmp_path / "o"
    argv = ["simulate", "--data", str(data), "--schema", str(schema), "--parties", "2", "--no-baselines"]
    assert main([*argv, "--output", str(out)]) == 1
    err = capsys.readouterr().err
    said = err.splitlines()  # the data file's read and its rules applied (progress), then the error
    assert said[0].startswith(f"[1/4] reading {data} (") and said[1].startswith("      read in "), err
    assert said[2].startswith("      applying the schema's rules to ") and said[3].startswith("      applied in "), err
    assert said[4].startswith("      splitting 40 rows among the test set and the parties ...")
    assert said[5].startswith(
        "edprf simulate: error: the split into training and central test rows (--test-size 0.2) is stratified: "
        "every class keeps its share on both sides; class 'yes' (1 row) of the data has fewer than the 2 rows this "
        "needs: add rows of that class, or leave it out of the data and of the schema's classes"
    )
    assert "least populated" not in err and not out.exists()


def test_a_split_smaller_than_the_classes_and_a_rare_class_in_the_validation_split_are_named(tmp_path):
    from edprf_fl.simulation import SimulationSettings
    from edprf_fl.simulation._prepare import load_simulation_data, split_rows

    schema, data = _one_yes(tmp_path, rows=5)
    data.write_text(data.read_text() + "70,1.5,retail,yes\n")  # 'yes': 2 rows of 6
    settings = SimulationSettings(data=data, schema=schema, test_size=0.1)
    X, y, _, _ = load_simulation_data(settings)
    with pytest.raises(
        ValueError,
        match=r"\(test_size 0.1\) .*of the 6 rows of the data, 1 would be held out and 5 "
        r"kept, for 2 classes: change test_size so that both sides hold a row of every class",
    ):
        split_rows(settings, X, y)
    settings = SimulationSettings(data=data, schema=schema, test_size=0.5, validation_size=0.5)
    with pytest.raises(
        ValueError,
        match=r"training and validation rows \(validation_size 0.5\).* class 'yes' \(1 row\) "
        "of the training rows has fewer than the 2 rows",
    ):
        split_rows(settings, X, y)
    settings = SimulationSettings(data=data, schema=schema, test_size=0.5, validation_size=0)
    split = split_rows(settings, X, y)  # each side a row of each class: stratified as before
    assert sorted(split.y_test) == ["no", "no", "yes"] and sorted(split.y_train) == ["no", "no", "yes"]


def _messy_export(rows: int = 400):
    """A hospital-style export: trailing spaces in a category, NA/NULL/- marks in a number column, decimal commas
    in a few ages, numbers stored as text in Parquet."""
    import pandas as pd

    rng = np.random.default_rng(0)
    frame = pd.DataFrame(
        {
            "gender": rng.choice(["Female", "Male", "female "], rows),
            "bmi": rng.uniform(15, 45, rows).round(2).astype(object),
            "age": rng.integers(18, 90, rows).astype(object),
            "outcome": rng.choice(["yes", "no"], rows),
        }
    )
    frame.loc[::25, "bmi"] = "NA"
    frame.loc[1::40, "bmi"] = "NULL"
    frame.loc[2, "bmi"] = "-"
    frame.loc[3::50, "age"] = "44,5"
    return frame


def test_schema_draft_keeps_a_dash_that_is_a_value_strips_names_and_reads_flags_and_inf(tmp_path, capsys):
    """rev-s57 S3-9/10/11: an Rh factor's '-' became a missing value in every column; a header ' age ' was drafted
    unstripped (its own file then refused); a True/False column and an 'inf' cell crashed the draft."""
    import pandas as pd

    frame = pd.DataFrame(
        {
            " age ": [30, 40, 50, 60] * 30,
            "flag": [True, False] * 60,
            "x": [1.5, float("inf"), 2.0, 3.0] * 30,
            "rh": ["+", "-"] * 60,
            "y": ["a", "b", "a", "b"] * 30,
        }
    )
    data, drafted = tmp_path / "odd.csv", tmp_path / "odd.toml"
    frame.to_csv(data, index=False)
    assert main(["schema", "draft", str(data), "--label", "y", "-o", str(drafted)]) == 0
    assert "as missing values" not in capsys.readouterr().err
    schema = load_schema(drafted)
    features = {f.name: f for f in schema.features}
    assert set(features) == {"age", "flag", "x", "rh"} and "-" not in schema.missing_values
    assert features["rh"].categories == ("+", "-") and features["flag"].categories == ("False", "True")
    assert (features["x"].lower, features["x"].upper) == (1.5, 3.0)
    assert main(["schema", "check", str(drafted), str(data)]) == 0
    assert "rows kept: 90 (75.0%)" in capsys.readouterr().out  # the 30 'inf' rows: no number, as the party reads


def test_schema_draft_flags_as_written_a_dash_in_two_roles_inf_and_a_name_twice(tmp_path, capsys):
    """rev-s57b N1, N2, N5, N9: TRUE/false flags were drafted "False"/"True" (the draft's own file then kept 0 %);
    a '-' marking gaps in one column and a value in another was made missing everywhere; 'age,age ' crashed the
    draft; inf cells dropped rows without a word."""
    import pandas as pd

    frame = pd.DataFrame(
        {
            "bmi": ["20.5", "-", "30.1", "inf"] * 30,
            "rh": ["+", "-"] * 60,
            " flag": ["TRUE", "false"] * 60,  # a name with a space: the party reads it stripped
            "y": ["a", "b", "a", "b"] * 30,
        }
    )
    data, drafted = tmp_path / "roles.csv", tmp_path / "roles.toml"
    frame.to_csv(data, index=False)
    assert main(["schema", "draft", str(data), "--label", "y", "-o", str(drafted)]) == 0
    err = capsys.readouterr().err
    assert "'-' marks gaps in 'bmi' but is a value in 'rh'" in err, err
    schema = load_schema(drafted)
    features = {f.name: f for f in schema.features}
    assert features["flag"].categories == ("TRUE", "false") and "-" in features["rh"].categories
    assert "-" not in schema.missing_values
    assert main(["schema", "check", str(drafted), str(data)]) == 0
    assert "rows kept: 120 (100.0%)" in capsys.readouterr().out
    frame.assign(bmi=["20.5", "30.1", "inf", "25"] * 30).to_csv(data, index=False)
    assert main(["schema", "draft", str(data), "--label", "y", "-o", str(drafted), "--force"]) == 0
    assert "column 'bmi': 30 cells hold an infinite number (inf): no number to a party" in capsys.readouterr().err
    data.write_text("age,age ,y\n1,2,a\n")
    assert main(["schema", "draft", str(data), "--label", "y"]) == 1
    assert "the first line names 'age' more than once" in capsys.readouterr().err


def test_schema_draft_reads_its_file_as_the_party_will(tmp_path, capsys):
    """rev-data S2-2, S3-6, S3-13: the draft read its file with pandas' guesses, and its schema then dropped 8 % of
    that very file (a category drafted with its trailing space, which the party strips; NA/NULL/- taken as gaps
    but not written into missing_values); a numeric column turned text by a few cells said nothing; a Parquet file
    was 'not valid UTF-8'; a wrong --sep gave pandas' tokenizer error.  Now its own file keeps every row."""
    frame = _messy_export()
    csv_path, parquet_path = tmp_path / "export.csv", tmp_path / "export.parquet"
    frame.to_csv(csv_path, index=False, sep=";")
    with csv_path.open("a") as handle:  # a spreadsheet's trailing rows of separators alone: no record
        handle.write(";;;\n;;;\n")
    frame.astype(str).replace("nan", "").to_parquet(parquet_path, index=False)
    for data, sep in ((csv_path, ";"), (parquet_path, ",")):
        drafted = tmp_path / f"{data.suffix[1:]}.toml"
        assert main(["schema", "draft", str(data), "--label", "outcome", "--sep", sep, "-o", str(drafted)]) == 0
        err = capsys.readouterr().err
        assert "the draft reads 'NA', 'NULL', '-' as missing values (missing_values; 'NA' in 'bmi';" in err, err
        assert "column 'age' is drafted as text categories, although 98% of its cells are numbers" in err, err
        assert "written with a decimal comma" in err
        schema = load_schema(drafted)
        gender = next(f for f in schema.features if f.name == "gender")
        assert set(gender.categories) == {"Female", "Male", "female"} and "NULL" in schema.missing_values
        assert next(f for f in schema.features if f.name == "bmi").kind == "continuous"
        assert next(f for f in schema.features if f.name == "gender").missing == "refuse"  # no gap but those rows
        assert main(["schema", "check", str(drafted), str(data), "--sep", sep]) == 0
        read = 402 if sep == ";" else 400  # the CSV's two lines of separators: records without a label
        assert f"rows read: {read}; rows kept: 400 (" in capsys.readouterr().out
    assert main(["schema", "draft", str(csv_path), "--label", "outcome"]) == 1
    assert "pass --sep ';'" in capsys.readouterr().err
