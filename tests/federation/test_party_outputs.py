"""Evaluation counts through the whole data path: one hostile record moves each by at most 1."""

from __future__ import annotations

from client import evaluation_counts
from client._local_data import load_local_data
from edprf_core import EDPRFClassifier, load_schema

from ._neighbours import HOSTILE, file_bytes, make_party


def test_evaluation_counts_move_by_at_most_one_per_hostile_record(tmp_path):
    """Sensitivity of (correct, total) under add/remove, for every hostile line of the harness."""
    base = make_party(tmp_path / "d", file_bytes())
    schema = load_schema(base.schema_path)
    train = load_local_data(base.data_path, schema, 0.0, "ab" * 16)
    forest = EDPRFClassifier(schema, epsilon=1.0, max_depth=3, random_state=0).fit(train.X_train, train.y_train).forest_
    salt = "cd" * 16
    held = load_local_data(base.data_path, schema, 0.5, salt)
    correct, total = evaluation_counts(forest, held.X_holdout, held.y_holdout)
    assert total > 0
    for name, line, where in HOSTILE:
        other = make_party(tmp_path / name, file_bytes(line, where))
        held2 = load_local_data(other.data_path, schema, 0.5, salt)
        c2, t2 = evaluation_counts(forest, held2.X_holdout, held2.y_holdout)
        assert abs(c2 - correct) <= 1 and abs(t2 - total) <= 1, name
