"""Warnings and errors raised by the core."""

from __future__ import annotations

__all__ = ["BudgetError", "DataValidationError", "DomainClippingWarning", "PrivacyLeakWarning", "SchemaError"]


class PrivacyLeakWarning(UserWarning):
    """Something was computed from private data outside a charged DP mechanism.

    Raised by helpers that read the data to help a user start (for example
    :func:`edprf_core.draft_schema`) and by research-only options that break the
    guarantee (``stop_when_pure=True``).  A model or schema touched by such a
    helper must not be released as differentially private.
    """


class SchemaError(ValueError):
    """A public schema is malformed, or two schemas do not match."""


class DataValidationError(ValueError):
    """Data does not conform to its declared public schema."""


class BudgetError(ValueError):
    """A privacy budget is invalid or would be exceeded."""


class DomainClippingWarning(UserWarning):
    """A large share of a column lies outside its declared bounds and was clipped.

    It almost always means the data are in other units than the schema (a
    scaler before the estimator, centimetres against metres).  Emitted once per
    ``fit`` for the worst columns; the counts stay on the user's machine.
    """
