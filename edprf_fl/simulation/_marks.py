"""The words that mark a simulation's output as NOT differentially private, shared by its tables and plot titles."""

from __future__ import annotations

import functools

__all__ = [
    "SEEDED_RUNS_MARK",
    "SEEDED_RUN_MARK",
    "TIME_SERIES_DATASETS",
    "TIME_SERIES_NOTE",
    "dataset_note",
    "not_dp_mark",
]

SEEDED_RUN_MARK = "seeded research run: NOT differentially private"
"""What heads ``edprf simulate --seeded-noise``'s table and titles its plot."""

SEEDED_RUNS_MARK = "seeded research runs, NOT differentially private"
"""What titles a sweep's plots (every run of a sweep is seeded)."""

TIME_SERIES_NOTE = "rows of this dataset are a time series; random splits are optimistic for every method."
"""What ``edprf demo``, ``edprf simulate`` and ``edprf sweep`` say of a time-series dataset's random splits."""

TIME_SERIES_DATASETS = frozenset({"wall_robot_navigation"})
"""Embedded datasets whose rows are a time series (the wall robot's readings at 9 Hz)."""

_DRAFTED = "drafted schema"


def dataset_note(dataset: str, schema_fingerprint: str = "") -> str:
    """:data:`TIME_SERIES_NOTE` for a dataset of :data:`TIME_SERIES_DATASETS`, by its embedded name or by its schema
    (the same data read from its own file under the embedded schema: review rev-research2 N9), else ``""``."""
    if dataset in TIME_SERIES_DATASETS or (schema_fingerprint and schema_fingerprint in _time_series_schemas()):
        return TIME_SERIES_NOTE
    return ""


@functools.cache
def _time_series_schemas() -> frozenset[str]:
    """The fingerprints of the :data:`TIME_SERIES_DATASETS`' schemas."""
    from edprf_core import example_schema

    return frozenset(example_schema(name).fingerprint for name in TIME_SERIES_DATASETS)


def not_dp_mark(seeded: bool, drafted: bool) -> str:
    """One run's mark: :data:`SEEDED_RUN_MARK` (with ``, drafted schema``), the drafted schema's alone, or ``""``.

    Parameters
    ----------
    seeded : bool
        The parties drew their noise from research seeds.
    drafted : bool
        The schema was drafted from the data (its bounds and categories are data).
    """
    if seeded:
        return SEEDED_RUN_MARK + (f", {_DRAFTED}" if drafted else "")
    return f"{_DRAFTED}: NOT differentially private" if drafted else ""
