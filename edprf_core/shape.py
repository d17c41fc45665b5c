"""The trees' shape from public sizes: depth, number of bins and branching, chosen before any data is read."""

from ._depth_rule import branching_factor, public_bins, public_depth, public_shape

__all__ = ["branching_factor", "public_bins", "public_depth", "public_shape"]
