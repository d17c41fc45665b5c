"""Issue 20, item 2: a forest's compiled form for prediction costs memory proportional to its size.

Routing keeps a fixed number of bytes per node whatever the grid; leaf-mask tables are built
only within their budget and compiled in bounded blocks, and give the same votes whatever
the block size.
"""

from __future__ import annotations

import numpy as np
import pytest

from edprf_core import EDPRFClassifier, _predict
from edprf_core import _leafmask as leafmask
from edprf_core._leafmask import LeafMaskPredictor, leafmask_table_bytes
from edprf_core._predict import BYTES_PER_NODE, RoutingTable
from edprf_core.encoding import FeatureGrid
from edprf_core.forest import ForestArrays
from edprf_core.prediction import dense_budget, leafmask_budget
from tests.synthetic import make_data, make_schema


def _compiled_bytes(table: RoutingTable) -> int:
    return sum(a.nbytes for a in (table.feature, table.first, table.threshold, table.categorical))


def _single_leaf_forest(n_trees: int) -> ForestArrays:
    one = np.zeros(n_trees, dtype=np.int32)
    return ForestArrays(
        tree_offsets=np.arange(n_trees + 1, dtype=np.int64),
        feature=one - 1,
        split=one - 1,
        first_child=one - 1,
        leaf_class=one,
    )


@pytest.mark.parametrize("n_bins", [4, 64])
@pytest.mark.parametrize("split_mode", ["binary", "multiway"])
def test_routing_costs_the_same_bytes_per_node_on_any_grid_and_routes_alike(n_bins, split_mode, monkeypatch):
    """Compact routing holds a fixed number of bytes per node; the dense table, within its budget, routes
    every row to the same leaf."""
    schema = make_schema(n_classes=3, n_categorical=2, n_categories=5)
    X, y = make_data(schema, 1000, seed=1)
    forest = (
        EDPRFClassifier(schema, n_trees=4, max_depth=3, n_bins=n_bins, split_mode=split_mode, random_state=0)
        .fit(X, y)
        .forest_
    )
    codes = forest.encode(X)
    dense = RoutingTable.compile(forest.trees, forest.grid, forest.split_mode, forest.max_depth)
    n = forest.trees.n_nodes
    assert (dense.table is None) == (4 * n * dense.width > dense_budget(n))
    assert dense.table is None or dense.table.nbytes <= dense_budget(n)
    monkeypatch.setattr(_predict, "DENSE_FLOOR_BYTES", 0)
    monkeypatch.setattr(_predict, "DENSE_BYTES_PER_NODE", 0)
    compact = RoutingTable.compile(forest.trees, forest.grid, forest.split_mode, forest.max_depth)
    assert compact.table is None
    assert _compiled_bytes(compact) == BYTES_PER_NODE * forest.trees.n_nodes - 4 * forest.trees.n_nodes
    assert np.array_equal(compact.leaves(codes), dense.leaves(codes))


def test_tiny_trees_are_routed_not_compiled_into_tables():
    """5,000 single-leaf trees on 64-bin features: tables would cost about 8 KiB per node."""
    schema = make_schema(n_continuous=24, n_categorical=0, n_classes=4)
    grid = FeatureGrid.from_schema(schema, 64)
    trees = _single_leaf_forest(5000)
    assert leafmask_table_bytes(trees.n_trees, 1, grid.n_codes) > leafmask_budget(trees.n_nodes)
    assert LeafMaskPredictor.compile(trees, grid) is None


def test_the_tables_that_are_built_stay_within_their_budget():
    schema = make_schema(n_classes=3, n_categorical=2, n_categories=4)
    X, y = make_data(schema, 2000, seed=2)
    forest = EDPRFClassifier(schema, n_trees=20, max_depth=6, n_bins=16, random_state=0).fit(X, y).forest_
    compiled = LeafMaskPredictor.compile(forest.trees, forest.grid)
    assert compiled is not None
    assert sum(t.nbytes for t in compiled.tables) <= leafmask_budget(forest.trees.n_nodes)


def test_blocked_compilation_gives_the_same_votes(monkeypatch):
    schema = make_schema(n_classes=3, n_categorical=3, n_categories=4)
    X, y = make_data(schema, 2000, seed=4)
    forest = EDPRFClassifier(schema, n_trees=9, max_depth=7, n_bins=8, random_state=1).fit(X, y).forest_
    codes = forest.encode(X)
    whole = LeafMaskPredictor.compile(forest.trees, forest.grid)
    monkeypatch.setattr(leafmask, "COMPILE_BLOCK_BYTES", 1)  # one tree per block
    blocked = LeafMaskPredictor.compile(forest.trees, forest.grid)
    walk = forest._table().votes(codes, 3)
    for compiled in (whole, blocked):
        assert np.array_equal(compiled.votes(codes, forest.grid.n_codes, 3), walk)
    for a, b in zip(whole.tables, blocked.tables):
        assert np.array_equal(a, b)
