"""Empirical audit of the evaluation counts a party returns, through its real Flower handler.

The pair: a fixed global model (trained beforehand on public rows, seeded)
that predicts class 0 for ``f1 = 0`` and 1 for ``f1 = 1``; the party's file holds
D = 10 rows, first 4 ``(f1=1, y=1)`` then 6 ``(f1=0, y=0)`` (both labels, the
file's first one not the schema's first class), all on the held-out side (the
keyed hash of equal rows is equal; the salt in the party's ledger is chosen so
that they are held out), and D' one more ``(f1=0, y=0)`` row: every row is
classified correctly, so ``correct`` and ``total`` both move by 1, the L1
sensitivity 2 the party's noise is scaled for.  The event: both released
counts at most their value on D (probability ``(1/(1+a))**2`` on D and
``(a/(1+a))**2`` on D', ``a = e^(-eps/2)``: a log-ratio of exactly eps).

Every request goes through :func:`client._flower_handlers.handle_evaluate`
(a new :class:`client.Party` per message: policy, schema, ledger, data file,
keyed held-out split, the model's checks, the ledger reservation, OpenDP's
exact sampler), at about 50 ms a request.  That is too slow for the sample
sizes the half-noise power check needs, so the audit has two parts:

- end to end: a few hundred requests, the bound must stay below ε, and a party
  whose sampler adds no noise is caught;
- replay: one request on D and one on D' with the party's noise call recorded
  (``client._party.discrete_laplace_counts``); the reply must be exactly what
  that call returned, on exactly the counts of the pair; then the recorded call,
  with the arguments the party gave it, is drawn again at the full sample
  sizes: bound <= ε when honest, > ε with OpenDP's noise halved behind an
  honest-looking privacy map.  A party that draws its noise some other way
  fails here (no recorded call) rather than passing unaudited.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from flwr.app import ConfigRecord, Context, Message, MessageType, RecordDict

import client._party as party_module
from client import HOLDOUT_SALT_KEY, BudgetLedger, PartyPolicy, PartySetup, handle_evaluate
from client._local_data import load_local_data
from edprf_core import EDPRFClassifier
from protocol import ReleasePolicy, build_global_model, decode_release, encode_release
from protocol.messages import METRICS_KEY, MODEL_KEY, REQUEST_KEY, RESULT_KEY, EvaluateRequest

from ._audit import (
    ALPHA,
    BETA,
    AuditResult,
    assured_lower_bound,
    discrete_laplace_tail_law,
    noiseless_size,
    opendp_noise_scaled,
)
from ._audit_rows import LEAF_SCHEMA, rows
from ._party_requests import flower_task_identity  # noqa: F401 (a fixture)

pytestmark = [pytest.mark.privacy, pytest.mark.usefixtures("flower_task_identity")]

EPSILON = 1.5
"""ε of each evaluation request (the party's policy allows it)."""
HELD_OUT = 10
"""Rows of D, all held out and classified correctly: the released counts are ``(10, 10)`` plus noise."""
LABEL_ONE = 4
"""D's first rows, of label 1 (the rest label 0)."""
END_TO_END_RUNS = 120
"""Requests per side through the handler (honest bound, and the no-noise check)."""
REPLAY_A, REPLAY_B = 571, 1142
"""Replayed draws on D and D' (the smallest sizes with power >= 1 - BETA at half noise, see the size test)."""


@pytest.fixture(scope="module")
def model() -> bytes:
    """A global model fixed in advance (public rows, a research seed) that says class 0 when f1 = 0, 1 when 1."""
    X, y = rows(LEAF_SCHEMA, (200, (0, 0)), (200, (1, 1)))
    clf = EDPRFClassifier(  # released like a party's fit: histograms only, no residual pass
        LEAF_SCHEMA, epsilon=8.0, n_trees=1, max_depth=1, n_bins=2, random_state=0, residual_pass=False
    ).fit(X, y)
    assert list(clf.predict(pd.DataFrame({"f1": [0, 1]}))) == [0, 1]
    release = decode_release(encode_release(clf.forest_, "model-owner"), LEAF_SCHEMA, ReleasePolicy(max_epsilon=8.0))
    return build_global_model(LEAF_SCHEMA, [release], {"run_id": "audit"})


def _write_data(path: Path, n_rows: int) -> None:
    """``LABEL_ONE`` rows ``(f1=1, y=1)``, then ``(f1=0, y=0)`` up to ``n_rows``: the file shows class 1 first."""
    X, y = rows(LEAF_SCHEMA, (LABEL_ONE, (1, 1)), (n_rows - LABEL_ONE, (0, 0)))
    X.assign(y=y.to_numpy()).to_csv(path, index=False)


@pytest.fixture(scope="module")
def salt(tmp_path_factory) -> str:
    """A held-out salt that puts the audit rows on the held-out side (the first that does, of fixed candidates)."""
    path = tmp_path_factory.mktemp("salt") / "data.csv"
    _write_data(path, HELD_OUT + 1)
    for i in range(100):
        candidate = f"{i:016x}" * 2  # the split is keyed by the first 16 characters
        if len(load_local_data(path, LEAF_SCHEMA, 0.5, candidate).y_holdout) == HELD_OUT + 1:
            return candidate
    raise AssertionError("no candidate salt holds the audit rows out")


def _party(directory: Path, n_rows: int, salt: str) -> PartySetup:
    directory.mkdir(parents=True, exist_ok=True)
    LEAF_SCHEMA.save(directory / "schema.toml")
    policy = PartyPolicy(
        party_id="audited",
        lifetime_epsilon_cap=1e6,
        max_evaluation_epsilon=EPSILON,
        schema_fingerprint=LEAF_SCHEMA.fingerprint,
        holdout_fraction=0.5,
    )
    (directory / "policy.toml").write_text(policy.to_toml(), encoding="utf-8")
    _write_data(directory / "data.csv", n_rows)
    setup = PartySetup(
        directory / "data.csv", directory / "schema.toml", directory / "policy.toml", directory / "ledger.sqlite"
    )
    assert BudgetLedger(setup.ledger_path, policy.lifetime_epsilon_cap).secret(HOLDOUT_SALT_KEY, lambda: salt) == salt
    return setup


def _evaluate(setup: PartySetup, model: bytes, request_id: str) -> tuple[int, int]:
    """One evaluate message through the party's Flower handler; the released (correct, total)."""
    req = EvaluateRequest(request_id=request_id, run_id="audit", epsilon=EPSILON, exact=False)
    content = RecordDict({REQUEST_KEY: ConfigRecord(req.to_record()), MODEL_KEY: ConfigRecord({"bytes": model})})
    node_config = {
        "data-path": str(setup.data_path),
        "schema-path": str(setup.schema_path),
        "policy-path": str(setup.policy_path),
        "ledger-path": str(setup.ledger_path),
    }
    reply = handle_evaluate(
        Message(content=content, dst_node_id=2, message_type=MessageType.EVALUATE),
        Context(run_id=1, node_id=2, node_config=node_config, state=RecordDict(), run_config={}),
    )
    result = dict(reply.content.config_records[RESULT_KEY])
    assert result["status"] == "evaluated", result
    metrics = dict(reply.content.metric_records[METRICS_KEY])
    return int(metrics["correct"]), int(metrics["total"])


def _in_event(counts: tuple[int, int] | np.ndarray) -> bool:
    return bool(counts[0] <= HELD_OUT and counts[1] <= HELD_OUT)


@pytest.fixture
def parties(tmp_path, salt) -> tuple[PartySetup, PartySetup]:
    return _party(tmp_path / "d", HELD_OUT, salt), _party(tmp_path / "d-prime", HELD_OUT + 1, salt)


def _end_to_end(parties, model, n: int) -> AuditResult:
    d, d_prime = parties
    hits_a = sum(_in_event(_evaluate(d, model, f"audit/{i}")) for i in range(n))
    hits_b = sum(_in_event(_evaluate(d_prime, model, f"audit/{i}")) for i in range(n))
    return AuditResult("evaluation counts (handler)", EPSILON, hits_a, n, hits_b, n, ALPHA)


def _recorded_noise_call(monkeypatch, setup: PartySetup, model: bytes, expected: tuple[int, int]):
    """One request with the party's noise call recorded; checks the reply is that call's output."""
    calls = []
    original = party_module.discrete_laplace_counts

    def record(*args, **kwargs):
        out = original(*args, **kwargs)
        calls.append((args, kwargs, np.array(out)))
        return out

    monkeypatch.setattr(party_module, "discrete_laplace_counts", record)
    released = _evaluate(setup, model, "audit/recorded")
    monkeypatch.setattr(party_module, "discrete_laplace_counts", original)
    assert len(calls) == 1, "the party must draw its evaluation noise with one discrete_laplace_counts call"
    args, kwargs, out = calls[0]
    assert list(np.asarray(args[0])) == list(expected), "the pair is not the one audited (rows not held out?)"
    assert released == tuple(int(v) for v in out), "the reply is not the output of the party's noise call"
    return lambda: original(*args, **kwargs)


def _replay(monkeypatch, parties, model) -> AuditResult:
    d, d_prime = parties
    draw_a = _recorded_noise_call(monkeypatch, d, model, (HELD_OUT, HELD_OUT))
    draw_b = _recorded_noise_call(monkeypatch, d_prime, model, (HELD_OUT + 1, HELD_OUT + 1))
    hits_a = sum(_in_event(draw_a()) for _ in range(REPLAY_A))
    hits_b = sum(_in_event(draw_b()) for _ in range(REPLAY_B))
    return AuditResult("evaluation counts (replayed party call)", EPSILON, hits_a, REPLAY_A, hits_b, REPLAY_B, ALPHA)


def test_the_noise_is_drawn_on_the_counts_of_d_and_d_prime(monkeypatch, parties, model):
    """The party's one noise call gets ``(10, 10)`` on D and ``(11, 11)`` on D' (each row's label counted as the
    schema's class, not by the order the file shows the classes in: mutation campaign 4, M09), and replies its
    output; the pair the statistical tests below audit."""
    d, d_prime = parties
    _recorded_noise_call(monkeypatch, d, model, (HELD_OUT, HELD_OUT))
    _recorded_noise_call(monkeypatch, d_prime, model, (HELD_OUT + 1, HELD_OUT + 1))


def test_replay_sizes_give_the_claimed_power():
    honest = discrete_laplace_tail_law(2 / EPSILON, coordinates=2)
    assert np.log(honest[0] / honest[1]) == pytest.approx(EPSILON)
    p, q = discrete_laplace_tail_law(1 / EPSILON, coordinates=2)  # half the noise scale
    assert assured_lower_bound(p, q, REPLAY_A, REPLAY_B, ALPHA, BETA) > EPSILON


@pytest.mark.slow
def test_evaluation_counts_stay_within_epsilon(monkeypatch, parties, model, record_property):
    for result in (_end_to_end(parties, model, END_TO_END_RUNS), _replay(monkeypatch, parties, model)):
        print(f"[honest] {result}")
        record_property(f"honest: {result.name}", f"{result.lower_bound:.4f}")
        assert result.lower_bound <= EPSILON, str(result)


@pytest.mark.slow
def test_audit_catches_evaluation_noise_at_half_scale(monkeypatch, parties, model, record_property):
    with opendp_noise_scaled(0.5):
        result = _replay(monkeypatch, parties, model)
    print(f"[half noise] {result}")
    record_property(f"half noise: {result.name}", f"{result.lower_bound:.4f}")
    assert result.lower_bound > EPSILON, str(result)


@pytest.mark.slow
def test_audit_catches_evaluation_counts_without_noise(parties, model, record_property):
    with opendp_noise_scaled(0.0):
        result = _end_to_end(parties, model, noiseless_size(EPSILON))
    print(f"[no noise] {result}")
    record_property(f"no noise: {result.name}", f"{result.lower_bound:.4f}")
    assert result.lower_bound > EPSILON, str(result)
