"""Partitioning rows among simulated parties."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from edprf_fl.simulation import Partitioning, partition_rows


def _frame(n=3000, k=3, seed=0):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({"region": rng.choice(list("abcdefgh"), n), "x": rng.random(n)})
    return X, pd.Series(rng.integers(0, k, n))


@pytest.mark.parametrize(
    "how", [Partitioning("iid"), Partitioning("dirichlet", alpha=0.3), Partitioning("column", column="region")]
)
def test_partitions_are_disjoint_and_cover_every_row(how):
    X, y = _frame()
    parts = partition_rows(X, y, 5, how, np.random.default_rng(1))
    assert len(parts) == 5 and all(p.size > 0 for p in parts)
    together = np.concatenate(parts)
    assert np.array_equal(np.sort(together), np.arange(len(X)))


def test_dirichlet_skews_labels_and_iid_does_not():
    X, y = _frame(n=20000)

    def spread(how):
        parts = partition_rows(X, y, 10, how, np.random.default_rng(2))
        shares = np.array([np.bincount(y.iloc[p], minlength=3) / p.size for p in parts])
        return shares.std(axis=0).mean()

    iid, skewed = spread(Partitioning("iid")), spread(Partitioning("dirichlet", alpha=0.1))
    assert iid < 0.03 < skewed


def test_column_partition_keeps_groups_together():
    X, y = _frame()
    parts = partition_rows(X, y, 4, Partitioning("column", column="region"), np.random.default_rng(0))
    owners = {}
    for p, rows in enumerate(parts):
        for value in X["region"].iloc[rows].unique():
            assert owners.setdefault(value, p) == p


def test_partition_errors():
    X, y = _frame(n=10)
    with pytest.raises(ValueError, match="cannot be split among"):
        partition_rows(X, y, 11, Partitioning(), np.random.default_rng(0))
    with pytest.raises(ValueError, match="fewer than"):
        partition_rows(X, y, 9, Partitioning("column", column="region"), np.random.default_rng(0))
    with pytest.raises(ValueError, match="alpha must be > 0"):
        Partitioning("dirichlet", alpha=0.0)
