"""Party hardening (issues 13, 14): constant reason codes, per-record evaluation with exact noise,
exact ledger, minimum and resolution of ε, caps checked before the reservation, configuration."""

from __future__ import annotations

import contextlib
import itertools
import logging
import sqlite3
import time
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from flwr.app import ConfigRecord, Context, Message, Metadata, RecordDict

from client import (
    REASONS,
    BudgetExhausted,
    BudgetLedger,
    Party,
    PartyPolicy,
    PartySetup,
    evaluation_counts,
    handle_evaluate,
    handle_query,
    handle_train,
    release_node_bound,
)
from edprf_core import EDPRFClassifier, load_embedded
from protocol import ReleasePolicy, build_global_model, decode_release, load_global_model, peek_global_model
from protocol.messages import EvaluateRequest, TrainRequest

DATA_LOOKING = "row 4711 of 1234 rows: value 57.25 in column Class 'slight-right-turn' (98 chars)"


def _write_party(tmp_path, **policy_kw):
    X, y, schema = load_embedded("wall_robot_navigation")
    schema.save(tmp_path / "schema.toml")
    X.iloc[:600].assign(Class=y.iloc[:600].to_numpy()).to_csv(tmp_path / "data.csv", index=False)
    args = {
        "party_id": "hospital-a",
        "lifetime_epsilon_cap": 2.0,
        "max_release_epsilon": 1.0,
        "max_evaluation_epsilon": 0.2,
        "schema_fingerprint": schema.fingerprint,
    }
    args.update(policy_kw)
    (tmp_path / "policy.toml").write_text(PartyPolicy(**args).to_toml())
    setup = PartySetup(
        tmp_path / "data.csv", tmp_path / "schema.toml", tmp_path / "policy.toml", tmp_path / "ledger.sqlite"
    )
    return setup, schema


@pytest.fixture
def party_files(tmp_path):
    return _write_party(tmp_path)


def _train_request(schema, request_id="run1/1/train", **kw):
    args = {
        "request_id": request_id,
        "run_id": "run1",
        "schema_fingerprint": schema.fingerprint,
        "epsilon": 1.0,
        "max_depth": 3,
        "n_trees": 2,
        "split_mode": "binary",
        "n_bins": 8,
        "relation": "add-remove",
        "seed": -1,
    }
    args.update(kw)
    return TrainRequest(**args)


def _model(party, schema, request_id="run1/1/train"):
    release = decode_release(party.train(_train_request(schema, request_id=request_id)), schema, ReleasePolicy())
    return build_global_model(schema, [release], {"run_id": "run1"})


# ------------------------------------------------------------------ handlers
def _message(kind: str, content: RecordDict) -> Message:
    md = Metadata(
        run_id=1,
        message_id="m1",
        src_node_id=0,
        dst_node_id=1,
        reply_to_message_id="",
        group_id="g",
        created_at=time.time(),
        ttl=3600,
        message_type=kind,
    )
    return Message(content, metadata=md)


def _context(setup: PartySetup) -> Context:
    node = {
        "data-path": str(setup.data_path),
        "schema-path": str(setup.schema_path),
        "policy-path": str(setup.policy_path),
        "ledger-path": str(setup.ledger_path),
    }
    return Context(run_id=1, node_id=1, node_config=node, state=RecordDict(), run_config={})


def _reply_text(reply: Message) -> str:
    parts = []
    for name, record in reply.content.config_records.items():
        parts += [name, *map(str, record.keys()), *map(str, record.values())]
    for name, record in reply.content.metric_records.items():
        parts += [name, *map(str, record.keys()), *map(str, record.values())]
    return " ".join(parts)


def _train_msg(schema) -> Message:
    return _message("train", RecordDict({"request": ConfigRecord(_train_request(schema).to_record())}))


def _evaluate_msg(model: bytes = b"\x08\x01", **kw) -> Message:
    req = EvaluateRequest("run1/1/evaluate", "run1", 0.1, False, **kw)
    return _message(
        "evaluate", RecordDict({"request": ConfigRecord(req.to_record()), "model": ConfigRecord({"bytes": model})})
    )


EXCEPTIONS = [
    MemoryError,
    RecursionError,
    OSError,
    TypeError,
    sqlite3.Error,
    ValueError,
    KeyError,
    IndexError,
    ZeroDivisionError,
    AssertionError,
    Exception,
    BaseException,
]


@pytest.mark.parametrize("exc_type", EXCEPTIONS, ids=lambda e: e.__name__)
@pytest.mark.parametrize("kind", ["train", "evaluate", "query"])
def test_every_exception_in_a_handler_replies_a_constant_code(party_files, monkeypatch, exc_type, kind):
    setup, schema = party_files

    def boom(*args, **kwargs):
        raise exc_type(DATA_LOOKING)

    monkeypatch.setattr(Party, {"query": "ready"}.get(kind, kind), boom)
    msg = _evaluate_msg() if kind == "evaluate" else _train_msg(schema)
    handler = {"train": handle_train, "evaluate": handle_evaluate, "query": handle_query}[kind]
    reply = handler(msg, _context(setup))
    result = reply.content.config_records["result"]
    assert result["status"] == "refused" and result["reason"] == "internal_error"
    text = _reply_text(reply)
    assert "4711" not in text and "1234" not in text and "57.25" not in text and "slight" not in text


@pytest.mark.parametrize("exc_type", [MemoryError, OSError, sqlite3.Error, RecursionError], ids=lambda e: e.__name__)
def test_a_failing_party_setup_replies_party_setup_only(party_files, monkeypatch, exc_type):
    setup, schema = party_files

    def boom(self, *args, **kwargs):
        raise exc_type(DATA_LOOKING)

    monkeypatch.setattr(Party, "__init__", boom)
    for handler, msg in (
        (handle_train, _train_msg(schema)),
        (handle_evaluate, _evaluate_msg()),
        (handle_query, _train_msg(schema)),
    ):
        reply = handler(msg, _context(setup))
        assert reply.content.config_records["result"]["reason"] == "party_setup"
        assert "4711" not in _reply_text(reply)


def test_a_party_whose_schema_was_edited_says_why_in_its_log_without_a_traceback(party_files, caplog):
    """Walkthrough (stop 40): editing schema.toml after the policy gave a generic party_setup and a traceback."""
    setup, schema = party_files
    setup.schema_path.write_text(setup.schema_path.read_text().replace("upper = 5.0", "upper = 6.0", 1))
    with caplog.at_level("ERROR", logger="edprf.party"):
        reply = handle_train(_train_msg(schema), _context(setup))
    assert reply.content.config_records["result"]["reason"] == "party_setup"
    errors = [r for r in caplog.records if r.levelname == "ERROR"]
    assert len(errors) == 1 and errors[0].exc_info is None, errors
    assert "differs from the policy's" in errors[0].getMessage() and "edprf party check" in errors[0].getMessage()
    assert "differs" not in _reply_text(reply)  # the detail stays in the party's log


def test_a_refusal_s_log_line_names_the_request_its_reply_leaves_out(party_files, caplog):
    """The request_spent reply no longer names the request (its text must fit the coordinator's 200 characters);
    the party's log line of the refusal names it, so that the party's operator can find it in the ledger."""
    setup, schema = party_files
    from client._party import _release_detail

    detail = _release_detail(_train_request(schema))
    BudgetLedger(setup.ledger_path, cap=10.0).reserve("run1/1/train", "release", 1.0, detail=detail)  # not completed
    with caplog.at_level("WARNING", logger="edprf.party"):
        reply = handle_train(_train_msg(schema), _context(setup))
    assert reply.content.config_records["result"]["reason"] == "request_spent"
    assert "run1/1/train" not in _reply_text(reply)
    [line] = [r.getMessage() for r in caplog.records if r.getMessage().startswith("refused ")]
    assert line.startswith("refused train (request run1/1/train): request_spent (the request was started before")


def test_a_bad_request_replies_bad_request_with_a_constant_text(party_files):
    setup, _ = party_files
    reply = handle_train(_message("train", RecordDict({"request": ConfigRecord({"epsilon": 1.0})})), _context(setup))
    result = reply.content.config_records["result"]
    assert result["reason"] == "bad_request" and result["reason"] in REASONS


@pytest.mark.parametrize("exc_type", [KeyboardInterrupt, SystemExit])
def test_process_stopping_exceptions_are_not_swallowed(party_files, monkeypatch, exc_type):
    setup, schema = party_files
    monkeypatch.setattr(Party, "train", lambda *a, **k: (_ for _ in ()).throw(exc_type()))
    with pytest.raises(exc_type):
        handle_train(_train_msg(schema), _context(setup))


def _raising(exc_type: type[BaseException], *args):
    """A stand-in for a method or function that raises ``exc_type(*args)``."""

    def stand_in(*_args, **_kwargs):
        raise exc_type(*args)

    return stand_in


_LOCKED = (sqlite3.OperationalError, "database is locked")


def _ledger_entries(setup) -> list[tuple[str, str, float]]:
    return [(e.kind, e.state, e.epsilon) for e in BudgetLedger(setup.ledger_path, cap=10.0).entries()]


@pytest.mark.parametrize("exc_type", [KeyboardInterrupt, SystemExit])
def test_a_stop_during_training_after_the_reservation_is_recorded_and_not_turned_into_a_reply(
    party_files, monkeypatch, exc_type
):
    """Ctrl-C (or SystemExit) while the party trains: its ledger marks the spend failed and the
    process stops; it does not answer with a refusal and go on serving."""
    setup, schema = party_files
    monkeypatch.setattr(EDPRFClassifier, "fit", _raising(exc_type))
    with pytest.raises(exc_type):
        handle_train(_train_msg(schema), _context(setup))
    assert _ledger_entries(setup) == [("release", "failed", 1.0)]


@pytest.mark.parametrize("exc_type", [KeyboardInterrupt, SystemExit])
def test_a_stop_during_training_survives_a_ledger_that_cannot_mark_it_failed(party_files, monkeypatch, exc_type):
    """The ledger's own error (locked, disk full) while a stop is handled does not replace the stop with
    an internal_error reply; the entry stays reserved, its epsilon counted."""
    setup, schema = party_files
    monkeypatch.setattr(EDPRFClassifier, "fit", _raising(exc_type))
    monkeypatch.setattr(BudgetLedger, "fail", _raising(*_LOCKED))
    with pytest.raises(exc_type):
        handle_train(_train_msg(schema), _context(setup))
    monkeypatch.undo()
    assert _ledger_entries(setup) == [("release", "reserved", 1.0)]


@pytest.mark.parametrize("ledger_writable", [True, False])
def test_a_stop_during_evaluation_stops_the_process_and_keeps_the_spend(party_files, monkeypatch, ledger_writable):
    """Ctrl-C while the evaluation counts are noised: no reply; the evaluation entry is marked failed,
    or stays reserved when the ledger cannot be written then; its epsilon is counted either way."""
    import client._party as party_module

    setup, schema = party_files
    model = _model(Party(setup), schema)
    monkeypatch.setattr(party_module, "discrete_laplace_counts", _raising(KeyboardInterrupt))
    if not ledger_writable:
        monkeypatch.setattr(BudgetLedger, "fail", _raising(*_LOCKED))
    with pytest.raises(KeyboardInterrupt):
        handle_evaluate(_evaluate_msg(model), _context(setup))
    monkeypatch.undo()
    assert _ledger_entries(setup) == [
        ("release", "released", 1.0),
        ("evaluation", "failed" if ledger_writable else "reserved", 0.1),
    ]
    assert Party(setup).ledger.spent() == Fraction(11, 10)


def test_an_ordinary_training_failure_still_reports_a_ledger_that_cannot_mark_it(party_files, monkeypatch):
    """Outside a stop, the ledger's error is not hidden: the party answers internal_error (its log has both)."""
    setup, schema = party_files
    monkeypatch.setattr(EDPRFClassifier, "fit", _raising(RuntimeError, "a bug in training"))
    monkeypatch.setattr(BudgetLedger, "fail", _raising(*_LOCKED))
    reply = handle_train(_train_msg(schema), _context(setup))
    assert reply.content.config_records["result"]["reason"] == "internal_error"
    monkeypatch.undo()
    assert _ledger_entries(setup) == [("release", "reserved", 1.0)]


class _StopAfterCommit:
    """A ledger connection whose reservation's COMMIT succeeds and is then interrupted, as a Ctrl-C
    delivered during COMMIT's fsync is raised by Python right after the call returns."""

    def __init__(self, db: sqlite3.Connection, exc_type: type[BaseException]) -> None:
        self._db, self._exc_type, self._last = db, exc_type, ""

    def execute(self, sql: str, *args):
        cursor = self._db.execute(sql, *args)
        if sql == "COMMIT" and self._last.startswith("INSERT INTO spends"):
            raise self._exc_type()
        self._last = sql
        return cursor

    def __getattr__(self, name: str):
        return getattr(self._db, name)


@pytest.mark.parametrize("exc_type", [KeyboardInterrupt, SystemExit])
def test_a_stop_just_after_the_reservation_commits_stops_the_process_and_stays_counted(
    party_files, monkeypatch, exc_type
):
    """The stop is neither replaced by a failed ROLLBACK's error (which became an internal_error reply
    and a run that went on: seen once in a Ctrl-C of `edprf simulate`) nor undoes the committed spend."""
    setup, schema = party_files
    connect = BudgetLedger._connect

    @contextlib.contextmanager
    def interrupted(self):
        with connect(self) as db:
            yield _StopAfterCommit(db, exc_type)

    monkeypatch.setattr(BudgetLedger, "_connect", interrupted)
    with pytest.raises(exc_type):
        handle_train(_train_msg(schema), _context(setup))
    monkeypatch.undo()
    assert _ledger_entries(setup) == [("release", "reserved", 1.0)]


def test_refusal_texts_are_from_the_request_and_policy_only(party_files):
    """Refusal codes come from the documented set; an out-of-policy refusal names the requested value."""
    setup, schema = party_files
    reply = handle_train(
        _message("train", RecordDict({"request": ConfigRecord(_train_request(schema, max_depth=30).to_record())})),
        _context(setup),
    )
    result = reply.content.config_records["result"]
    assert result["reason"] == "policy_depth" and "30" in result["message"]
    assert not setup.ledger_path.exists() or Party(setup).ledger.entries() == []


# ----------------------------------------------------------------- evaluation
def test_evaluate_replies_integer_counts_from_the_exact_sampler(party_files):
    setup, schema = party_files
    party = Party(setup)
    model = _model(party, schema)
    reply = handle_evaluate(_evaluate_msg(model), _context(setup))
    assert reply.content.config_records["result"]["status"] == "evaluated"
    assert reply.content.config_records["result"]["sampler"] == "exact"
    metrics = reply.content.metric_records["metrics"]
    assert isinstance(metrics["correct"], int) and isinstance(metrics["total"], int)
    assert Party(setup).ledger.spent() == Fraction(11, 10)


def test_a_seeded_evaluation_needs_the_policy_and_uses_the_research_sampler(tmp_path):
    setup, schema = _write_party(tmp_path, allow_seeded_randomness=True)
    party = Party(setup)
    model = _model(party, schema)
    a = party.evaluate(model, EvaluateRequest("e1", "run1", 0.1, False, seed=5))
    b = party.evaluate(model, EvaluateRequest("e2", "run1", 0.1, False, seed=5))
    assert a["sampler"] == "numpy" and (a["correct"], a["total"]) == (b["correct"], b["total"])


# privacy gate (invariant 5, mutation campaign 4, M13)
@pytest.mark.privacy
def test_a_seeded_evaluation_is_refused_without_the_policy(party_files):
    setup, schema = party_files
    party = Party(setup)
    model = _model(party, schema)
    with pytest.raises(Exception) as exc:
        party.evaluate(model, EvaluateRequest("e1", "run1", 0.1, False, seed=5))
    assert exc.value.reason == "policy_seed" and len(party.ledger.entries()) == 1


def test_evaluate_request_records_without_a_seed_still_read():
    record = {"request-id": "r", "run-id": "run", "epsilon": 0.1, "exact": False}
    assert EvaluateRequest.from_record(record).seed == -1


# privacy gate: labels by the schema's classes, not the data's order, or a count's sensitivity is unbounded (M09)
@pytest.mark.privacy
def test_evaluation_counts_compare_encoded_labels_with_predicted_class_indices(party_files):
    setup, schema = party_files
    party = Party(setup)
    forest = load_global_model(_model(party, schema)).forest
    data = party._data()
    correct, total = evaluation_counts(forest, data.X_holdout, data.y_holdout)
    assert total == len(data.y_holdout)
    assert correct == int(np.sum(forest.predict(data.X_holdout) == data.y_holdout.to_numpy()))
    assert evaluation_counts(forest, data.X_holdout.iloc[:0], data.y_holdout.iloc[:0]) == (0, 0)


def test_evaluation_counts_change_by_at_most_one_per_added_or_removed_record():
    """Exhaustive over a grid of added records (every class, extreme and middle values of three
    features), and every removal: |d correct| <= 1 and |d total| <= 1, so the L1 sensitivity is 2."""
    X, y, schema = load_embedded("wall_robot_navigation")
    forest = (
        EDPRFClassifier(schema, epsilon=1.0, n_trees=3, max_depth=3, n_bins=4, random_state=0)
        .fit(X.iloc[:300], y.iloc[:300])
        .forest_
    )
    base_X, base_y = X.iloc[300:340].reset_index(drop=True), y.iloc[300:340].reset_index(drop=True)
    c0, t0 = evaluation_counts(forest, base_X, base_y)
    template = base_X.iloc[0]
    cols = list(base_X.columns[:3])
    lows, mids, highs = base_X[cols].min(), base_X[cols].median(), base_X[cols].max()
    checked = 0
    for values in itertools.product(*[(lows[c], mids[c], highs[c]) for c in cols]):
        row = template.copy()
        row[cols] = values
        for label in schema.label.classes:
            Xa = pd.concat([base_X, row.to_frame().T.astype(base_X.dtypes)], ignore_index=True)
            ya = pd.concat([base_y, pd.Series([label], name=base_y.name)], ignore_index=True)
            c1, t1 = evaluation_counts(forest, Xa, ya)
            assert abs(c1 - c0) <= 1 and t1 - t0 == 1
            checked += 1
    for i in range(len(base_X)):
        c1, t1 = evaluation_counts(forest, base_X.drop(index=i), base_y.drop(index=i))
        assert abs(c1 - c0) <= 1 and t0 - t1 == 1
    assert checked == 27 * len(schema.label.classes)


# --------------------------------------------------------------------- ledger
def test_ledger_refuses_a_spend_that_only_rounding_would_hide(tmp_path):
    ledger = BudgetLedger(tmp_path / "l.sqlite", cap=2.0)
    ledger.reserve("a", "release", 2.0)
    with pytest.raises(BudgetExhausted):
        ledger.reserve("b", "evaluation", 1e-16)  # 2.0 + 1e-16 == 2.0 in floats
    assert ledger.spent() == 2


def test_ledger_refuses_many_small_spends_past_the_cap(tmp_path):
    ledger = BudgetLedger(tmp_path / "l.sqlite", cap=1.0)
    ledger.reserve("a", "release", 0.9999999999995)
    with pytest.raises(BudgetExhausted):
        ledger.reserve("b", "evaluation", 1e-12)  # past the cap by 5e-13: within the old 1e-12 tolerance
    for i in range(5):
        ledger.reserve(f"c{i}", "evaluation", 1e-13)
    with pytest.raises(BudgetExhausted):
        ledger.reserve("d", "evaluation", 1e-13)
    assert ledger.spent() == 1


def test_ten_tenths_fill_a_cap_of_one_exactly(tmp_path):
    ledger = BudgetLedger(tmp_path / "l.sqlite", cap=1.0)
    for i in range(10):
        ledger.reserve(f"r{i}", "evaluation", 0.1)
    assert ledger.spent() == 1 and ledger.remaining() == 0
    with pytest.raises(BudgetExhausted):
        ledger.reserve("r10", "evaluation", 0.000001)


def _legacy_ledger(path, spends):
    db = sqlite3.connect(path)
    db.executescript("""
    CREATE TABLE spends (id INTEGER PRIMARY KEY AUTOINCREMENT, request_id TEXT NOT NULL UNIQUE,
        kind TEXT NOT NULL CHECK (kind IN ('release', 'evaluation')), epsilon REAL NOT NULL CHECK (epsilon > 0),
        state TEXT NOT NULL CHECK (state IN ('reserved', 'released', 'failed')), run_id TEXT NOT NULL DEFAULT '',
        detail TEXT NOT NULL DEFAULT '', payload BLOB, created_at REAL NOT NULL, updated_at REAL NOT NULL);
    CREATE TABLE ledger_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    """)
    for i, eps in enumerate(spends):
        db.execute(
            "INSERT INTO spends (request_id, kind, epsilon, state, created_at, updated_at) "
            "VALUES (?, 'release', ?, 'released', 0, 0)",
            (f"old{i}", eps),
        )
    db.commit()
    db.close()


def test_a_ledger_of_an_earlier_schema_is_refused_in_one_line_and_left_unchanged(tmp_path):
    """One ledger schema: a ledger without exact epsilons is refused, never migrated (no ALTER TABLE)."""
    path = tmp_path / "old.sqlite"
    _legacy_ledger(path, [0.5, 0.3])
    before = path.read_bytes()
    with pytest.raises(ValueError, match="a ledger written by another edprf-fl version") as exc:
        BudgetLedger(path, cap=1.0)
    assert "\n" not in str(exc.value) and str(path) in str(exc.value)
    assert "do not give the party a new ledger path (a new ledger starts at 0 and forgets this spend)" in str(exc.value)
    assert path.read_bytes() == before


# -------------------------------------------------------- minimum and resolution
@pytest.mark.parametrize(
    "epsilon, reason",
    [
        (5e-324, "policy_min_epsilon"),
        (1e-9, "policy_min_epsilon"),
        (0.001, "policy_min_epsilon"),
        (0.1234567, "epsilon_resolution"),
    ],
)
def test_tiny_or_unrepresentable_epsilons_are_refused_before_spending(party_files, epsilon, reason):
    setup, schema = party_files
    party = Party(setup)
    with pytest.raises(Exception) as exc:
        party.train(_train_request(schema, epsilon=epsilon))
    assert exc.value.reason == reason and repr(epsilon) in str(exc.value)
    with pytest.raises(Exception) as exc:
        party.evaluate(b"not a model", EvaluateRequest("e", "run1", epsilon, False))
    assert exc.value.reason == reason
    assert party.ledger.entries() == []


def test_min_epsilon_is_a_policy_key(tmp_path):
    setup, schema = _write_party(tmp_path, min_epsilon=0.5)
    with pytest.raises(Exception) as exc:
        Party(setup).train(_train_request(schema, epsilon=0.4))
    assert exc.value.reason == "policy_min_epsilon"
    with pytest.raises(ValueError, match="min-epsilon"):
        PartyPolicy(party_id="p", min_epsilon=1e-7)


# ---------------------------------------------------------- evaluation model caps
def _refused_before_reservation(party, model, reason, request_id="run1/1/evaluate"):
    before = party.ledger.entries()
    with pytest.raises(Exception) as exc:
        party.evaluate(model, EvaluateRequest(request_id, "run1", 0.1, False))
    assert exc.value.reason == reason
    assert party.ledger.entries() == before


@pytest.mark.parametrize(
    "key, value, reason",
    [
        ("max_evaluation_model_bytes", 100, "policy_model_bytes"),
        ("max_evaluation_trees", 1, "policy_model_trees"),
        ("max_evaluation_nodes", 5, "policy_model_nodes"),
    ],
)
def test_evaluation_model_caps_refuse_before_reservation(tmp_path, key, value, reason):
    setup, schema = _write_party(tmp_path)
    model = _model(Party(setup), schema)
    _, _ = _write_party(tmp_path, **{key: value})
    _refused_before_reservation(Party(setup), model, reason)


def test_a_model_on_another_schema_is_refused_before_its_schema_is_parsed(party_files, monkeypatch):
    setup, _ = party_files
    party = Party(setup)
    X, y, other = load_embedded("bank_marketing")
    forest = (
        EDPRFClassifier(other, epsilon=1.0, n_trees=1, max_depth=2, random_state=0)
        .fit(X.iloc[:200], y.iloc[:200])
        .forest_
    )
    from protocol import encode_release

    model = build_global_model(other, [decode_release(encode_release(forest, "x"), other, ReleasePolicy())], {})
    import edprf_core

    def no_parse(*args, **kwargs):
        raise AssertionError("schema parsed before the fingerprint matched")

    monkeypatch.setattr(edprf_core.Schema, "from_toml", no_parse)
    _refused_before_reservation(party, model, "schema_mismatch")
    _refused_before_reservation(party, b"\x0a\xff\xff", "bad_model")


def test_peek_reads_counts_without_decoding_and_skips_unknown_fields(party_files):
    setup, schema = party_files
    model = _model(Party(setup), schema)
    view = load_global_model(model)
    header = peek_global_model(model, len(model))
    assert (header.n_releases, header.n_trees, header.n_nodes) == (1, view.forest.n_trees, view.forest.trees.n_nodes)
    assert header.fingerprint == schema.fingerprint and header.format_version == 1
    assert header.schema_toml_bytes == len(schema.to_toml().encode())
    later = model + bytes([15 << 3 | 0, 7]) + bytes([14 << 3 | 2, 2]) + b"hi"  # unknown fields 15, 14
    assert peek_global_model(later, len(later)).n_nodes == header.n_nodes
    with pytest.raises(Exception, match="at most"):
        peek_global_model(model, len(model) - 1)


# ------------------------------------------------------------- release size
def test_release_node_bound_from_public_parameters(party_files):
    _, schema = party_files
    assert release_node_bound(schema, 2, 3, "binary", 8) == 2 * 15
    # 24 continuous features on 64 bins: 1 + 64 + 64^2 + 64^3 + 64^4 nodes per tree
    assert release_node_bound(schema, 1, 4, "multiway", 64) == sum(64**d for d in range(5))


def test_multiway_depth4_64_bins_is_refused_before_reserving(party_files):
    setup, schema = party_files
    party = Party(setup)
    with pytest.raises(Exception) as exc:
        party.train(_train_request(schema, split_mode="multiway", max_depth=4, n_bins=64, n_trees=10))
    assert exc.value.reason == "policy_release_nodes" and party.ledger.entries() == []


def test_binary_trees_above_what_a_fit_builds_are_refused_before_reserving(tmp_path):
    """A policy may allow more nodes than one fit builds (MAX_FIT_NODES): the estimator refused after the
    ledger's reservation, an internal_error with its epsilon spent (review of stop 44)."""
    setup, schema = _write_party(tmp_path, max_release_nodes=10**9, max_depth=30)
    party = Party(setup)
    with pytest.raises(Exception) as exc:
        party.train(_train_request(schema, max_depth=22, n_trees=1))
    assert exc.value.reason == "policy_release_nodes" and "the most one fit builds is 4194304" in str(exc.value)
    assert party.ledger.entries() == []


# ------------------------------------------------------------ configuration
@pytest.mark.parametrize("party_id", ["a/b", "../x", "a" * 65, "", "-a", "a b", "é"])
def test_party_ids_follow_the_encoding_rule(party_id):
    with pytest.raises(ValueError, match="party-id"):
        PartyPolicy(party_id=party_id)
    PartyPolicy(party_id="a" * 64)


def _with_key(tmp_path, mode):
    from protocol import generate_signing_key, save_private_key

    setup, schema = _write_party(tmp_path)
    key = tmp_path / "signing-key.pem"
    save_private_key(generate_signing_key(), key)
    key.chmod(mode)
    return PartySetup(setup.data_path, setup.schema_path, setup.policy_path, setup.ledger_path, key), schema


def test_a_group_readable_signing_key_is_a_setup_error_before_any_spend(tmp_path):
    setup, _ = _with_key(tmp_path, 0o644)
    with pytest.raises(ValueError, match="chmod 600"):
        Party(setup)
    (tmp_path / "ok").mkdir()
    setup_ok, _ = _with_key(tmp_path / "ok", 0o600)
    assert Party(setup_ok).ledger.entries() == []


def test_a_missing_signing_key_or_unusable_ledger_is_a_setup_error(tmp_path):
    setup, _ = _write_party(tmp_path)
    with pytest.raises(ValueError, match="signing key"):
        Party(
            PartySetup(
                setup.data_path, setup.schema_path, setup.policy_path, setup.ledger_path, tmp_path / "absent.pem"
            )
        )
    (tmp_path / "file").write_text("x")
    with pytest.raises(ValueError, match="ledger"):
        Party(PartySetup(setup.data_path, setup.schema_path, setup.policy_path, tmp_path / "file" / "l.sqlite"))


def test_peek_on_corrupted_models_raises_only_invalid_release(party_files):
    from protocol import InvalidRelease

    setup, schema = party_files
    model = bytearray(_model(Party(setup), schema))
    rng = np.random.default_rng(0)
    for _ in range(300):
        data = model.copy()
        for pos in rng.integers(0, len(data), size=3):
            data[pos] = int(rng.integers(0, 256))
        cut = bytes(data[: int(rng.integers(1, len(data) + 1))])
        for candidate in (bytes(data), cut):
            try:
                peek_global_model(candidate, len(candidate))
            except InvalidRelease:
                pass


def test_a_model_with_releases_beyond_the_party_limits_is_refused_before_reservation(tmp_path):
    setup, schema = _write_party(tmp_path)
    model = _model(Party(setup), schema)  # depth 3, 2 trees
    _write_party(tmp_path, max_depth=2)
    _refused_before_reservation(Party(setup), model, "bad_model")


# ------------------------------------------------------------------ auto depth (issue 9)
def test_an_auto_depth_request_uses_the_declared_size_or_a_charged_dp_count(tmp_path):
    (tmp_path / "a").mkdir(), (tmp_path / "b").mkdir()
    setup, schema = _write_party(tmp_path / "a")
    party = Party(setup)
    release = decode_release(
        party.train(_train_request(schema, depth_rule="auto", max_depth=8)), schema, ReleasePolicy()
    )
    p = release.params
    assert (p.depth_rule, p.leaf) == ("dp-count", "counts") and p.count_epsilon > 0 and p.max_depth <= 8
    assert party.ledger.remaining() == pytest.approx(1.0)  # the count is inside the request's epsilon

    declared_setup, _ = _write_party(tmp_path / "b", declared_rows=100_000)
    declared = decode_release(
        Party(declared_setup).train(_train_request(schema, depth_rule="auto", max_depth=6)), schema, ReleasePolicy()
    )
    assert (declared.params.depth_rule, declared.params.count_epsilon, declared.params.max_depth) == (
        "declared-size",
        0.0,
        6,
    )  # 100,000 declared rows support the cap


def test_an_evaluation_under_a_used_request_id_is_refused_before_any_row_is_read(party_files, monkeypatch):
    """Otherwise the party read its whole file before its ledger refused the id: a free, repeatable probe of how
    long its data takes to read (its size), for a coordinator resending one evaluation request."""
    setup, schema = party_files
    party = Party(setup)
    model = _model(party, schema)
    party.evaluate(model, EvaluateRequest("run1/1/evaluate", "run1", 0.1, False))
    reads = []
    original = Party._data
    monkeypatch.setattr(Party, "_data", lambda self: reads.append(1) or original(self))
    for request_id in ("run1/1/evaluate", "run1/1/train"):  # an evaluation's id, a release's
        _refused_before_reservation(party, model, "request_id_reused", request_id)
    assert reads == []
    party.evaluate(model, EvaluateRequest("run1/2/evaluate", "run1", 0.1, False))  # a new id is served
    assert reads == [1]


def test_a_host_that_cannot_load_the_exact_samplers_refuses_before_it_spends(party_files, monkeypatch, caplog):
    """Scale review F3: OpenDP's library loaded at the first draw, after the reservation; under a memory limit that
    kept it from mapping, every request spent its epsilon and released nothing."""
    import client._party as party_module

    setup, schema = party_files
    model = _model(Party(setup), schema)  # a model holding this party's release, to evaluate below
    spent = _ledger_entries(setup)
    message = "('Unable to load OpenDP shared library', 'failed to map segment from shared object')"
    monkeypatch.setattr(party_module, "load_exact_samplers", _raising(Exception, message))
    with caplog.at_level(logging.ERROR, logger="edprf"):
        train = handle_train(
            _message(
                "train",
                RecordDict({"request": ConfigRecord(_train_request(schema, request_id="run1/2/train").to_record())}),
            ),
            _context(setup),
        )
        evaluate = handle_evaluate(_evaluate_msg(model), _context(setup))
        query = handle_query(
            _message(
                "query",
                RecordDict({"request": ConfigRecord(_train_request(schema, request_id="run1/3/train").to_record())}),
            ),
            _context(setup),
        )
    for reply in (query, train, evaluate):  # the readiness round says it before any party spends (review F7)
        result = reply.content.config_records["result"]
        assert (result["status"], result["reason"]) == ("refused", "party_setup")
        assert (
            result["message"]
            == "the party cannot load its exact samplers (OpenDP); nothing was spent; details are in its log"
        )
    assert "the exact samplers (OpenDP) cannot be loaded on this host" in caplog.text
    assert _ledger_entries(setup) == spent  # nothing reserved
