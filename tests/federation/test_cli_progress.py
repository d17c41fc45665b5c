"""Progress of the commands that read data or train: stage lines on stderr, in order; stdout unchanged.

`edprf schema draft`, `edprf schema check`, `edprf party check` and `edprf simulate` say on stderr when a long
stage starts and how long it took; loops (parties, baseline fits) say a count at most every
``PROGRESS_EVERY`` seconds (tested on an injected clock); a simulated party whose turn comes after the round's
timeout is named.  Stdout, where the results go, is byte for byte what the command prints with its progress
silenced.  Progress never goes through ``logging``.
"""

from __future__ import annotations

import logging
import re
import warnings

import numpy as np
import pandas as pd
import pytest
from flwr.app import ConfigRecord, Context, Message, MessageType, RecordDict
from flwr.clientapp import ClientApp
from flwr.common.constant import SUPERLINK_NODE_ID
from flwr.supercore.run import Run
from flwr.supercore.task_identity import TaskIdentity

from edprf_core import PrivacyLeakWarning, draft_schema, load_embedded
from edprf_fl.cli import _model_args, _schema_cmd
from edprf_fl.cli._main import main
from edprf_fl.simulation import _progress
from edprf_fl.simulation._in_process_engine import InProcessGrid
from edprf_fl.simulation._run import missed_timeout_lines

from .test_in_process_engine import party_nodes

DURATION = r"\d+(\.\d)? s"


@pytest.fixture
def wall(tmp_path):
    """400 rows of the embedded wall-robot data as a party's CSV, and its schema."""
    X, y, schema = load_embedded("wall_robot_navigation")
    rows = np.random.default_rng(0).permutation(len(X))[:400]
    data = tmp_path / "wall.csv"
    X.iloc[rows].assign(**{schema.label.column: y.iloc[rows].to_numpy()}).to_csv(data, index=False)
    schema.save(tmp_path / "schema.toml")
    return data, tmp_path / "schema.toml", schema


def _run(capsys, argv: list[str], code: int = 0) -> tuple[str, list[str]]:
    capsys.readouterr()
    assert main(argv) == code
    captured = capsys.readouterr()
    return captured.out, captured.err.splitlines()


def _matches(lines: list[str], patterns: list[str]) -> None:
    """``lines`` are ``patterns`` (regular expressions), in order, one for one."""
    assert len(lines) == len(patterns), "\n".join(lines)
    for line, pattern in zip(lines, patterns):
        assert re.fullmatch(pattern, line), (line, pattern)


def _size(path) -> str:
    return re.escape(_progress.size_text(path.stat().st_size))


def test_schema_draft_says_reading_and_drafting_and_prints_the_same_schema(wall, capsys, monkeypatch, caplog):
    data, _, schema = wall
    label = schema.label.column
    with caplog.at_level(logging.DEBUG), warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        out, err = _run(capsys, ["schema", "draft", str(data), "--label", label])
        frame = pd.read_csv(data, na_values=["?"], skipinitialspace=True)
        drafted = draft_schema(frame, label, name=data.stem)
        monkeypatch.setattr(_schema_cmd, "say", lambda _: None)  # the same command, its progress silenced
        quiet_out, quiet_err = _run(capsys, ["schema", "draft", str(data), "--label", label])
    stages = [line for line in err if not line.startswith("warning:")]
    _matches(
        stages,
        [
            re.escape(f"reading {data} ({_progress.size_text(data.stat().st_size)}) ..."),
            f"      read in {DURATION}",
            re.escape("drafting the schema from 400 rows ..."),
            f"      drafted in {DURATION}",
        ],
    )
    assert out == quiet_out == _schema_cmd._DRAFT_HEADER + drafted.to_toml()  # the results, unchanged
    assert [line for line in quiet_err if not line.startswith("warning:")] == []
    assert not [r for r in caplog.records if "drafting" in r.getMessage() or "read in" in r.getMessage()]


def test_schema_check_says_its_steps_in_order_and_its_report_is_unchanged(wall, capsys, monkeypatch):
    data, schema_path, _ = wall
    argv = ["schema", "check", str(schema_path), str(data)]
    out, err = _run(capsys, argv)
    _matches(
        err,
        [
            re.escape(f"checking {data} ({_progress.size_text(data.stat().st_size)}) under the schema's rules ..."),
            re.escape("      400 rows read; applying the schema's rules to each ..."),
            r"      counting missing and clipped values in \d+ columns \.\.\.",
            f"      checked in {DURATION}",
        ],
    )
    monkeypatch.setattr(_schema_cmd, "say", lambda _: None)
    quiet_out, quiet_err = _run(capsys, argv)
    assert out == quiet_out and quiet_err == [] and "rows read: 400; rows kept: 400" in out


def _node_config(data, schema_path, tmp_path) -> str:
    from edprf_fl.cli._main import main as edprf

    policy = tmp_path / "policy.toml"
    argv = ["party", "init-policy", "--schema", str(schema_path), "--party-id", "hospital-a", "--output", str(policy)]
    assert edprf(argv) == 0
    paths = {"data-path": data, "schema-path": schema_path, "policy-path": policy, "ledger-path": tmp_path / "l.sqlite"}
    return " ".join(f"{k}='{v}'" for k, v in paths.items())


def test_party_check_says_the_data_files_read_and_quiet_says_nothing_of_it(wall, tmp_path, capsys, monkeypatch):
    data, schema_path, _ = wall
    argv = ["party", "check", "--node-config", _node_config(data, schema_path, tmp_path)]
    out, err = _run(capsys, argv)
    _matches(
        err,
        [
            re.escape(f"reading {data} through the schema's rules ..."),
            re.escape("      400 rows read; applying the schema's rules to each ..."),
            r"      counting missing and clipped values in \d+ columns \.\.\.",
            f"      checked in {DURATION}",
        ],
    )
    assert out.endswith("hospital-a: no problem found\n") and "rows read: 400; rows kept: 400" in out
    monkeypatch.setattr(_model_args, "say", lambda _: None)  # party check's progress printer
    quiet_out, quiet_err = _run(capsys, argv)
    assert out == quiet_out and quiet_err == []
    monkeypatch.undo()
    _, err = _run(capsys, [*argv, "--quiet"])
    assert err == []  # --quiet: problems and notes only, and no progress


def _grid(seen: list[str], clock, said: list[str], parties: int = 4) -> tuple[InProcessGrid, list[int]]:
    app = ClientApp()

    @app.train()
    def train(msg: Message, context: Context) -> Message:
        seen.append(f"party-{context.node_config['partition-id']:04d}")
        return Message(RecordDict({"r": ConfigRecord({"ok": 1})}), reply_to=msg)

    node_ids = [21 + k for k in range(parties)]
    nodes = party_nodes(app, node_ids)
    return InProcessGrid(Run.create_empty(run_id=5), nodes, clock=clock, progress=said.append), node_ids


def _train_round(grid: InProcessGrid, node_ids: list[int], timeout: float | None) -> list[Message]:
    saved = (TaskIdentity._run_id, TaskIdentity._node_id, TaskIdentity._task_id)
    TaskIdentity.run_id, TaskIdentity.node_id, TaskIdentity.task_id = 5, SUPERLINK_NODE_ID, 1
    try:
        sent = [
            Message(RecordDict({"q": ConfigRecord({"x": 1})}), dst_node_id=node, message_type=MessageType.TRAIN)
            for node in node_ids
        ]
        return list(grid.send_and_receive(sent, timeout=timeout))
    finally:
        TaskIdentity._run_id, TaskIdentity._node_id, TaskIdentity._task_id = saved


def test_a_simulated_party_whose_turn_comes_after_the_round_timeout_is_named():
    """The grid looks at its clock once at the start and once per message: 0 (deadline 10), then 3, 6, 9 before
    the first three parties (delivered), 12 before the fourth (past the deadline: no reply); 15 at the round's
    end."""
    seen, said = [], []
    ticks = iter(np.arange(0.0, 100.0, 3.0))
    grid, node_ids = _grid(seen, lambda: float(next(ticks)), said)
    replies = _train_round(grid, node_ids, timeout=10.0)
    assert seen == ["party-0000", "party-0001", "party-0002"] and len(replies) == 3
    # a count line when 5 s have passed since the start (at 6) and since that line (12 is 6 s after 6)
    assert said == [
        "      trained 1 of 4 parties",
        "      trained 3 of 4 parties",
        "      party-0003 missed the round timeout (10 s): its train request got no reply",
        "      trained 3 of 4 parties in 15 s",
    ]


def test_the_parties_count_is_throttled_to_one_line_every_five_seconds_of_the_grids_clock():
    seen, said = [], []
    ticks = iter([0.0, 1.0, 2.0, 4.0, 5.5, 6.0, 9.0, 10.4, 11.0, 50.0, 51.0])  # start, before each party, end
    grid, node_ids = _grid(seen, lambda: next(ticks), said, parties=9)
    assert len(_train_round(grid, node_ids, timeout=None)) == 9  # no timeout: every party answers
    # the look before party k+1 counts k parties done: a line at 5.5 (3 done, 5.5 s after the start), at 11.0
    # (7 done, 5.5 s after 5.5; not at 10.4, 4.9 s after) and at 50.0 (8 done); the round's line at its end
    assert said == [
        "      trained 3 of 9 parties",
        "      trained 7 of 9 parties",
        "      trained 8 of 9 parties",
        "      trained 9 of 9 parties in 51 s",
    ]


def test_the_rounds_line_counts_refusals_and_failures_apart_from_the_parties_that_trained():
    """Stop 59's note: "trained 5 of 5 parties" was printed when every party refused (the line counted answers).
    Parties 0-1 release, 2 refuses, 3 raises: the line says so; a round where all release keeps its old text."""
    from protocol import ReplyStatus
    from protocol.messages import RESULT_KEY

    app = ClientApp()

    @app.train()
    def train(msg: Message, context: Context) -> Message:
        k = context.node_config["partition-id"]
        if k == 3:
            raise RuntimeError("disk full")
        status = ReplyStatus.REFUSED if k == 2 else ReplyStatus.RELEASED
        return Message(RecordDict({RESULT_KEY: ConfigRecord({"status": str(status)})}), reply_to=msg)

    said: list[str] = []
    node_ids = [21 + k for k in range(4)]
    ticks = iter(np.arange(0.0, 100.0, 1.0))
    grid = InProcessGrid(
        Run.create_empty(run_id=5), party_nodes(app, node_ids), clock=lambda: float(next(ticks)), progress=said.append
    )
    assert len(_train_round(grid, node_ids, timeout=None)) == 4
    assert said[-1] == (
        "      4 of 4 parties answered in 5.0 s: 2 trained, 1 refused, 1 failed (the run's report gives each party's reason)"
    )
    said.clear()
    grid = InProcessGrid(
        Run.create_empty(run_id=5),
        party_nodes(app, node_ids[:2]),
        clock=lambda: float(next(ticks)),
        progress=said.append,
    )
    _train_round(grid, node_ids[:2], timeout=None)
    assert said[-1] == "      trained 2 of 2 parties in 3.0 s"


def test_a_party_the_coordinator_heard_nothing_from_within_the_round_timeout_is_named_after_a_ray_run():
    fed = {
        "parties": [
            {"party_id": "party-0000", "node_id": 7, "status": "accepted", "reason": ""},
            {"party_id": None, "node_id": 8, "status": "no_reply", "reason": "timeout"},
            {"party_id": "party-0002", "node_id": 9, "status": "no_reply", "reason": "timeout", "readiness_only": True},
            {"party_id": "party-0003", "node_id": 10, "status": "failed", "reason": "client_error"},
        ]
    }
    assert missed_timeout_lines(fed, 300.0) == [
        "      node 8 missed the round timeout (5 min 00 s): its train request got no reply"
    ]


def test_simulate_says_each_stage_in_order_with_its_duration_and_prints_its_report_on_stdout(
    wall, tmp_path, capsys, monkeypatch
):
    data, schema_path, _ = wall
    # a loop's count lines ("fitted 3 of 10 ...") come every PROGRESS_EVERY seconds, so only on a slow or busy
    # host: not in the stages listed here (the counts are tested on an injected clock and with PROGRESS_EVERY = 0)
    monkeypatch.setattr(_progress, "PROGRESS_EVERY", float("inf"))
    out_dir = tmp_path / "run"
    argv = ["simulate", "--data", str(data), "--schema", str(schema_path), "--parties", "2", "--output", str(out_dir)]
    out, err = _run(capsys, argv)
    skipped = ("      each party holds out", "      each party chooses", "      evaluated ")  # evaluation: if held out
    stages = [line for line in err if not line.startswith(skipped)]
    _matches(
        stages,
        [
            re.escape(f"[1/4] reading {data} ({_progress.size_text(data.stat().st_size)}) ..."),
            f"      read in {DURATION}",
            re.escape("      applying the schema's rules to 400 rows ..."),
            f"      applied in {DURATION}",
            re.escape("      splitting 400 rows among the test set and the parties ..."),
            f"      split in {DURATION}",
            re.escape("      wall.csv: ") + r"\d+ training rows split among 2 parties .*",
            re.escape(f"      writing the parties' workspace {out_dir / 'workspace'} ..."),
            f"      written in {DURATION}",
            re.escape("[2/4] running the federation: 2 Flower ClientApps and the ServerApp (in-process engine) ..."),
            f"      trained 2 of 2 parties in {DURATION}",
            r"\[3/4\] federation done in .*: 2 trees from 2 parties",
            re.escape("[4/4] training the baselines: central eDPRF, each party alone, a non-private forest ..."),
            r"      central eDPRF: 5 draws, the estimator's own trees on \d+ rows \.\.\.",
            f"      done in {DURATION}",
            re.escape("      each party alone: 10 fits (2 parties x 5 draws) ..."),
            f"      done in {DURATION}",
            r"      non-private forest: 100 trees on \d+ rows \.\.\.",
            f"      done in {DURATION}",
            f"      baselines trained in {DURATION}",
        ],
    )
    assert "central eDPRF" in out and "model: " in out  # the report, on stdout
    assert not any(line in out for line in err)  # and no progress line there


def test_simulate_on_a_drafted_schema_says_its_warning_as_one_line_of_its_own(wall, tmp_path, capsys):
    data, _, schema = wall
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        drafted = draft_schema(pd.read_csv(data), schema.label.column, name="wall")
    drafted.save(tmp_path / "drafted.toml")
    argv = ["simulate", "--data", str(data), "--schema", str(tmp_path / "drafted.toml"), "--parties", "2"]
    _, err = _run(capsys, [*argv, "--output", str(tmp_path / "run")])
    said = [line for line in err if "drafted schema" in line]
    warning = (
        "edprf simulate: warning: the baselines fit on a drafted schema ('wall', drafted = true): its bounds and "
        "categories were read from the data, so these models, like the federated one, are NOT differentially private"
    )
    assert said == [warning]
    assert err.index(said[0]) == err.index(next(line for line in err if line.startswith("[4/4]"))) + 1
    assert not any("DraftedSchemaWarning" in line or ".py:" in line for line in err)  # no Python warning format


def test_the_baselines_count_their_fits_and_trees_and_their_metrics_do_not_depend_on_it(tmp_path, monkeypatch):
    """With ``PROGRESS_EVERY = 0`` every fit (and every batch of 10 trees of the non-private forest) says its count;
    the metrics are those of a run that says nothing (research seeds: the same fits)."""
    from edprf_fl.simulation import SimulationSettings, prepare_workspace, train_baselines

    settings = SimulationSettings(parties=2, seed=0)
    workspace = prepare_workspace(settings, tmp_path / "out")
    said: list[str] = []
    monkeypatch.setattr(_progress, "PROGRESS_EVERY", 0.0)
    loud = train_baselines(settings, workspace, said.append)
    counts = [line for line in said if "fitted" in line or "grown" in line]
    assert counts == [
        *(f"      fitted {k} of 5 central draws" for k in range(1, 6)),
        *(f"      fitted {k} of 10 party-alone models" for k in range(1, 11)),
        *(f"      grown {k} of 100 trees" for k in range(10, 101, 10)),
    ]
    starts = [line for line in said if line.endswith(" ...")]
    assert [line.split(":")[0] for line in starts] == [
        "      central eDPRF",
        "      each party alone",
        "      non-private forest",
    ]
    monkeypatch.setattr(_progress, "PROGRESS_EVERY", 1e9)
    assert train_baselines(settings, workspace) == loud
    # the forest grown 10 trees at a time is the forest of one fit of 100 trees (what the baseline was before)
    from sklearn.ensemble import RandomForestClassifier

    from edprf_core.encoding import encode_labels
    from edprf_fl.simulation import raw_features
    from edprf_fl.simulation._baselines import baseline_rows
    from server import classification_metrics

    pooled, _, _ = baseline_rows(settings, workspace)
    schema, X, y = workspace.schema, workspace.X_train.iloc[pooled], workspace.y_train.iloc[pooled]
    whole = RandomForestClassifier(n_estimators=100, random_state=settings.seed, n_jobs=-1)
    whole.fit(raw_features(X, schema), encode_labels(y, schema))
    classes = np.asarray(schema.classes)
    proba = np.zeros((len(workspace.X_test), len(classes)))
    proba[:, whole.classes_] = whole.predict_proba(raw_features(workspace.X_test, schema))
    expected = classification_metrics(classes[encode_labels(workspace.y_test, schema)], proba, classes)
    assert {k: loud["non_private_rf"][k] for k in expected} == expected  # the Brier score too: the same forest


def test_the_ray_engine_s_silent_start_is_said(wall, tmp_path, monkeypatch):
    """The simulation review: on ``--engine ray`` nothing was printed for about 20 s after ``[2/4]`` (Ray starting
    its workers, then rounds with no per-party line), which reads as a hang."""
    from edprf_fl.simulation import SimulationSettings, _engine, run_simulation
    from edprf_fl.simulation._run import RAY_START_NOTE

    data, schema_path, _ = wall
    lines: list[str] = []

    class Stop(Exception):
        pass

    def engine(*_, **__):  # the engine itself is not under test: what was said before it ran is
        lines.append("<engine>")
        raise Stop

    monkeypatch.setattr(_engine, "simulate_federation", engine)
    for name in ("ray", "in-process"):
        lines.clear()
        settings = SimulationSettings(data=data, schema=schema_path, parties=2, engine=name)
        with pytest.raises(Stop):
            run_simulation(settings, tmp_path / name, progress=lines.append)
        start = next(i for i, line in enumerate(lines) if line.startswith("[2/4]"))
        said = lines[start + 1 : lines.index("<engine>")]
        assert said == ([RAY_START_NOTE] if name == "ray" else []), said


def test_baselines_on_many_rows_say_how_to_skip_them(tmp_path, monkeypatch):
    """Scale review F5: at 648,000 rows the baselines took 5 of a run's 5.5 minutes and nothing said they could be
    skipped."""
    from edprf_fl.simulation import SimulationSettings, _run, run_simulation

    monkeypatch.setattr(_run, "_SLOW_BASELINE_ROWS", 100)  # the embedded data's training rows are above it
    said: list[str] = []
    run_simulation(SimulationSettings(parties=2, seed=0, engine="in-process"), tmp_path / "out", progress=said.append)
    (line,) = [s for s in said if s.startswith("[4/4]")]
    assert line.endswith("this takes minutes; --no-baselines skips them)") and " rows this takes" in line
