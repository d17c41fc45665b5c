"""Draft a schema from data, to help a user start writing the public one."""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np
import pandas as pd

from ._exceptions import PrivacyLeakWarning
from ._schema import (
    DEFAULT_MISSING_VALUES,
    DRAFT_MARK,
    REFUSE,
    SEPARATE,
    CategoricalFeature,
    ContinuousFeature,
    LabelSpec,
    Schema,
)

__all__ = ["draft_schema"]


def draft_schema(
    frame: pd.DataFrame,
    label: str,
    max_categories: int = 20,
    name: str = "draft",
    missing_values: Sequence[str] = DEFAULT_MISSING_VALUES,
) -> Schema:
    """Draft a schema by reading the data.

    The drafted bounds are the data's own minimum and maximum, and the
    category and class lists are the values that occur: both reveal individual
    records (extremes, rare values).  Emits :class:`PrivacyLeakWarning`.
    Replace every bound and list with public knowledge (documentation, domain
    ranges) before any private release.

    A numeric column is drafted continuous unless it looks like a code: at most ``max_categories``
    distinct values, all whole numbers, spanning fewer than ``2 * max_categories`` (``cp`` 1-4 or
    ``thal`` 3/6/7 are categories; a lab value with 18 distinct readings from 80 to 300, or
    fractional readings, is continuous).  Numeric categories and classes are listed in numeric
    order, others in text order.  ``missing_values``: the cell texts the frame's reader took as missing (the
    schema's ``missing_values``, so that a party reads them as missing too).

    Privacy cost: not differentially private.  Do not share the draft.
    """
    warnings.warn(
        "draft_schema reads the data: its bounds, categories and classes are data-derived and leak "
        "individual records. Replace them with public knowledge before a private release.",
        PrivacyLeakWarning,
        stacklevel=2,
    )
    if label not in frame.columns:
        raise ValueError(f"label column {label!r} is not in the frame")
    features = []
    for col in frame.columns:
        if col == label:
            continue
        s = frame[col].dropna()
        missing = SEPARATE if len(s) < len(frame) else REFUSE  # columns with gaps get a code of their own
        if pd.api.types.infer_dtype(s, skipna=True) == "boolean":  # a bool column, or bools held as objects
            s = s.astype(str)  # a file's True/False cells are text to the party: categories "False", "True"
        elif pd.api.types.is_numeric_dtype(s):
            s = s[np.isfinite(s.to_numpy(dtype=np.float64))]  # inf is no number to the party (its row is dropped)
        if _drafted_continuous(s, max_categories):
            lo, hi = float(s.min()), float(s.max())
            if lo == hi:
                hi = lo + 1.0
            features.append(ContinuousFeature(str(col), lo, hi, missing=missing, source=f"{DRAFT_MARK}: replace"))
        else:
            cats = _sorted_values(s.unique().tolist())
            if len(cats) < 2:
                cats = cats + ["__other__"] if cats else ["__a__", "__b__"]
            cats = [c.item() if isinstance(c, np.generic) else c for c in cats]
            if not all(isinstance(c, str) for c in cats):
                cats = [str(c) for c in cats] if not all(isinstance(c, (int, float)) for c in cats) else cats
            if missing == SEPARATE and SEPARATE in cats:
                missing = REFUSE
            features.append(CategoricalFeature(str(col), tuple(cats), missing=missing, source=f"{DRAFT_MARK}: replace"))
    classes = _sorted_values(frame[label].dropna().unique().tolist())
    classes = [c.item() if isinstance(c, np.generic) else c for c in classes]
    return Schema(
        features=tuple(features),
        label=LabelSpec(str(label), tuple(classes), source=DRAFT_MARK),
        name=name,
        provenance=f"{DRAFT_MARK} by draft_schema: NOT public knowledge.",
        drafted=True,
        missing_values=tuple(missing_values),
    )


def _drafted_continuous(values: pd.Series, max_categories: int) -> bool:
    """Whether a column's (non-missing) values are drafted as a continuous feature (see :func:`draft_schema`)."""
    if not pd.api.types.is_numeric_dtype(values) or pd.api.types.is_bool_dtype(values):
        return False
    if values.nunique() > max_categories:
        return True
    numbers = values.to_numpy(dtype=np.float64)
    if numbers.size == 0:
        return False
    whole = bool(np.all(np.isfinite(numbers)) and np.all(numbers == np.round(numbers)))
    return not whole or float(numbers.max() - numbers.min()) >= 2 * max_categories


def _sorted_values(values: list) -> list:
    """Numbers in numeric order (``80, 85, 100``, not ``100, 80, 85``), anything else in text order."""
    if all(isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool) for v in values):
        return sorted(values)
    return sorted(values, key=str)
