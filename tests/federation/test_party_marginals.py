"""The party's handling of the marginals part of a train request (two classes, no network).

The coordinator fixes one share and one grid for the consortium; a party fits with exactly those (never the
estimator's own rule, which would pick its own), refuses a grid above its policy before any reservation,
treats a request without the keys as trees only, and charges its ledger the request's ε once for both parts.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from client import Party, PartyPolicy, PartySetup, Refusal, load_policy
from edprf_core import load_embedded
from protocol import ReleasePolicy, decode_release
from protocol.messages import TaskError, TrainRequest

from .test_party_eval_bounds import _train_request


@pytest.fixture
def bank_party(tmp_path):
    X, y, schema = load_embedded("bank_marketing")
    schema.save(tmp_path / "schema.toml")
    X.iloc[:3000].assign(**{schema.label.column: y.iloc[:3000].to_numpy()}).to_csv(tmp_path / "data.csv", index=False)
    policy = PartyPolicy(party_id="clinic-b", lifetime_epsilon_cap=2.0, max_n_bins=16)
    (tmp_path / "policy.toml").write_text(policy.to_toml())
    setup = PartySetup(
        tmp_path / "data.csv", tmp_path / "schema.toml", tmp_path / "policy.toml", tmp_path / "ledger.sqlite"
    )
    return setup, schema


def _refusing_marginals(setup: PartySetup) -> PartySetup:
    """The fixture's party, its policy changed in one key: ``allow-marginals = false``."""
    setup.policy_path.write_text(replace(load_policy(setup.policy_path), allow_marginals=False).to_toml())
    return setup


def _request(schema, **kw) -> TrainRequest:
    return _train_request(schema, max_depth=3, **kw)


def test_the_party_releases_the_requested_share_and_grid_for_one_charge(bank_party):
    setup, schema = bank_party
    party = Party(setup)
    release = decode_release(
        party.train(_request(schema, marginals_share=0.5, marginals_bins=5)), schema, ReleasePolicy()
    )
    assert (release.params.marginals_share, release.params.marginals_bins) == (0.5, 5)
    assert release.forest.marginals is not None and release.forest.marginals.epsilon == release.params.forest_epsilon
    assert release.params.sampler == "exact" and release.params.dp
    (entry,) = party.ledger.entries()
    assert entry.epsilon == 1.0 and "marginals 0.5 of the rows on 5 bins" in entry.detail
    assert party.ledger.spent() == pytest.approx(1.0)  # both parts, disjoint rows: epsilon once


def test_a_request_without_marginals_keys_gets_trees_only_even_for_two_classes(bank_party):
    """The estimator's default would build a marginals part for two classes; the party never uses it."""
    setup, schema = bank_party
    record = _request(schema).to_record()
    del record["marginals-share"], record["marginals-bins"]  # a coordinator from before these keys
    request = TrainRequest.from_record(record)
    assert (request.marginals_share, request.marginals_bins) == (0.0, 0)
    release = decode_release(Party(setup).train(request), schema, ReleasePolicy())
    assert release.forest.marginals is None and release.params.marginals_share == 0


def test_a_grid_above_the_policy_is_refused_before_any_reservation(bank_party):
    setup, schema = bank_party
    party = Party(setup)
    with pytest.raises(Refusal) as exc:
        party.train(_request(schema, marginals_share=0.5, marginals_bins=17))
    assert exc.value.reason == "policy_bins" and "marginals grid of 17 bins" in str(exc.value)
    assert party.ledger.entries() == [] and party.ledger.spent() == 0


def test_a_reused_request_id_with_another_marginals_part_is_refused(bank_party):
    setup, schema = bank_party
    party = Party(setup)
    party.train(_request(schema, marginals_share=0.5, marginals_bins=5))
    with pytest.raises(Refusal) as exc:
        party.train(_request(schema, marginals_share=0.25, marginals_bins=5))
    assert exc.value.reason == "request_id_reused"
    assert party.ledger.spent() == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("share", "bins"),
    [(0.5, 0), (0.0, 5), (0.5, 1), (1.0, 5), (-0.1, 5)],
    ids=["no-grid", "grid-no-share", "one-bin", "all", "neg"],
)
def test_inconsistent_marginals_keys_are_a_bad_request(bank_party, share, bins):
    _, schema = bank_party
    record = _request(schema).to_record() | {"marginals-share": share, "marginals-bins": bins}
    with pytest.raises(TaskError, match="marginals"):
        TrainRequest.from_record(record)


def test_a_party_that_releases_trees_only_refuses_a_marginals_part_before_any_reservation(bank_party):
    setup, schema = bank_party
    party = Party(_refusing_marginals(setup))
    with pytest.raises(Refusal) as exc:
        party.train(_request(schema, marginals_share=0.75, marginals_bins=5))
    assert exc.value.reason == "policy_marginals" and "allow-marginals = false" in str(exc.value)
    assert party.ledger.entries() == [] and party.ledger.spent() == 0
    release = decode_release(party.train(_request(schema)), schema, ReleasePolicy())  # trees only: served
    assert release.forest.marginals is None and party.ledger.spent() == pytest.approx(1.0)
