"""deploy/policy.example.toml names every key of the party's policy, with its default and an explanation.

The example says it has every key explained: a key added to ``client.PartyPolicy`` but not to the
example fails here.  The file is read with the parser the party uses (``client.load_policy``).
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import MISSING, fields
from pathlib import Path

from client import PartyPolicy, load_policy
from edprf_core.config_checks import kebab

EXAMPLE = Path(__file__).resolve().parents[2] / "deploy" / "policy.example.toml"
REQUIRED = {"party-id", "schema-fingerprint"}  # the two values a party fills in
POLICY_KEYS = {kebab(f.name) for f in fields(PartyPolicy)}


def _example() -> dict:
    return tomllib.loads(EXAMPLE.read_text(encoding="utf-8"))


def test_the_example_parses_with_the_partys_parser():
    policy = load_policy(EXAMPLE)
    assert isinstance(policy, PartyPolicy)
    assert policy.party_id == _example()["party-id"]


def test_the_example_names_every_policy_key_and_nothing_else():
    keys = set(_example())
    missing, unknown = POLICY_KEYS - keys, keys - POLICY_KEYS
    assert not missing, f"deploy/policy.example.toml lacks {sorted(missing)}: add each with its default and a comment"
    assert not unknown, f"deploy/policy.example.toml has keys PartyPolicy does not know: {sorted(unknown)}"


def test_every_optional_key_holds_its_default():
    example = _example()
    for f in fields(PartyPolicy):
        key = kebab(f.name)
        if key in REQUIRED or f.default is MISSING:
            continue
        shown = example.get(key, "(missing)")
        assert shown == f.default, f"{key}: the example says {shown!r}, the default is {f.default!r}"


def test_every_key_is_explained_by_a_comment_above_it():
    lines = EXAMPLE.read_text(encoding="utf-8").splitlines()
    assignment = re.compile(r"^([a-z][a-z0-9-]*)\s*=")
    for number, line in enumerate(lines):
        match = assignment.match(line)
        if match is None:
            continue
        above = number - 1
        while above >= 0 and assignment.match(lines[above]):  # keys grouped under one comment
            above -= 1
        assert above >= 0 and lines[above].startswith("#"), f"{match.group(1)}: no comment above it"
