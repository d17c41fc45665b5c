"""A released forest as a fitted scikit-learn classifier (for using a model, not training one).

:class:`ReleasedForestClassifier` wraps a :class:`DPForest` (a party's release
or a coordinator's merged global model) and behaves like any fitted
scikit-learn classifier: ``predict``, ``predict_proba``, ``score``,
``classes_``, ``feature_names_in_`` and ``n_features_in_``, usable as the last
step of a :class:`~sklearn.pipeline.Pipeline`, with :mod:`sklearn.metrics`
and with :meth:`sklearn.calibration.CalibrationDisplay.from_estimator`.
:func:`protocol.load_classifier` builds one from a ``global-model.edprf``
file, verifying the parties' signatures when given their keys.

Privacy: everything here is post-processing of released values (tree
structure, clamped noisy leaf counts, public parameters); it spends no ε
and reads no party's data.  Scores computed on the caller's rows are exact
statistics of those rows (not DP).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray
from sklearn.base import BaseEstimator, ClassifierMixin

from ._class_order import declared_columns, in_classes_order, sorted_classes
from ._domain_warning import warn_if_clipped
from ._encoding import encode_labels
from ._exceptions import DataValidationError
from ._forest import DPForest
from ._input_checks import check_predict_input, log_of, refused_cells_named, schema_input_tags
from ._schema import Schema

__all__ = ["ReleasedForestClassifier", "schema_accuracy"]


def schema_accuracy(
    schema: Schema,
    predict_proba: Callable[[], NDArray[np.float64]],
    y: ArrayLike | pd.Series,
    sample_weight: ArrayLike | None = None,
    classes: ArrayLike | None = None,
) -> float:
    """Accuracy of a model's ``predict_proba()`` (of the rows scored) against ``y`` read by ``schema`` (NaN
    without rows); ``classes``: the classes of its columns (default: the schema's, declared order).  A row is
    predicted the class of its most probable column, ties to the first, as ``predict`` does.

    The labels are read first: a missing or undeclared label raises :class:`DataValidationError` before
    anything is scored.  Privacy cost: none for the model (post-processing of a release); the accuracy is an
    exact statistic of the scored rows and ``y`` (not DP).
    """
    truth = encode_labels(y, schema)
    predicted = np.argmax(predict_proba(), axis=1)
    if classes is not None:  # predict_proba's columns are in the order of classes (an estimator's sorted classes_)
        truth = np.argsort(declared_columns(np.asarray(classes), schema.classes))[truth]
    if truth.shape[0] != predicted.shape[0]:
        raise DataValidationError(f"X has {predicted.shape[0]} rows but y has {truth.shape[0]}")
    if sample_weight is not None and np.shape(sample_weight) != truth.shape:
        raise DataValidationError(
            f"sample_weight: expected one weight per row, shape {truth.shape}, got shape {np.shape(sample_weight)}"
        )
    if truth.shape[0] == 0:
        return float("nan")
    return float(np.average(predicted == truth, weights=sample_weight))


class ReleasedForestClassifier(ClassifierMixin, BaseEstimator):
    """A fitted classifier whose forest was released (DP) rather than fitted here.

    Parameters
    ----------
    forest : DPForest
        The released or merged forest; its schema declares the features (in
        order), how each cell is read and the classes.
    provenance : object, default None
        Where the forest came from (parties, run id, signature status), as
        :func:`protocol.load_classifier` records it; shown, never used to
        predict.

    Attributes
    ----------
    classes_ : ndarray
        The schema's declared classes, sorted (scikit-learn's order): the columns of :meth:`predict_proba` (the
        forest, ``forest_``, keeps the declared order).
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        The schema's feature names, in model order: pass a DataFrame holding
        these columns (matched by name, in any order; the schema's ignored
        columns are dropped by rule), or a 2-D array in this order.
    forest_ : DPForest
    schema_ : Schema
    guarantee_ : str
        The forest's privacy statement (:meth:`DPForest.guarantee`).
    dp_ : bool
        True only when the forest is differentially private as released, as :attr:`EDPRFClassifier.dp_`: False
        when any part was seeded, drew floating-point noise or used a research option, or the schema was
        drafted from data (the reasons the model file's parameters record; ``guarantee_`` names them).

    Notes
    -----
    The forest is fixed.  :meth:`fit` does not train (training spends ε and
    happens at the parties): it checks ``X`` against the schema and returns
    ``self`` unchanged, so that the classifier can end a Pipeline whose other
    steps are fitted.  Cells are read by the schema's per-cell rules, as in
    training; a cell a rule refuses (a missing value where the schema says
    ``missing = "refuse"``, text in a numeric column, an undeclared category)
    raises :class:`DataValidationError` naming the column and row.  ``edprf
    predict`` instead gives such rows a status and scores the others.
    """

    def __init__(self, forest: DPForest, provenance: object = None) -> None:
        self.forest = forest
        self.provenance = provenance

    # The fitted attributes are read from the forest (nothing is fitted here), so they can never drift from it.
    @property
    def forest_(self) -> DPForest:
        if not isinstance(self.forest, DPForest):
            raise TypeError(f"forest: expected a DPForest, got {type(self.forest).__name__}")
        return self.forest

    @property
    def schema_(self) -> Schema:
        return self.forest_.schema

    @property
    def classes_(self) -> NDArray:
        return sorted_classes(self.schema_.classes)  # scikit-learn's order (the model keeps the declared one)

    @property
    def n_features_in_(self) -> int:
        return self.schema_.n_features

    @property
    def feature_names_in_(self) -> NDArray[np.object_]:
        return np.asarray(self.schema_.feature_names, dtype=object)

    @property
    def guarantee_(self) -> str:
        return self.forest_.guarantee()

    @property
    def dp_(self) -> bool:
        return self.forest_.dp

    def __sklearn_is_fitted__(self) -> bool:
        return True

    def fit(self, X: ArrayLike | pd.DataFrame, y: ArrayLike | None = None) -> ReleasedForestClassifier:
        """Check ``X``'s columns against the schema and return ``self``: the released forest is not retrained.

        Privacy cost: none (column names and shape only).
        """
        check_predict_input(self, X, self.schema_)
        return self

    def _check(self, X: ArrayLike | pd.DataFrame) -> None:
        """scikit-learn's input checks; warns (pointing at the caller of the public method) when a column of ``X``
        is mostly outside its declared bounds."""
        check_predict_input(self, X, self.schema_)
        warn_if_clipped(X, self.schema_, stacklevel=4)

    def _sorted_proba(self, X: ArrayLike | pd.DataFrame) -> NDArray[np.float64]:
        """The forest's probabilities of ``X``, columns in the order of ``classes_`` (``X`` already checked)."""
        with refused_cells_named():
            proba = self.forest_.predict_proba(X)
        return in_classes_order(proba, self.classes_, self.schema_.classes)

    def predict_proba(self, X: ArrayLike | pd.DataFrame) -> NDArray[np.float64]:
        """Class probabilities, columns in the order of ``classes_`` (privacy cost: none, post-processing)."""
        self._check(X)
        return self._sorted_proba(X)

    def predict_log_proba(self, X: ArrayLike | pd.DataFrame) -> NDArray[np.float64]:
        """The natural logarithm of :meth:`predict_proba` (``-inf`` where a probability is 0; privacy cost: none)."""
        self._check(X)
        return log_of(self._sorted_proba(X))

    def predict(self, X: ArrayLike | pd.DataFrame) -> NDArray:
        """The most probable class, ``classes_[argmax(predict_proba(X))]``: ties go to the class first in
        ``classes_`` (sorted; the model's own ``forest_.predict`` gives them to the class declared first).
        Privacy cost: none."""
        self._check(X)  # warns for the caller
        return self.classes_[np.argmax(self._sorted_proba(X), axis=1)]

    def score(
        self, X: ArrayLike | pd.DataFrame, y: ArrayLike | pd.Series, sample_weight: ArrayLike | None = None
    ) -> float:
        """Accuracy on ``(X, y)``, labels read by the schema (``"1"`` and ``1`` are the same numeric class).

        A missing or undeclared label raises :class:`DataValidationError`.
        The score is an exact statistic of ``(X, y)``: not DP, no ε spent.
        """
        self._check(X)
        return schema_accuracy(self.schema_, lambda: self._sorted_proba(X), y, sample_weight, self.classes_)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        return schema_input_tags(tags, self.forest.schema if isinstance(self.forest, DPForest) else None)
