"""The settings of a simulated federation as declared: their names, types, defaults and choice lists.

Standard library only, so that the ``edprf`` parser reads its defaults and choices without importing the
core, pandas or Flower; :class:`edprf_fl.simulation.SimulationSettings` adds the checks on top of these fields.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from pathlib import Path
from types import MappingProxyType
from typing import Literal

__all__ = [
    "ENGINES",
    "LEAVES",
    "PARTITIONS",
    "SETTING_DEFAULTS",
    "SPLIT_MODES",
    "SettingFields",
]

#: The engines a simulation can run on: ``in-process`` (the real ServerApp and ClientApps called in this
#: process, no Ray) and ``ray`` (Flower's simulation engine, ``flwr.simulation.run_simulation``).
ENGINES = ("in-process", "ray")
#: How rows are split among parties: at random, label-skewed (Dirichlet), or by the values of a column.
PARTITIONS = ("iid", "dirichlet", "column")
#: What leaves release: noisy class counts (probabilities) or the paper's label (votes); the core's
#: ``edprf_core.forest.LEAF_OUTPUTS`` in sorted order (a test holds the two together: the core is heavy).
LEAVES = ("counts", "label")
#: How trees split: the core's ``edprf_core.forest.SPLIT_MODES`` (a test holds the two together).
SPLIT_MODES = ("binary", "multiway")


@dataclass(frozen=True)
class SettingFields:
    """The settings' fields and defaults, unchecked; :class:`edprf_fl.simulation.SimulationSettings` says what
    each one means and checks them at construction."""

    data: Path | None = None
    schema: Path | None = None
    sep: str = ","
    header: bool = True
    dataset: str = "wall_robot_navigation"
    parties: int = 5
    partition: Literal["iid", "dirichlet", "column"] = "iid"
    alpha: float = 0.5
    column: str = ""
    epsilon: float = 1.0
    max_depth: int | Literal["auto"] = "auto"
    leaf: Literal["counts", "label"] = "counts"
    n_trees: int = 1
    n_bins: int = 20
    split_mode: Literal["binary", "multiway"] = "binary"
    evaluation_epsilon: float = 0.1
    evaluation_max_interval_width: float = 0.1
    party_holdout: float = 0.1
    test_size: float = 0.2
    validation_size: float = 0.1
    selective: bool = False
    exclude_flagged: bool = False
    tolerated_parties: int = 1
    shuffled_label_parties: tuple[int, ...] = ()
    engine: Literal["in-process", "ray"] = "in-process"
    seed: int = 0
    seeded_noise: bool = False
    baselines: bool = True


SETTING_DEFAULTS = MappingProxyType({f.name: f.default for f in fields(SettingFields)})
"""Each setting's default by name, read without importing the core (the ``edprf`` options' defaults)."""
