"""A layer's split selections taken a block of nodes at a time draw what one call draws (scale review F2).

A single deep tree on a wide grid held the validity and the utilities of every (node, candidate) pair of a layer at
once: 2**17 nodes x 2,276 candidates took 6.8 GB.  The builder now takes a block of nodes at a time; each tree's noise
still comes from its own stream in node order, so a seeded fit is the same forest whatever the block size.
"""

from __future__ import annotations

import numpy as np
import pytest

import edprf_core._builder as builder
from edprf_core import EDPRFClassifier, load_embedded


@pytest.mark.parametrize(
    "settings",
    [
        {"split_mode": "binary", "leaf": "counts", "max_depth": 6, "n_trees": 3},
        {"split_mode": "binary", "leaf": "label", "max_depth": 5, "n_trees": 2},
        {"split_mode": "multiway", "leaf": "counts", "max_depth": 3, "n_trees": 2, "n_bins": 4},
    ],
)
@pytest.mark.parametrize("name", ["wall_robot_navigation", "bank_marketing"])
def test_blocks_of_nodes_select_the_same_splits_as_one_call(monkeypatch, name, settings):
    X, y, schema = load_embedded(name)
    X, y = X[:3000], y[:3000]

    def fitted():
        return EDPRFClassifier(schema, epsilon=2.0, random_state=7, **settings).fit(X, y).forest_.trees

    whole = fitted()
    # blocks of one node: every layer is split across as many calls as it has nodes
    monkeypatch.setattr(builder, "_SELECTION_BLOCK_BYTES", 1)
    blocked = fitted()
    for field in ("tree_offsets", "feature", "split", "first_child", "leaf_class"):
        assert np.array_equal(getattr(whole, field), getattr(blocked, field)), field
    if whole.leaf_counts is not None:
        assert np.array_equal(whole.leaf_counts, blocked.leaf_counts)
