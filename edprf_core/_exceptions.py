"""The project's error and warning hierarchy: one root each, :class:`EDPRFError` and :class:`EDPRFWarning`."""

from __future__ import annotations

__all__ = [
    "BudgetError",
    "DataValidationError",
    "DomainClippingWarning",
    "EDPRFError",
    "EDPRFWarning",
    "PrivacyLeakWarning",
    "SchemaError",
    "SeededNoiseWarning",
]


class EDPRFError(Exception):
    """Root of every error the project raises (core, protocol, party, coordinator, command line).

    ``except EDPRFError`` catches them all.  Errors that were a ``ValueError`` or a
    ``RuntimeError`` before the hierarchy existed keep that second base, so callers that
    catch the builtin still do.
    """


class EDPRFWarning(UserWarning):
    """Root of every warning the project emits (filter them all with this class)."""


class PrivacyLeakWarning(EDPRFWarning):
    """Something was computed from private data outside a charged DP mechanism.

    Raised by helpers that read the data to help a user start (for example
    :func:`edprf_core.draft_schema`), by research-only options that break the
    guarantee (``stop_when_pure=True``), and by a fit after a ``Pipeline`` step
    fitted on the same rows or as a search's refit (:func:`edprf_core.check_pipeline`).
    A model or schema touched by such a helper must not be released as
    differentially private.
    """


class SeededNoiseWarning(EDPRFWarning):
    """A fit drew its noise from a fixed research seed (``random_state`` set): the model is NOT differentially
    private, since anyone who knows the seed can remove the noise.

    For tests and reproducible research; leave ``random_state=None`` for a DP model.  Research code that seeds
    on purpose filters this class (``warnings.simplefilter("ignore", SeededNoiseWarning)``).  It is repeated on
    every fit, and Python's ``"once"`` filter does not change that: scikit-learn's input checks enter
    ``warnings.catch_warnings()`` on every call, which resets the registry ``"once"`` reads; use ``"ignore"``.
    """


class DraftedSchemaWarning(EDPRFWarning):
    """A fit on a schema drafted from data (``schema.is_draft``): its bounds and categories are data, so the model
    is NOT differentially private.

    For a first look at the data; review the drafted schema, replace its bounds and categories with public
    knowledge, say in each ``source`` where it came from, and delete ``drafted = true`` for a DP model (a
    ``source`` still saying DRAFTED FROM DATA keeps it a draft).  Code that fits on a drafted schema on purpose filters
    this class (``warnings.simplefilter("ignore", DraftedSchemaWarning)``).
    """


class SchemaError(EDPRFError, ValueError):
    """A public schema is malformed, or two schemas do not match."""


class DataValidationError(EDPRFError, ValueError):
    """Data does not conform to its declared public schema."""


class RefusedCellsError(DataValidationError):
    """Cells of one column break a ``refuse`` rule of the schema; the message names the column, the first rows
    and their cells.  Internal: raised and caught as :class:`DataValidationError` (a prediction adds what to do)."""


class BudgetError(EDPRFError, ValueError):
    """A privacy budget is invalid or would be exceeded."""


class DomainClippingWarning(EDPRFWarning):
    """A large share of a column lies outside its declared bounds and was clipped.

    It almost always means the data are in other units than the schema (a
    scaler before the estimator, centimetres against metres).  Emitted once per
    ``fit`` for the worst columns; the counts stay on the user's machine (repeated
    on every call: ``"once"`` does not deduplicate it, as for
    :class:`SeededNoiseWarning`; filter with ``"ignore"``).  A
    scaler fitted on the training rows also voids the model's DP guarantee
    (:func:`edprf_core.check_pipeline`).
    """
