"""`edprf consortium` finds the app to submit after a plain (non-editable) install, as the runbook installs it; a plain
install without Flower's commands, `edprf run` too, names the extra to install; an unusable default --dir says where it
comes from."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from edprf_fl.cli import _consortium

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def plain_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The package seen from site-packages (no pyproject.toml above it), run from an unrelated directory."""
    site = tmp_path / "site-packages"
    site.mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.setattr(_consortium, "_source_tree", lambda: site)
    monkeypatch.delenv("EDPRF_SRC", raising=False)
    monkeypatch.chdir(elsewhere)
    return site


def test_a_plain_install_takes_edprf_src(plain_install: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EDPRF_SRC", str(ROOT))
    assert _consortium._app_dir(None) == ROOT


def test_a_plain_install_takes_the_working_directory(plain_install: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    assert _consortium._app_dir(None) == ROOT


def test_without_a_source_tree_the_error_says_where_it_looked_and_what_to_do(plain_install: Path) -> None:
    with pytest.raises(ValueError) as caught:
        _consortium._app_dir(None)
    text = str(caught.value)
    assert str(plain_install) in text and "elsewhere" in text
    assert "--app" in text and "EDPRF_SRC" in text


def test_an_editable_install_needs_nothing() -> None:
    assert _consortium._app_dir(None) == ROOT


def test_a_given_directory_is_the_only_one_tried(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=str(tmp_path)):
        _consortium._app_dir(tmp_path)


# --------------------------------------------------------------- what a plain install says (review rev-pkg P7, P14)
DEPLOY_EXTRA = "pip install 'edprf-fl[deploy]'"


def test_consortium_without_flowers_commands_names_the_extra_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from edprf_fl.cli import _flower_processes, main

    monkeypatch.setattr(_flower_processes, "BIN", tmp_path / "bin")  # a plain install: no Flower command beside it
    assert main(["consortium", "--dir", str(tmp_path / "state"), "--app", str(ROOT)]) == 1
    err = capsys.readouterr().err
    assert "flower-superlink, flower-supernode, flower-superexec, flwr not installed next to" in err
    assert DEPLOY_EXTRA in err and "install edprf-fl there" not in err, err
    assert not (tmp_path / "state").exists()


def test_run_without_flwr_names_the_extra_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from edprf_fl.cli import main

    (tmp_path / "bin").mkdir()
    monkeypatch.setattr(sys, "executable", str(tmp_path / "bin" / "python"))  # no flwr beside it
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))  # nor on PATH
    monkeypatch.setenv("FLWR_HOME", str(tmp_path / "flwr-home"))
    assert main(["run", str(ROOT)]) == 1
    err = capsys.readouterr().err
    assert f"flwr is not installed next to {tmp_path / 'bin' / 'python'} nor on PATH" in err
    assert DEPLOY_EXTRA in err and "No such file" not in err, err


@pytest.mark.parametrize("xdg", [False, True])
def test_a_default_dir_that_cannot_be_created_says_where_it_comes_from_and_names_dir(
    xdg: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A service account whose home does not exist (HOME=/nonexistent) or whose XDG_STATE_HOME cannot be made: a
    regular file stands in for either (the tests may run as root, who may write anywhere)."""
    from edprf_fl.cli import _flower_processes, main

    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setattr(_flower_processes, "missing_flower_tools", list)  # every command present
    if xdg:
        monkeypatch.setenv("XDG_STATE_HOME", str(blocker / "state"))
    else:
        monkeypatch.delenv("XDG_STATE_HOME", raising=False)
        monkeypatch.setenv("HOME", str(blocker))
    assert main(["consortium", "--app", str(ROOT)]) == 1
    err = capsys.readouterr().err
    assert f"cannot create the default directory {blocker}/" in err and "Not a directory" in err, err
    origin = f"$XDG_STATE_HOME/edprf/consortium (XDG_STATE_HOME={blocker / 'state'})" if xdg else "~/.local/state"
    assert origin in err and "give --dir DIR" in err and "set XDG_STATE_HOME" in err, err
