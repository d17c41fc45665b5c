"""Argument types that refuse a bad value while the command line is read: argparse names the flag, prints the
usage line and exits 2, before any data is read or anything is printed.

Standard library only (the parser is built without the heavy libraries: tests/federation/test_cli_startup.py);
the core's limits are copied here as constants, and a test holds them equal to the core's.
"""

from __future__ import annotations

import argparse
import importlib.util
import math
from collections.abc import Callable
from pathlib import Path

__all__ = [
    "CLI_DEPTH_LIMIT",
    "CLI_MAX_CALIBRATION_BINS",
    "CLI_POOLINGS",
    "DECIMAL_HELP",
    "MAX_SKLEARN_SEED",
    "SEP_TAB_HELP",
    "TAB_NAMES",
    "add_decimal_argument",
    "depth_or_auto",
    "embedded_datasets",
    "integer",
    "integer_or_auto",
    "positive_finite",
    "probability",
    "separator",
]


CLI_DEPTH_LIMIT = 30
"""Largest split depth of a tree: ``edprf_core.forest.MAX_DEPTH_LIMIT`` (importing the core is slow)."""

CLI_MAX_CALIBRATION_BINS = 1000
"""Most calibration bins of ``edprf evaluate``: ``edprf_core.metrics.MAX_CALIBRATION_BINS``."""

CLI_POOLINGS = ("log-linear", "mean")
"""Pooling rules of ``--pooling``, the default first: ``edprf_core``'s ``predict_proba`` poolings."""

MAX_SKLEARN_SEED = 2**32 - 1
"""Largest ``random_state`` scikit-learn's splits and forests take."""


TAB_NAMES = ("\\t", "tab")
"""What ``--sep`` reads as a tab besides the tab character itself: the two characters backslash and t (what
``--sep '\\t'`` passes, the shell keeping the backslash) and the word ``tab`` (any case)."""


SEP_TAB_HELP = " ('\\t' or tab for a tab)"
"""Said by every ``--sep`` help after "one character"."""


DECIMAL_HELP = (
    "decimal mark of DATA's numbers: '.' (the schema's) or ',' (a spreadsheet's European export: '5,0'; then fields "
    "are usually separated by ';': pass --sep ';'); with ',' each number of a continuous column is read with its "
    "comma as the decimal point, and a row whose number holds a '.' (a thousands separator? '1.400') is not scored, "
    "with the reason; a Parquet file's numbers are typed (no --decimal) (default: '.')"
)
"""The ``--decimal`` help of every command that reads an analyst's table (predict, evaluate, explain)."""


def add_decimal_argument(parser: argparse.ArgumentParser) -> None:
    """``--decimal {'.',','}``: how DATA writes its decimal point (:mod:`edprf_core._decimal_comma`)."""
    parser.add_argument("--decimal", choices=(".", ","), default=".", metavar="{'.',','}", help=DECIMAL_HELP)


def separator(text: str) -> str:
    """``--sep``: the text as given, except that ``\\t`` (backslash, t) and ``tab`` mean a tab; one character is
    checked where the data is read (the message there names the option)."""
    return "\t" if text == TAB_NAMES[0] or text.casefold() == TAB_NAMES[1] else text


def integer(low: int, high: int | None = None) -> Callable[[str], int]:
    """An integer in ``[low, high]`` (no upper bound when ``high`` is None)."""
    expected = f"an integer >= {low}" if high is None else f"an integer in [{low}, {high}]"

    def read(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}") from None
        if value < low or (high is not None and value > high):
            raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}")
        return value

    read.__name__ = "integer"
    return read


def integer_or_auto(low: int, high: int | None = None) -> Callable[[str], int | str]:
    """``auto`` or an integer in ``[low, high]`` (an estimator parameter whose default is its automatic rule; no
    upper bound when ``high`` is None)."""
    read_integer = integer(low, high)
    expected = f"an integer >= {low}" if high is None else f"an integer in [{low}, {high}]"

    def read(text: str) -> int | str:
        if text.strip() == "auto":
            return "auto"
        try:
            return read_integer(text)
        except argparse.ArgumentTypeError:
            raise argparse.ArgumentTypeError(f"expected 'auto' or {expected}, got {text!r}") from None

    read.__name__ = "integer_or_auto"
    return read


def positive_finite(text: str) -> float:
    """A finite number > 0 (an epsilon)."""
    return _number(text, lambda v: math.isfinite(v) and v > 0, "a positive finite number")


def non_negative_finite(text: str) -> float:
    """A finite number >= 0 (an epsilon where 0 turns a step off)."""
    return _number(text, lambda v: math.isfinite(v) and v >= 0, "a finite number >= 0")


def probability(text: str) -> float:
    """A number in [0, 1] (a decision threshold)."""
    return _number(text, lambda v: 0.0 <= v <= 1.0, "a probability in [0, 1]")


def _number(text: str, accepted: Callable[[float], bool], expected: str) -> float:
    """``text`` as a float that ``accepted`` holds true of (NaN never is: every comparison with it is false)."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if math.isnan(value) or not accepted(value):
        raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}")
    return value


depth_or_auto = integer_or_auto(1, CLI_DEPTH_LIMIT)
"""``auto`` or an integer in ``[1, CLI_DEPTH_LIMIT]``."""


def embedded_datasets() -> tuple[str, ...]:
    """The datasets shipped with ``edprf_core`` (its ``datasets/*.csv.gz``), found without importing it."""
    spec = importlib.util.find_spec("edprf_core")
    roots = list(spec.submodule_search_locations or ()) if spec is not None else []
    return tuple(
        sorted(p.name.removesuffix(".csv.gz") for root in roots for p in Path(root, "datasets").glob("*.csv.gz"))
    )
