"""The largest release an honest party can send for a request (``protocol.largest_release_bytes``).

The coordinator refuses, unread, any release above it (malicious-party review F2: a 63 MiB release answering a
request whose honest release takes 664 bytes cost the coordinator 1.3 GB while parsing).  An honest release must
never be above it: a party refused there has already charged its ledger.
"""

from __future__ import annotations

import pytest

from edprf_core import EDPRFClassifier, load_embedded
from protocol import FIXED_RELEASE_BYTES, encode_release, generate_signing_key, largest_release_bytes
from tests.forged_releases import forge

WIDE_ID = "\U0001d518" * 256  # the longest id of the widest printable characters (4 bytes each in UTF-8)

SHAPES = [
    # (dataset, settings): binary and multiway trees, count and label leaves, a marginals part, the deepest
    ("wall_robot_navigation", {"n_trees": 3, "max_depth": 6, "n_bins": 20}),
    ("wall_robot_navigation", {"n_trees": 2, "max_depth": 3, "n_bins": 5, "split_mode": "multiway"}),
    ("bank_marketing", {"n_trees": 2, "max_depth": 3, "n_bins": 4, "split_mode": "multiway", "leaf": "label"}),
    ("bank_marketing", {"n_trees": 4, "max_depth": 5, "n_bins": 20, "marginals_share": 0.5, "marginals_bins": 100}),
    ("bank_marketing", {"n_trees": 1, "max_depth": 12, "n_bins": 64}),
]


@pytest.mark.parametrize(("name", "settings"), SHAPES)
@pytest.mark.parametrize("algorithm", ["ed25519", "p384"])
def test_an_honest_release_is_never_above_the_bound(name, settings, algorithm):
    X, y, schema = load_embedded(name)
    forest = EDPRFClassifier(schema, epsilon=1.0, random_state=0, **settings).fit(X[:3000], y[:3000]).forest_
    if forest.has_counts:  # every count at the wire's largest (its widest encoding)
        forest = forge("majority-class", forest)
    key = generate_signing_key(algorithm)
    payload = encode_release(forest, "p" * 64, key, run_id=WIDE_ID, request_id=WIDE_ID)
    bound = largest_release_bytes(
        schema,
        n_trees=settings["n_trees"],
        max_depth=settings["max_depth"],
        split_mode=settings.get("split_mode", "binary"),
        n_bins=settings["n_bins"],
        marginals_bins=settings.get("marginals_bins", 0),
    )
    assert len(payload) <= bound
    if settings.get("split_mode", "binary") == "binary":  # every binary tree is full: the bound is within 8 times it
        assert bound - FIXED_RELEASE_BYTES <= 8 * len(payload)
