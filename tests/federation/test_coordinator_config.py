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
        ("marginals-share", 1.0, 'marginals-share: expected "auto" or a number in \\[0, 1\\)'),
        ("marginals-share", "half", "marginals-share: expected"),
        ("marginals-share", "nan", "marginals-share: expected"),
        ("marginals-bins", 1, "marginals-bins: expected 0"),
        ("marginals-bins", -2, "marginals-bins: expected 0"),
        ("consortium-rows", -1, "consortium-rows: expected >= 0"),
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


def test_the_marginals_plan_reads_public_figures_only():
    """One share and one grid for the consortium: from the declared size, or as configured; nothing inferred."""
    from edprf_core.marginals import MARGINALS_BINS_HIGH, MARGINALS_BINS_LOW, MIX_SHARE_HIGH, MIX_SHARE_LOW
    from tests.synthetic import make_schema

    two, four = make_schema(n_classes=2), make_schema(n_classes=4)  # d = 5 features

    def plan(schema, **kw):
        return CoordinatorConfig.from_run_config({"schema-path": "s.toml", **kw}).marginals_plan(schema)

    assert plan(two) == (0.0, 0)  # auto without a declared size: trees only
    assert MIX_SHARE_LOW == 0.0
    assert plan(two, **{"consortium-rows": 9}) == (0.0, 0)  # 9 * 1 / 5 < 2: the trees alone
    assert plan(two, **{"consortium-rows": 30}) == (MIX_SHARE_HIGH, MARGINALS_BINS_LOW)  # 30 / 5 >= 2, 22.5 / 5 < 300
    assert plan(two, **{"consortium-rows": 4000}) == (MIX_SHARE_HIGH, MARGINALS_BINS_HIGH)  # 3000 * 1 / 5 >= 300
    assert plan(two, **{"consortium-rows": 1000}) == (MIX_SHARE_HIGH, MARGINALS_BINS_LOW)  # 750 / 5 < 300
    assert plan(four, **{"consortium-rows": 10**6}) == (0.0, 0)  # more than two classes: trees only
    assert plan(four, **{"marginals-share": 0.5}) == (0.5, MARGINALS_BINS_LOW)
    assert plan(two, **{"marginals-share": "0.5", "marginals-bins": 8, "consortium-rows": 10**6}) == (0.5, 8)
    assert plan(two, **{"marginals-share": 0, "consortium-rows": 10**6}) == (0.0, 0)
    # the bins rule reads the summed histograms' budget epsilon / sqrt(parties): 3000 * (1 / 3) / 5 = 200 < 300
    config = CoordinatorConfig.from_run_config({"schema-path": "s.toml", "consortium-rows": 4000})
    assert config.marginals_plan(two, 4) == (MIX_SHARE_HIGH, MARGINALS_BINS_HIGH)  # 600 / 2 = 300
    assert config.marginals_plan(two, 9) == (MIX_SHARE_HIGH, MARGINALS_BINS_LOW)
    for bad in (0, 2.0, True):
        with pytest.raises(ValueError, match="n_parties: expected an integer >= 1"):
            config.marginals_plan(two, bad)
