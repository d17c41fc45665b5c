"""scikit-learn input conventions for the estimator: feature names, feature counts, tags.

The estimator reads ``X`` under its public schema (a DataFrame by column
name, an array in the schema's order).  On top of that, this module applies
scikit-learn's own bookkeeping so that the estimator behaves like any other
scikit-learn classifier: ``fit`` records ``n_features_in_`` (and
``feature_names_in_`` for a DataFrame with string column names), and
``predict``, ``predict_proba`` and ``score`` warn or fail exactly where a
scikit-learn estimator would (a reordered or renamed DataFrame, an array after
fitting on a DataFrame, the wrong number of columns).

Privacy: everything here looks at the shape and the column names of ``X``
only, never at a value, so it spends no ε; the errors it raises depend on no
record.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike
from sklearn.utils.validation import validate_data

from ._encoding import as_frame
from ._exceptions import DataValidationError
from ._schema import REFUSE, CategoricalFeature, Schema

if TYPE_CHECKING:
    from sklearn.base import BaseEstimator
    from sklearn.utils import Tags

__all__ = ["check_fit_input", "check_predict_input", "schema_input_tags"]


def _shape(X: object) -> tuple[int, ...] | None:
    """The shape of ``X`` without reading its values (None when it has none)."""
    shape = getattr(X, "shape", None)
    if shape is not None:
        return tuple(shape)
    try:
        return np.shape(X)  # a list of rows: only its nesting is read
    except ValueError:  # ragged rows
        return None


def check_fit_input(estimator: BaseEstimator, X: ArrayLike | pd.DataFrame, schema: Schema) -> None:
    """Record ``n_features_in_`` / ``feature_names_in_`` and check ``X``'s layout against the schema.

    Parameters
    ----------
    estimator : the estimator being fitted (its attributes are set)
    X : DataFrame with the schema's feature columns, or 2-D array in schema order
    schema : the public schema

    Raises
    ------
    DataValidationError
        When a DataFrame lacks some of the schema's feature columns, or a 2-D
        array does not have one column per declared feature.

    Notes
    -----
    Privacy cost: none (column names and shape only; no value is read).
    ``n_features_in_`` is the number of columns of ``X`` and
    ``feature_names_in_`` its column names, as in scikit-learn; they are the
    schema's values when ``X`` holds exactly the schema's features in order.
    """
    validate_data(estimator, X=X, reset=True, skip_check_array=True)
    if isinstance(X, pd.DataFrame):
        names = {str(c) for c in X.columns}
        missing = [n for n in schema.feature_names if n not in names]
        if missing:
            raise DataValidationError(
                f"X lacks some of the schema's feature columns: missing columns {missing}; the schema "
                f"{schema.name!r} declares {list(schema.feature_names)} (a DataFrame is matched by column name)"
            )
        as_frame(X, schema)  # other columns must be the label or declared ignored columns
        return
    shape = _shape(X)
    if shape is not None and len(shape) == 2 and shape[1] != schema.n_features:
        raise DataValidationError(
            f"X has {shape[1]} feature(s) (shape={shape}), expected {schema.n_features}: the schema "
            f"{schema.name!r} declares {list(schema.feature_names)} and an array is read in that order"
        )


def check_predict_input(estimator: BaseEstimator, X: ArrayLike | pd.DataFrame) -> None:
    """Check ``X`` against what ``fit`` recorded, the scikit-learn way (warnings and errors alike).

    Privacy cost: none (column names and shape only).
    """
    validate_data(estimator, X=X, reset=False, skip_check_array=True)


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
    tags.input_tags.categorical = schema is not None and any(
        isinstance(f, CategoricalFeature) for f in schema.features)
    return tags
