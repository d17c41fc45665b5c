"""The builder's (bin, class) cells of the sample rows, built in place a block of rows at a time, are the integers
the whole-matrix formula gave (``((codes + offsets) * n_classes + y)[rows]``): the same forest, less memory."""

from __future__ import annotations

import numpy as np
import pytest

from edprf_core import _builder


@pytest.mark.parametrize("dtype", [np.int32, np.uint8, np.int64])
@pytest.mark.parametrize("at_once", [1, 7, 1 << 16])
def test_row_cells_are_the_whole_matrix_formula(monkeypatch, dtype, at_once):
    rng = np.random.default_rng(5)
    n, features, n_classes = 1000, 6, 3
    n_codes = rng.integers(2, 40, size=features)
    codes = np.stack([rng.integers(0, k, size=n) for k in n_codes], axis=1).astype(dtype)
    y = rng.integers(0, n_classes, size=n).astype(np.int32)
    offsets = np.concatenate(([0], np.cumsum(n_codes[:-1]))).astype(np.int64)
    monkeypatch.setattr(_builder, "_ROW_CELLS_AT_ONCE", at_once)
    for rows in (rng.permutation(n), rng.integers(0, n, size=2500), np.empty(0, dtype=np.int64)):
        rows = rows.astype(np.int64)
        expected = ((codes.astype(np.int64) + offsets[None, :]) * n_classes + y.astype(np.int64)[:, None])[rows]
        for narrow in (np.int64, np.int32):  # int32 when n_bins * n_classes fits (here 240 at most)
            got = _builder._row_cells(codes, y, offsets, n_classes, rows, narrow)
            assert got.dtype == narrow and got.shape == expected.shape
            np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("at_once", [1, 5, 1 << 16])
@pytest.mark.parametrize("cells_dtype", [np.int64, np.int32])
def test_the_histogram_in_blocks_counts_as_the_whole_index_did(monkeypatch, at_once, cells_dtype):
    rng = np.random.default_rng(9)
    n_nodes, width, features = 4, 30, 5
    for n in (0, 1, 37, 500):
        local = rng.integers(0, n_nodes, size=n).astype(np.int64)
        cells = rng.integers(0, width, size=(n, features)).astype(cells_dtype)
        expected = np.bincount((local[:, None] * width + cells).ravel(), minlength=n_nodes * width).astype(np.float64)
        monkeypatch.setattr(_builder, "_HISTOGRAM_ROWS_AT_ONCE", at_once)
        got = _builder._histogram(local, cells, width, n_nodes)
        assert got.dtype == np.float64
        np.testing.assert_array_equal(got, expected)
