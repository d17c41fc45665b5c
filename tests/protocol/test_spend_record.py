"""The coordinator's spend record as a train request carries it: exact, checked, one entry per party."""

from __future__ import annotations

from fractions import Fraction

import pytest

from protocol import recorded_spend, spend_record_text
from protocol._registration import party_digest
from protocol._spend_record import check_spend_record_text
from protocol.messages import TaskError, TrainRequest


def _request() -> TrainRequest:
    return TrainRequest(
        request_id="r/train",
        run_id="r",
        schema_fingerprint="sha256:00",
        epsilon=1.0,
        max_depth=3,
        n_trees=1,
        split_mode="binary",
        n_bins=4,
        relation="add-remove",
        seed=-1,
    )


def _exact(value: float) -> Fraction:
    return Fraction(repr(value))  # how a party's ledger charges a request's epsilon


@pytest.mark.parametrize(
    "totals",
    [
        {"hospital-a": _exact(1.0), "hospital-b": _exact(0.1) * 3},
        {"clinic": _exact(1e-5) + _exact(2.5) + _exact(0.3)},
        {"tiny": _exact(5e-324)},  # the smallest float: 324 decimals, still exact
        {"big": Fraction(10**25)},
        {"thirds": Fraction(1, 3)},  # not a decimal: written n/d
    ],
)
def test_totals_round_trip_exactly(totals):
    text = spend_record_text(totals)
    check_spend_record_text(text)
    for party, total in totals.items():
        assert recorded_spend(text, party) == total
    assert recorded_spend(text, "someone-else") is None
    assert all(party not in text for party in totals)  # no id in clear


def test_nothing_recorded_is_no_entry():
    assert spend_record_text({}) == "" == spend_record_text({"a": Fraction(0)})
    assert recorded_spend("", "a") is None


@pytest.mark.parametrize(
    "text",
    [
        "x",
        f"{party_digest('a')}=-1",
        f"{party_digest('a')}=1e5",
        f"{party_digest('a')}=1/0",
        f"{party_digest('a')}=1.",
        f"{party_digest('a')}=" + "9" * 401,
        f"{party_digest('a')}=1,{party_digest('a')}=2",  # a party twice
        f"{party_digest('a')}=1,",
        f"{party_digest('a').upper()}=1",
    ],
)
def test_a_malformed_record_is_refused_before_anything_else(text):
    with pytest.raises(ValueError, match="spend-record"):
        check_spend_record_text(text)
    record = {**_request().to_record(), "spend-record": text}
    with pytest.raises(TaskError, match="spend-record"):
        TrainRequest.from_record(record)
    with pytest.raises(TypeError):
        check_spend_record_text(3)


def test_records_from_before_the_key_read_as_none():
    record = _request().to_record()
    del record["spend-record"]
    assert TrainRequest.from_record(record).spend_record == ""
