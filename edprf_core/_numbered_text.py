"""A text file's columns numbered block by block as they are read: the file's text is never held whole.

A party's reader turns every text column into a categorical of the same texts (categories in order of first
appearance, a missing cell missing): the schema's verdicts, the keyed split and the fit's encoding then read each
distinct text once.  Numbering the whole column at once needs the whole file as Arrow text first (4-5 times the
file's size at the peak, scale review F10).  Here each block's rows (:func:`edprf_core._text_table.read_blocks`)
are numbered as soon as they are read, and only their codes and each column's distinct texts are kept.

The result is the categorical that numbering the whole column at once gives: same categories in the
same order, same codes.  A text's code is its rank among the distinct texts by first appearance in the file, which
depends on the file's rows, never on where the blocks end (proof in :class:`_ColumnNumbers`).  What a row gets
downstream reads only its own cells' texts, so this is no privacy change: still a per-record map.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ._cell_text import TEXT_DTYPE
from ._schema import Schema
from ._text_table import MAX_LINE_CHARS, OptionHints, check_separator, header_names, read_blocks

__all__ = ["NumberedColumns", "judged_per_category", "judged_per_text", "numbered_text", "read_numbered_columns"]

_Judged = TypeVar("_Judged")

_PENDING_ROWS = 1 << 16
"""Rows whose codes a column keeps local to their block before they are put on the column's dictionary (at least;
more while the dictionary holds more texts, so that putting them costs at most twice their number: linear in the
cells).  Small enough that the block-local codes and dictionaries waiting are a few hundred KiB per column."""

_LARGE_TEXT = 1 << 30
"""Bytes of distinct text above which a column's dictionary is held as large strings (8-byte offsets): a string
array holds at most 2 GiB."""


@dataclass(frozen=True, eq=False)
class NumberedColumns:
    """A text file's rows, every column a categorical of its texts.

    Attributes
    ----------
    frame : DataFrame
        Every column of the file in its order (the label's too), each ``pd.Categorical`` of pandas' ``str``
        texts, categories in order of first appearance.
    line_numbers : ndarray of int
        1-based line number in the file of each row (for the owner's log).
    dropped : list of str
        One note per dropped line: its number and why (never its content).
    """

    frame: pd.DataFrame
    line_numbers: np.ndarray
    dropped: list[str]


def read_numbered_columns(
    path: str | Path,
    schema: Schema,
    *,
    sep: str = ",",
    header: bool = True,
    max_line_chars: int = MAX_LINE_CHARS,
    hints: OptionHints | None = None,
) -> NumberedColumns:
    """:func:`edprf_core.tables.read_columns`' rows (a text file, not Parquet) with each column numbered as read.

    The same frame as numbering each of ``read_columns``' columns whole: the same rows, line
    numbers and notes on dropped lines (the same reader), each column the same categorical.  Each block's text is
    let go once its codes are known: the process holds the codes and each column's distinct texts, not the file.

    Raises what :func:`~edprf_core.tables.read_columns` raises (file-level problems only).

    Notes
    -----
    Privacy cost: none (a per-record map).  A row's fate is the reader's; its cells' categories are their texts; a
    text's code is its rank by first appearance in the file, whichever block the row fell into.
    """
    check_separator(sep)
    p = Path(path)
    numbers: list[np.ndarray] = []
    columns: list[_ColumnNumbers] = []
    # Arrow's hashing releases the GIL: a block's columns are numbered on threads (as many as Arrow's own pool has,
    # pyarrow.cpu_count(): the machine's CPUs unless OMP_NUM_THREADS says otherwise), each a share of the columns,
    # while the next block is read.  A column's blocks are numbered one after the other, in the file's order (a
    # block's numbering starts once the previous block's has ended), so its codes are those of one thread.
    workers = pa.cpu_count()
    pool = ThreadPoolExecutor(max_workers=workers) if workers > 1 else None
    running: list[Future] = []

    def number(share: list[tuple[_ColumnNumbers, pa.ChunkedArray]]) -> None:
        for column, cells in share:
            column.add(cells)

    def wait() -> None:
        while running:
            running.pop(0).result()  # raises what numbering raised

    def take(block: tuple[list[pa.ChunkedArray], np.ndarray]) -> None:
        texts, lines = block
        if not columns:
            columns.extend(_ColumnNumbers() for _ in texts)
        pairs = list(zip(columns, texts))
        del texts, block  # the block's text goes once its columns are numbered (at most two blocks are held)
        numbers.append(lines)
        wait()
        if pool is None or len(pairs) < 2:
            number(pairs)
        else:
            running.extend(pool.submit(number, pairs[k::workers]) for k in range(min(workers, len(pairs))))

    def checked(first: str | None) -> list[str]:
        return header_names(schema, first, sep, header, p, hints)

    try:
        names, dropped = read_blocks(
            p, checked, sep=sep, header=header, max_line_chars=max_line_chars, large=False, take=take
        )
        wait()
    finally:  # on Ctrl-C, only the running share is waited for
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
    lines = np.concatenate(numbers) if numbers else np.empty(0, dtype=np.int64)
    if not columns:  # no block (an empty file after its header): no rows, no categories
        columns = [_ColumnNumbers() for _ in names]
    cells = {name: columns[j].categorical() for j, name in enumerate(names)}
    del columns[:]
    # copy=False: the frame holds the codes as they are (pandas copies a dict's columns by default: the codes twice)
    frame = pd.DataFrame(cells, index=pd.RangeIndex(len(lines)), copy=False)
    del cells
    # Arrow's allocator keeps freed pages for reuse: the blocks' text is gone, its pages go back to the system
    pa.default_memory_pool().release_unused()
    return NumberedColumns(frame, lines, dropped)


class _ColumnNumbers:
    """One column's codes, built block by block; its distinct texts in order of first appearance.

    Each block is numbered alone (its own dictionary, in order of first appearance within the block), then put on
    the column's dictionary by one dictionary encoding of ``[column's texts, waiting blocks' texts...]``.  The
    column's texts come first and are distinct, so they keep their codes; a new text gets the next code in the
    order it first appears in the waiting blocks' dictionaries, which is its order of first appearance in the file:
    a text first seen in an earlier block comes before one first seen in a later block, and within a block the
    block's dictionary orders them by first appearance.  So a text's code does not depend on the blocks.

    Blocks wait until they hold :data:`_PENDING_ROWS` rows, or as many rows as the dictionary holds texts: each
    merge reads the dictionary once and the waiting texts once, at most twice the waiting rows (never blocks x
    distinct texts, which cost 33 s against 0.4 s for 2 million amounts unified chunk by chunk).
    """

    def __init__(self) -> None:
        self.texts: pa.Array = pa.array([], pa.string())
        """The distinct texts so far, in order of first appearance."""
        self.codes: list[np.ndarray] = []
        """Each merged block's codes on :attr:`texts` (-1: missing)."""
        self.waiting: list[tuple[np.ndarray, pa.Array]] = []
        """Blocks not merged yet: their codes on their own dictionary, and that dictionary."""
        self.waiting_rows = 0

    def add(self, cells: pa.ChunkedArray) -> None:
        """Number one block's cells (Arrow text) and keep only their codes and distinct texts."""
        self.waiting.append(_block_codes(cells))
        self.waiting_rows += len(cells)
        if self.waiting_rows >= max(_PENDING_ROWS, len(self.texts)):
            self._merge()

    def categorical(self) -> pd.Categorical:
        """The column as ``pd.Categorical`` of pandas' ``str`` texts (what numbering the whole column gives); the
        column's own texts and codes are let go (called once, at the end)."""
        self._merge()
        texts, self.texts = self.texts, pa.array([], pa.string())  # pandas copies them: held once from here on
        categories = pd.Index(pd.array(texts, dtype=TEXT_DTYPE))
        dtype = _code_dtype(len(texts))
        del texts
        codes = np.concatenate(self.codes, dtype=dtype) if self.codes else np.empty(0, dtype=dtype)
        self.codes = []
        return pd.Categorical.from_codes(codes, dtype=_distinct_categories(categories), validate=False)

    def _merge(self) -> None:
        """Put the waiting blocks on the column's dictionary (one dictionary encoding of their texts after it)."""
        if not self.waiting:
            return
        known = len(self.texts)
        dictionaries = [self.texts, *(texts for _, texts in self.waiting)]
        if sum(_text_bytes(d) for d in dictionaries) > _LARGE_TEXT:
            dictionaries = [d.cast(pa.large_string()) for d in dictionaries]
        elif any(pa.types.is_large_string(d.type) for d in dictionaries):
            dictionaries = [d.cast(pa.large_string()) for d in dictionaries]  # one type to concatenate
        # one array of the distinct texts so far, then each waiting block's: a copy of distinct texts only
        encoded = pc.dictionary_encode(pa.concat_arrays(dictionaries))
        self.texts = encoded.dictionary
        positions = encoded.indices.to_numpy()
        if not np.array_equal(positions[:known], np.arange(known)):  # pragma: no cover - Arrow's contract
            raise RuntimeError("Arrow renumbered a column's distinct texts")  # (order of first appearance)
        dtype = _code_dtype(len(self.texts))
        start = known
        for local, texts in self.waiting:
            # the block's codes on its dictionary -> the column's codes (-1, a missing cell, stays -1)
            to_column = np.append(positions[start : start + len(texts)], -1).astype(dtype)
            self.codes.append(to_column[local])
            start += len(texts)
        self.waiting, self.waiting_rows = [], 0


def _block_codes(cells: pa.ChunkedArray) -> tuple[np.ndarray, pa.Array]:
    """One block's cells numbered on their own dictionary (distinct texts in order of first appearance within the
    block); a missing cell's code is -1."""
    one = _one_character_codes(cells)
    if one is not None:
        codes, texts = one
        return codes, pa.array(texts, pa.string())
    encoded = pc.dictionary_encode(cells)  # one hash table across the block's chunks: one dictionary
    if encoded.num_chunks == 0:
        return np.empty(0, dtype=np.int32), pa.array([], cells.type)
    indices = pa.chunked_array([chunk.indices for chunk in encoded.chunks], pa.int32())
    return pc.fill_null(indices, -1).to_numpy(zero_copy_only=False), encoded.chunks[-1].dictionary


def _code_dtype(categories: int) -> np.dtype:
    """The integer type pandas holds a categorical's codes in for that many categories (no copy when handed over)."""
    for dtype in (np.int8, np.int16, np.int32):
        if categories < np.iinfo(dtype).max:
            return np.dtype(dtype)
    return np.dtype(np.int64)


def _distinct_categories(categories: pd.Index) -> pd.CategoricalDtype:
    """``pd.CategoricalDtype(categories)`` for categories known to be distinct and not missing (a dictionary's).

    Without pandas' checks: it would build the Index's hash table to see that they are distinct, Python strings
    for every category kept with the Index as long as the data is (on 2 million rows of 30 columns, 8 million
    distinct texts: 1.5 GB, more than the file's text in Arrow).  The same dtype either way.
    """
    fastpath = getattr(pd.CategoricalDtype, "_from_fastpath", None)  # pandas' own constructor without the checks
    return fastpath(categories, False) if fastpath is not None else pd.CategoricalDtype(categories)


def _text_bytes(chunk: pa.Array) -> int:
    """Bytes of text the cells of an Arrow text array hold (from its offsets)."""
    if not len(chunk):
        return 0
    wide = pa.types.is_large_string(chunk.type)
    offsets = np.frombuffer(chunk.buffers()[1], dtype=np.int64 if wide else np.int32)
    return int(offsets[chunk.offset + len(chunk)]) - int(offsets[chunk.offset])


def _one_character_codes(cells: pa.ChunkedArray) -> tuple[np.ndarray, list[str]] | None:
    """For Arrow text cells that are all exactly one byte and none missing: each cell's code and the texts
    (distinct, in order of first appearance); None otherwise.

    Arrow's strings are valid UTF-8, so a one-byte cell is an ASCII character: its byte indexes a table of
    codes, with no hashing of texts.  This costs about 2 ms per million cells where the dictionary encoding
    costs about 9.
    """
    pieces = []
    for chunk in cells.chunks:  # Arrow's own chunks (not copied)
        _, offsets_buffer, data_buffer = chunk.buffers()
        wide = pa.types.is_large_string(chunk.type) or pa.types.is_large_binary(chunk.type)
        offsets = np.frombuffer(offsets_buffer, dtype=np.int64 if wide else np.int32)
        offsets = offsets[chunk.offset : chunk.offset + len(chunk) + 1]
        if chunk.null_count or offsets[-1] - offsets[0] != len(chunk) or np.any(offsets[1:] == offsets[:-1]):
            return None  # a missing cell, or one of another length (lengths sum to the count and none is 0)
        pieces.append(np.frombuffer(data_buffer, dtype=np.uint8)[offsets[0] : offsets[-1]])
    data = np.concatenate(pieces) if pieces else np.empty(0, dtype=np.uint8)
    if data.size and int(data.max()) >= 128:  # not ASCII: cannot be one character alone (left to Arrow)
        return None
    raw = data.tobytes()
    # the distinct bytes (Arrow's unique: a hash of small integers, faster than numpy's bincount, which widens
    # every byte to 8 first), put in order of first appearance by where each first occurs
    order = sorted(pc.unique(pa.array(data)).to_pylist(), key=lambda byte: raw.find(bytes((byte,))))
    table = bytearray(256)  # byte -> its code (bytes.translate: one pass, no index array)
    for code, byte in enumerate(order):
        table[byte] = code
    codes = np.frombuffer(raw.translate(table), dtype=np.int8).copy()  # writable, as the dictionary's codes are
    return codes, [chr(byte) for byte in order]


def numbered_text(cells: pd.Series | pa.ChunkedArray) -> pd.Categorical:
    """A whole text column (Arrow text, or pandas' ``str`` dtype) as a categorical of the same texts as pandas'
    ``str`` (:data:`TEXT_DTYPE`), categories in order of first appearance: what :func:`read_numbered_columns`
    gives a column it numbers block by block, for a column already held whole (a Parquet file's).

    A column whose every cell is one character (flags, 0/1 labels) is numbered from its bytes by a table of
    the 128 ASCII characters (:func:`_one_character_codes`); any other by Arrow's dictionary encoding (one
    hash pass over every cell).  Both give the same categorical.  Privacy cost: none (a per-cell map; the codes
    number the column's own distinct texts).
    """
    column = cells if isinstance(cells, pa.ChunkedArray) else pa.chunked_array(pa.array(cells.array))
    one = _one_character_codes(column)
    if one is not None:
        codes, texts = one
    else:
        # One dictionary encoding of the chunked column: Arrow's hash kernel keeps one table across the chunks,
        # so every chunk's indices number the same dictionary, in order of first appearance (encoding chunk by
        # chunk and unifying the chunks' dictionaries afterwards would cost chunks x distinct cells: 33 s against
        # 0.4 s for a column of 2 million amounts); nothing is copied but the distinct texts.  A column of more
        # than 1 GiB of text as large strings, chunk by chunk (an offsets copy): its dictionary may hold more
        # than the 2 GiB a string array can (pandas holds the categories as large strings either way).
        if pa.types.is_string(column.type) and sum(_text_bytes(chunk) for chunk in column.chunks) > _LARGE_TEXT:
            column = column.cast(pa.large_string())
        encoded = pc.dictionary_encode(column)
        if encoded.num_chunks == 0:  # no cell (Arrow gives no chunk): no category
            codes, texts = np.empty(0, dtype=np.int32), pa.array([], column.type)
        else:
            texts = encoded.chunks[-1].dictionary  # distinct, no null
            if any(len(chunk.dictionary) != len(texts) for chunk in encoded.chunks):  # pragma: no cover - Arrow's
                raise RuntimeError("Arrow numbered the chunks of a column by different dictionaries")  # contract
            indices = pa.chunked_array([chunk.indices for chunk in encoded.chunks], pa.int32())
            codes = pc.fill_null(indices, -1).to_numpy(zero_copy_only=False)
        del column, encoded
    categories = pd.Index(pd.array(texts, dtype=TEXT_DTYPE))
    return pd.Categorical.from_codes(codes, dtype=_distinct_categories(categories), validate=False)


def judged_per_text(
    cells: pd.Series, judge: Callable[[pd.Series], _Judged], out: np.ndarray | None = None
) -> _Judged | np.ndarray:
    """``judge(cells)`` for a judge that reads each cell alone (giving an array, or a tuple of arrays, of one value
    per cell), a categorical judged once per distinct text.

    A categorical's categories, then one missing cell, are judged, and the verdicts gathered by the codes (code -1,
    a missing cell, takes the last slot): each cell gets what ``judge`` gives its text, without a Python object per
    cell.  Any other column is judged as it is.  ``out``, for a one-array judge: the verdicts are written there.
    Privacy cost: none (a per-cell map).
    """
    per_category = judged_per_category(cells, judge)
    if per_category is None:
        judged = judge(cells)
        if out is None:
            return judged
        out[:] = judged
        return out
    judged, codes = per_category
    if isinstance(judged, tuple):
        return tuple(np.take(np.asarray(part), codes, mode="wrap") for part in judged)
    return np.take(np.asarray(judged), codes, out=out, mode="wrap")  # "wrap": no buffered copy


def judged_per_category(cells: pd.Series, judge: Callable[[pd.Series], _Judged]) -> tuple[_Judged, np.ndarray] | None:
    """For a categorical column: ``judge`` of its categories then of one missing cell (one verdict per slot), and
    the column's codes; None for any other column.

    A cell's verdict is ``np.take(verdicts, codes, mode="wrap")`` at its row (code -1, a missing cell, takes the
    last slot): what :func:`judged_per_text` gathers, for a caller that gathers rows a part at a time.
    Privacy cost: none (a per-cell map).
    """
    if not isinstance(cells.dtype, pd.CategoricalDtype):
        return None
    categories = cells.cat.categories
    slots = pd.concat([pd.Series(categories.array), pd.Series([None], dtype=categories.dtype)], ignore_index=True)
    return judge(slots), cells.cat.codes.to_numpy()
