"""Score rows one by one under the schema's rules: a row that breaks a rule gets a reason, never a failed batch.

What ``edprf predict`` and ``edprf evaluate`` need from a model: for every
row, the class probabilities and a status,

- ``ok``: every cell read as the schema says;
- ``clipped``: scored, but a value lay outside the schema's domain and was
  moved into it by rule: a continuous value outside its declared bounds was
  clipped to the nearest bound (the model saw the bound), or a categorical
  value the schema does not declare was read as the feature's ``unknown``
  category (a catch-all such as ``"Other"``; the model saw that category);
  the detail names the column, the value and where it went;
- ``refused``: not scored, because a cell breaks a ``refuse`` rule (a missing
  value where the schema refuses it, a cell that is not a number, an
  undeclared category; the detail names the column);
- ``malformed``: not scored, because the line could not be read as one record
  (wrong number of fields, an unbalanced quote, an over-long line); an unbalanced quote is said with its
  usual cause, a quoted cell that spans lines (:data:`SPANNING_CELL_REASON`).

Each row's status and probabilities depend on that row's cells only (the
schema's per-cell rules, :mod:`edprf_core._encoding`), exactly as the rows
were read in training.  Rows are scored through :meth:`DPForest.predict_proba`
on each valid row's *codes*, re-expressed as one representative value per
bin or category, so every cell is parsed once for its code and once for the
clipping check (a categorical column with an ``unknown`` category: looked up
once more, for the undeclared check), never again.

Privacy: post-processing of a released forest on the caller's own rows; no ε.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from ._encoding import (
    NOT_A_NUMBER,
    CellRules,
    FeatureGrid,
    _label_encoder,
    as_frame,
    encode_features,
    has_unknown_category,
    shown_cell,
    undeclared_cells,
)
from ._forest import DPForest
from ._schema import CategoricalFeature, Schema
from ._text_table import UNBALANCED_QUOTES

if TYPE_CHECKING:
    from ._encoding import ClippingTally
from ._support import support_of_codes

__all__ = ["CLIPPED", "MALFORMED", "OK", "REFUSED", "RowScores", "read_labels", "score_rows"]

OK = "ok"
CLIPPED = "clipped"
REFUSED = "refused"
MALFORMED = "malformed"

SPANNING_CELL_REASON = (
    "unbalanced quotes: a quoted cell spans lines (embedded line break): remove line breaks from text columns, "
    "or drop the column"
)
"""The detail of such a line: the usual cause is a text cell with a line break in it (an Excel notes column),
which makes one record two or more malformed lines (every line is one record: :mod:`edprf_core._table_stream`)."""


@dataclass(frozen=True, eq=False)
class RowScores:
    """Per row: status, detail and class probabilities (NaN where the row was not scored); with
    ``score_rows(..., support=True)``, each row's support label (:func:`edprf_core._support.row_support`: ``"ok"``,
    ``"low: <features>"``; ``""`` where the row was not scored), else None."""

    status: NDArray[np.object_]
    detail: NDArray[np.object_]
    proba: NDArray[np.float64]
    support: NDArray[np.object_] | None = None

    @property
    def scored(self) -> NDArray[np.bool_]:
        return (self.status == OK) | (self.status == CLIPPED)


_shown = shown_cell


def _short_reason(what: str) -> str:
    """The encoder's rule text as a short reason."""
    if what.startswith("missing value"):
        return "missing, and the schema refuses missing values here"
    if what.startswith(NOT_A_NUMBER):
        return "not a number"
    if what.startswith("undeclared"):
        return "unknown category"
    return what


def _append(detail: NDArray[np.object_], mask: NDArray[np.bool_], texts: NDArray[np.object_] | str) -> None:
    """Add ``texts`` to the detail of the rows in ``mask`` (joined by "; ")."""
    rows = np.flatnonzero(mask)
    if rows.size == 0:
        return
    new = np.broadcast_to(np.asarray(texts, dtype=object), mask.shape)[rows]
    old = detail[rows]
    detail[rows] = np.where(old == "", new, old + "; " + new)


def score_rows(
    forest: DPForest,
    frame: pd.DataFrame,
    malformed: NDArray[np.object_] | None = None,
    pooling: str = "log-linear",
    *,
    support: bool = False,
    clipping: ClippingTally | None = None,
) -> RowScores:
    """Status, detail and probabilities of every row of ``frame``.

    Parameters
    ----------
    forest : DPForest
    frame : DataFrame
        Must hold the schema's feature columns (others are ignored); cells
        as text or as values.
    malformed : array of str, optional
        Per row, ``""`` or why its line could not be read (its cells are then
        ignored and the row gets status ``malformed`` with that detail).
    pooling : {"log-linear", "mean"}, default "log-linear"
        The trees' pooling rule, as in :meth:`DPForest.predict_proba`.
    support : bool, default False
        Also label each scored row's support (:func:`edprf_core._support.row_support`): ``"ok"`` or ``"low:
        "`` and the features whose released counts are within noise (post-processing, no ε).
    clipping : ClippingTally, optional
        Fed the continuous columns' numbers of the rows (those of malformed lines aside), as they are parsed
        here: the units warning of a file read in chunks, without parsing its cells again; and, per categorical
        column with an ``unknown`` category, its undeclared cells (:meth:`ClippingTally.add_undeclared`).

    Returns
    -------
    RowScores

    Notes
    -----
    Privacy cost: none (post-processing of a released forest).  Each row's
    output depends on that row only.
    """
    schema = forest.schema
    n = len(frame)
    features = as_frame(frame[list(schema.feature_names)], schema) if n else frame
    status = np.full(n, OK, dtype=object)
    detail = np.full(n, "", dtype=object)
    proba = np.full((n, schema.n_classes), np.nan)
    labels = np.full(n, "", dtype=object) if support else None
    if n == 0:
        return RowScores(status, detail, proba, labels)
    bad_line = np.zeros(n, dtype=bool) if malformed is None else (np.asarray(malformed, dtype=object) != "")
    problems: list[tuple[str, str, NDArray[np.bool_]]] = []
    rules = CellRules.of(schema)
    # Continuous cells are parsed once, here: the clipping check needs the numbers, and the encoder then
    # reads floats (no second strip and parse).  A cell that is not a number is refused here, as the encoder
    # would refuse it (_encoding._as_float); the encoder gets a placeholder number for it.
    parsed = features.copy(deep=False)
    clipped = np.zeros(n, dtype=bool)
    for f in schema.features:
        if isinstance(f, CategoricalFeature):
            if has_unknown_category(f):  # an undeclared cell is read as the catch-all: said, as a clipped number is
                clipped |= _undeclared_read(f, features[f.name], rules, bad_line, detail, clipping)
            continue
        cells = rules.clean(features[f.name])
        x, missing = rules.numbers(cells)  # a declared missing token ("-999", -999.0) is missing, not a number
        not_number = np.isnan(x) & ~missing
        if not_number.any():
            problems.append((f.name, NOT_A_NUMBER, not_number))
        outside = np.isfinite(x) & ((x < f.lower) | (x > f.upper)) & ~bad_line
        if outside.any():
            clipped |= outside
            texts = np.full(n, "", dtype=object)
            at = np.flatnonzero(outside)
            written = cells.iloc[at].tolist()  # the cell as the file wrote it (after stripping), not rounded by :g
            texts[outside] = [
                f"column {f.name!r}: {_as_written(cell, x[i])} clipped to its "
                f"{'lower' if x[i] < f.lower else 'upper'} bound {f.lower if x[i] < f.lower else f.upper:g}"
                for i, cell in zip(at, written)
            ]
            _append(detail, outside, texts)
        if clipping is not None:
            clipping.add_numbers(f, np.where(missing | bad_line, np.nan, x))
        parsed[f.name] = np.where(not_number, f.lower, x)  # a placeholder: that row is refused above
    grid = forest.grid
    codes = encode_features(parsed, schema, grid, problems)
    refused = np.zeros(n, dtype=bool)
    for column, what, mask in problems:
        mask = mask & ~bad_line
        refused |= mask
        _append(detail, mask, _reason_texts(column, what, features[column].to_numpy(dtype=object), mask))
    status[clipped] = CLIPPED
    status[refused] = REFUSED
    if malformed is not None:
        status[bad_line] = MALFORMED
        reasons = np.asarray(malformed, dtype=object)[bad_line]
        detail[bad_line] = np.where(reasons == UNBALANCED_QUOTES, SPANNING_CELL_REASON, reasons)
    good = ~refused & ~bad_line
    if good.any():
        # Rows with the same codes on every grid the model reads score alike: one real row of each such group
        # is scored and its result given to the group.  A marginals part on its own grid (marginals_bins) splits
        # the trees' bins further: its codes join the key, or rows of one trees' bin and different marginals
        # bins would all get the first one's marginals term.
        rows = parsed[good]
        key, sizes = codes[good], tuple(grid.n_codes)
        if forest.marginals is not None and forest.marginals_bins != forest.grid_bins:
            marginal_grid = FeatureGrid.from_schema(schema, forest.marginals_bins)
            key = np.hstack([key, encode_features(rows, schema, marginal_grid, [])])
            sizes += tuple(marginal_grid.n_codes)
        first, inverse = _distinct_rows(key, sizes)
        representatives = rows.iloc[first].reset_index(drop=True)  # real rows, already read by the rules
        proba[good] = forest.predict_proba(representatives, pooling=pooling)[inverse]
        if labels is not None:
            distinct = codes[good][first]
            labels[good] = support_of_codes(forest, distinct, representatives).labels()[inverse]
    return RowScores(status, detail, proba, labels)


def _undeclared_read(
    feature: CategoricalFeature,
    cells: pd.Series,
    rules: CellRules,
    bad_line: NDArray[np.bool_],
    detail: NDArray[np.object_],
    clipping: ClippingTally | None,
) -> NDArray[np.bool_]:
    """The rows whose cell of ``feature`` (a categorical feature with an ``unknown`` category) is undeclared and
    so read as that category, their detail said (``column 'gender': 'F' is not a declared category, read as
    'Other' (the schema's unknown rule)``) and counted in ``clipping``; lines not read (``bad_line``) aside."""
    undeclared, missing = undeclared_cells(cells, feature, rules)
    undeclared &= ~bad_line
    written = cells.to_numpy(dtype=object)
    if clipping is not None:
        clipping.add_undeclared(feature, undeclared, ~missing & ~bad_line, written)
    if undeclared.any():
        category = feature.categories[feature.code_of(feature.unknown)]
        texts = np.full(len(cells), "", dtype=object)
        texts[undeclared] = [
            f"column {feature.name!r}: {_shown(cell)!r} is not a declared category, read as {category!r} "
            "(the schema's unknown rule)"
            for cell in written[undeclared]
        ]
        _append(detail, undeclared, texts)
    return undeclared


def _distinct_rows(codes: NDArray[np.int32], n_codes: tuple[int, ...]) -> tuple[NDArray[np.intp], NDArray[np.intp]]:
    """The first row of each distinct code row and, per row, the index of its distinct row (rows with equal
    codes score alike).

    Each row becomes one mixed-radix integer when the grid has fewer than 2**62 cells (a 1-D unique is
    several times faster than numpy's row-wise one); otherwise every row is kept.
    """
    radix = np.asarray(n_codes, dtype=np.int64)
    if math.prod(int(n) for n in n_codes) >= 2**62:  # exact (Python integers): a wide grid has 20**300 cells
        rows = np.arange(codes.shape[0])
        return rows, rows
    weights = np.concatenate([np.cumprod(radix[::-1])[::-1][1:], [1]]).astype(np.int64)
    _, first, inverse = np.unique(codes.astype(np.int64) @ weights, return_index=True, return_inverse=True)
    return first, inverse.ravel()


def _reason_texts(column: str, what: str, values: NDArray[np.object_], mask: NDArray[np.bool_]) -> NDArray[np.object_]:
    texts = np.full(mask.shape, "", dtype=object)
    reason = _short_reason(what)
    rows = np.flatnonzero(mask)
    if reason.startswith("missing"):
        texts[rows] = f"column {column!r}: {reason}"
    else:
        texts[rows] = [f"column {column!r}: {reason} ({_shown(values[i])!r})" for i in rows]
    return texts


def read_labels(y: pd.Series, schema: Schema) -> tuple[NDArray[np.int64], NDArray[np.object_]]:
    """Class index of each label (-1 where it cannot be read) and, per row, why not (``""`` when read).

    Labels follow the schema's rules (whitespace, declared aliases, numeric
    classes compared as numbers); a missing or undeclared label is not
    scored.  Each row's result depends on its own cell only.
    """
    rules = CellRules.of(schema)
    problems: list[tuple[str, str, NDArray[np.bool_]]] = []
    idx = _label_encoder(schema, rules, "class")(y.reset_index(drop=True), problems).astype(np.int64)
    reason = np.full(len(y), "", dtype=object)
    for _, what, mask in problems:
        idx[mask] = -1
        text = "label missing" if what.startswith("missing") else "label not one of the declared classes"
        reason[mask] = text
    return idx, reason


def _as_written(cell: object, value: float) -> str:
    """A clipped cell as its file wrote it (``400.0001``, ``-999.0``: ``:g`` showed ``400`` and ``-999``, a bound's
    or a missing token's look-alike); a cell that is not text by its shortest round-trip form."""
    return _shown(cell) if isinstance(cell, str) else repr(float(value))  # cut as a refused cell is
