"""Regressions of issue 19, findings 5 (a value-dependent fit failure is charged) and 6 (pandas 3 dtypes).

Finding 6: ``CellRules.clean`` and the label aliases acted on ``object`` columns only; pandas 3
reads text as ``str``, so scikit-learn style input skipped ``strip_whitespace`` and the label
aliases.  A cell must be read the same whatever dtype pandas or Arrow gave its column.
"""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest

from edprf_core import (
    BudgetAccountant,
    CategoricalFeature,
    ContinuousFeature,
    DataValidationError,
    EDPRFClassifier,
    LabelSpec,
    Schema,
)
from edprf_core.encoding import encode_labels

SCHEMA = Schema(
    features=(
        ContinuousFeature("age", 0.0, 100.0, source="test"),
        CategoricalFeature("workclass", ("State-gov", "Private"), source="test"),
    ),
    label=LabelSpec("income", ("<=50K", ">50K"), aliases=((">50K.", ">50K"), ("<=50K.", "<=50K"))),
    name="census-like",
)

CSV = "age,workclass,income\n39, State-gov, <=50K\n50, Private, >50K.\n38, Private, >50K\n53, State-gov, <=50K.\n"

TEXT_DTYPES = ["object", "str", "string[python]", "string[pyarrow]", "category"]


def _frame(dtype: str) -> tuple[pd.DataFrame, pd.Series]:
    frame = pd.read_csv(io.StringIO(CSV), dtype={"workclass": dtype, "income": dtype})
    return frame[["age", "workclass"]], frame["income"]


@pytest.mark.parametrize("dtype", TEXT_DTYPES)
def test_text_cells_are_stripped_and_aliased_whatever_the_dtype(dtype):
    X, y = _frame(dtype)
    assert encode_labels(y, SCHEMA).tolist() == [0, 1, 1, 0]
    clf = EDPRFClassifier(SCHEMA, epsilon=1.0, n_trees=1, max_depth=1, n_bins=4, random_state=0).fit(X, y)
    assert clf.predict(X).shape == (4,)


def test_read_csv_with_pandas_defaults_fits():
    """pandas 3's default dtype for text is ``str``: the census file failed with "undeclared category ' State-gov'"."""
    frame = pd.read_csv(io.StringIO(CSV))
    EDPRFClassifier(SCHEMA, epsilon=1.0, n_trees=1, max_depth=1, n_bins=4, random_state=0).fit(
        frame[["age", "workclass"]], frame["income"]
    )


@pytest.mark.parametrize("as_", ["list", "array", "str-series", "arrow-series"])
def test_aliased_labels_in_every_container(as_):
    cells = [" <=50K", ">50K.", " >50K ", "<=50K."]
    y = {
        "list": cells,
        "array": np.array(cells),
        "str-series": pd.Series(cells, dtype="str"),
        "arrow-series": pd.Series(cells, dtype="string[pyarrow]"),
    }[as_]
    assert encode_labels(y, SCHEMA).tolist() == [0, 1, 1, 0]


def test_missing_cells_of_string_columns_read_as_missing():
    X = pd.DataFrame({"age": [30.0, 40.0], "workclass": pd.Series([None, "Private"], dtype="string[pyarrow]")})
    y = pd.Series(["<=50K", ">50K"], dtype="string[python]")
    with pytest.raises(DataValidationError, match="missing value"):
        EDPRFClassifier(SCHEMA, epsilon=1.0, n_trees=1, max_depth=1, n_bins=4, random_state=0).fit(X, y)


def test_a_non_integral_label_fails_after_the_charge():
    """README: a fit refused for its columns or shape costs nothing; one that fails on a value was charged."""
    schema = Schema(
        features=(ContinuousFeature("x", 0.0, 1.0, source="test"),), label=LabelSpec("y", (0, 1)), name="numbers"
    )
    X = pd.DataFrame({"x": [0.1, 0.2, 0.3]})
    acc = BudgetAccountant(epsilon_cap=10.0)
    with pytest.raises(DataValidationError, match="continuous target"):
        EDPRFClassifier(schema, epsilon=1.0, accountant=acc, random_state=0).fit(X, [0.0, 1.5, 1.0])
    assert acc.total == pytest.approx(1.0)
    with pytest.raises(DataValidationError):  # a refusal for the shape costs nothing
        EDPRFClassifier(schema, epsilon=1.0, accountant=acc, random_state=0).fit(X.assign(z=1.0), [0, 1, 1])
    assert acc.total == pytest.approx(1.0)


NUMERIC_DTYPES = ["int64", "float64", "Int64", "Float64", "boolean", "int64[pyarrow]", "double[pyarrow]"]


@pytest.mark.parametrize("dtype", NUMERIC_DTYPES)
def test_a_numeric_column_s_missing_cells_are_its_missing_values_whatever_the_dtype(dtype):
    """The schema's tokens are text: as text they meet no number or bool, so in a numeric column ``missing`` is the
    missing values themselves (Arrow-held numbers too: their comparison with the text tokens raised ArrowTypeError
    before).  A column the schema reads as numbers also meets a token that is a number as a number
    (``CellRules.numbers``): the number -999 of a Parquet column, the text ``-999.0`` a writer made of it (the
    numbers audit: that cell was clipped to the lower bound while ``-999`` was missing), and a bool read as the
    number 1 under the token "1", whatever the column's dtype (the review: reading bools by the dtype made a
    bool's reading depend on whether another row was missing)."""
    from edprf_core._encoding import CellRules

    rules = CellRules(missing_values=("", "?", "-999", "1", "True", "nan"))
    values = {"boolean": [True, False, None], "int64": [1, -999], "float64": [1.0, -999.0, np.nan]}.get(
        dtype, [1, -999, None]
    )
    series = pd.Series(values, dtype=dtype)
    assert rules.missing(series).tolist() == [False] * 2 + [True] * (len(values) - 2)
    x, missing = rules.numbers(series)
    assert missing.tolist() == ([True, False, True] if dtype == "boolean" else [True] * len(values))
    assert np.isnan(x[missing]).all() and (dtype != "boolean" or x[1] == 0.0)
    as_objects = pd.Series(values, dtype=object)  # the same cells with another dtype: the same reading
    assert rules.numbers(as_objects)[1].tolist() == missing.tolist()
    written = ["-999", "-999.0", " -999.00 ", "-9.99e2", "5", "-9990", "-999.5"]
    assert rules.missing(pd.Series(written, dtype="str")).tolist() == [True] + [False] * 6  # as text
    for cells in (pd.Series(written, dtype="str"), pd.Series(written, dtype=object)):
        assert rules.numbers(cells)[1].tolist() == [True] * 4 + [False] * 3  # as numbers
    assert not CellRules(missing_values=("", "?")).numbers(pd.Series([-999.0, 0.0]))[1].any()  # no numeric token


def test_a_text_category_that_looks_like_a_number_is_not_a_numeric_token():
    """The review of the numeric tokens: with the token "1", the declared text category "01" read as missing (text
    categories compare as text, so the tokens meet them as text only); numeric categories meet them as numbers."""
    from edprf_core import CategoricalFeature
    from edprf_core._encoding import CellRules, _encode_categorical

    rules = CellRules(missing_values=("", "1"))
    text = CategoricalFeature("code", ("01", "1.0", "x"), missing="separate")
    cells = pd.Series(["01", "1.0", "1", "x"], dtype="str")
    assert _encode_categorical(cells, text, "code", problems=[], rules=rules).tolist() == [
        0,
        1,
        3,
        2,
    ]  # only "1" itself
    numeric = CategoricalFeature("grade", (0, 1, 2), missing="separate")
    grades = pd.Series(["0", "1.0", "1", "2", True, False], dtype=object)
    assert _encode_categorical(grades, numeric, "grade", problems=[], rules=rules).tolist() == [0, 3, 3, 2, 3, 0]
    bools = pd.Series([True, False], dtype=bool)  # the same cells typed as bools: the same codes
    assert _encode_categorical(bools, numeric, "grade", problems=[], rules=rules).tolist() == [3, 0]


def test_a_bool_s_reading_never_depends_on_another_row_under_a_numeric_token():
    """The whole-change review's S1: under the token "0", a text category "False" read a bool False as its
    category in a bool column, but as missing once another row was None (pandas then types the column object)."""
    from edprf_core import CategoricalFeature
    from edprf_core._encoding import CellRules, _encode_categorical

    rules = CellRules(missing_values=("", "?", "0"))
    smoker = CategoricalFeature("smoker", ("False", "True"), missing="separate")
    alone = _encode_categorical(pd.Series([False, True]), smoker, "smoker", problems=[], rules=rules)
    beside_none = _encode_categorical(pd.Series([False, True, None]), smoker, "smoker", problems=[], rules=rules)
    assert alone.tolist() == beside_none[:2].tolist() == [0, 1] and beside_none[2] == 2


INTEGER_TEXT = Schema(
    features=(
        CategoricalFeature("stage", ("0", "1", "2"), source="test"),
        CategoricalFeature("code", ("007", "12", "250.1", "other"), unknown="other", source="test"),
    ),
    label=LabelSpec("outcome", ("0", "1")),
    name="integer-text",
)


@pytest.mark.parametrize("dtype", [*TEXT_DTYPES, "float"])
def test_text_integers_meet_their_spelling_with_a_point_and_zeros_and_nothing_else(dtype):
    """Black-box review (stop 57): pandas writes a column of integers as ``1.0`` once one cell is missing, so
    text classes ``["0", "1"]`` refused every other row of the file.  A list of plain integers meets ``1.0`` and
    ``2.00``; ``1.5``, ``01`` and ``-0.0`` stay undeclared; a list that is not all integers (``"007"``, ``"250.1"``)
    is compared as text alone (``7.0`` is not ``007``).  Whatever dtype holds the cells."""
    from edprf_core.encoding import FeatureGrid, conforming_rows, encode_features

    stage = [1.0, 2.0, 0.0, 1.0, 1.0, 2.0] if dtype == "float" else ["1.0", "2.00", "0", "1.5", "01", "-0.0"]
    X = pd.DataFrame({"stage": pd.Series(stage).astype(dtype), "code": ["7.0", "12.0", "007", "12", "250.10", "x"]})
    y = pd.Series(["1.0", "0.0", "1", "0", "1", "0"]).astype(dtype if dtype != "float" else "object")
    keep, problems = conforming_rows(X, y, INTEGER_TEXT)
    expected_keep = [True] * 6 if dtype == "float" else [True, True, True, False, False, False]
    assert keep.tolist() == expected_keep, problems
    codes = encode_features(X[keep], INTEGER_TEXT, FeatureGrid.from_schema(INTEGER_TEXT, 4))
    assert codes[:, 0].tolist() == [1, 2, 0, 1, 1, 2][: keep.sum()]
    assert codes[:, 1].tolist() == [3, 3, 0, 1, 3, 3][: keep.sum()]  # text alone: 7.0, 12.0, 250.10 are 'other'
    assert encode_labels(y[keep], INTEGER_TEXT).tolist() == [1, 0, 1, 0, 1, 0][: keep.sum()]
    _same_when_cells_repeat(X, y, INTEGER_TEXT, keep, codes)


def _same_when_cells_repeat(X, y, schema, keep, codes):
    """The same verdicts and codes when every cell repeats (the rules then read each distinct text once and
    gather: the path of a real file, of ``schema check`` and ``party check``; rev-s57 S2-2)."""
    from edprf_core.encoding import FeatureGrid, conforming_rows, encode_features

    X3, y3 = pd.concat([X] * 3, ignore_index=True), pd.concat([y] * 3, ignore_index=True)
    keep3, _ = conforming_rows(X3, y3, schema)
    assert keep3.tolist() == np.tile(keep, 3).tolist()
    assert (
        encode_features(X3[keep3], schema, FeatureGrid.from_schema(schema, 4)).tolist()
        == np.tile(codes, (3, 1)).tolist()
    )


@pytest.mark.parametrize("dtype", TEXT_DTYPES)
def test_a_category_meets_its_cells_in_either_unicode_composition(dtype):
    """rev-data S2-4: ``Zürich`` exported decomposed (``u`` and a combining diaeresis, as macOS and PDF copies
    write it) never met the declared ``Zürich``: the row was dropped ("'Zürich' undeclared; declared are [...,
    'Zürich']"), or recoded to the catch-all without a word.  Each cell is compared in Unicode's composed form
    (NFC) with the categories', whichever form either is written in, whatever dtype holds the cells."""
    import unicodedata

    from edprf_core.encoding import FeatureGrid, cell_readings, conforming_rows, encode_features

    composed, decomposed = "Zürich", unicodedata.normalize("NFD", "Zürich")
    assert composed != decomposed
    schema = Schema(
        features=(
            CategoricalFeature("city", ("Basel", decomposed, "北京"), source="test"),  # declared decomposed
            CategoricalFeature("smoking", ("never", "jamais fumé", "No Info"), unknown="No Info", source="test"),
        ),
        label=LabelSpec("y", ("a", "b")),
    )
    X = pd.DataFrame(
        {
            "city": [composed, decomposed, "北京", "Zurich"],
            "smoking": [unicodedata.normalize("NFD", "jamais fumé"), "jamais fumé", "never", "x"],
        }
    ).astype(dtype)
    y = pd.Series(["a", "b", "a", "b"])
    keep, problems = conforming_rows(X, y, schema)
    assert keep.tolist() == [True, True, True, False], problems  # "Zurich" is another text
    codes = encode_features(X[keep], schema, FeatureGrid.from_schema(schema, 4))
    assert codes.tolist() == [[1, 1], [1, 1], [2, 0]]  # never the catch-all for the decomposed "jamais fumé"
    assert cell_readings(X["city"], schema, "city")[:2].tolist() == [1.0, 1.0]  # the split's key: the same
    _same_when_cells_repeat(X, y, schema, keep, codes)


def test_schema_check_reads_both_respellings_in_a_file_of_repeated_cells(tmp_path):
    """rev-s57 S2-2: ``check_data`` reads a real file's repeated texts once each; reverting the respellings on that
    path kept 17 % of a file's rows while the row-by-row tests passed."""
    import unicodedata

    from edprf_core import check_data

    schema = Schema(
        features=(
            CategoricalFeature("city", ("Basel", "Zürich"), source="test"),
            CategoricalFeature("stage", ("0", "1", "2"), source="test"),
        ),
        label=LabelSpec("y", ("0", "1")),
    )
    decomposed = unicodedata.normalize("NFD", "Zürich")
    lines = [f"{decomposed if i % 2 else 'Basel'},{i % 3}.0,{i % 2}.0\n" for i in range(60)]
    path = tmp_path / "repeated.csv"
    path.write_text("city,stage,y\n" + "".join(lines), encoding="utf-8")
    report = check_data(path, schema)
    assert (report.lines_read, report.rows_kept) == (60, 60), report.lines()
