"""Privacy budget schedules: within a tree (per layer) and across trees.

Layers are numbered 1..L from the root, ``L = max_depth + 1`` (a tree with
``max_depth`` split levels has ``L`` node layers; the eDPRF paper's depth ``D``
is this ``L``).  A layer schedule gives each layer ``k`` a budget ``eps_k``
with ``sum_k eps_k = eps``.  A node at layer ``k`` that splits spends
``eps_k``; a leaf at layer ``l`` spends the rest of the path's budget,
``eps - sum_{m<l} eps_m`` (eDPRF formula 10, "leaf alignment").

Composition argument: along one root-to-leaf path the mechanisms act on
nested subsets of the tree's rows, and a record reaches exactly one node per
layer, so a record is touched by exactly one mechanism per layer of its path.
Nodes of one layer see disjoint rows (parallel composition); layers compose
sequentially along the path.  With leaf alignment every path spends exactly
``eps`` whatever its length, so the tree is ``eps``-DP.

Under replace-one the old and the new record can reach two nodes of a layer:
each of the two sees one removal or one addition.  Every replace-one scale is
calibrated to the replace-one sensitivity, twice the add/remove one (split
utility 4 against 2, counts 2 against 1), so each of those two nodes costs at
most ``eps_k / 2`` and the layer at most ``eps_k``: the path still sums to
``eps``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

import numpy as np
from numpy.typing import NDArray

from ._mechanisms import check_epsilon

__all__ = [
    "HarmonicSchedule",
    "LayerSchedule",
    "LinearSchedule",
    "ParallelComposition",
    "SequentialComposition",
    "TreeComposition",
    "UniformSchedule",
    "layer_schedule",
    "tree_composition",
]


def _check_layers(n_layers: int) -> int:
    if isinstance(n_layers, bool) or not isinstance(n_layers, (int, np.integer)) or n_layers < 1:
        raise ValueError(f"the number of layers must be an integer >= 1, got {n_layers!r}")
    return int(n_layers)


@dataclass(frozen=True)
class LayerSchedule:
    """Base class: share of a tree's ε given to each layer."""

    name: ClassVar[str] = "abstract"

    def weights(self, n_layers: int) -> NDArray[np.float64]:
        """Non-negative weights of layers 1..L summing to 1."""
        raise NotImplementedError

    def layer_budgets(self, epsilon: float, n_layers: int) -> NDArray[np.float64]:
        """``eps_k`` for ``k = 1..L``; ``epsilon`` in (0, inf)."""
        eps = check_epsilon(epsilon)
        w = self.weights(_check_layers(n_layers))
        return eps * w

    def leaf_budget(self, epsilon: float, n_layers: int, leaf_layer: int) -> float:
        """Budget of a leaf at layer ``leaf_layer`` (1-based): ``eps - sum_{m<l} eps_m``."""
        if not 1 <= leaf_layer <= n_layers:
            raise ValueError(f"leaf_layer must be in 1..{n_layers}, got {leaf_layer}")
        eps = check_epsilon(epsilon)
        spent = float(np.sum(self.layer_budgets(eps, n_layers)[: leaf_layer - 1]))
        return eps - spent

    def path_spend(self, epsilon: float, n_layers: int, leaf_layer: int) -> float:
        """Total ε spent on a root-to-leaf path ending at ``leaf_layer``."""
        eps_k = self.layer_budgets(epsilon, n_layers)
        return float(np.sum(eps_k[: leaf_layer - 1])) + self.leaf_budget(epsilon, n_layers, leaf_layer)


@dataclass(frozen=True)
class HarmonicSchedule(LayerSchedule):
    """eDPRF formula 9: ``eps_k = eps / s * 1 / (L - k + 1)``, ``s = sum_{j=1..L} 1/j``.

    Deeper layers, whose nodes hold fewer rows, get more budget; the leaf
    layer gets the largest share ``eps / s``.
    """

    name: ClassVar[str] = "harmonic"

    def weights(self, n_layers: int) -> NDArray[np.float64]:
        L = _check_layers(n_layers)
        w = 1.0 / (L - np.arange(1, L + 1) + 1.0)
        return w / w.sum()


@dataclass(frozen=True)
class UniformSchedule(LayerSchedule):
    """``eps_k = eps / L`` for every layer (DiffPRF-style even split)."""

    name: ClassVar[str] = "uniform"

    def weights(self, n_layers: int) -> NDArray[np.float64]:
        L = _check_layers(n_layers)
        return np.full(L, 1.0 / L)


@dataclass(frozen=True)
class LinearSchedule(LayerSchedule):
    """``eps_k`` proportional to ``k`` (an arithmetic increase towards the leaves)."""

    name: ClassVar[str] = "linear"

    def weights(self, n_layers: int) -> NDArray[np.float64]:
        L = _check_layers(n_layers)
        w = np.arange(1, L + 1, dtype=np.float64)
        return w / w.sum()


_SCHEDULES: dict[str, type[LayerSchedule]] = {
    "harmonic": HarmonicSchedule,
    "uniform": UniformSchedule,
    "linear": LinearSchedule,
}


def layer_schedule(spec: str | LayerSchedule) -> LayerSchedule:
    """Resolve a schedule name (``harmonic``, ``uniform``, ``linear``) or instance."""
    if isinstance(spec, LayerSchedule):
        return spec
    try:
        return _SCHEDULES[spec]()
    except (KeyError, TypeError):
        raise ValueError(f"unknown schedule {spec!r}; choose one of {sorted(_SCHEDULES)}") from None


@dataclass(frozen=True)
class TreeComposition:
    """How a forest's ε is shared among its trees and how rows reach trees."""

    name: ClassVar[str] = "abstract"

    def per_tree_epsilon(self, epsilon: float, n_trees: int) -> float:
        raise NotImplementedError

    def assign_rows(self, n_rows: int, n_trees: int, rng: np.random.Generator) -> NDArray[np.bool_] | NDArray[np.intp]:
        raise NotImplementedError


@dataclass(frozen=True)
class ParallelComposition(TreeComposition):
    """Disjoint random partition; every tree gets the whole ε.

    Each row is sent to one tree drawn uniformly at random, independently of
    every other row and of the data.  Adding or removing a record therefore
    changes exactly one tree's subset and leaves the others' distribution
    unchanged, so the forest is ε-DP by parallel composition.  (A shuffle cut
    into equal chunks would not do: one added record shifts a record across
    every later boundary.)  The subsets' sizes are random and never released.
    """

    name: ClassVar[str] = "parallel"

    def per_tree_epsilon(self, epsilon: float, n_trees: int) -> float:
        return check_epsilon(epsilon)

    def assign_rows(self, n_rows: int, n_trees: int, rng: np.random.Generator) -> NDArray[np.intp]:
        """Tree index of each row, shape ``(n_rows,)``."""
        return rng.integers(0, n_trees, size=n_rows)


@dataclass(frozen=True)
class SequentialComposition(TreeComposition):
    """Each tree sees a subsample and gets ``ε / T`` (for the bootstrap-style baselines).

    Parameters
    ----------
    max_samples : float in (0, 1]
        Each tree keeps each row independently with this probability (Poisson
        subsampling without replacement: a record appears at most once per tree
        and its inclusion does not depend on other records, so each tree's
        sensitivity is unchanged; a bootstrap with replacement would multiply
        it).  Sequential
        composition over the T trees gives ``T * ε / T = ε``.
    """

    max_samples: float = 1.0
    name: ClassVar[str] = "sequential"

    def __post_init__(self) -> None:
        if not (isinstance(self.max_samples, (int, float)) and 0.0 < self.max_samples <= 1.0):
            raise ValueError(f"max_samples must be in (0, 1], got {self.max_samples!r}")

    def per_tree_epsilon(self, epsilon: float, n_trees: int) -> float:
        return check_epsilon(epsilon) / n_trees

    def assign_rows(self, n_rows: int, n_trees: int, rng: np.random.Generator) -> NDArray[np.bool_]:
        """Membership matrix of shape ``(n_trees, n_rows)``."""
        if self.max_samples >= 1.0:
            return np.ones((n_trees, n_rows), dtype=bool)
        return rng.random((n_trees, n_rows)) < self.max_samples


def tree_composition(spec: str | TreeComposition) -> TreeComposition:
    """Resolve ``parallel`` / ``sequential`` or an instance."""
    if isinstance(spec, TreeComposition):
        return spec
    if spec == "parallel":
        return ParallelComposition()
    if spec == "sequential":
        return SequentialComposition()
    raise ValueError(f"unknown composition {spec!r}; choose 'parallel' or 'sequential'")


Relation = Literal["add-remove", "replace-one"]
