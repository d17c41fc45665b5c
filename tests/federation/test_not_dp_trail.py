"""A party's ledger keeps the trail of replies that were not DP (invariant 6 at the party): a seeded release,
a seeded or exact evaluation.  ``edprf budget`` and ``edprf party check`` say NOT DP with them, also after
the policy is set back; a party that only answers with its DP mechanisms shows no such line."""

from __future__ import annotations

import json

import pytest

from client import NOT_DP_COUNT_KEY, NOT_DP_KEY, BudgetLedger, Party, Refusal, not_dp_replies, read_meta_readonly
from client._ledger import KEPT_NOT_DP_LINES
from edprf_fl.cli._main import main
from protocol import ReleasePolicy, build_global_model, decode_release
from protocol.messages import EvaluateRequest
from tests.federation.test_party_hardening import _train_request, _write_party


def _trail(setup) -> tuple[int, list[str]]:
    return not_dp_replies(read_meta_readonly(setup.ledger_path, (NOT_DP_KEY, NOT_DP_COUNT_KEY)))


def _budget(setup, capsys, *extra) -> str:
    assert main(["budget", str(setup.ledger_path), "--policy", str(setup.policy_path), *extra]) == 0
    return capsys.readouterr().out


def test_dp_replies_leave_no_not_dp_line(tmp_path, capsys):
    setup, schema = _write_party(tmp_path)
    party = Party(setup)
    release = decode_release(party.train(_train_request(schema)), schema, ReleasePolicy())
    model = build_global_model(schema, [release], {"run_id": "run1"})
    party.evaluate(model, EvaluateRequest("run1/e", "run1", 0.1, False))
    assert _trail(setup) == (0, [])
    out = _budget(setup, capsys)
    assert "NOT DP" not in out
    assert json.loads(_budget(setup, capsys, "--json"))["not_dp_replies"] == 0


# privacy gate (invariant 6): a seeded release is said not DP (mutation campaign 4, M14)
@pytest.mark.privacy
def test_seeded_and_exact_replies_are_kept_and_shown_as_not_dp(tmp_path, capsys):
    setup, schema = _write_party(tmp_path, allow_seeded_randomness=True, allow_exact_metrics=True)
    party = Party(setup)
    payload = party.train(_train_request(schema, seed=7))
    assert party.train(_train_request(schema, seed=7)) == payload  # a resent release: no second line
    model = build_global_model(schema, [decode_release(payload, schema, ReleasePolicy())], {"run_id": "run1"})
    party.evaluate(model, EvaluateRequest("run1/e1", "run1", 0.1, False, seed=3))
    party.evaluate(model, EvaluateRequest("run1/e2", "run1", 0.0, True))
    count, lines = _trail(setup)
    assert count == 3 and len(lines) == 3
    assert "request run1/1/train (run run1): release with the request's seed" in lines[0]
    assert "request run1/e1 (run run1): held-out counts noised with the request's seed" in lines[1]
    assert "request run1/e2 (run run1): exact held-out counts" in lines[2]

    out = _budget(setup, capsys)
    assert "NOT DP: 3 replies of this party did not come from a DP mechanism" in out
    assert all(line in out for line in lines)
    assert json.loads(_budget(setup, capsys, "--json"))["not_dp"] == lines
    # exact metrics reserve nothing, so a request id may come again (a modified coordinator): each reply counts
    for _ in range(3):
        party.evaluate(model, EvaluateRequest("run1/e2", "run1", 0.0, True))
    party.evaluate(model, EvaluateRequest("run1/1/train", "run1", 0.0, True))  # an id the release used
    assert _trail(setup)[0] == 7

    # the policy set back to DP only: the trail stays, and the party check says so
    _write_party(tmp_path)
    config = f"data-path='{setup.data_path}' schema-path='{setup.schema_path}' policy-path='{setup.policy_path}' "
    config += f"ledger-path='{setup.ledger_path}'"
    main(["party", "check", "--node-config", config])
    assert "NOT DP: 7 replies of this party did not come from a DP mechanism" in capsys.readouterr().out


def test_the_trail_keeps_the_first_and_the_latest_lines_and_counts_every_reply(tmp_path, capsys):
    ledger = BudgetLedger(tmp_path / "ledger.sqlite", cap=1.0)
    for i in range(KEPT_NOT_DP_LINES + 7):
        ledger.note_not_dp(f"r{i}", "run", "exact held-out counts (no noise)")
    count, lines = not_dp_replies(read_meta_readonly(ledger.path, (NOT_DP_KEY, NOT_DP_COUNT_KEY)))
    assert count == KEPT_NOT_DP_LINES + 7 and len(lines) == KEPT_NOT_DP_LINES
    assert ": request r0 (" in lines[0] and ": request r1 (" not in "".join(lines)
    assert ": request r56 (" in lines[-1]
    assert main(["budget", str(ledger.path), "--cap", "1"]) == 0
    out = capsys.readouterr().out  # the ledger's trails table keeps every line (review rev-dpo D13)
    assert all(f": request r{i} (" in out for i in range(count)) and "lines dropped" not in out


def test_a_hostile_trail_is_read_as_text_without_control_characters():
    count, lines = not_dp_replies({NOT_DP_KEY: "a\x1b[2Jb\nc", NOT_DP_COUNT_KEY: "x9"})
    assert count == 2 and lines == ["a?[2Jb", "c"]
    assert not_dp_replies({NOT_DP_COUNT_KEY: "4"}) == (4, [])
    for unreadable in ("\u00b2", "\u0663", "9" * 40, "-3", ""):  # digits Python's int() refuses, or absurd
        assert not_dp_replies({NOT_DP_KEY: "a", NOT_DP_COUNT_KEY: unreadable}) == (1, ["a"])


def test_a_ledger_whose_count_is_unreadable_still_takes_lines(tmp_path):
    ledger = BudgetLedger(tmp_path / "ledger.sqlite", cap=1.0)
    ledger.note_not_dp("r1", "run", "exact held-out counts (no noise)")
    import sqlite3

    with sqlite3.connect(ledger.path) as db:
        db.execute("UPDATE ledger_meta SET value = ? WHERE key = ?", ("\u00b2", NOT_DP_COUNT_KEY))
    ledger.note_not_dp("r2", "run", "exact held-out counts (no noise)")
    assert not_dp_replies(read_meta_readonly(ledger.path, (NOT_DP_KEY, NOT_DP_COUNT_KEY)))[0] == 2


# privacy gate (invariant 6, M14)
@pytest.mark.privacy
def test_no_non_dp_reply_leaves_without_its_line(tmp_path, monkeypatch):
    """A trail that cannot be written is a failed request: the party answers internal_error, sends nothing."""
    setup, schema = _write_party(
        tmp_path, allow_seeded_randomness=True, allow_exact_metrics=True, lifetime_epsilon_cap=5.0
    )
    party = Party(setup)
    model = build_global_model(
        schema, [decode_release(party.train(_train_request(schema)), schema, ReleasePolicy())], {"run_id": "run1"}
    )

    def broken(*_, **__):
        raise OSError("disk full")

    monkeypatch.setattr(BudgetLedger, "note_not_dp", broken)
    for call in (
        lambda: party.train(_train_request(schema, request_id="run2/1/train", run_id="run2", seed=7)),
        lambda: party.evaluate(model, EvaluateRequest("run1/e1", "run1", 0.1, False, seed=3)),
        lambda: party.evaluate(model, EvaluateRequest("run1/e2", "run1", 0.0, True)),
    ):
        with pytest.raises(Refusal) as refused:
            call()
        assert refused.value.reason == "internal_error"
    assert party.train(_train_request(schema, request_id="run3/1/train", run_id="run3"))  # DP: no trail needed


# privacy gate (invariant 6): a drafted schema's release is said not DP (M15)
@pytest.mark.privacy
def test_a_release_on_a_drafted_schema_leaves_a_line(tmp_path):
    from dataclasses import replace

    from client import load_policy

    setup, schema = _write_party(tmp_path)
    drafted = replace(schema, drafted=True)
    drafted.save(setup.schema_path)
    policy = replace(load_policy(setup.policy_path), schema_fingerprint=drafted.fingerprint)
    setup.policy_path.write_text(policy.to_toml())
    Party(setup).train(_train_request(drafted))
    count, lines = _trail(setup)
    assert count == 1 and "release on a schema drafted from data" in lines[0]


def test_last_n_lists_the_first_and_the_latest_n_not_dp_lines(tmp_path, capsys):
    """Review rev-s64 F4: ``--last 1`` printed the whole NOT DP trail (100,016 lines on a ledger at the table's
    limit), although it limits refusals and deliveries: a coordinator grows it at no epsilon where a policy allows
    exact metrics."""
    ledger = BudgetLedger(tmp_path / "ledger.sqlite", cap=1.0)
    for i in range(30):
        ledger.note_not_dp(f"r{i}", "run", "exact held-out counts (no noise)")
    assert main(["budget", str(ledger.path), "--cap", "1", "--last", "2"]) == 0
    out = capsys.readouterr().out
    assert [i for i in range(30) if f": request r{i} (" in out] == [0, 28, 29]
    assert "(27 lines not shown: `edprf budget` without --last lists them)" in out
    assert "NOT DP: 30 replies of this party did not come from a DP mechanism" in out  # counted in full
