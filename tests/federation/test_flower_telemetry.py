"""Flower's usage telemetry and update check stay off wherever edprf runs Flower in its own process (audit of stop
44: `edprf simulate` sent Flower's usage events to telemetry.flower.ai and wrote ~/.flwr/source; review rev-pkg P1:
Flower 1.41's update check posts the flwr, Python and kernel versions to api.flower.ai from every Flower server
process and interactive `flwr` command unless FLWR_DISABLE_UPDATE_CHECK=1)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

QUIET = {"FLWR_TELEMETRY_ENABLED": "0", "FLWR_DISABLE_UPDATE_CHECK": "1"}


@pytest.mark.parametrize(("given", "kept"), [(None, "0"), ("0", "0"), ("1", "1")])
def test_telemetry_is_off_unless_the_user_turned_it_on(monkeypatch, given, kept):
    from flwr.supercore import telemetry

    from edprf_fl import keep_flower_telemetry_off

    if given is None:
        monkeypatch.delenv("FLWR_TELEMETRY_ENABLED", raising=False)
    else:
        monkeypatch.setenv("FLWR_TELEMETRY_ENABLED", given)
    monkeypatch.setattr(telemetry, "FLWR_TELEMETRY_ENABLED", given or "1")  # what Flower read on import
    keep_flower_telemetry_off()
    assert os.environ["FLWR_TELEMETRY_ENABLED"] == kept == telemetry.FLWR_TELEMETRY_ENABLED


@pytest.mark.parametrize(("given", "kept"), [(None, "1"), ("1", "1"), ("0", "0"), ("", "")])
def test_the_update_check_is_off_unless_the_user_set_the_variable(monkeypatch, given, kept):
    """The user's explicit value is kept (``0`` or empty: Flower checks); unset, it is set to ``1``, and Flower's
    check (which reads the variable at each call) then contacts nobody."""
    from flwr.supercore import update_check

    from edprf_fl import keep_flower_telemetry_off

    if given is None:
        monkeypatch.delenv("FLWR_DISABLE_UPDATE_CHECK", raising=False)
    else:
        monkeypatch.setenv("FLWR_DISABLE_UPDATE_CHECK", given)
    keep_flower_telemetry_off()
    assert os.environ["FLWR_DISABLE_UPDATE_CHECK"] == kept
    if kept == "1":
        called: list[str] = []
        monkeypatch.setattr(update_check, "_read_flwr_update_check_cache", lambda: called.append("cache"))
        monkeypatch.setattr(update_check, "_start_flwr_update_check_refresh_thread", lambda *a: called.append("post"))
        update_check.warn_if_flwr_update_available(process_name="flower-supernode")
        assert called == []


def test_the_command_and_the_simulation_turn_both_off_before_flower_runs(tmp_path):
    """In a fresh process: the CLI's entry point and the simulation engine both call it."""
    env = {k: v for k, v in os.environ.items() if k not in QUIET} | {"HOME": str(tmp_path)}
    code = (
        "import os, flwr.supercore.telemetry as t\n"
        "from edprf_fl.cli._main import main\n"
        "assert t.FLWR_TELEMETRY_ENABLED == '1' and 'FLWR_DISABLE_UPDATE_CHECK' not in os.environ\n"
        "try:\n    main(['budget', '/nonexistent'])\nexcept SystemExit:\n    pass\n"
        "print(os.environ['FLWR_TELEMETRY_ENABLED'], t.FLWR_TELEMETRY_ENABLED, os.environ['FLWR_DISABLE_UPDATE_CHECK'])\n"
        "os.environ.pop('FLWR_TELEMETRY_ENABLED'); t.FLWR_TELEMETRY_ENABLED = '1'\n"
        "os.environ.pop('FLWR_DISABLE_UPDATE_CHECK')\n"
        "from edprf_fl.simulation import _engine\n"
        "try:\n    _engine.simulate_federation(None, 1, engine='none')\nexcept ValueError:\n    pass\n"
        "print(os.environ['FLWR_TELEMETRY_ENABLED'], t.FLWR_TELEMETRY_ENABLED, os.environ['FLWR_DISABLE_UPDATE_CHECK'])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert out.split() == ["0", "0", "1", "0", "0", "1"]
    assert not (tmp_path / ".flwr").exists()


def test_the_command_keeps_a_value_the_user_set(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in QUIET} | {
        "HOME": str(tmp_path),
        "FLWR_TELEMETRY_ENABLED": "1",
        "FLWR_DISABLE_UPDATE_CHECK": "0",
    }
    code = (
        "import os\nfrom edprf_fl.cli._main import main\n"
        "try:\n    main(['budget', '/nonexistent'])\nexcept SystemExit:\n    pass\n"
        "print(os.environ['FLWR_TELEMETRY_ENABLED'], os.environ['FLWR_DISABLE_UPDATE_CHECK'])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert out.split() == ["1", "0"]


def test_every_flower_process_of_edprf_consortium_gets_both(tmp_path, monkeypatch):
    """``edprf consortium``'s first Flower process (its SuperLink) is started with both variables, whatever the
    caller's environment says (its ``FLWR_`` variables are dropped: the processes are this trial's own); the
    others take the same environment (``flower_env``) with their own ``FLWR_HOME``."""
    import subprocess as sp

    from edprf_fl.cli._flower_processes import flower_env
    from edprf_fl.cli._main import main

    started: list[tuple[list[str], dict[str, str]]] = []
    real_popen = sp.Popen

    class Stop(OSError):
        pass

    def popen(argv, *args, **kwargs):
        if Path(str(argv[0])).name.startswith(("flower-", "flwr")):
            started.append((list(argv), dict(kwargs.get("env") or {})))
            raise Stop("not started: the test reads its environment only")
        return real_popen(argv, *args, **kwargs)

    monkeypatch.setattr(sp, "Popen", popen)
    monkeypatch.setenv("FLWR_DISABLE_UPDATE_CHECK", "0")
    monkeypatch.setenv("FLWR_TELEMETRY_ENABLED", "1")
    assert main(["consortium", "--parties", "1", "--dir", str(tmp_path / "c"), "--app", str(REPO)]) == 1
    argv, env = started[0]
    assert Path(argv[0]).name == "flower-superlink"
    assert {k: env.get(k) for k in QUIET} == QUIET
    assert {k: flower_env(tmp_path)[k] for k in QUIET} == QUIET


def test_the_flwr_run_line_prepare_only_prints_turns_both_off(tmp_path, capsys):
    """The ``flwr run`` of ``edprf simulate --prepare-only`` runs in the user's shell: it carries both variables."""
    import shlex

    from edprf_fl.cli._main import main

    assert main(["simulate", "--prepare-only", "--parties", "2", "--max-depth", "2", "--output", str(tmp_path)]) == 0
    line = next(line for line in capsys.readouterr().out.splitlines() if " flwr run . " in line)
    tokens = shlex.split(line)
    variables = dict(token.split("=", 1) for token in tokens[: tokens.index("flwr")])
    assert {k: variables.get(k) for k in QUIET} == QUIET
