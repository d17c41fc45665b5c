"""Why rows of DATA were not scored, for ``edprf predict`` and ``edprf evaluate``: the most common reason, and
hints for the usual causes (decimal commas).

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
from edprf_core.prediction import RowScores
from edprf_core.schema import ContinuousFeature
from edprf_core.tables import RowChunk

__all__ = ["DECIMAL_COMMA", "RowDiagnostics"]

DECIMAL_COMMA = r"\s*[-+]?\d+,\d+\s*"
"""A cell that is a number written with a decimal comma ('1,414'): refused, the schema reads '.' as the point."""

_VALUE = re.compile(r" \((?:'[^']*'|\"[^\"]*\")[^)]*\)$")
"""The refused value a reason ends with: ``column 'age': not a number ('51,414')`` counts as its reason only."""


def _rows(n: int) -> str:
    return f"{n} row{'' if n == 1 else 's'}"


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

    def add(self, chunk: RowChunk, scores: RowScores) -> None:
        """Count the chunk's rows that were not scored, by reason, and look for the usual causes."""
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

    def _decimal_commas(self, frame: pd.DataFrame, refused: NDArray[np.bool_]) -> None:
        for f in self.schema.features:
            if not isinstance(f, ContinuousFeature) or f.name not in frame:
                continue
            cells = frame[f.name][refused]
            text = cells.dropna().astype(str)  # a Parquet number is never a decimal comma
            hits = text[text.str.fullmatch(DECIMAL_COMMA)]
            if len(hits):
                self.decimal_commas += len(hits)
                if self.decimal_example is None:
                    self.decimal_example = (f.name, hits.iloc[0].strip())

    def most_common_reason(self) -> str:
        """``"column 'age': not a number (20 of 20 rows)"``, or ``""`` when every row was scored."""
        if not self.reasons:
            return ""
        reason, n = self.reasons.most_common(1)[0]
        return f"{reason} ({n} of {_rows(self.rows)})"

    def hints(self) -> list[str]:
        """One line per likely cause found (none when nothing was refused)."""
        lines = []
        if self.decimal_example is not None:
            column, value = self.decimal_example
            lines.append(
                f"decimal comma? {self.decimal_commas} refused number{'' if self.decimal_commas == 1 else 's'} "
                f"such as {value!r} (column {column!r}): the schema reads '.' as the decimal point; "
                "write DATA's numbers with '.'"
            )
        return lines
