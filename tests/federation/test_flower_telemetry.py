"""Flower's usage telemetry stays off wherever edprf runs Flower in its own process (audit of stop 44: `edprf
simulate` sent Flower's usage events to telemetry.flower.ai and wrote ~/.flwr/source)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest


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


def test_the_command_and_the_simulation_turn_it_off_before_flower_runs(tmp_path):
    """In a fresh process: the CLI's entry point and the simulation engine both call it."""
    env = {k: v for k, v in os.environ.items() if k != "FLWR_TELEMETRY_ENABLED"} | {"HOME": str(tmp_path)}
    code = (
        "import os, flwr.supercore.telemetry as t\n"
        "from edprf_fl.cli._main import main\n"
        "assert t.FLWR_TELEMETRY_ENABLED == '1'\n"
        "try:\n    main(['budget', '/nonexistent'])\nexcept SystemExit:\n    pass\n"
        "print(os.environ['FLWR_TELEMETRY_ENABLED'], t.FLWR_TELEMETRY_ENABLED)\n"
        "os.environ.pop('FLWR_TELEMETRY_ENABLED'); t.FLWR_TELEMETRY_ENABLED = '1'\n"
        "from edprf_fl.simulation import _engine\n"
        "try:\n    _engine.simulate_federation(None, 1, engine='none')\nexcept ValueError:\n    pass\n"
        "print(os.environ['FLWR_TELEMETRY_ENABLED'], t.FLWR_TELEMETRY_ENABLED)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert out.split() == ["0", "0", "0", "0"]
    assert not (tmp_path / ".flwr").exists()
