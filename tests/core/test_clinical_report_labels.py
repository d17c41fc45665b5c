"""edprf_core.metrics.clinical_report reads labels (the model's ``classes_``) as well as class indices.

It read class indices only: ``clinical_report(y_test, proba, clf.classes_)`` with ``y_test`` of 'no'/'yes' said
``ValueError: invalid literal for int() with base 10: 'no'``, and so did ``positive='yes'``.
"""

from __future__ import annotations

import numpy as np
import pytest

from edprf_core.metrics import clinical_report

PROBA = np.array([[0.8, 0.2], [0.3, 0.7], [0.6, 0.4], [0.1, 0.9]])


def _same(a, b):
    assert a.confusion.tolist() == b.confusion.tolist() and a.positive == b.positive
    assert a.accuracy == b.accuracy and a.roc_auc == b.roc_auc and a.brier == b.brier


def test_labels_are_read_through_the_classes_like_their_indices():
    by_index = clinical_report([0, 1, 1, 0], PROBA, ("no", "yes"), positive=1, threshold=0.3)
    by_label = clinical_report(
        np.array(["no", "yes", "yes", "no"]), PROBA, np.array(["no", "yes"]), positive="yes", threshold=0.3
    )
    _same(by_label, by_index)
    assert by_label.positive == 1 and by_label.as_dict()["positive_class"] == "yes"
    _same(clinical_report(["no", "yes", "yes", "no"], PROBA, ("no", "yes"), positive=1, threshold=0.3), by_index)


def test_a_label_not_among_the_classes_is_named_with_the_classes():
    with pytest.raises(ValueError, match=r"y: expected labels among the classes \['no', 'yes'\] .*got 'maybe'"):
        clinical_report(["no", "yes", "maybe", "no"], PROBA, np.array(["no", "yes"]))
    with pytest.raises(ValueError, match=r"positive: expected a label among the classes \['no', 'yes'\].*got 'Yes'"):
        clinical_report(["no", "yes", "yes", "no"], PROBA, ("no", "yes"), positive="Yes")
    with pytest.raises(ValueError, match="class indices in"):  # an index out of range, as before
        clinical_report([0, 2, 1, 0], PROBA, ("no", "yes"))


def test_integer_classes_other_than_positions_read_values_among_them_as_labels():
    """Grades (1, 2): 1 and 2 are the classes (indices 0 and 1); with classes 0..K-1 both readings agree."""
    as_labels = clinical_report([1, 2, 2, 1], PROBA, (1, 2), positive=2)
    _same(as_labels, clinical_report([0, 1, 1, 0], PROBA, ("a", "b"), positive=1))
    # not every value is a class: the indices reading
    _same(clinical_report([0, 1, 1, 0], PROBA, (1, 2)), clinical_report([0, 1, 1, 0], PROBA, ("a", "b")))
    # indices=True keeps the index reading (what callers holding encode_labels' output mean)
    _same(
        clinical_report([1, 1, 0, 0], PROBA, (1, 2), positive=1, indices=True),
        clinical_report([1, 1, 0, 0], PROBA, ("a", "b"), positive=1),
    )
    _same(
        clinical_report([0, 1, 1, 0], PROBA, (0, 1), positive=1),
        clinical_report([0, 1, 1, 0], PROBA, (0, 1), positive=1, indices=True),
    )
    with pytest.raises(ValueError, match="all read one way"):  # 2 only a label, 0 only an index
        clinical_report([2, 0, 1, 1], PROBA, (1, 2))
    with pytest.raises(ValueError, match=r"\(indices=False\); got 0"):
        clinical_report([0, 1, 1, 0], PROBA, (1, 2), indices=False)


def test_positive_is_read_as_y_is():
    """With classes (1, 2), y of indices and positive=1 took positive as the label 1 (index 0): the wrong positive
    class, AUC and confusion without a word (review of stop 44)."""
    from edprf_core.metrics import clinical_report

    p = np.array([[0.9, 0.1], [0.2, 0.8], [0.3, 0.7], [0.6, 0.4]])
    by_index = clinical_report([0, 1, 1, 0], p, (1, 2), positive=1)  # y holds indices: so does positive
    assert by_index.positive == 1 == clinical_report([0, 1, 1, 0], p, (1, 2), positive=1, indices=True).positive
    by_label = clinical_report([1, 2, 2, 1], p, (1, 2), positive=2)  # y holds labels: so does positive
    assert by_label.positive == 1 and by_label.accuracy.value == by_index.accuracy.value == 1.0
