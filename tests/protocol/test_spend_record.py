"""The coordinator's spend record as a train request carries it: exact, checked, one entry per party."""

from __future__ import annotations

from fractions import Fraction

import pytest

from protocol import generate_signing_key, key_id, recorded_spend, spend_record_text
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


KEYS = {party: generate_signing_key() for party in ("hospital-a", "hospital-b", "clinic")}
KEY_IDS = {party: key_id(key) for party, key in KEYS.items()}


@pytest.mark.parametrize(
    "totals",
    [
        {"hospital-a": _exact(1.0), "hospital-b": _exact(0.1) * 3},
        {"clinic": _exact(1e-5) + _exact(2.5) + _exact(0.3)},
        {"hospital-a": Fraction(10**11) + _exact(0.000001)},
    ],
)
def test_totals_round_trip_exactly(totals):
    text = spend_record_text(totals, KEY_IDS)
    check_spend_record_text(text)
    for party, total in totals.items():
        assert recorded_spend(text, party, KEYS[party]) == total
        assert recorded_spend(text, party, generate_signing_key()) is None  # another key: not its entry
        assert recorded_spend(text, party, None) is None
    assert recorded_spend(text, "someone-else", KEYS["hospital-a"]) is None
    assert all(party not in text for party in totals)  # no id in clear


def test_only_registered_parties_are_sent_and_totals_are_rounded_down_to_micro_epsilon():
    totals = {"hospital-a": Fraction(1, 3), "hospital-b": Fraction(1, 10**7), "gone": Fraction(5)}
    text = spend_record_text(totals, {p: KEY_IDS[p] for p in ("hospital-a", "hospital-b")})
    assert text.count("=") == 1  # b rounds down to nothing; "gone" is not registered
    assert recorded_spend(text, "hospital-a", KEYS["hospital-a"]) == Fraction(333333, 10**6)


def test_nothing_recorded_is_no_entry():
    assert spend_record_text({}, KEY_IDS) == "" == spend_record_text({"hospital-a": Fraction(0)}, KEY_IDS)
    assert recorded_spend("", "hospital-a", KEYS["hospital-a"]) is None


ENTRY = "0" * 32


@pytest.mark.parametrize(
    "text",
    [
        "x",
        f"{ENTRY}=-1",
        f"{ENTRY}=1e5",
        f"{ENTRY}=1/3",  # honest totals are multiples of 1e-6: always decimals
        f"{ENTRY}=1.",
        f"{ENTRY}=0.0000001",  # 7 fraction digits
        f"{ENTRY}=" + "9" * 13,  # 13 integer digits
        f"{ENTRY}=1,{ENTRY}=2",  # a party twice
        f"{ENTRY}=1,",
        f"{ENTRY.upper()}A=1",
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


def test_a_total_beyond_what_a_record_holds_is_written_as_the_largest_that_fits():
    """A registered party that signs releases of absurd epsilon cannot make the record unreadable to all."""
    text = spend_record_text({"hospital-a": Fraction(10**300), "clinic": _exact(0.5)}, KEY_IDS)
    check_spend_record_text(text)
    assert recorded_spend(text, "hospital-a", KEYS["hospital-a"]) == Fraction(10**18 - 1, 10**6)
    assert recorded_spend(text, "clinic", KEYS["clinic"]) == Fraction(1, 2)


def _signed_release(party: str, epsilon: float, key=None) -> tuple[bytes, object]:
    from edprf_core import EDPRFClassifier, load_embedded
    from protocol import encode_release

    X, y, schema = load_embedded("wall_robot_navigation")
    clf = EDPRFClassifier(schema, epsilon=epsilon, n_trees=1, max_depth=2, n_bins=4, random_state=0)
    clf.fit(X.iloc[:300], y.iloc[:300])
    return encode_release(clf.forest_, party, signing_key=key, run_id="run-7", request_id="run-7/train"), schema


def test_signed_charge_reads_a_refused_release_only_when_its_party_signed_it():
    from protocol import InvalidRelease, PartyKeyRegistry, ReleasePolicy, decode_release, signed_charge

    registry = PartyKeyRegistry({p: k.public_key() for p, k in KEYS.items()})
    payload, schema = _signed_release("hospital-a", 2.0, KEYS["hospital-a"])
    with pytest.raises(InvalidRelease):  # above the coordinator's policy
        decode_release(payload, schema, ReleasePolicy(max_epsilon=1.0), registry)
    charge = signed_charge(payload, schema, 1 << 20, registry)
    assert (charge.party_id, charge.run_id, charge.epsilon) == ("hospital-a", "run-7", 2.0)
    assert signed_charge(payload, schema, len(payload) - 1, registry) is None  # above the size limit: not read
    from dataclasses import replace

    other = replace(schema, name="another consortium", drafted=True)  # another fingerprint
    assert signed_charge(payload, other, 1 << 20, registry) is None  # charged to that consortium's ledger
    forged, _ = _signed_release("hospital-a", 2.0, KEYS["clinic"])  # another party's key
    unsigned, _ = _signed_release("hospital-a", 2.0)
    for data in (forged, unsigned, b"", b"\x0a\x03abc", payload[:-3]):
        assert signed_charge(data, schema, 1 << 20, registry) is None
