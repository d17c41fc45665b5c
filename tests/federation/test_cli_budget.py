"""`edprf budget` shows a party's ledger."""

from __future__ import annotations

import json

from cli._main import main
from client import BudgetLedger, PartyPolicy


def test_budget_lists_entries_and_remaining_cap(tmp_path, capsys):
    ledger = BudgetLedger(tmp_path / "ledger.sqlite", cap=2.0)
    ledger.reserve("run-1/7/train", "release", 1.0, run_id="run-1", detail="2 trees, depth 4, binary")
    ledger.complete("run-1/7/train", b"release-bytes")
    ledger.reserve("run-1/7/evaluate", "evaluation", 0.1, run_id="run-1")
    (tmp_path / "policy.toml").write_text(PartyPolicy(party_id="p", lifetime_epsilon_cap=2.0).to_toml())

    assert main(["budget", str(tmp_path / "ledger.sqlite"), "--policy", str(tmp_path / "policy.toml")]) == 0
    out = capsys.readouterr().out
    assert "release" in out and "released" in out and "evaluation" in out and "reserved" in out
    assert "spent 1.1 of the lifetime cap 2; remaining 0.9" in out

    assert main(["budget", str(tmp_path / "ledger.sqlite"), "--cap", "2", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert abs(data["remaining"] - 0.9) < 1e-12 and [e["kind"] for e in data["entries"]] == ["release", "evaluation"]


def test_budget_on_a_missing_ledger_is_a_clear_error(tmp_path, capsys):
    assert main(["budget", str(tmp_path / "nope.sqlite")]) == 1
    assert "no ledger at" in capsys.readouterr().err
