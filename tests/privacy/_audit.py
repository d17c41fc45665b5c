"""Empirical privacy audits: Clopper-Pearson lower bounds on the privacy loss, their power, weakened samplers.

The audit
---------
For a mechanism M, neighbours D and D' and an event S on M's output, an
eps-DP mechanism satisfies ``P[M(D) in S] <= e^eps P[M(D') in S]``.  From
``n_a`` runs on D with ``hits_a`` outputs in S and ``n_b`` runs on D' with
``hits_b``, the one-sided Clopper-Pearson bounds (a lower bound of the first
probability and an upper bound of the second, each at level ``alpha / 2``,
Bonferroni) give a lower confidence bound of ``ln(P[M(D) in S] / P[M(D') in
S])``: an honest mechanism exceeds eps with probability at most ``alpha``
(:func:`loss_lower_bound`).  The events used are those where the log-ratio of
the worst-case pair reaches eps (the tail the added record pushes against), so
the audit is tight.

Power
-----
The same audit, at the same sample sizes, must reject the mechanism with half
its noise (its loss is 2 eps).  With the exact laws ``p, q`` of the event
under the weakened mechanism, ``hits_a >= a*`` and ``hits_b <= b*`` (the
``beta / 2`` binomial quantiles) hold together with probability at least
``1 - beta``, and the bound is increasing in ``hits_a`` and decreasing in
``hits_b``; so when ``loss_lower_bound(a*, n_a, b*, n_b) > eps`` the audit
rejects with probability at least ``1 - beta`` (:func:`assured_lower_bound`).
:func:`smallest_sizes` finds sample sizes for which this holds.

The exact samplers (OpenDP) cannot be seeded: ``ALPHA`` and ``BETA`` bound the
probability that an honest run fails, or that a weakened one passes, per test.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from scipy import stats

__all__ = [
    "ALPHA",
    "BETA",
    "AuditResult",
    "assured_lower_bound",
    "discrete_laplace_tail_law",
    "loss_lower_bound",
    "noiseless_size",
    "opendp_noise_scaled",
    "permute_and_flip_tie_law",
    "smallest_sizes",
]

ALPHA = 1e-6
"""Probability that an honest mechanism fails one test (split evenly over the test's events)."""
BETA = 1e-6
"""Probability that the mechanism with half its noise passes one test (split evenly over its events)."""


def loss_lower_bound(hits_a: int, n_a: int, hits_b: int, n_b: int, alpha: float = ALPHA) -> float:
    """Lower confidence bound (level ``1 - alpha``) of ``ln(p_a / p_b)``, Clopper-Pearson on each side."""
    low_a = stats.beta.ppf(alpha / 2, hits_a, n_a - hits_a + 1) if hits_a > 0 else 0.0
    high_b = stats.beta.ppf(1 - alpha / 2, hits_b + 1, n_b - hits_b) if hits_b < n_b else 1.0
    return -math.inf if low_a == 0 else math.log(low_a / high_b)


def assured_lower_bound(p: float, q: float, n_a: int, n_b: int, alpha: float = ALPHA, beta: float = BETA) -> float:
    """A value the audit's bound exceeds with probability >= ``1 - beta`` when the event has laws ``p``, ``q``."""
    a_star = int(stats.binom.ppf(beta / 2, n_a, p))  # P[hits_a < a_star] < beta / 2
    b_star = int(stats.binom.isf(beta / 2, n_b, q))  # P[hits_b > b_star] <= beta / 2
    return loss_lower_bound(a_star, n_a, b_star, n_b, alpha)


def smallest_sizes(
    p: float,
    q: float,
    epsilon: float,
    alpha: float = ALPHA,
    beta: float = BETA,
    ratios: tuple[float, ...] = (1.0, 1.5, 2.0, 3.0, 4.0),
) -> tuple[int, int]:
    """Sample sizes ``(n_a, n_b)`` of least total for which the audit rejects laws ``p, q`` at ``epsilon``.

    ``n_b = ratio * n_a`` for the best of ``ratios`` (the runs on D' see the
    rarer event, so more of them help); a bisection on ``n_a`` for each.
    """
    best: tuple[int, int, int] | None = None
    for ratio in ratios:
        lo, hi = 1, 1 << 20
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if assured_lower_bound(p, q, mid, math.ceil(ratio * mid), alpha, beta) > epsilon:
                hi = mid
            else:
                lo = mid
        total = hi + math.ceil(ratio * hi)
        if best is None or total < best[0]:
            best = (total, hi, math.ceil(ratio * hi))
    assert best is not None
    return best[1], best[2]


def noiseless_size(epsilon: float, alpha: float = ALPHA) -> int:
    """Runs per side after which an event that always holds on D and never on D' gives a bound above ``epsilon``."""
    n = 1
    while loss_lower_bound(n, n, 0, n, alpha) <= epsilon:
        n += 1
    return n


def permute_and_flip_tie_law(gap: float) -> tuple[float, float]:
    """Event "the candidate the record lowers is chosen", two candidates tied on D, ``gap`` apart on D'.

    ``gap`` is the utility change over the noise scale.  Permute-and-flip (report
    noisy max with exponential noise) picks the lower of two candidates ``g``
    apart with probability ``e^-g / 2``: 1/2 on D, ``e^-gap / 2`` on D'.
    """
    return 0.5, 0.5 * math.exp(-gap)


def discrete_laplace_tail_law(scale: float, coordinates: int = 1) -> tuple[float, float]:
    """Event "every released count <= its value on D", each count one higher on D' (noise scale ``scale``).

    Discrete Laplace noise ``Z`` with ``P(Z = z) ∝ a^|z|``, ``a = e^(-1/scale)``:
    ``P(Z <= 0) = 1 / (1 + a)`` and ``P(Z <= -1) = a / (1 + a)``; independent
    coordinates multiply.  The log-ratio is ``coordinates / scale``.
    """
    a = math.exp(-1.0 / scale)
    return (1.0 / (1.0 + a)) ** coordinates, (a / (1.0 + a)) ** coordinates


@dataclass(frozen=True)
class AuditResult:
    """One event's audit: what was counted and the lower bound of the loss, against the output's epsilon."""

    name: str
    epsilon: float
    hits_a: int
    n_a: int
    hits_b: int
    n_b: int
    alpha: float

    @property
    def lower_bound(self) -> float:
        return loss_lower_bound(self.hits_a, self.n_a, self.hits_b, self.n_b, self.alpha)

    def __str__(self) -> str:
        return (
            f"{self.name}: eps {self.epsilon:.4g}, lower bound {self.lower_bound:.3f} "
            f"(D {self.hits_a}/{self.n_a}, D' {self.hits_b}/{self.n_b}, alpha {self.alpha:.2g})"
        )


def _with_honest_map(noisy: Any, honest: Any) -> Any:
    """The real OpenDP measurement ``noisy``, whose ``map`` now answers with ``honest``'s privacy map.

    It stays an OpenDP ``Measurement`` (so every way of invoking it, OpenDP's Python layer or the
    project's direct call of the C entry point, draws from it), and every check of its privacy map
    passes as if it were the honest one.
    """
    noisy.map = honest.map  # an instance attribute: the class's map is untouched
    return noisy


@contextmanager
def opendp_noise_scaled(factor: float) -> Iterator[None]:
    """Weaken OpenDP's noisy max and Laplace samplers: noise scale times ``factor``, honest privacy map.

    ``make_noisy_max`` and ``make_laplace`` (which ``then_laplace`` calls) build
    the measurement the caller asked for and one with ``factor`` times the scale
    (0: no noise at all); the caller gets the weakened OpenDP measurement itself,
    whose ``map`` answers with the honest one's (so any check of the privacy map
    passes), however it is then invoked.  This is the "sampler with less noise whose privacy map still
    looks honest" an audit must catch.  ``factor = 0.5`` doubles every loss.
    """
    from opendp import measurements

    originals = {name: getattr(measurements, name) for name in ("make_noisy_max", "make_laplace")}

    def weakened(name: str):
        original = originals[name]

        def build(*args: Any, **kwargs: Any) -> Any:
            honest = original(*args, **kwargs)
            if "scale" in kwargs:
                kwargs = {**kwargs, "scale": kwargs["scale"] * factor}
            else:  # positional: scale is the 4th argument of make_noisy_max, the 3rd of make_laplace
                position = 3 if name == "make_noisy_max" else 2
                args = (*args[:position], args[position] * factor, *args[position + 1 :])
            return _with_honest_map(original(*args, **kwargs), honest)

        return build

    for name in originals:
        setattr(measurements, name, weakened(name))
    try:
        yield
    finally:
        for name, original in originals.items():
            setattr(measurements, name, original)
