"""A missing code declared as a number (``missing_values = [..., "-999"]``) is missing however the file writes it.

The numbers audit: with ``-999`` declared missing, an HbA1c written ``-999.0`` (pandas writes a float column so,
once a cell is missing) was read as a measurement, clipped to the lower bound 3 and scored 6x lower than the same
row read as missing; its detail said "-999 clipped", naming the declared code.  Clipped cells are now named as
written (``400.0001``, not ``400``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from edprf_core import EDPRFClassifier, Schema, load_embedded
from edprf_core._encoding import SHOWN_CELL_CHARS
from edprf_core.prediction import score_rows


@pytest.fixture(scope="module")
def model():
    """The embedded bank model's schema with ``-999`` declared missing and balance's missing values kept apart."""
    X, y, schema = load_embedded("bank_marketing")
    text = schema.to_toml()
    text = text.replace("format = 1\n", 'format = 1\nmissing_values = ["", "?", "-999"]\n', 1)
    at = text.index('name = "balance"')
    text = text[:at] + text[at:].replace('missing = "refuse"', 'missing = "separate"', 1)
    with_code = Schema.from_toml(text)
    assert with_code.missing_values == ("", "?", "-999")
    return EDPRFClassifier(with_code, epsilon=1.0, random_state=0).fit(X.iloc[:4000], y.iloc[:4000]), X


def _balance_codes(clf, rows):
    return clf.forest_.encode(rows)[:, clf.schema.feature_names.index("balance")]


def test_a_numeric_missing_code_is_missing_however_it_is_written(model):
    clf, X = model
    rows = pd.concat([X.iloc[[7]]] * 7, ignore_index=True).astype(object)
    rows["balance"] = ["", "-999", "-999.0", " -999.00 ", -999.0, "-9.99e2", "-998.5"]
    scores = score_rows(clf.forest_, rows)
    assert scores.status.tolist() == ["ok"] * 7  # nothing clipped: -999 in any spelling is missing
    np.testing.assert_array_equal(scores.proba[1:6], np.repeat(scores.proba[:1], 5, axis=0))
    np.testing.assert_allclose(clf.predict_proba(rows), scores.proba, atol=1e-12)  # the estimator reads them so too
    codes = _balance_codes(clf, rows)
    separate = clf.forest_.grid.n_codes[clf.schema.feature_names.index("balance")] - 1  # "separate": the last code
    assert codes[:6].tolist() == [separate] * 6 and codes[6] != separate  # -998.5 is a balance, not the code


def test_a_clipped_cell_is_named_as_written(model):
    clf, X = model
    balance = next(f for f in clf.schema.features if f.name == "balance")
    rows = pd.concat([X.iloc[[7]]] * 2, ignore_index=True).astype(object)
    rows["balance"] = ["100000.0001", "-10000.5"]
    scores = score_rows(clf.forest_, rows)
    assert scores.status.tolist() == ["clipped", "clipped"]
    assert f"column 'balance': 100000.0001 clipped to its upper bound {balance.upper:g}" in scores.detail[0]
    assert f"column 'balance': -10000.5 clipped to its lower bound {balance.lower:g}" in scores.detail[1]


def test_a_party_reads_the_code_as_missing_in_any_spelling_and_hashes_it_as_missing(tmp_path):
    """The party's own reader (distinct texts read together, another route than score_rows') drops the rows whose
    balance is the code (``missing = "refuse"``), and the held-out split's hash reads every spelling alike."""
    from client._local_data import load_local_data
    from edprf_core.encoding import cell_readings

    X, y, schema = load_embedded("bank_marketing")
    with_code = Schema.from_toml(
        schema.to_toml().replace("format = 1\n", 'format = 1\nmissing_values = ["", "?", "-999"]\n', 1)
    )
    frame = X.iloc[:50].assign(**{schema.label.column: y.iloc[:50].to_numpy()}).astype(object)
    spellings = ["-999", "-999.0", " -999.00 ", "-9.99e2", "-998"]
    frame.loc[frame.index[:5], "balance"] = spellings
    frame.to_csv(tmp_path / "party.csv", index=False)
    data = load_local_data(tmp_path / "party.csv", with_code, 0.0, "0" * 32)
    assert len(data.X_train) == 46  # the four spellings of the code refused, -998 (a balance) kept
    assert data.X_train.index.min() == 4  # rows 0-3 are the ones left out
    readings = cell_readings(pd.Series(spellings, dtype="str"), with_code, "balance")
    assert np.isnan(readings[:4]).all() and readings[4] == -998.0  # missing reads as NaN, whatever its spelling


def test_a_long_clipped_cell_is_cut_as_a_refused_cell_is(model):
    """The whole-change review: the cell named as written had no length cap (a 200-digit cell gave 247 characters of
    detail; a cell of up to 1 MB would be copied whole into predict's output)."""
    clf, X = model
    rows = X.iloc[[7]].copy().astype(object)
    rows["balance"] = "9" * 200
    [detail] = score_rows(clf.forest_, rows.reset_index(drop=True)).detail
    assert detail.startswith(
        "column 'balance': " + "9" * SHOWN_CELL_CHARS + "... (200 characters) clipped to its upper bound"
    )
    assert len(detail) < 120
