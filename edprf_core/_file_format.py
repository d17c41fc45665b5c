"""What a data file is, when it is not UTF-8 CSV text: named from its first bytes, before any line is read.

A CSV reader given an Excel workbook or UTF-16 text ("Unicode text" in Excel's Save As) sees a first line of
binary or NUL-interleaved bytes, and its error is about the header ("names none of the schema's columns"); the
fix is to save the file again, which only a message naming the format says.  :func:`foreign_format_text` names
it from the file's first bytes (decompressed for ``.gz``); :func:`not_utf8_text` names the first line of a file
that is not UTF-8 (Latin-1/cp1252) with the re-encoding hint of ``edprf schema check``.

Privacy: reads the caller's own file on its own machine; nothing is released.
"""

from __future__ import annotations

import gzip
from pathlib import Path

from ._data_check import NOT_UTF8_ADVICE, RECODE_HINT

__all__ = ["RECODE_HINT", "foreign_format_text", "not_utf8_text"]

_PROBE_BYTES = 4096
"""Bytes read from the start of the file to tell its format."""

_ZIP = b"PK\x03\x04"
"""An .xlsx (or .ods) workbook is a zip archive: it starts with a zip local file header."""

_OLE = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
"""An Excel 97-2003 .xls workbook is an OLE compound file."""

_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")

_GZIP = b"\x1f\x8b"
"""A gzip stream (a compressed file without the ``.gz`` its reader needs to see it as one)."""

SAVE_AS_CSV = "an Excel workbook: save it as CSV (UTF-8) (Excel: File > Save As > 'CSV UTF-8 (Comma delimited)')"
RESAVE_UTF8 = "UTF-16 text: re-save as CSV UTF-8 (Excel: File > Save As > 'CSV UTF-8 (Comma delimited)')"
GZIP_NAME = "a gzip-compressed file: name it with .gz (e.g. data.csv.gz), or decompress it (gunzip)"
BINARY = "a binary file, not CSV text (a database, an archive, another tool's format?): export the table as CSV UTF-8"


def _head(path: Path) -> bytes:
    try:
        if path.suffix.lower() == ".gz":
            with gzip.open(path, "rb") as handle:
                return handle.read(_PROBE_BYTES)
        with path.open("rb") as handle:
            return handle.read(_PROBE_BYTES)
    except (OSError, EOFError):
        return b""  # the reader says what is wrong with the file itself


def foreign_format_text(path: str | Path) -> str:
    """``"PATH: an Excel workbook: save it as CSV (UTF-8) ..."`` or ``"PATH: UTF-16 text: re-save as CSV UTF-8
    ..."`` when the file's first bytes say so (a zip or OLE signature; a UTF-16 byte-order mark, or a NUL in every
    other byte); a gzip stream without ``.gz``, and any other NUL bytes (which UTF-8 CSV text never holds), are
    named too; ``""`` otherwise, and for Parquet files (``.parquet``, ``.pq``).

    Privacy cost: none (reads the caller's own file on its own machine; nothing is released).
    """
    p = Path(path)
    if p.suffix.lower() in (".parquet", ".pq") or not p.is_file():
        return ""
    head = _head(p)
    if head.startswith((_ZIP, _OLE)):
        return f"{p}: {SAVE_AS_CSV}"
    if head.startswith(_GZIP):
        return f"{p}: {GZIP_NAME}"
    if head.startswith(_UTF16_BOMS) or _utf16_like(head):
        return f"{p}: {RESAVE_UTF8}"
    if b"\x00" in head:
        return f"{p}: {BINARY}"
    return ""


def _utf16_like(head: bytes) -> bool:
    """Text of mostly ASCII characters in UTF-16 without a byte-order mark: a NUL in every other byte (odd
    positions: little-endian; even: big-endian), for at least 90 % of the pairs read."""
    pairs = len(head) // 2
    if pairs < 2:
        return False
    odd, even = head[1 : 2 * pairs : 2], head[0 : 2 * pairs : 2]
    return max(odd.count(0), even.count(0)) >= 0.9 * pairs


def not_utf8_text(path: str | Path) -> str:
    """``"PATH: line N holds bytes that are not valid UTF-8 ...; re-encode it, ..."`` for the first such line of
    the file (decompressed for ``.gz``), ``""`` when every line is UTF-8.

    Privacy cost: none (reads the caller's own file on its own machine; nothing is released).
    """
    p = Path(path)
    opener = gzip.open if p.suffix.lower() == ".gz" else open
    with opener(p, "rb") as handle:
        for number, line in enumerate(handle, start=1):
            try:
                line.decode("utf-8")
            except UnicodeDecodeError:
                return f"{p}: line {number} holds bytes that are not valid UTF-8: {NOT_UTF8_ADVICE}"
    return ""
