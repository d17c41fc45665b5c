"""The ledger as an audit record (review rev-dpo D3, D4, D5, D7, D10, D13): refusals and deliveries kept in the
ledger and shown by `edprf budget`, carried entries told apart, the neighbouring relation named, the trails
counted, clock moves noted; a ledger of 0.2.10 still opens and reads."""

from __future__ import annotations

import json
import sqlite3
import time
from dataclasses import replace

import pytest
from flwr.app import ConfigRecord, Message, MessageType, RecordDict

import client._ledger as ledger_module
import client._ledger_audit as audit_module
from client import BudgetLedger, handle_train, read_budget
from client._ledger import KEPT_CAP_CHANGE_LINES, read_records_readonly
from client._ledger_audit import AUDIT_TABLES
from edprf_fl.cli._main import main
from protocol.messages import REQUEST_KEY

from ..privacy._party_requests import (  # noqa: F401
    TrainSettings,
    flower_task_identity,
    result_of,
    send_query,
    send_request,
    send_train,
    train_request,
)
from ._neighbours import file_bytes, make_party

pytestmark = pytest.mark.usefixtures("flower_task_identity")


def _refusals(path):
    return read_records_readonly(path, ())[2].refusals


def _deliveries(path):
    return read_records_readonly(path, ())[2].deliveries


# ---------------------------------------------------------------- D4: refusals
def test_every_refusal_is_kept_with_request_parameters_and_its_code_only(tmp_path, capsys):
    setup = make_party(tmp_path / "p", file_bytes(n_rows=60), lifetime_epsilon_cap=1.0, max_release_epsilon=0.5)
    # above the policy's maximum per release: refused before anything is read
    reply = send_train(setup, TrainSettings(epsilon=0.8), "tag-1/train")
    assert result_of(reply)["reason"] == "policy_epsilon"
    # the readiness query of a request too deep
    reply = send_query(setup, TrainSettings(epsilon=0.5, max_depth=40), "tag-2/train")
    assert result_of(reply)["reason"] == "policy_depth"
    assert result_of(send_train(setup, TrainSettings(epsilon=0.5), "tag-3/train"))["status"] == "released"
    assert result_of(send_train(setup, TrainSettings(epsilon=0.5), "tag-4/train"))["status"] == "released"
    reply = send_train(setup, TrainSettings(epsilon=0.5), "tag-5/train")  # the cap is reached
    refused = result_of(reply)
    assert refused["reason"] == "budget_exhausted" and "remains" in refused["message"]

    rows = _refusals(setup.ledger_path)
    assert [(r.request_id, r.kind, r.reason) for r in rows] == [
        ("tag-1/train", "train", "policy_epsilon"),
        ("tag-2/train", "ready", "policy_depth"),
        ("tag-5/train", "train", "budget_exhausted"),
    ]
    assert [str(r.epsilon_exact) for r in rows] == ["4/5", "1/2", "1/2"] and {r.run_id for r in rows} == {"run1"}
    # the refusal's text (which names ledger figures) is nowhere in the table
    with sqlite3.connect(setup.ledger_path) as db:
        cells = [str(c) for row in db.execute("SELECT * FROM refusals") for c in row]
    assert not any("remains" in c or "cap" in c for c in cells)

    exhausted = 4  # the cap is spent: `edprf budget` exits with its exhausted status (review rev-auto A3)
    assert main(["budget", str(setup.ledger_path), "--cap", "1"]) == exhausted
    out = capsys.readouterr().out
    assert "refused: 3 requests (budget_exhausted 1, policy_depth 1, policy_epsilon 1)" in out
    assert "tag-5/train" in out.split("refused:")[1]
    assert main(["budget", str(setup.ledger_path), "--cap", "1", "--json"]) == exhausted
    data = json.loads(capsys.readouterr().out)
    assert data["refused_count"] == 3 and data["refused"][1]["kind"] == "ready"
    assert data["refused"][0] == {**data["refused"][0], "epsilon_exact": "0.8", "reason": "policy_epsilon"}


def test_a_bad_request_is_kept_with_what_is_known_of_it(tmp_path):
    setup = make_party(tmp_path / "p", file_bytes(n_rows=60))
    msg = Message(content=RecordDict({REQUEST_KEY: ConfigRecord({"x": 1})}), dst_node_id=2, message_type="train")
    from client._flower_handlers import handle_train as handle
    from tests.privacy._party_requests import _context

    assert result_of(handle(msg, _context(setup)))["reason"] == "bad_request"
    [row] = _refusals(setup.ledger_path)
    assert (row.request_id, row.kind, row.reason, row.epsilon_exact) == ("", "train", "bad_request", None)
    assert row.run_id == "1"  # the message's run


def _bad_request(setup):
    from client._flower_handlers import handle_train as handle
    from tests.privacy._party_requests import _context

    msg = Message(content=RecordDict({REQUEST_KEY: ConfigRecord({"x": 1})}), dst_node_id=2, message_type="train")
    return result_of(handle(msg, _context(setup)))


def test_a_bad_request_opens_the_ledger_only(tmp_path, monkeypatch):
    """Review rev-s64 F11: the bad_request row is kept without building a Party: no data file, no readable schema."""
    import client._flower_handlers as handlers

    setup = make_party(tmp_path / "p", file_bytes(n_rows=60))
    BudgetLedger(setup.ledger_path, 100.0, "harness")
    setup.data_path.unlink()
    setup.schema_path.write_text("not a schema", encoding="utf-8")

    def no_party(*_args, **_kwargs):
        raise AssertionError("a Party was built for a bad_request row")

    monkeypatch.setattr(handlers, "Party", no_party)
    assert _bad_request(setup)["reason"] == "bad_request"
    [row] = _refusals(setup.ledger_path)
    assert (row.request_id, row.kind, row.reason, row.epsilon_exact, row.run_id) == (
        "",
        "train",
        "bad_request",
        None,
        "1",
    )


def test_a_bad_request_waits_for_the_lock_up_to_the_audit_wait_only(tmp_path, monkeypatch, caplog):
    """The ledger's opening waited 30 s for a locked ledger before the row's own wait; now only the row's."""
    monkeypatch.setattr(audit_module, "AUDIT_LOCK_SECONDS", 0.2)
    setup = make_party(tmp_path / "p", file_bytes(n_rows=60))
    BudgetLedger(setup.ledger_path, 100.0, "harness")
    holder = sqlite3.connect(setup.ledger_path, isolation_level=None, timeout=1.0)
    holder.execute("BEGIN IMMEDIATE")
    try:
        started = time.monotonic()
        assert _bad_request(setup)["reason"] == "bad_request"
        assert time.monotonic() - started < 5
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert "could not be kept in the ledger" in caplog.text and _refusals(setup.ledger_path) == ()


def test_a_bad_request_writes_nothing_into_another_partys_or_versions_ledger(tmp_path, caplog):
    setup = make_party(tmp_path / "p", file_bytes(n_rows=60))
    BudgetLedger(setup.ledger_path, 100.0, "another")
    assert _bad_request(setup)["reason"] == "bad_request"
    assert _refusals(setup.ledger_path) == () and "could not be kept in the ledger" in caplog.text
    other = make_party(tmp_path / "q", file_bytes(n_rows=60))
    with sqlite3.connect(other.ledger_path) as db:
        db.execute("CREATE TABLE spends (id INTEGER PRIMARY KEY, request_id TEXT, epsilon REAL)")
    before = other.ledger_path.read_bytes()
    assert _bad_request(other)["reason"] == "bad_request"
    assert other.ledger_path.read_bytes() == before  # no audit table added, no row


def test_a_refusal_that_cannot_be_kept_changes_nothing_in_the_reply(tmp_path, monkeypatch, caplog):
    setup = make_party(tmp_path / "p", file_bytes(n_rows=60), max_release_epsilon=0.5)
    expected = result_of(send_train(setup, TrainSettings(epsilon=0.8), "a/train"))

    def broken(*_args, **_kwargs):
        raise sqlite3.OperationalError("database is locked")

    monkeypatch.setattr(BudgetLedger, "record_refusal", broken)
    assert result_of(send_train(setup, TrainSettings(epsilon=0.8), "a/train")) == expected
    assert "could not be kept in the ledger" in caplog.text


def test_a_refusal_is_kept_before_the_hold(tmp_path, monkeypatch):
    """The row is written before the reply's hold (so inside it): the refusal's reply time is the hold's."""
    import client._flower_handlers as handlers

    setup = make_party(tmp_path / "p", file_bytes(n_rows=60), max_release_epsilon=0.5, reply_after_seconds=5.0)
    order = []
    monkeypatch.setattr(handlers, "hold_reply", lambda *a: order.append("hold"))
    real = BudgetLedger.record_refusal
    monkeypatch.setattr(BudgetLedger, "record_refusal", lambda self, *a: (order.append("row"), real(self, *a)))
    send_train(setup, TrainSettings(epsilon=0.8), "a/train")
    assert order == ["row", "hold"]


# ---------------------------------------------------------------- D3: deliveries
def test_every_release_and_resend_is_kept_with_its_run_and_recipient(tmp_path, capsys):
    setup = make_party(tmp_path / "p", file_bytes(n_rows=60))
    req = train_request(setup, TrainSettings(epsilon=0.5), "tag/train")
    first = result_of(send_request(setup, req))
    assert first["status"] == "released"
    again = result_of(send_request(setup, replace(req, run_id="run2", registered_parties="")))
    assert again["release"] == first["release"]  # the stored release, resent
    rows = _deliveries(setup.ledger_path)
    assert [(d.request_id, d.run_id, d.how, d.node_id) for d in rows] == [
        ("tag/train", "run1", "sent", "2"),
        ("tag/train", "run2", "resent", "2"),
    ]
    assert BudgetLedger(setup.ledger_path, 100.0).spent() == pytest.approx(0.5)  # a resend spends nothing

    assert main(["budget", str(setup.ledger_path)]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith("  tag/train: sent"))
    assert line.startswith("  tag/train: sent 2 times: run run1 at ") and "run run2 at " in line and "(resent)" in line
    assert main(["budget", str(setup.ledger_path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["deliveries_per_release"] == {"tag/train": 2}
    assert [d["how"] for d in data["deliveries"]] == ["sent", "resent"]


def test_a_resend_that_cannot_be_recorded_is_not_sent(tmp_path, monkeypatch):
    setup = make_party(tmp_path / "p", file_bytes(n_rows=60))
    assert result_of(send_train(setup, TrainSettings(epsilon=0.5), "tag/train"))["status"] == "released"

    def broken(*_args, **_kwargs):
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(BudgetLedger, "record_delivery", broken)
    result = result_of(send_train(setup, TrainSettings(epsilon=0.5), "tag/train"))
    assert result["status"] == "refused" and result["reason"] == "party_setup" and "release" not in result


def test_the_registered_keys_digest_tells_two_coordinators_apart(tmp_path):
    from client._party import registered_digest

    assert registered_digest("") == "" and len(registered_digest("a" * 32 + ":" + "b" * 32)) == 16
    assert registered_digest("a" * 32 + ":" + "b" * 32) != registered_digest("c" * 32 + ":" + "d" * 32)


# ---------------------------------------------------------------- compatibility
_OLD_SCHEMA = """
CREATE TABLE spends (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    request_id TEXT NOT NULL UNIQUE,
    kind TEXT NOT NULL CHECK (kind IN ('release', 'evaluation')),
    epsilon REAL NOT NULL CHECK (epsilon > 0),
    state TEXT NOT NULL CHECK (state IN ('reserved', 'released', 'failed')),
    run_id TEXT NOT NULL DEFAULT '',
    detail TEXT NOT NULL DEFAULT '',
    payload BLOB,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    epsilon_exact TEXT NOT NULL
);
CREATE TABLE ledger_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
INSERT INTO spends (request_id, kind, epsilon, state, run_id, detail, created_at, updated_at, epsilon_exact)
VALUES ('old/train', 'release', 0.5, 'released', '7', '2 trees, depth 4, binary, 20 bins, add-remove', 1.7e9, 1.7e9,
        '1/2');
INSERT INTO ledger_meta (key, value) VALUES ('lifetime-cap', '2');
INSERT INTO ledger_meta (key, value) VALUES ('lifetime-cap-changes', '2025-01-01T00:00:00Z: 1 -> 2');
"""
"""A ledger as 0.2.10 wrote it (no audit tables, no relation, no change count)."""


def test_a_ledger_of_0_2_10_reads_and_gets_the_tables_at_its_first_writable_opening(tmp_path, capsys):
    path = tmp_path / "ledger.sqlite"
    with sqlite3.connect(path) as db:
        db.executescript(_OLD_SCHEMA)
    assert main(["budget", str(path)]) == 0
    out = capsys.readouterr().out
    assert "refused: none recorded (ledger older than 0.2.11" in out
    assert "deliveries: none recorded (ledger older than 0.2.11" in out
    assert "spent 0.5 of the lifetime cap 2; remaining 1.5 under the add-remove neighbouring relation" in out
    assert "the lifetime cap was changed (UTC): 2025-01-01T00:00:00Z: 1 -> 2" in out
    assert main(["budget", str(path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["refused"] is None and data["deliveries"] is None and data["cap_change_count"] == 1
    with sqlite3.connect(path) as db:  # the read changed nothing
        assert {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")} >= {"spends"}
        assert not {r[0] for r in db.execute("SELECT name FROM sqlite_master")} & set(AUDIT_TABLES)

    ledger = BudgetLedger(path, 2.0, relation="add-remove")
    assert ledger.spent() == Fraction_half()
    with sqlite3.connect(path) as db:
        assert {r[0] for r in db.execute("SELECT name FROM sqlite_master")} >= set(AUDIT_TABLES)
    assert main(["budget", str(path)]) == 0
    out = capsys.readouterr().out
    assert "refused: none recorded\n" in out and "deliveries: none recorded\n" in out
    # a second change: counted from the line kept before
    BudgetLedger(path, 3.0)
    assert main(["budget", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["cap_change_count"] == 2


def test_a_change_0_2_10_wrote_after_0_2_11_is_shown_once_in_its_place(tmp_path, capsys):
    """Review rev-s64 F2: 0.2.10 opening a 0.2.11 ledger appends its cap change to the meta trail only (it knows no
    trails table); the merge by position then showed 0.2.11's change twice and lost 0.2.10's.  Also for NOT DP."""
    from client import CAP_CHANGES_KEY, CAP_KEY, NOT_DP_KEY

    path = tmp_path / "ledger.sqlite"
    BudgetLedger(path, 1.0)
    BudgetLedger(path, 2.0)  # 0.2.11: the table and the meta
    with sqlite3.connect(path) as db:  # 0.2.10 raising the cap to 3 later: the meta only
        (lines,) = db.execute("SELECT value FROM ledger_meta WHERE key = ?", (CAP_CHANGES_KEY,)).fetchone()
        later = "2999-01-01T00:00:00Z: 2 -> 3"
        db.execute("UPDATE ledger_meta SET value = ? WHERE key = ?", (f"{lines}\n{later}", CAP_CHANGES_KEY))
        db.execute("UPDATE ledger_meta SET value = '3' WHERE key = ?", (CAP_KEY,))
    assert main(["budget", str(path)]) == 0
    changes = [x for x in capsys.readouterr().out.splitlines() if x.startswith("the lifetime cap was changed")]
    assert [x.rsplit(": ", 1)[1] for x in changes] == ["1 -> 2", "2 -> 3"]
    assert main(["budget", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["cap_change_count"] == 2

    from client import whole_trail

    table = ["2026-01-02T00:00:00Z: request b (run -): exact metrics"]
    meta = [
        "2026-01-01T00:00:00Z: request a (run -): exact metrics",
        *table,
        "2026-01-03T00:00:00Z: request c (run -): x",
    ]
    assert whole_trail(3, meta, table) == (3, meta)  # the meta's own lines once each, in time order
    assert NOT_DP_KEY  # the NOT DP trail is merged by the same function (edprf budget)


def Fraction_half():
    from fractions import Fraction

    return Fraction(1, 2)


# ---------------------------------------------------------------- D5: carried entries
def test_a_carried_entry_is_shown_as_carried_without_a_run_and_whole(tmp_path, capsys):
    ledger = BudgetLedger(tmp_path / "ledger.sqlite", cap=2.0)
    from fractions import Fraction

    ledger.carry_recorded(
        Fraction(3, 2), "the coordinator's spend record", run_id="5474902094697361445", request_id="r6/train"
    )
    assert main(["budget", str(ledger.path)]) == 0
    out = capsys.readouterr().out
    row = next(x for x in out.splitlines() if x.split()[2:3] == ["carried"])
    assert " counted " in row and "5474902094697361445" not in row.split("carried from")[0]
    assert "more characters" not in row and row.endswith("1.5 is counted as spent")
    assert main(["budget", str(ledger.path), "--json"]) == 0
    [entry] = json.loads(capsys.readouterr().out)["entries"]
    assert entry["carried"] is True and entry["carried_from"] == "coordinator record" and entry["kind"] == "release"
    assert entry["shown_kind"] == "carried"


# ---------------------------------------------------------------- D7: the relation
def test_mixed_relations_are_summed_per_relation_and_a_relation_change_is_recorded(tmp_path, capsys):
    path = tmp_path / "ledger.sqlite"
    BudgetLedger(path, 2.0, relation="add-remove").reserve(
        "a/train", "release", 0.5, detail="2 trees, depth 4, binary, 20 bins, add-remove"
    )
    ledger = BudgetLedger(path, 2.0, relation="replace-one")
    ledger.reserve("b/train", "release", 0.5, detail="2 trees, depth 4, binary, 20 bins, replace-one, leaf counts")
    ledger.reserve("b/evaluate", "evaluation", 0.1, detail="noised held-out accuracy")
    assert main(["budget", str(path)]) == 0
    out = capsys.readouterr().out
    assert "spent 1.1 of the lifetime cap 2; remaining 0.9 (summed over neighbouring relations: see below)" in out
    assert "  add-remove: 0.5\n  replace-one: 0.5\n" in out
    assert "under replace-one: at most 1.6 per record" in out  # 2 x 0.5 + 0.5 + 0.1
    assert "under add-remove: 0.6 from the add-remove entries and evaluations" in out
    changed = [x for x in out.splitlines() if x.startswith("the neighbouring relation was changed (UTC): ")]
    assert len(changed) == 1 and changed[0].endswith(": add-remove -> replace-one")
    assert main(["budget", str(path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["relations_mixed"] is True and data["relation_recorded"] == "replace-one"
    assert data["spent_by_relation_exact"] == {"add-remove": "0.5", "replace-one": "0.5", "evaluation": "0.1"}
    assert data["relation_change_count"] == 1


# ---------------------------------------------------------------- D13: trails kept whole
def test_cap_changes_are_kept_whole_and_those_before_the_table_counted(tmp_path, capsys):
    path = tmp_path / "ledger.sqlite"
    for i in range(KEPT_CAP_CHANGE_LINES + 5):
        BudgetLedger(path, 1.0 + i % 2)
    n = KEPT_CAP_CHANGE_LINES + 4  # the first opening records no change
    assert main(["budget", str(path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["cap_change_count"] == n and len(data["cap_changes"]) == n  # every line (the meta keeps 50)
    assert main(["budget", str(path)]) == 0
    out = capsys.readouterr().out
    assert out.count("the lifetime cap was changed (UTC): ") == n and "lines dropped" not in out

    # the same history written by 0.2.10 (no table, no count), then two changes under 0.2.11
    with sqlite3.connect(path) as db:
        db.execute("DROP TABLE trails")
        db.execute("DELETE FROM ledger_meta WHERE key = 'lifetime-cap-change-count'")
    BudgetLedger(path, 2.0)  # the cap was 1
    BudgetLedger(path, 1.0)
    assert main(["budget", str(path)]) == 0
    out = capsys.readouterr().out
    shown = [x for x in out.splitlines() if x.startswith("the lifetime cap was changed (UTC): ")]
    # 0.2.10 kept 50 lines and no count: 50 before, 2 since; of the 50, the first and the latest 47 are in the meta
    assert len(shown) == KEPT_CAP_CHANGE_LINES and shown[-2].endswith(": 1 -> 2") and shown[-1].endswith(": 2 -> 1")
    assert f"({KEPT_CAP_CHANGE_LINES + 2} cap changes in all; 2 lines dropped: from before 0.2.11" in out


# ---------------------------------------------------------------- D10: the clock
def test_backwards_time_stamps_and_a_future_reservation_are_noted(tmp_path, capsys, monkeypatch):
    ledger = BudgetLedger(tmp_path / "ledger.sqlite", cap=5.0)
    now = time.time()
    for request_id, at in (("now", now), ("past", now - 400 * 86_400), ("future", now + 3 * 86_400)):
        monkeypatch.setattr(ledger_module.time, "time", lambda at=at: at)
        ledger.reserve(request_id, "release", 0.5)
        if request_id != "future":
            ledger.complete(request_id, b"x")
    monkeypatch.undo()
    assert main(["budget", str(ledger.path)]) == 0
    out = capsys.readouterr().out
    assert "note: the time stamps go backwards: 1 entry was written after an entry with a later time (past)" in out
    assert "age unknown" in out and "reserved less than" not in out
    assert main(["budget", str(ledger.path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["timestamps_go_backwards"] is True and data["reserved_age_unknown"] == ["future"]


def test_read_budget_carries_the_audit_records(tmp_path):
    ledger = BudgetLedger(tmp_path / "ledger.sqlite", cap=1.0)
    ledger.record_refusal("x/train", "r", "train", 2.0, "budget_exhausted")
    state = read_budget(ledger.path, 1.0, audit=True)
    assert state.audit.refusals[0].reason == "budget_exhausted" and state.audit.deliveries == ()
    # without audit (the ClientApp's check before every message, review rev-s64 F5) the tables are not read
    with_none = read_budget(ledger.path, 1.0)
    assert with_none.audit.refusals is None and with_none.spent == state.spent


def test_the_clientapps_check_reads_no_audit_row_and_scans_for_no_other_ledger(tmp_path, monkeypatch):
    """Review rev-s64 F5: the check the ClientApp runs before every message read every audit row (1.0 s at the
    tables' limits, grown by a coordinator's refused requests at no epsilon) and scanned for sibling ledgers."""
    from client import _preflight

    made = make_party(tmp_path / "party", file_bytes())
    seen = []
    real_read = _preflight.read_budget
    monkeypatch.setattr(_preflight, "read_budget", lambda *a, **k: seen.append(k) or real_read(*a, **k))
    monkeypatch.setattr(_preflight, "sibling_ledgers", lambda *a, **k: seen.append("siblings") or [])
    node_config = {
        "data-path": str(made.data_path),
        "schema-path": str(made.schema_path),
        "policy-path": str(made.policy_path),
        "ledger-path": str(made.ledger_path),
    }
    _preflight.preflight_configs(node_config, {}, check_rows=False)
    assert seen and "siblings" not in seen and all(not k.get("audit") for k in seen if isinstance(k, dict))
    _preflight.preflight_configs(node_config, {}, check_rows=True)  # edprf party check
    assert "siblings" in seen


def test_the_audit_tables_keep_their_latest_rows_and_count_the_rest(tmp_path, monkeypatch):
    monkeypatch.setattr(audit_module, "MAX_AUDIT_ROWS", 3)
    ledger = BudgetLedger(tmp_path / "ledger.sqlite", cap=1.0)
    for i in range(5):
        ledger.record_refusal(f"r{i}", "run", "train", 0.1, "policy_epsilon")
    audit = read_records_readonly(ledger.path, ())[2]
    assert [r.request_id for r in audit.refusals] == ["r2", "r3", "r4"] and audit.refusals_dropped == 2


def test_the_three_tables_are_pruned_by_one_rule(tmp_path, monkeypatch):
    """Review rev-s64 F10: refusals, deliveries and each trail keep their latest MAX_AUDIT_ROWS rows and count the
    dropped ones, by one routine (rows counted, not inferred from ids: a table with a gap keeps as many)."""
    monkeypatch.setattr(audit_module, "MAX_AUDIT_ROWS", 3)
    ledger = BudgetLedger(tmp_path / "ledger.sqlite", cap=1.0)
    for i in range(5):
        ledger.record_delivery(f"d{i}", "run", "sent")
        ledger.note_not_dp(f"n{i}", "run", "exact metrics")
        ledger.record_refusal(f"r{i}", "run", "train", 0.1, "policy_epsilon")
    for cap in (2.0, 1.0, 2.0, 1.0, 2.0):
        BudgetLedger(ledger.path, cap)
    audit = read_records_readonly(ledger.path, ())[2]
    assert [d.request_id for d in audit.deliveries] == ["d2", "d3", "d4"] and audit.deliveries_dropped == 2
    assert [r.request_id for r in audit.refusals] == ["r2", "r3", "r4"] and audit.refusals_dropped == 2
    assert [line.split(": ")[1] for line in audit.trails["not-dp"]] == [
        "request n2 (run run)",
        "request n3 (run run)",
        "request n4 (run run)",
    ]
    assert [line.split(": ", 1)[1] for line in audit.trails["lifetime-cap"]] == ["1 -> 2", "2 -> 1", "1 -> 2"]
    assert audit.trails_dropped == {"lifetime-cap": 2, "relation": 0, "not-dp": 2}
    with sqlite3.connect(ledger.path) as db:  # a gap in the ids (a row deleted by hand)
        db.execute("DELETE FROM refusals WHERE request_id = 'r3'")
    ledger.record_refusal("r5", "run", "train", 0.1, "policy_epsilon")
    audit = read_records_readonly(ledger.path, ())[2]
    assert [r.request_id for r in audit.refusals] == ["r2", "r4", "r5"] and audit.refusals_dropped == 2


def test_a_policy_is_used_by_handle_train(tmp_path):
    """The production handler (not a stand-in) records the relation of the party's policy in the ledger."""
    setup = make_party(tmp_path / "p", file_bytes(n_rows=60))
    msg = Message(
        content=RecordDict(
            {REQUEST_KEY: ConfigRecord(train_request(setup, TrainSettings(epsilon=0.5), "z/train").to_record())}
        ),
        dst_node_id=2,
        message_type=MessageType.TRAIN,
    )
    from tests.privacy._party_requests import _context

    handle_train(msg, _context(setup))
    assert BudgetLedger(setup.ledger_path, 100.0).meta_value("relation") == "add-remove"


def test_a_release_sent_to_coordinators_with_other_keys_is_noted(tmp_path, capsys):
    ledger = BudgetLedger(tmp_path / "ledger.sqlite", cap=1.0)
    ledger.record_delivery("t/train", "1", "sent", node_id="5", registered="a" * 16)
    ledger.record_delivery("t/train", "2", "resent", node_id="6", registered="a" * 16)  # a restarted SuperNode
    assert main(["budget", str(ledger.path)]) == 0
    assert "note: this release went to" not in capsys.readouterr().out
    ledger.record_delivery("t/train", "9", "resent", node_id="7", registered="b" * 16)  # another consortium
    assert main(["budget", str(ledger.path)]) == 0
    assert "note: this release went to coordinators with 2 different sets of registered keys" in capsys.readouterr().out


def test_a_locked_ledger_holds_a_refusal_up_to_the_audit_wait_only(tmp_path, monkeypatch, caplog):
    """A refusal is not held for the 30 s a spend waits for the lock: the row is given up, the reply unchanged."""
    monkeypatch.setattr(audit_module, "AUDIT_LOCK_SECONDS", 0.2)
    setup = make_party(tmp_path / "p", file_bytes(n_rows=60), max_release_epsilon=0.5)
    expected = result_of(send_train(setup, TrainSettings(epsilon=0.8), "a/train"))
    holder = sqlite3.connect(setup.ledger_path, isolation_level=None, timeout=1.0)
    holder.execute("BEGIN IMMEDIATE")  # another process holds the write lock
    try:
        monkeypatch.setattr(BudgetLedger, "__init__", _opened_without_writing(BudgetLedger.__init__))
        started = time.monotonic()
        assert result_of(send_train(setup, TrainSettings(epsilon=0.8), "a/train")) == expected
        assert time.monotonic() - started < 10
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert "could not be kept in the ledger" in caplog.text
    assert len(_refusals(setup.ledger_path)) == 1


def _opened_without_writing(real):
    """A ledger opening that writes nothing (its tables exist): the test's lock then meets the refusal's row only."""

    def opened(self, path, cap, party_id=None, relation=None):
        self.path, self.cap, self.cap_exact = ledger_module.Path(path), float(cap), ledger_module.exact_epsilon(cap)
        self.anchor_path = ledger_module.anchor_path(self.path)
        self.ledger_id = ""

    return opened


def test_last_limits_the_refusals_and_deliveries_shown_and_json_keeps_all(tmp_path, capsys):
    ledger = BudgetLedger(tmp_path / "ledger.sqlite", cap=1.0)
    for i in range(4):
        ledger.record_refusal(f"r{i}/train", "run", "train", 2.0, "budget_exhausted")
        ledger.record_delivery(f"d{i}/train", "run", "sent")
    assert main(["budget", str(ledger.path), "--last", "1"]) == 0
    out = capsys.readouterr().out
    assert "refused: 4 requests (budget_exhausted 4)" in out and "(showing the latest 1 of 4" in out
    assert "r3/train" in out and "r2/train" not in out
    assert "d3/train: sent 1 time" in out and "d2/train" not in out
    assert main(["budget", str(ledger.path), "--json", "--last", "1"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert len(data["refused"]) == 4 and len(data["deliveries"]) == 4


def test_a_release_naming_no_relation_is_not_called_carried(tmp_path, capsys):
    """Review rev-s64 F7: a release whose detail names no relation (an older ledger's) was worded as a carried
    entry; the two are told apart, and both still count twice in the replace-one bound."""
    from fractions import Fraction

    ledger = BudgetLedger(tmp_path / "ledger.sqlite", cap=5.0)
    ledger.reserve("a/train", "release", 1.0, detail="2 trees, depth 4, binary, 20 bins, add-remove, leaf counts")
    ledger.reserve("old/train", "release", 0.5, detail="2 trees, depth 4")  # no relation named
    assert main(["budget", str(ledger.path)]) == 0
    out = capsys.readouterr().out
    assert "releases whose detail names no relation (0.5) record no relation" in out
    assert "carried entries" not in out
    ledger.carry_recorded(Fraction(2), "the coordinator's spend record")
    ledger.reserve("b/train", "release", 0.5, detail="2 trees, depth 4, binary, 20 bins, replace-one, leaf counts")
    assert main(["budget", str(ledger.path)]) == 0
    out = capsys.readouterr().out
    assert "  relation not recorded (carried entries): 0.5" in out  # 2 carried less the 1.5 already in the ledger
    assert "  relation not recorded (releases whose detail names no relation): 0.5" in out
    assert "  under replace-one: at most 4.5 per record" in out  # 2 x (1 + 0.5 + 0.5) + 0.5


def test_a_delivery_keeps_the_coordinators_keys_digest_and_the_installed_apps_hash(tmp_path, monkeypatch):
    """Review rev-s64 F6 (mutations M3, M4): through the real handler, a delivery keeps the digest of the request's
    registered keys and the hash of the app bundle Flower installed the ClientApp from
    (``<FLWR_HOME>/apps/<publisher>.<name>.<version>.<hash8>/``)."""
    import client._flower_handlers as handlers
    import client._party as party_module
    from client._party import registered_digest

    monkeypatch.setattr(party_module, "registration_problem", lambda *_args: None)  # the keys' check is not this test's
    fab = "/srv/flwr-home/apps/example.edprf-fl.0.2.11.0a1b2c3d/client/_flower_handlers.py"
    monkeypatch.setattr(handlers, "__file__", fab)
    setup = make_party(tmp_path / "p", file_bytes(n_rows=60))
    registered = "a" * 32 + ":" + "b" * 32
    req = replace(train_request(setup, TrainSettings(epsilon=0.5), "tag/train"), registered_parties=registered)
    assert result_of(send_request(setup, req))["status"] == "released"
    [row] = _deliveries(setup.ledger_path)
    assert (row.registered, row.app) == (registered_digest(registered), "0a1b2c3d")
    monkeypatch.setattr(handlers, "__file__", "/work/src/client/_flower_handlers.py")  # a source tree: no bundle
    assert handlers._installed_app() == ""


def test_a_new_release_whose_delivery_cannot_be_recorded_still_goes_out_spent_once(tmp_path, monkeypatch, caplog):
    """Review rev-s64 F6 (mutation M26): a new release is made and its epsilon spent before its delivery row; a row
    that cannot be written is said in the log, and the release goes out (refusing it would spend for nothing)."""
    setup = make_party(tmp_path / "p", file_bytes(n_rows=60))

    def broken(*_args, **_kwargs):
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(BudgetLedger, "record_delivery", broken)
    result = result_of(send_train(setup, TrainSettings(epsilon=0.5), "tag/train"))
    assert result["status"] == "released" and result["release"]
    assert BudgetLedger(setup.ledger_path, 100.0).spent() == pytest.approx(0.5)
    assert "the release goes out, but its delivery could not be recorded" in caplog.text


# ---------------------------------------------------------------- D8: what a release's epsilon paid for
@pytest.mark.parametrize(
    ("settings", "declared_rows"),
    [
        (TrainSettings(epsilon=1.0), 0),  # the depth from a DP row count
        (TrainSettings(epsilon=0.3, marginals_share=0.5, marginals_bins=4), 0),  # and a marginals part
        (TrainSettings(epsilon=0.7), 60),  # the depth from a declared row count: no DP count
    ],
)
def test_a_release_says_what_its_epsilon_paid_for(tmp_path, capsys, settings, declared_rows):
    """Review rev-dpo D8: the parts (DP row count, trees, marginals) and the depth, taken from the release (what
    `edprf inspect` prints of its bytes), add up to the entry's epsilon exactly; `edprf budget` and --json show them."""
    from fractions import Fraction

    from client import ReleaseParts

    setup = make_party(tmp_path / "p", file_bytes(n_rows=60), declared_rows=declared_rows)
    assert result_of(send_train(setup, settings, "tag/train"))["status"] == "released"
    entries, _, audit = read_records_readonly(setup.ledger_path, ())
    [entry] = entries
    parts = audit.parts["tag/train"]
    assert isinstance(parts, ReleaseParts) and parts.count + parts.trees == entry.epsilon_exact == parts.total
    assert parts.residual is None  # a party's release never carries a residual pass
    if settings.marginals_share:
        assert parts.marginals is not None and parts.marginals + (parts.residual or 0) == parts.trees
    else:
        assert parts.marginals is None
    assert "[paid for" not in entry.detail  # the request's detail is unchanged (a resend compares it)

    # the release's own record of them
    out_file = tmp_path / "release.bin"
    assert main(["budget", str(setup.ledger_path), "--release", "tag/train", "--out", str(out_file)]) == 0
    capsys.readouterr()
    main(["inspect", str(out_file)])
    printed = capsys.readouterr().out
    fields = dict(f.split("=", 1) for f in printed.split() if f.startswith(("count_epsilon=", "max_depth=")))
    assert int(fields["max_depth"]) == parts.depth
    assert float(fields["count_epsilon"]) == pytest.approx(float(parts.count))
    assert (parts.count > 0) == (declared_rows == 0)
    if parts.count:
        assert float(parts.count) == pytest.approx(0.05 * float(entry.epsilon_exact))  # the estimator's 5 %

    assert main(["budget", str(setup.ledger_path)]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if "tag/train" in x and "released" in x)
    from edprf_fl.cli._budget_audit import shown_parts

    assert f"trees {format_exact(shown_parts(parts)[1])}" in line and f"; depth {parts.depth}]" in line
    assert ("DP row count" in line) == (declared_rows == 0) and ("marginals " in line) == bool(settings.marginals_share)
    assert main(["budget", str(setup.ledger_path), "--json"]) == 0
    [shown] = json.loads(capsys.readouterr().out)["entries"]
    exact = shown["parts"]
    assert Fraction(exact["count_epsilon_exact"]) + Fraction(exact["trees_epsilon_exact"]) == Fraction(
        shown["epsilon_exact"]
    )
    assert exact["depth"] == parts.depth and exact["residual_pass_epsilon_exact"] is None
    assert (exact["marginals_epsilon_exact"] is None) == (not settings.marginals_share)

    # a resend is still a resend (the entry's detail is the request's), and records no second row
    assert result_of(send_train(setup, settings, "tag/train"))["status"] == "released"
    assert read_records_readonly(setup.ledger_path, ())[2].parts == audit.parts


def test_the_parts_print_without_float_artefacts():
    """Review rev-day2 U12: the DP row count's epsilon is the estimator's double (0.05 * 0.1 = 0.005000000000000001);
    the table and --json show 0.005 and 0.095, still adding up to the entry's 0.1 exactly."""
    from fractions import Fraction

    from client import ReleaseParts
    from edprf_fl.cli._budget_audit import parts_json, parts_text

    count = Fraction(repr(0.05 * 0.1))
    assert count != Fraction(1, 200)  # the artefact this is about
    parts = ReleaseParts("r/train", count, Fraction(1, 10) - count, None, None, 1)
    assert parts_text(parts) == "[paid for: DP row count 0.005, trees 0.095; depth 1]"
    shown = parts_json(parts)
    assert (shown["count_epsilon_exact"], shown["trees_epsilon_exact"]) == ("0.005", "0.095")
    assert Fraction(shown["count_epsilon_exact"]) + Fraction(shown["trees_epsilon_exact"]) == parts.total

    residual = Fraction(repr(0.1 * 0.3))  # 0.030000000000000002
    marginals = Fraction(3, 10) - count - residual
    with_marginals = ReleaseParts("r/train", count, Fraction(3, 10) - count, marginals, residual, 2)
    assert parts_text(with_marginals) == (
        "[paid for: DP row count 0.005, trees 0.295, marginals 0.265 + residual pass 0.03 "
        "(on rows disjoint from the trees': parallel); depth 2]"
    )
    assert parts_text(ReleaseParts("r/train", Fraction(0), Fraction(7, 10), None, None, 3)) == (
        "[paid for: trees 0.7; depth 3]"
    )


def format_exact(value):
    from client import format_epsilon

    return format_epsilon(value)


def test_a_ledger_without_the_parts_table_reads_and_gets_it_at_its_next_opening(tmp_path, capsys):
    """A ledger of 0.2.11 (no release_parts): `edprf budget` reads it, the entries say nothing of parts; a later
    version's table is ignored by 0.2.11, which checks the spends columns only."""
    ledger = BudgetLedger(tmp_path / "ledger.sqlite", cap=2.0)
    ledger.reserve("old/train", "release", 0.5, detail="2 trees, depth 4, binary, 20 bins, add-remove")
    ledger.complete("old/train", b"x")
    with sqlite3.connect(ledger.path) as db:
        db.execute("DROP TABLE release_parts")
    assert read_records_readonly(ledger.path, ())[2].parts is None
    assert main(["budget", str(ledger.path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["entries"][0]["parts"] is None
    BudgetLedger(ledger.path, 2.0)
    assert read_records_readonly(ledger.path, ())[2].parts == {}


# ---------------------------------------------------------------- D3: resent to the first recipient only
def test_a_stored_release_is_resent_only_to_the_coordinator_it_first_went_to(tmp_path, monkeypatch):
    """Review rev-dpo D3: request ids are the coordinator's tags; a coordinator with other registered keys reusing
    one is refused (a constant text naming no epsilon), before and at the train request, nothing sent or spent."""
    import client._party as party_module
    from client._party import _OTHER_RECIPIENT_TEXT

    monkeypatch.setattr(party_module, "registration_problem", lambda *_args: None)  # the keys' check is not this test's
    setup = make_party(tmp_path / "p", file_bytes(n_rows=60))
    ours, theirs = "a" * 32 + ":" + "b" * 32, "c" * 32 + ":" + "d" * 32
    req = replace(train_request(setup, TrainSettings(epsilon=0.5), "tag/train"), registered_parties=ours)
    first = result_of(send_request(setup, req))
    assert first["status"] == "released"

    other = replace(req, run_id="run9", registered_parties=theirs)
    for reply in (send_request(setup, other, MessageType.QUERY), send_request(setup, other)):
        refused = result_of(reply)
        assert (refused["status"], refused["reason"], refused["message"]) == (
            "refused",
            "request_id_reused",
            _OTHER_RECIPIENT_TEXT,
        )
        assert "release" not in refused
    # other parameters too: the same constant, not the earlier request's epsilon
    refused = result_of(send_request(setup, replace(other, epsilon=0.7)))
    assert refused["message"] == _OTHER_RECIPIENT_TEXT
    unkeyed = result_of(send_request(setup, replace(req, registered_parties="")))  # none registered is another too
    assert unkeyed["reason"] == "request_id_reused"

    again = result_of(send_request(setup, replace(req, run_id="run2")))  # the first coordinator resumes
    assert again["status"] == "released" and again["release"] == first["release"]
    assert [(d.run_id, d.how) for d in _deliveries(setup.ledger_path)] == [("run1", "sent"), ("run2", "resent")]
    assert [r.reason for r in _refusals(setup.ledger_path)] == ["request_id_reused"] * 4
    assert BudgetLedger(setup.ledger_path, 100.0).spent() == Fraction_half()


def test_a_release_without_delivery_rows_is_resent_as_before(tmp_path, monkeypatch):
    """A release made before the deliveries table (0.2.10), or made before 0.2.12 (no release_recipients row) and
    whose delivery rows are gone, is resent to whoever asks, as before; runs that register no keys (simulation)
    resume."""
    import client._party as party_module

    setup = make_party(tmp_path / "p", file_bytes(n_rows=60))
    req = train_request(setup, TrainSettings(epsilon=0.5), "tag/train")
    assert result_of(send_request(setup, req))["status"] == "released"
    assert result_of(send_request(setup, replace(req, run_id="run2")))["status"] == "released"  # "" and ""
    with sqlite3.connect(setup.ledger_path) as db:
        db.execute("DELETE FROM deliveries")
        db.execute("DELETE FROM release_recipients")  # as a release completed by 0.2.11 has none
    monkeypatch.setattr(party_module, "registration_problem", lambda *_args: None)
    keyed = replace(req, run_id="run3", registered_parties="a" * 32 + ":" + "b" * 32)
    assert result_of(send_request(setup, keyed))["status"] == "released"


def test_a_release_whose_parts_cannot_be_recorded_still_goes_out(tmp_path, monkeypatch, caplog):
    """D8's row is best effort: the release is stored and its epsilon spent before it; the log says it is missing."""
    setup = make_party(tmp_path / "p", file_bytes(n_rows=60))

    def broken(*_args, **_kwargs):
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(BudgetLedger, "record_parts", broken)
    result = result_of(send_train(setup, TrainSettings(epsilon=0.5), "tag/train"))
    assert result["status"] == "released" and result["release"]
    assert "what its epsilon paid for could not be recorded" in caplog.text
    assert read_records_readonly(setup.ledger_path, ())[2].parts == {}


# ---------------------------------------------------------------- rev-s65 F1: the first recipient is kept for good
_OURS, _THEIRS = "a" * 32 + ":" + "b" * 32, "c" * 32 + ":" + "d" * 32


def _recipients(path):
    with sqlite3.connect(path) as db:
        return db.execute("SELECT request_id, registered FROM release_recipients ORDER BY request_id").fetchall()


def test_the_guard_holds_once_the_first_delivery_rows_are_pruned(tmp_path, monkeypatch):
    """Review rev-s65 F1, case 1: another consortium's own resends pushed the first recipient's delivery rows out of
    ``deliveries`` (pruned to MAX_AUDIT_ROWS); the release's recipient row, never pruned, still refuses it."""
    import client._party as party_module

    monkeypatch.setattr(party_module, "registration_problem", lambda *_args: None)
    monkeypatch.setattr(audit_module, "MAX_AUDIT_ROWS", 3)
    setup = make_party(tmp_path / "p", file_bytes(n_rows=60))
    a = replace(train_request(setup, TrainSettings(epsilon=0.5), "tag/train"), registered_parties=_OURS)
    first = result_of(send_request(setup, a))
    assert first["status"] == "released"
    b_steal = replace(a, run_id="run9", registered_parties=_THEIRS)
    assert result_of(send_request(setup, b_steal))["reason"] == "request_id_reused"
    b_own = replace(train_request(setup, TrainSettings(epsilon=0.5), "b/own"), registered_parties=_THEIRS, run_id="rb")
    assert result_of(send_request(setup, b_own))["status"] == "released"
    for i in range(3):  # free resends of B's own release: A's rows of tag/train are pruned
        assert result_of(send_request(setup, replace(b_own, run_id=f"rb{i}")))["status"] == "released"
    assert {d.request_id for d in _deliveries(setup.ledger_path)} == {"b/own"}
    stolen = result_of(send_request(setup, b_steal))
    assert (stolen["status"], stolen["reason"]) == ("refused", "request_id_reused") and "release" not in stolen
    again = result_of(send_request(setup, replace(a, run_id="run2")))  # the first coordinator still resumes
    assert again["status"] == "released" and again["release"] == first["release"]
    assert _recipients(setup.ledger_path) == [
        ("b/own", party_module.registered_digest(_THEIRS)),
        ("tag/train", party_module.registered_digest(_OURS)),
    ]


def test_a_lost_sent_row_does_not_hand_the_release_to_the_next_asker(tmp_path, monkeypatch):
    """Review rev-s65 F1, case 2: the ``sent`` row is best effort and written after the release is completed; with it
    lost, the next coordinator to ask was resent the release and became its "first recipient", and the real one's
    resume was refused.  The recipient row is written with the completion: the other is refused, the first resumes."""
    import client._party as party_module

    monkeypatch.setattr(party_module, "registration_problem", lambda *_args: None)
    setup = make_party(tmp_path / "p", file_bytes(n_rows=60))
    a = replace(train_request(setup, TrainSettings(epsilon=0.5), "tag/train"), registered_parties=_OURS)

    def broken(*_args, **_kwargs):
        raise sqlite3.OperationalError("database or disk is full")

    with monkeypatch.context() as patched:
        patched.setattr(BudgetLedger, "record_delivery", broken)
        first = result_of(send_request(setup, a))
    assert first["status"] == "released"  # goes out without its sent row (best effort)
    assert _deliveries(setup.ledger_path) == ()
    got_b = result_of(send_request(setup, replace(a, run_id="run9", registered_parties=_THEIRS)))
    assert (got_b["status"], got_b["reason"]) == ("refused", "request_id_reused") and "release" not in got_b
    resumed = result_of(send_request(setup, replace(a, run_id="run2")))
    assert resumed["status"] == "released" and resumed["release"] == first["release"]
    assert [(d.run_id, d.how) for d in _deliveries(setup.ledger_path)] == [("run2", "resent")]


def test_a_release_made_before_the_recipient_table_falls_back_to_its_first_delivery(tmp_path, monkeypatch):
    """A release completed by 0.2.11 has no release_recipients row: the next opening copies its sent row's digest
    (the back-fill), which decides as that row did in 0.2.12's first guard; a recipient row decides over the delivery
    rows."""
    import client._party as party_module

    monkeypatch.setattr(party_module, "registration_problem", lambda *_args: None)
    setup = make_party(tmp_path / "p", file_bytes(n_rows=60))
    a = replace(train_request(setup, TrainSettings(epsilon=0.5), "tag/train"), registered_parties=_OURS)
    assert result_of(send_request(setup, a))["status"] == "released"
    with sqlite3.connect(setup.ledger_path) as db:
        db.execute("DELETE FROM release_recipients")
    ledger = BudgetLedger(setup.ledger_path, 100.0)
    assert ledger.first_recipient("tag/train") == party_module.registered_digest(_OURS)  # from the sent row
    refused = result_of(send_request(setup, replace(a, run_id="run9", registered_parties=_THEIRS)))
    assert refused["reason"] == "request_id_reused"
    assert result_of(send_request(setup, replace(a, run_id="run2")))["status"] == "released"
    with sqlite3.connect(setup.ledger_path) as db:  # the table's row wins over the deliveries
        db.execute(
            "INSERT OR REPLACE INTO release_recipients (request_id, registered, at) VALUES (?, ?, 0)",
            ("tag/train", party_module.registered_digest(_THEIRS)),
        )
    assert ledger.first_recipient("tag/train") == party_module.registered_digest(_THEIRS)
    assert ledger.first_recipient("unknown/train") is None


def test_a_ledger_without_the_recipient_table_gets_it_at_its_next_opening(tmp_path):
    """A ledger last written by 0.2.11 (no release_recipients): the next opening creates the table; a completion
    creates it too, in its own transaction, should 0.2.11 have made the ledger since."""
    ledger = BudgetLedger(tmp_path / "ledger.sqlite", cap=2.0)
    with sqlite3.connect(ledger.path) as db:
        db.execute("DROP TABLE release_recipients")
    ledger.reserve("r/train", "release", 0.5)
    ledger.complete("r/train", b"x", "0123456789abcdef")
    assert _recipients(ledger.path) == [("r/train", "0123456789abcdef")]
    with sqlite3.connect(ledger.path) as db:
        db.execute("DROP TABLE release_recipients")
    BudgetLedger(ledger.path, 2.0)
    assert _recipients(ledger.path) == []
    ledger.reserve("e/evaluate", "evaluation", 0.1)
    ledger.complete("e/evaluate")  # an evaluation has no recipient row
    assert _recipients(ledger.path) == []
