"""What a schema's rules will do to a data file, before any training.

For the data owner's eyes only: the report counts rows and values of the
owner's own file (it is data, not DP, and must not be sent anywhere).  It uses
exactly the rules the parties and the estimator apply: the per-line reader
(:func:`read_table`), the per-cell reading of :mod:`edprf_core._encoding` and
the per-record filter (:func:`conforming_rows`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from ._cell_text import decimal_comma_cells, thousands_dot_cells
from ._encoding import NOT_A_NUMBER, UNDECLARED, CellRules, _numeric_categories, rule_violations
from ._numbered_text import judged_per_text, read_numbered_columns
from ._schema import CategoricalFeature, ContinuousFeature, Schema
from ._text_table import PARQUET_SUFFIXES, UNBALANCED_QUOTES, OptionHints, TextTable, read_table
from .count_text import count_text

__all__ = ["BIASED_SHARE", "DataCheck", "check_data"]

BIASED_SHARE = 0.10
"""A column whose cells are "not a finite number" in at least this share of the rows read is a finding of its own:
the rows kept are those whose cell happened to parse (whole amounts when the others carry a decimal comma), a
biased training set rather than a random loss."""

_SHOWN_LINES = 5
"""Line numbers named for the rows holding bytes that are not UTF-8 (the owner's own file, read on its machine)."""

RECODE_HINT = "re-encode it, e.g. `iconv -f cp1252 -t utf-8 in.csv > out.csv`"

NOT_UTF8_ADVICE = f"the file is probably not UTF-8 (Latin-1/cp1252?); {RECODE_HINT}"
"""What the data check and the file-format check say of bytes that are not valid UTF-8."""


@dataclass(frozen=True)
class DataCheck:
    """Counts of what the rules do to one file.

    Attributes
    ----------
    lines_read : int
        Data lines parsed into rows.
    lines_dropped : dict of str to int
        Unreadable lines by reason (wrong number of fields, unbalanced quotes, too long).
    rows_kept : int
        Rows that satisfy every rule (what training would use).
    rows_dropped : list of (column, rule, count)
        Rows a rule drops (a row can break several).
    clipped : dict of str to (count, share)
        Continuous values outside the declared bounds, clipped to them.
    missing : dict of str to (count, rule)
        Missing cells per column and what the column's rule does with them.
    not_utf8 : int
        Rows with a cell that was not valid UTF-8 (read with the replacement character U+FFFD).
    not_utf8_lines : tuple of int
        The file's line numbers of the first of them (at most five).
    decimal_commas : dict of str to int
        Per column, the cells that are "not a finite number" and are written as a number with a decimal comma.
    case_variants : dict of str to int
        Per column with undeclared text categories or classes, the undeclared cells that are a declared one but
        for case (``MALE``, ``yes`` for ``Yes``).
    quote_lines : tuple of int
        The line numbers of the first lines left out for an unbalanced quote (at most five).
    label_column : str
        The schema's label column (its undeclared values are classes).
    undeclared : dict of str to int
        Per column, the rows dropped as undeclared whose bytes are all UTF-8 (the others are counted in
        ``not_utf8``: their text was garbled, not written otherwise).
    thousands_dots : dict of str to int
        Per column with decimal commas, the cells read as numbers that are written like ``1.200``: a thousands
        separator in such a file, read as the decimal point (1.2).
    """

    lines_read: int
    lines_dropped: dict[str, int]
    rows_kept: int
    rows_dropped: list[tuple[str, str, int]] = field(default_factory=list)
    clipped: dict[str, tuple[int, float]] = field(default_factory=dict)
    missing: dict[str, tuple[int, str]] = field(default_factory=dict)
    not_utf8: int = 0
    not_utf8_lines: tuple[int, ...] = ()
    decimal_commas: dict[str, int] = field(default_factory=dict)
    thousands_dots: dict[str, int] = field(default_factory=dict)
    case_variants: dict[str, int] = field(default_factory=dict)
    undeclared: dict[str, int] = field(default_factory=dict)
    label_column: str = ""
    quote_lines: tuple[int, ...] = ()

    def lines(self) -> list[str]:
        """A human-readable report."""
        n = max(self.lines_read, 1)
        out = [f"rows read: {self.lines_read}; rows kept: {self.rows_kept} ({self.rows_kept / n:.1%})"]
        for reason, count in sorted(self.lines_dropped.items()):
            out.append(f"lines left out ({reason}): {count}")
        for column, rule, count in self.rows_dropped:
            out.append(f"rows dropped, column {column!r}: {rule}: {count} ({count / n:.1%})")
        for column, (count, rule) in self.missing.items():
            out.append(f"missing values, column {column!r}: {count} ({count / n:.1%}) -> {rule}")
        for column, (count, share) in self.clipped.items():
            hint = "  <- most values lie outside the bounds: other units than the schema?" if share > 0.2 else ""
            out.append(f"values clipped to the bounds, column {column!r}: {count} ({share:.1%}){hint}")
        return out

    def findings(self) -> list[tuple[str, str]]:
        """The likely causes of rows lost, as ``(level, text)``: ``"problem"`` when the training set would be
        damaged (bytes that are not UTF-8, or a numeric column not read, in :data:`BIASED_SHARE` of the rows or
        more), ``"note"`` below that share.  Counts and line numbers only, never a cell's value."""
        n = max(self.lines_read, 1)
        out = []
        if self.not_utf8:
            first = ", ".join(str(k) for k in self.not_utf8_lines)
            more = ", ..." if self.not_utf8 > len(self.not_utf8_lines) else ""
            text = (
                f"{count_text(self.not_utf8, 'row')} ({self.not_utf8 / n:.1%}) hold bytes that are not valid UTF-8 "
                "(read as the replacement character U+FFFD, so their categories and numbers do not match the "
                f"schema; {'line' if self.not_utf8 == 1 else 'lines'} {first}{more}): {NOT_UTF8_ADVICE}"
            )
            out.append(("problem" if self.not_utf8 / n >= BIASED_SHARE else "note", text))
        for column, what, count in self.rows_dropped:
            if what != NOT_A_NUMBER:
                continue
            commas = self.decimal_commas.get(column, 0)
            comma = (
                f"decimal comma, or a thousands comma? {commas} of them are written like 1234,56 or 1,234: the "
                "schema reads '.' as the decimal point and no thousands separator; convert decimal commas to '.' "
                "and drop thousands separators before training"
                if commas
                else ""
            )
            if count / n >= BIASED_SHARE:
                kept = (
                    "the rows kept would be those whose value happened to parse: possibly a biased training set"
                    if count < self.lines_read
                    else "no row is kept"
                )
                text = (
                    f"column {column!r}: {count_text(count, 'row')} ({count / n:.1%}) are not a finite number and are "
                    f"dropped; {kept}"
                )
                out.append(("problem", f"{text}; {comma}" if comma else text))
            elif comma:
                out.append(("note", f"column {column!r}: {comma}"))
        for column, count in self.undeclared.items():
            if not count:
                continue
            variants = self.case_variants.get(column, 0)
            label = column == self.label_column
            case = (
                f"; {count_text(variants, 'of them is', 'of them are')} a declared "
                f"{'class' if label else 'category'} but for case: "
                + (
                    "write it as declared, or declare the spelling under [label] aliases"
                    if label
                    else "write it as declared"
                )
                if variants
                else ""
            )
            if variants / n >= BIASED_SHARE:  # a spelling, not a choice: a tenth of the rows lost to case alone
                level = "problem"
            elif count / n >= BIASED_SHARE or variants:  # a schema may leave values out on purpose: a note
                level = "note"
            else:
                continue
            text = (
                f"column {column!r}: {count_text(count, 'row')} ({count / n:.1%}) hold a "
                f"{'class' if label else 'category'} the schema does not declare and are dropped (unless that is on "
                f"purpose, the rows kept may be a biased training set){case}"
            )
            out.append((level, text))
        quotes = self.lines_dropped.get(UNBALANCED_QUOTES, 0)
        if quotes:
            first = ", ".join(map(str, self.quote_lines)) + (", ..." if quotes > len(self.quote_lines) else "")
            text = (
                f"{count_text(quotes, 'line')} left out for an unbalanced quote (line{'s' * (quotes > 1)} {first}): "
                "a quoted cell that holds a line break (a note written on several lines in a spreadsheet)? The reader "
                "takes one line per record, so such a record is lost and the line after it may be too; remove the "
                "line breaks inside cells before exporting"
            )
            out.append(("problem" if quotes / n >= BIASED_SHARE else "note", text))
        for column, count in self.thousands_dots.items():
            text = (
                f"column {column!r}: {count_text(count, 'cell')} ({count / n:.1%}) are written like 1.200 in a "
                "column that also holds decimal commas: thousands separators? The schema reads them as 1.2; drop "
                "the thousands separators before converting the decimal commas"
            )
            out.append(("note", text))  # ambiguous (1.250 may be a decimal): never a problem (rev-s57b N7)
        return out


def check_data(
    path: str | Path,
    schema: Schema,
    *,
    sep: str = ",",
    header: bool = True,
    hints: OptionHints | None = None,
    progress: Callable[[str], object] | None = None,
) -> DataCheck:
    """Report what the schema's rules do to the file at ``path`` (nothing is trained or sent).

    ``sep``, ``header`` and ``hints`` are those of :func:`edprf_core.tables.read_table`.  ``progress``, when
    given, receives a line as each of the check's long steps starts (the caller prints it; nothing is printed or
    logged here).  Privacy cost: none released; the report itself is exact data about the file, for its owner.
    """
    say = progress if progress is not None else _silent
    parquet = Path(path).suffix.lower() in PARQUET_SUFFIXES
    return _checked(_read(path, schema, sep, header, hints, parquet), schema, parquet, say)


def _read(path: str | Path, schema: Schema, sep: str, header: bool, hints: OptionHints | None, parquet: bool):
    """The file's rows: a text file's columns numbered block by block as they are read
    (:func:`~edprf_core.tables.read_numbered_columns`, each a categorical of its texts: the file's text is never
    held whole), a Parquet file's as :func:`read_table` gives them.  Privacy cost: none (a per-record map)."""
    if parquet:
        return read_table(path, schema, sep=sep, header=header, hints=hints)
    read = read_numbered_columns(path, schema, sep=sep, header=header, hints=hints)
    label = schema.label.column
    return TextTable(
        X=read.frame.drop(columns=[label]), y=read.frame[label], line_numbers=read.line_numbers, dropped=read.dropped
    )


def _checked(table: TextTable, schema: Schema, parquet: bool, say: Callable[[str], object]) -> DataCheck:
    """:func:`check_data`'s report on the rows read (their columns text, categoricals of their texts, or Parquet's
    own types: every cell is judged alone, :func:`~edprf_core.tables.judged_per_text`, so the report is the same for every form)."""
    say(f"      {count_text(len(table.X), 'row')} read; applying the schema's rules to each ...")
    dropped: dict[str, int] = {}
    for note in table.dropped:
        reason = note.split(": ", 1)[1].split(",")[0]
        reason = "wrong number of fields" if "fields" in reason else reason
        dropped[reason] = dropped.get(reason, 0) + 1
    found = rule_violations(table.X, table.y, schema)
    keep = np.ones(len(table.X), dtype=bool)
    for _, _, mask in found:
        keep &= ~mask
    problems = [(column, what, int(mask.sum())) for column, what, mask in found]
    rules = CellRules.of(schema)
    commas = {
        column: hits
        for column, what, mask in found
        if what == NOT_A_NUMBER
        and column in table.X
        and (hits := int((judged_per_text(table.X[column], decimal_comma_cells) & mask).sum()))
    }
    dots = {column: hits for column in commas if (hits := _thousands_dots(table.X[column]))}
    # Parquet's strings are UTF-8 by the format: a U+FFFD there is most likely the writer's own character (the rare
    # bytes a writer left that are not UTF-8, read as U+FFFD, are then counted as undeclared values, not here)
    foreign = np.zeros(len(table.y), dtype=bool) if parquet else _not_utf8(table.X, table.y)
    undeclared, variants = {}, {}
    for column, what, mask in found:
        if what.startswith(UNDECLARED):  # the rows refused for their own sake, not those whose bytes are not UTF-8
            own = mask & ~foreign
            undeclared[column] = int(own.sum())
            if hits := _case_variants(table, schema, rules, column, own):
                variants[column] = hits
    say(f"      counting missing and clipped values in {count_text(len(schema.features) + 1, 'column')} ...")
    clipped, missing = {}, {}
    for f in schema.features:
        numeric = isinstance(f, ContinuousFeature) or _numeric_categories(f)
        if numeric:
            x, gone = judged_per_text(table.X[f.name], lambda cells: rules.numbers(rules.clean(cells)))
        else:
            x, gone = None, judged_per_text(table.X[f.name], lambda cells: rules.missing(rules.clean(cells)))
        gaps = int(gone.sum())
        if gaps:
            rule = f.missing if isinstance(f.missing, str) else f"imputed as {f.missing:g}"
            missing[f.name] = (gaps, {"refuse": "rows dropped", "separate": "a code of their own"}.get(rule, rule))
        if isinstance(f, ContinuousFeature):
            finite = np.isfinite(x)
            outside = int(np.sum(finite & ((x < f.lower) | (x > f.upper))))
            if outside:
                clipped[f.name] = (outside, outside / max(int(finite.sum()), 1))
    label_missing = int(judged_per_text(table.y, lambda cells: rules.missing(rules.clean(cells))).sum())
    if label_missing:
        missing[schema.label.column] = (label_missing, "rows dropped (labels have no catch-all)")
    return DataCheck(
        lines_read=len(table.X),
        lines_dropped=dropped,
        rows_kept=int(keep.sum()),
        rows_dropped=problems,
        clipped=clipped,
        missing=missing,
        not_utf8=int(foreign.sum()),
        not_utf8_lines=tuple(int(k) for k in table.line_numbers[foreign][:_SHOWN_LINES]),
        decimal_commas=commas,
        thousands_dots=dots,
        case_variants=variants,
        undeclared=undeclared,
        label_column=schema.label.column,
        quote_lines=tuple(
            int(note.split(":", 1)[0].removeprefix("line ")) for note in table.dropped if UNBALANCED_QUOTES in note
        )[:_SHOWN_LINES],
    )


def _thousands_dots(cells: pd.Series) -> int:
    """How many cells are written like ``1.200`` (:func:`thousands_dot_cells`) in a column where no other cell
    writes a decimal point (``0.5``, ``12.25``): where one does, ``1.234`` is a decimal too."""
    dots = judged_per_text(cells, thousands_dot_cells)
    if not dots.any():
        return 0
    decimals = judged_per_text(cells, _decimal_point_cells)
    return 0 if (decimals & ~dots).any() else int(dots.sum())


def _decimal_point_cells(cells: pd.Series) -> NDArray[np.bool_]:
    """Per cell, whether it is written as a number with a decimal point (``0.5``, ``12.25``), once stripped."""
    text = cells.astype("string").str.strip()
    return text.str.fullmatch(r"[+-]?[0-9]*\.[0-9]+(?:[eE][+-]?[0-9]+)?").fillna(False).to_numpy(dtype=bool)


def _case_variants(table, schema: Schema, rules: CellRules, column: str, mask: np.ndarray) -> int:
    """How many of ``column``'s cells at ``mask`` (undeclared) are a declared text category or class but for case
    (each cell alone, after the schema's whitespace rule)."""
    if column == schema.label.column:
        declared, cells = schema.label.classes, table.y
    else:
        feature = schema.features[schema.feature_names.index(column)]
        if not isinstance(feature, CategoricalFeature):
            return 0
        declared, cells = feature.categories, table.X[column]
    if not all(isinstance(value, str) for value in declared):
        return 0
    folded = {value.casefold() for value in declared}

    def variant(text: pd.Series) -> NDArray[np.bool_]:
        return rules.clean(text).astype("string").str.casefold().isin(folded).to_numpy(dtype=bool)

    return int((judged_per_text(cells, variant) & mask).sum())


def _silent(_: str) -> None:
    return None


def _not_utf8(X: pd.DataFrame, y: pd.Series) -> NDArray[np.bool_]:
    """Per row, whether a cell holds U+FFFD: the reader's replacement for bytes that are not valid UTF-8 (a UTF-8
    file that holds the character itself is counted too; it is as likely the trace of an earlier wrong decoding).

    Text columns only; not called for a Parquet file, whose strings are UTF-8 by the format."""
    found = np.zeros(len(y), dtype=bool)
    for _, column in [*X.items(), (None, y)]:
        if isinstance(column.dtype, pd.StringDtype) or _text_categories(column):
            found |= judged_per_text(column, _replacement_cells)
    return found


def _replacement_cells(cells: pd.Series) -> NDArray[np.bool_]:
    """Per cell (pandas' ``str``), whether it holds U+FFFD."""
    return cells.str.contains("\ufffd", regex=False).fillna(False).to_numpy(dtype=bool)


def _text_categories(column: pd.Series) -> bool:
    """Whether ``column`` is a categorical of pandas' ``str`` texts (a text column as the party's reader numbers it)."""
    return isinstance(column.dtype, pd.CategoricalDtype) and isinstance(column.cat.categories.dtype, pd.StringDtype)
