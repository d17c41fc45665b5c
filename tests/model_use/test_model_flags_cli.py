"""edprf predict / evaluate check every flag before printing anything: a wrong flag is one line naming it and
its valid values, never after the model's banner (its provenance and guarantee, about six long lines)."""

from __future__ import annotations

import pytest

from edprf_fl.cli import main

BANNER = ("model: ", "parties: ", "provenance: ", "guarantee: ")
"""How the lines of the model's banner start (``_model_args.describe``)."""


def _argv(command: str, model: dict, tmp_path, *flags: str) -> list[str]:
    out = ["-o", str(tmp_path / "out.csv")] if command == "predict" else []
    return [command, str(model["model"]), str(model["data"]), *out, *flags]


def _no_banner(err: str) -> None:
    assert not [line for line in err.splitlines() if line.startswith(BANNER)], err


@pytest.mark.parametrize("command", ["predict", "evaluate"])
@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--positive-class", "maybe"], "--positive-class 'maybe': expected one of the declared classes ['no', 'yes']"),
        (["--threshold", "0.3"], "--threshold needs --positive-class C"),
        (["--positive-class", "yes", "--keys", "no-such-dir"], "--keys no-such-dir: expected a directory"),
        (["--sep", ";;"], "--sep: expected one character"),
    ],
)
def test_a_wrong_flag_is_one_line_before_the_model_banner(tmp_path, bank_model, capsys, command, flags, message):
    assert main(_argv(command, bank_model, tmp_path, *flags)) == 1
    err = capsys.readouterr().err
    _no_banner(err)
    assert len(err.strip().splitlines()) == 1 and err.startswith(f"edprf {command}: error: ")
    assert message in err


@pytest.mark.parametrize("command", ["predict", "evaluate"])
@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--positive-class", "yes", "--threshold", "1.5"], "argument --threshold: expected a probability in [0, 1]"),
        (["--positive-class", "yes", "--threshold", "nan"], "argument --threshold: expected a probability in [0, 1]"),
        (["--threshold", "-0.1"], "argument --threshold: expected a probability in [0, 1], got '-0.1'"),
    ],
)
def test_a_threshold_outside_0_1_is_refused_by_argparse(tmp_path, bank_model, capsys, command, flags, message):
    with pytest.raises(SystemExit) as stop:
        main(_argv(command, bank_model, tmp_path, *flags))
    assert stop.value.code == 2
    err = capsys.readouterr().err
    _no_banner(err)
    assert err.startswith(f"usage: edprf {command}") and message in err


def test_a_class_of_another_model_names_this_models_classes(tmp_path, wall_model, capsys):
    """The walkthrough's case: --positive-class yes on the four-class wall-robot model."""
    assert main(_argv("predict", wall_model, tmp_path, "--positive-class", "yes")) == 1
    err = capsys.readouterr().err
    _no_banner(err)
    assert "--positive-class 'yes': expected one of the declared classes" in err
    assert "Move-Forward" in err and "Sharp-Right-Turn" in err
    assert not (tmp_path / "out.csv").exists()


def test_output_files_in_a_missing_directory_are_refused_before_the_banner(tmp_path, bank_model, capsys):
    target = tmp_path / "nowhere" / "out.csv"
    assert main(["predict", str(bank_model["model"]), str(bank_model["data"]), "-o", str(target)]) == 1
    err = capsys.readouterr().err
    _no_banner(err)
    assert f"--output {target}: no such directory" in err
    assert main(["evaluate", str(bank_model["model"]), str(bank_model["data"]), "--json", str(target)]) == 1
    err = capsys.readouterr().err
    _no_banner(err)
    assert f"--json {target}: no such directory" in err


@pytest.mark.parametrize(("command", "flag"), [("predict", "--chunk-rows"), ("evaluate", "--calibration-bins")])
def test_counts_below_one_are_refused_by_argparse(tmp_path, bank_model, capsys, command, flag):
    with pytest.raises(SystemExit) as stop:
        main(_argv(command, bank_model, tmp_path, flag, "0"))
    assert stop.value.code == 2
    err = capsys.readouterr().err
    _no_banner(err)
    assert f"argument {flag}: expected an integer " in err and ", got '0'" in err


def test_calibration_bins_above_the_cap_are_refused_by_argparse(tmp_path, bank_model, capsys):
    from edprf_core.metrics import MAX_CALIBRATION_BINS
    from edprf_fl.cli._arg_types import CLI_MAX_CALIBRATION_BINS

    assert CLI_MAX_CALIBRATION_BINS == MAX_CALIBRATION_BINS == 1000
    with pytest.raises(SystemExit) as stop:
        main(_argv("evaluate", bank_model, tmp_path, "--calibration-bins", "100000000"))
    assert stop.value.code == 2
    err = capsys.readouterr().err
    _no_banner(err)
    assert "argument --calibration-bins: expected an integer in [1, 1000], got '100000000'" in err


def test_good_flags_still_print_the_banner_once(tmp_path, bank_model, capsys):
    assert main(_argv("predict", bank_model, tmp_path, "--positive-class", "yes", "--threshold", "0.2")) == 0
    err = capsys.readouterr().err
    assert sum(line.startswith("model: ") for line in err.splitlines()) == 1
    assert sum(line.startswith("guarantee: ") for line in err.splitlines()) == 1


@pytest.mark.parametrize("command", ["predict", "evaluate", "export", "explain", "inspect"])
def test_an_empty_model_file_is_named_empty(tmp_path, bank_model, capsys, command):
    """An empty (0-byte) model file read as format version 0: "format_version expected 1, got 0" (hospital-analyst
    walkthrough); every command that reads a model now says it is empty."""
    empty = tmp_path / "global-model.edprf"
    empty.write_bytes(b"")
    argv = {
        "predict": ["predict", str(empty), str(bank_model["data"]), "-o", str(tmp_path / "o.csv")],
        "evaluate": ["evaluate", str(empty), str(bank_model["data"])],
        "export": ["export", str(empty), "-o", str(tmp_path / "m.onnx")],
        "explain": ["explain", str(empty), str(bank_model["data"]), "--row", "0"],
        "inspect": ["inspect", str(empty)],
    }[command]
    assert main(argv) == 1
    captured = capsys.readouterr()
    text = captured.out + captured.err
    if command == "inspect":
        assert f"{empty}: not a valid release or global model: empty (0 bytes), not an edprf file" in text
    else:
        assert f"edprf {command}: " in text and f"MODEL {empty} is empty (0 bytes): not an edprf model file" in text
    assert "format_version" not in text and len(text.strip().splitlines()) == 1


def test_the_library_loaders_name_an_empty_model_too(tmp_path):
    import protocol

    empty = tmp_path / "global-model.edprf"
    empty.write_bytes(b"")
    for source in (empty, b""):
        with pytest.raises(protocol.InvalidRelease, match=r"empty \(0 bytes\): not an edprf model file"):
            protocol.load_global_model(source)
    with pytest.raises(protocol.InvalidRelease, match=r"empty \(0 bytes\)"):
        protocol.load_classifier(empty)


FOREIGN = "the file's columns do not match the schema 'bank-marketing': it expects 'age', 'job', 'marital', 'education'"


@pytest.mark.parametrize("command", ["predict", "evaluate"])
def test_data_of_another_schema_is_named_so_before_any_banner(tmp_path, bank_model, wall_model, capsys, command):
    """Another model's data, with its header, read 'none of the schema's columns is in the first line: if the file
    has no header, pass --no-header', under the model's banner (walkthrough)."""
    argv = _argv(command, bank_model, tmp_path)
    argv[2] = str(wall_model["data"])
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert (
        f"edprf {command}: error: {wall_model['data']}: {FOREIGN}, ... (15 features and the label 'y'); its first "
        in err
    )
    assert "its first line names none of them (25 fields, none a number" in err
    assert "is the file data for another model or dataset?" in err and "'US1'" not in err  # its cells: not repeated
    assert "--no-header" not in err
    _no_banner(err)


@pytest.mark.parametrize("command", ["predict", "evaluate"])
def test_a_wrong_separator_or_a_missing_header_is_said_before_any_banner(tmp_path, bank_model, capsys, command):
    """The guarantee (several paragraphs) was printed before the error about the file's first line."""
    assert main(_argv(command, bank_model, tmp_path, "--sep", ";")) == 1
    err = capsys.readouterr().err
    assert "(the first line holds ',': is that the separator? pass --sep ',')" in err
    _no_banner(err)
    headerless = tmp_path / "headerless.csv"
    headerless.write_text("".join(bank_model["data"].read_text().splitlines(keepends=True)[1:]), encoding="utf-8")
    argv = _argv(command, bank_model, tmp_path)
    argv[2] = str(headerless)
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "the first line is not a header of this schema (none of the schema's columns is in the first line: " in err
    assert "if the file has no header, pass --no-header)" in err and "do not match" not in err
    _no_banner(err)
