"""Declarative checks for configuration dataclasses, and the one reader of kebab-case configs.

A configuration class lists its fields with a rule each and calls :func:`check_fields` from
``__post_init__``::

    check_fields(self, {"max_depth": Integer(1), "relation": OneOf(RELATIONS)})

A value that breaks its rule raises ``ValueError("max-depth: expected an integer >= 1, got 0")``:
the key as the file or command line spells it (kebab-case by default), what was expected,
what was found.  Booleans are never numbers here (``True`` is not an integer ``>= 1``).
No data is read: the values checked are configuration, and so are the messages.

:func:`from_kebab` reads a kebab-case mapping (a policy file, Flower's run config) into a
dataclass's keyword arguments: the kebab <-> snake mapping and the refusal of unknown keys
live here and nowhere else.
"""

from __future__ import annotations

import math
import numbers
import re
from collections.abc import Callable, Mapping
from dataclasses import KW_ONLY, MISSING, dataclass, field, fields
from typing import Any

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
    "snake",
]


def kebab(name: str) -> str:
    """``max_depth`` -> ``max-depth``: a field's name as config files and the command line spell it."""
    return name.replace("_", "-")


def snake(key: str) -> str:
    """``max-depth`` -> ``max_depth``: a config key's field name."""
    return key.replace("-", "_")


@dataclass(frozen=True)
class Rule:
    """What a field accepts.  Subclasses define :meth:`of_kind`, :meth:`in_range` and :meth:`describe`.

    ``text`` replaces the generated description (``expected <text>``) where a setting's
    message says more (``">= 0 (0: not declared)"``).
    """

    text: str | None = field(default=None, kw_only=True)

    kind = "a value"
    """The kind alone, for the messages of a wrong type (``check_fields(..., type_errors=True)``)."""

    def of_kind(self, value: Any) -> bool:
        return True

    def in_range(self, value: Any) -> bool:
        return True

    def describe(self) -> str:
        return self.kind

    @property
    def expected(self) -> str:
        return self.text if self.text is not None else self.describe()


@dataclass(frozen=True)
class Integer(Rule):
    """An integer (not a bool) in ``[low, high]`` (None: no bound)."""

    low: int | None = None
    high: int | None = None
    kind = "an integer"

    def of_kind(self, value: Any) -> bool:
        return isinstance(value, numbers.Integral) and not isinstance(value, bool)

    def in_range(self, value: Any) -> bool:
        return (self.low is None or value >= self.low) and (self.high is None or value <= self.high)

    def describe(self) -> str:
        if self.low is not None and self.high is not None:
            return f"an integer in [{self.low}, {self.high}]"
        if self.low is not None:
            return f"an integer >= {self.low}"
        return "an integer" if self.high is None else f"an integer <= {self.high}"


@dataclass(frozen=True)
class Number(Rule):
    """A real number (not a bool, never NaN) between ``low`` and ``high``; ends open or closed.

    ``finite=True`` also refuses infinities.
    """

    low: float | None = None
    high: float | None = None
    _: KW_ONLY
    low_open: bool = False
    high_open: bool = False
    finite: bool = True
    kind = "a number"

    def of_kind(self, value: Any) -> bool:
        return isinstance(value, numbers.Real) and not isinstance(value, bool)

    def in_range(self, value: Any) -> bool:
        if math.isnan(value) or (self.finite and not math.isfinite(value)):
            return False
        above = self.low is None or (value > self.low if self.low_open else value >= self.low)
        below = self.high is None or (value < self.high if self.high_open else value <= self.high)
        return above and below

    def describe(self) -> str:
        if self.low is not None and self.high is not None:
            left, right = "(["[not self.low_open], ")]"[not self.high_open]
            return f"a number in {left}{self.low:g}, {self.high:g}{right}"
        finite = "finite " if self.finite else ""
        if self.low == 0 and self.low_open and self.high is None:
            return f"a positive {finite}number"
        if self.low is not None:
            return f"a {finite}number {'>' if self.low_open else '>='} {self.low:g}"
        if self.high is not None:
            return f"a {finite}number {'<' if self.high_open else '<='} {self.high:g}"
        return f"a {finite}number"


@dataclass(frozen=True)
class OneOf(Rule):
    """One of the listed values (shown as the tuple, ``one of ('auto', 'fixed')``)."""

    values: tuple[Any, ...] = ()
    kind = "one of the listed values"

    def __post_init__(self) -> None:
        object.__setattr__(self, "values", tuple(self.values))

    def in_range(self, value: Any) -> bool:
        try:
            return value in self.values
        except TypeError:  # unhashable or incomparable: not one of them
            return False

    def describe(self) -> str:
        return f"one of {self.values}"


@dataclass(frozen=True)
class Boolean(Rule):
    """``True`` or ``False`` (not 0 / 1, not the strings)."""

    kind = "a bool"

    def of_kind(self, value: Any) -> bool:
        return isinstance(value, bool)

    def describe(self) -> str:
        return "true or false"


@dataclass(frozen=True)
class Text(Rule):
    """A string of at most ``max_len`` characters, matching ``pattern`` when given ('' passes if ``optional``)."""

    max_len: int | None = None
    _: KW_ONLY
    pattern: str | None = None
    optional: bool = False
    kind = "a string"

    def of_kind(self, value: Any) -> bool:
        return isinstance(value, str)

    def in_range(self, value: Any) -> bool:
        if self.optional and value == "":
            return True
        if self.max_len is not None and len(value) > self.max_len:
            return False
        return self.pattern is None or re.fullmatch(self.pattern, value) is not None

    def describe(self) -> str:
        return "a string" if self.max_len is None else f"a string of at most {self.max_len} characters"


def check_fields(
    obj: Any,
    rules: Mapping[str, Rule],
    *,
    key: Callable[[str], str] = kebab,
    type_errors: bool = False,
) -> None:
    """Check each named attribute of ``obj`` against its rule, in the order given.

    Parameters
    ----------
    obj : object
        A configuration instance (usually ``self`` in ``__post_init__``).
    rules : mapping of str to Rule
        Field name -> rule.
    key : callable, default :func:`kebab`
        How a message names the field (``str`` keeps the Python name).
    type_errors : bool, default False
        Raise ``TypeError("key: expected <kind>, got ...")`` for a value of the wrong kind
        and ``ValueError`` only for one out of range; by default both are ``ValueError``.

    Raises
    ------
    ValueError
        ``"<key>: expected <rule>, got <value>"`` for the first field that breaks its rule.
    """
    for name, rule in rules.items():
        value = getattr(obj, name)
        kind_ok = rule.of_kind(value)
        if not kind_ok and type_errors:
            raise TypeError(f"{key(name)}: expected {rule.kind}, got {value!r}")
        if not kind_ok or not rule.in_range(value):
            raise ValueError(f"{key(name)}: expected {rule.expected}, got {value!r}")


def from_kebab(
    cls: type,
    data: Mapping[str, Any],
    *,
    what: str,
    unknown: str = "refuse",
    cast: bool = False,
) -> dict[str, Any]:
    """The keyword arguments of dataclass ``cls`` from a kebab-case mapping (a config file or record).

    Parameters
    ----------
    cls : dataclass type
        Its fields are the known keys (``max_depth`` is read from ``max-depth``).
    data : mapping
        The config as read (TOML table, Flower run config).
    what : str
        How messages name the config (``"policy"``, ``"run config"``).
    unknown : {"refuse", "ignore"}, default "refuse"
        Refuse keys that are not fields (a typo must not silently fall back to a default),
        or ignore them (a config shared with other apps, such as Flower's run config).
    cast : bool, default False
        Convert each value to its field's annotated type (``float``, ``int``, ``bool``,
        ``str``; ``"true"`` / ``"false"`` for a bool), for configs that arrive as strings.

    Raises
    ------
    ValueError
        ``"<what>: unknown keys [...]; allowed: [...]"``, or
        ``"<what> <key>: expected <type>, got <value>"`` for a value that cannot be cast.
    """
    known = {kebab(f.name): f for f in fields(cls)}
    if unknown == "refuse":
        extra = sorted(set(data) - set(known))
        if extra:
            raise ValueError(f"{what}: unknown keys {extra}; allowed: {sorted(known)}")
    values: dict[str, Any] = {}
    for key, value in data.items():
        if key not in known:
            continue
        f = known[key]
        if cast:
            caster = _CASTS[str(f.type)]
            try:
                value = caster(value)
            except (TypeError, ValueError):
                raise ValueError(f"{what} {key}: expected {f.type}, got {value!r}") from None
        values[f.name] = value
    return values


def _as_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise ValueError(value)


_CASTS: dict[str, Callable[[Any], Any]] = {"float": float, "int": int, "bool": _as_bool, "str": str}
"""Field annotation (a string under ``from __future__ import annotations``) -> its conversion."""


def kebab_defaults(cls: type) -> dict[str, Any]:
    """``{kebab-key: default}`` of every field of dataclass ``cls`` that has a default."""
    return {kebab(f.name): f.default for f in fields(cls) if f.default is not MISSING}
