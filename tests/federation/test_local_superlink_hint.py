"""What ``edprf simulate --prepare-only`` says of the local SuperLink its ``flwr run`` command leaves running.

Security review finding 2: Flower 1.41's ``flwr run`` starts ``flower-superlink --insecure --simulation`` detached
and leaves it running; its Control API has no authentication, so any local account can list and submit runs, which
execute as the user who ran ``flwr run``.  The hint said only "stop it when done".  It now says why, and gives the
command that stops it, checked here against the command line Flower builds.
"""

from __future__ import annotations

import re
import shlex
import subprocess
from types import SimpleNamespace

import click
import pytest

from edprf_fl.cli._main import main


def _printed(tmp_path, capsys) -> str:
    assert main(["simulate", "--prepare-only", "--parties", "2", "--max-depth", "2", "--output", str(tmp_path)]) == 0
    return capsys.readouterr().out


def test_the_hint_says_why_the_local_superlink_must_be_stopped(tmp_path, capsys):
    printed = " ".join(_printed(tmp_path / "o", capsys).split())
    for reason in (
        "no TLS and no authentication",
        "any account on this machine can list its runs and submit new ones, which run as you",
        "readable by every account",
        "`edprf simulate` (no SuperLink, no socket)",
        "umask 077",
    ):
        assert reason in printed, reason


def test_the_printed_stop_command_matches_the_superlink_flwr_run_starts(tmp_path, capsys, monkeypatch):
    """The pattern of the printed ``pkill`` is found in the command line Flower 1.41 starts its SuperLink with."""
    from flwr.cli import local_superlink

    stop = next(line.strip() for line in _printed(tmp_path / "o", capsys).splitlines() if "pkill" in line)
    words = shlex.split(stop)
    assert words[:3] == ["pkill", "-u", "$(id -u)"] and words[3] == "-f"  # this account's processes only
    started: list[list[str]] = []

    def popen(command, **_):
        started.append(command)
        raise OSError("not started in this test")

    monkeypatch.setattr(local_superlink, "subprocess", SimpleNamespace(Popen=popen, DEVNULL=subprocess.DEVNULL))
    monkeypatch.setenv("FLWR_HOME", str(tmp_path / "flwr-home"))
    with pytest.raises(click.ClickException):
        local_superlink._start_local_superlink()
    assert re.search(words[4], " ".join(started[0]))
    assert "--insecure" in started[0]  # what the hint warns of: no TLS, no authentication
