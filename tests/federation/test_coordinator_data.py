"""The coordinator reads its own test and validation files with the parties' per-record rules."""

from __future__ import annotations

import math

import pytest

from edprf_core import EDPRFClassifier, example_schema
from server import forest_metrics
from server._run_files import _conforming_rows

from ..conftest import SHARED_DATA

HEART = SHARED_DATA / "heart_disease_cleveland" / "processed.cleveland.data"


@pytest.mark.skipif(not HEART.is_file(), reason="needs ../shared/data/heart_disease_cleveland")
def test_heart_file_with_missing_cells_is_scored_after_the_per_record_filter():
    """The UCI file has no header, writes codes as floats and marks 6 missing cells with '?'."""
    schema = example_schema("heart_disease_cleveland")
    X, y = _conforming_rows("test-data-path", HEART, schema, header=False)
    assert len(X) == 297  # 303 rows, 6 with a '?' in a column whose rule is missing='refuse'
    clf = EDPRFClassifier(schema, epsilon=1.0, max_depth=2, random_state=0).fit(X, y)
    metrics = forest_metrics(clf.forest_, X, y)
    assert 0.0 < metrics["accuracy"] <= 1.0 and not math.isnan(metrics["balanced_accuracy"])
