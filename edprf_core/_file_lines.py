"""A text file's lines, read from disk in blocks of whole lines (the file is never held whole in memory).

Shared by :func:`edprf_core.tables.read_table` and :func:`edprf_core.tables.stream_rows`.  Nothing here looks
at a line's content beyond its line break: which lines a block holds, and each line's number, follow from the
bytes before it alone, so the per-record rules applied afterwards see exactly the lines of the file.
"""

from __future__ import annotations

import gzip
from collections.abc import Iterator
from pathlib import Path
from typing import IO

__all__ = ["BOM", "decoded", "header_line", "line_blocks", "open_lines"]

BOM = b"\xef\xbb\xbf"
"""UTF-8 byte-order mark: removed where it opens the file, and nowhere else."""


def decoded(line: bytes) -> str:
    """A line's text: UTF-8 with replacement characters, one trailing carriage return removed."""
    return line.decode("utf-8", errors="replace").removesuffix("\r")


def open_lines(path: Path) -> IO[bytes]:
    """The file opened for reading bytes (``.gz``: decompressed as it is read); ``ValueError`` if it cannot be."""
    if not path.is_file():
        raise ValueError(f"data file {path} does not exist or is not a regular file")
    try:
        return gzip.open(path, "rb") if path.suffix.lower() == ".gz" else path.open("rb")
    except OSError as exc:
        raise ValueError(f"cannot read data file {path}: {type(exc).__name__}") from None


def header_line(handle: IO[bytes]) -> tuple[int, str | None]:
    """Read up to the first non-blank line: how many lines that took, and that line's text (None: the file
    has no such line).  The handle is left at the line after it."""
    number = 0
    for raw in handle:
        text = decoded((raw.removeprefix(BOM) if number == 0 else raw).removesuffix(b"\n"))
        number += 1
        if text.strip():
            return number, text
    return number, None


def line_blocks(handle: IO[bytes], first: bool, size: int) -> Iterator[tuple[bytes, int, int]]:
    """The remaining lines in blocks of whole lines: ``(source, start, end)``, the block being
    ``source[start:end]`` (a view of it is all a reader needs: blocks are not copied out of what was read).

    The file is read ``size`` bytes at a time.  The lines that end in one read form a block; the start of a
    line that does not end in it is carried over, and the line it starts becomes a block of its own (one
    line) when the next read ends it, however many reads that takes; the last block may end without a line
    break.  Which lines share a block changes nothing for a per-line reader.  ``first``: the block starts the
    file, and a byte-order mark that opens it is removed.
    """
    parts: list[bytes] = []  # the start of a line that has not ended yet
    while True:
        data = handle.read(size)
        if not data:
            if parts:
                line = b"".join(parts)
                yield line, 0, len(line)
            return
        if first:
            while len(data) < len(BOM) and BOM.startswith(data) and (more := handle.read(size)):
                data += more  # a read shorter than the mark: enough of the file to tell whether it opens with one
            data = data.removeprefix(BOM)
            first = False
        start = 0
        if parts:
            end = data.find(b"\n") + 1
            if not end:  # the carried line does not end here either: read on (joined once, however long)
                parts.append(data)
                continue
            line = b"".join([*parts, data[:end]])
            parts = []
            yield line, 0, len(line)
            start = end
        cut = data.rfind(b"\n", start) + 1
        if cut > start:
            yield data, start, cut
        else:
            cut = start
        if cut < len(data):
            parts.append(data[cut:])
