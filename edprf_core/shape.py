"""The trees' shape from public sizes: depth, number of bins and branching, chosen before any data is read."""

from ._depth_rule import AUTO_DEPTH_CAP, branching_factor, public_bins, public_depth, public_shape

__all__ = ["AUTO_DEPTH_CAP", "branching_factor", "public_bins", "public_depth", "public_shape"]
