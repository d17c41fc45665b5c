"""The party: policy, write-ahead ledger, train and evaluate requests (no network)."""

from __future__ import annotations

import sqlite3
import threading

import numpy as np
import pandas as pd
import pytest

from client import BudgetExhausted, BudgetLedger, Party, PartyPolicy, PartySetup, Refusal, load_policy
from client._party import _release_detail
from edprf_core import EDPRFWarning, load_embedded
from protocol import INSPECTION_POLICY, ReleasePolicy, build_global_model, decode_release, load_global_model
from protocol.messages import EvaluateRequest, TrainRequest


@pytest.fixture
def party_files(tmp_path):
    X, y, schema = load_embedded("wall_robot_navigation")
    schema.save(tmp_path / "schema.toml")
    X.iloc[:1500].assign(Class=y.iloc[:1500].to_numpy()).to_csv(tmp_path / "data.csv", index=False)
    policy = PartyPolicy(
        party_id="hospital-a",
        lifetime_epsilon_cap=1.5,
        max_release_epsilon=1.0,
        max_evaluation_epsilon=0.2,
        schema_fingerprint=schema.fingerprint,
    )
    (tmp_path / "policy.toml").write_text(policy.to_toml())
    setup = PartySetup(
        tmp_path / "data.csv", tmp_path / "schema.toml", tmp_path / "policy.toml", tmp_path / "ledger.sqlite"
    )
    return setup, schema


def _request(schema, request_id="run1/1/train", **kw):
    args = {
        "request_id": request_id,
        "run_id": "run1",
        "schema_fingerprint": schema.fingerprint,
        "epsilon": 1.0,
        "max_depth": 4,
        "n_trees": 2,
        "split_mode": "binary",
        "n_bins": 8,
        "relation": "add-remove",
        "seed": -1,
    }
    args.update(kw)
    return TrainRequest(**args)


def test_policy_round_trip_and_validation(tmp_path):
    policy = PartyPolicy(party_id="p", lifetime_epsilon_cap=3.0)
    (tmp_path / "p.toml").write_text(policy.to_toml())
    assert load_policy(tmp_path / "p.toml") == policy
    (tmp_path / "bad.toml").write_text('party-id = "p"\nlifetime-epsilon-cap = -1.0\n')
    with pytest.raises(ValueError, match="lifetime-epsilon-cap: expected a positive finite number"):
        load_policy(tmp_path / "bad.toml")
    (tmp_path / "unknown.toml").write_text('party-id = "p"\nfavourite-colour = "blue"\n')
    with pytest.raises(ValueError, match="unknown keys"):
        load_policy(tmp_path / "unknown.toml")


def test_defaults_are_conservative():
    p = PartyPolicy(party_id="p")
    assert p.lifetime_epsilon_cap <= 2.0 and p.max_release_epsilon <= 1.0
    assert not p.allow_exact_metrics and not p.allow_seeded_randomness


def test_a_party_whose_ledger_path_is_a_dangling_link_refuses_to_start(party_files, tmp_path):
    """A broken mount where the ledger should be: the party started a new, empty ledger at the link's target."""
    setup, _ = party_files
    target = tmp_path / "mnt" / "ledger.sqlite"
    target.parent.mkdir()
    setup.ledger_path.symlink_to(target)
    with pytest.raises(ValueError, match="the party refuses to serve rather than start a new ledger there") as refused:
        Party(setup)
    assert str(refused.value).startswith(f"ledger {setup.ledger_path} is a symbolic link to {target}, which does not")
    assert not target.exists()


def test_ledger_reserves_before_and_refuses_past_the_cap(tmp_path):
    ledger = BudgetLedger(tmp_path / "l.sqlite", cap=1.0)
    ledger.reserve("a", "release", 0.6)
    with pytest.raises(BudgetExhausted, match="only 0.4 of the lifetime cap 1 remains"):
        ledger.reserve("b", "release", 0.6)
    assert ledger.spent() == pytest.approx(0.6)
    # a crash after the reservation keeps the spend: reopen the file, nothing was released
    again = BudgetLedger(tmp_path / "l.sqlite", cap=1.0)
    assert [(e.request_id, e.state) for e in again.entries()] == [("a", "reserved")]
    with pytest.raises(ValueError, match="already in the ledger"):
        again.reserve("a", "release", 0.1)
    again.fail("a", "crash")
    assert again.spent() == pytest.approx(0.6)


def test_ledger_is_atomic_under_concurrent_requests(tmp_path):
    path = tmp_path / "l.sqlite"
    BudgetLedger(path, cap=1.0)
    results = []

    def spend(i):
        try:
            BudgetLedger(path, cap=1.0).reserve(f"r{i}", "release", 0.3)
            results.append(True)
        except BudgetExhausted:
            results.append(False)

    threads = [threading.Thread(target=spend, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(results) == 3
    assert BudgetLedger(path, cap=1.0).spent() == pytest.approx(0.9)
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT COUNT(*) FROM spends").fetchone()[0] == 3


def test_train_releases_and_records_the_spend(party_files):
    setup, schema = party_files
    party = Party(setup)
    payload = party.train(_request(schema))
    release = decode_release(payload, schema, ReleasePolicy(max_epsilon=1.0))
    assert release.party_id == "hospital-a" and release.forest.n_trees == 2
    entries = party.ledger.entries()
    assert [(e.kind, e.epsilon, e.state) for e in entries] == [("release", 1.0, "released")]
    # the same request again (a retry, or a coordinator resuming under the same tag): the stored
    # release, no new spend, even from another run
    assert party.train(_request(schema)) == payload
    assert party.train(_request(schema, run_id="run-after-crash")) == payload
    assert party.ledger.spent() == pytest.approx(1.0)
    # the same request id with other parameters is not a retry: refused, nothing recorded
    for changed in ({"max_depth": 3}, {"n_trees": 1}, {"epsilon": 0.5}, {"n_bins": 16}):
        with pytest.raises(Refusal, match="served before with other parameters") as exc:
            party.train(_request(schema, **changed))
        assert exc.value.reason == "request_id_reused"
    assert len(party.ledger.entries()) == 1
    # a new request past the cap is refused, data untouched, nothing recorded
    with pytest.raises(Refusal, match="lifetime cap") as exc:
        party.train(_request(schema, request_id="run2/1/train"))
    assert exc.value.reason == "budget_exhausted"
    assert len(party.ledger.entries()) == 1


def test_a_request_another_process_of_the_party_started_is_not_served_twice(party_files):
    """Two SuperNodes serving one party's files get the same request: the one that finds it reserved and not
    released refuses, and says it may still be running elsewhere (not only "interrupted"), spending nothing.
    The text was 212 characters with the request id '2026-02-run-7/train': the coordinator, which keeps 200 of
    a party's text, cut 'stays spent' off (walkthrough); it is now one constant text within them."""
    from server._party_text import MAX_PARTY_TEXT, party_text

    setup, schema = party_files
    first, second = Party(setup), Party(setup)
    req = _request(schema, request_id=f"{'t' * 64}/train")  # the longest request-tag
    first.ledger.reserve(req.request_id, "release", req.epsilon, run_id=req.run_id, detail=_release_detail(req))
    with pytest.raises(Refusal, match="runs in another process of this party") as exc:
        second.train(req)
    assert exc.value.reason == "request_spent"
    kept = party_text(str(exc.value))  # what the coordinator keeps and shows
    assert kept == str(exc.value) and len(kept) <= MAX_PARTY_TEXT and "its epsilon stays spent" in kept
    assert [(e.kind, e.state) for e in second.ledger.entries()] == [("release", "reserved")]
    assert second.ledger.spent() == pytest.approx(1.0)


@pytest.mark.parametrize(
    "kw,reason",
    [
        ({"epsilon": 2.0}, "policy_epsilon"),
        ({"max_depth": 30}, "policy_depth"),
        ({"n_trees": 500}, "policy_trees"),
        ({"seed": 7}, "policy_seed"),
        ({"schema_fingerprint": "sha256:00"}, "schema_mismatch"),
        ({"n_bins": 10_000}, "policy_bins"),
        ({"relation": "replace-one"}, "policy_relation"),
    ],
)
# privacy gate (invariants 4, 5): a seed the policy forbids is refused (mutation campaign 4, M13)
@pytest.mark.privacy
def test_out_of_policy_requests_are_refused_before_spending(party_files, kw, reason):
    setup, schema = party_files
    party = Party(setup)
    with pytest.raises(Refusal) as exc:
        party.train(_request(schema, **kw))
    assert exc.value.reason == reason
    assert party.ledger.entries() == []


def test_non_conforming_rows_are_dropped_locally_and_never_reported(party_files, caplog):
    """Refusing the request would tell the coordinator that such a record exists; the party
    drops the row (a per-record filter, no extra epsilon) and says so in its own log only."""
    setup, schema = party_files
    text = setup.data_path.read_text().splitlines()
    text[5] = text[5].rsplit(",", 1)[0] + ",Secret-Label-Value"
    setup.data_path.write_text("\n".join(text) + "\n")
    party = Party(setup)
    with caplog.at_level("WARNING", logger="edprf.party"):
        payload = party.train(_request(schema))
    assert b"Secret" not in payload
    assert "undeclared class" in caplog.text and "1 rows" in caplog.text
    assert [e.state for e in party.ledger.entries()] == ["released"]


# privacy gate (invariant 1): refusing would tell that no record conforms (mutation campaign 4, M08)
@pytest.mark.privacy
def test_a_party_without_a_usable_row_still_releases(party_files, caplog):
    """Refusing would reveal that the party holds no conforming record; it trains on none."""
    setup, schema = party_files
    header = setup.data_path.read_text().splitlines()[0]
    setup.data_path.write_text(header + "\n")
    party = Party(setup)
    with caplog.at_level("WARNING", logger="edprf.party"):
        payload = party.train(_request(schema))
    release = decode_release(payload, schema, ReleasePolicy(max_epsilon=1.0))
    assert release.forest.n_trees == 2 and "no row conforms" in caplog.text
    assert [(e.kind, e.epsilon, e.state) for e in party.ledger.entries()] == [("release", 1.0, "released")]


def test_a_malformed_csv_line_is_left_out_not_refused(party_files, caplog):
    """One record with an extra field must not fail the whole file: that would reveal it."""
    setup, schema = party_files
    text = setup.data_path.read_text().splitlines()
    text[5] += ",surplus"
    setup.data_path.write_text("\n".join(text) + "\n")
    party = Party(setup)
    with caplog.at_level("WARNING", logger="edprf.party"):
        party.train(_request(schema))
    assert "line 6: 26 fields, expected 25" in caplog.text and "surplus" not in caplog.text
    assert [e.state for e in party.ledger.entries()] == ["released"]


@pytest.mark.privacy  # in the gate: mutation review N05, N14, N16, N17 (stop 55)
def test_missing_data_file_is_refused_before_spending(party_files):
    setup, schema = party_files
    setup.data_path.unlink()
    party = Party(setup)
    with pytest.raises(Refusal) as exc:
        party.train(_request(schema))
    assert exc.value.reason == "invalid_local_data" and str(setup.data_path) not in str(exc.value)
    assert party.ledger.entries() == []


def test_more_rows_than_a_fit_accepts_are_refused_and_paid_for(party_files, monkeypatch):
    """The width limit (MAX_FIT_ROWS) needs the rows read, so it is checked after the reservation (no refusal
    after the read is free: red-team review F1); the fit never starts and the entry is failed, its epsilon spent.
    (Unreachable in practice: memory fails first.)"""
    import client._party as party_module
    from client import EntryState

    setup, schema = party_files
    monkeypatch.setattr(party_module, "MAX_FIT_ROWS", 100)
    party = Party(setup)
    with pytest.raises(Refusal) as exc:
        party.train(_request(schema))
    assert exc.value.reason == "invalid_local_data"
    (entry,) = party.ledger.entries()
    assert entry.state == EntryState.FAILED and entry.epsilon > 0


def test_evaluate_noises_metrics_and_charges_the_ledger(party_files):
    setup, schema = party_files
    party = Party(setup)
    release = decode_release(party.train(_request(schema, epsilon=0.5)), schema, ReleasePolicy())
    model = build_global_model(schema, [release], {"run_id": "run1"})
    metrics = party.evaluate(model, EvaluateRequest("run1/1/evaluate", "run1", 0.2, False))
    assert metrics["exact"] == 0.0 and metrics["epsilon"] == 0.2
    assert [e.kind for e in party.ledger.entries()] == ["release", "evaluation"]
    assert party.ledger.spent() == pytest.approx(0.7)
    with pytest.raises(Refusal) as exc:
        party.evaluate(model, EvaluateRequest("run1/1/evaluate2", "run1", 0.0, True))
    assert exc.value.reason == "policy_exact_metrics"
    with pytest.raises(Refusal) as exc:
        party.evaluate(model, EvaluateRequest("run1/1/evaluate3", "run1", 0.5, False))
    assert exc.value.reason == "policy_evaluation_epsilon"


def test_noised_evaluation_is_unbiased_with_the_stated_scale(party_files):
    """Laplace(2/eps) on each count: the mean over repeats is near the exact count."""
    setup, schema = party_files
    party = Party(setup)
    view = load_global_model(
        build_global_model(schema, [decode_release(party.train(_request(schema)), schema, ReleasePolicy())], {})
    )
    data = party._data()
    exact_total = len(data.y_holdout)
    from edprf_core._mechanisms import LaplaceMechanism

    draws = LaplaceMechanism(2.0).randomise(
        np.tile([0.0, float(exact_total)], (20000, 1)), 0.2, np.random.default_rng(0)
    )
    # Laplace(b = 10): sd of the mean of 20000 draws = sqrt(200 / 20000) = 0.1
    assert abs(draws[:, 1].mean() - exact_total) < 0.5
    assert view.forest.n_trees == 2


def test_holdout_split_is_stable_across_processes(party_files):
    setup, _ = party_files
    a, b = Party(setup)._data(), Party(setup)._data()
    assert a.X_holdout.index.equals(b.X_holdout.index)
    assert 0.1 < len(a.X_holdout) / 1500 < 0.3


def test_setup_from_node_config_and_simulation(tmp_path):
    node = {"data-path": "d.csv", "schema-path": "s.toml", "policy-path": "p.toml", "ledger-path": "l.sqlite"}
    assert PartySetup.from_configs(node, {}).data_path.name == "d.csv"
    sim = PartySetup.from_configs({"partition-id": 3}, {"sim-dir": str(tmp_path)})
    assert sim.data_path == tmp_path / "party-0003" / "data.csv"
    with pytest.raises(ValueError, match="node config"):
        PartySetup.from_configs({}, {})
    _ = INSPECTION_POLICY


def test_a_party_s_clipping_warning_goes_to_its_log_not_to_python_s_warning_output(party_files, caplog, recwarn):
    """Data in other units than the schema (a walkthrough's cholesterol in mmol/L) printed a raw
    DomainClippingWarning with the source path client/_party.py:NNN, once per party."""
    import logging

    setup, schema = party_files
    frame = pd.read_csv(setup.data_path)
    first = schema.features[0].name
    frame[first] = frame[first] * 1000  # far beyond the declared bounds: clipped
    frame.to_csv(setup.data_path, index=False)
    with caplog.at_level(logging.WARNING, logger="edprf.party"):
        Party(setup).train(_request(schema))
    assert not [w for w in recwarn if issubclass(w.category, EDPRFWarning)]
    assert any(
        "training: values outside the schema's declared bounds were clipped" in r.getMessage() for r in caplog.records
    )


def test_a_fit_that_fails_still_logs_the_warnings_it_gave(party_files, caplog, monkeypatch):
    """The warnings may say why the fit failed (review of stop 43: they were dropped when it raised)."""
    import logging
    import warnings

    import client._party as party_module
    from edprf_core import DomainClippingWarning

    class Failing:
        def __init__(self, *args, **kwargs):
            pass

        def fit(self, X, y):
            warnings.warn("values outside the schema's declared bounds were clipped: 'x' 90%", DomainClippingWarning)
            raise RuntimeError("a failure after the warning")

    monkeypatch.setattr(party_module, "_estimator_class", lambda: Failing)
    setup, schema = party_files
    with caplog.at_level(logging.WARNING, logger="edprf.party"), pytest.raises(Refusal) as exc:
        Party(setup).train(_request(schema))
    assert exc.value.reason == "internal_error"
    assert any(r.getMessage().startswith("training: values outside the schema") for r in caplog.records)


def test_a_budget_refusal_says_refused_once(tmp_path):
    """'hospital-a refused: budget_exhausted refused: this release needs ...' (runbook walkthrough)."""
    ledger = BudgetLedger(tmp_path / "l.sqlite", cap=1.0)
    ledger.reserve("r1", "release", 0.6)
    with pytest.raises(BudgetExhausted) as exc:
        ledger.reserve("r2", "release", 0.6)
    assert str(exc.value).startswith("this release needs epsilon 0.6 but only 0.4 of the lifetime cap 1 remains")
