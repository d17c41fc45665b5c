"""Outputs appear whole and never clobber another run's (review rev-auto A1).

``edprf predict -o``, ``evaluate --json``, ``export`` and ``demo --output`` checked "OUT exists; pass --force" at
start-up but opened OUT in place at the first write: two runs started together both exited 0 and left a corrupt file
(the rows of both, NUL bytes between).  Each output is now written under a temporary name beside it and moved into
place at the end: without --force a file another run wrote meanwhile is refused then (today's text, exit 1) and kept;
with --force it is replaced; a run stopped by SIGTERM removes its temporary file and nothing else.  The races are
reproduced by a hook that writes "the other run's" file between the start-up check and the move.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from edprf_fl.cli import main

OTHER = "the other run's file\n"
REPO = Path(__file__).resolve().parents[2]


def _only(directory: Path, *names: str) -> None:
    """No temporary file left beside the outputs."""
    assert sorted(p.name for p in directory.iterdir()) == sorted(names)


@pytest.fixture
def other_run_writes(monkeypatch):
    """Make ``path`` appear (another run's finished output) when ``module.attribute`` is first called."""

    def install(module, attribute: str, path: Path) -> None:
        real = getattr(module, attribute)

        def hooked(*args, **kwargs):
            if not path.exists():
                path.write_text(OTHER)
            return real(*args, **kwargs)

        monkeypatch.setattr(module, attribute, hooked)

    return install


@pytest.mark.parametrize("name", ["risk.csv", "risk.csv.gz", "risk.parquet"])
def test_a_predict_racing_another_refuses_at_the_end_and_keeps_the_others_file(
    tmp_path, bank_model, capsys, other_run_writes, name
):
    import edprf_fl.cli._predict_cmd as predict_cmd

    out = tmp_path / name
    other_run_writes(predict_cmd._Writer, "write", out)
    argv = ["predict", str(bank_model["model"]), str(bank_model["data"]), "-o", str(out), "--chunk-rows", "50"]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert f"edprf predict: error: --output {out} exists; pass --force to overwrite it" in err
    assert out.read_text() == OTHER  # not one row of ours in it, no NUL bytes
    _only(tmp_path, name)


def test_a_predict_with_force_replaces_the_file_another_run_wrote_whole(tmp_path, bank_model, capsys, other_run_writes):
    import stat

    import edprf_fl.cli._predict_cmd as predict_cmd

    out = tmp_path / "risk.csv"
    other_run_writes(predict_cmd._Writer, "write", out)
    argv = ["predict", str(bank_model["model"]), str(bank_model["data"]), "-o", str(out), "--force"]
    assert main([*argv, "--chunk-rows", "50"]) == 0
    lines = out.read_text().splitlines()
    assert lines[0].startswith("line,status,detail,") and OTHER.strip() not in lines and "\0" not in out.read_text()
    assert len(lines) == len(Path(bank_model["data"]).read_text().splitlines())  # a header, a row per data line
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    _only(tmp_path, "risk.csv")


def test_a_reader_never_sees_part_of_the_predictions(tmp_path, bank_model, monkeypatch):
    """While rows are written, OUT does not exist yet: only a temporary file beside it."""
    import edprf_fl.cli._predict_cmd as predict_cmd

    out, seen = tmp_path / "risk.csv", []
    real = predict_cmd._Writer.write

    def look(self, frame):
        real(self, frame)
        seen.append((out.exists(), len(list(tmp_path.glob(".risk.csv.*.tmp")))))

    monkeypatch.setattr(predict_cmd._Writer, "write", look)
    argv = ["predict", str(bank_model["model"]), str(bank_model["data"]), "-o", str(out), "--chunk-rows", "50"]
    assert main(argv) == 0
    assert len(seen) > 1 and set(seen) == {(False, 1)} and out.is_file()
    _only(tmp_path, "risk.csv")


SIGTERM_SCRIPT = textwrap.dedent(
    """
    import os, signal, sys
    from pathlib import Path
    import edprf_fl.cli._predict_cmd as predict_cmd
    from edprf_fl.cli import main

    model, data, out = sys.argv[1:4]
    real, calls = predict_cmd._Writer.write, []

    def write(self, frame):
        real(self, frame)
        calls.append(1)
        if len(calls) == 2:  # the other run finishes its file, then this one is stopped
            Path(out).write_text("the other run's file\\n")
            os.kill(os.getpid(), signal.SIGTERM)
            signal.sigtimedwait([], 0.5)

    predict_cmd._Writer.write = write
    print(main(["predict", model, data, "-o", out, "--chunk-rows", "50"]))
    """
)


def test_a_predict_stopped_by_sigterm_removes_its_temporary_file_and_not_the_others(tmp_path, bank_model):
    """Before, the clean-up of a stopped run unlinked OUT: the file the other run was writing (rev-auto A1)."""
    out = tmp_path / "risk.csv"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-c", SIGTERM_SCRIPT, str(bank_model["model"]), str(bank_model["data"]), str(out)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=REPO,
        check=False,
    )
    assert done.stdout.split() == [str(128 + signal.SIGTERM)], done.stderr
    assert "stopped by SIGTERM" in done.stderr and f"stopped before {out} was complete" in done.stderr
    assert out.read_text() == OTHER
    _only(tmp_path, "risk.csv")


def test_evaluate_json_racing_another_refuses_and_force_replaces(tmp_path, bank_model, capsys, other_run_writes):
    import edprf_fl.cli._evaluate_cmd as evaluate_cmd

    out = tmp_path / "metrics.json"
    other_run_writes(evaluate_cmd, "format_report", out)  # after the start-up check, before the JSON is written
    argv = ["evaluate", str(bank_model["model"]), str(bank_model["data"]), "--json", str(out)]
    assert main(argv) == 1
    assert f"edprf evaluate: error: --json {out} exists; pass --force to overwrite it" in capsys.readouterr().err
    assert out.read_text() == OTHER
    out.unlink()
    assert main([*argv, "--force"]) == 0
    assert "rows" in json.loads(out.read_text())
    _only(tmp_path, "metrics.json")


@pytest.mark.parametrize("first", ["model.onnx", "model.encoding.json"])
def test_export_racing_another_leaves_neither_of_its_files(tmp_path, bank_model, capsys, monkeypatch, first):
    """The graph and its encoding come from one run: a refusal of either leaves neither of this run's."""
    import edprf_core.export

    out = tmp_path / "model.onnx"
    real = edprf_core.export.forest_to_onnx

    def other_run(*args, **kwargs):
        (tmp_path / first).write_text(OTHER)
        return real(*args, **kwargs)

    monkeypatch.setattr(edprf_core.export, "forest_to_onnx", other_run)
    assert main(["export", str(bank_model["model"]), "-o", str(out)]) == 1
    assert f"{tmp_path / first}" in capsys.readouterr().err
    assert (tmp_path / first).read_text() == OTHER
    _only(tmp_path, first)


def test_export_with_force_moves_both_files_of_one_run(tmp_path, bank_model, capsys, monkeypatch):
    import edprf_core.export

    out, spec = tmp_path / "model.onnx", tmp_path / "model.encoding.json"
    real = edprf_core.export.forest_to_onnx

    def other_run(*args, **kwargs):
        out.write_text(OTHER)
        spec.write_text(OTHER)
        return real(*args, **kwargs)

    monkeypatch.setattr(edprf_core.export, "forest_to_onnx", other_run)
    assert main(["export", str(bank_model["model"]), "-o", str(out), "--force"]) == 0
    assert out.read_bytes() != OTHER.encode() and isinstance(json.loads(spec.read_text()), dict)
    _only(tmp_path, "model.onnx", "model.encoding.json")


def test_a_demo_on_a_directory_another_demo_holds_is_refused_before_training(tmp_path, capsys):
    from edprf_fl import hold_directory
    from edprf_fl.cli._demo import DEMO_LOCK

    out = tmp_path / "demo"
    out.mkdir()
    with hold_directory(out, DEMO_LOCK, str, "edprf demo --output x", remove=True):
        assert main(["demo", "--dataset", "bank_marketing", "--output", str(out)]) == 1
    err = capsys.readouterr().err
    assert f"--output {out} is in use by another edprf command (pid {os.getpid()}: edprf demo --output x)" in err
    assert "[1/3]" not in err
    _only(out)  # the lock file goes with its holder


def test_a_demo_racing_another_writer_keeps_its_files_and_leaves_none_of_its_own(tmp_path, capsys, other_run_writes):
    import edprf_fl.cli._demo as demo

    out = tmp_path / "demo"
    other_run_writes(demo, "_ranking_lines", out / "test.csv")  # after the check, before the files are moved
    assert main(["demo", "--dataset", "bank_marketing", "--seed", "1", "--output", str(out)]) == 1
    assert f"--output: {out / 'test.csv'} exists; remove it or choose another directory" in capsys.readouterr().err
    assert (out / "test.csv").read_text() == OTHER
    _only(out, "test.csv")  # not this run's model beside another's rows
