"""scikit-learn's order of the classes: the schema's declared classes, sorted.

scikit-learn's classifiers keep ``classes_`` sorted (``np.unique(y)``), and its probability scorers,
``log_loss``, ``roc_auc_score(multi_class=...)`` and ``CalibratedClassifierCV`` rely on it: for two classes the
``roc_auc`` scorer takes the column of ``classes_[-1]`` and scores it as the larger label's, so a schema declaring
``("no-default", "default")`` got 1 - AUC, and a grid search on it preferred the noisiest ε (library-user review
S2-1).  The estimators (:class:`~edprf_core.EDPRFClassifier`, :class:`~edprf_core.DPMarginalsClassifier`,
:class:`~edprf_core.ReleasedForestClassifier`) therefore give ``classes_`` sorted and ``predict_proba``'s columns
in that order.  The model itself (:class:`~edprf_core.forest.DPForest`), ``edprf predict``'s ``p_`` columns, the
wire format and the ONNX graph keep the declared order.

Privacy cost: none.  The sorted order is a function of the public class list alone, never of ``y``: every class
keeps its column whether or not the rows hold it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

__all__ = ["declared_columns", "in_classes_order", "sorted_classes"]


def sorted_classes(declared: Sequence[object]) -> NDArray:
    """The declared classes in scikit-learn's order (sorted, as ``np.unique`` sorts them); the declared order when
    they do not sort (classes of mixed types, which ``np.unique`` refuses too)."""
    try:
        ordered = sorted(declared)
    except TypeError:
        ordered = list(declared)
    return np.asarray(ordered)


def declared_columns(classes_: NDArray, declared: Sequence[object]) -> NDArray[np.intp]:
    """For each entry of ``classes_``, its column among the ``declared`` classes (a permutation).

    From the fitted ``classes_`` rather than recomputed, so an estimator pickled before ``classes_`` was sorted
    (declared order) keeps its columns and its ``classes_`` aligned.
    """
    position = {value: k for k, value in enumerate(declared)}
    return np.fromiter((position[value] for value in classes_.tolist()), np.intp, count=len(classes_))


def in_classes_order(proba: NDArray[np.float64], classes_: NDArray, declared: Sequence[object]) -> NDArray[np.float64]:
    """``proba``'s columns (in the declared order) in the order of ``classes_``; ``proba`` itself when it is the
    same order."""
    columns = declared_columns(classes_, declared)
    if np.array_equal(columns, np.arange(len(columns))):
        return proba
    return proba[:, columns]
