"""Draft a schema from data, to help a user start writing the public one."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from ._exceptions import PrivacyLeakWarning
from ._schema import REFUSE, SEPARATE, CategoricalFeature, ContinuousFeature, LabelSpec, Schema

__all__ = ["draft_schema"]


def draft_schema(frame: pd.DataFrame, label: str, max_categories: int = 20, name: str = "draft") -> Schema:
    """Draft a schema by reading the data.

    The drafted bounds are the data's own minimum and maximum, and the
    category and class lists are the values that occur: both reveal individual
    records (extremes, rare values).  Emits :class:`PrivacyLeakWarning`.
    Replace every bound and list with public knowledge (documentation, domain
    ranges) before any private release.

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
        numeric = pd.api.types.is_numeric_dtype(s)
        n_values = s.nunique()
        if numeric and n_values > max_categories:
            lo, hi = float(s.min()), float(s.max())
            if lo == hi:
                hi = lo + 1.0
            features.append(ContinuousFeature(str(col), lo, hi, missing=missing, source="DRAFTED FROM DATA: replace"))
        else:
            cats = sorted(s.unique().tolist(), key=str)
            if len(cats) < 2:
                cats = cats + ["__other__"] if cats else ["__a__", "__b__"]
            cats = [c.item() if isinstance(c, np.generic) else c for c in cats]
            if not all(isinstance(c, str) for c in cats):
                cats = [str(c) for c in cats] if not all(isinstance(c, (int, float)) for c in cats) else cats
            if missing == SEPARATE and SEPARATE in cats:
                missing = REFUSE
            features.append(
                CategoricalFeature(str(col), tuple(cats), missing=missing, source="DRAFTED FROM DATA: replace")
            )
    classes = sorted(frame[label].dropna().unique().tolist(), key=str)
    classes = [c.item() if isinstance(c, np.generic) else c for c in classes]
    return Schema(
        features=tuple(features),
        label=LabelSpec(str(label), tuple(classes), source="DRAFTED FROM DATA"),
        name=name,
        provenance="Drafted from data by draft_schema: NOT public knowledge.",
        drafted=True,
    )
