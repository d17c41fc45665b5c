"""A warning to the data holder when a continuous column lies mostly, and far, outside its declared bounds.

The schema's rule clips such values to the bounds (:mod:`edprf_core._encoding`), at fit and at predict alike,
warning or not.  A few clipped values are ordinary, and so are values just past a bound (a patient's 6.2 against
a declared upper bound of 6, robot sensors reading 5.02 against 5): clipping is the rule for them.  A column
that is mostly outside its bounds, far beyond them, usually means the data are in other units than the schema
(a scaler before the estimator, grams against kilograms), and every prediction on it is then made from the
bounds alone: that is what the warning says, only with the evidence for it (:func:`units_evidence`).

Privacy: a local warning to whoever holds ``X``; nothing leaves, and no model depends on it.
"""

from __future__ import annotations

import warnings

import pandas as pd
from numpy.typing import ArrayLike

from ._encoding import ClippedColumn, ClippingTally, clipped_columns
from ._exceptions import DomainClippingWarning
from ._schema import Schema

__all__ = [
    "CLIPPING_WARNING_SHARE",
    "UNITS_FAR",
    "UNITS_MIN_ROWS",
    "UNITS_VERY_FAR",
    "ClippingTally",
    "clipping_message",
    "units_evidence",
    "warn_if_clipped",
]

CLIPPING_WARNING_SHARE = 0.2
"""Warn when more than this share of a continuous column's numbers lies outside its declared bounds (and far)."""

UNITS_MIN_ROWS = 10
"""Rows outside the bounds a column needs before clipping can say "other units" at :data:`UNITS_FAR`."""

UNITS_FAR = 0.05
"""The median distance beyond the bound, in domain widths, of those rows (5.02 against [0, 5] is 0.004)."""

UNITS_VERY_FAR = 0.5
"""The median distance, in domain widths, that says "other units" whatever the number of rows (one row of grams
against kilograms)."""


def units_evidence(column: ClippedColumn) -> bool:
    """Whether a clipped column looks like data in other units than the schema: mostly out of bounds
    (:data:`CLIPPING_WARNING_SHARE`), and either at least :data:`UNITS_MIN_ROWS` rows a median
    :data:`UNITS_FAR` of the domain's width beyond the bound, or :data:`UNITS_VERY_FAR` beyond it however few."""
    if column.share <= CLIPPING_WARNING_SHARE:
        return False
    return column.median_excess >= UNITS_VERY_FAR or (
        column.count >= UNITS_MIN_ROWS and column.median_excess >= UNITS_FAR
    )


def warn_if_clipped(X: ArrayLike | pd.DataFrame, schema: Schema, *, stacklevel: int = 3) -> None:
    """Warn (:class:`DomainClippingWarning`) when a continuous column of ``X`` is mostly and far out of bounds.

    Only with the evidence of other units (:func:`units_evidence`); the values are clipped either way.

    Parameters
    ----------
    X : array-like or DataFrame
        Rows as the estimator reads them (by the schema).
    schema : Schema
        The public schema whose bounds the values are clipped to.
    stacklevel : int, default 3
        Passed to :func:`warnings.warn`: 3 points at the caller of an estimator method that calls this (4: of a
        method that calls a helper which calls this).

    Notes
    -----
    Privacy cost: none (a local warning; nothing is released).
    """
    message = clipping_message(clipped_columns(X, schema))
    if message:
        warnings.warn(message, DomainClippingWarning, stacklevel=stacklevel)


def clipping_message(columns: dict[str, ClippedColumn]) -> str:
    """The text of :func:`warn_if_clipped` for ``columns`` (:func:`clipped_columns`' result, or
    :meth:`ClippingTally.columns`), ``""`` when no column shows the evidence of other units (:func:`units_evidence`).

    Privacy cost: none (local text about the caller's own rows; never released).
    """
    worst = sorted(((column.share, name) for name, column in columns.items() if units_evidence(column)), reverse=True)
    if not worst:
        return ""
    shown = ", ".join(f"{name!r} {share:.0%}" for share, name in worst[:3])
    more = f" and {len(worst) - 3} more columns" if len(worst) > 3 else ""
    return (
        f"values outside the schema's declared bounds were clipped: {shown}{more}. The data may be in other "
        "units than the schema (a scaler before the estimator? One fitted on the training rows also voids the "
        "model's DP guarantee: the estimator needs raw values); the model only sees the clipped values."
    )
