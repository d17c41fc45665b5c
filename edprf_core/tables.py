"""Reading tables of untrusted text (CSV, Parquet) against a schema, whole or in chunks.

Each cell is parsed by the schema alone; a malformed line is reported by its number and never stops
the reading of the others.
"""

from ._cell_text import decimal_comma_cells
from ._column_names import closest_name
from ._table_stream import RowChunk, stream_rows
from ._text_table import (
    MAX_LINE_CHARS,
    PARQUET_SUFFIXES,
    OptionHints,
    TextColumns,
    TextTable,
    header_names,
    read_columns,
    read_table,
    separator_hint,
)

__all__ = [
    "MAX_LINE_CHARS",
    "PARQUET_SUFFIXES",
    "OptionHints",
    "RowChunk",
    "TextColumns",
    "TextTable",
    "closest_name",
    "decimal_comma_cells",
    "header_names",
    "read_columns",
    "read_table",
    "separator_hint",
    "stream_rows",
]
