"""Declarative validation of configuration dataclasses, and the kebab-case <-> snake_case mapping.

Used by the party's policy, the coordinator's run config, the release limits and the
request records: one idiom, one wording (``"key: expected X, got Y"``).
"""

from ._config_checks import (
    Boolean,
    Integer,
    Number,
    OneOf,
    Rule,
    Text,
    check_fields,
    from_kebab,
    kebab,
    kebab_defaults,
    kebab_values,
    refuse_unknown_keys,
    snake,
)

__all__ = [
    "Boolean",
    "Integer",
    "Number",
    "OneOf",
    "Rule",
    "Text",
    "check_fields",
    "from_kebab",
    "kebab",
    "kebab_defaults",
    "kebab_values",
    "refuse_unknown_keys",
    "snake",
]
