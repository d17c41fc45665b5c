"""Label aliases meet a cell the way the classes do: as numbers with numeric classes, as text otherwise.

Regression: a heart-disease schema with classes ``[0, 1]`` and aliases ``{"2" = 1, "3" = 1, "4" = 1}``
kept every row when the label was read as text (the party's reader, ``edprf schema check``) but refused the
grades 2 to 4 as undeclared classes when the same labels were numbers (a Parquet file, ``pd.read_csv``'s
integers or floats): a simulation on the Parquet file trained without any sick patient.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from edprf_core import ContinuousFeature, DataValidationError, EDPRFClassifier, LabelSpec, Schema, SchemaError
from edprf_core.encoding import conforming_rows, encode_labels
from edprf_core.tables import read_table

GRADES = Schema(
    features=(ContinuousFeature("age", 0.0, 100.0, source="test"),),
    label=LabelSpec("num", (0, 1), aliases=(("2", 1), ("3", 1), ("4", 1))),
    name="heart-like",
)
EXPECTED = [0, 1, 1, 1, 1, 0]


@pytest.mark.parametrize(
    "labels",
    [
        pd.Series([0, 1, 2, 3, 4, 0]),
        pd.Series([0.0, 1.0, 2.0, 3.0, 4.0, 0.0]),
        pd.Series([0, 1, 2, 3, 4, 0], dtype="Int64"),
        pd.Series(["0", "1", "2", "3.0", " 4", "0"], dtype="str"),
        pd.Series([0, "1", 2.0, "3", 4, "0"], dtype=object),
        pd.Series(["0", "1", "2", "3", "4", "0"]).astype("category"),
        pd.Series([0, 1, 2, 3, 4, 0]).astype("category"),
    ],
    ids=["int", "float", "Int64", "str", "object", "text-category", "number-category"],
)
def test_numeric_labels_are_aliased_whatever_their_dtype(labels):
    assert encode_labels(labels, GRADES).tolist() == EXPECTED


def test_a_parquet_file_with_numeric_labels_keeps_every_graded_row(tmp_path):
    path = tmp_path / "heart.parquet"
    pq.write_table(pa.table({"age": [63.0, 67.0, 67.0, 37.0, 41.0, 56.0], "num": [0, 1, 2, 3, 4, 0]}), path)
    table = read_table(path, GRADES)
    keep, problems = conforming_rows(table.X, table.y, GRADES)
    assert keep.all() and not problems
    assert encode_labels(table.y, GRADES).tolist() == EXPECTED


def test_an_estimator_fits_on_integer_labels_with_aliases():
    X = pd.DataFrame({"age": np.linspace(30, 70, 60)})
    y = pd.Series(np.arange(60) % 5)  # 0..4: grades 2 to 4 are aliases of class 1
    clf = EDPRFClassifier(GRADES, epsilon=1.0, n_trees=1, max_depth=2, n_bins=4, random_state=0).fit(X, y)
    assert set(clf.predict(X)) <= {0, 1}


def test_text_classes_meet_a_number_cell_as_its_text():
    schema = Schema(
        features=GRADES.features, label=LabelSpec("sick", ("no", "yes"), aliases=(("0", "no"), ("1", "yes")))
    )
    assert encode_labels(pd.Series([0, 1, 1]), schema).tolist() == [0, 1, 1]
    assert encode_labels(pd.Series(["0", "yes", "no"], dtype="str"), schema).tolist() == [0, 1, 0]


def test_unaliased_labels_are_still_refused():
    from edprf_core import DataValidationError

    with pytest.raises(DataValidationError, match="undeclared class"):
        encode_labels(pd.Series([0, 1, 5]), GRADES)


@pytest.mark.parametrize(
    ("aliases", "message"),
    [
        ((("2", 1), ("2.0", 0)), "name the same label but different classes"),
        ((("1", 0),), "is the declared class 1"),
    ],
)
def test_aliases_a_cell_could_meet_twice_are_refused(aliases, message):
    with pytest.raises(SchemaError, match=message):
        LabelSpec("num", (0, 1), aliases=aliases)


def test_aliases_that_agree_are_accepted():
    assert LabelSpec("num", (0, 1), aliases=(("2", 1), ("2.0", 1), ("1.0", 1))).aliases
    assert LabelSpec("y", ("no", "yes"), aliases=(("N", "no"), ("n", "no"))).aliases


def test_read_labels_gives_the_declared_classes_that_predict_returns():
    """scikit-learn's metrics compare y with predict's declared classes as they are: on heart with aliases,
    accuracy_score(y, clf.predict(X)) said 0.57 where clf.score said 0.84 (text '0'..'4' against 0/1), and
    cross_val_score(scoring='accuracy') mis-scored silently.  Schema.read_labels reads y as fit does."""
    from sklearn.metrics import accuracy_score

    y = pd.Series(["0", "1", "2", "3.0", " 4", "0"], index=[10, 11, 12, 13, 14, 15], name="num")
    read = GRADES.read_labels(y)
    assert read.tolist() == EXPECTED and list(read.index) == list(y.index) and read.name == "num"
    assert GRADES.read_labels([0, 1, 2, 3, 4, 0]).tolist() == EXPECTED  # an array-like gives an ndarray
    assert isinstance(GRADES.read_labels(np.array([0, 4])), np.ndarray)
    X = pd.DataFrame({"age": np.linspace(30, 70, 60)})
    labels = pd.Series((np.arange(60) % 5).astype(str))
    clf = EDPRFClassifier(GRADES, epsilon=1.0, n_trees=1, max_depth=2, n_bins=4, random_state=0).fit(X, labels)
    assert accuracy_score(GRADES.read_labels(labels), clf.predict(X)) == clf.score(X, labels)
    with pytest.raises(DataValidationError, match="'7'"):  # an unknown label is refused, as fit refuses it
        GRADES.read_labels(["0", "7"])


def test_clinical_report_refusing_raw_labels_names_read_labels():
    from edprf_core.metrics import clinical_report

    proba = np.array([[0.8, 0.2], [0.3, 0.7], [0.4, 0.6]])
    with pytest.raises(ValueError, match=r"got '0', '1', '2'.*schema\.read_labels\(y\)"):
        clinical_report(np.array(["0", "1", "2"]), proba, GRADES.classes)
    report = clinical_report(GRADES.read_labels(np.array(["0", "1", "2"])), proba, GRADES.classes)
    assert report.confusion.tolist() == [[1, 0], [0, 2]]


def test_an_alias_meets_its_cells_as_a_class_does():
    """rev-s57 S2-3: alias keys were compared as text alone, so aliases {"0": "no", "1": "yes"} refused every label
    pandas wrote as 1.0 (one missing label types the column as floats) and a decomposed "Züri" missed its alias.
    They now meet their cells as classes do: in Unicode NFC, and, for keys that are all plain integers, written
    with a point and zeros; repeated cells too (the path of a real file)."""
    import unicodedata

    from edprf_core import CategoricalFeature

    feature = (CategoricalFeature("g", ("a", "b"), source="t"),)
    numbered = Schema(features=feature, label=LabelSpec("y", ("no", "yes"), aliases=(("0", "no"), ("1", "yes"))))
    assert encode_labels(pd.Series(["0", "1", "0.0", "1.0"] * 3), numbered).tolist() == [0, 1, 0, 1] * 3
    assert encode_labels(pd.Series([0.0, 1.0, 1.0]), numbered).tolist() == [0, 1, 1]
    named = Schema(features=feature, label=LabelSpec("y", ("no", "yes"), aliases=(("Züri", "yes"),)))
    decomposed = unicodedata.normalize("NFD", "Züri")
    assert encode_labels(pd.Series([decomposed, "no", decomposed]), named).tolist() == [1, 0, 1]


def test_a_respelled_alias_never_takes_a_cell_that_is_a_class():
    """rev-s57b N6: with classes ("1.0", "2.0") and an alias {"1": "2.0"}, the respelling of "1.0" as the integer
    1 moved every class-"1.0" label to "2.0".  A cell that is a class stays that class; only an exact alias key
    moves a cell (as before the respellings)."""
    from edprf_core import CategoricalFeature

    feature = (CategoricalFeature("g", ("a", "b"), source="t"),)
    schema = Schema(features=feature, label=LabelSpec("y", ("1.0", "2.0"), aliases=(("1", "2.0"),)))
    assert encode_labels(pd.Series(["1.0", "1", "2.0", "1.0"]), schema).tolist() == [0, 1, 1, 0]
