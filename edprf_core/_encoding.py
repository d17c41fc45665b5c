"""Map raw columns to integer codes under a public schema.

Continuous values are clipped to the declared bounds and binned on the
declared (or equal-width) edges; categorical values map to their declared
index.  Values the schema does not cover follow the schema's rules: a
catch-all category, a public imputation constant, or a refusal that names the
column, the value and the row.  Nothing here widens a domain.

Every cell is mapped by itself (privacy: a per-record map)
----------------------------------------------------------
The code of a cell depends on that cell and the public schema only, never on
the other cells of its column: a column's dtype may choose *how fast* a cell is
read (Arrow's element-wise kernels for a column of text, numpy for numbers,
Python one cell at a time for mixed objects), never *what* it reads as.  So may
the cells read with it: a text column is read once per distinct cell, and the
distinct cells of a frame's text columns go through those kernels together.  Text
cells (from :func:`edprf_core.tables.read_table`) and typed in-memory cells go through
the same rules (the text rules are written out in :mod:`edprf_core._cell_text`):

- text cells lose surrounding whitespace (``Schema.strip_whitespace``);
- missing: ``None``/``NaN``, or a cell whose text is one of the schema's
  ``missing_values`` (default ``""`` and ``"?"``); the feature's rule then
  refuses the row, imputes a public constant, or gives missing values a code
  of their own (``missing = "separate"``);
- a continuous text cell is a number when, stripped, it is an ASCII decimal
  (``"7"``, ``" 7 "``, ``"7.0"``, ``"-0"``, ``"1e3"``) whose correctly rounded
  float is finite; ``"inf"``, ``"1e309"``, ``"nan"``, ``"1_000"`` and other
  text are *not a number* (the row is refused, i.e. dropped at a party); a cell
  that is not text is a number when it is a real number (``int``, ``float``,
  ``bool``, ``Decimal``, numpy scalars) whose ``float`` is finite;
- a categorical cell with numeric declared categories is compared as a
  number (``"007"`` is ``7``); with string categories its text is compared
  exactly (``str(value)`` for in-memory values: ``1.0`` is ``"1.0"``, not
  ``"1"``; declare numbers as numbers);
- labels follow the categorical rules, after the schema's declared aliases
  (``">50K."`` read as ``">50K"``), with no catch-all.
Lookups are hash-based: a huge cell costs the time to hash it, nothing more.
"""

from __future__ import annotations

import functools
import math
import numbers
import re
import unicodedata
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from decimal import Decimal

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from numpy.typing import ArrayLike, NDArray

from ._cell_text import TEXT_DTYPE as _TEXT_DTYPE
from ._cell_text import number_of_text, strip_text, text_array, text_numbers, text_numbers_arrow
from ._column_names import misspelling_hint
from ._exceptions import DataValidationError, RefusedCellsError
from ._schema import (
    DEFAULT_MISSING_VALUES,
    REFUSE,
    SEPARATE,
    CategoricalFeature,
    Category,
    ContinuousFeature,
    Schema,
    numeric_values,
)

__all__ = [
    "MISSING_TOKENS",
    "NOT_A_NUMBER",
    "ClippedColumn",
    "ClippingTally",
    "FeatureGrid",
    "UndeclaredColumn",
    "as_frame",
    "clipped_columns",
    "clipped_shares",
    "conforming_rows",
    "declared_labels",
    "encode_features",
    "encode_labels",
    "first_rows",
    "has_unknown_category",
    "label_values",
    "rule_violations",
    "shown_cell",
    "undeclared_cells",
]

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
            f.interior_edges(n_bins) if isinstance(f, ContinuousFeature) else np.empty(0) for f in schema.features
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
        known = [*schema.feature_names, *schema.ignored_columns, schema.label.column]
        unknown = [n for n in names if n not in known]
        missing = [n for n in schema.feature_names if n not in names]
        if missing:
            spelt = misspelling_hint(unknown, missing, "the frame")
            raise DataValidationError(
                f"missing columns {missing}; the schema declares {list(schema.feature_names)}{spelt}"
            )
        if unknown:
            spelt = misspelling_hint(unknown, [n for n in known if n not in names], "the frame")
            raise DataValidationError(
                f"unknown columns {unknown}: declare them in the schema as features or ignored_columns{spelt}"
            )
        frame = X.copy(deep=False)
        frame.columns = names
        return frame
    arr = np.asarray(X)
    if arr.dtype.kind not in "biuf":  # numbers stay numbers (each cell's float is the same either way)
        arr = np.asarray(X, dtype=object)
    if arr.ndim != 2:
        raise DataValidationError(f"X must be 2-D, got an array of shape {arr.shape}")
    if arr.shape[1] != schema.n_features:
        raise DataValidationError(
            f"X has {arr.shape[1]} columns, expected {schema.n_features} (the schema's features, in order)"
        )
    return pd.DataFrame(arr, columns=list(schema.feature_names))


def _cut(text: str, limit: int) -> str:
    """``text``, or its first ``limit`` characters and its length when longer (a huge cell never floods a message)."""
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


def _shown(value: object) -> str:
    return _cut(repr(value), _MAX_SHOWN_CHARS)


def _positional(index: pd.Index) -> bool:
    """Whether the index labels are the positions 0..n-1 (a numpy input, a default ``RangeIndex``): then a row's
    label and its position are the same number and one name says both (checked on refusal only)."""
    if isinstance(index, pd.RangeIndex):
        return index.start == 0 and index.step == 1
    return index.equals(pd.RangeIndex(len(index)))


def _row_names(index: pd.Index, positions: NDArray[np.intp]) -> list[str]:
    """How a refusal names the rows at ``positions``: ``row 5`` where the index labels are the positions (a numpy
    input, a default index), else the label and the position, ``index 14001 (iloc 0)``: after a
    ``train_test_split`` the label is not where the row is."""
    if _positional(index):
        return [f"row {int(p)}" for p in positions]
    return [f"index {label!r} (iloc {int(p)})" for label, p in zip(index[positions].tolist(), positions)]


def _refuse(
    column: str,
    what: str,
    rows: Sequence[str],
    values: Sequence[object],
    total: int,
    detail: Callable[[Sequence[object]], str] | None = None,
) -> RefusedCellsError:
    shown = ", ".join(f"{r}: {_shown(v)}" for r, v in zip(rows[:_MAX_REPORTED], values[:_MAX_REPORTED]))
    more = f" (and {total - _MAX_REPORTED} more)" if total > _MAX_REPORTED else ""
    extra = detail(values[:_MAX_REPORTED]) if detail is not None else ""
    return RefusedCellsError(f"column {column!r}: {what} at {shown}{more}{extra}")


Problems = list[tuple[str, str, NDArray[np.bool_]]] | None


def _reject(
    column: str,
    what: str,
    series: pd.Series | None,
    mask: NDArray[np.bool_],
    problems: Problems,
    detail: Callable[[Sequence[object]], str] | None = None,
) -> None:
    """Refuse the offending rows: raise (naming rows and cells of ``series``), or (with a ``problems`` list) record them.

    ``detail``: text appended to the raised error from the cells it shows (built only when raising).
    """
    if problems is None:
        assert series is not None, "refusing by raising names the cells: the column is needed"
        idx = np.flatnonzero(mask)[:_MAX_REPORTED]
        rows = _row_names(series.index, idx)
        raise _refuse(column, what, rows, series.iloc[idx].tolist(), int(np.count_nonzero(mask)), detail)
    problems.append((column, what, mask.copy()))


_MAX_LISTED = 10
"""Declared categories (or classes) a refusal lists; more are counted."""


def _declared_text(values: Sequence[object], noun: str) -> str:
    """``declared categories are ['a', 'b']``: all of them when few, else the first :data:`_MAX_LISTED` and a count."""
    shown = [v.item() if isinstance(v, np.generic) else v for v in values[:_MAX_LISTED]]
    more = f" and {len(values) - _MAX_LISTED} more" if len(values) > _MAX_LISTED else ""
    return f"declared {noun} are {shown!r}{more}"


def _fold(value: object) -> str:
    return str(value).strip().casefold()


def _near_miss_hint(cells: Sequence[object], declared: Sequence[object]) -> str:
    """``"; did you mean 'management'? (...)"`` when a refused cell is a declared value but for case or surrounding
    whitespace, else ``""``.  A few cells only: built when an error is raised."""
    folded: dict[str, list[object]] = {}
    for value in declared:
        folded.setdefault(_fold(value), []).append(value)
    pairs: dict[tuple[str, str], tuple[object, object]] = {}  # keyed by reprs: a cell may be any object
    for cell in cells:
        for match in folded.get(_fold(cell), []):
            if str(match) != str(cell):
                pairs.setdefault((repr(cell), repr(match)), (cell, match))
    if not pairs:
        return ""
    if len(pairs) == 1 and all(repr(cell) == next(iter(pairs))[0] for cell in cells):  # one cell, one near miss
        guess = _shown(next(iter(pairs.values()))[1])
    else:
        guess = ", ".join(f"{_shown(m)} for {_shown(c)}" for c, m in pairs.values())
    how = (
        "case counts"
        if any(str(c).strip() != str(m).strip() for c, m in pairs.values())
        else "surrounding whitespace counts when the schema's strip_whitespace is false"
    )
    return f"; did you mean {guess}? (values are compared exactly: {how})"


def _undeclared_detail(declared: Sequence[object], noun: str | None) -> Callable[[Sequence[object]], str]:
    """What a refusal of undeclared cells adds: a near miss (:func:`_near_miss_hint`), and the declared values
    (``noun``: ``"categories"``; None when the caller lists them, as :func:`encode_labels` does)."""

    def detail(cells: Sequence[object]) -> str:
        hint = _near_miss_hint(cells, declared)
        if noun is None:
            return hint
        return (
            f"{hint}; {_declared_text(declared, noun)}: correct the cells, add the value to the schema's {noun}, "
            "or set the feature's unknown to a catch-all category"
        )

    return detail


_NUMBER_KINDS = ("integer", "floating", "mixed-integer-float", "boolean", "empty")

NOT_A_NUMBER = "not a finite number"
"""The rule a numeric column's cell breaks when it is neither missing nor a finite number."""

UNDECLARED = "undeclared"
"""How a rule's text names a cell that is no declared category or class (the start of that text)."""


def _text_cells(series: pd.Series) -> pa.Array | pa.ChunkedArray | None:
    """The column as one Arrow string array when every cell is text or missing (null); None otherwise.

    Which route a column takes never changes a cell's result: text cells are read by
    the rules of :mod:`edprf_core._cell_text` on both routes, the Arrow kernels only
    faster (a column with some non-text cell is read cell by cell below).
    """
    dtype = series.dtype
    arrow_text = isinstance(dtype, pd.StringDtype) or (
        isinstance(dtype, pd.ArrowDtype)
        and (pa.types.is_string(dtype.pyarrow_dtype) or pa.types.is_large_string(dtype.pyarrow_dtype))
    )
    if arrow_text and (not isinstance(dtype, pd.StringDtype) or dtype.storage == "pyarrow"):
        return pa.array(series.array)  # no copy (a ChunkedArray when the column has several chunks)
    if not (arrow_text or dtype == object or isinstance(dtype, pd.CategoricalDtype)):
        return None
    values = series.to_numpy(dtype=object)
    if pd.api.types.infer_dtype(values, skipna=True) not in ("string", "empty"):
        return None
    return text_array(values)


@dataclass(frozen=True)
class CellRules:
    """How every cell is read before its column's rule applies (public: from the schema)."""

    missing_values: tuple[str, ...] = MISSING_TOKENS
    strip_whitespace: bool = True

    @classmethod
    def of(cls, schema: Schema) -> CellRules:
        return cls(tuple(schema.missing_values), bool(schema.strip_whitespace))

    def clean(self, series: pd.Series) -> pd.Series:
        """The cells with surrounding whitespace removed from text cells (each cell alone).

        A cell is read the same whatever dtype pandas or Arrow gave its column.  Numeric
        columns hold no text and are returned as they are.  A column of text cells (and
        missing ones) comes back as an Arrow-held ``str`` column, stripped by Arrow's
        element-wise kernel; any other column (text mixed with numbers or other objects,
        and text Arrow cannot hold) as Python objects, text cells stripped one at a time
        by ``str.strip``, which removes the same characters.
        """
        if pd.api.types.is_numeric_dtype(series.dtype) or pd.api.types.is_bool_dtype(series.dtype):
            return series
        text = _text_cells(series)
        if text is not None:
            if self.strip_whitespace:
                text = strip_text(text)
            return pd.Series(text, index=series.index, dtype=_TEXT_DTYPE, name=series.name)
        cells = series.astype(object)
        cells = cells.where(cells.notna(), np.nan)  # pd.NA of string/Arrow columns reads as NaN, like None
        if not self.strip_whitespace:
            return cells
        try:
            stripped = cells.str.strip()  # NaN for cells that are not text: those keep their value
        except AttributeError:  # no text cell at all
            return cells
        return stripped.where(stripped.notna(), cells)

    @functools.cached_property
    def token_numbers(self) -> tuple[float, ...]:
        """The values of the declared missing tokens that are numbers (``"-999"``: -999.0), distinct."""
        return tuple(sorted({x for t in self.missing_values if math.isfinite(x := number_of_text(t))}))

    def missing(self, series: pd.Series) -> NDArray[np.bool_]:
        """Cells that are missing as text: ``None``/``NaN`` or a declared missing token, each judged alone.

        A column the schema reads as numbers also meets its numeric tokens as numbers: :meth:`numbers`.
        """
        if pd.api.types.is_numeric_dtype(series.dtype) or pd.api.types.is_bool_dtype(series.dtype):
            # the tokens are text (the schema admits only strings), and no text equals a number or a bool:
            # only the missing cells themselves, without comparing every cell with every token
            return series.isna().to_numpy(dtype=bool)
        text = _text_cells(series)
        if text is not None:
            return self.missing_text(text)
        return (series.isna() | series.isin(self.missing_values)).to_numpy(dtype=bool)

    def missing_text(self, text: pa.Array | pa.ChunkedArray) -> NDArray[np.bool_]:
        """:meth:`missing` of Arrow text cells (null, or a declared missing token), element-wise."""
        hit = pc.is_in(text, value_set=pa.array(self.missing_values, type=text.type))
        if text.null_count:
            hit = pc.or_(pc.is_null(text), pc.fill_null(hit, False))
        return hit.to_numpy(zero_copy_only=False).astype(bool, copy=False)

    def numbers(self, series: pd.Series) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
        """A column the schema reads as numbers (a continuous feature, numeric categories or classes): each cell's
        finite float (NaN where missing or not a number) and which cells are missing.

        Missing: :meth:`missing`, or a number equal to a declared token that is a number (``"-999"`` also meets
        ``-999.0``, ``" -999.00"``, ``-9.99e2`` and the float -999.0 of a Parquet column), so that a writer's
        formatting never turns a missing code into a measurement.  Each cell alone, by the public schema.
        """
        missing = self.missing(series)
        return self.numeric_tokens_missing(_parse_numbers(series, skip=missing), missing)

    def numeric_tokens_missing(
        self, x: NDArray[np.float64], missing: NDArray[np.bool_]
    ) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
        """``x`` and ``missing`` with the numbers equal to a numeric token made missing (see :meth:`numbers`)."""
        tokens = self.token_numbers
        if not tokens:
            return x, missing
        hit = np.isin(x, tokens)
        if not hit.any():
            return x, missing
        return np.where(hit, np.nan, x), missing | hit


_DEFAULT_RULES = CellRules()


def _number_of_object(value: object) -> float:
    """The rule for a cell that is not text: a real number's float value when finite, else NaN."""
    if isinstance(value, (numbers.Real, Decimal, np.bool_)):
        try:
            x = float(value)
        except (OverflowError, ValueError, TypeError):
            return np.nan
        return x if np.isfinite(x) else np.nan
    return np.nan


def _numbers_of_objects(values: NDArray[np.object_]) -> NDArray[np.float64]:
    """:func:`_number_of_object` of every cell (numpy's conversion when all are plain numbers: the same floats)."""
    if pd.api.types.infer_dtype(values, skipna=True) in _NUMBER_KINDS:
        try:
            x = np.asarray(values, dtype=np.float64)  # float(v) cell by cell
        except (OverflowError, ValueError, TypeError):
            pass
        else:
            return np.where(np.isfinite(x), x, np.nan)
    return np.fromiter(map(_number_of_object, values), np.float64, count=len(values))


def _text_numbers_skipping(text: pa.Array | pa.ChunkedArray, skip: NDArray[np.bool_] | None) -> NDArray[np.float64]:
    """:func:`~edprf_core._cell_text.text_numbers_arrow` of Arrow text cells, NaN where ``skip`` (not parsed)."""
    if skip is not None and skip.any():
        text = pc.if_else(pa.array(skip), pa.scalar(None, text.type), text)
    return text_numbers_arrow(text)


def _parse_numbers(series: pd.Series, skip: NDArray[np.bool_] | None = None) -> NDArray[np.float64]:
    """Each cell as a float by itself; NaN where a cell is not a finite number (and where ``skip``).

    Text cells follow :func:`edprf_core._cell_text.number_of_text`; other cells
    :func:`_number_of_object`.  No step reads a cell as an integer first or picks a
    result dtype for the column, so a cell's float never depends on its neighbours.
    """
    if pd.api.types.is_numeric_dtype(series.dtype) or pd.api.types.is_bool_dtype(series.dtype):
        x = pd.to_numeric(series, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    else:
        text = _text_cells(series)
        if text is not None:
            return _text_numbers_skipping(text, skip)
        values = series.to_numpy(dtype=object)
        if pd.api.types.infer_dtype(values, skipna=True) in _NUMBER_KINDS:  # no text cell at all
            return _numbers_of_objects(values) if skip is None else np.where(skip, np.nan, _numbers_of_objects(values))
        is_text = np.fromiter((isinstance(v, str) for v in values), bool, count=len(values))
        x = np.full(len(values), np.nan)
        if is_text.any():
            x[is_text] = text_numbers(values[is_text])
        if not is_text.all():
            x[~is_text] = _numbers_of_objects(values[~is_text])
    x = np.where(np.isfinite(x), x, np.nan)
    return x if skip is None else np.where(skip, np.nan, x)


def _as_float(
    series: pd.Series, column: str, problems: Problems, rules: CellRules = _DEFAULT_RULES
) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
    """Numbers and the missing mask; cells neither missing nor finite numbers are refused."""
    x, missing = rules.numbers(series)
    _refuse_non_numbers(x, missing, column, series, problems)
    return x, missing


def _refuse_non_numbers(
    x: NDArray[np.float64], missing: NDArray[np.bool_], column: str, series: pd.Series | None, problems: Problems
) -> None:
    """Refuse the cells read as neither missing nor a finite number (NaN in ``x`` where not ``missing``)."""
    bad = np.isnan(x) & ~missing
    if bad.any():
        _reject(column, NOT_A_NUMBER, series, bad, problems)


def _encode_continuous(
    series: pd.Series,
    feature: ContinuousFeature,
    edges: NDArray[np.float64],
    problems: Problems = None,
    rules: CellRules = _DEFAULT_RULES,
) -> NDArray[np.int32]:
    x, nan = _as_float(series, feature.name, problems, rules)
    return _continuous_codes(x, nan, feature, edges, series, problems)


def _continuous_codes(
    x: NDArray[np.float64],
    nan: NDArray[np.bool_],
    feature: ContinuousFeature,
    edges: NDArray[np.float64],
    series: pd.Series | None,
    problems: Problems,
) -> NDArray[np.int32]:
    """Codes of cells read as numbers ``x`` (NaN: missing where ``nan``, else refused already) by the feature's rules."""
    x = np.where(np.isnan(x) & ~nan, feature.lower, x)  # placeholder for refused cells: dropped by the caller
    separate = nan if feature.missing == SEPARATE else None
    if nan.any():
        if feature.missing == REFUSE:
            _reject(
                feature.name,
                "missing value (NaN, None or a missing token) and the schema's rule is missing='refuse'",
                series,
                nan,
                problems,
            )
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


def _lookup(values: pd.Series, categories: Sequence[str]) -> NDArray[np.int32]:
    """Index of each cell's text among ``categories``; -1 where absent (hash lookup, cell by cell).

    A cell that is not text is compared as ``str(value)``.
    """
    text = _text_cells(values)
    if text is not None:
        return _text_lookup(text, categories)
    # str of every cell, kept as Python objects: Series.map(str) would infer pandas' str dtype, which Arrow
    # holds, and fail the whole column on one text without a UTF-8 form (a lone surrogate)
    return _object_lookup(_as_text(values.to_numpy(dtype=object)), categories)


def _text_lookup(text: pa.Array | pa.ChunkedArray, categories: Sequence[str]) -> NDArray[np.int32]:
    """:func:`_lookup` of Arrow text cells: each one's index among ``categories``, -1 where absent or null."""
    index = pc.index_in(text, value_set=pa.array(list(categories), type=text.type))
    return pc.fill_null(index, -1).to_numpy(zero_copy_only=False).astype(np.int32)


_as_text = np.frompyfunc(str, 1, 1)
"""``str`` of each cell of an object array, into an object array."""


_INTEGER = re.compile(r"-?(?:0|[1-9][0-9]*)")
"""A canonical integer's text: no sign but a minus, no leading zero, no point."""

_INTEGER_WITH_ZEROS = r"^(-?(?:0|[1-9][0-9]*))\.0+$"
"""An integer spelt with a point and zeros (``1.0``, ``-3.00``); its group is the integer's canonical text."""


def _category_text_lookup(
    values: pd.Series | pa.Array | pa.ChunkedArray, categories: Sequence[str]
) -> NDArray[np.int32]:
    """:func:`_lookup` (Arrow text: :func:`_text_lookup`) of cells among text categories, then, for a cell that
    meets none, two respellings that name the same value, each cell alone:

    - Unicode's canonical composition (NFC) of the cell and of the categories: ``"Zürich"`` typed on one
      machine and exported as ``u`` followed by a combining diaeresis on another (macOS, PDF copies) is the same
      text to anyone reading it (rev-data S2-4: such a row was dropped, or recoded to the catch-all without a
      word).  Not when two categories compose to the same text (each then stays its own).
    - When every category is a canonical integer's text (``"0"``, ``"1"``, ``"-2"``), that integer spelt with a
      point and zeros (``1.0``, the float 1.0): a writer that types a whole column (pandas writing ``1.0`` for
      every ``1`` once one cell of the column is missing; Parquet storing it as doubles) changes the spelling of
      every other row, and one added record would decide whether a whole file is read (black-box review, stop
      57).  Only integers: a list of codes such as ``"007"`` or ``"250.1"`` is compared as text alone.

    Privacy cost: none (each cell read alone, by the public list).
    """
    text = values if isinstance(values, (pa.Array, pa.ChunkedArray)) else _text_cells(values)
    cells = None if text is not None else _as_text(values.to_numpy(dtype=object))
    codes = _text_lookup(text, categories) if text is not None else _object_lookup(cells, categories)
    composed = [unicodedata.normalize("NFC", c) for c in categories]
    if len(set(composed)) == len(composed):
        _respell(codes, text, cells, composed, lambda t: pc.utf8_normalize(t, form="NFC"), _composed, nfc=True)
    if all(_INTEGER.fullmatch(c) for c in categories):
        _respell(codes, text, cells, categories, _integer_text, _integer_objects)
    return codes


def _respell(
    codes: NDArray[np.int32],
    text: pa.Array | pa.ChunkedArray | None,
    cells: NDArray[np.object_] | None,
    targets: Sequence[str],
    in_arrow: Callable[[pa.Array | pa.ChunkedArray], pa.Array | pa.ChunkedArray],
    in_python: Callable[[NDArray[np.object_]], NDArray[np.object_]],
    nfc: bool = False,
) -> None:
    """Give the cells that met no category (``codes`` -1) the index of their respelling among ``targets``, in place;
    only those cells are read (a column of many undeclared cells: those alone).  ``nfc``: skipped when the cells
    and the targets are all ASCII, which NFC leaves as they are."""
    unmatched = np.flatnonzero(codes == -1)
    if not unmatched.size:
        return
    ascii_targets = nfc and all(c.isascii() for c in targets)
    if text is not None:
        rest = text.take(pa.array(unmatched))
        if not (ascii_targets and pc.all(pc.string_is_ascii(rest)).as_py() is not False):
            codes[unmatched] = _text_lookup(in_arrow(rest), targets)
    else:
        rest = cells[unmatched]
        if not (ascii_targets and all(c.isascii() for c in rest)):
            codes[unmatched] = _object_lookup(in_python(rest), targets)


def _integer_text(text: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """Arrow text cells with an integer written with a point and zeros (``1.0``) written as the integer (``1``)."""
    return pc.replace_substring_regex(text, pattern=_INTEGER_WITH_ZEROS, replacement="\\1")


def _integer_objects(cells: NDArray[np.object_]) -> NDArray[np.object_]:
    """:func:`_integer_text` of Python text cells (an object array)."""
    return pd.Series(cells, dtype=object).str.replace(_INTEGER_WITH_ZEROS, r"\1", regex=True).to_numpy()


def _object_lookup(cells: NDArray[np.object_], categories: Sequence[str]) -> NDArray[np.int32]:
    """Index of each cell (Python text, an object array) among ``categories``; -1 where absent."""
    index = pd.Index(list(categories), dtype=object)
    return index.get_indexer(pd.Index(cells, dtype=object)).astype(np.int32)


_composed = np.frompyfunc(functools.partial(unicodedata.normalize, "NFC"), 1, 1)
"""Unicode's canonical composition (NFC) of each cell of an object array of Python text."""


def _number_lookup(x: NDArray[np.float64], categories: Sequence[float]) -> NDArray[np.int32]:
    """Index of each number among ``categories`` (compared as floats: ``-0.0`` is ``0``); -1 where absent or NaN."""
    cats = np.asarray(categories, dtype=np.float64)
    if cats.size <= 8:  # a few comparisons beat a search
        codes = np.full(x.shape, -1, dtype=np.int32)
        for k in range(cats.size - 1, -1, -1):  # declared categories are distinct as floats
            codes[x == cats[k]] = k
        return codes
    order = np.argsort(cats, kind="stable")
    ranked = cats[order]
    pos = np.clip(np.searchsorted(ranked, x), 0, ranked.size - 1)
    return np.where(ranked[pos] == x, order[pos], -1).astype(np.int32)


def _encode_categorical(
    series: pd.Series,
    feature: CategoricalFeature,
    column: str,
    what: str = "category",
    problems: Problems = None,
    rules: CellRules = _DEFAULT_RULES,
    listed: str | None = "categories",
) -> NDArray[np.int32]:
    """Codes of a column's cells by the feature's rules; ``listed`` names the declared values in a refusal of
    undeclared cells (None: the caller lists them)."""
    codes, missing = _category_lookup(series, feature, rules)
    return _categorical_codes(codes, missing, feature, column, what, series, problems, listed)


def _category_lookup(
    series: pd.Series, feature: CategoricalFeature, rules: CellRules
) -> tuple[NDArray[np.int32], NDArray[np.bool_]]:
    """Each cell's index among the feature's declared categories (-1: none) and which cells are missing: numeric
    categories compared as numbers (numeric missing tokens too, :meth:`CellRules.numbers`), text categories as
    text (the tokens meet them as text only)."""
    if _numeric_categories(feature):
        x, missing = rules.numbers(series)
        return _number_lookup(x, [float(c) for c in feature.categories]), missing
    return _category_text_lookup(series, [str(c) for c in feature.categories]), rules.missing(series)


def _numeric_categories(feature: CategoricalFeature) -> bool:
    """Whether the feature's cells are compared as numbers (its declared categories are numbers)."""
    return numeric_values(feature.categories)


def _categorical_codes(
    codes: NDArray[np.int32],
    missing: NDArray[np.bool_],
    feature: CategoricalFeature,
    column: str,
    what: str,
    series: pd.Series | None,
    problems: Problems,
    listed: str | None = "categories",
) -> NDArray[np.int32]:
    """Codes of cells found at ``codes`` among the categories (-1: undeclared) by the feature's rules for the
    missing (``missing``) and undeclared cells.

    A raised refusal of undeclared cells adds a near miss (``'MANAGEMENT'``: did you mean ``'management'``?)
    and, unless ``listed`` is None, the declared values under that name.
    """
    codes = np.where(missing, -2, codes)
    for rule_name, mask, label in (
        ("missing", codes == -2, "missing value (NaN, None or a missing token)"),
        ("unknown", codes == -1, f"{UNDECLARED} {what}"),
    ):
        if not mask.any():
            continue
        rule = getattr(feature, rule_name)
        if isinstance(rule, str) and rule == REFUSE:
            detail = _undeclared_detail(feature.categories, listed) if rule_name == "unknown" else None
            _reject(column, f"{label} and the schema's rule is {rule_name}='refuse'", series, mask, problems, detail)
            codes = np.where(mask, 0, codes)  # placeholder: such rows are dropped by the caller
        elif rule_name == "missing" and rule == SEPARATE:
            codes = np.where(mask, len(feature.categories), codes)  # the code after the declared categories
        else:
            codes = np.where(mask, feature.code_of(rule), codes)
    return codes.astype(np.int32)


def encode_features(
    X: ArrayLike | pd.DataFrame, schema: Schema, grid: FeatureGrid, problems: Problems = None
) -> NDArray[np.int32]:
    """Encode ``X`` to an ``(n_samples, n_features)`` array of codes.

    Privacy cost: none; this is a local, deterministic map under public rules.
    Raises :class:`DataValidationError` naming the column, value and row of
    the first offending values when a rule says ``refuse`` (with a
    ``problems`` list, records them there instead; see :func:`conforming_rows`).
    A row is named by its position (``row 5``) when the index labels are the
    positions (a numpy input, a default index), else by its index label and
    position (``index 14001 (iloc 0)``); a refused undeclared category comes
    with the declared ones and a near miss (case, surrounding whitespace).
    A text column (pandas' ``str``, or a categorical of text) is encoded once
    per distinct cell and each row takes its own cell's code: the same codes
    as encoding row by row, since every rule reads one cell alone.
    """
    frame = as_frame(X, schema)
    out = np.empty((len(frame), schema.n_features), dtype=np.int32)
    # one feature's codes at a time, written as they come: a list of every feature's codes was the matrix twice
    for j, codes in enumerate(_each_feature_codes(frame, schema, grid, CellRules.of(schema), problems)):
        out[:, j] = codes
        del codes
    return out


def _feature_codes(
    frame: pd.DataFrame, schema: Schema, grid: FeatureGrid, rules: CellRules, problems: Problems, codes: bool = True
) -> list[NDArray[np.int32] | None]:
    """Each feature's codes (None with ``codes=False``: only the problems are recorded), the text columns that
    collapse read together (:func:`_distinct_readings`), the others row by row."""
    return list(_each_feature_codes(frame, schema, grid, rules, problems, codes))


def _each_feature_codes(
    frame: pd.DataFrame, schema: Schema, grid: FeatureGrid, rules: CellRules, problems: Problems, codes: bool = True
) -> Iterator[NDArray[np.int32] | None]:
    """:func:`_feature_codes` one feature at a time, in the schema's order (the problems recorded as each comes)."""
    read = _distinct_readings(frame, schema, rules, grid.edges)
    for j, feature in enumerate(schema.features):
        encode = _feature_encoder(feature, grid.edges[j], rules)
        if read[j] is None:  # every row its own cell
            yield encode(frame[feature.name], problems)
        else:
            yield _each_distinct_cell(frame[feature.name], encode, problems, codes=codes, distinct=read[j])


Encoder = Callable[[pd.Series, Problems], NDArray[np.int32]]
"""Codes of a column's cells (recording refused cells in the list, or raising without one)."""


def _feature_encoder(
    feature: ContinuousFeature | CategoricalFeature, edges: NDArray[np.float64], rules: CellRules
) -> Encoder:
    if isinstance(feature, ContinuousFeature):
        return lambda cells, found: _encode_continuous(rules.clean(cells), feature, edges, found, rules)
    return lambda cells, found: _encode_categorical(
        rules.clean(cells), feature, feature.name, problems=found, rules=rules
    )


def _label_encoder(schema: Schema, rules: CellRules, what: str) -> Encoder:
    """Class indices of labels (after :func:`_label_series`); ``what`` names an undeclared one in refusals."""
    spec = CategoricalFeature(name=schema.label.column, categories=schema.label.classes)
    return lambda cells, found: _encode_categorical(
        _label_series(cells, schema, rules), spec, spec.name, what=what, problems=found, rules=rules, listed=None
    )


def _each_distinct_cell(
    series: pd.Series,
    encode: Encoder,
    problems: Problems,
    *,
    codes: bool = True,
    distinct: tuple[NDArray[np.integer], Callable[[Problems], NDArray[np.int32]]] | None = None,
) -> NDArray[np.int32] | None:
    """``encode(series, problems)``, computed once per distinct text cell and given back to every row.

    Every rule reads one cell alone (the per-record map above), so a row's code and
    verdict are its own cell's: encoding the distinct cells of a text column (pandas'
    ``str``, or a categorical of text, :func:`_distinct_cells`) and gathering by each
    row's cell number is the same map as encoding every row, at the cost of one hash
    pass.  Any other column is encoded row by row.  A refused cell that some row holds,
    without a ``problems`` list, is refused by encoding the column row by row: the same
    error, naming the same rows, as without this shortcut.  With ``codes=False`` only the
    problems are recorded (None is returned).  ``distinct``: each row's number among the
    distinct cells and their codes (a function of a problems list), when the caller read the
    distinct cells of several columns together (:func:`_feature_codes`).
    """
    if distinct is None:
        values, rows = _distinct_cells(series)
        if len(values) == len(series):  # nothing collapsed (or not text): every row is its own cell
            return encode(series, problems)
        distinct = (rows, lambda found: encode(values, found))
    rows, encode_distinct = distinct
    found: list[tuple[str, str, NDArray[np.bool_]]] = []
    distinct_codes = encode_distinct(found)
    held = [(column, what, mask[rows]) for column, what, mask in found]
    held = [problem for problem in held if problem[2].any()]  # a category no row holds refuses no row
    if held and problems is None:
        return encode(series, None)  # raises, naming the rows
    if problems is not None:
        problems.extend(held)
    return distinct_codes[rows] if codes else None


@dataclass(frozen=True, eq=False)
class _TextReading:
    """How the rules read some text cells, each alone: the cells stripped (as the schema says), which are
    missing, and (when asked) each one's number (NaN where missing or not a finite number)."""

    text: pa.Array
    missing: NDArray[np.bool_]
    numbers: NDArray[np.float64] | None


def _read_texts(columns: Sequence[pa.Array], rules: CellRules, numbers: Sequence[bool]) -> list[_TextReading]:
    """:class:`_TextReading` of each column's Arrow text cells (null: missing), its numbers where ``numbers`` says.

    Every step is an element-wise Arrow kernel (``CellRules.clean``, ``CellRules.missing``,
    :func:`~edprf_core._cell_text.text_numbers_arrow`), run once on the columns' cells laid end to end
    and cut back into columns: a cell's reading is its own, whichever cells it is read with, only
    the calls are fewer.
    """
    if not columns:
        return []
    sizes = np.array([len(c) for c in columns])
    ends = np.cumsum(sizes)
    cells = pa.concat_arrays([c.cast(pa.large_string()) for c in columns])
    if rules.strip_whitespace:
        cells = strip_text(cells)
    missing = rules.missing_text(cells)
    wanted = [j for j, asked in enumerate(numbers) if asked]
    parsed = None
    if wanted:
        some = pa.concat_arrays([cells.slice(ends[j] - sizes[j], sizes[j]) for j in wanted])
        skip = np.concatenate([missing[ends[j] - sizes[j] : ends[j]] for j in wanted])
        parsed = _text_numbers_skipping(some, skip)
    readings, at = [], 0
    for j, (size, end) in enumerate(zip(sizes, ends)):
        x, gone = None, missing[end - size : end]
        if numbers[j]:  # a column read as numbers meets the numeric tokens as numbers (CellRules.numbers)
            x, gone = rules.numeric_tokens_missing(parsed[at : at + size], gone)
            at += size
        readings.append(_TextReading(cells.slice(end - size, size), gone, x))
    return readings


def _codes_of_reading(
    reading: _TextReading, feature: ContinuousFeature | CategoricalFeature, edges: NDArray[np.float64], found: Problems
) -> NDArray[np.int32]:
    """The feature's codes of cells read by :func:`_read_texts`: what its encoder gives the same cells."""
    if isinstance(feature, ContinuousFeature):
        _refuse_non_numbers(reading.numbers, reading.missing, feature.name, None, found)
        return _continuous_codes(reading.numbers, reading.missing, feature, edges, None, found)
    if _numeric_categories(feature):
        codes = _number_lookup(reading.numbers, [float(c) for c in feature.categories])
    else:
        codes = _category_text_lookup(reading.text, [str(c) for c in feature.categories])
    return _categorical_codes(codes, reading.missing, feature, feature.name, "category", None, found)


def _distinct_readings(
    frame: pd.DataFrame, schema: Schema, rules: CellRules, edges: Sequence[NDArray[np.float64]]
) -> list[tuple[NDArray[np.integer], Callable[[Problems], NDArray[np.int32]]] | None]:
    """Per feature, for a text column with fewer distinct cells than rows (:func:`_distinct_text`): each row's
    number among them and their codes (a function of a problems list), all such columns read at once
    (:func:`_read_texts`): a few Arrow calls for the frame instead of a dozen per column.  None for any other
    column (every row is its own cell)."""
    picked, texts, rows_of = [], [], []
    for j, feature in enumerate(schema.features):
        found = _distinct_text(frame[feature.name])
        if found is not None and len(found[0]) < len(frame):  # collapsed: fewer distinct cells than rows
            picked.append(j)
            texts.append(found[0])
            rows_of.append(found[1])
    features = [schema.features[j] for j in picked]
    numbers = [isinstance(f, ContinuousFeature) or _numeric_categories(f) for f in features]
    readings = _read_texts(texts, rules, numbers)
    out: list[tuple[NDArray[np.integer], Callable[[Problems], NDArray[np.int32]]] | None] = [None] * len(edges)
    for j, rows, reading, feature in zip(picked, rows_of, readings, features):
        out[j] = (rows, functools.partial(_codes_of_reading, reading, feature, edges[j]))
    return out


def _label_series(y: pd.Series, schema: Schema, rules: CellRules) -> pd.Series:
    """Labels after whitespace stripping and the schema's declared aliases (each cell alone).

    A cell meets an alias the way it meets a class (:func:`_encode_categorical`): with numeric classes, as
    numbers (``2``, ``2.0`` and the text ``" 2"`` all meet the alias ``"2"``); with text classes, as text (a
    cell that is not text as ``str`` of it), with :func:`_category_text_lookup`'s respellings (NFC; ``1.0`` for
    keys that are all plain integers), except that a respelling never takes a cell that is itself a class.  So
    the same labels are aliased whether pandas read the column as numbers or as text.
    """
    series = rules.clean(y)
    aliases = dict(schema.label.aliases)
    if not aliases:
        return series
    keys, targets = list(aliases), list(aliases.values())
    if numeric_values(schema.label.classes):
        # an alias whose text is no number is NaN here and meets no cell compared as a number
        found = _number_lookup(rules.numbers(series)[0], [number_of_text(k) for k in keys])
    else:
        found = _category_text_lookup(series, keys)  # as a class meets its cells (NFC; 1.0 for integer keys)
        respelled = (found >= 0) & (_lookup(series, keys) < 0)
        if respelled.any():  # a respelling never takes a cell that is itself a class (rev-s57b N6)
            found = np.where(respelled & (_lookup(series, [str(c) for c in schema.label.classes]) >= 0), -1, found)
    hit = found >= 0
    if not hit.any():
        return series
    text = _text_cells(series)
    if text is not None:  # a text column (clean made it Arrow-held): the alias's class as text, cell by cell
        classes = pa.array([str(c) for c in targets], type=text.type)  # numbers: their repr parses back
        aliased = pc.take(classes, pa.array(found, mask=~hit))
        return pd.Series(pc.coalesce(aliased, text), index=series.index, dtype=_TEXT_DTYPE, name=series.name)
    series = series.astype(object)  # a class may not fit the column's dtype (a text class in a column of numbers)
    series[hit] = np.asarray(targets, dtype=object)[found[hit]]
    return series


@dataclass(frozen=True)
class ClippedColumn:
    """How a continuous column's numbers lie outside its declared bounds (for the owner only).

    Attributes
    ----------
    share : float in (0, 1]
        Share of the column's finite numbers outside the bounds.
    count : int >= 1
        How many numbers lie outside.
    median_excess : float > 0
        Median distance of those numbers beyond the nearer bound, in widths of the declared domain
        (``upper - lower``): 0.004 for 5.02 against an upper bound of 5 on [0, 5], 20 for grams against kilograms.
    below : int >= 0
        How many of them lie below the lower bound (the others, :attr:`above`, lie above the upper bound).
    """

    share: float
    count: int
    median_excess: float
    below: int = 0

    @property
    def above(self) -> int:
        """How many numbers lie above the upper bound (``count - below``)."""
        return self.count - self.below


def _continuous_numbers(X: ArrayLike | pd.DataFrame, schema: Schema) -> Iterator[tuple[ContinuousFeature, NDArray]]:
    """Each continuous feature with its column's numbers (NaN where a cell is missing or no number), each distinct
    text read once (a per-cell map)."""
    frame = as_frame(X, schema)
    rules = CellRules.of(schema)
    for f in schema.features:
        if isinstance(f, ContinuousFeature):
            values, rows = _distinct_cells(frame[f.name])
            cells = rules.clean(values)
            yield f, rules.numbers(cells)[0][rows]


def clipped_columns(X: ArrayLike | pd.DataFrame, schema: Schema) -> dict[str, ClippedColumn]:
    """The continuous columns with numbers outside their declared bounds, and how far out (for the owner only).

    A declared missing token is missing, not a number, even when it reads as one (``"-999"``): the encoder
    imputes it or gives it its own code, and it is never clipped.
    """
    tally = ClippingTally(schema)
    tally.add(X)
    return tally.columns()


@dataclass(frozen=True)
class UndeclaredColumn:
    """How many cells of a categorical column were undeclared values read as its ``unknown`` category (for the
    owner only).

    Attributes
    ----------
    count : int >= 1
        Cells that are neither missing nor a declared category (read by the schema's ``unknown`` rule).
    rows : int >= count
        Cells of the column that are not missing (the rows holding a value).
    category : str or number
        The declared category they were read as (the feature's ``unknown`` rule).
    example : str
        The first such cell as the file wrote it (:func:`shown_cell`: cut when long).
    """

    count: int
    rows: int
    category: Category
    example: str

    @property
    def share(self) -> float:
        """``count / rows``: the share of the column's values read as the unknown category."""
        return self.count / self.rows


def has_unknown_category(feature: ContinuousFeature | CategoricalFeature) -> bool:
    """Whether ``feature`` is categorical and reads an undeclared value as a catch-all category (``unknown`` not
    ``"refuse"``)."""
    return isinstance(feature, CategoricalFeature) and not (
        isinstance(feature.unknown, str) and feature.unknown == REFUSE
    )


class ClippingTally:
    """:func:`clipped_columns` over rows given in parts (a file read in chunks): feed each part to :meth:`add`
    (or one column's numbers to :meth:`add_numbers`), then read :meth:`columns`, the same shares, counts and
    median excess as one call on all the rows.

    Also tallies, per categorical column with a catch-all ``unknown`` category, its undeclared values read as
    that category (:meth:`add_undeclared`, read by :meth:`undeclared`): the same family, a value outside the
    schema's domain moved into it by rule (a number to its bound, an undeclared category to the unknown one).

    Keeps, per continuous column, the number of finite values and the excess of each value outside the bounds
    (8 bytes per clipped value: for the median); per categorical column, two counts and one example cell.
    Privacy cost: none (local, on the caller's rows).
    """

    def __init__(self, schema: Schema) -> None:
        self.schema = schema
        self._finite: dict[str, int] = {}
        self._excess: dict[str, list[NDArray[np.float64]]] = {}
        self._below: dict[str, int] = {}
        self._present: dict[str, int] = {}
        self._undeclared: dict[str, int] = {}
        self._example: dict[str, str] = {}

    def add(self, X: ArrayLike | pd.DataFrame) -> None:
        """Count the rows ``X`` (holding the schema's feature columns)."""
        for f, x in _continuous_numbers(X, self.schema):
            self.add_numbers(f, x)
        if any(has_unknown_category(f) for f in self.schema.features):
            frame = as_frame(X, self.schema)
            rules = CellRules.of(self.schema)
            for f in self.schema.features:
                if has_unknown_category(f):
                    cells = frame[f.name]
                    undeclared, missing = undeclared_cells(cells, f, rules)
                    self.add_undeclared(f, undeclared, ~missing, cells.to_numpy(dtype=object))

    def add_undeclared(
        self,
        feature: CategoricalFeature,
        undeclared: NDArray[np.bool_],
        present: NDArray[np.bool_],
        cells: NDArray[np.object_],
    ) -> None:
        """Count one categorical column's cells: ``undeclared`` (:func:`undeclared_cells`) among ``present`` (not
        missing, on a line that was read); ``cells`` as written, for the first undeclared one's example."""
        name = feature.name
        self._present[name] = self._present.get(name, 0) + int(np.count_nonzero(present))
        hit = undeclared & present
        count = int(np.count_nonzero(hit))
        if count:
            self._undeclared[name] = self._undeclared.get(name, 0) + count
            self._example.setdefault(name, shown_cell(cells[int(np.argmax(hit))]))

    def undeclared(self) -> dict[str, UndeclaredColumn]:
        """The categorical columns with undeclared values read as their unknown category so far."""
        found = {}
        for f in self.schema.features:
            if isinstance(f, CategoricalFeature) and self._undeclared.get(f.name):
                category = f.categories[f.code_of(f.unknown)]
                found[f.name] = UndeclaredColumn(
                    self._undeclared[f.name], self._present[f.name], category, self._example[f.name]
                )
        return found

    def add_numbers(self, feature: ContinuousFeature, x: NDArray[np.float64]) -> None:
        """Count one continuous column's numbers (NaN where a cell is missing, not a number or not read)."""
        finite = x[np.isfinite(x)]
        self._finite[feature.name] = self._finite.get(feature.name, 0) + int(finite.size)
        excess = np.maximum(feature.lower - finite, finite - feature.upper)
        outside = excess[excess > 0]
        if outside.size:
            self._excess.setdefault(feature.name, []).append(outside / float(feature.upper - feature.lower))
            below = int(np.count_nonzero(finite < feature.lower))
            self._below[feature.name] = self._below.get(feature.name, 0) + below

    def columns(self) -> dict[str, ClippedColumn]:
        """The columns with values outside their bounds so far, as :func:`clipped_columns` gives them."""
        found = {}
        for name, parts in self._excess.items():
            outside = np.concatenate(parts)
            found[name] = ClippedColumn(
                float(outside.size / self._finite[name]),
                int(outside.size),
                float(np.median(outside)),
                self._below.get(name, 0),
            )
        return found


SHOWN_CELL_CHARS = 24
"""Characters of a cell a per-row detail quotes (``edprf predict``'s detail column); a longer cell is cut."""


def shown_cell(value: object) -> str:
    """A cell as a per-row detail shows it: its text (``str``), cut after :data:`SHOWN_CELL_CHARS` characters with
    the full length said (a huge cell never floods the output)."""
    return _cut(str(value), SHOWN_CELL_CHARS)


def undeclared_cells(
    series: pd.Series, feature: CategoricalFeature, rules: CellRules
) -> tuple[NDArray[np.bool_], NDArray[np.bool_]]:
    """Per cell of a categorical column: whether it is undeclared (neither missing nor a declared category), and
    whether it is missing; each cell alone, read as the encoder reads it (:func:`_encode_categorical`).

    The same rules and lookups: surrounding whitespace and the missing tokens of ``rules``
    (:meth:`CellRules.clean`, :meth:`CellRules.missing`); with numeric declared categories a cell is compared as
    a number (``"2.0"`` and ``" 2"`` meet ``2``; text that is no number is undeclared), with text categories as
    text.  An undeclared cell is what the feature's ``unknown`` rule reads (as its catch-all category, or
    refused).  A text column is read once per distinct cell (:func:`_distinct_cells`).  Privacy cost: none (a
    per-cell map under public rules).
    """
    values, rows = _distinct_cells(series)
    found, missing = _category_lookup(rules.clean(values), feature, rules)
    undeclared = (found < 0) & ~missing
    return undeclared[rows], missing[rows]


def clipped_shares(X: ArrayLike | pd.DataFrame, schema: Schema) -> dict[str, float]:
    """Share of each continuous column's numbers that lie outside its declared bounds (for the owner only).

    A declared missing token is missing, not a number, even when it reads as one (``"-999"``): the encoder
    imputes it or gives it its own code, and it is never clipped.  Columns with finite numbers all inside
    their bounds have share 0.
    """
    shares = {}
    for f, x in _continuous_numbers(X, schema):
        finite = np.isfinite(x)
        if finite.any():
            outside = finite & ((x < f.lower) | (x > f.upper))
            shares[f.name] = float(outside.sum() / finite.sum())
    return shares


def rule_violations(X: pd.DataFrame, y: pd.Series, schema: Schema) -> list[tuple[str, str, NDArray[np.bool_]]]:
    """Every violated 'refuse' rule: (column, what, mask of the rows that break it); each row judged alone."""
    problems: list[tuple[str, str, NDArray[np.bool_]]] = []
    rules = CellRules.of(schema)
    _feature_codes(as_frame(X, schema), schema, FeatureGrid.from_schema(schema, n_bins=2), rules, problems, False)
    _each_distinct_cell(y, _label_encoder(schema, rules, "class"), problems, codes=False)
    return problems


def _distinct_cells(series: pd.Series) -> tuple[pd.Series, NDArray[np.integer]]:
    """The distinct cells of a column (a Series indexed 0..k-1) and each row's number among them.

    Only text is collapsed (:func:`_distinct_text`); any other column keeps every row as its own cell
    (in an object column ``1 == 1.0 == True``, yet the rules read them differently).
    """
    found = _distinct_text(series)
    if found is None:
        return series.reset_index(drop=True), np.arange(len(series))
    text, rows = found
    return pd.Series(text, dtype=_TEXT_DTYPE), rows


def _distinct_text(series: pd.Series) -> tuple[pa.Array, NDArray[np.integer]] | None:
    """A text column's distinct cells (Arrow text, null for a missing cell) and each row's number among them;
    None for a column that is not collapsed.

    Collapsed: a non-empty column of pandas' string dtype, or a categorical one whose categories are all text
    (its cells read as those texts, missing as missing).  There, equal cells are the same characters (or both
    missing), so they meet the same verdict.
    """
    n = len(series)
    dtype = series.dtype
    if n and isinstance(dtype, pd.CategoricalDtype):
        categories = dtype.categories
        if isinstance(categories.dtype, pd.StringDtype) and categories.dtype.storage == "pyarrow":
            texts = _one_array(pa.array(categories.array))  # no copy
        elif pd.api.types.infer_dtype(categories) == "string":
            texts = text_array(np.asarray(categories, dtype=object))
        else:
            return None
        if texts is None:  # text Arrow cannot hold (a lone surrogate): read cell by cell
            return None
        codes = series.cat.codes.to_numpy()  # the narrowest integers: gathers by them read less memory
        if codes.min() < 0:  # a missing cell: the slot after the last category
            codes = np.where(codes < 0, len(categories), codes.astype(np.intp))
            texts = pa.concat_arrays([texts, pa.nulls(1, texts.type)])
        return texts, codes
    if n == 0 or not isinstance(dtype, pd.StringDtype):
        return None
    codes, _ = pd.factorize(series, use_na_sentinel=False)  # numbered in order of first occurrence
    codes = np.asarray(codes, dtype=np.intp)
    first = first_rows(codes)
    if not np.array_equal(codes[first], np.arange(first.size)):  # pragma: no cover - not in first-seen order
        return None
    texts = _text_cells(series.iloc[first])
    return None if texts is None else (_one_array(texts), codes)


def first_rows(codes: NDArray[np.integer]) -> NDArray[np.intp]:
    """The row of each code's first occurrence, for codes numbered in order of first occurrence (``pd.factorize``):
    where the running maximum rises.  Linear, where ``np.unique(codes, return_index=True)`` sorts."""
    if codes.size == 0:
        return np.empty(0, dtype=np.intp)
    seen = np.maximum.accumulate(codes)
    return np.flatnonzero(np.r_[True, seen[1:] > seen[:-1]])


def _one_array(cells: pa.Array | pa.ChunkedArray) -> pa.Array:
    """The cells as one Arrow array (the chunks of a chunked one put together)."""
    return cells.combine_chunks() if isinstance(cells, pa.ChunkedArray) else cells


def conforming_rows(
    X: pd.DataFrame, y: pd.Series, schema: Schema, line_numbers: NDArray[np.integer] | None = None
) -> tuple[NDArray[np.bool_], list[str]]:
    """Rows that satisfy every rule of the schema, and one description per violated rule.

    ``line_numbers``: each row's line in its file (:func:`edprf_core.tables.read_columns`); the descriptions then
    name the first rows by line (``first lines [12, 40]``), as the notes on dropped lines do, instead of by
    position among the rows read.

    A per-record filter: whether a row is kept depends on that row only, so
    training on the kept rows is a stable transformation (neighbouring inputs
    give neighbouring outputs) and costs no extra ε.  The descriptions name
    columns, values and rows: for the data owner's eyes only, never to be sent.
    Column-level problems (a missing or unknown column) still raise.

    Speed: a rule judges one cell at a time, so each text column's rules run
    once per distinct text and every row takes the verdict of its own cell's
    text: the same verdicts, row by row, as judging every row
    (:func:`_each_distinct_cell`).
    """
    problems = rule_violations(X, y, schema)
    keep = np.ones(len(X), dtype=bool)
    notes = []
    positional = _positional(X.index) if problems else True
    for column, what, mask in problems:
        keep &= ~mask
        first = np.flatnonzero(mask)[:3]
        if line_numbers is not None:
            where = f"first lines {np.asarray(line_numbers)[first].tolist()}"
        elif positional:
            where = f"first rows {first.tolist()}"
        else:
            where = f"first at index {X.index[first].tolist()}, iloc {first.tolist()}"
        notes.append(f"column {column!r}: {what}: {int(mask.sum())} rows ({where})")
    return keep, notes


def encode_labels(y: ArrayLike | pd.Series, schema: Schema) -> NDArray[np.int32]:
    """Map labels to class indices 0..K-1 of the declared classes.

    A label outside the declared classes, or a missing label, is refused:
    there is no catch-all for labels.
    """
    if isinstance(y, pd.DataFrame) or np.ndim(y) > 1:
        raise DataValidationError("y must be 1-D")
    rules = CellRules.of(schema)
    series = y if isinstance(y, pd.Series) else pd.Series(np.asarray(y, dtype=object).ravel())
    try:
        return _each_distinct_cell(series, _label_encoder(schema, rules, "class (not in the declared classes)"), None)
    except DataValidationError as exc:
        raise DataValidationError(f"label {exc}; {_declared_text(schema.label.classes, 'classes')}") from None


def declared_labels(y: pd.Series, schema: Schema) -> pd.Series:
    """Each label as the declared class it reads as (numbers for numeric classes), by the schema's rules cell by
    cell (whitespace, missing tokens, aliases); a cell that is no declared class stays as it is.

    So labels read as text compare equal to what ``predict`` returns (``accuracy_score(y, clf.predict(X))``).
    Privacy cost: none (a per-cell map by public rules).
    """
    problems: Problems = []
    codes = _each_distinct_cell(y, _label_encoder(schema, CellRules.of(schema), "class"), problems)
    bad = np.zeros(len(y), dtype=bool)
    for _, _, mask in problems:
        bad |= mask
    classes = np.asarray(schema.label.classes, dtype=object)
    values = np.where(bad, y.to_numpy(dtype=object), classes[np.clip(codes, 0, len(classes) - 1)])
    dtype = None if bad.any() else np.asarray(schema.label.classes).dtype
    return pd.Series(values, index=y.index, name=y.name, dtype=dtype)


def label_values(schema: Schema) -> NDArray:
    """The declared classes as an array (what ``predict`` returns)."""
    return np.asarray(schema.label.classes)


def cell_readings(cells: pd.Series, schema: Schema, column: str) -> NDArray[np.float64]:
    """Each cell of ``column`` as the schema reads it, each cell alone, as one float.

    A continuous feature's cell: its number, before clipping (``"30"``, ``" 30.0"``, the integer 30 and the
    float 30.0 all read 30.0; ``-0.0`` reads 0.0).  A categorical feature's cell or a label: the index of the
    declared category or class it meets (after the schema's missing and unknown rules and a label's aliases).
    NaN where a continuous cell is missing or no finite number.  A cell the schema refuses reads some
    placeholder: its row is dropped by :func:`conforming_rows`, so its reading serves nothing.

    What it is for: a key for the row that does not depend on how the file spelt or typed the value (a writer
    that types a whole column, such as pandas writing ``30.0`` once one cell of the column is missing, changes
    the text of every other row, not its reading).  Privacy cost: none (a per-cell map under public rules).
    """
    rules = CellRules.of(schema)
    if column == schema.label.column:
        codes = _label_encoder(schema, rules, "class")(cells, [])
        return codes.astype(np.float64)
    feature = schema.features[schema.feature_names.index(column)]
    cleaned = rules.clean(cells)
    if isinstance(feature, ContinuousFeature):
        return rules.numbers(cleaned)[0] + 0.0  # + 0.0: -0.0 reads as 0.0
    return _encode_categorical(cleaned, feature, feature.name, problems=[], rules=rules).astype(np.float64)
