"""Defaults live in the configuration dataclasses; the command line and the example files agree with them."""

from __future__ import annotations

import argparse
import re
import tomllib
from dataclasses import fields
from pathlib import Path

from client import PartyPolicy
from edprf_core.config_checks import kebab
from edprf_fl.cli._main import build_parser

ROOT = Path(__file__).resolve().parents[2]
POLICY_DEFAULTS = {kebab(f.name): f.default for f in fields(PartyPolicy) if f.name != "party_id"}


def _subparser(parser: argparse.ArgumentParser, *path: str) -> argparse.ArgumentParser:
    for name in path:
        (action,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        parser = action.choices[name]
    return parser


def test_init_policy_options_default_to_the_policy_and_say_its_value() -> None:
    """Unset options are left to PartyPolicy (None); the help's "(default X)" is that field's default."""
    init = _subparser(build_parser(), "party", "init-policy")
    checked = 0
    for action in init._actions:
        key = action.option_strings[0][2:] if action.option_strings else ""
        if key not in POLICY_DEFAULTS:
            continue
        assert action.default is None, key  # the dataclass fills it in
        shown = re.search(r"\(default ([^):]+)", action.help or "")
        assert shown is not None, key
        assert float(shown.group(1)) == POLICY_DEFAULTS[key], key
        checked += 1
    assert checked >= 4


def test_the_example_policy_holds_the_policy_defaults() -> None:
    example = tomllib.loads((ROOT / "deploy" / "policy.example.toml").read_text(encoding="utf-8"))
    PartyPolicy.from_mapping({**example, "schema-fingerprint": ""})  # every key is a policy key
    chosen = {k: v for k, v in example.items() if k not in ("party-id", "schema-fingerprint")}
    assert chosen == {k: POLICY_DEFAULTS[k] for k in chosen}


def test_consortium_leaves_epsilon_to_the_coordinator() -> None:
    consortium = _subparser(build_parser(), "consortium")
    (epsilon,) = [a for a in consortium._actions if "--epsilon" in a.option_strings]
    assert epsilon.default is None  # not given: the run config leaves it to CoordinatorConfig's default
