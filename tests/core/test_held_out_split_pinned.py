"""The held-out split's hash is pinned: the same rows and salt give the same uniforms in every version.

A party records the rule its releases trained under (``client._held_out_record.HOLDOUT_SPLIT``) and refuses to
evaluate a model holding a release made under another rule.  A change of the hash that keeps the rule's name would
slip past that refusal: a release would then be evaluated on rows it trained on.  So the uniforms of a few rows are
pinned here (computed at 0.2.7, rule ``readings-v2``); a deliberate change of the hash must rename the rule and
update these values together.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from client._held_out_record import HOLDOUT_SPLIT
from client._held_out_split import _FOLDED_ROWS, keyed_uniform
from edprf_core import example_schema

pytestmark = pytest.mark.privacy

SCHEMA = example_schema("diabetes_prediction")
SALT = "0123456789abcdef" * 2
ROWS = pd.DataFrame(
    {
        "gender": ["Female", "Male", "Other", "Female", None, "Male"],
        "age": ["80.0", "54", " 54.0", "x", "3", "61"],
        "hypertension": ["0", "1", "0", "1", "0", "1"],
        "heart_disease": ["1", "0", "0", "", "0", "0"],
        "smoking_history": ["never", "No Info", "current", "former", "ever", None],  # None imputed as "No Info"
        "bmi": ["25.19", "27.32", "", "23.45", "NA", "31.4"],
        "HbA1c_level": ["6.6", "6.6", "5.7", "5", "4.8", "7.1"],
        "blood_glucose_level": ["140", "80", "158", "155", "85", "200"],
        "diabetes": ["0", "0", "1", "0", "1", "1"],
    }
)
PINNED = [
    "0x1.d378a3bdf6a24p-3",
    "0x1.4fac4c5e0c758p-3",
    "0x1.149da1ecfb72cp-2",
    "0x1.5cc4adbae833cp-2",
    "0x1.4b15fe01e3bfbp-1",
    "0x1.7cb0ce800dde4p-2",  # added at 0.2.9 (mutation campaign 4, M02); 0.2.7 gives the same
]


def test_the_rule_these_values_pin_is_the_one_a_party_records():
    assert HOLDOUT_SPLIT == "readings-v2"


def _in_file_order(column: pd.Series) -> pd.Series:
    """The column as a party numbers its text: categories in order of first appearance, a null code -1."""
    return column.astype(pd.CategoricalDtype(column.dropna().unique()))


@pytest.mark.parametrize("as_categories", [None, "sorted", "file order"], ids=["text", "categorical", "file-order"])
def test_the_uniforms_of_pinned_rows_are_unchanged(as_categories):
    """Text and categorical columns hash alike.  The last row's null ``smoking_history`` is imputed (as ``No
    Info``): a null cell (code -1) must hash as a missing cell, not as the column's first category (``never`` in
    file order; mutation campaign 4, M02)."""
    rows = {None: ROWS, "sorted": ROWS.astype("category"), "file order": ROWS.apply(_in_file_order)}[as_categories]
    assert [float.hex(float(u)) for u in keyed_uniform(rows, SCHEMA, SALT)] == PINNED


def test_a_row_gets_the_same_uniform_on_either_side_of_a_fold_boundary():
    """The hashes are folded a part of the rows at a time: a row's uniform is the one it gets alone."""
    rng = np.random.default_rng(0)
    picks = rng.integers(0, len(ROWS), 2 * _FOLDED_ROWS + 7)
    whole = keyed_uniform(ROWS.iloc[picks].reset_index(drop=True).astype("category"), SCHEMA, SALT)
    pinned = np.array([float.fromhex(u) for u in PINNED])
    np.testing.assert_array_equal(whole, pinned[picks])  # every row, across both boundaries
