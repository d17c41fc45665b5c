"""Shared fixtures."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from edprf_core import Schema
from tests.synthetic import make_data, make_schema

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"


@pytest.fixture
def schema() -> Schema:
    return make_schema()


@pytest.fixture
def data(schema: Schema) -> tuple[pd.DataFrame, pd.Series]:
    return make_data(schema, 2000, seed=0)
