"""The marginals part on the wire (release format 2): round trip, the global model, and every refusal.

The decoder takes the histograms' shapes from the schema and the marginals grid, their budget and
relation from the parameters, and nothing of that from the payload; a release whose marginals part
disagrees with its parameters is refused with a reason.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from edprf_core import EDPRFClassifier, merge_forests
from edprf_core.marginals import RELEASE_RANGE, NoisyMarginals
from protocol import (
    InvalidRelease,
    Reason,
    ReleasePolicy,
    build_global_model,
    decode_release,
    encode_release,
    load_classifier,
    load_global_model,
    read_release_header,
    save_atomic,
)
from tests.synthetic import make_data, make_schema

from .tampering import tamper

POLICY = ReleasePolicy(max_n_bins=16)


@pytest.fixture(scope="module")
def schema():
    return make_schema()


@pytest.fixture(scope="module")
def mixed(schema):
    """Two parties' forests with a marginals part (share 0.5 on a 5-bin grid), seeded."""
    out = []
    for i in range(2):
        X, y = make_data(schema, 800, i)
        clf = EDPRFClassifier(
            schema,
            epsilon=1.0,
            n_trees=2,
            max_depth=3,
            n_bins=10,
            marginals_share=0.5,
            marginals_bins=5,
            random_state=i,
        )
        out.append(clf.fit(X, y).forest_)
    return out


def _release(forest, party="p0") -> bytes:
    return encode_release(forest, party, allow_non_dp=True, run_id="r", request_id="q")


def _refused(data: bytes, schema, policy=POLICY) -> InvalidRelease:
    with pytest.raises(InvalidRelease) as exc:
        decode_release(data, schema, replace(policy, allow_non_dp=True))
    return exc.value


def test_round_trip_keeps_every_count_and_the_mixed_probabilities(schema, mixed):
    forest = mixed[0]
    got = decode_release(_release(forest), schema, replace(POLICY, allow_non_dp=True))
    assert got.params == forest.parts[0][1] and got.params.marginals_bins == 5
    m = got.forest.marginals
    assert m.epsilon == got.params.forest_epsilon and m.relation == got.params.relation
    for a, b in zip(m.counts, forest.marginals.counts):
        np.testing.assert_array_equal(a, b)
    X, _ = make_data(schema, 300, 9)
    np.testing.assert_allclose(got.forest.predict_proba(X), forest.predict_proba(X))
    header = read_release_header(_release(forest), max_bytes=1 << 20)
    assert (header.parameters.marginals_share, header.parameters.marginals_bins) == (0.5, 5)


def test_a_trees_only_release_carries_no_marginals_field(schema):
    X, y = make_data(schema, 500, 3)
    forest = EDPRFClassifier(schema, epsilon=1.0, n_trees=1, max_depth=2, n_bins=4, marginals_share=0.0).fit(X, y)
    from protocol import release_pb2 as pb

    release = pb.Release.FromString(pb.SignedRelease.FromString(_release(forest.forest_)).release)
    assert not release.HasField("marginals") and release.parameters.marginals_share == 0


def test_the_global_model_rebuilds_the_mix_from_the_stored_releases(schema, mixed, tmp_path):
    verified = [
        decode_release(_release(f, f"p{i}"), schema, replace(POLICY, allow_non_dp=True)) for i, f in enumerate(mixed)
    ]
    path = save_atomic(tmp_path / "g.edprf", build_global_model(schema, verified, {"run_id": "r"}))
    view = load_global_model(path)
    expected = merge_forests(mixed, labels=["p0", "p1"])
    X, _ = make_data(schema, 300, 9)
    np.testing.assert_allclose(view.forest.predict_proba(X), expected.predict_proba(X))
    assert view.forest.marginals.epsilon == expected.marginals.epsilon
    clf = load_classifier(path)
    np.testing.assert_allclose(clf.predict_proba(X), expected.predict_proba(X))
    assert "one-way marginals" in clf.provenance.guarantee


def _set_counts(values):
    def edit(r):
        del r.marginals.counts[:]
        r.marginals.counts.extend(values)

    return edit


@pytest.mark.parametrize(
    ("edit", "reason", "text"),
    [
        (lambda r: r.ClearField("marginals"), Reason.BAD_STRUCTURE, "marginals expected (parameters.marginals_share"),
        (lambda r: r.marginals.counts.append(0), Reason.BAD_STRUCTURE, "counts (5 features on the 5-bin grid"),
        (lambda r: r.marginals.counts.pop(), Reason.BAD_STRUCTURE, "got "),
        # sint32 carries -2**31 (one below the range); 2**31 cannot be encoded at all
        (lambda r: r.marginals.counts.__setitem__(3, -(2**31)), Reason.BAD_STRUCTURE, "within -2147483647..2147483647"),
        (lambda r: setattr(r.parameters, "marginals_bins", 7), Reason.BAD_STRUCTURE, "7-bin grid"),
        (lambda r: setattr(r.parameters, "marginals_bins", 0), Reason.BAD_PARAMETERS, "marginals_bins = 0"),
        (lambda r: setattr(r.parameters, "marginals_bins", 1), Reason.BAD_PARAMETERS, "marginals_bins must be 0"),
        (lambda r: setattr(r.parameters, "marginals_share", 1.0), Reason.BAD_PARAMETERS, "marginals_share must be in"),
        (
            lambda r: setattr(r.parameters, "marginals_share", -0.25),
            Reason.BAD_PARAMETERS,
            "marginals_share must be in",
        ),
        (lambda r: setattr(r.parameters, "marginals_share", float("nan")), Reason.BAD_PARAMETERS, "marginals_share"),
        (lambda r: setattr(r.parameters, "marginals_bins", 17), Reason.POLICY_BINS, "marginals_bins expected <= 16"),
    ],
)
def test_a_marginals_part_that_disagrees_with_its_parameters_is_refused(schema, mixed, edit, reason, text):
    err = _refused(tamper(_release(mixed[0]), edit), schema)
    assert err.reason is reason and text in err.message, err


def test_marginals_on_a_trees_only_release_are_refused(schema):
    X, y = make_data(schema, 500, 3)
    forest = EDPRFClassifier(schema, epsilon=1.0, n_trees=1, max_depth=2, n_bins=4, marginals_share=0.0).fit(X, y)
    err = _refused(tamper(_release(forest.forest_), _set_counts([0, 1])), schema)
    assert err.reason is Reason.BAD_STRUCTURE and "marginals expected absent" in err.message
    err = _refused(tamper(_release(forest.forest_), lambda r: r.marginals.SetInParent()), schema)
    assert err.reason is Reason.BAD_STRUCTURE


def test_the_decoder_takes_epsilon_and_relation_from_the_parameters(schema, mixed):
    """A release has no field for the marginals' budget: it is ``epsilon - count_epsilon``, whatever was sent."""
    data = tamper(_release(mixed[0]), lambda r: setattr(r.parameters, "epsilon", 0.5))
    got = decode_release(data, schema, replace(POLICY, allow_non_dp=True))
    assert got.forest.marginals.epsilon == 0.5


def test_the_encoder_refuses_marginals_a_decoder_would_read_otherwise(schema, mixed):
    forest = mixed[0]
    m = forest.marginals
    cheaper = replace(forest, marginals=NoisyMarginals(m.counts, 2.0 * m.epsilon, m.relation, m.n_classes))
    with pytest.raises(ValueError, match="marginals expected epsilon"):
        _release(cheaper)
    with pytest.raises(ValueError, match="single-part"):
        _release(merge_forests(mixed, labels=["a", "b"]))
    low, _ = RELEASE_RANGE
    assert min(int(h.min()) for h in m.counts) >= low
