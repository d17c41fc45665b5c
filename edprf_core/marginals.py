"""The marginals part: DP one-way class-count histograms, their wire range, their sum across parties, and the
residual pass a single data holder's fit may run on them."""

from ._marginals import (
    MARGINALS_BINS_HIGH,
    MARGINALS_BINS_LOW,
    MIX_SHARE_HIGH,
    MIX_SHARE_LOW,
    RELEASE_RANGE,
    NoisyMarginals,
    ResidualPass,
    marginal_proba,
    marginals_n_bins,
    marginals_share_rule,
    release_marginals,
)
from ._marginals_merge import (
    NOISE_MARGIN_SCALES,
    bounded_marginals_sum,
    cell_floor,
    column_floor,
    effective_epsilon,
    marginals_release_epsilons,
    mass_floor,
    negative_mass_ceiling,
)
from ._residual_pass import release_residual_pass, residual_pass_rule

__all__ = [
    "MARGINALS_BINS_HIGH",
    "MARGINALS_BINS_LOW",
    "MIX_SHARE_HIGH",
    "MIX_SHARE_LOW",
    "NOISE_MARGIN_SCALES",
    "RELEASE_RANGE",
    "NoisyMarginals",
    "ResidualPass",
    "bounded_marginals_sum",
    "cell_floor",
    "column_floor",
    "effective_epsilon",
    "marginal_proba",
    "marginals_n_bins",
    "marginals_release_epsilons",
    "marginals_share_rule",
    "mass_floor",
    "negative_mass_ceiling",
    "release_marginals",
    "release_residual_pass",
    "residual_pass_rule",
]
