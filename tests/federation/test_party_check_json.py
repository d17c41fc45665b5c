"""``edprf party check --json`` (review rev-auto A6: scripts grepped ``ok:``/``note:``/``problem:`` lines), and the
one exhausted rule ``party check`` and ``edprf budget`` share (:func:`client.budget_exhausted`)."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest

from client import BudgetLedger, budget_exhausted
from edprf_fl.cli._main import main
from edprf_fl.cli._party_cmd import PARTY_CHECK_FORMAT

from .test_party_check import _config, party  # noqa: F401  (party: the fixture)


def _check_json(paths, capsys, *extra: str) -> tuple[int, dict]:
    capsys.readouterr()
    code = main(["party", "check", "--node-config", _config(paths), "--json", *extra])
    return code, json.loads(capsys.readouterr().out)


def test_a_good_party_is_ok_with_every_check_listed(party, capsys):  # noqa: F811
    paths, _ = party
    code, shown = _check_json(paths, capsys, "--quiet")  # --json wins: every check is listed
    assert code == 0 and shown["format"] == PARTY_CHECK_FORMAT == "edprf-party-check/1"
    assert shown["ok"] is True and shown["exit_status"] == 0 and shown["error"] is None
    assert shown["party_id"] == "hospital-a" and shown["problems"] == 0
    assert {c["status"] for c in shown["checks"]} <= {"ok", "note"}
    assert any(c["status"] == "ok" and c["subject"] == str(paths["signing-key"]) for c in shown["checks"])
    assert all(c["text"].startswith(f"{c['subject']}: ") for c in shown["checks"])


def test_a_bad_party_lists_its_problems_and_exits_1(party, capsys):  # noqa: F811
    paths, _ = party
    paths["data-path"].unlink()
    code, shown = _check_json(paths, capsys)
    assert code == 1 and shown["ok"] is False and shown["exit_status"] == 1 and shown["problems"] >= 1
    problems = [c for c in shown["checks"] if c["status"] == "problem"]
    assert any(c["subject"] == str(paths["data-path"]) for c in problems), problems


def test_a_node_config_that_does_not_read_is_an_error_object(capsys):
    code = main(["party", "check", "--node-config", "ledger-path = '/x'", "--json"])
    out, err = capsys.readouterr()
    shown = json.loads(out)
    assert code == 1 and shown["ok"] is False and shown["checks"] == [] and shown["exit_status"] == 1
    assert shown["error"] and shown["error"] in " ".join(err.split())


@pytest.mark.parametrize(("spent", "exhausted"), [("1.99", False), ("1.995", True), ("2", True)])
def test_budget_and_party_check_agree_on_exhausted_at_the_boundary(party, capsys, spent, exhausted):  # noqa: F811
    """Cap 2, min-epsilon 0.01 (the policy's default): 0.01 left serves one more request, 0.005 or 0 none."""
    paths, _ = party
    BudgetLedger(paths["ledger-path"], 2.0).reserve("r1", "release", float(spent))
    assert budget_exhausted(Fraction(2) - Fraction(spent), Fraction(1, 100)) is exhausted
    code, shown = _check_json(paths, capsys)
    refused = [c for c in shown["checks"] if c["refusal"] == "budget_exhausted"]
    assert bool(refused) is exhausted and (code == 1) is exhausted
    main(["budget", str(paths["ledger-path"]), "--policy", str(paths["policy-path"]), "--json"])
    assert json.loads(capsys.readouterr().out)["exhausted"] is exhausted


def test_the_rule_without_a_policy_counts_only_nothing_left():
    assert budget_exhausted(Fraction(0), None) and not budget_exhausted(Fraction(1, 10**6), None)
    assert budget_exhausted(Fraction(1, 200), Fraction(1, 100)) and not budget_exhausted(
        Fraction(1, 100), Fraction(1, 100)
    )
