"""What one simulated federation is asked to do: a frozen, validated settings dataclass.

This module imports nothing of Flower's so that wrong settings fail at once, before any data is read or an
engine starts; only the check of epsilon's units imports the party's policy.  The fields, their defaults
and the choice lists are declared in :mod:`._setting_fields`, which the ``edprf`` parser reads alone.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from pathlib import Path

from edprf_core import EDPRFError
from edprf_core.forest import MAX_DEPTH_LIMIT, MAX_TOLERATED_PARTIES
from edprf_core.shape import AUTO_DEPTH_CAP

from ._setting_fields import ENGINES, LEAVES, PARTITIONS, SETTING_DEFAULTS, SPLIT_MODES, SettingFields

__all__ = [
    "AUTO_DEPTH_CAP",
    "ENGINES",
    "LEAVES",
    "MAX_DEPTH_LIMIT",
    "PARTITIONS",
    "SPLIT_MODES",
    "SettingsError",
    "SimulationSettings",
]


#: Largest ``seed``: what scikit-learn is given (``seed`` and ``seed + 1`` for the splits, ``seed`` for the
#: non-private forest) stays below 2**32, the limit of its ``random_state``; numpy's generators, seeded with
#: ``seed + 1000 + party`` and ``seed + 7919 * (party + 1)``, take integers of any size.
MAX_SEED = 2**31 - 1


class SettingsError(EDPRFError, ValueError):
    """A simulation setting out of its range.

    The message is a template whose ``{name}`` fields are setting names (filled with the setting's own
    name by default); :meth:`describe` fills them otherwise, e.g. with the command's flags.
    """

    def __init__(self, template: str, **values: object) -> None:
        self.template = template
        self.values = values
        super().__init__(self.describe(str))

    def describe(self, name: Callable[[str], str]) -> str:
        """The message, each setting called ``name(setting)``."""
        return self.template.format_map(_Names(name, self.values))


class _Names(dict):
    def __init__(self, name: Callable[[str], str], values: Mapping[str, object]) -> None:
        super().__init__(values)
        self._name = name

    def __missing__(self, key: str) -> str:
        return self._name(key)


@dataclass(frozen=True)
class SimulationSettings(SettingFields):
    """The settings of one simulated federation and its baselines (each validated at construction).

    Data
    ----
    data : Path or None
        CSV (or Parquet) with the schema's columns and label; None: the embedded ``dataset``.
    schema : Path or None
        Schema TOML of ``data`` (required with ``data``: bounds, categories and classes are declared,
        never inferred).
    sep : str
        Field separator of ``data``, one character.
    header : bool
        Whether ``data`` has a header line (without one its columns are the schema's features, then the label).
    dataset : str
        Embedded dataset when ``data`` is None.

    Federation
    ----------
    parties : int >= 1
        Simulated parties.
    partition : {"iid", "dirichlet", "column"}
        How rows are split among parties; ``alpha`` (> 0) is the Dirichlet concentration, ``column`` the
        column whose values assign rows to parties.
    epsilon : float in (0, inf), a multiple of 1e-6
        Epsilon of each party's release (the parties' ledgers count epsilon exactly in millionths).
    max_depth : int in [1, 30] or "auto"
        Split levels per tree; ``"auto"``: each party chooses its depth (at most 12) from a DP count of its
        rows, charged within its ``epsilon``.
    leaf : {"counts", "label"}
        What leaves release.
    n_trees : int >= 1
        Trees each party releases.
    n_bins : int >= 2
        Bins of continuous features.
    split_mode : {"binary", "multiway"}
    evaluation_epsilon : float in [0, inf), a multiple of 1e-6
        Epsilon of each party's noised held-out metrics; 0 skips that round.
    evaluation_max_interval_width : float in (0, inf)
        Skip the parties' evaluation (spending nothing) when its 95% interval would be wider than this.
    party_holdout : float in [0, 1)
        Share of each party's rows kept for its own evaluation.
    test_size : float in (0, 1)
        Central held-out test share.
    validation_size : float in [0, 1)
        Share of the training rows the coordinator keeps as its validation data (contribution report,
        quality flags, selection); 0 disables.
    selective, exclude_flagged : bool
        Selective aggregation; dropping the parties the quality test flags.
    tolerated_parties : int in [1, 1000]
        Hostile parties acting together the merge bounds (the run config's ``tolerated-parties``): 2 holds two
        colluders, at a price under label skew (``benchmarks/results/colluding_parties.md``).
    shuffled_label_parties : tuple of int in [0, parties)
        Research: these parties get shuffled labels (low-quality parties).
    engine : {"in-process", "ray"}
    seed : int
        Seed of the train/test split, the partition and the baselines, in ``[0, MAX_SEED]``.
    seeded_noise : bool
        Research: parties draw their DP noise from seeds derived from ``seed`` (reproducible, NOT private
        against anyone who knows the seed); False: production randomness, exact samplers.
    baselines : bool
        Also train the baselines (central eDPRF, each party alone, non-private forest, majority class).
    """

    def __post_init__(self) -> None:
        for name in ("data", "schema"):
            if getattr(self, name) is not None:
                object.__setattr__(self, name, Path(getattr(self, name)))
        object.__setattr__(self, "shuffled_label_parties", tuple(self.shuffled_label_parties))
        self._check_numbers()
        self._check_choices()
        self._check_data()
        self._check_budget_units()

    @property
    def auto_depth(self) -> bool:
        """Whether each party chooses its own depth (``max_depth="auto"``)."""
        return self.max_depth == "auto"

    @property
    def depth_cap(self) -> int:
        """The largest depth a party may grow: ``max_depth``, or the automatic rule's cap."""
        return AUTO_DEPTH_CAP if self.auto_depth else int(self.max_depth)

    def _check_numbers(self) -> None:
        def fail(name: str, expected: str) -> None:
            raise SettingsError(f"{{{name}}}: expected {expected}, got {{value!r}}", value=getattr(self, name))

        if not (_is_number(self.epsilon) and math.isfinite(self.epsilon) and self.epsilon > 0):
            fail("epsilon", "a positive number (the epsilon of each party's release)")
        if not (_is_number(self.evaluation_epsilon) and math.isfinite(self.evaluation_epsilon)) or (
            self.evaluation_epsilon < 0
        ):
            fail("evaluation_epsilon", "a number >= 0 (0 skips the evaluation round)")
        if not (_is_number(self.evaluation_max_interval_width) and self.evaluation_max_interval_width > 0):
            fail("evaluation_max_interval_width", "a number > 0 (1: evaluate whatever the width)")
        if not (self.auto_depth or (_is_integer(self.max_depth) and 1 <= self.max_depth <= MAX_DEPTH_LIMIT)):
            fail("max_depth", f"'auto' or an integer in [1, {MAX_DEPTH_LIMIT}]")
        for name, low in (("parties", 1), ("n_trees", 1), ("n_bins", 2)):
            if not (_is_integer(getattr(self, name)) and getattr(self, name) >= low):
                fail(name, f"an integer >= {low}")
        if not (_is_number(self.test_size) and 0 < self.test_size < 1):
            fail("test_size", "a share in (0, 1)")
        for name in ("party_holdout", "validation_size"):
            if not (_is_number(getattr(self, name)) and 0 <= getattr(self, name) < 1):
                fail(name, "a share in [0, 1)")
        if not (_is_integer(self.seed) and 0 <= self.seed <= MAX_SEED):
            fail("seed", f"an integer in [0, {MAX_SEED}]")
        if not (_is_integer(self.tolerated_parties) and 1 <= self.tolerated_parties <= MAX_TOLERATED_PARTIES):
            fail("tolerated_parties", f"an integer in [1, {MAX_TOLERATED_PARTIES}]")
        for p in self.shuffled_label_parties:
            if not (_is_integer(p) and 0 <= p < self.parties):
                raise SettingsError(f"{{shuffled_label_parties}} {p}: expected 0..{self.parties - 1}")

    def _check_choices(self) -> None:
        for name, choices in (
            ("partition", PARTITIONS),
            ("leaf", LEAVES),
            ("split_mode", SPLIT_MODES),
            ("engine", ENGINES),
        ):
            if getattr(self, name) not in choices:
                raise SettingsError(
                    f"{{{name}}}: expected one of {', '.join(choices)}, got {{value!r}}", value=getattr(self, name)
                )
        if self.partition == "dirichlet" and not (_is_number(self.alpha) and self.alpha > 0):
            raise SettingsError("{alpha}: expected a positive Dirichlet concentration, got {value!r}", value=self.alpha)
        if self.partition == "column" and not self.column:
            raise SettingsError("{partition} column needs {column} NAME")
        if not (isinstance(self.sep, str) and len(self.sep) == 1):
            raise SettingsError("{sep}: expected one character, got {value!r}", value=self.sep)

    def _check_data(self) -> None:
        if self.data is None:  # the embedded dataset, with its own schema and file format: these would be ignored
            for given, name in (
                (self.schema is not None, "schema"),
                (not self.header, "header"),
                (self.sep != SETTING_DEFAULTS["sep"], "sep"),
            ):
                if given:
                    raise SettingsError(
                        "{" + name + "} describes {data}, and no {data} was given: the embedded {dataset} "
                        "{embedded} would run, with its own schema and format; give {data}, or drop {" + name + "}",
                        embedded=repr(self.dataset),
                    )
        elif self.dataset != SETTING_DEFAULTS["dataset"]:
            raise SettingsError(
                "{dataset} {embedded} names an embedded dataset, and {data} was given: drop one of them",
                embedded=repr(self.dataset),
            )
        if self.data is not None and not self.data.is_file():
            raise SettingsError("{data} {path}: no such file", path=str(self.data))
        if self.data is not None and self.schema is None:
            raise SettingsError(
                "{data} needs {schema}: bounds, categories and classes must be declared, not inferred "
                "(`edprf schema draft DATA --label COL` writes a starting point)"
            )

    def _check_budget_units(self) -> None:
        from client import micro_epsilon  # after the cheap checks: this import pulls in the core

        for name in ("epsilon", "evaluation_epsilon"):
            value = getattr(self, name)
            if value and micro_epsilon(value) is None:
                raise SettingsError(
                    f"{{{name}}}: expected a positive multiple of 1e-06 (parties' ledgers count epsilon "
                    "exactly in millionths), got {value!r}",
                    value=value,
                )

    @classmethod
    def field_names(cls) -> tuple[str, ...]:
        """The settings' names, in order."""
        return tuple(f.name for f in fields(cls))


def _is_integer(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
