"""Issue 20, items 2, 4 and 5(i): a party's evaluation cost is bounded before anything is decoded or
reserved; ids a reply needs are checked before the reservation; a release resent under a reused
request tag is bound to its party."""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np
import pytest
from flwr.app import ConfigRecord, Context, Message, Metadata, RecordDict
from flwr.clientapp import ClientApp
from flwr.common.constant import SUPERLINK_NODE_ID
from flwr.supercore.run import Run
from flwr.supercore.task_identity import TaskIdentity

import protocol
from client import REASONS, Party, PartyPolicy, PartySetup, Refusal, handle_evaluate, handle_train
from client._evaluation_cost import evaluation_cost
from client.client_app import app as party_app
from edprf_core import load_embedded
from edprf_core.encoding import FeatureGrid
from edprf_fl.simulation._in_process_engine import InProcessGrid
from protocol import (
    bind_to_run,
    bound_to_run,
    generate_signing_key,
    peek_global_model,
    release_pb2,
    save_private_key,
    save_public_key,
)
from protocol.messages import EvaluateRequest, TaskError, TrainRequest
from server import CoordinatorConfig, run_federation
from server._spend_store import SpendStore

WALL = "wall_robot_navigation"


def _write_party(directory, party_id="hospital-a", rows=slice(0, 600), key=None, **policy_kw):
    directory.mkdir(parents=True, exist_ok=True)
    X, y, schema = load_embedded(WALL)
    schema.save(directory / "schema.toml")
    X.iloc[rows].assign(Class=y.iloc[rows].to_numpy()).to_csv(directory / "data.csv", index=False)
    args = {
        "party_id": party_id,
        "lifetime_epsilon_cap": 5.0,
        "max_evaluation_epsilon": 0.2,
        "schema_fingerprint": schema.fingerprint,
        **policy_kw,
    }
    (directory / "policy.toml").write_text(PartyPolicy(**args).to_toml())
    key_path = None
    if key is not None:
        key_path = save_private_key(key, directory / "signing-key.pem")
    return PartySetup(
        directory / "data.csv",
        directory / "schema.toml",
        directory / "policy.toml",
        directory / "ledger.sqlite",
        key_path,
    ), schema


def _train_request(schema, **kw):
    args = {
        "request_id": "run1/train",
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
    return TrainRequest(**{**args, **kw})


def _candidate_splits(codes: np.ndarray, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Features and thresholds of a full binary tree of ``n`` nodes (breadth-first, children ``2i+1``, ``2i+2``)
    whose every split divides the codes its path admits, as honest trees' do (the decoder refuses others)."""
    lo, hi = np.zeros((n, codes.size), dtype=np.int64), np.tile(codes, (n, 1))
    feature, split = np.full(n, -1), np.full(n, -1)
    for i in range((n - 1) // 2):
        f = rng.choice(np.flatnonzero(hi[i] - lo[i] >= 2))
        feature[i], split[i] = f, rng.integers(lo[i, f] + 1, hi[i, f])
        for child in (2 * i + 1, 2 * i + 2):
            lo[child], hi[child] = lo[i], hi[i]
        hi[2 * i + 1, f], lo[2 * i + 2, f] = split[i], split[i]
    return feature, split


def _full_depth8_label_model(schema, template: bytes, n_releases: int) -> bytes:
    """Releases of 50 full depth-8 binary trees on 64 bins with label leaves: inside every default limit."""
    rng = np.random.default_rng(0)
    codes = np.asarray(FeatureGrid.from_schema(schema, 64).n_codes)
    n = 511
    internal = np.arange(n) < 255
    wrapped = []
    for r in range(n_releases):
        release = release_pb2.Release.FromString(release_pb2.SignedRelease.FromString(template).release)
        release.party_id = f"hostile-{r}"
        p = release.parameters
        p.n_trees, p.max_depth, p.n_bins, p.leaf = 50, 8, 64, release_pb2.LEAF_OUTPUT_LABEL
        p.depth_rule, p.count_epsilon = release_pb2.DEPTH_RULE_FIXED, 0.0
        t = release.trees
        for name in ("nodes_per_tree", "feature", "split", "first_child", "leaf_class", "leaf_counts"):
            del getattr(t, name)[:]
        for _ in range(50):
            feature, split = _candidate_splits(codes, n, rng)
            t.nodes_per_tree.append(n)
            t.feature.extend(feature.tolist())
            t.split.extend(split.tolist())
            t.first_child.extend(np.where(internal, 2 * np.arange(n) + 1, -1).tolist())
            t.leaf_class.extend(np.where(internal, -1, rng.integers(0, schema.n_classes, n)).tolist())
        wrapped.append(release_pb2.SignedRelease(release=release.SerializeToString(deterministic=True)))
    return release_pb2.GlobalModel(
        format_version=1, schema_toml=schema.to_toml(), releases=wrapped, manifest_json="{}"
    ).SerializeToString(deterministic=True)


@pytest.fixture(scope="module")
def hostile_model(tmp_path_factory):
    setup, schema = _write_party(tmp_path_factory.mktemp("template"))
    template = Party(setup).train(_train_request(schema))
    return _full_depth8_label_model(schema, template, 2)


# -------------------------------------------------------------- item 2: evaluation cost
def test_a_model_inside_the_default_limits_is_evaluated_with_the_compiled_form_bounded(tmp_path, hostile_model):
    """The shape that took a party to gigabytes (full depth-8 label trees, 64 bins) is evaluated; its prediction
    is routed or compiled within the leaf-mask budget, and the party's estimate bounds what the compiled form holds."""
    setup, schema = _write_party(tmp_path)
    party = Party(setup)
    header = peek_global_model(hostile_model, party.policy.max_evaluation_model_bytes)
    cost = evaluation_cost(header, schema, party.policy)
    assert cost.memory_bytes <= party.policy.max_evaluation_memory_bytes
    result = party.evaluate(hostile_model, EvaluateRequest("run1/evaluate", "run1", 0.1, False))
    assert result["exact"] == 0 and [e.state for e in party.ledger.entries()] == ["released"]
    view = protocol.load_global_model(hostile_model)
    forest = view.forest
    forest.votes(np.zeros((1, len(schema.features))))
    from edprf_core.prediction import leafmask_budget

    compiled = forest._leafmask()
    held = (
        sum(t.nbytes for t in compiled.tables)
        if compiled is not None
        else sum(a.nbytes for a in vars(forest._table()).values() if isinstance(a, np.ndarray))
    )
    assert held <= max(leafmask_budget(forest.trees.n_nodes), 32 * forest.trees.n_nodes)


def test_a_model_whose_estimate_passes_the_memory_limit_is_refused_before_decoding(
    tmp_path, hostile_model, monkeypatch
):
    setup, _ = _write_party(tmp_path, max_evaluation_memory_bytes=64 << 20)
    party = Party(setup)

    def never(*args, **kwargs):
        raise AssertionError("the model was decoded")

    monkeypatch.setattr("client._party.load_global_model", never)
    monkeypatch.setattr(Party, "_data", never)
    with pytest.raises(Refusal) as exc:
        party.evaluate(hostile_model, EvaluateRequest("run1/evaluate", "run1", 0.1, False))
    assert exc.value.reason == "policy_model_nodes" and exc.value.reason in REASONS
    assert "max-evaluation-memory-bytes" in str(exc.value)
    assert party.ledger.entries() == []


def test_the_memory_refusal_does_not_depend_on_the_data(tmp_path, hostile_model):
    """Two parties with other rows (and row counts) give the same refusal, word for word."""
    messages = []
    for name, rows in (("a", slice(0, 600)), ("b", slice(600, 1900))):
        setup, _ = _write_party(tmp_path / name, rows=rows, max_evaluation_memory_bytes=64 << 20)
        with pytest.raises(Refusal) as exc:
            Party(setup).evaluate(hostile_model, EvaluateRequest("run1/evaluate", "run1", 0.1, False))
        messages.append((exc.value.reason, str(exc.value)))
    assert messages[0] == messages[1]


def test_the_estimate_grows_linearly_with_the_header(tmp_path, hostile_model):
    _, schema = _write_party(tmp_path)
    policy = PartyPolicy(party_id="p")
    one = peek_global_model(hostile_model, 1 << 30)
    double = protocol.ModelHeader(
        one.format_version,
        2 * one.n_bytes,
        one.schema_toml_bytes,
        one.schema_fingerprints,
        2 * one.n_releases,
        2 * one.n_trees,
        2 * one.n_nodes,
    )
    a, b = evaluation_cost(one, schema, policy), evaluation_cost(double, schema, policy)
    assert a.memory_bytes < b.memory_bytes <= 2 * a.memory_bytes
    assert b.steps_per_row == 2 * a.steps_per_row


def _header_cost(model, schema):
    header = peek_global_model(model, 1 << 30)
    return header, evaluation_cost(header, schema, PartyPolicy(party_id="p"))


@pytest.mark.parametrize("limit", ["parts", "work"])
def test_a_header_just_over_the_parts_or_work_limit_is_refused_before_decoding_or_reserving(
    tmp_path, hostile_model, monkeypatch, limit
):
    """One unit under what the header needs: refused with a constant reason code, nothing decoded, ledger unchanged."""
    _, schema = _write_party(tmp_path / "probe")
    header, cost = _header_cost(hostile_model, schema)
    needed = header.n_releases if limit == "parts" else cost.work_units
    setup, _ = _write_party(tmp_path, **{f"max_evaluation_{limit}": needed - 1})
    party = Party(setup)

    def never(*args, **kwargs):
        raise AssertionError("the model was decoded or the data read")

    monkeypatch.setattr("client._party.load_global_model", never)
    monkeypatch.setattr(Party, "_data", never)
    before = party.ledger.entries()
    with pytest.raises(Refusal) as exc:
        party.evaluate(hostile_model, EvaluateRequest("run1/evaluate", "run1", 0.1, False))
    assert exc.value.reason == f"policy_model_{limit}" and exc.value.reason in REASONS
    assert f"max-evaluation-{limit}" in str(exc.value)
    assert party.ledger.entries() == before == []


@pytest.mark.parametrize("limit", ["parts", "work"])
def test_a_header_exactly_at_the_parts_or_work_limit_is_evaluated(tmp_path, hostile_model, limit):
    _, schema = _write_party(tmp_path / "probe")
    header, cost = _header_cost(hostile_model, schema)
    needed = header.n_releases if limit == "parts" else cost.work_units
    setup, _ = _write_party(tmp_path, **{f"max_evaluation_{limit}": needed})
    party = Party(setup)
    result = party.evaluate(hostile_model, EvaluateRequest("run1/evaluate", "run1", 0.1, False))
    assert result["exact"] == 0 and [e.state for e in party.ledger.entries()] == ["released"]


def test_the_parts_and_work_refusals_do_not_depend_on_the_data(tmp_path, hostile_model):
    """Parties with other rows (and row counts) give the same refusal, word for word."""
    _, schema = _write_party(tmp_path / "probe")
    header, cost = _header_cost(hostile_model, schema)
    for key, value in (("max_evaluation_parts", header.n_releases - 1), ("max_evaluation_work", cost.work_units - 1)):
        messages = set()
        for name, rows in (("a", slice(0, 600)), ("b", slice(600, 1900))):
            setup, _ = _write_party(tmp_path / f"{key}-{name}", rows=rows, **{key: value})
            with pytest.raises(Refusal) as exc:
                Party(setup).evaluate(hostile_model, EvaluateRequest("run1/evaluate", "run1", 0.1, False))
            messages.add((exc.value.reason, str(exc.value)))
        assert len(messages) == 1


def test_the_default_limits_admit_an_honest_300_party_model_and_bound_the_work_of_any_model_inside_them():
    """Defaults: a 300-party model of the coordinator's default request (one depth-8 tree of 20 bins per party,
    leaf counts) passes parts and work; any header inside the other default limits passes the work limit."""
    _, _, schema = load_embedded(WALL)
    policy = PartyPolicy(party_id="p")
    full_tree = 2**9 - 1
    honest = protocol.ModelHeader(1, 300 * 8_000, 4_000, ("f",), 300, 300, 300 * full_tree)
    assert honest.n_releases <= policy.max_evaluation_parts
    assert evaluation_cost(honest, schema, policy).work_units <= policy.max_evaluation_work
    largest = protocol.ModelHeader(
        1,
        policy.max_evaluation_model_bytes,
        1 << 16,
        ("f",),
        policy.max_evaluation_parts,
        policy.max_evaluation_trees,
        policy.max_evaluation_nodes,
    )
    assert evaluation_cost(largest, schema, policy).work_units <= policy.max_evaluation_work


# ------------------------------------------------------------------- item 4: reply ids
BAD_IDS = ["run\x1b[31mred", "x" * 257, "line\nbreak", "nul\x00", "bidi\u202eevil"]


@pytest.mark.parametrize("bad", BAD_IDS)
@pytest.mark.parametrize("field", ["run-id", "request-id"])
def test_a_request_with_a_malformed_id_is_bad_request_and_spends_nothing(tmp_path, bad, field):
    setup, schema = _write_party(tmp_path)
    record = _train_request(schema).to_record()
    record[field] = bad
    md = Metadata(
        run_id=1,
        message_id="m1",
        src_node_id=0,
        dst_node_id=1,
        reply_to_message_id="",
        group_id="g",
        created_at=time.time(),
        ttl=3600,
        message_type="train",
    )
    node = {
        "data-path": str(setup.data_path),
        "schema-path": str(setup.schema_path),
        "policy-path": str(setup.policy_path),
        "ledger-path": str(setup.ledger_path),
    }
    context = Context(run_id=1, node_id=1, node_config=node, state=RecordDict(), run_config={})
    reply = handle_train(Message(RecordDict({"request": ConfigRecord(record)}), metadata=md), context)
    assert reply.content.config_records["result"]["reason"] == "bad_request"
    eval_record = EvaluateRequest("run1/evaluate", "run1", 0.1, False).to_record()
    eval_record[field] = bad
    md.__dict__["_message_type"] = "evaluate"
    reply = handle_evaluate(
        Message(
            RecordDict({"request": ConfigRecord(eval_record), "model": ConfigRecord({"bytes": b"\x08\x01"})}),
            metadata=md,
        ),
        context,
    )
    assert reply.content.config_records["result"]["reason"] == "bad_request"
    assert Party(setup).ledger.entries() == []


@pytest.mark.parametrize("bad", BAD_IDS)
def test_the_party_itself_refuses_malformed_ids_before_the_reservation(tmp_path, bad):
    """Requests are built with the shared rule; one built around it is still refused by the party."""
    setup, schema = _write_party(tmp_path)
    with pytest.raises(TaskError):
        _train_request(schema, run_id=bad)
    party = Party(setup)
    for req, serve in (
        (_train_request(schema), party.train),
        (EvaluateRequest("run1/evaluate", "run1", 0.1, False), lambda r: party.evaluate(b"", r)),
    ):
        object.__setattr__(req, "run_id", bad)
        with pytest.raises(Refusal) as exc:
            serve(req)
        assert exc.value.reason == "bad_request" and bad not in str(exc.value)
    assert party.ledger.entries() == []


def test_an_unloadable_signing_key_is_refused_before_the_reservation(tmp_path):
    setup, schema = _write_party(tmp_path, key=generate_signing_key("ed25519"))
    setup.signing_key_path.write_text("not a key")
    with pytest.raises(Refusal) as exc:
        Party(setup).train(_train_request(schema))
    assert exc.value.reason == "party_setup"
    assert Party(setup).ledger.entries() == []


def test_a_request_past_the_budget_is_refused_before_any_row_is_read(tmp_path, monkeypatch, hostile_model):
    """The refusal read the whole data file first (0.04 s for 500 rows, 0.35 s for 200,000): once the budget was
    spent, free requests could time it to follow the row count.  Now the ledger alone decides it."""
    setup, schema = _write_party(tmp_path, lifetime_epsilon_cap=1.0, max_evaluation_epsilon=0.2)
    party = Party(setup)
    party.train(_train_request(schema, epsilon=1.0))
    read = []
    monkeypatch.setattr(Party, "_data", lambda self: read.append(1) or pytest.fail("the data file was read"))
    with pytest.raises(Refusal) as train:
        Party(setup).train(_train_request(schema, request_id="run2/train", run_id="run2", epsilon=0.5))
    with pytest.raises(Refusal) as evaluate:
        Party(setup).evaluate(hostile_model, EvaluateRequest("run2/evaluate", "run2", 0.1, False))
    assert train.value.reason == "budget_exhausted" and "only 0 of the lifetime cap 1 remains" in str(train.value)
    assert evaluate.value.reason == "budget_exhausted" and not read


# ------------------------------------------ registration: a wrong party-id or key is refused before any charge
def _registered(**keys):
    return protocol.registration_text({party: key.public_key() for party, key in keys.items()})


def test_a_party_the_coordinator_did_not_register_refuses_before_the_reservation(tmp_path):
    """A typo in party-id (hospital-E) or another party's signing key passed the party check, charged the ledger,
    and the coordinator then rejected the release: the epsilon was burnt for nothing."""
    mine, theirs = generate_signing_key("ed25519"), generate_signing_key("p384")
    registered = _registered(**{"hospital-e": mine, "hospital-f": theirs})
    cases = {
        "typo": ("hospital-E", mine, "party-id 'hospital-E' is not one of the 2 parties the coordinator registered"),
        "other key": ("hospital-e", theirs, "the signing key is not the one the coordinator registered for this"),
        "no key": ("hospital-e", None, "has no signing-key"),
    }
    for case, (party_id, key, message) in cases.items():
        setup, schema = _write_party(tmp_path / case.replace(" ", "-"), party_id=party_id, key=key)
        with pytest.raises(Refusal) as exc:
            Party(setup).train(_train_request(schema, registered_parties=registered))
        assert exc.value.reason == "not_registered" and message in str(exc.value), case
        assert Party(setup).ledger.entries() == [], case
    setup, schema = _write_party(tmp_path / "right", party_id="hospital-e", key=mine)
    assert Party(setup).train(_train_request(schema, registered_parties=registered))
    assert [e.kind for e in Party(setup).ledger.entries()] == ["release"]


def test_the_registration_list_names_no_party_and_is_checked_on_arrival(tmp_path):
    key = generate_signing_key("ed25519")
    text = _registered(**{"hospital-a": key})
    assert "hospital" not in text and len(text) == 65
    _, schema = _write_party(tmp_path)
    record = _train_request(schema, registered_parties=text).to_record()
    assert TrainRequest.from_record(record).registered_parties == text
    del record["registered-parties"]  # a coordinator before this key: no check
    assert TrainRequest.from_record(record).registered_parties == ""
    for bad in ("hospital-a", text + ",", text.upper(), 5):
        with pytest.raises(TaskError, match="registered-parties"):
            TrainRequest.from_record({**record, "registered-parties": bad})


def test_a_run_refuses_an_unregistered_party_before_it_spends(tmp_path, coordinator_identity):
    """Through the coordinator: the request carries the registered parties; the party with a typo in its
    party-id refuses (not_registered), its ledger stays empty, and the others are accepted."""
    keys = {p: generate_signing_key("ed25519") for p in ("hospital-a", "hospital-b")}
    keys_dir = tmp_path / "keys"
    keys_dir.mkdir()
    nodes = {}
    for i, (party, key) in enumerate(keys.items()):
        save_public_key(key.public_key(), keys_dir / f"{party}.pub.pem")
        claimed = "hospital-B" if party == "hospital-b" else party  # the typo
        setup, _ = _write_party(tmp_path / party, party_id=claimed, rows=slice(600 * i, 600 * (i + 1)), key=key)
        nodes[10 + i] = setup
    cfg = CoordinatorConfig(
        schema_path=str(tmp_path / "hospital-a" / "schema.toml"),
        keys_dir=str(keys_dir),
        evaluation_epsilon=0.0,
        max_depth=3,
        n_bins=8,
        min_parties=1,
        output_dir=str(tmp_path / "out"),
        node_wait_timeout=1.0,
    )
    config = {
        node: {
            "data-path": str(s.data_path),
            "schema-path": str(s.schema_path),
            "policy-path": str(s.policy_path),
            "ledger-path": str(s.ledger_path),
            "signing-key": str(s.signing_key_path),
        }
        for node, s in nodes.items()
    }
    grid = InProcessGrid(
        Run.create_empty(run_id=1),
        {
            n: (party_app, Context(run_id=1, node_id=n, node_config=c, state=RecordDict(), run_config={}))
            for n, c in config.items()
        },
    )
    report = run_federation(grid, cfg, "run-1")
    outcomes = {p.node_id: p for p in report.parties}
    assert outcomes[10].status == "accepted"
    assert (outcomes[11].status, outcomes[11].reason) == ("refused", "not_registered")
    assert "hospital-B" in outcomes[11].message and outcomes[11].rejected_release_epsilon == 0.0
    assert Party(nodes[11]).ledger.entries() == []


# -------------------------------------------------------- item 5(i): resumed releases
@pytest.mark.privacy  # in the gate: mutation campaign 3 (stop 56)
def test_a_binding_verifies_only_for_its_party_release_and_run():
    keys = {p: generate_signing_key("ed25519") for p in ("hospital-a", "hospital-b")}
    registry = protocol.PartyKeyRegistry({p: k.public_key() for p, k in keys.items()})
    release = b"release bytes"
    binding = bind_to_run(release, "run-2", keys["hospital-b"])
    assert bound_to_run(release, "run-2", binding, "hospital-b", registry)
    assert not bound_to_run(release, "run-3", binding, "hospital-b", registry)
    assert not bound_to_run(b"other", "run-2", binding, "hospital-b", registry)
    assert not bound_to_run(release, "run-2", bind_to_run(release, "run-2", keys["hospital-a"]), "hospital-b", registry)
    for junk in (b"", b"\xff\x00", "text", None):
        assert not bound_to_run(release, "run-2", junk, "hospital-b", registry)


def _copy_of(stored: bytes | str):
    """A ClientApp that answers every train request with another party's stored release (and no binding), or with
    whatever ``stored`` is."""
    hostile = ClientApp()

    @hostile.train()
    def train(msg: Message, context: Context) -> Message:
        record = ConfigRecord({"status": "released", "release": stored})
        return Message(RecordDict({"result": record}), reply_to=msg)

    return hostile


@pytest.fixture
def coordinator_identity():
    """What the in-process engine sets while a ServerApp runs (messages carry the run id)."""
    saved = (TaskIdentity._run_id, TaskIdentity._node_id, TaskIdentity._task_id)
    TaskIdentity.run_id, TaskIdentity.node_id, TaskIdentity.task_id = 1, SUPERLINK_NODE_ID, 1
    yield
    TaskIdentity._run_id, TaskIdentity._node_id, TaskIdentity._task_id = saved


@pytest.mark.privacy  # in the gate: mutation campaign 3 (stop 56)
def test_a_copied_release_cannot_take_a_party_s_place_when_a_run_is_resumed(tmp_path, coordinator_identity):
    keys = {p: generate_signing_key(kind) for p, kind in (("hospital-a", "ed25519"), ("hospital-b", "p384"))}
    keys_dir = tmp_path / "keys"
    keys_dir.mkdir()
    contexts = {}
    for i, (party, key) in enumerate(keys.items()):
        save_public_key(key.public_key(), keys_dir / f"{party}.pub.pem")
        setup, _ = _write_party(tmp_path / party, party_id=party, rows=slice(600 * i, 600 * (i + 1)), key=key)
        node = {
            "data-path": str(setup.data_path),
            "schema-path": str(setup.schema_path),
            "policy-path": str(setup.policy_path),
            "ledger-path": str(setup.ledger_path),
            "signing-key": str(setup.signing_key_path),
        }
        contexts[party] = node
    cfg = CoordinatorConfig(
        schema_path=str(tmp_path / "hospital-a" / "schema.toml"),
        keys_dir=str(keys_dir),
        request_tag="tag-1",
        evaluation_epsilon=0.0,
        max_depth=3,
        n_bins=8,
        output_dir=str(tmp_path / "out-1"),
        node_wait_timeout=1.0,
    )

    def grid(extra=None):
        nodes = {
            10 + i: (party_app, Context(run_id=1, node_id=10 + i, node_config=node, state=RecordDict(), run_config={}))
            for i, node in enumerate(contexts.values())
        }
        if extra is not None:
            nodes[1] = (extra, Context(run_id=1, node_id=1, node_config={}, state=RecordDict(), run_config={}))
        return InProcessGrid(Run.create_empty(run_id=1), nodes)

    first = run_federation(grid(), cfg, "run-1")
    assert first.status == "completed" and sorted(p.party_id for p in first.parties) == ["hospital-a", "hospital-b"]
    view = protocol.load_global_model(first.model_path)
    stored_b = next(r.raw for r in view.releases if r.party_id == "hospital-b")
    # the coordinator resumes under the same tag; node 1 (served first) sends hospital-b's stored release
    resumed = run_federation(
        grid(_copy_of(stored_b)), CoordinatorConfig(**{**vars(cfg), "output_dir": str(tmp_path / "out-2")}), "run-2"
    )
    outcomes = {p.node_id: p for p in resumed.parties}
    assert outcomes[1].status == "rejected" and outcomes[1].reason == "replayed_release"
    # the relaying node is not named after the party whose release it relayed (hostile-party review: the report
    # said 'hospital-b: rejected (replayed_release)' and pointed at the victim)
    assert outcomes[1].party_id == "" and outcomes[1].message.endswith("(a release signed by hospital-b)")
    assert outcomes[1].rejected_release_epsilon == cfg.epsilon  # a release came: the report says what it may have cost
    assert all(p.rejected_release_epsilon == 0.0 for p in resumed.parties if p.status == "accepted")
    assert sorted(p.party_id for p in resumed.parties if p.status == "accepted") == ["hospital-a", "hospital-b"]
    assert resumed.status == "completed"
    # a reply that says released with no release bytes: named as that (it read 'unknown_version: format_version
    # expected 2, got 0', the decoder's text for empty bytes)
    empty = run_federation(
        grid(_copy_of("not bytes")), CoordinatorConfig(**{**vars(cfg), "output_dir": str(tmp_path / "out-3")}), "run-3"
    )
    # hospital-b absent, its old release relayed by node 1: the report lists hospital-b as not heard from
    del contexts["hospital-b"]
    relayed = run_federation(
        grid(_copy_of(stored_b)),
        CoordinatorConfig(**{**vars(cfg), "output_dir": str(tmp_path / "out-4"), "min_parties": 1}),
        "run-4",
    )
    assert relayed.absent_parties == ["hospital-b"], relayed.absent_parties
    odd = next(p for p in empty.parties if p.node_id == 1)
    assert (odd.status, odd.reason) == ("rejected", "malformed"), odd
    assert odd.message == "the reply says released but carries no release bytes (got str)"


# -------------------------------------------------------- the spend record counts refused signed releases
def _asks_for_more(setup: PartySetup, epsilon: float):
    """A ClientApp that has its party train at ``epsilon`` whatever the coordinator asked (a modified app)."""
    greedy = ClientApp()

    @greedy.train()
    def train(msg: Message, context: Context) -> Message:
        request = TrainRequest.from_record(dict(msg.content.config_records["request"]))
        payload = Party(setup).train(replace(request, epsilon=epsilon))
        return Message(RecordDict({"result": ConfigRecord({"status": "released", "release": payload})}), reply_to=msg)

    return greedy


@pytest.mark.privacy  # in the gate: mutation campaign 3 (stop 56)
def test_a_signed_release_the_coordinator_refuses_still_counts_in_its_spend_record(tmp_path, coordinator_identity):
    """hospital-b's app trains at epsilon 2 when the run asks 1: its ledger charges 2, the coordinator's policy
    refuses the release (policy_epsilon), and the spend record keeps the 2 its signature shows; hospital-a's
    accepted release is recorded at 1."""
    keys = {p: generate_signing_key("ed25519") for p in ("hospital-a", "hospital-b")}
    keys_dir = tmp_path / "keys"
    keys_dir.mkdir()
    setups = {}
    for i, (party, key) in enumerate(keys.items()):
        save_public_key(key.public_key(), keys_dir / f"{party}.pub.pem")
        setups[party], _ = _write_party(
            tmp_path / party, party_id=party, rows=slice(600 * i, 600 * (i + 1)), key=key, max_release_epsilon=2.0
        )
    a = setups["hospital-a"]
    node_a = {
        "data-path": str(a.data_path),
        "schema-path": str(a.schema_path),
        "policy-path": str(a.policy_path),
        "ledger-path": str(a.ledger_path),
        "signing-key": str(a.signing_key_path),
    }
    cfg = CoordinatorConfig(
        schema_path=str(a.schema_path),
        keys_dir=str(keys_dir),
        evaluation_epsilon=0.0,
        max_depth=3,
        n_bins=8,
        min_parties=1,
        output_dir=str(tmp_path / "runs" / "run-1"),
        node_wait_timeout=1.0,
    )
    grid = InProcessGrid(
        Run.create_empty(run_id=1),
        {
            10: (party_app, Context(run_id=1, node_id=10, node_config=node_a, state=RecordDict(), run_config={})),
            11: (
                _asks_for_more(setups["hospital-b"], 2.0),
                Context(run_id=1, node_id=11, node_config={}, state=RecordDict(), run_config={}),
            ),
        },
    )
    report = run_federation(grid, cfg, "run-1")
    outcomes = {p.node_id: p for p in report.parties}
    assert outcomes[10].status == "accepted"
    assert (outcomes[11].status, outcomes[11].reason) == ("rejected", "policy_epsilon")
    assert "(signed by hospital-b, charged epsilon 2)" in outcomes[11].message
    assert outcomes[11].rejected_release_epsilon == 2.0  # what its signature shows, not the run's epsilon
    assert Party(setups["hospital-b"]).ledger.spent() == 2
    registry = protocol.PartyKeyRegistry({p: k.public_key() for p, k in keys.items()})
    store = SpendStore(cfg.spend_record_file, {p: registry.key_id(p) for p in registry})
    assert store.totals() == {"hospital-a": 1, "hospital-b": 2}


# -------------------------------------------------------- a seeded evaluation of resent unseeded releases
@pytest.mark.privacy  # the printed NOT DP (mutation campaign 3, K19: seed 0 taken for no seed; stop 56)
@pytest.mark.parametrize("seed", [0, 3])
def test_a_seeded_evaluation_of_resent_releases_makes_the_guarantee_say_not_dp(tmp_path, coordinator_identity, seed):
    """A run resumed under a reused request-tag gets the parties' stored unseeded releases back, so the model's own
    statement is DP; if that run sends a seed, the parties (whose policy allows seeds) noise their held-out counts
    with it, and whoever knows it removes the noise.  The run's guarantee said epsilon-DP all the same."""
    contexts = {}
    for i, party in enumerate(("hospital-a", "hospital-b")):
        rows = slice(600 * i, 600 * (i + 1))
        setup, _ = _write_party(tmp_path / party, party_id=party, rows=rows, allow_seeded_randomness=True)
        contexts[party] = {
            "data-path": str(setup.data_path),
            "schema-path": str(setup.schema_path),
            "policy-path": str(setup.policy_path),
            "ledger-path": str(setup.ledger_path),
        }
    first_cfg = CoordinatorConfig(
        schema_path=str(tmp_path / "hospital-a" / "schema.toml"),
        request_tag="tag-1",
        evaluation_epsilon=0.0,
        max_depth=3,
        n_bins=8,
        output_dir=str(tmp_path / "out-1"),
        node_wait_timeout=1.0,
    )

    def grid():
        nodes = {
            10 + i: (party_app, Context(run_id=1, node_id=10 + i, node_config=node, state=RecordDict(), run_config={}))
            for i, node in enumerate(contexts.values())
        }
        return InProcessGrid(Run.create_empty(run_id=1), nodes)

    first = run_federation(grid(), first_cfg, "run-1")
    assert first.status == "completed" and "NOT" not in first.guarantee
    resumed_cfg = replace(
        first_cfg,
        output_dir=str(tmp_path / "out-2"),
        seed=seed,
        evaluate_resumed=True,
        evaluation_epsilon=0.1,
        evaluation_max_interval_width=1.0,  # always evaluate
    )
    resumed = run_federation(grid(), resumed_cfg, "run-2")
    assert resumed.status == "completed"
    assert all(p.resumed_from_run for p in resumed.accepted)  # the unseeded releases of run-1, resent
    assert resumed.federated_evaluation["parties"] == 2
    assert resumed.guarantee.startswith("NOT differentially private: 2 of 2 parties were asked to noise their held-out")
    assert "whoever knows the seed can remove that noise" in resumed.guarantee
