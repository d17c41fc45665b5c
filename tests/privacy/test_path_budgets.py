"""Every root-to-leaf path spends exactly its tree's epsilon, short paths included (eDPRF formulas 9 and 10).

The fit accounting (:func:`._instrumentation.charged_epsilon_of_fit`) rebuilds each node's real
epsilon from the scale OpenDP drew with and the TRUE sensitivity, and
:func:`._instrumentation.check_path_budgets` requires the paper's rule of it: with ``L = max_depth
+ 1`` layers and the tree's epsilon ``eps``, a split at layer ``k`` spends ``eps_k = eps / s * 1 /
(L - k + 1)``, ``s = sum_{j=1..L} 1/j``, and a leaf at layer ``l`` the rest of its path's budget,
``eps - sum_{m<l} eps_m``, so that every path, whatever its length, spends ``eps``.  Checking only
the costliest path (as the accounting once did) misses a leaf above the last layer that spends its
layer's share instead of the rest: such leaves exist only where a path has used up its split
candidates, so the fits here use the seven-row fixture of ``test_data_independent_shapes``, whose
binary trees of depth 7 always hold such leaves (the counting argument is there).

The last tests are power checks: weakened copies (applied before the recorder, as a change to the
source would be) that keep the costliest path at ``eps`` are each refused.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

import edprf_core._builder as builder
import edprf_core._classifier as classifier

from ._instrumentation import AccountingError, account_fit
from ._party_requests import TrainSettings
from .test_data_independent_shapes import BINARY, ROWS, _fit

pytestmark = pytest.mark.privacy

SETTINGS = [
    dataclasses.replace(BINARY, n_trees=2),
    dataclasses.replace(BINARY, n_trees=2, leaf="label"),
]


def _early_leaves(forest) -> int:
    trees = forest.trees
    depth, _ = trees.depths_and_parents()
    return int(np.count_nonzero((trees.feature < 0) & (depth < forest.parts[0][1].max_depth)))


@pytest.mark.parametrize("settings", SETTINGS, ids=["leaf-counts", "leaf-label"])
def test_every_path_spends_the_trees_epsilon(tmp_path: Path, monkeypatch, settings: TrainSettings):
    calls, forest = _fit(tmp_path, monkeypatch, settings)
    assert _early_leaves(forest) >= settings.n_trees, "each tree holds a leaf above the last layer"
    _, faced = account_fit(calls, forest, len(ROWS))
    assert faced == pytest.approx(settings.epsilon, rel=1e-9)


def _leaf_spends_its_layer_share(monkeypatch):
    """A leaf above the last layer spends its layer's split share, not the rest of its path's budget."""
    monkeypatch.setattr(builder.BuildPlan, "leaf_epsilon", lambda plan, layer: float(plan.layer_epsilons[layer - 1]))


def _uniform_splits_behind_a_harmonic_release(monkeypatch):
    """The splits spend the uniform schedule's shares (leaves the rest) while the release says harmonic."""
    real = classifier.EDPRFClassifier._plan

    def plan(self, params):
        honest = real(self, params)
        uniform = tuple(honest.tree_epsilon / honest.n_layers for _ in range(honest.n_layers))
        return dataclasses.replace(honest, layer_epsilons=uniform)

    monkeypatch.setattr(classifier.EDPRFClassifier, "_plan", plan)


def _leaf_overspends_its_path(monkeypatch):
    """A leaf above the last layer spends the whole tree's epsilon (undercharged: its path spends more)."""
    monkeypatch.setattr(builder.BuildPlan, "leaf_epsilon", lambda plan, layer: plan.tree_epsilon)


@pytest.mark.parametrize(
    "weaken",
    [_leaf_spends_its_layer_share, _uniform_splits_behind_a_harmonic_release, _leaf_overspends_its_path],
    ids=lambda f: f.__name__.strip("_"),
)
def test_the_accounting_refuses_a_path_that_spends_another_budget(tmp_path: Path, monkeypatch, weaken):
    weaken(monkeypatch)
    calls, forest = _fit(tmp_path, monkeypatch, SETTINGS[0])
    with pytest.raises(AccountingError, match="spends epsilon"):
        account_fit(calls, forest, len(ROWS))
