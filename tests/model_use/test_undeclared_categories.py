"""A categorical value the schema does not declare, read as the feature's catch-all ``unknown`` category, is said
as a clipped number is: the row's status is ``clipped`` with a detail naming the column, the value and the category;
``edprf predict`` and ``edprf evaluate`` count such values per column, name the column in their summary, and exit 4
when it holds them in 20 % or more of its rows (unless ``--allow-clipped``).

The schema is the example diabetes schema with catch-alls: ``gender`` reads an undeclared value as ``'Other'``
(text categories), ``hypertension`` as ``0`` (numeric categories, compared as numbers: ``"1.0"`` meets ``1``), and
``smoking_history`` as ``'No Info'`` (whose missing rule also reads a missing cell as ``'No Info'``: a missing cell
is not an undeclared one).  The forest is fitted on synthetic rows inside that schema (seeded: a reproducible model;
nothing here is statistical, every assertion is exact).
"""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import pandas as pd
import pytest

from edprf_core import EDPRFClassifier, SeededNoiseWarning, example_schema
from edprf_core._row_scoring import CLIPPED, OK, REFUSED
from edprf_core.prediction import ClippingTally, score_rows
from edprf_fl.cli import main
from edprf_fl.cli._model_args import EXIT_CLIPPED

BASE = example_schema("diabetes_prediction")
CATCH_ALL = {"gender": "Other", "hypertension": 0, "smoking_history": "No Info"}
SCHEMA = dataclasses.replace(
    BASE,
    features=tuple(
        dataclasses.replace(f, unknown=CATCH_ALL[f.name]) if f.name in CATCH_ALL else f for f in BASE.features
    ),
)
LABEL = SCHEMA.label.column
SMOKING = SCHEMA.features[SCHEMA.feature_names.index("smoking_history")].categories


def _rows(n: int, seed: int) -> pd.DataFrame:
    """``n`` synthetic rows whose every cell is declared (inside the bounds, a declared category) and a label."""
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(
        {
            "gender": rng.choice(["Female", "Male", "Other"], n, p=[0.5, 0.45, 0.05]),
            "age": rng.uniform(1, 80, n).round(1),
            "hypertension": rng.integers(0, 2, n),
            "heart_disease": rng.integers(0, 2, n),
            "smoking_history": rng.choice(list(SMOKING), n),
            "bmi": rng.uniform(15, 45, n).round(2),
            "HbA1c_level": rng.uniform(4, 9, n).round(1),
            "blood_glucose_level": rng.integers(80, 300, n),
        }
    )
    frame[LABEL] = ((frame["HbA1c_level"] > 6.5) | (rng.random(n) < 0.05)).astype(int)
    return frame


@pytest.fixture(scope="module")
def fitted() -> EDPRFClassifier:
    train = _rows(3000, seed=0)
    clf = EDPRFClassifier(
        SCHEMA, epsilon=1.0, n_trees=4, max_depth=4, n_bins=10, random_state=0, residual_pass=False
    )  # residual_pass=False: a federation's release, as the model file below carries
    with warnings.catch_warnings():  # seeded on purpose: a reproducible test model
        warnings.simplefilter("ignore", SeededNoiseWarning)
        return clf.fit(train.drop(columns=LABEL), train[LABEL])


@pytest.fixture(scope="module")
def model_file(tmp_path_factory, fitted) -> str:
    """The fitted forest as an (unsigned) global model of one party, as ``edprf predict`` reads it."""
    from protocol import ReleasePolicy, build_global_model, decode_release, encode_release

    policy = ReleasePolicy(max_epsilon=2.0, max_depth=8, max_n_trees=50, max_bytes=1 << 22, max_n_bins=32)
    release = decode_release(encode_release(fitted.forest_, "hospital-a", None, run_id="test-run"), SCHEMA, policy)
    path = tmp_path_factory.mktemp("catch-all-model") / "global-model.edprf"
    path.write_bytes(build_global_model(SCHEMA, [release], {"run_id": "test-run"}))
    return str(path)


def _said(column: str, value: str, category: str) -> str:
    return f"column {column!r}: {value!r} is not a declared category, read as {category} (the schema's unknown rule)"


# Each case: the cells that differ from a declared row, the status, the detail.
CASES = [
    ({}, OK, ""),
    ({"gender": "F"}, CLIPPED, _said("gender", "F", "'Other'")),
    ({"gender": " Female "}, OK, ""),  # surrounding whitespace is stripped: a declared category
    ({"gender": "female"}, CLIPPED, _said("gender", "female", "'Other'")),  # case counts
    ({"hypertension": "1.0"}, OK, ""),  # numeric categories compared as numbers: 1.0 is 1
    ({"hypertension": " 0e0 "}, OK, ""),
    ({"hypertension": 1.0}, OK, ""),
    ({"hypertension": "2"}, CLIPPED, _said("hypertension", "2", "0")),
    ({"hypertension": "yes"}, CLIPPED, _said("hypertension", "yes", "0")),  # no number: undeclared
    ({"smoking_history": ""}, OK, ""),  # missing: the missing rule reads it, not the unknown rule
    ({"smoking_history": "?"}, OK, ""),
    ({"smoking_history": None}, OK, ""),
    ({"smoking_history": "x" * 30}, CLIPPED, _said("smoking_history", "x" * 24 + "... (30 characters)", "'No Info'")),
    (  # two undeclared cells and a clipped number: every one said, in the schema's column order
        {"gender": "M", "hypertension": "7", "bmi": "400.5"},
        CLIPPED,
        (
            f"{_said('gender', 'M', repr('Other'))}; {_said('hypertension', '7', '0')}; column 'bmi': 400.5 clipped "
            "to its upper bound 60"
        ),
    ),
    (
        {"gender": "F", "age": "abc"},
        REFUSED,
        f"{_said('gender', 'F', repr('Other'))}; column 'age': not a number ('abc')",
    ),
    ({"gender": ""}, REFUSED, "column 'gender': missing, and the schema refuses missing values here"),
]


def _case_frame() -> pd.DataFrame:
    base = _rows(len(CASES), seed=1).drop(columns=LABEL).astype(object)
    for i, (cells, _, _) in enumerate(CASES):
        for column, value in cells.items():
            base.iloc[i, base.columns.get_loc(column)] = value
    return base


def test_each_undeclared_cell_is_said_and_its_row_clipped(fitted):
    frame = _case_frame()
    scores = score_rows(fitted.forest_, frame)
    assert scores.status.tolist() == [status for _, status, _ in CASES]
    assert scores.detail.tolist() == [detail for _, _, detail in CASES]
    # each row's status, detail and probabilities are its own: the same when scored alone
    for i in range(len(frame)):
        alone = score_rows(fitted.forest_, frame.iloc[[i]].reset_index(drop=True))
        assert (alone.status[0], alone.detail[0]) == (scores.status[i], scores.detail[i])
        np.testing.assert_array_equal(alone.proba[0], scores.proba[i])


def test_probabilities_are_those_of_the_unknown_category(fitted):
    """The model scores an undeclared cell as its catch-all category: the probabilities equal predict_proba's on
    the row, and on the row with the catch-all category written in its place (the status adds no change)."""
    frame = _case_frame()
    scores = score_rows(fitted.forest_, frame)
    scored = scores.scored
    np.testing.assert_allclose(
        scores.proba[scored], fitted.predict_proba(frame[scored].reset_index(drop=True)), rtol=0, atol=1e-12
    )
    recoded = frame.copy()
    for i, (cells, status, _) in enumerate(CASES):
        if status == CLIPPED:
            for column in cells:
                if column in CATCH_ALL:
                    recoded.iloc[i, recoded.columns.get_loc(column)] = CATCH_ALL[column]
    again = score_rows(fitted.forest_, recoded)
    np.testing.assert_array_equal(again.proba[scored], scores.proba[scored])
    # the recoded rows hold declared categories only: ok, but for the one with a clipped bmi
    assert (again.status[scored] == OK).sum() == scored.sum() - 1


def test_the_tally_counts_undeclared_values_among_the_cells_holding_one():
    """Per column: the undeclared cells, the cells that are not missing, the catch-all, the first such cell; over
    chunks (what predict and evaluate feed) as over all rows at once, and as score_rows feeds it."""
    frame = _case_frame()
    tally = ClippingTally(SCHEMA)
    tally.add(frame)
    found = tally.undeclared()
    assert set(found) == {"gender", "hypertension", "smoking_history"}
    n = len(CASES)
    assert (found["gender"].count, found["gender"].rows) == (4, n - 1)  # F, female, M, F; one missing cell
    assert (found["gender"].category, found["gender"].example) == ("Other", "F")
    assert (found["hypertension"].count, found["hypertension"].rows, found["hypertension"].category) == (3, n, 0)
    assert found["hypertension"].example == "2"
    smoking = found["smoking_history"]
    assert (smoking.count, smoking.rows) == (1, n - 3)  # "", "?" and None are missing: in neither count
    assert smoking.example == "x" * 24 + "... (30 characters)"
    assert found["gender"].share == pytest.approx(4 / (n - 1))
    chunked = ClippingTally(SCHEMA)
    for start in range(0, n, 5):
        chunked.add(frame.iloc[start : start + 5])
    assert chunked.undeclared() == found


def test_score_rows_feeds_the_tally_leaving_out_malformed_lines(fitted):
    frame = _case_frame()
    tally = ClippingTally(SCHEMA)
    malformed = np.full(len(frame), "", dtype=object)
    malformed[1] = "expected 8 fields, saw 9"  # the 'F' row: its cells are not read
    scores = score_rows(fitted.forest_, frame, malformed, clipping=tally)
    assert (scores.status[1], scores.detail[1]) == ("malformed", "expected 8 fields, saw 9")
    whole = ClippingTally(SCHEMA)
    whole.add(frame.drop(index=1))
    assert tally.undeclared() == whole.undeclared()
    assert tally.undeclared()["gender"].count == 3


def test_a_schema_that_refuses_undeclared_values_still_refuses_them(fitted):
    """unknown = 'refuse' (the default): the row is refused as before, and nothing is tallied."""
    forest = EDPRFClassifier(BASE, epsilon=1.0, n_trees=2, max_depth=3, n_bins=10, random_state=0)
    train = _rows(500, seed=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SeededNoiseWarning)
        forest = forest.fit(train.drop(columns=LABEL), train[LABEL]).forest_
    frame = _rows(3, seed=3).drop(columns=LABEL).astype(object)
    frame.iloc[0, 0] = "F"
    frame.iloc[1, 2] = "1.0"
    tally = ClippingTally(BASE)
    scores = score_rows(forest, frame, clipping=tally)
    assert scores.status.tolist() == [REFUSED, OK, OK]
    assert scores.detail.tolist() == ["column 'gender': unknown category ('F')", "", ""]
    assert tally.undeclared() == {}


def _data_file(tmp_path, recoded: int, rows: int = 100, label: bool = False):
    """``rows`` declared rows whose first ``recoded`` write gender in another coding (F/M for Female/Male)."""
    frame = _rows(rows, seed=4)
    frame.loc[:, "gender"] = np.where(np.arange(rows) % 2 == 0, "Female", "Male")
    frame.loc[frame.index[:recoded], "gender"] = frame["gender"].iloc[:recoded].str[0]
    if not label:
        frame = frame.drop(columns=LABEL)
    path = tmp_path / f"in-{recoded}.csv"
    frame.to_csv(path, index=False)
    return path


@pytest.mark.parametrize("command", ["predict", "evaluate"])
def test_a_column_in_another_coding_is_named_and_exits_4_unless_allowed(tmp_path, capsys, model_file, command):
    data = _data_file(tmp_path, recoded=30, label=command == "evaluate")  # 30 % of the rows: F, M, F, ...
    out = ["-o", str(tmp_path / "out.csv")] if command == "predict" else []
    assert main([command, model_file, str(data), *out]) == EXIT_CLIPPED
    err = capsys.readouterr().err
    assert (
        f"edprf {command}: warning: column 'gender': 30 of 100 rows (30%) hold values the schema does not declare, "
        "read as 'Other' (another coding? e.g. 'F')" in err
    )
    assert (
        f"edprf {command}: undeclared values read as the schema's unknown category: 'gender' in 30% of its rows; "
        "those predictions are made from that category, not the value: check the column's coding against the "
        f"schema, or pass --allow-clipped to accept them (exit status {EXIT_CLIPPED})" in err
    )
    assert "values clipped to the schema's bounds" not in err  # no number was clipped
    if command == "predict":
        written = pd.read_csv(tmp_path / "out.csv", keep_default_na=False)
        assert written["status"].tolist() == [CLIPPED] * 30 + [OK] * 70  # OUT is written all the same
        assert written["detail"].iloc[1] == _said("gender", "M", "'Other'")
        out = ["-o", str(tmp_path / "out.csv"), "--force"]
    assert main([command, model_file, str(data), *out, "--allow-clipped"]) == 0
    err = capsys.readouterr().err
    assert "30 of 100 rows (30%) hold values the schema does not declare" in err
    assert (
        f"edprf {command}: undeclared values read as the schema's unknown category: 'gender' in 30% of its rows " in err
    )
    assert "(accepted: --allow-clipped)" in err


@pytest.mark.parametrize("command", ["predict", "evaluate"])
def test_a_few_undeclared_values_are_said_without_exit_4(tmp_path, capsys, model_file, command):
    data = _data_file(tmp_path, recoded=5, label=command == "evaluate")  # 5 %: below the 20 % of the rule
    out = ["-o", str(tmp_path / "out.csv")] if command == "predict" else []
    assert main([command, model_file, str(data), *out]) == 0
    captured = capsys.readouterr()
    err = captured.err
    assert "column 'gender': 5 of 100 rows (5%) hold values the schema does not declare, read as 'Other'" in err
    assert "exit status 4" not in err
    if command == "predict":
        written = pd.read_csv(tmp_path / "out.csv", keep_default_na=False)
        assert written["status"].tolist() == [CLIPPED] * 5 + [OK] * 95
        assert written["detail"].iloc[0] == _said("gender", "F", "'Other'")
    else:  # every row evaluated; the five counted as clipped
        assert (
            f"evaluated 100 rows of {data} (5 clipped: a value moved into the schema's domain by rule); 0 left out"
            in captured.out
        )
