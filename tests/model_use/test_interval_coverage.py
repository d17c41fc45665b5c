"""Coverage of the ROC AUC and Brier score intervals at a hospital's local-validation sizes (10-30 events).

The clinical analyst's review (finding 3) measured the DeLong Wald interval, clipped to [0, 1], covering 0.70-0.87
of the time at 8-30 positives; these tests draw many samples from synthetic populations whose AUC or Brier score
is known in closed form and count how often the shipped 95 % interval holds it.

Bound: the intervals are asymptotic, so their true coverage may sit somewhat below 0.95; we accept a true coverage
down to ``0.95 - TOLERANCE``.  A coverage count from ``R`` independent replicates is Binomial(R, c); the test fails
when the observed share is below the exact binomial quantile at ``ALPHA = 1e-6`` of Binomial(R, 0.95 - TOLERANCE),
i.e. a correct interval (true coverage >= 0.95 - TOLERANCE) fails this test with probability below 1e-6.  The
draws come from a fixed seed, so the outcome is reproducible.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import binom, norm

from edprf_core._metric_intervals import Z95, _auc_and_se, brier_estimate, delong_auc

ALPHA = 1e-6
AUC_TOLERANCE = 0.03  # accept true coverage >= 0.92 for the asymptotic AUC interval at 10-30 events
BRIER_TOLERANCE = 0.02  # accept true coverage >= 0.93 for the Brier interval at n = 100


def _lower_bound(replicates: int, tolerance: float) -> float:
    """Smallest observed coverage share a true coverage of ``0.95 - tolerance`` reaches with probability 1 - ALPHA."""
    return float(binom.ppf(ALPHA, replicates, 0.95 - tolerance)) / replicates


@pytest.mark.parametrize(("positives", "negatives"), [(10, 100), (20, 200), (30, 300)])
def test_auc_interval_covers_near_nominal_with_few_events_where_the_wald_interval_did_not(positives, negatives):
    """Binormal population: scores N(d, 1) for positives, N(0, 1) for negatives, so AUC = Phi(d / sqrt(2)) = 0.95.

    Asserts the shipped interval's coverage is above the binomial bound (module docstring, about 0.89 for 3000
    replicates) and that the old symmetric Wald interval on the same draws (DeLong's SE, clipped to [0, 1]) is
    below it: the test tells the two apart.
    """
    d = math.sqrt(2) * norm.ppf(0.95)
    truth = 0.95
    replicates = 3000
    rng = np.random.default_rng(20261129 + positives)
    positive = np.r_[np.ones(positives, bool), np.zeros(negatives, bool)]
    covered = wald_covered = 0
    for _ in range(replicates):
        score = np.r_[rng.normal(d, 1.0, positives), rng.normal(0.0, 1.0, negatives)]
        e = delong_auc(positive, score)
        covered += e.low <= truth <= e.high
        auc, se = _auc_and_se(positive, score)
        wald_covered += max(0.0, auc - Z95 * se) <= truth <= min(1.0, auc + Z95 * se)
    bound = _lower_bound(replicates, AUC_TOLERANCE)
    assert covered / replicates >= bound, (covered / replicates, bound)
    assert wald_covered / replicates < bound, (wald_covered / replicates, bound)


def test_brier_interval_covers_near_nominal_on_skewed_squared_errors():
    """Calibrated risks p ~ Beta(0.3, 6) (mean 0.048, strongly skewed), y ~ Bernoulli(p), n = 100 rows.

    The true Brier score is E[p (1 - p)] = a / (a + b) - a (a + 1) / ((a + b)(a + b + 1)).  Asserts the shipped
    interval's coverage is above the binomial bound for a true coverage of 0.93 (about 0.911 for 4000 replicates),
    and that the symmetric normal interval ``mean +/- z sd / sqrt(n)`` on the same draws is below it.
    """
    a, b, n, replicates = 0.3, 6.0, 100, 4000
    truth = a / (a + b) - a * (a + 1) / ((a + b) * (a + b + 1))
    rng = np.random.default_rng(7)
    covered = normal_covered = 0
    for _ in range(replicates):
        p = rng.beta(a, b, n)
        errors = (p - (rng.random(n) < p)) ** 2
        e = brier_estimate(errors)
        covered += e.low <= truth <= e.high
        half = Z95 * errors.std(ddof=1) / math.sqrt(n)
        normal_covered += errors.mean() - half <= truth <= errors.mean() + half
    bound = _lower_bound(replicates, BRIER_TOLERANCE)
    assert covered / replicates >= bound, (covered / replicates, bound)
    assert normal_covered / replicates < bound, (normal_covered / replicates, bound)


def test_auc_of_one_has_the_exact_lower_bound_of_concordant_pairs():
    """Perfect separation: DeLong's SE is 0; the lower limit is 0.025 ** (1 / smaller class), never the AUC itself."""
    positive = np.r_[np.ones(12, bool), np.zeros(40, bool)]
    e = delong_auc(positive, np.r_[np.linspace(0.6, 0.9, 12), np.linspace(0.0, 0.5, 40)])
    assert e.value == 1.0 and e.high == 1.0
    assert e.low == pytest.approx(0.025 ** (1 / 12))
