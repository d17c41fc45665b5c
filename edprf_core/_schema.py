"""Public schema: feature domains, bin edges and the label set.

Everything a released tree may refer to (features, thresholds, categories,
classes) comes from here, never from the data (privacy invariants 1 and 2).
A schema is declared by people who know the domain, stored as TOML, and
fingerprinted so that parties and the coordinator can check they agree.
"""

from __future__ import annotations

import hashlib
import json
import math
import numbers
import os
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import tomli_w

from ._cell_text import number_of_text
from ._config_checks import Boolean, check_fields, refuse_unknown_keys
from ._exceptions import SchemaError

__all__ = [
    "DEFAULT_MISSING_VALUES",
    "DRAFT_MARK",
    "REFUSE",
    "SEPARATE",
    "CategoricalFeature",
    "ContinuousFeature",
    "LabelSpec",
    "Schema",
    "load_schema",
]

REFUSE = "refuse"
SEPARATE = "separate"
"""``missing = "separate"``: missing values get a code of their own (their own branch)."""
DEFAULT_MISSING_VALUES = ("", "?")

DRAFT_MARK = "DRAFTED FROM DATA"
"""The text :func:`edprf_core.draft_schema` writes into every ``source`` and the provenance, in capitals: a schema in
which it is left is a draft (:attr:`Schema.is_draft`), whether or not it is still marked ``drafted = true``.  Prose
such as "first drafted from data, then replaced" is not the mark."""
SCHEMA_FORMAT = 1
Category = str | int | float


def _is_number(v: object) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, bool)


def _check_values(values: Sequence[Category], what: str) -> tuple[Category, ...]:
    vals = tuple(values)
    if len(vals) < 2:
        raise SchemaError(f"{what} must declare at least 2 values, got {list(vals)}")
    if all(isinstance(v, str) for v in vals):
        pass
    elif all(_is_number(v) for v in vals):
        if not all(math.isfinite(float(v)) for v in vals):
            raise SchemaError(f"{what} must be finite numbers, got {list(vals)}")
    else:
        raise SchemaError(f"{what} must be all strings or all numbers, got {list(vals)}")
    keys = [_category_key(v) for v in vals]
    if len(set(keys)) != len(keys):
        raise SchemaError(f"{what} contain duplicates: {list(vals)}")
    return vals


def numeric_values(values: Sequence[Category]) -> bool:
    """Whether declared categories or classes are numbers (cells are then compared with them as numbers)."""
    return not isinstance(values[0], str)


def _category_key(v: Category) -> str | float:
    return v if isinstance(v, str) else float(v)


@dataclass(frozen=True)
class ContinuousFeature:
    """A continuous feature with public bounds.

    Parameters
    ----------
    name : str
        Column name.
    lower, upper : float
        Public bounds, ``lower < upper``.  Values outside are clipped.
    edges : tuple of float, optional
        Explicit interior bin edges, strictly increasing inside
        ``(lower, upper)``.  When omitted, the estimator uses ``n_bins``
        equal-width bins of ``[lower, upper]``.
    missing : "refuse", "separate" or float
        Rule for missing values: refuse (an error in ``fit``, the row dropped
        at a party), give them a code of their own after the last bin
        ("separate": a tree can send them down their own branch), or impute
        this public constant (inside the bounds).
    source : str
        Where the bounds came from (documentation, domain knowledge).
    """

    name: str
    lower: float
    upper: float
    edges: tuple[float, ...] | None = None
    missing: Literal["refuse", "separate"] | float = REFUSE
    source: str = ""
    kind: Literal["continuous"] = field(default="continuous", init=False)

    def __post_init__(self) -> None:
        _check_name(self.name)
        for bound in ("lower", "upper"):
            v = getattr(self, bound)
            if not _is_number(v) or not math.isfinite(float(v)):
                raise SchemaError(f"feature {self.name!r}: {bound} must be a finite number, got {v!r}")
            object.__setattr__(self, bound, float(v))
        if not self.lower < self.upper:
            raise SchemaError(f"feature {self.name!r}: lower must be < upper, got {self.lower} >= {self.upper}")
        if self.edges is not None:
            edges = tuple(float(e) for e in self.edges)
            arr = np.asarray(edges)
            if arr.size == 0 or not np.all(np.isfinite(arr)) or np.any(np.diff(arr) <= 0):
                raise SchemaError(
                    f"feature {self.name!r}: edges must be finite and strictly increasing, got {list(edges)}"
                )
            if arr[0] <= self.lower or arr[-1] >= self.upper:
                raise SchemaError(f"feature {self.name!r}: edges must lie strictly inside ({self.lower}, {self.upper})")
            object.__setattr__(self, "edges", edges)
        if self.missing not in (REFUSE, SEPARATE):
            if not _is_number(self.missing) or not self.lower <= float(self.missing) <= self.upper:
                raise SchemaError(
                    f"feature {self.name!r}: missing must be 'refuse', 'separate' or a number in "
                    f"[{self.lower}, {self.upper}], got {self.missing!r}"
                )
            object.__setattr__(self, "missing", float(self.missing))

    def interior_edges(self, n_bins: int) -> np.ndarray:
        """Interior bin edges: the declared ones, else ``n_bins`` equal-width bins."""
        if self.edges is not None:
            return np.asarray(self.edges, dtype=np.float64)
        if n_bins < 2:
            raise ValueError(f"n_bins must be >= 2, got {n_bins}")
        return np.linspace(self.lower, self.upper, n_bins + 1)[1:-1]

    def n_codes(self, n_bins: int) -> int:
        """Number of bins (plus one for missing values when ``missing = "separate"``)."""
        return len(self.interior_edges(n_bins)) + 1 + (self.missing == SEPARATE)

    def semantic(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind,
            "lower": self.lower,
            "upper": self.upper,
            "edges": list(self.edges) if self.edges is not None else None,
            "missing": self.missing,
        }


@dataclass(frozen=True)
class CategoricalFeature:
    """A categorical feature with declared categories (binary = 2 categories).

    Parameters
    ----------
    name : str
        Column name.
    categories : tuple of str, or tuple of numbers
        The declared categories; their order gives the codes 0..k-1.
    unknown : "refuse" or a declared category
        Where an undeclared value goes: refused with an error, or mapped to
        this catch-all category.
    missing : "refuse", "separate" or a declared category
        Where a missing value goes ("separate": a code of its own after the
        declared categories).
    source : str
        Where the categories came from.
    """

    name: str
    categories: tuple[Category, ...]
    unknown: Category = REFUSE
    missing: Category = REFUSE
    source: str = ""
    kind: Literal["categorical"] = field(default="categorical", init=False)

    def __post_init__(self) -> None:
        _check_name(self.name)
        cats = _check_values(self.categories, f"feature {self.name!r}: categories")
        object.__setattr__(self, "categories", cats)
        keys = {_category_key(c) for c in cats}
        if self.missing == SEPARATE and SEPARATE in keys:
            raise SchemaError(
                f"feature {self.name!r}: missing = 'separate' is ambiguous when 'separate' is a declared category"
            )
        for rule in ("unknown", "missing"):
            v = getattr(self, rule)
            if isinstance(v, str) and (v == REFUSE or (rule == "missing" and v == SEPARATE)):
                continue
            if (isinstance(v, str) or _is_number(v)) and _category_key(v) in keys:
                continue
            raise SchemaError(
                f"feature {self.name!r}: {rule} must be 'refuse' or one of the declared categories, got {v!r}"
            )

    def n_codes(self, n_bins: int = 0) -> int:
        """Number of categories (plus one for missing values when ``missing = "separate"``)."""
        return len(self.categories) + (self.missing == SEPARATE)

    def code_of(self, value: Category) -> int:
        """Code of a declared category."""
        return [_category_key(c) for c in self.categories].index(_category_key(value))

    def semantic(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind,
            "categories": list(self.categories),
            "unknown": self.unknown,
            "missing": self.missing,
        }


Feature = ContinuousFeature | CategoricalFeature


@dataclass(frozen=True)
class LabelSpec:
    """The label column and its declared classes (order gives class indices).

    ``aliases`` maps other spellings found in files (e.g. ``">50K."`` in the
    census test file) to a declared class: a public, per-cell rewrite.
    """

    column: str
    classes: tuple[Category, ...]
    source: str = ""
    aliases: tuple[tuple[str, Category], ...] = ()

    def __post_init__(self) -> None:
        _check_name(self.column)
        object.__setattr__(self, "classes", _check_values(self.classes, "label classes"))
        pairs = tuple(sorted(dict(self.aliases).items()))
        keys = {_category_key(c) for c in self.classes}
        for text, target in pairs:
            if not isinstance(text, str) or _category_key(target) not in keys:
                raise SchemaError(f"[label] aliases: expected text = a declared class, got {text!r} = {target!r}")
        _check_alias_keys(pairs, self.classes)
        object.__setattr__(self, "aliases", pairs)

    def semantic(self) -> dict[str, Any]:
        out = {"column": self.column, "classes": list(self.classes)}
        if self.aliases:  # only then: schemas without aliases keep their fingerprints
            out["aliases"] = [list(pair) for pair in self.aliases]
        return out


def _check_alias_keys(pairs: tuple[tuple[str, Category], ...], classes: tuple[Category, ...]) -> None:
    """Refuse aliases a cell could meet twice over: labels are compared as the classes are (numbers with numeric
    classes, so ``"2"`` and ``"2.0"`` are one alias), and an alias may not rename one declared class as another."""
    numeric = numeric_values(classes)
    seen: dict[str | float, tuple[str, Category]] = {}
    for text, target in pairs:
        key: str | float = number_of_text(text) if numeric else text
        if isinstance(key, float) and math.isnan(key):
            key = text  # not a number: met by no cell compared as a number
        if key in seen and _category_key(seen[key][1]) != _category_key(target):
            raise SchemaError(
                f"[label] aliases: {seen[key][0]!r} and {text!r} name the same label but different classes"
            )
        seen[key] = (text, target)
        declared = [c for c in classes if _category_key(c) == key]
        if declared and _category_key(declared[0]) != _category_key(target):
            raise SchemaError(
                f"[label] aliases: {text!r} is the declared class {declared[0]!r}; an alias may not make it {target!r}"
            )


def _check_name(name: object) -> None:
    if not isinstance(name, str) or not name:
        raise SchemaError(f"column names must be non-empty strings, got {name!r}")


@dataclass(frozen=True)
class Schema:
    """A declared public schema.

    Parameters
    ----------
    features : tuple of ContinuousFeature or CategoricalFeature
        In model order.
    label : LabelSpec
    name : str
    description, provenance : str
        Free text: what the data is; where the bounds and categories came from.
    ignored_columns : tuple of str
        Columns that may appear in the data and are not used.
    missing_values : tuple of str, default ("", "?")
        Cell texts read as missing in every column (besides None and NaN).
    strip_whitespace : bool, default True
        Remove leading and trailing whitespace of every text cell before it is
        read (" yes" is "yes").
    drafted : bool, default False
        True for a schema drafted from data (:func:`edprf_core.draft_schema`):
        its bounds and categories are data, so no model trained on it is
        differentially private until people replace them with public knowledge,
        say in each ``source`` where it came from, and drop ``drafted``.  It
        enters the fingerprint when True, so a drafted schema never matches the
        declared one.  Whether the schema *is* a draft is :attr:`is_draft`:
        also while a ``source`` or the provenance still holds the draft's text
        :data:`DRAFT_MARK` (deleting the line ``drafted = true`` alone does not
        make a draft a declared schema; :attr:`draft_note` says where it is left).
    """

    features: tuple[Feature, ...]
    label: LabelSpec
    name: str = "unnamed"
    description: str = ""
    provenance: str = ""
    ignored_columns: tuple[str, ...] = ()
    drafted: bool = False
    missing_values: tuple[str, ...] = DEFAULT_MISSING_VALUES
    strip_whitespace: bool = True

    def __post_init__(self) -> None:
        feats = tuple(self.features)
        if not feats:
            raise SchemaError("a schema needs at least one feature")
        for f in feats:
            if not isinstance(f, (ContinuousFeature, CategoricalFeature)):
                raise SchemaError(f"features must be ContinuousFeature or CategoricalFeature, got {type(f).__name__}")
        object.__setattr__(self, "features", feats)
        object.__setattr__(self, "ignored_columns", tuple(self.ignored_columns))
        check_fields(self, {"drafted": Boolean(), "strip_whitespace": Boolean()}, key=str, error=SchemaError)
        # the draft's text still written somewhere: still a draft (rev-data S1), whatever ``drafted`` says; kept
        # out of the field (and so of the fingerprint: models and policies of earlier versions still load)
        object.__setattr__(self, "_draft_mark_left", _draft_mark_left(feats, self.label, self.provenance))
        tokens = tuple(self.missing_values)
        if not all(isinstance(t, str) for t in tokens):
            raise SchemaError(f"missing_values: expected an array of strings, got {list(tokens)!r}")
        object.__setattr__(self, "missing_values", tokens)
        names = [f.name for f in feats] + [self.label.column] + list(self.ignored_columns)
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise SchemaError(f"column names must be unique across features, label and ignored columns: {dupes}")

    @property
    def is_draft(self) -> bool:
        """Whether the schema is a draft: marked ``drafted = true``, or a ``source`` or the provenance still holds
        the draft's text (:data:`DRAFT_MARK`).  A model trained on a draft is NOT differentially private."""
        return self.drafted or bool(self._marks_left())

    def _marks_left(self) -> tuple[str, ...]:
        """Where the draft's text is still written (computed for a schema unpickled from an older version, which
        carries no record of it: rev-s57b N4)."""
        left = getattr(self, "_draft_mark_left", None)
        if left is None:
            left = _draft_mark_left(self.features, self.label, self.provenance)
            object.__setattr__(self, "_draft_mark_left", left)
        return left

    @property
    def draft_note(self) -> str:
        """Why the schema is a draft (words for a message), or "" for a declared one.

        ``"drafted = true"``, or, once that line is gone, the places that still hold the draft's text
        (:data:`DRAFT_MARK`): their bounds, lists and sources are still the data's until someone replaces them.
        """
        if not self.is_draft:
            return ""
        left = self._marks_left()
        if self.drafted:
            return "drafted = true"
        shown = ", ".join(left[:4]) + (f" and {len(left) - 4} more" if len(left) > 4 else "")
        return f"drafted = true is gone, but {DRAFT_MARK!r} is still written in {shown}"

    def __repr__(self) -> str:
        """One line (an estimator's repr shows its schema): name, features, label and classes, fingerprint.
        :meth:`to_toml` gives the whole content."""
        classes = ", ".join(repr(c) for c in self.classes[:6]) + (", ..." if self.n_classes > 6 else "")
        return (
            f"Schema(name={self.name!r}, {self.n_features} features, label={self.label.column!r}, "
            f"classes=({classes}), fingerprint={self.fingerprint[:19]!r}{', drafted' if self.is_draft else ''})"
        )

    @property
    def feature_names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.features)

    @property
    def n_features(self) -> int:
        return len(self.features)

    @property
    def classes(self) -> tuple[Category, ...]:
        return self.label.classes

    @property
    def n_classes(self) -> int:
        return len(self.label.classes)

    def read_labels(self, y: Any) -> Any:
        """The declared class of each raw label in ``y``, read as ``fit`` reads labels.

        Each cell goes through the schema's label rules (whitespace, the label's ``aliases``, text numbers for
        numeric classes: ``"2"`` reads as the class ``2``, or as ``1`` under ``aliases = {"2" = 1}``), so the
        result compares equal to what ``predict`` returns.  Use it wherever labels meet predictions outside the
        estimator: scikit-learn's metrics and scorers compare ``y`` with ``predict``'s declared classes as they
        are, and raw labels that need the schema are then silently mis-scored::

            y_true = schema.read_labels(y)
            accuracy_score(y_true, clf.predict(X))
            cross_val_score(clf, X, y_true, scoring="accuracy")

        Parameters
        ----------
        y : 1-D array-like or Series of labels

        Returns
        -------
        Series (same index and name) when ``y`` is a Series, else ndarray: declared classes.

        Raises
        ------
        DataValidationError
            For a missing label or one that is no declared class (or alias), naming it, as ``fit`` does.

        Notes
        -----
        :func:`edprf_core.prediction.read_labels` is the per-row form for scoring files: class indices, -1 and
        a reason for a label it cannot read, refusing nothing.
        Privacy cost: none (a per-cell map by public rules; nothing leaves the caller).
        """
        import pandas as pd

        from ._encoding import encode_labels  # the cell rules; that module imports this one

        values = np.asarray(self.classes)[encode_labels(y, self)]
        if isinstance(y, pd.Series):
            return pd.Series(values, index=y.index, name=y.name)
        return values

    def semantic(self) -> dict[str, Any]:
        """The content the fingerprint covers: everything but free text."""
        out = {
            "format": SCHEMA_FORMAT,
            "features": [f.semantic() for f in self.features],
            "label": self.label.semantic(),
            "ignored_columns": list(self.ignored_columns),
        }
        if self.drafted:  # only then: declared schemas keep their fingerprints
            out["drafted"] = True
        if self.missing_values != DEFAULT_MISSING_VALUES:
            out["missing_values"] = list(self.missing_values)
        if not self.strip_whitespace:
            out["strip_whitespace"] = False
        return out

    @property
    def fingerprint(self) -> str:
        """Stable SHA-256 of the semantic content (names, domains, rules, classes).

        Free text (description, provenance, sources) and the schema's name do
        not enter it, so correcting documentation does not split a federation.
        """
        canonical = json.dumps(self.semantic(), sort_keys=True, separators=(",", ":"), allow_nan=False)
        return "sha256:" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()

    # ------------------------------------------------------------------ TOML
    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Schema:
        """Build from the parsed TOML mapping; unknown keys are errors."""
        _only_keys(
            data,
            {
                "format",
                "name",
                "description",
                "provenance",
                "ignored_columns",
                "label",
                "features",
                "drafted",
                "missing_values",
                "strip_whitespace",
            },
            "schema",
        )
        fmt = data.get("format", SCHEMA_FORMAT)
        if fmt != SCHEMA_FORMAT:
            raise SchemaError(f"unsupported schema format: expected {SCHEMA_FORMAT}, got {fmt!r}")
        if "label" not in data or "features" not in data:
            raise SchemaError("a schema needs a [label] table and [[features]] entries")
        if not isinstance(data["label"], Mapping):
            raise SchemaError(f"[label]: expected a table, got {type(data['label']).__name__}")
        if not isinstance(data["features"], list) or not all(isinstance(f, Mapping) for f in data["features"]):
            raise SchemaError("features: expected an array of tables ([[features]])")
        for key in ("ignored_columns",):
            if key in data and not (isinstance(data[key], list) and all(isinstance(v, str) for v in data[key])):
                raise SchemaError(f"{key}: expected an array of strings, got {data[key]!r}")
        for key in ("name", "description", "provenance"):
            if key in data and not isinstance(data[key], str):
                raise SchemaError(f"{key}: expected a string, got {type(data[key]).__name__}")
        label = dict(data["label"])
        _only_keys(label, {"column", "classes", "source", "aliases"}, "[label]")
        if not isinstance(label.get("aliases", {}), Mapping):
            raise SchemaError("[label] aliases: expected a table of text = class")
        features: list[Feature] = []
        for i, raw in enumerate(data["features"]):
            raw = dict(raw)
            kind = raw.pop("kind", None)
            where = f"features[{i}] ({raw.get('name', '?')})"
            try:
                if kind == "continuous":
                    _only_keys(raw, {"name", "lower", "upper", "edges", "missing", "source"}, where)
                    if "edges" in raw:
                        if not isinstance(raw["edges"], list):
                            raise SchemaError(f"{where}: edges must be an array of numbers")
                        raw["edges"] = tuple(raw["edges"])
                    features.append(ContinuousFeature(**raw))
                elif kind == "categorical":
                    _only_keys(raw, {"name", "categories", "unknown", "missing", "source"}, where)
                    if not isinstance(raw.get("categories", []), list):
                        raise SchemaError(f"{where}: categories must be an array")
                    raw["categories"] = tuple(raw.get("categories", ()))
                    features.append(CategoricalFeature(**raw))
                else:
                    raise SchemaError(f"{where}: kind must be 'continuous' or 'categorical', got {kind!r}")
            except TypeError as exc:
                raise SchemaError(f"{where}: {exc}") from None
        try:
            label_spec = LabelSpec(
                column=label.get("column", ""),
                classes=tuple(label.get("classes", ())),
                source=label.get("source", ""),
                aliases=tuple(dict(label.get("aliases", {})).items()),
            )
        except TypeError as exc:
            raise SchemaError(f"[label]: {exc}") from None
        return cls(
            features=tuple(features),
            label=label_spec,
            name=data.get("name", "unnamed"),
            description=data.get("description", ""),
            provenance=data.get("provenance", ""),
            ignored_columns=tuple(data.get("ignored_columns", ())),
            drafted=data.get("drafted", False),
            missing_values=tuple(data.get("missing_values", DEFAULT_MISSING_VALUES)),
            strip_whitespace=data.get("strip_whitespace", True),
        )

    @classmethod
    def from_toml(cls, text: str) -> Schema:
        """Read a schema from its TOML text (:meth:`to_toml`'s format); a file is read by :func:`load_schema`.

        Raises
        ------
        SchemaError
            Text that is not valid TOML or not a valid schema; a path given instead of the text (a
            :class:`~pathlib.Path`, or one line ending in ``.toml`` or holding a path separator and no ``=``) is told to
            :func:`load_schema`.
        """
        if isinstance(text, os.PathLike):
            raise SchemaError(_not_a_path_text(text))
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            said = _not_a_path_text(text) if _looks_like_a_path(text) else f"schema is not valid TOML: {exc}"
            raise SchemaError(said) from None
        try:
            return cls.from_dict(data)
        except SchemaError:
            raise
        except (TypeError, ValueError, AttributeError) as exc:
            raise SchemaError(f"schema has values of the wrong kind: {exc}") from None

    def to_toml(self) -> str:
        """Serialize to the TOML format :func:`load_schema` reads."""
        data: dict[str, Any] = {
            "format": SCHEMA_FORMAT,
            "name": self.name,
            "description": self.description,
            "provenance": self.provenance,
        }
        if self.drafted:  # written only when true: declared schemas read the same in older versions
            data["drafted"] = True
        if self.missing_values != DEFAULT_MISSING_VALUES:
            data["missing_values"] = list(self.missing_values)
        if not self.strip_whitespace:
            data["strip_whitespace"] = False
        data["ignored_columns"] = list(self.ignored_columns)
        data["label"] = {"column": self.label.column, "classes": list(self.label.classes), "source": self.label.source}
        if self.label.aliases:
            data["label"]["aliases"] = dict(self.label.aliases)
        features = []
        for f in self.features:
            item: dict[str, Any] = {"name": f.name, "kind": f.kind}
            if isinstance(f, ContinuousFeature):
                item |= {"lower": f.lower, "upper": f.upper}
                if f.edges is not None:
                    item["edges"] = list(f.edges)
            else:
                item |= {"categories": list(f.categories), "unknown": f.unknown}
            features.append(item | {"missing": f.missing, "source": f.source})
        data["features"] = features
        return tomli_w.dumps(data)

    def save(self, path: str | Path) -> None:
        Path(path).write_text(self.to_toml(), encoding="utf-8")


def _draft_mark_left(features: tuple[Feature, ...], label: LabelSpec, provenance: object) -> tuple[str, ...]:
    """Where the draft's text (:data:`DRAFT_MARK`, in capitals as the draft writes it) is still written: the
    features' and the label's ``source``, the provenance."""

    def holds(text: object) -> bool:
        return isinstance(text, str) and DRAFT_MARK in text  # as the draft writes it, in capitals

    places = [f"the source of {f.name!r}" for f in features if holds(f.source)]
    if holds(getattr(label, "source", None)):
        places.append("the label's source")
    if holds(provenance):
        places.append("the provenance")
    return tuple(places)


def _only_keys(data: Mapping[str, Any], allowed: set[str], where: str) -> None:
    refuse_unknown_keys(data, allowed, where, error=SchemaError)


def _not_a_path_text(text: object) -> str:
    """What :meth:`Schema.from_toml` says of a path given instead of TOML text (built only when it says it)."""
    return (
        f"Schema.from_toml takes a schema's TOML text, not a path: {str(text)!r} looks like a file; read a "
        "schema file with load_schema(path)"
    )


def _looks_like_a_path(text: str) -> bool:
    """One line that ends in ``.toml``, or holds a path separator and none of TOML's ``=`` or ``[``: a path where
    TOML text was expected.  The text alone decides: a party reads a coordinator's model through
    :meth:`Schema.from_toml`, and no text it is sent may make it touch its file system."""
    line = text.strip()
    if not line or "\n" in line or len(line) > 4096:
        return False
    if line.lower().endswith(".toml"):
        return True
    return ("/" in line or "\\" in line) and "=" not in line and not line.startswith("[")


def load_schema(path: str | Path) -> Schema:
    """Load and validate a schema TOML file."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise SchemaError(f"cannot read schema file {p}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise SchemaError(f"schema file {p} is not UTF-8 text (a schema is a TOML file)") from None
    return Schema.from_toml(text)
