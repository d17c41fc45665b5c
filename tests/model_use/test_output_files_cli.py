"""edprf predict, edprf export and edprf evaluate --json refuse to replace a file they would write, unless --force (hospital IT walkthrough:
both silently overwrote yesterday's predictions, or the encoding export writes beside the model).

The refusal is one line naming the file and --force, before the model is loaded (no banner, nothing written);
MODEL itself is never an output, whatever --force says; ``-o -`` (stdout) is unaffected.
"""

from __future__ import annotations

import pytest

from edprf_fl.cli import main

from .test_model_flags_cli import _no_banner

OLD = "yesterday's file\n"


def _one_line(capsys, command: str, *texts: str) -> None:
    err = capsys.readouterr().err
    _no_banner(err)
    assert len(err.strip().splitlines()) == 1 and err.startswith(f"edprf {command}: error: "), err
    assert all(text in err for text in texts), err


@pytest.mark.parametrize(
    ("command", "flag", "name", "written"),
    [("predict", "--output", "risk.csv", "line,status,detail,"), ("evaluate", "--json", "metrics.json", "{")],
)
def test_an_existing_output_is_refused_unless_force(tmp_path, bank_model, capsys, command, flag, name, written):
    out = tmp_path / name
    out.write_text(OLD)
    argv = [command, str(bank_model["model"]), str(bank_model["data"]), flag, str(out)]
    assert main(argv) == 1
    _one_line(capsys, command, f"{flag} {out} exists; pass --force to overwrite it")
    assert out.read_text() == OLD
    assert main([*argv, "--force"]) == 0
    assert out.read_text().startswith(written)


def test_predict_never_writes_over_model_and_stdout_is_unaffected(tmp_path, bank_model, capsys):
    model = bank_model["model"]
    before = model.read_bytes()
    assert main(["predict", str(model), str(bank_model["data"]), "-o", str(model), "--force"]) == 1
    _one_line(capsys, "predict", f"--output {model}: expected a file name ending in .csv")  # .edprf is no output
    assert model.read_bytes() == before
    named_csv = tmp_path / "model.csv"  # a model file whatever its name: still never written over
    named_csv.write_bytes(before)
    assert main(["predict", str(named_csv), str(bank_model["data"]), "-o", str(named_csv), "--force"]) == 1
    _one_line(capsys, "predict", "that is MODEL itself")
    assert named_csv.read_bytes() == before
    assert main(["predict", str(model), str(bank_model["data"]), "-o", "-"]) == 0
    assert capsys.readouterr().out.startswith("line,status,detail,")


@pytest.mark.parametrize("existing", ["model.onnx", "model.encoding.json"])
def test_export_refuses_either_file_it_writes(tmp_path, bank_model, capsys, existing):
    out = tmp_path / "model.onnx"
    (tmp_path / existing).write_text(OLD)
    assert main(["export", str(bank_model["model"]), "-o", str(out)]) == 1
    _one_line(capsys, "export", f"{tmp_path / existing}", "exists; pass --force to overwrite it")
    assert [p.name for p in tmp_path.iterdir()] == [existing]  # nothing written
    assert (tmp_path / existing).read_text() == OLD


def test_export_with_force_replaces_both_and_checks_the_directory_first(tmp_path, bank_model, capsys):
    pytest.importorskip("onnx")
    out = tmp_path / "model.onnx"
    for path in (out, tmp_path / "model.encoding.json"):
        path.write_text(OLD)
    assert main(["export", str(bank_model["model"]), "-o", str(out), "--force"]) == 0
    assert out.read_bytes() != OLD.encode() and (tmp_path / "model.encoding.json").read_text().startswith("{")
    capsys.readouterr()
    assert main(["export", str(bank_model["model"]), "-o", str(tmp_path / "no-dir" / "m.onnx")]) == 1
    _one_line(capsys, "export", "no such directory")


@pytest.mark.parametrize("name", ["risk.xlsx", "risk", "risk.txt.gz", "risk.json"])
def test_predict_refuses_an_output_it_cannot_write_as_named(tmp_path, bank_model, capsys, name):
    """.xlsx silently got CSV (hospital-analyst walkthrough): the supported names are listed, before the model loads."""
    out = tmp_path / name
    assert main(["predict", str(bank_model["model"]), str(bank_model["data"]), "-o", str(out)]) == 1
    _one_line(capsys, "predict", f"--output {out}: expected a file name ending in .csv, .csv.gz, .parquet or .pq")
    assert not out.exists()


@pytest.mark.parametrize("name", ["risk.CSV", "risk.csv.gz", "risk.parquet", "risk.pq"])
def test_predict_writes_every_supported_name(tmp_path, bank_model, name):
    import pandas as pd

    out = tmp_path / name
    assert main(["predict", str(bank_model["model"]), str(bank_model["data"]), "-o", str(out)]) == 0
    frame = pd.read_parquet(out) if name.endswith(("parquet", "pq")) else pd.read_csv(out)  # .gz: pandas unzips
    assert list(frame.columns[:3]) == ["line", "status", "detail"]


def test_export_refuses_an_output_not_named_onnx(tmp_path, bank_model, capsys):
    out = tmp_path / "m.txt"
    assert main(["export", str(bank_model["model"]), "-o", str(out)]) == 1
    _one_line(capsys, "export", f"--output {out}: expected a file name ending in .onnx (--format onnx), got '.txt'")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("command", "flag"), [("evaluate", "--json"), ("predict", "-o")])
def test_no_output_is_ever_written_over_data(tmp_path, bank_model, capsys, command, flag):
    """`evaluate MODEL DATA --json DATA --force` replaced the labelled rows with the metrics (review)."""
    data = tmp_path / "rows.csv"
    data.write_bytes(bank_model["data"].read_bytes())
    before = data.read_bytes()
    assert main([command, str(bank_model["model"]), str(data), flag, str(data), "--force"]) == 1
    _one_line(capsys, command, "that is DATA itself")
    assert data.read_bytes() == before


def test_evaluate_json_dash_is_refused_not_a_file_named_dash(tmp_path, bank_model, capsys, monkeypatch):
    """`--json -` wrote a file named '-' (predict's '-o -' is stdout): deployment walkthrough."""
    monkeypatch.chdir(tmp_path)
    assert (
        main(["evaluate", str(bank_model["model"]), str(bank_model["data"]), "--json", "-"]) == 2
    )  # a usage error (rev-auto A5)
    _one_line(capsys, "evaluate", "--json -: expected a file path")
    assert not (tmp_path / "-").exists()


@pytest.mark.parametrize(
    ("command", "flag", "name"),
    [
        ("predict", "--output", "risk.csv"),
        ("predict", "--output", "risk.csv.gz"),
        ("predict", "--output", "risk.parquet"),
        ("evaluate", "--json", "metrics.json"),
    ],
)
def test_predictions_and_metrics_are_readable_by_their_owner_only(tmp_path, bank_model, command, flag, name):
    """Predictions (a row per patient) and exact metrics of DATA were written with the process's umask, 0644 under
    the usual 022: readable by every account on the host (walkthrough).  Now 0600 whatever the umask, also when
    --force replaces a file that was readable by others; the export's model files keep their mode."""
    import os
    import stat

    out = tmp_path / name
    argv = [command, str(bank_model["model"]), str(bank_model["data"]), flag, str(out)]
    old_umask = os.umask(0o022)
    try:
        assert main(argv) == 0
        assert stat.S_IMODE(out.stat().st_mode) == 0o600
        out.chmod(0o644)
        assert main([*argv, "--force"]) == 0
        assert stat.S_IMODE(out.stat().st_mode) == 0o600
        assert main(["export", str(bank_model["model"]), "-o", str(tmp_path / "model.onnx"), "--force"]) == 0
    finally:
        os.umask(old_umask)
    assert stat.S_IMODE((tmp_path / "model.onnx").stat().st_mode) == 0o644


def test_an_output_this_user_cannot_make_owner_only_is_refused_as_it_was(tmp_path, monkeypatch):
    """A file this user may write but not chmod (another's, in a shared directory) is not emptied."""
    import errno
    import os

    from edprf_fl.cli._owner_only import open_owner_only

    out = tmp_path / "theirs.csv"
    out.write_text(OLD)

    def refuse(fd, mode):
        raise PermissionError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(os, "fchmod", refuse)
    with pytest.raises(PermissionError, match="cannot make it readable by its owner only") as exc:
        open_owner_only(out)
    assert exc.value.filename == str(out) and out.read_text() == OLD


def test_a_symbolic_link_at_the_output_is_refused_even_with_force(tmp_path, bank_model, capsys):
    """Review: with --force, a link at OUT was followed: its target (a shared file, say) made owner-only and
    emptied."""
    import stat

    shared = tmp_path / "shared.csv"
    shared.write_text(OLD)
    shared.chmod(0o664)
    link = tmp_path / "predictions.csv"
    link.symlink_to(shared)
    code = main(["predict", str(bank_model["model"]), str(bank_model["data"]), "-o", str(link), "--force"])
    assert code != 0 and "a symbolic link: give the path of the file itself" in capsys.readouterr().err
    assert shared.read_text() == OLD and stat.S_IMODE(shared.stat().st_mode) == 0o664


@pytest.mark.parametrize("name", ["risk.csv", "risk.csv.gz", "risk.parquet"])
def test_a_predict_that_fails_part_way_leaves_no_truncated_file(tmp_path, bank_model, capsys, monkeypatch, name):
    """Scale review F8: a full disk left a truncated predictions file (460,000 of 10^6 rows) under the name asked for,
    and nothing said it was partial.  Since review rev-auto A1 OUT is written under a temporary name: the file
    --force would have replaced stays whole."""
    import edprf_fl.cli._predict_cmd as predict_cmd

    written, real_write = [], predict_cmd._Writer.write

    def full_after_one_chunk(self, frame):
        if written:
            raise OSError(28, "No space left on device")
        written.append(len(frame))
        real_write(self, frame)

    monkeypatch.setattr(predict_cmd._Writer, "write", full_after_one_chunk)
    out = tmp_path / name
    out.write_text(OLD)
    argv = ["predict", str(bank_model["model"]), str(bank_model["data"]), "-o", str(out), "--force"]
    assert main([*argv, "--chunk-rows", "50"]) == 1
    err = capsys.readouterr().err
    assert "No space left on device" in err and f"stopped before {out} was complete: nothing written there" in err
    assert written and out.read_text() == OLD  # written under a temporary name (rev-auto A1): OUT left as it was
    assert [p.name for p in tmp_path.iterdir()] == [name]  # and the temporary file removed
    monkeypatch.undo()
    assert main(argv) == 0 and out.read_bytes() != OLD.encode()


def test_a_predict_that_fails_part_way_leaves_a_named_pipe_alone(tmp_path, bank_model, capsys, monkeypatch):
    """Whole-change review F3: the clean-up of a stopped run removed a named pipe the user had made as OUT."""
    import os
    import threading

    import edprf_fl.cli._predict_cmd as predict_cmd

    def full_after_one_chunk(self, frame, real=predict_cmd._Writer.write, calls=[]):  # noqa: B006 - a call count
        calls.append(1)
        if len(calls) > 1:
            raise OSError(28, "No space left on device")
        real(self, frame)

    monkeypatch.setattr(predict_cmd._Writer, "write", full_after_one_chunk)
    pipe = tmp_path / "out.csv"
    os.mkfifo(pipe)
    reader = threading.Thread(target=lambda: pipe.read_bytes(), daemon=True)  # the user's consumer
    reader.start()
    argv = ["predict", str(bank_model["model"]), str(bank_model["data"]), "-o", str(pipe), "--force"]
    assert main([*argv, "--chunk-rows", "50"]) == 1
    reader.join(timeout=30)
    assert pipe.is_fifo() and "removed the incomplete" not in capsys.readouterr().err
