"""Shared fixtures, and the one serial group of the parallel run."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from edprf_core import Schema
from tests.synthetic import make_data, make_schema

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"


#: ``./test.sh`` runs the suite in two pytest-xdist workers (``--dist loadgroup``).  Tests that start
#: Flower processes (marker ``deployment``) or a Ray cluster (marker ``ray``) share this group, so
#: they run one after another in one worker: two federations never compete for ports, for Ray's
#: session directory or for the two cores under their timeouts.  Every other test spreads freely.
SERIAL_GROUP = "flower-and-ray"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("deployment") or item.get_closest_marker("ray"):
            item.add_marker(pytest.mark.xdist_group(SERIAL_GROUP))


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    """The serial group's time, the suite's critical path with two workers: in every run's summary,
    so that CI's log shows which real-process tests to shorten (call phases, from any worker)."""
    calls = [
        r
        for outcome in ("passed", "failed")
        for r in terminalreporter.getreports(outcome)
        if r.when == "call" and ("deployment" in r.keywords or "ray" in r.keywords)
    ]
    if not calls:
        return
    calls.sort(key=lambda r: -r.duration)
    slowest = ", ".join(f"{r.nodeid.rsplit('/', 1)[-1]} {r.duration:.0f} s" for r in calls[:5])
    terminalreporter.write_line(
        f"serial group ({SERIAL_GROUP}): {len(calls)} tests, {sum(r.duration for r in calls):.0f} s; slowest: {slowest}"
    )


@pytest.fixture
def schema() -> Schema:
    return make_schema()


@pytest.fixture
def data(schema: Schema) -> tuple[pd.DataFrame, pd.Series]:
    return make_data(schema, 2000, seed=0)
