"""Rows to codes: cells parsed and binned by the public schema alone (a row's codes depend on that row only)."""

from ._encoding import FeatureGrid, cell_readings, conforming_rows, encode_features, encode_labels

__all__ = ["FeatureGrid", "cell_readings", "conforming_rows", "encode_features", "encode_labels"]
