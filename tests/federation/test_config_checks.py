"""One validation helper and one kebab-case reader for every configuration dataclass."""

from __future__ import annotations

import math
from dataclasses import dataclass

import pytest

from client import PartyPolicy
from edprf_core.config_checks import (
    Boolean,
    Integer,
    Number,
    OneOf,
    Text,
    check_fields,
    from_kebab,
    kebab,
    kebab_defaults,
    snake,
)
from protocol import ReleasePolicy


@dataclass(frozen=True)
class _Settings:
    n_things: int = 1
    share: float = 0.5
    mode: str = "a"
    verbose: bool = False
    label: str = ""


_RULES = {
    "n_things": Integer(1),
    "share": Number(0, 1, low_open=True, high_open=True),
    "mode": OneOf(("a", "b")),
    "verbose": Boolean(),
    "label": Text(8, pattern=r"[a-z]+", optional=True),
}


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("n_things", 0, "n-things: expected an integer >= 1, got 0"),
        ("n_things", True, "n-things: expected an integer >= 1, got True"),
        ("n_things", 1.0, "n-things: expected an integer >= 1, got 1.0"),
        ("share", 1, "share: expected a number in (0, 1), got 1"),
        ("share", math.nan, "share: expected a number in (0, 1), got nan"),
        ("share", False, "share: expected a number in (0, 1), got False"),
        ("mode", "c", "mode: expected one of ('a', 'b'), got 'c'"),
        ("mode", ["a"], "mode: expected one of ('a', 'b'), got ['a']"),
        ("verbose", 1, "verbose: expected true or false, got 1"),
        ("label", "ABC", "label: expected a string of at most 8 characters, got 'ABC'"),
        ("label", "abcdefghi", "label: expected a string of at most 8 characters, got 'abcdefghi'"),
    ],
)
def test_a_broken_rule_names_the_key_what_was_expected_and_what_was_found(field, value, message) -> None:
    settings = _Settings(**{field: value})
    with pytest.raises(ValueError) as caught:
        check_fields(settings, _RULES)
    assert str(caught.value) == message


def test_values_within_their_rules_pass() -> None:
    check_fields(_Settings(n_things=10**9, share=0.999, mode="b", verbose=True, label="abc"), _RULES)
    check_fields(_Settings(), _RULES)  # '' is allowed by optional=True


def test_type_errors_separate_the_kind_from_the_range() -> None:
    with pytest.raises(TypeError, match=r"^n_things: expected an integer, got 'x'$"):
        check_fields(_Settings(n_things="x"), _RULES, key=str, type_errors=True)
    with pytest.raises(ValueError, match=r"^n_things: expected an integer >= 1, got 0$"):
        check_fields(_Settings(n_things=0), _RULES, key=str, type_errors=True)


def test_number_descriptions() -> None:
    assert Number(0, low_open=True).expected == "a positive finite number"
    assert Number(0).expected == "a finite number >= 0"
    assert Number(0, 1, high_open=True).expected == "a number in [0, 1)"
    assert Number(0, low_open=True, finite=False).expected == "a positive number"
    assert Number(0, low_open=True, finite=False).in_range(math.inf)
    assert not Number(0, low_open=True).in_range(math.inf)
    assert Integer(1, 30).expected == "an integer in [1, 30]"


def test_kebab_and_snake_are_inverse() -> None:
    assert kebab("max_evaluation_epsilon") == "max-evaluation-epsilon"
    assert snake(kebab("max_evaluation_epsilon")) == "max_evaluation_epsilon"


def test_the_reader_refuses_or_ignores_unknown_keys_and_casts_on_request() -> None:
    with pytest.raises(ValueError, match=r"^settings: unknown keys \['n_thing'\]; allowed: \["):
        from_kebab(_Settings, {"n_thing": 2}, what="settings")
    assert from_kebab(_Settings, {"n-things": 2, "other-app": 1}, what="settings", unknown="ignore") == {"n_things": 2}
    assert from_kebab(_Settings, {"n-things": "3", "verbose": "true"}, what="s", values="cast") == {
        "n_things": 3,
        "verbose": True,
    }
    with pytest.raises(ValueError, match=r"^s verbose: expected bool, got 'yes'$"):
        from_kebab(_Settings, {"verbose": "yes"}, what="s", values="cast")
    assert kebab_defaults(_Settings) == {"n-things": 1, "share": 0.5, "mode": "a", "verbose": False, "label": ""}


def test_the_party_policy_keeps_its_messages() -> None:
    for kwargs, message in [
        ({"max_depth": 0}, "max-depth: expected an integer >= 1, got 0"),
        ({"declared_rows": -1}, "declared-rows: expected an integer >= 0, got -1"),
        ({"lifetime_epsilon_cap": math.inf}, "lifetime-epsilon-cap: expected a positive finite number, got inf"),
        ({"max_evaluation_epsilon": -0.1}, "max-evaluation-epsilon: expected a finite number >= 0, got -0.1"),
        ({"holdout_fraction": 1.0}, "holdout-fraction: expected a number in [0, 1), got 1.0"),
        ({"allow_exact_metrics": "yes"}, "allow-exact-metrics: expected true or false, got 'yes'"),
        ({"min_epsilon": 1e-7}, "min-epsilon: expected a multiple of 1e-6, got 1e-07"),
    ]:
        with pytest.raises(ValueError) as caught:
            PartyPolicy("p1", **kwargs)
        assert str(caught.value) == message
    with pytest.raises(ValueError, match=r"^policy: unknown keys \['max-dept'\]"):
        PartyPolicy.from_mapping({"party-id": "p1", "max-dept": 3})


def test_the_release_policy_keeps_type_and_value_errors() -> None:
    with pytest.raises(TypeError, match=r"^max_depth: expected an integer, got 2.0$"):
        ReleasePolicy(max_depth=2.0)
    with pytest.raises(ValueError, match=r"^max_depth: expected an integer in \[1, 30\], got 31$"):
        ReleasePolicy(max_depth=31)
    with pytest.raises(ValueError, match=r"^max_epsilon: expected a number > 0, got nan$"):
        ReleasePolicy(max_epsilon=math.nan)
    with pytest.raises(TypeError, match=r"^allow_non_dp: expected a bool, got 1$"):
        ReleasePolicy(allow_non_dp=1)
    assert ReleasePolicy(max_epsilon=math.inf).max_epsilon == math.inf
