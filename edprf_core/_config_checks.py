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
from collections.abc import Callable, Collection, Iterable, Mapping
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
    "refuse_unknown_keys",
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
    error: type[Exception] = ValueError,
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
        and ``error`` only for one out of range; by default both are ``error``.
    error : exception class, default ValueError
        What a broken rule raises (a subclass of ValueError where callers catch that).

    Raises
    ------
    error
        ``"<key>: expected <rule>, got <value>"`` for the first field that breaks its rule.
    """
    for name, rule in rules.items():
        value = getattr(obj, name)
        kind_ok = rule.of_kind(value)
        if not kind_ok and type_errors:
            raise TypeError(f"{key(name)}: expected {rule.kind}, got {value!r}")
        if not kind_ok or not rule.in_range(value):
            raise error(f"{key(name)}: expected {rule.expected}, got {value!r}")


def refuse_unknown_keys(
    data: Iterable[str], allowed: Collection[str], where: str, *, error: type[Exception] = ValueError
) -> None:
    """Raise ``error("<where>: unknown keys [...]; allowed: [...]")`` if ``data`` has a key not in ``allowed``.

    Every config reader refuses unknown keys with this one message: a misspelt setting must
    not silently fall back to its default.
    """
    extra = sorted(set(data) - set(allowed))
    if extra:
        raise error(f"{where}: unknown keys {extra}; allowed: {sorted(allowed)}")


def from_kebab(
    cls: type,
    data: Mapping[str, Any],
    *,
    what: str,
    unknown: str = "refuse",
    values: str = "as-is",
    complete: bool = False,
    error: type[Exception] = ValueError,
) -> dict[str, Any]:
    """The keyword arguments of dataclass ``cls`` from a kebab-case mapping (a config file or record).

    The one place where kebab-case keys become field names: policy files, Flower's run
    config and the request records all go through it.

    Parameters
    ----------
    cls : dataclass type
        Its fields are the known keys (``max_depth`` is read from ``max-depth``); the fields'
        annotations (``"float"``, ``"int"``, ``"bool"``, ``"str"``) are their types.
    data : mapping
        The config as read (TOML table, run config, message record).
    what : str
        How messages name the config (``"policy"``, ``"run config"``, ``"request"``).
    unknown : {"refuse", "ignore"}, default "refuse"
        Refuse keys that are not fields (a typo must not silently fall back to a default),
        or ignore them (a config shared with other apps, such as Flower's run config).
    values : {"as-is", "cast", "check"}, default "as-is"
        ``"as-is"``: leave the checks to the dataclass.  ``"cast"``: convert each value to its
        field's type (``"true"`` / ``"false"`` for a bool), for configs that arrive as strings.
        ``"check"``: the value must already be of the field's type (an int passes for a float
        and becomes one; a bool is never a number), for records read off the wire.
    complete : bool, default False
        Every field must be given (no defaults filled in).
    error : exception class, default ValueError
        What is raised.

    Raises
    ------
    error
        ``"<what>: unknown keys [...]; allowed: [...]"``, ``"<what>: missing key 'k'"``,
        ``"<what> <key>: expected <type>, got <value>"`` (cast) or
        ``"<what>: <key> expected <type>, got <type name>"`` (check).
    """
    known = {kebab(f.name): f for f in fields(cls)}
    if unknown == "refuse":
        refuse_unknown_keys(data, known, what, error=error)
    out: dict[str, Any] = {}
    for key, f in known.items():
        if key not in data:
            if complete:
                raise error(f"{what}: missing key {key!r}")
            continue
        value, kind = data[key], str(f.type)
        if values == "cast":
            try:
                value = _CASTS[kind](value)
            except (TypeError, ValueError):
                raise error(f"{what} {key}: expected {f.type}, got {value!r}") from None
        elif values == "check":
            if isinstance(value, bool) and kind != "bool" or not isinstance(value, _TYPES[kind]):
                raise error(f"{what}: {key} expected {f.type}, got {type(value).__name__}")
            value = float(value) if kind == "float" else value
        out[f.name] = value
    return out


def _as_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise ValueError(value)


_CASTS: dict[str, Callable[[Any], Any]] = {"float": float, "int": int, "bool": _as_bool, "str": str}
"""Field annotation (a string under ``from __future__ import annotations``) -> its conversion."""

_TYPES: dict[str, tuple[type, ...]] = {"float": (int, float), "int": (int,), "str": (str,), "bool": (bool,)}
"""Field annotation -> the Python types a value read off the wire may have."""


def kebab_defaults(cls: type) -> dict[str, Any]:
    """``{kebab-key: default}`` of every field of dataclass ``cls`` that has a default."""
    return {kebab(f.name): f.default for f in fields(cls) if f.default is not MISSING}


def kebab_values(instance: Any) -> dict[str, Any]:
    """``{kebab-key: value}`` of every field of the dataclass ``instance`` (what :func:`from_kebab` reads back)."""
    return {kebab(f.name): getattr(instance, f.name) for f in fields(instance)}
