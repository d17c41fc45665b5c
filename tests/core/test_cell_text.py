"""The per-cell rules and their vectorized form agree cell by cell, and no cell's value depends on its column."""

from __future__ import annotations

import math
import sys
from decimal import Decimal

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from edprf_core import CategoricalFeature, ContinuousFeature, LabelSpec, Schema
from edprf_core._cell_text import WHITESPACE, number_of_text, strip_text, text_numbers, text_numbers_arrow
from edprf_core._encoding import _parse_numbers
from edprf_core.encoding import FeatureGrid, encode_features

EDGE_CELLS = [
    "7",
    " 7 ",
    "7.0",
    "1e3",
    "+7",
    "-0",
    ".5",
    "5.",
    "1e",
    "1e+",
    "-",
    ".",
    "1,000",
    "1_000",
    "0x10",
    "inf",
    "-inf",
    "nan",
    "NaN",
    "Infinity",
    "1e309",
    "-1e309",
    "1e-400",
    "007",
    "1" * 400,
    "9" * 30,
    "1e99999999999999999999",
    "1e-99999999999999999999",
    "\u0661\u0662",
    "1.5e+03",
    "1E5",
    "  ",
    "",
    "e5",
    "+.5e-3",
    "-.e3",
    "9007199254740993",
    "18446744073709551616",
    "-9223372036854775809",
    "2.2250738585072011e-308",
    "4.9e-324",
    "1.7976931348623157e308",
    "1.7976931348623159e308",
    "0." + "0" * 400 + "1",
    "1\u00a0",
    "\u30007",
    "7\x00",
    "1d5",
    "0x1p3",
    "\ufeff7",
]


def _fuzz_cells(n: int = 20_000, seed: int = 0) -> list[str]:
    rng = np.random.default_rng(seed)
    alphabet = list("0123456789.eE+-") + list(" infaINFA_x,\t") + ["\u00a0", "\u0663", "\x00"]
    return ["".join(rng.choice(alphabet, rng.integers(0, 9))) for _ in range(n)]


def _same(a: float, b: float) -> bool:
    """Equal as floats, NaN equal to NaN, and the same sign of zero."""
    return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1.0, a) == math.copysign(1.0, b))


def test_whitespace_is_what_str_strip_removes():
    assert WHITESPACE == "".join(c for c in map(chr, range(sys.maxunicode + 1)) if c.isspace())


def test_arrow_strips_exactly_like_str_strip_for_every_code_point():
    cells = [chr(c) + "x" + chr(c) for c in range(sys.maxunicode + 1) if not 0xD800 <= c <= 0xDFFF]
    stripped = strip_text(pa.array(cells)).to_pylist()
    assert [c for c, s in zip(cells, stripped) if s != c.strip()] == []


@pytest.mark.parametrize(
    ("cell", "value"),
    [
        ("7", 7.0),
        (" 7 ", 7.0),
        ("-0", -0.0),
        (".5", 0.5),
        ("1e3", 1000.0),
        ("007", 7.0),
        ("9007199254740993", 9007199254740992.0),
    ],
)
def test_numbers(cell, value):
    assert _same(number_of_text(cell), value)


@pytest.mark.parametrize("cell", ["inf", "nan", "1e309", "1_000", "0x10", "1,5", "\u0661\u0662", "", "abc", "9" * 400])
def test_not_numbers(cell):
    assert math.isnan(number_of_text(cell))


def test_the_kernels_give_every_cell_the_rule_s_value():
    cells = EDGE_CELLS + _fuzz_cells()
    vectorized = text_numbers_arrow(pa.array(cells))
    assert [c for c, v in zip(cells, vectorized) if not _same(number_of_text(c), float(v))] == []


def test_a_cell_s_number_never_depends_on_its_column():
    """pandas' to_numeric reads "-0" as 0 among integers and as -0.0 among floats: the rule does not."""
    neighbours = [["1"], ["1.5"], ["abc"], ["?"], ["9" * 30], ["1e309"], ["1", "2", "3"]]
    for cell in EDGE_CELLS:
        alone = text_numbers_arrow(pa.array([cell]))[0]
        for others in neighbours:
            column = pd.Series([*others, cell], dtype=object)
            assert _same(_parse_numbers(column)[-1], alone), (cell, others)


def test_text_arrow_cannot_hold_is_read_by_the_python_rule():
    cells = np.array(["7", "\udc80", " 8 ", None, "1e309"], dtype=object)  # a lone surrogate has no UTF-8 form
    assert [_same(a, b) for a, b in zip(text_numbers(cells), [7.0, math.nan, 8.0, math.nan, math.nan])] == [True] * 5


def test_objects_that_are_not_text_are_read_one_by_one():
    cells = [3, 2.5, True, Decimal("1.25"), 2**70, 10**400, 1 + 2j, b"7", None, np.float32(0.5), "4"]
    expected = [3.0, 2.5, 1.0, 1.25, float(2**70), math.nan, math.nan, math.nan, math.nan, 0.5, 4.0]
    column = _parse_numbers(pd.Series(cells, dtype=object))
    assert [_same(a, b) for a, b in zip(column, expected)] == [True] * len(cells)
    for cell, value in zip(cells, expected):  # the same value alone
        assert _same(_parse_numbers(pd.Series([cell], dtype=object))[0], value)


SCHEMA = Schema(
    features=(
        ContinuousFeature("x", 0.0, 10.0, missing="separate", source="test"),
        CategoricalFeature("grade", (1, 2, 3), unknown=3, missing="separate", source="test"),
        CategoricalFeature("code", ("007", "a b", "other"), unknown="other", missing="separate", source="test"),
    ),
    label=LabelSpec("y", ("0", "1")),
    missing_values=("", "?", "NA"),
)
CELLS = {
    "x": [" 3.5", "-0", "1e309", "NA", "", "12", "7", "\u30007"],
    "grade": ["2", " 002 ", "2.0", "-0", "?", "4", "1e0", "3"],
    "code": ["007", " a b ", "7", "?", "other", "x", "\u00a0007", "a  b"],
}


@pytest.mark.parametrize("dtype", ["object", "str", "string[python]", "string[pyarrow]", "category"])
def test_codes_do_not_depend_on_the_column_s_dtype_or_on_a_non_text_neighbour(dtype):
    grid = FeatureGrid.from_schema(SCHEMA, 4)

    def read(frame: pd.DataFrame, rows: int = len(CELLS["x"])) -> tuple[list, list]:
        problems: list = []  # refused cells are recorded, not raised
        codes = encode_features(frame, SCHEMA, grid, problems)
        return codes[:rows].tolist(), [(column, what, mask[:rows].tolist()) for column, what, mask in problems]

    reference = read(pd.DataFrame(CELLS, dtype=object))
    # x: 4 bins of [0, 10] (+ missing = 4); grade: unknown -> 3 (code 2), missing = 3; code: unknown -> "other"
    assert reference == (
        [[1, 1, 0], [0, 1, 1], [0, 1, 2], [4, 2, 3], [4, 3, 2], [3, 2, 2], [2, 0, 0], [2, 2, 2]],
        [("x", "not a finite number", [False, False, True, False, False, False, False, False])],
    )
    typed = pd.DataFrame({k: pd.Series(v, dtype=dtype) for k, v in CELLS.items()})
    assert read(typed) == reference
    mixed = pd.DataFrame({k: pd.Series([*v, 5], dtype=object) for k, v in CELLS.items()})  # one cell is a number
    assert read(mixed) == reference
