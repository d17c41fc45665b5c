"""The log level the Flower processes of ``edprf consortium`` and ``edprf run`` get (review rev-dpo D11: every
``FLWR_`` variable of the caller was dropped and ``edprf -vv`` reached no child, so a trial could not show a
party's debug lines)."""

from __future__ import annotations

import logging

from edprf_fl.cli._flower_processes import flower_env


def test_the_callers_flwr_log_level_reaches_the_children_and_no_other_flwr_setting_does(tmp_path, monkeypatch):
    monkeypatch.setenv("FLWR_LOG_LEVEL", "INFO")
    monkeypatch.setenv("FLWR_HOME", "/somewhere/else")
    env = flower_env(tmp_path)
    assert env["FLWR_LOG_LEVEL"] == "INFO"
    assert env["FLWR_HOME"] == str(tmp_path / "flwr-home" / "cli")


def test_edprf_vv_sets_debug_and_the_default_leaves_flowers_own(tmp_path, monkeypatch):
    monkeypatch.delenv("FLWR_LOG_LEVEL", raising=False)
    logger = logging.getLogger("edprf")
    before = logger.level
    try:  # setLevel, not the attribute: it clears the logger's cache of isEnabledFor
        logger.setLevel(logging.WARNING)
        assert "FLWR_LOG_LEVEL" not in flower_env(tmp_path)
        logger.setLevel(logging.DEBUG)
        assert flower_env(tmp_path)["FLWR_LOG_LEVEL"] == "DEBUG"
    finally:
        logger.setLevel(before)
