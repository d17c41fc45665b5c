"""Reading tables of untrusted text (CSV, Parquet) against a schema, whole or in chunks.

Each cell is parsed by the schema alone; a malformed line is reported by its number and never stops
the reading of the others.  A file that is no UTF-8 text (an Excel workbook, UTF-16, cp1252) is named as such
before it is read (:func:`foreign_format_text`, :func:`not_utf8_text`).
"""

from ._cell_text import TEXT_DTYPE, decimal_comma_cells, thousands_comma_cells
from ._column_names import closest_name
from ._file_format import RECODE_HINT, foreign_format_text, not_utf8_text
from ._numbered_text import NumberedColumns, judged_per_category, judged_per_text, numbered_text, read_numbered_columns
from ._table_stream import RowChunk, stream_rows
from ._text_table import (
    MAX_LINE_CHARS,
    PARQUET_SUFFIXES,
    OptionHints,
    TextColumns,
    TextTable,
    check_table_header,
    header_names,
    read_columns,
    read_named_columns,
    read_table,
    separator_hint,
)

__all__ = [
    "MAX_LINE_CHARS",
    "PARQUET_SUFFIXES",
    "RECODE_HINT",
    "TEXT_DTYPE",
    "NumberedColumns",
    "OptionHints",
    "RowChunk",
    "TextColumns",
    "TextTable",
    "check_table_header",
    "closest_name",
    "decimal_comma_cells",
    "foreign_format_text",
    "header_names",
    "judged_per_category",
    "judged_per_text",
    "not_utf8_text",
    "numbered_text",
    "read_columns",
    "read_named_columns",
    "read_numbered_columns",
    "read_table",
    "separator_hint",
    "stream_rows",
    "thousands_comma_cells",
]
