"""Issue 20, item 5(v): a release may not claim a DP row count that leaves its trees no meaningful budget.

The estimator spends at most half of ε on its row count (``count_epsilon_share <= 0.5``); the
decoder refuses more, so no release near ``count_epsilon = epsilon`` reaches pooling, where
its leaves' noise scales would grow without bound (and numpy warned of a division by zero).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from protocol import INSPECTION_POLICY, InvalidRelease, Reason, decode_release, release_pb2
from protocol._parameters import MAX_COUNT_EPSILON_SHARE

WALL = "wall_robot_navigation"


def _claiming(signed: bytes, count_epsilon: float) -> bytes:
    outer = release_pb2.SignedRelease.FromString(signed)
    release = release_pb2.Release.FromString(outer.release)
    release.parameters.depth_rule = release_pb2.DEPTH_RULE_DP_COUNT
    release.parameters.count_epsilon = count_epsilon
    return release_pb2.SignedRelease(release=release.SerializeToString(deterministic=True)).SerializeToString(
        deterministic=True
    )


@pytest.mark.parametrize("share", [0.5000001, 0.9, 0.999999, math.nextafter(1.0, 0.0)])
def test_a_count_epsilon_above_half_of_epsilon_is_refused(signed_wall_release, wall_schema, share):
    with pytest.raises(InvalidRelease) as exc:
        decode_release(_claiming(signed_wall_release, share), wall_schema, INSPECTION_POLICY)
    assert exc.value.reason is Reason.BAD_PARAMETERS and "count_epsilon" in exc.value.message


@pytest.mark.parametrize("share", [0.05, MAX_COUNT_EPSILON_SHARE])
def test_the_estimator_s_own_shares_decode_and_predict_without_a_warning(
    signed_wall_release, wall_schema, share, embedded
):
    X = embedded[WALL][0].iloc[:300]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with np.errstate(all="raise"):
            release = decode_release(_claiming(signed_wall_release, share), wall_schema, INSPECTION_POLICY)
            proba = release.forest.predict_proba(X)
            release.forest.guarantee()
    assert release.params.count_epsilon == share and np.allclose(proba.sum(axis=1), 1.0)
