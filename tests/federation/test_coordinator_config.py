"""The coordinator's run config: kebab-case keys, typed, validated; defaults match the Flower app."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from server import DEFAULT_RUN_CONFIG, CoordinatorConfig

REPO = Path(__file__).resolve().parents[2]


def test_defaults_are_the_flower_app_config_in_pyproject():
    app_config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["flwr"]["app"]["config"]
    assert app_config == DEFAULT_RUN_CONFIG  # `flwr run` and programmatic use start from the same values


def test_run_config_values_are_cast_and_unknown_keys_ignored():
    cfg = CoordinatorConfig.from_run_config(
        {"schema-path": "s.toml", "epsilon": "0.5", "max-depth": 4, "exact-metrics": "true", "another-app-key": 1}
    )
    assert cfg.epsilon == 0.5 and cfg.max_depth == 4 and cfg.exact_metrics is True


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("epsilon", 0.0, "epsilon: expected a positive finite number"),
        ("epsilon", float("inf"), "epsilon: expected a positive finite number"),
        ("evaluation-epsilon", -0.1, "evaluation-epsilon"),
        ("max-depth", 0, "max-depth: expected >= 1"),
        ("min-parties", 0, "min-parties: expected >= 1"),
        ("expected-parties", -1, "expected-parties: expected >= 0"),
        ("flag-alpha", 1.0, "flag-alpha"),
        ("exact-metrics", "yes", "run config exact-metrics: expected bool"),
        ("max-depth", "deep", "run config max-depth: expected int"),
        ("request-tag", "../run 1", "request-tag: expected 1..64"),
        ("request-tag", "x" * 65, "request-tag: expected 1..64"),
    ],
)
def test_bad_run_config_values_are_refused_with_the_key_named(key, value, message):
    with pytest.raises(ValueError, match=message):
        CoordinatorConfig.from_run_config({"schema-path": "s.toml", key: value})


def test_coordinator_needs_the_public_schema():
    with pytest.raises(ValueError, match="schema-path"):
        CoordinatorConfig.from_run_config({})


def test_parties_to_wait_for(tmp_path):
    assert CoordinatorConfig(schema_path="s.toml").parties_to_wait_for == 1
    assert CoordinatorConfig(schema_path="s.toml", min_parties=2, expected_parties=5).parties_to_wait_for == 5
    assert CoordinatorConfig(schema_path="s.toml", min_parties=3, expected_parties=2).parties_to_wait_for == 3
    for p in range(4):  # a simulation workspace the coordinator prepared: wait for each of its parties
        (tmp_path / f"party-{p:04d}").mkdir()
    (tmp_path / "party-notes.txt").write_text("not a party")
    assert CoordinatorConfig(sim_dir=str(tmp_path)).parties_to_wait_for == 4
    assert CoordinatorConfig(sim_dir=str(tmp_path), expected_parties=2).parties_to_wait_for == 2
