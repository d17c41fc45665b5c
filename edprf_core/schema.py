"""The public schema: feature domains, bin edges and the label set, declared before any data is read.

A schema is public knowledge; everything a party releases is shaped by it alone.  :func:`draft_schema`
reads data to propose one (it warns :class:`PrivacyLeakWarning`: review and declare it publicly before use;
a fit on a drafted schema warns :class:`DraftedSchemaWarning`);
:func:`check_data` reports how a local file conforms to a schema (the report stays on the machine).
"""

from ._data_check import DataCheck, check_data
from ._draft import draft_schema
from ._exceptions import DataValidationError, DomainClippingWarning, DraftedSchemaWarning, SchemaError
from ._schema import (
    DEFAULT_MISSING_VALUES,
    DRAFT_MARK,
    CategoricalFeature,
    ContinuousFeature,
    LabelSpec,
    Schema,
    load_schema,
)

__all__ = [
    "DEFAULT_MISSING_VALUES",
    "DRAFT_MARK",
    "CategoricalFeature",
    "ContinuousFeature",
    "DataCheck",
    "DataValidationError",
    "DomainClippingWarning",
    "DraftedSchemaWarning",
    "LabelSpec",
    "Schema",
    "SchemaError",
    "check_data",
    "draft_schema",
    "load_schema",
]
