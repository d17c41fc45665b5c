"""What leaves a party: constant reason codes, exact accounting, bounded evaluation counts."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

import numpy as np
import pytest
from flwr.app import ConfigRecord, Context, Message, MessageType, RecordDict
from flwr.supercore.task_identity import TaskIdentity

import client._party as party_module
from client import BudgetExhausted, BudgetLedger, Party, PartyPolicy
from client._flower_handlers import REASONS, handle_evaluate, handle_train
from client._local_data import LocalData, load_local_data
from client._party import held_out_counts
from edprf_core import EDPRFClassifier, load_schema
from protocol._task import MODEL_KEY, REQUEST_KEY, RESULT_KEY, EvaluateRequest, TrainRequest

from ._neighbours import HOSTILE, file_bytes, make_party

DATA_LOOKING = "row 1234 of 5678: value 'secret-patient-42' (length 20000006)"


@pytest.fixture(autouse=True)
def flower_task_identity() -> Iterator[None]:
    saved = (TaskIdentity._run_id, TaskIdentity._node_id, TaskIdentity._task_id)
    TaskIdentity.run_id, TaskIdentity.node_id, TaskIdentity.task_id = 1, 2, 3
    yield
    TaskIdentity._run_id, TaskIdentity._node_id, TaskIdentity._task_id = saved


def _context(setup) -> Context:
    node_config = {"data-path": str(setup.data_path), "schema-path": str(setup.schema_path),
                   "policy-path": str(setup.policy_path), "ledger-path": str(setup.ledger_path)}
    return Context(run_id=1, node_id=2, node_config=node_config, state=RecordDict(), run_config={})


def _train_message(fingerprint: str, **kw) -> Message:
    args = dict(request_id="r/train", run_id="r", schema_fingerprint=fingerprint, epsilon=1.0, max_depth=2,
                n_trees=1, split_mode="binary", n_bins=4, schedule="harmonic", relation="add-remove", seed=-1)
    args.update(kw)
    return Message(content=RecordDict({REQUEST_KEY: ConfigRecord(TrainRequest(**args).to_record())}),
                   dst_node_id=2, message_type=MessageType.TRAIN)


def _reply(message: Message) -> dict:
    return dict(message.content.config_records[RESULT_KEY])


# ----------------------------------------------------------------- handlers
@pytest.mark.parametrize("error", [MemoryError(DATA_LOOKING), RecursionError(DATA_LOOKING), OSError(DATA_LOOKING),
                                   TypeError(DATA_LOOKING), sqlite3.OperationalError(DATA_LOOKING),
                                   ValueError(DATA_LOOKING), KeyError(DATA_LOOKING), RuntimeError(DATA_LOOKING)])
@pytest.mark.parametrize("step", ["load_local_data", "fit"])
def test_any_exception_in_training_travels_as_a_constant(tmp_path, monkeypatch, error, step):
    setup = make_party(tmp_path, file_bytes())

    def boom(*_, **__):
        raise error

    if step == "fit":
        monkeypatch.setattr(EDPRFClassifier, "fit", boom)
    else:
        monkeypatch.setattr(party_module, "load_local_data", boom)
    reply = _reply(handle_train(_train_message(load_schema(setup.schema_path).fingerprint), _context(setup)))
    assert reply["status"] == "refused" and reply["reason"] in REASONS
    text = " ".join(str(v) for v in reply.values())
    assert "1234" not in text and "secret" not in text and "20000006" not in text


def test_an_exception_in_evaluation_travels_as_a_constant(tmp_path, monkeypatch):
    setup = make_party(tmp_path, file_bytes())
    monkeypatch.setattr(party_module, "held_out_counts", lambda *_: (_ for _ in ()).throw(MemoryError(DATA_LOOKING)))
    req = EvaluateRequest(request_id="r/eval", run_id="r", epsilon=0.5, exact=False)
    model = _global_model(setup)
    content = RecordDict({REQUEST_KEY: ConfigRecord(req.to_record()), MODEL_KEY: ConfigRecord({"bytes": model})})
    reply = _reply(handle_evaluate(Message(content=content, dst_node_id=2, message_type=MessageType.EVALUATE),
                                   _context(setup)))
    assert reply == {"status": "refused", "reason": "internal_error",
                     "message": "the party could not serve the request; details are in the party's log"}


def test_a_malformed_request_is_refused_with_a_constant(tmp_path):
    setup = make_party(tmp_path, file_bytes())
    msg = Message(content=RecordDict({REQUEST_KEY: ConfigRecord({"epsilon": DATA_LOOKING})}), dst_node_id=2,
                  message_type=MessageType.TRAIN)
    reply = _reply(handle_train(msg, _context(setup)))
    assert reply["reason"] == "bad_request" and "secret" not in reply["message"]


def _global_model(setup) -> bytes:
    from protocol import INSPECTION_POLICY, build_global_model, decode_release

    schema = load_schema(setup.schema_path)
    reply = _reply(handle_train(_train_message(schema.fingerprint, request_id="model/train"), _context(setup)))
    release = decode_release(reply["release"], schema, INSPECTION_POLICY)
    return build_global_model(schema, [release], {"run_id": "r"})


# ----------------------------------------------------------------- ledger
def test_the_ledger_counts_exactly(tmp_path):
    ledger = BudgetLedger(tmp_path / "l.sqlite", cap=2.0)
    ledger.reserve("a", "release", 2.0)
    with pytest.raises(ValueError, match="multiple of 1e-06"):
        ledger.reserve("b", "evaluation", 1e-16)  # 2.0 + 1e-16 == 2.0 in floating point
    with pytest.raises(BudgetExhausted):
        ledger.reserve("c", "evaluation", 1e-6)
    assert ledger.spent_units() == 2_000_000


def test_many_small_spends_cannot_pass_the_cap(tmp_path):
    ledger = BudgetLedger(tmp_path / "l.sqlite", cap=1.0)
    for i in range(10):
        ledger.reserve(f"r{i}", "evaluation", 0.1)  # ten times 0.1 is 0.9999999999999999 in floating point
    assert ledger.spent_units() == 1_000_000 and ledger.remaining() == 0.0
    with pytest.raises(BudgetExhausted):
        ledger.reserve("one-more", "evaluation", 0.000001)


def test_a_ledger_written_before_exact_accounting_still_opens(tmp_path):
    path = tmp_path / "old.sqlite"
    with sqlite3.connect(path) as db:
        db.executescript("""
            CREATE TABLE spends (id INTEGER PRIMARY KEY AUTOINCREMENT, request_id TEXT NOT NULL UNIQUE,
              kind TEXT NOT NULL, epsilon REAL NOT NULL, state TEXT NOT NULL, run_id TEXT NOT NULL DEFAULT '',
              detail TEXT NOT NULL DEFAULT '', payload BLOB, created_at REAL NOT NULL, updated_at REAL NOT NULL);
            INSERT INTO spends VALUES (1, 'old', 'release', 0.3000004, 'released', '', '', NULL, 0, 0);
        """)
    ledger = BudgetLedger(path, cap=1.0)
    assert ledger.spent_units() == 300_001  # rounded up: never counts less than was spent
    ledger.reserve("new", "release", 0.5)
    assert ledger.spent_units() == 800_001


# ----------------------------------------------------------------- minimum epsilon
@pytest.mark.parametrize("epsilon", [5e-324, 1e-9, 0.001])
def test_requests_below_the_minimum_are_refused_before_anything(tmp_path, epsilon):
    setup = make_party(tmp_path, file_bytes())
    reply = _reply(handle_train(_train_message(load_schema(setup.schema_path).fingerprint, epsilon=epsilon),
                                _context(setup)))
    assert reply["status"] == "refused" and reply["reason"] in {"policy_epsilon", "epsilon_precision"}
    assert BudgetLedger(setup.ledger_path, 100.0).entries() == []


def test_policy_minimum_is_validated():
    with pytest.raises(ValueError, match="min-epsilon"):
        PartyPolicy(party_id="p", min_epsilon=2.0, max_release_epsilon=1.0)
    with pytest.raises(ValueError, match="lifetime-epsilon-cap"):
        PartyPolicy(party_id="p", lifetime_epsilon_cap=0.1 + 0.2)


# ----------------------------------------------------------------- evaluation
def test_evaluation_counts_move_by_at_most_one_per_record(tmp_path):
    """Sensitivity of (correct, total) under add/remove, for every hostile record of the harness."""
    base = make_party(tmp_path / "d", file_bytes())
    schema = load_schema(base.schema_path)
    forest = EDPRFClassifier(schema, epsilon=1.0, max_depth=3, random_state=0).fit(
        *_xy(load_local_data(base.data_path, schema, 0.0, "ab" * 16))).forest_
    salt = "cd" * 16
    correct, total = held_out_counts(forest, load_local_data(base.data_path, schema, 0.5, salt))
    assert total > 0
    for name, line, where in HOSTILE:
        other = make_party(tmp_path / name, file_bytes(line, where))
        c2, t2 = held_out_counts(forest, load_local_data(other.data_path, schema, 0.5, salt))
        assert abs(c2 - correct) <= 1 and abs(t2 - total) <= 1 and abs(c2 - correct) + abs(t2 - total) <= 2, name


def _xy(data: LocalData):
    return data.X_train, data.y_train


def test_evaluation_compares_class_indices_not_raw_labels(tmp_path):
    """String classes ['0','1'] and labels read as text: a perfect model scores every row."""
    setup = make_party(tmp_path, file_bytes())
    schema = load_schema(setup.schema_path)
    data = load_local_data(setup.data_path, schema, 0.5, "ef" * 16)
    forest = EDPRFClassifier(schema, epsilon=1.0, max_depth=1, random_state=0).fit(data.X_train, data.y_train).forest_
    correct, total = held_out_counts(forest, data)
    predicted = forest.predict(data.X_holdout)
    assert correct == int(np.sum(predicted == data.y_holdout.to_numpy())) and total == len(data.y_holdout)


def test_noised_evaluation_is_integer_and_charged(tmp_path):
    setup = make_party(tmp_path, file_bytes())
    model = _global_model(setup)
    party = Party(setup)
    before = party.ledger.spent_units()
    out = party.evaluate(model, EvaluateRequest(request_id="r/eval", run_id="r", epsilon=0.5, exact=False))
    assert isinstance(out["correct"], int) and isinstance(out["total"], int)
    assert party.ledger.spent_units() - before == 500_000


def test_an_oversized_evaluation_model_is_refused_before_reserving(tmp_path):
    setup = make_party(tmp_path, file_bytes())
    party = Party(setup)
    before = party.ledger.spent_units()
    with pytest.raises(party_module.Refusal) as err:
        party.evaluate(b"\0" * (party.policy.max_evaluation_model_bytes + 1),
                       EvaluateRequest(request_id="r/eval", run_id="r", epsilon=0.5, exact=False))
    assert err.value.reason == "policy_model_size" and party.ledger.spent_units() == before
