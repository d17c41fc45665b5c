"""score_rows: each row's status agrees with the training encoder's rules, probabilities with predict_proba."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from edprf_core import EDPRFClassifier, load_embedded
from edprf_core.encoding import FeatureGrid, conforming_rows, encode_features
from edprf_core.prediction import read_labels, score_rows

HOSTILE_CELLS = [
    "",
    "?",
    " ",
    "nan",
    "NaN",
    "inf",
    "-inf",
    "1e309",
    "abc",
    " 7 ",
    "007",
    "1e3",
    "-5",
    "1e6",
    None,
    "x" * 100,
    "unknown",
    "married",
    " married ",
    "MARRIED",
    "yes",
    "0x10",
    "\ufffd",
]


@pytest.fixture(scope="module")
def bank():
    X, y, schema = load_embedded("bank_marketing")
    clf = EDPRFClassifier(schema, epsilon=1.0, n_trees=3, max_depth=4, n_bins=8, random_state=0)
    return clf.fit(X.iloc[:3000], y.iloc[:3000]).forest_, X.iloc[3000:3200].astype(str).reset_index(drop=True), y


def _hostile_frame(frame: pd.DataFrame, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    out = frame.astype(object).copy()
    for i in range(len(out)):
        if rng.random() < 0.5:
            out.iat[i, int(rng.integers(out.shape[1]))] = HOSTILE_CELLS[int(rng.integers(len(HOSTILE_CELLS)))]
    return out


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_status_is_the_encoders_verdict_and_probabilities_are_predict_probas(bank, seed):
    forest, rows, _ = bank
    frame = _hostile_frame(rows, seed)
    scores = score_rows(forest, frame)
    label = pd.Series(["no"] * len(frame))
    keep, _ = conforming_rows(frame, label, forest.schema)
    assert ((scores.status == "refused") == ~keep).all()
    assert keep.sum() < len(frame)  # the hostile cells refused some rows
    np.testing.assert_allclose(scores.proba[keep], forest.predict_proba(frame[keep]), rtol=0, atol=1e-12)
    assert np.isnan(scores.proba[~keep]).all()
    # clipped: a number outside the declared bounds, scored like its bound
    problems = []
    encode_features(frame, forest.schema, FeatureGrid.from_schema(forest.schema, forest.grid_bins), problems)
    assert all(("clipped" in d) for d in scores.detail[scores.status == "clipped"])
    for d in scores.detail[scores.status == "refused"]:
        assert "column '" in d


def test_each_row_is_scored_alone(bank):
    forest, rows, _ = bank
    frame = _hostile_frame(rows, 5)
    whole = score_rows(forest, frame)
    for i in range(0, len(frame), 17):
        alone = score_rows(forest, frame.iloc[[i]].reset_index(drop=True))
        assert alone.status[0] == whole.status[i] and alone.detail[0] == whole.detail[i]
        np.testing.assert_array_equal(alone.proba[0], whole.proba[i])


def test_malformed_lines_keep_their_place(bank):
    forest, rows, _ = bank
    frame = rows.head(4).astype(object).copy()
    frame.iloc[1] = None
    scores = score_rows(forest, frame, np.array(["", "3 fields, expected 16", "", ""], dtype=object))
    assert list(scores.status) == ["ok", "malformed", "ok", "ok"]
    assert scores.detail[1] == "3 fields, expected 16" and np.isnan(scores.proba[1]).all()


def test_read_labels_follows_the_schema():
    _, _, schema = load_embedded("bank_marketing")
    idx, why = read_labels(pd.Series([" yes", "no", "maybe", "", None], dtype=object), schema)
    assert list(idx) == [1, 0, -1, -1, -1]
    assert list(why) == ["", "", "label not one of the declared classes", "label missing", "label missing"]


def test_many_feature_grids_score_every_row_as_predict_proba():
    """The wall robot grid has more than 2**62 cells: rows are scored without the packed-key shortcut."""
    X, y, schema = load_embedded("wall_robot_navigation")
    forest = (
        EDPRFClassifier(schema, epsilon=1.0, n_trees=3, max_depth=4, n_bins=20, random_state=0)
        .fit(X.iloc[:2000], y.iloc[:2000])
        .forest_
    )
    rows = X.iloc[2000:2300].astype(str).reset_index(drop=True)
    assert float(np.prod(np.asarray(forest.grid.n_codes, dtype=float))) >= 2.0**62
    np.testing.assert_allclose(score_rows(forest, rows).proba, forest.predict_proba(rows), rtol=0, atol=1e-12)


def test_rows_of_a_grid_too_wide_for_one_integer_are_kept_apart_without_a_warning():
    """300 features of 20 codes: 20**300 cells, past float64's range; no overflow warning, every row its own."""
    import warnings

    from edprf_core._row_scoring import _distinct_rows

    codes = np.tile(np.arange(3, dtype=np.int32), (4, 100))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        first, inverse = _distinct_rows(codes, (20,) * 300)
    np.testing.assert_array_equal(first, np.arange(4))
    np.testing.assert_array_equal(inverse, np.arange(4))


def test_rows_score_as_the_model_predicts_when_the_marginals_have_their_own_grid():
    """A two-class model whose marginals part has more bins than its trees' grid: rows of one trees' bin but
    different marginals bins must get their own marginals term (score_rows once gave every row of a trees' bin
    the first representative's: 0.20 against the model's 0.77 for an age of 50).  A declared missing token
    ("-999") is a missing cell, as the training encoder reads it, not a number clipped to the lower bound."""
    from edprf_core import EDPRFClassifier, Schema
    from tests.federation._neighbours import SCHEMA_TOML

    declared = 'missing_values = ["", "?", "-1"]'  # the harness's tokens; this test declares -999 instead
    assert declared in SCHEMA_TOML
    schema = Schema.from_toml(SCHEMA_TOML.replace(declared, 'missing_values = ["", "?", "-999"]'))
    rng = np.random.default_rng(0)
    X = pd.DataFrame(
        {
            "age": rng.uniform(0, 100, 500).round(1).astype(str),
            "code": rng.choice(["007", "12", "other"], 500),
            "grade": rng.integers(1, 4, 500).astype(str),
        }
    )
    y = pd.Series((X["age"].astype(float) > 50).astype(int).astype(str), name="outcome")
    forest = EDPRFClassifier(schema, epsilon=5.0, random_state=0).fit(X, y).forest_
    assert forest.marginals is not None and forest.marginals_bins != forest.grid_bins
    rows = pd.DataFrame(
        {
            "age": ["-999", "", *np.linspace(0, 100, 201).round(1).astype(str)],
            "code": "007",
            "grade": "1",
        }
    )
    scored = score_rows(forest, rows)
    np.testing.assert_allclose(scored.proba, forest.predict_proba(rows), rtol=0, atol=1e-12)
    assert list(scored.status[:2]) == ["ok", "ok"] and scored.detail[0] == ""
