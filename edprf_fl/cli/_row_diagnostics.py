"""Why rows of DATA were not scored, for ``edprf predict`` and ``edprf evaluate``: the most common reason, and
hints for the usual causes (decimal commas, a header read as data with ``--no-header``, labels that are not
declared classes, written in another case).

Fed chunk by chunk as the file streams (bounded memory: only counts and a few example values are kept).
Imported by the handlers only (it loads numpy and pandas).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from edprf_core import Schema
from edprf_core.count_text import count_text
from edprf_core.prediction import ClippingTally, RowScores
from edprf_core.schema import ContinuousFeature
from edprf_core.tables import RowChunk, decimal_comma_cells, thousands_comma_cells

__all__ = ["RowDiagnostics"]

_SHOWN_LABELS = 4
"""Distinct undeclared labels named (the most frequent first)."""

_KEPT_LABELS = 200
"""Distinct undeclared labels counted: a wrong label column may hold a different value on every row."""

_HEADER_SHARE = 0.5
"""Line 1 looks like a header when at least this share of its cells are the schema's feature names."""

_VALUE = re.compile(r" \((?:'[^']*'|\"[^\"]*\")[^)]*\)$")
"""The refused value a reason ends with: ``column 'age': not a number ('51,414')`` counts as its reason only."""


def _shown(value: str, limit: int = 24) -> str:
    return repr(value if len(value) <= limit else value[:limit] + "...")


@dataclass
class RowDiagnostics:
    """Counts of why rows were not scored, over every chunk of one file.

    Parameters
    ----------
    schema : Schema
        The model's schema.
    no_header : bool
        ``--no-header`` was given: line 1 is read as data.
    """

    schema: Schema
    no_header: bool
    rows: int = 0
    not_scored: int = 0
    reasons: Counter[str] = field(default_factory=Counter)
    decimal_commas: int = 0
    decimal_example: tuple[str, str] | None = None
    thousands_commas: int = 0
    thousands_example: tuple[str, str] | None = None
    header_like: bool = False
    undeclared: Counter[str] = field(default_factory=Counter)
    clipping: ClippingTally | None = None
    """How each continuous column lies outside its bounds over all rows read (the units warning): pass it to
    ``score_rows(..., clipping=)``."""

    def __post_init__(self) -> None:
        if self.clipping is None:
            self.clipping = ClippingTally(self.schema)

    def add(self, chunk: RowChunk, scores: RowScores) -> None:
        """Count the chunk's rows that were not scored, by reason, and look for the usual causes (the clipped
        values are tallied by ``score_rows(..., clipping=self.clipping)``, which parses them)."""
        self.rows += len(chunk.frame)
        failed = ~scores.scored
        if not failed.any():
            return
        self.not_scored += int(failed.sum())
        parts = pd.Series(scores.detail[failed], dtype=object).str.split("; ").explode()
        parts = parts[~parts.str.contains(" clipped to its ", regex=False)]  # scored: not why the row was refused
        self.reasons.update(parts.str.replace(_VALUE, "", regex=True).tolist())
        refused = scores.status == "refused"
        if refused.any():
            self._decimal_commas(chunk.frame, refused)
        if self.no_header and len(chunk.line_numbers) and chunk.line_numbers[0] == 1 and failed[0]:
            self.header_like = self.header_like or self._looks_like_header(chunk.frame.iloc[0])

    def add_labels(self, cells: pd.Series, undeclared: NDArray[np.bool_]) -> None:
        """Count the label cells that are present but not among the declared classes (``undeclared`` marks them)."""
        if not undeclared.any():
            return
        counts = cells[undeclared].astype(str).str.strip().value_counts()
        for value, n in counts.items():
            if value in self.undeclared or len(self.undeclared) < _KEPT_LABELS:
                self.undeclared[str(value)] += int(n)

    def _decimal_commas(self, frame: pd.DataFrame, refused: NDArray[np.bool_]) -> None:
        for f in self.schema.features:
            if not isinstance(f, ContinuousFeature) or f.name not in frame:
                continue
            cells = frame[f.name][refused]
            # a refused number whose every comma is followed by three digits (1,400 and 12,500,000) is more likely
            # a thousands separator, which --decimal ',' would read as 1.4; tested before the one-comma decimal
            # test, which 12,500,000 would not reach (review rev-s60 F7); a Parquet number is neither
            is_thousands = thousands_comma_cells(cells)
            thousands = cells[is_thousands].astype(str).str.strip()
            self.thousands_commas += len(thousands)
            if self.thousands_example is None and len(thousands):
                self.thousands_example = (f.name, thousands.iloc[0])
            rest = cells[~is_thousands]
            decimal = rest[decimal_comma_cells(rest)].astype(str).str.strip()
            self.decimal_commas += len(decimal)
            if self.decimal_example is None and len(decimal):
                self.decimal_example = (f.name, decimal.iloc[0])

    def _looks_like_header(self, first: pd.Series) -> bool:
        """Line 1's cells are the schema's feature names (most of them, in order; case and spaces aside)."""
        names = [n.strip().casefold() for n in self.schema.feature_names]
        cells = [str(first.get(n, "")).strip().casefold() for n in self.schema.feature_names]
        same = sum(c == n for c, n in zip(cells, names))
        return same >= max(1.0, _HEADER_SHARE * len(names))

    def most_common_reason(self) -> str:
        """``"column 'age': not a number (20 of 20 rows)"``, or ``""`` when every row was scored."""
        if not self.reasons:
            return ""
        reason, n = self.reasons.most_common(1)[0]
        return f"{reason} ({n} of {count_text(self.rows, 'row')})"

    def hints(self) -> list[str]:
        """One line per likely cause found (none when nothing was refused)."""
        lines = []
        if self.header_like:
            lines.append("line 1 looks like a header (its cells are the schema's feature names): drop --no-header")
        if self.decimal_example is not None:
            column, value = self.decimal_example
            lines.append(
                f"decimal comma? {count_text(self.decimal_commas, 'refused number')} "
                f"such as {value!r} (column {column!r}): the schema reads '.' as the decimal point; pass "
                "--decimal ',' (with --sep ';' when ';' separates the fields), or write DATA's numbers with '.'"
            )
        if self.thousands_example is not None:
            column, value = self.thousands_example
            whole = value.replace(",", "")
            misread = (
                f"; writing the comma as '.', or --decimal ',', would read it as {float(value.replace(',', '.')):g}"
                if value.count(",") == 1 and "." not in value  # '1,400.50' has no reading with a decimal comma
                else ""
            )
            lines.append(
                f"thousands separator? {count_text(self.thousands_commas, 'refused number')} such as {value!r} "
                f"(column {column!r}): {value} may mean {whole}: remove the separator (the schema reads none{misread})"
            )
        if self.undeclared:
            lines.append(self._label_hint())
        return lines

    def _label_hint(self) -> str:
        classes = [str(c) for c in self.schema.classes]
        folded = {c.casefold(): c for c in classes}
        common = self.undeclared.most_common(_SHOWN_LABELS)
        shown = ", ".join(f"{_shown(v)} ({count_text(n, 'row')})" for v, n in common)
        more = len(self.undeclared) - len(common)
        plus = "+" if len(self.undeclared) >= _KEPT_LABELS else ""
        others = f" and {more}{plus} other value{'' if more == 1 and not plus else 's'}" if more else ""
        line = f"labels not among the declared classes {classes}: {shown}{others}"
        cased = [(v, folded[v.casefold()]) for v, _ in common if v.casefold() in folded]
        if cased:
            pairs = ", ".join(f"{_shown(v)} is declared as {c!r}" for v, c in cased)
            line += f"; labels are case-sensitive: {pairs}"
        return line
