"""Rows to codes: cells parsed and binned by the public schema alone (a row's codes depend on that row only).

:func:`labels_read_by_caller` is for code that reads its labels by the schema itself (a party's release): the fits
inside it skip the estimators' warning that labels were read through the schema.
"""

from ._encoding import FeatureGrid, cell_readings, conforming_rows, encode_features, encode_labels
from ._label_reading import labels_read_by_caller

__all__ = [
    "FeatureGrid",
    "cell_readings",
    "conforming_rows",
    "encode_features",
    "encode_labels",
    "labels_read_by_caller",
]
