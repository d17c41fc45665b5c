"""Map raw columns to integer codes under a public schema.

Continuous values are clipped to the declared bounds and binned on the
declared (or equal-width) edges; categorical values map to their declared
index.  Values the schema does not cover follow the schema's rules: a
catch-all category, a public imputation constant, or a refusal that names the
column, the value and the row.  Nothing here widens a domain.

Every cell is mapped by itself (privacy: a per-record map)
----------------------------------------------------------
The code of a cell depends on that cell and the public schema only, never on
the other cells of its column: no step looks at a column's dtype to decide
how to read a value.  Text cells (from :func:`edprf_core.read_table`) and
typed in-memory cells go through the same rules:

- text cells lose surrounding whitespace (``Schema.strip_whitespace``);
- missing: ``None``/``NaN``, or a cell whose text is one of the schema's
  ``missing_values`` (default ``""`` and ``"?"``); the feature's rule then
  refuses the row, imputes a public constant, or gives missing values a code
  of their own (``missing = "separate"``);
- a continuous cell is a number when it parses as a finite float by itself
  (``"7"``, ``" 7 "``, ``"7.0"``, ``"1e3"``); ``"inf"``, ``"1e309"``, ``"nan"``
  and text are *not a number* (the row is refused, i.e. dropped at a party);
- a categorical cell with numeric declared categories is compared as a
  number (``"007"`` is ``7``); with string categories its text is compared
  exactly (``str(value)`` for in-memory values: ``1.0`` is ``"1.0"``, not
  ``"1"``; declare numbers as numbers);
- labels follow the categorical rules, after the schema's declared aliases
  (``">50K."`` read as ``">50K"``), with no catch-all.
Lookups are hash-based: a huge cell costs the time to hash it, nothing more.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from ._exceptions import DataValidationError
from ._schema import DEFAULT_MISSING_VALUES, REFUSE, SEPARATE, CategoricalFeature, ContinuousFeature, Schema

__all__ = ["MISSING_TOKENS", "FeatureGrid", "as_frame", "clipped_shares", "conforming_rows", "encode_features",
           "encode_labels", "label_values", "rule_violations"]

_MAX_REPORTED = 3
_MAX_SHOWN_CHARS = 40

MISSING_TOKENS = DEFAULT_MISSING_VALUES
"""Default cell texts read as a missing value (``Schema.missing_values`` declares others)."""


@dataclass(frozen=True)
class FeatureGrid:
    """The public discretisation of every feature for one model.

    Attributes
    ----------
    n_codes : tuple of int
        Number of codes (bins or categories) of each feature.
    is_categorical : tuple of bool
    edges : tuple of ndarray
        Interior bin edges of each continuous feature (empty for categorical).
    """

    n_codes: tuple[int, ...]
    is_categorical: tuple[bool, ...]
    edges: tuple[NDArray[np.float64], ...]

    @classmethod
    def from_schema(cls, schema: Schema, n_bins: int) -> FeatureGrid:
        edges = tuple(
            f.interior_edges(n_bins) if isinstance(f, ContinuousFeature) else np.empty(0)
            for f in schema.features
        )
        return cls(
            n_codes=tuple(f.n_codes(n_bins) for f in schema.features),
            is_categorical=tuple(isinstance(f, CategoricalFeature) for f in schema.features),
            edges=edges,
        )


def as_frame(X: ArrayLike | pd.DataFrame, schema: Schema) -> pd.DataFrame:
    """Check columns against the schema and return a DataFrame.

    A DataFrame must hold every feature column; other columns must be the
    label or declared ``ignored_columns``.  A 2-D array is read positionally in
    the schema's feature order.
    """
    if isinstance(X, pd.DataFrame):
        names = [str(c) for c in X.columns]
        missing = [n for n in schema.feature_names if n not in names]
        if missing:
            raise DataValidationError(f"missing columns {missing}; the schema declares {list(schema.feature_names)}")
        known = set(schema.feature_names) | set(schema.ignored_columns) | {schema.label.column}
        unknown = [n for n in names if n not in known]
        if unknown:
            raise DataValidationError(
                f"unknown columns {unknown}: declare them in the schema as features or ignored_columns"
            )
        frame = X.copy(deep=False)
        frame.columns = names
        return frame
    arr = np.asarray(X, dtype=object)
    if arr.ndim != 2:
        raise DataValidationError(f"X must be 2-D, got an array of shape {arr.shape}")
    if arr.shape[1] != schema.n_features:
        raise DataValidationError(
            f"X has {arr.shape[1]} columns, expected {schema.n_features} (the schema's features, in order)"
        )
    return pd.DataFrame(arr, columns=list(schema.feature_names))


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= _MAX_SHOWN_CHARS else f"{text[:_MAX_SHOWN_CHARS]}... ({len(text)} characters)"


def _refuse(column: str, what: str, rows: Sequence[object], values: Sequence[object], total: int) -> DataValidationError:
    shown = ", ".join(f"row {r!r}: {_shown(v)}" for r, v in zip(rows[:_MAX_REPORTED], values[:_MAX_REPORTED]))
    more = f" (and {total - _MAX_REPORTED} more)" if total > _MAX_REPORTED else ""
    return DataValidationError(f"column {column!r}: {what} at {shown}{more}")


Problems = list[tuple[str, str, NDArray[np.bool_]]] | None


def _reject(column: str, what: str, series: pd.Series, mask: NDArray[np.bool_], problems: Problems) -> None:
    """Refuse the offending rows: raise, or (with a ``problems`` list) record them."""
    if problems is None:
        idx = np.flatnonzero(mask)
        raise _refuse(column, what, series.index[idx].tolist(), series.iloc[idx].tolist(), idx.size)
    problems.append((column, what, mask.copy()))


@dataclass(frozen=True)
class CellRules:
    """How every cell is read before its column's rule applies (public: from the schema)."""

    missing_values: tuple[str, ...] = MISSING_TOKENS
    strip_whitespace: bool = True

    @classmethod
    def of(cls, schema: Schema) -> CellRules:
        return cls(tuple(schema.missing_values), bool(schema.strip_whitespace))

    def clean(self, series: pd.Series) -> pd.Series:
        """The cells with surrounding whitespace removed from text cells (each cell alone)."""
        if not self.strip_whitespace or series.dtype != object:
            return series
        try:
            stripped = series.str.strip()  # NaN for cells that are not text: those keep their value
        except AttributeError:  # no text cell at all
            return series
        return stripped.where(stripped.notna(), series)

    def missing(self, series: pd.Series) -> NDArray[np.bool_]:
        """Cells that are missing: ``None``/``NaN`` or a declared missing token, each judged alone."""
        return (series.isna() | series.isin(self.missing_values)).to_numpy(dtype=bool)


_DEFAULT_RULES = CellRules()


def _parse_numbers(series: pd.Series) -> NDArray[np.float64]:
    """Each cell as a float by itself; NaN where a cell is not a finite number.

    ``pd.to_numeric(errors="coerce")`` converts element by element; the
    float64 view of its result does not depend on which other cells share the
    column (an integer result is converted exactly as its text would parse).
    """
    x = pd.to_numeric(series, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    return np.where(np.isfinite(x), x, np.nan)


def _as_float(series: pd.Series, column: str, problems: Problems,
              rules: CellRules = _DEFAULT_RULES) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
    """Numbers and the missing mask; cells neither missing nor finite numbers are refused."""
    missing = rules.missing(series)
    x = _parse_numbers(series)
    bad = np.isnan(x) & ~missing
    if bad.any():
        _reject(column, "not a finite number", series, bad, problems)
    return np.where(missing, np.nan, x), missing


def _encode_continuous(series: pd.Series, feature: ContinuousFeature, edges: NDArray[np.float64],
                       problems: Problems = None, rules: CellRules = _DEFAULT_RULES) -> NDArray[np.int32]:
    x, nan = _as_float(series, feature.name, problems, rules)
    x = np.where(np.isnan(x) & ~nan, feature.lower, x)  # placeholder for refused cells: dropped by the caller
    separate = nan if feature.missing == SEPARATE else None
    if nan.any():
        if feature.missing == REFUSE:
            _reject(feature.name, "missing value (NaN, None or a missing token) and the schema's rule is missing='refuse'", series, nan, problems)
            x = np.where(nan, feature.lower, x)  # placeholder: such rows are dropped by the caller
        elif separate is not None:
            x = np.where(nan, feature.lower, x)  # replaced by the missing code below
        else:
            x = np.where(nan, float(feature.missing), x)
    x = np.clip(x, feature.lower, feature.upper)
    codes = np.searchsorted(edges, x, side="right").astype(np.int32)
    if separate is not None:
        codes = np.where(separate, edges.size + 1, codes).astype(np.int32)  # the code after the last bin
    return codes


def _lookup(values: pd.Series, categories: Sequence[object]) -> NDArray[np.int32]:
    """Index of each value among ``categories``; -1 where absent (hash lookup, cell by cell)."""
    index = pd.Index(list(categories), dtype=object)
    return index.get_indexer(pd.Index(values.to_numpy(dtype=object), dtype=object)).astype(np.int32)


def _encode_categorical(series: pd.Series, feature: CategoricalFeature, column: str, what: str = "category",
                        problems: Problems = None, rules: CellRules = _DEFAULT_RULES) -> NDArray[np.int32]:
    missing = rules.missing(series)
    numeric = not isinstance(feature.categories[0], str)
    if numeric:
        as_num = _parse_numbers(series)
        codes = _lookup(pd.Series(as_num).fillna(np.inf), [float(c) for c in feature.categories])
    else:
        codes = _lookup(series.astype(object).map(str), [str(c) for c in feature.categories])
    codes = np.where(missing, -2, codes)
    for rule_name, mask, label in (("missing", codes == -2, "missing value (NaN, None or a missing token)"), ("unknown", codes == -1, f"undeclared {what}")):
        if not mask.any():
            continue
        rule = getattr(feature, rule_name)
        if isinstance(rule, str) and rule == REFUSE:
            _reject(column, f"{label} and the schema's rule is {rule_name}='refuse'", series, mask, problems)
            codes = np.where(mask, 0, codes)  # placeholder: such rows are dropped by the caller
        elif rule_name == "missing" and rule == SEPARATE:
            codes = np.where(mask, len(feature.categories), codes)  # the code after the declared categories
        else:
            codes = np.where(mask, feature.code_of(rule), codes)
    return codes.astype(np.int32)


def encode_features(X: ArrayLike | pd.DataFrame, schema: Schema, grid: FeatureGrid,
                    problems: Problems = None) -> NDArray[np.int32]:
    """Encode ``X`` to an ``(n_samples, n_features)`` array of codes.

    Privacy cost: none; this is a local, deterministic map under public rules.
    Raises :class:`DataValidationError` naming the column, value and row of
    the first offending values when a rule says ``refuse`` (with a
    ``problems`` list, records them there instead; see :func:`conforming_rows`).
    """
    frame = as_frame(X, schema)
    rules = CellRules.of(schema)
    out = np.empty((len(frame), schema.n_features), dtype=np.int32)
    for j, feature in enumerate(schema.features):
        series = rules.clean(frame[feature.name])
        if isinstance(feature, ContinuousFeature):
            out[:, j] = _encode_continuous(series, feature, grid.edges[j], problems, rules)
        else:
            out[:, j] = _encode_categorical(series, feature, feature.name, problems=problems, rules=rules)
    return out


def _label_series(y: ArrayLike | pd.Series, schema: Schema, rules: CellRules) -> pd.Series:
    """Labels after whitespace stripping and the schema's declared aliases (each cell alone)."""
    series = y if isinstance(y, pd.Series) else pd.Series(np.asarray(y, dtype=object).ravel())
    series = rules.clean(series)
    aliases = dict(schema.label.aliases)
    if aliases and series.dtype == object:
        hit = series.isin(list(aliases)).to_numpy()
        if hit.any():
            series = series.copy()
            series[hit] = series[hit].map(aliases)
    return series


def clipped_shares(X: ArrayLike | pd.DataFrame, schema: Schema) -> dict[str, float]:
    """Share of each continuous column's numbers that lie outside its declared bounds (for the owner only)."""
    frame = as_frame(X, schema)
    rules = CellRules.of(schema)
    shares = {}
    for f in schema.features:
        if isinstance(f, ContinuousFeature):
            x = _parse_numbers(rules.clean(frame[f.name]))
            finite = np.isfinite(x)
            if finite.any():
                outside = finite & ((x < f.lower) | (x > f.upper))
                shares[f.name] = float(outside.sum() / finite.sum())
    return shares


def rule_violations(X: pd.DataFrame, y: pd.Series, schema: Schema) -> list[tuple[str, str, NDArray[np.bool_]]]:
    """Every violated 'refuse' rule: (column, what, mask of the rows that break it); each row judged alone."""
    problems: list[tuple[str, str, NDArray[np.bool_]]] = []
    encode_features(X, schema, FeatureGrid.from_schema(schema, n_bins=2), problems)
    rules = CellRules.of(schema)
    spec = CategoricalFeature(name=schema.label.column, categories=schema.label.classes)
    _encode_categorical(_label_series(y, schema, rules), spec, schema.label.column, what="class", problems=problems,
                        rules=rules)
    return problems


def conforming_rows(X: pd.DataFrame, y: pd.Series, schema: Schema) -> tuple[NDArray[np.bool_], list[str]]:
    """Rows that satisfy every rule of the schema, and one description per violated rule.

    A per-record filter: whether a row is kept depends on that row only, so
    training on the kept rows is a stable transformation (neighbouring inputs
    give neighbouring outputs) and costs no extra ε.  The descriptions name
    columns, values and rows: for the data owner's eyes only, never to be sent.
    Column-level problems (a missing or unknown column) still raise.
    """
    problems = rule_violations(X, y, schema)
    keep = np.ones(len(X), dtype=bool)
    notes = []
    for column, what, mask in problems:
        keep &= ~mask
        rows = X.index[np.flatnonzero(mask)[:3]].tolist()
        notes.append(f"column {column!r}: {what}: {int(mask.sum())} rows (first rows {rows})")
    return keep, notes


def encode_labels(y: ArrayLike | pd.Series, schema: Schema) -> NDArray[np.int32]:
    """Map labels to class indices 0..K-1 of the declared classes.

    A label outside the declared classes, or a missing label, is refused:
    there is no catch-all for labels.
    """
    if isinstance(y, pd.DataFrame) or np.ndim(y) > 1:
        raise DataValidationError("y must be 1-D")
    rules = CellRules.of(schema)
    series = _label_series(y, schema, rules)
    spec = CategoricalFeature(name=schema.label.column, categories=schema.label.classes)
    try:
        return _encode_categorical(series, spec, schema.label.column, what="class (not in the declared classes)",
                                   rules=rules)
    except DataValidationError as exc:
        raise DataValidationError(f"label {exc}; declared classes are {list(schema.label.classes)}") from None


def label_values(schema: Schema) -> NDArray:
    """The declared classes as an array (what ``predict`` returns)."""
    return np.asarray(schema.label.classes)


