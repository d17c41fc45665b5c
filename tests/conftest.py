"""Shared fixtures."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

from edprf_core import Schema
from tests.synthetic import make_data, make_schema

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"


@pytest.fixture
def permissive_umask() -> Iterator[None]:
    """The umask most accounts have (022), for a test of what must be owner-only whatever the umask."""
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


@pytest.fixture
def schema() -> Schema:
    return make_schema()


@pytest.fixture
def data(schema: Schema) -> tuple[pd.DataFrame, pd.Series]:
    return make_data(schema, 2000, seed=0)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The longest modules first (:mod:`tests._module_order`): ./test.sh's two workers then finish together."""
    from tests._module_order import module_seconds, order_longest_first

    order_longest_first(items, module_seconds())
