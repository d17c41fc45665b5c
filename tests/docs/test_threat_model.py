"""The threat model states the condition every party-side defence rests on: the party runs pinned code.

In Flower 1.41 the coordinator submits the app bundle each run executes at the party; the policy, the ledger,
the refusals and the reply hold are that code, so they hold against a hostile coordinator only when the
SuperNode runs bundles the party pinned (review rev-coord C2: an unpinned party's `edprf budget` looked clean
after a hostile bundle had read its rows).
"""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_the_threat_model_says_the_party_defences_need_pinned_bundles():
    text = (REPO / "docs" / "privacy.md").read_text(encoding="utf-8")
    threat_model = " ".join(text.split("## Threat model", 1)[1].split("\n## ", 1)[0].split())  # lines joined
    assert "only when the party's SuperNode runs pinned bundles" in threat_model
    assert "Pin the code the SuperNode runs (before serving real data)" in threat_model


def test_every_runbook_step_that_pins_the_code_says_it_comes_before_real_data():
    runbook = (REPO / "deploy" / "README.md").read_text(encoding="utf-8")
    steps = re.findall(r"Pin the code the SuperNode runs \(([^)]*)\)", " ".join(runbook.split()))
    assert len(steps) >= 2, steps  # section 6 and the Docker path
    assert set(steps) == {"before serving real data"}, steps
