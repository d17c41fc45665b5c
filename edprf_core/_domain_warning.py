"""A warning to the data holder when a continuous column lies mostly outside its declared bounds.

The schema's rule clips such values to the bounds (:mod:`edprf_core._encoding`), at fit and at predict alike.
A few clipped values are ordinary; a column that is mostly outside its bounds usually means the data are in
other units than the schema (a scaler before the estimator, grams against kilograms), and every prediction on
it is then made from the bounds alone.

Privacy: a local warning to whoever holds ``X``; nothing leaves, and no model depends on it.
"""

from __future__ import annotations

import warnings

import pandas as pd
from numpy.typing import ArrayLike

from ._encoding import clipped_shares
from ._exceptions import DomainClippingWarning
from ._schema import Schema

__all__ = ["CLIPPING_WARNING_SHARE", "warn_if_clipped"]

CLIPPING_WARNING_SHARE = 0.2
"""Warn when more than this share of a continuous column's numbers lies outside its declared bounds."""


def warn_if_clipped(X: ArrayLike | pd.DataFrame, schema: Schema, *, stacklevel: int = 3) -> None:
    """Warn (:class:`DomainClippingWarning`) when a continuous column of ``X`` is mostly out of bounds.

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
    worst = sorted(
        ((share, name) for name, share in clipped_shares(X, schema).items() if share > CLIPPING_WARNING_SHARE),
        reverse=True,
    )
    if worst:
        shown = ", ".join(f"{name!r} {share:.0%}" for share, name in worst[:3])
        more = f" and {len(worst) - 3} more columns" if len(worst) > 3 else ""
        warnings.warn(
            f"values outside the schema's declared bounds were clipped: {shown}{more}. The data may be in other "
            "units than the schema (a scaler before the estimator?); the model only sees the clipped values.",
            DomainClippingWarning,
            stacklevel=stacklevel,
        )
