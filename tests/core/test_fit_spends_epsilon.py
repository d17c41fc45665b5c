"""Regressions of issue 19, findings 1 and 2: what one fit spends, and integer widths at their bounds.

Finding 1: with an automatic shape and no declared size, the DP row count spent
``count_epsilon_share * epsilon`` on top of trees that still spent ``epsilon`` on every
root-to-leaf path.  Here every mechanism call of a real fit is recorded (the count, each
layer's split selection, the leaves' count vectors) and the path a record can meet
must add up to exactly the fit's ``epsilon``.

Finding 2: the exact split sampler used OpenDP's i32 domain; a node of more than about
32,768 balanced rows made a utility fall below -2**31 and the fit fail (after charging).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import edprf_core._builder as builder
import edprf_core._classifier as classifier
from edprf_core import EDPRFClassifier
from edprf_core._exact_selection import UTILITY_SCALE, ExactPermuteAndFlip, integer_weighted_gini
from edprf_core.forest import MAX_FIT_ROWS

from ..synthetic import make_data, make_schema


class _Recorder:
    """Records the ε of every mechanism call a fit makes, by kind."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls: list[tuple[str, float]] = []
        real_count = classifier.discrete_laplace_counts
        real_leaves = builder.discrete_laplace_counts
        real_select = ExactPermuteAndFlip.select

        def count(values, epsilon, sensitivity=1, rng=None):
            self.calls.append(("row-count", float(epsilon)))
            return real_count(values, epsilon, sensitivity, rng)

        def leaves(values, epsilon, sensitivity=1, rng=None):
            self.calls.append(("leaf-counts", float(epsilon)))
            return real_leaves(values, epsilon, sensitivity, rng)

        def select(mech, utilities, epsilon, rng=None, valid=None):
            eps = np.unique(np.asarray(epsilon, dtype=np.float64))
            assert eps.size == 1, "one layer's splits share one budget"
            self.calls.append(("split" if mech.sensitivity > 1 else "leaf-label", float(eps[0])))
            return real_select(mech, utilities, epsilon, rng, valid)

        monkeypatch.setattr(classifier, "discrete_laplace_counts", count)
        monkeypatch.setattr(builder, "discrete_laplace_counts", leaves)
        monkeypatch.setattr(ExactPermuteAndFlip, "select", select)

    def path_epsilon(self) -> float:
        """ε a record meets: the count, one split per layer, and its leaf (binary trees: all leaves last)."""
        kinds = [k for k, _ in self.calls]
        assert kinds.count("leaf-counts") + kinds.count("leaf-label") == 1
        return math.fsum(e for _, e in self.calls)


@pytest.mark.parametrize("share", [0.05, 0.5])
@pytest.mark.parametrize("leaf", ["counts", "label"])
def test_a_fit_with_a_dp_row_count_spends_exactly_epsilon(monkeypatch, share, leaf):
    schema = make_schema(n_continuous=2, n_categorical=1)
    X, y = make_data(schema, 600, seed=0)
    rec = _Recorder(monkeypatch)
    clf = EDPRFClassifier(schema, epsilon=1.0, n_trees=1, count_epsilon_share=share, leaf=leaf).fit(X, y)
    assert clf.privacy_.depth_rule == "dp-count" and clf.privacy_.sampler == "exact"
    assert [k for k, _ in rec.calls].count("row-count") == 1
    assert rec.calls[0] == ("row-count", pytest.approx(share * 1.0))
    assert rec.path_epsilon() == pytest.approx(1.0, rel=1e-12)


def test_a_fit_with_a_declared_size_spends_epsilon_on_the_trees_alone(monkeypatch):
    schema = make_schema(n_continuous=2, n_categorical=1)
    X, y = make_data(schema, 600, seed=0)
    rec = _Recorder(monkeypatch)
    EDPRFClassifier(schema, epsilon=0.7, n_trees=1, n_rows_public=640).fit(X, y)
    assert "row-count" not in [k for k, _ in rec.calls]
    assert rec.path_epsilon() == pytest.approx(0.7, rel=1e-12)


def test_exact_selection_takes_utilities_far_below_the_i32_range():
    mech = ExactPermuteAndFlip(2 * UTILITY_SCALE + 1, monotone=True)
    low = -UTILITY_SCALE * MAX_FIT_ROWS  # the most negative utility a node of MAX_FIT_ROWS rows can have
    u = np.array([[low, low + 10**9, -(2**31) - 5]], dtype=np.float64)
    assert mech.select(u, 1.0)[0] in (0, 1, 2)


def test_integer_gini_is_exact_at_the_row_bound():
    n = MAX_FIT_ROWS
    v = np.array([[n // 2, n - n // 2]], dtype=np.int64)
    # N^2 - S = 2 ab with a + b = N: t = floor(K * 2ab / N), exactly, in Python integers
    a, b = int(v[0, 0]), int(v[0, 1])
    assert int(integer_weighted_gini(v.astype(np.float64))[0]) == (UTILITY_SCALE * 2 * a * b) // n


def test_a_node_of_70000_balanced_rows_trains_on_the_exact_path():
    """Under i32 a root of more than ~65,536 balanced rows failed (utility below -2**31)."""
    schema = make_schema(n_continuous=1, n_categorical=0)
    n = 70_000
    X = pd.DataFrame({"x0": np.linspace(0.0, 10.0, n)})
    y = pd.Series(np.where(np.arange(n) % 2 == 0, "k0", "k1"), name="label")
    clf = EDPRFClassifier(schema, epsilon=1.0, n_trees=1, max_depth=1, n_bins=4).fit(X, y)
    assert clf.privacy_.sampler == "exact" and clf.forest_.trees.n_trees == 1


def test_fit_refuses_more_rows_than_the_widths_are_proven_for(monkeypatch):
    schema = make_schema(n_continuous=1, n_categorical=0)
    X, y = make_data(schema, 50, seed=1)
    monkeypatch.setattr(classifier, "MAX_FIT_ROWS", 49)
    with pytest.raises(ValueError, match="at most 49 rows"):
        EDPRFClassifier(schema, epsilon=1.0).fit(X, y)
