"""scikit-learn input conventions for the estimator: feature names, feature counts, tags.

The estimator reads ``X`` under its public schema: a DataFrame by column name (in any column order; the
schema's ``ignored_columns`` are dropped by rule), an array positionally in the schema's order.  On top of
that, this module applies scikit-learn's own bookkeeping so that the estimator behaves like any other
scikit-learn classifier: ``fit`` records ``n_features_in_`` (the schema's feature count) and, for a
DataFrame with string column names, ``feature_names_in_`` (the schema's feature names, in model order);
``predict``, ``predict_proba`` and ``score`` match a DataFrame's columns by name as ``fit`` does, and warn or
fail where a scikit-learn estimator would (an array after fitting on a DataFrame, a DataFrame after fitting
on an array, the wrong number of columns in an array, a DataFrame missing one of the schema's features).

Privacy: everything here looks at the shape and the column names of ``X`` only, never at a value, so it
spends no ε; the errors it raises depend on no record.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray
from scipy.sparse import issparse
from sklearn.exceptions import DataConversionWarning
from sklearn.utils.multiclass import type_of_target
from sklearn.utils.validation import validate_data

from ._column_names import misspelling_hint
from ._encoding import as_frame, encode_labels, first_rows
from ._exceptions import DataValidationError, EDPRFWarning, RefusedCellsError
from ._fit_context import caller_outside_package
from ._label_reading import LABELS_READ_BY_CALLER
from ._schema import REFUSE, CategoricalFeature, Schema

if TYPE_CHECKING:
    from sklearn.base import BaseEstimator
    from sklearn.utils import Tags

__all__ = [
    "check_fit_input",
    "check_predict_input",
    "log_of",
    "refuse_continuous_target",
    "refused_cells_named",
    "schema_input_tags",
    "warn_if_labels_read",
]


def log_of(proba: NDArray[np.float64]) -> NDArray[np.float64]:
    """``np.log(proba)`` with ``-inf`` for a probability of 0 (``predict_log_proba``; privacy cost: none)."""
    with np.errstate(divide="ignore"):
        return np.log(proba)


def _shape(X: object) -> tuple[int, ...] | None:
    """The shape of ``X`` (None when it has none); a list of rows is only measured."""
    shape = getattr(X, "shape", None)
    if shape is not None:
        return tuple(shape)
    try:
        return np.asarray(X, dtype=object).shape
    except ValueError:  # ragged rows: the encoder says what is wrong
        return None


def _check_layout(estimator: BaseEstimator, X: object) -> tuple[int, ...] | None:
    """Refuse sparse, complex and non-2-D input with scikit-learn's wording; return the shape."""
    if issparse(X):
        raise TypeError(
            f"{type(estimator).__name__} does not support sparse input: every cell is read under the schema's "
            "rules one by one; pass a dense array or a DataFrame (X.toarray())"
        )
    dtypes = X.dtypes if isinstance(X, pd.DataFrame) else [getattr(X, "dtype", np.dtype(object))]
    if any(np.dtype(d).kind == "c" for d in dtypes if isinstance(d, np.dtype)):
        raise DataValidationError("Complex data not supported: the schema's features are real numbers or categories")
    shape = _shape(X)
    if shape is not None and len(shape) != 2:
        raise DataValidationError(
            f"Expected a 2-D X (rows by features), got shape {shape}. Reshape your data either using "
            "array.reshape(-1, 1) if your data has a single feature or array.reshape(1, -1) if it contains a "
            "single sample"
        )
    return shape


def _as_1d_labels(y: object) -> object:
    """``y`` itself, or a column vector raveled with scikit-learn's DataConversionWarning."""
    if y is None:  # validate_data refuses it: a classifier requires y
        return y
    if isinstance(y, pd.DataFrame) and y.shape[1] == 1:
        column = y.iloc[:, 0]
    elif not isinstance(y, (pd.Series, pd.DataFrame)) and (_shape(y) or ())[1:] == (1,):
        column = np.asarray(y).ravel()
    elif isinstance(y, (pd.Series, pd.DataFrame, np.ndarray, list, tuple)):
        return y
    else:  # another array-like (it implements __array__): read it as an array
        return np.asarray(y)
    warnings.warn(
        "A column-vector y was passed when a 1d array was expected. Please change the shape of y to "
        "(n_samples, ), for example using ravel().",
        DataConversionWarning,
        stacklevel=3,
    )
    return column


def refuse_continuous_target(y: object, schema: Schema) -> None:
    """Name a regression target as scikit-learn does when its values are not declared classes.

    It reads the label values, so ``fit`` calls it after the accountant's charge, which keeps the
    accountant's record independent of the values.  The charge does not make the failure DP: an
    exception on one dataset against a model on its neighbour is not bounded by any ε.  The
    exception stays with the caller, who holds the data; a party never reaches it (its rows are
    kept only with declared labels, :func:`edprf_core.encoding.conforming_rows`, and any later error leaves
    as the constant ``internal_error``).
    """
    dtype = getattr(y, "dtype", None)
    text_categories = isinstance(dtype, pd.CategoricalDtype) and isinstance(dtype.categories.dtype, pd.StringDtype)
    if (
        isinstance(dtype, pd.StringDtype)
        or (isinstance(dtype, pd.ArrowDtype) and dtype.kind in "OSU")
        or text_categories
    ):
        return  # text cells: type_of_target can only say "continuous" of floats (and would sort them all)
    if isinstance(y, (np.ndarray, pd.Series)) and isinstance(dtype, np.dtype) and dtype.kind in "biuUS":
        return  # booleans, integers, numpy text: never "continuous" (type_of_target's milliseconds saved per fit)
    try:
        with np.errstate(invalid="ignore"):  # NaN labels: numpy's cast warning beside the encoder's error (K10)
            kind = type_of_target(y, input_name="y")
    except (ValueError, TypeError):  # NaN, mixed or unreadable labels: the label encoder explains
        return
    if kind != "continuous":
        return
    try:
        encode_labels(y, schema)
    except DataValidationError as exc:
        raise DataValidationError(f"Unknown label type: continuous target; {exc}") from None


def warn_if_labels_read(y: object, labels: NDArray[np.integer], schema: Schema, owner: str) -> None:
    """Warn once per fit when some raw label differs from the declared class the schema read it as.

    An alias (``"yes"`` for 1) or a text number (``"1"`` for 1) is read by the schema, but scikit-learn's scorers
    and metrics compare the raw labels with :meth:`predict`'s declared classes as they are: scores on raw labels
    are then wrong without any error (scikit-learn user review K2: ``scoring="accuracy"`` gave 0.559 where
    ``score`` gave 0.788).  ``labels`` are the class indices ``y`` was encoded to.  Each distinct raw label is
    compared once (numpy's ``==``: 1.0 and True equal 1, as a scorer compares them).

    Warns
    -----
    EDPRFWarning
        Naming up to three labels and what they read as, and ``schema.read_labels(y)``.

    Notes
    -----
    Not warned, and not checked, inside :func:`~edprf_core.encoding.labels_read_by_caller` (a party's release, the demo, a simulation's
    baselines: they read a file's text labels by the schema and score nothing with scikit-learn; the check costs
    a pass over ``y``).

    Privacy cost: none released: the warning names the caller's own labels to the caller.
    """
    if LABELS_READ_BY_CALLER.get():
        return
    raw = y if isinstance(y, pd.Series) else pd.Series(np.asarray(y, dtype=object).ravel())
    codes, uniques = pd.factorize(raw, use_na_sentinel=False)
    if len(uniques) == 0:
        return
    first = first_rows(codes)  # factorize numbers the labels in order of first occurrence
    classes = list(schema.label.classes)
    read = []
    for position in first:
        value, declared = raw.iloc[position], classes[int(labels[position])]
        try:
            same = bool(value == declared)
        except (TypeError, ValueError):
            same = False
        if not same:
            shown_value = value.item() if isinstance(value, np.generic) else value  # 2, not np.int64(2)
            shown_class = declared.item() if isinstance(declared, np.generic) else declared
            read.append(f"{shown_value!r} as {shown_class!r}")
    if read:
        shown = ", ".join(read[:3]) + (f" and {len(read) - 3} more" if len(read) > 3 else "")
        warnings.warn(
            f"{owner}.fit read some labels through the schema ({shown}): scikit-learn's scorers and metrics "
            "compare raw labels with predict's declared classes as they are, so their scores on these raw labels "
            "are wrong; pass them y = schema.read_labels(y) (cross_val_score, GridSearchCV and accuracy_score "
            "alike; the estimator's own score reads labels by the schema)",
            EDPRFWarning,
            stacklevel=caller_outside_package(),
        )


def check_fit_input(
    estimator: BaseEstimator, X: ArrayLike | pd.DataFrame, y: ArrayLike | pd.Series, schema: Schema
) -> ArrayLike | pd.Series:
    """Record ``n_features_in_`` / ``feature_names_in_``, check ``X``'s layout against the schema, return ``y``.

    Parameters
    ----------
    estimator : the estimator being fitted (its attributes are set)
    X : DataFrame with the schema's feature columns, or 2-D array in schema order
    y : labels; a column vector is raveled with a ``DataConversionWarning``
    schema : the public schema

    Returns
    -------
    y : the labels as a 1-D array-like (``y`` itself unless it was a column vector)

    Raises
    ------
    DataValidationError
        When a DataFrame lacks some of the schema's feature columns, holds
        undeclared ones (neither features nor ignored columns) or the label
        column, or names a column twice; a 2-D
        array does not have one column per declared feature; ``X`` is not 2-D
        or complex; ``y`` is missing, is not 1-D (a column vector is raveled) or has another number of rows
        than ``X``.
    TypeError
        For sparse ``X``.

    Notes
    -----
    Privacy cost: none.  ``X`` and ``y`` are checked by their type, dtype, shape
    and column names only; no value is read (the values are read after the
    accountant's charge, see :func:`refuse_continuous_target`).  Nothing leaves
    the caller.
    ``n_features_in_`` is the schema's feature count and ``feature_names_in_``
    (for a DataFrame with string column names, as in scikit-learn) the
    schema's feature names in model order: a DataFrame is matched by column
    name, in any order, and its declared ignored columns are dropped by rule.
    """
    shape = _check_layout(estimator, X)
    y = _as_1d_labels(y)
    if y is None:  # scikit-learn's refusal ("requires y to be passed") comes first, whatever X holds
        validate_data(estimator, X=X, y=y, reset=True, skip_check_array=True)
    if isinstance(X, pd.DataFrame):
        _refuse_odd_columns(X, schema)
        _refuse_missing_features(X, schema)
        as_frame(X, schema)  # other columns must be declared ignored columns
    elif shape is not None and shape[1] != schema.n_features:
        minimum = " while a minimum of 1 is required" if shape[1] == 0 else ""
        raise DataValidationError(
            f"X has {shape[1]} feature(s) (shape={shape}){minimum}, expected {schema.n_features}: the schema "
            f"{schema.name!r} declares {list(schema.feature_names)} and an array is read in that order"
        )
    validate_data(estimator, X=_schema_view(X, schema), y=y, reset=True, skip_check_array=True)
    y_rows = _shape(y)
    if y_rows is not None and len(y_rows) != 1:  # layout, not values: refused before any charge
        raise DataValidationError(
            f"y must be 1-D (one label per row), got shape {y_rows}: pass the label column alone (a Series, or "
            "y[:, 0] for the first column); nothing was charged"
        )
    if shape is not None and y_rows is not None and shape[0] != y_rows[0]:  # shapes only, before any charge
        raise DataValidationError(f"X has {shape[0]} rows but y has {y_rows[0]}")
    return y


def _refuse_missing_features(X: pd.DataFrame, schema: Schema) -> None:
    """Name the schema's features a DataFrame lacks (column names only)."""
    names = {str(c) for c in X.columns}
    missing = [n for n in schema.feature_names if n not in names]
    if missing:
        given = [str(c) for c in X.columns]
        shown = given if len(given) <= 12 else [*given[:12], f"... {len(given) - 12} more"]
        known = {*schema.feature_names, *schema.ignored_columns, schema.label.column}
        renamed = _renamed_columns_hint(X.columns, missing)
        prefixed = renamed.startswith(_PREFIX_HINT)  # every column is prefixed: one hint, not one per column
        spelt = "" if prefixed else misspelling_hint([n for n in given if n not in known], missing, "X")
        raise DataValidationError(
            f"X lacks some of the schema's feature columns: missing columns {missing}{renamed if prefixed else ''}; "
            f"the schema {schema.name!r} declares {list(schema.feature_names)} (a DataFrame is matched by column "
            f"name); X has {shown}{spelt}{'' if prefixed else renamed}"
        )


def _renamed_columns_hint(columns: pd.Index, missing: list[str]) -> str:
    """Why a frame's columns may not carry the schema's names (library-user review S3-8): scikit-learn's
    ColumnTransformer prefixes them with its transformers' names (``num__age``), and a frame made from an array
    numbers them (0, 1, ...)."""
    given = [str(c) for c in columns]
    if given and all("__" in name for name in given) and any(name.split("__", 1)[-1] in missing for name in given):
        return (
            f"{_PREFIX_HINT} ({given[0]}): give it verbose_feature_names_out=False, or pass the estimator the "
            "untransformed columns (it needs no scaling)"
        )
    if any(name.split("__", 1)[-1] in missing for name in given if "__" in name):
        return (
            "; a ColumnTransformer prefixes its output columns with the transformer's name (num__age): give it "
            "verbose_feature_names_out=False, or pass the estimator the untransformed columns (it needs no scaling)"
        )
    if len(columns) and all(isinstance(c, (int, np.integer)) for c in columns):
        return (
            "; X's columns are numbered, not named: name them as the schema does, or pass an array (read in the "
            "schema's feature order)"
        )
    return ""


_PREFIX_HINT = "; every column of X carries a ColumnTransformer's <step>__ prefix"
"""How :func:`_renamed_columns_hint` starts when every column is prefixed (then the only hint given)."""


def _schema_view(X: object, schema: Schema) -> object:
    """What scikit-learn's name and count bookkeeping sees: for a DataFrame, no rows and the schema's feature
    columns in the schema's order (matched by name; ignored columns dropped), so ``feature_names_in_`` is the
    schema's feature names whatever the frame's column order; anything else unchanged."""
    if not isinstance(X, pd.DataFrame):
        return X
    position = {str(c): i for i, c in enumerate(X.columns)}
    return X.iloc[:0, [position[n] for n in schema.feature_names]]


def _refuse_odd_columns(X: pd.DataFrame, schema: Schema) -> None:
    """Refuse a frame that names a column twice, or holds the label among the features (it would become a
    feature name the model then asks for at predict).  Column names only."""
    names = [str(c) for c in X.columns]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise DataValidationError(f"X names a column twice: {twice}; pass each feature once")
    if schema.label.column in names:
        raise DataValidationError(
            f"X holds the label column {schema.label.column!r}: pass the features only "
            f"(X.drop(columns=[{schema.label.column!r}])) and the labels as y"
        )


def _refuse_undeclared_columns(X: pd.DataFrame, schema: Schema) -> None:
    """Name a frame's columns that are neither features nor declared ignored columns, with the two ways out: select
    the model's features (``X[clf.feature_names_in_]``), or declare the columns in the schema (before fitting).
    Column names only."""
    names = [str(c) for c in X.columns]
    known = [*schema.feature_names, *schema.ignored_columns, schema.label.column]
    unknown = [n for n in names if n not in known]
    if unknown:
        spelt = misspelling_hint(unknown, [n for n in known if n not in names], "the frame")
        raise DataValidationError(
            f"unknown columns {unknown}: pass the model's feature columns only, X[clf.feature_names_in_] (in any "
            "order; an identifier such as a patient number stays in your frame to join the results back), or, "
            f"for a model you fit yourself, declare them in the schema as features or ignored_columns{spelt}"
        )


PREDICTION_REFUSAL_NOTE = (
    "; one refused cell fails the whole call, as in scikit-learn: drop or fix the rows named before predicting; "
    "`edprf predict` on a file instead scores the other rows and gives each refused one its status and reason"
)
"""What a prediction adds to a refused cell's error (:func:`refused_cells_named`)."""


@contextmanager
def refused_cells_named() -> Iterator[None]:
    """Around a prediction: a cell a ``refuse`` rule refuses (the error names its column, first rows and cells)
    gets :data:`PREDICTION_REFUSAL_NOTE`, what to do and that the CLI scores the other rows.  Privacy cost: none."""
    try:
        yield
    except RefusedCellsError as exc:
        raise DataValidationError(f"{exc}{PREDICTION_REFUSAL_NOTE}") from None


def check_predict_input(estimator: BaseEstimator, X: ArrayLike | pd.DataFrame, schema: Schema) -> None:
    """Check ``X`` against the schema and what ``fit`` recorded, the scikit-learn way (warnings and errors alike).

    A DataFrame is matched by column name as in ``fit``: any column order, the schema's ignored columns
    dropped by rule; one lacking a schema feature, or holding the label or an undeclared column, is refused
    (:class:`DataValidationError`, naming the columns).  An array is read in the schema's order and must have
    one column per feature.  scikit-learn's warnings for an array after a fit on named columns, and the
    reverse, are kept.

    Privacy cost: none (type, shape and column names only).
    """
    _check_layout(estimator, X)
    if isinstance(X, pd.DataFrame):
        _refuse_odd_columns(X, schema)
        _refuse_missing_features(X, schema)
        _refuse_undeclared_columns(X, schema)
    validate_data(estimator, X=_schema_view(X, schema), reset=False, skip_check_array=True)


def _accepts_missing(schema: Schema) -> bool:
    """Whether every feature's rule takes a missing value (NaN) instead of refusing the row."""
    return all(not (isinstance(f.missing, str) and f.missing == REFUSE) for f in schema.features)


def schema_input_tags(tags: Tags, schema: Schema | None) -> Tags:
    """Set the input tags that follow from the schema's rules.

    ``allow_nan`` is true only when no feature refuses missing values (NaN is
    then imputed or coded by the schema's rule); ``string`` is true because
    cells are read one by one under the schema (text cells are parsed);
    ``categorical`` is true when the schema declares a categorical feature.
    """
    tags.input_tags.string = True
    tags.input_tags.allow_nan = schema is not None and _accepts_missing(schema)
    tags.input_tags.categorical = schema is not None and any(isinstance(f, CategoricalFeature) for f in schema.features)
    return tags
