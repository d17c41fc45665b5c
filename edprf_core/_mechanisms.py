"""Selection and noise mechanisms.

Privacy proofs (kept next to the code)
--------------------------------------
Permute-and-flip (McKenna & Sheldon, 2020) visits the candidates in a random
order and stops at candidate ``r`` with probability
``exp(eps * (u_r - u_max) / (2 * Delta))``; it is eps-DP for a utility of
sensitivity ``Delta``.  When the utility is *monotone* under the neighbouring
relation (for every pair of neighbours, all utilities move in the same
direction), the factor 2 can be dropped, exactly as for the exponential
mechanism.

Ding, Kifer, Saghaian et al. (2021, "The permute-and-flip mechanism is
identical to report-noisy-max with exponential noise") show that permute-and-
flip has the same output distribution as ``argmax_r u_r + E_r`` with
``E_r ~ Exponential(scale = 2 * Delta / eps)`` i.i.d. (``Delta / eps`` in the
monotone case).  :class:`PermuteAndFlip` uses that form because it vectorizes
over many independent selections; :func:`permute_and_flip_literal` is the
textbook loop, kept only so that tests can check the two agree, and
:func:`permute_and_flip_probabilities` gives the exact output distribution:
with ``p_j = exp(eps * (u_j - u_max) / (2 * Delta))`` and independent uniform
arrival times, ``P(r) = p_r * integral_0^1 prod_{j != r} (1 - t * p_j) dt``.

Why both eDPRF utilities are monotone (so the scale is Delta / eps)
-----------------------------------------------------------------
Relation: add/remove one record.  Fix a node and let ``n_c`` be its count of
class ``c``, ``N = sum_c n_c`` and ``S = sum_c n_c^2``.

*Leaf utility* ``u_c = n_c``.  Adding a record that reaches the node raises
exactly one ``n_k`` by 1 and leaves the others; a record that does not reach
it changes nothing.  So every utility is non-decreasing when a record is added
(non-increasing when one is removed), and each moves by at most 1: a monotone
utility of sensitivity 1.

*Split utility* ``u_s = -sum_{children v} g(v)`` with the weighted impurity
``g = N * Gini = N - S / N`` (``g = 0`` for an empty child).  An added record
reaching the node lands in exactly one child of every candidate split; say it
has class ``k`` and that child has counts ``n``.  Then

    g' - g = (N + 1) - (S + 2 n_k + 1) / (N + 1) - N + S / N
           = ((N - n_k)^2 + sum_{c != k} n_c^2) / (N (N + 1))        (N >= 1),

and ``g' - g = 0`` for ``N = 0``.  The numerator is a sum of squares, so
``g`` never decreases: every candidate's utility is non-increasing when a
record is added (non-decreasing when one is removed), i.e. all utilities move
in the same direction.  And since ``sum_{c != k} n_c^2 <= (N - n_k)^2``, the
change is at most ``2 (N - n_k)^2 / (N (N + 1)) < 2``: sensitivity 2.

For a monotone utility of sensitivity ``Delta``, the probability ratio of any
outcome between neighbours is bounded by ``exp(eps)`` already with the scale
``Delta / eps`` instead of ``2 Delta / eps``: the utilities cannot move in
opposite directions, so only one of the two factors of the usual proof
appears (McSherry & Talwar 2007; for permute-and-flip and report-noisy-max with
exponential noise, McKenna & Sheldon 2020 and Ding et al. 2021).
``tests/core/test_privacy.py`` checks monotonicity and the bound on random
neighbours, and the exact output ratio of the builder's root split.

Floating point (research backend): no DP claim
----------------------------------------------
The proofs above are about real-valued noise.  The classes here draw it from
numpy in double precision (``Generator.standard_exponential``, ``gumbel``,
``laplace``), and nothing here bounds how far those draws are from the real
distributions: the exponential draws use numpy's default ziggurat algorithm,
not an inverse transform whose tail could be bounded, and the spacing and
rounding of doubles can make some outputs possible under one dataset and
impossible under a neighbour (the attack of Mironov, CCS 2012, on
floating-point Laplace).  So a fit drawn by this backend is NOT called
differentially private, seeded or not (:data:`edprf_core._forest.FLOAT_NOISE_REASON`
is the reason its guarantee gives).  It is for research runs, simulations and
benchmarks; what a party releases is drawn by the exact backend
(:mod:`edprf_core._exact_selection` for selections, :mod:`edprf_core._count_noise`
for counts: OpenDP, integers, no float noise).

The exponential mechanism is sampled with the Gumbel-max trick
(``argmax_r eps * u_r / (2 * Delta) + G_r``, ``G_r ~ Gumbel(0, 1)``), which is
exact in real arithmetic (not in floating point: see above).  The Laplace mechanism adds ``Laplace(scale = Delta / eps)`` to each
coordinate of a query of L1 sensitivity ``Delta``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = [
    "ExponentialMechanism",
    "LaplaceMechanism",
    "PermuteAndFlip",
    "check_epsilon",
    "permute_and_flip_literal",
    "permute_and_flip_probabilities",
]


def check_epsilon(epsilon: float, name: str = "epsilon") -> float:
    """Validate a scalar privacy budget: finite and strictly positive."""
    try:
        value = float(epsilon)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a positive finite number, got {epsilon!r}") from None
    if not math.isfinite(value) or value <= 0.0:
        raise ValueError(f"{name} must be a positive finite number, got {epsilon!r}")
    return value


def _check_epsilons(epsilon: ArrayLike, shape: tuple[int, ...]) -> NDArray[np.float64]:
    try:
        eps = np.asarray(epsilon, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"epsilon must be a positive finite number, got {epsilon!r}") from None
    if not np.all(np.isfinite(eps)) or np.any(eps <= 0):
        raise ValueError("every epsilon must be a positive finite number")
    return np.broadcast_to(eps, shape)


def _check_sensitivity(sensitivity: float) -> None:
    if not math.isfinite(sensitivity) or sensitivity <= 0:
        raise ValueError(f"sensitivity must be a positive finite number, got {sensitivity!r}")


def _masked(utilities: ArrayLike, valid: ArrayLike | None) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
    u = np.asarray(utilities, dtype=np.float64)
    if u.ndim == 0 or u.shape[-1] == 0:
        raise ValueError("utilities must have at least one candidate on the last axis")
    if valid is None:
        ok = np.ones(u.shape, dtype=bool)
    else:
        ok = np.broadcast_to(np.asarray(valid, dtype=bool), u.shape)
    if not np.all(np.isfinite(u[ok])):
        raise ValueError("utilities of valid candidates must be finite")
    return u, ok


def _argmax_or_minus_one(scores: NDArray[np.float64], ok: NDArray[np.bool_]) -> NDArray[np.intp]:
    scores = np.where(ok, scores, -np.inf)
    choice = np.argmax(scores, axis=-1)
    return np.where(ok.any(axis=-1), choice, -1)


@dataclass(frozen=True)
class PermuteAndFlip:
    """Permute-and-flip selection, vectorized as report-noisy-max.

    Parameters
    ----------
    sensitivity : float
        Sensitivity ``Delta > 0`` of the utility under the neighbouring relation.
    monotone : bool, default False
        Set only when the utility is monotone under the relation (every
        candidate's utility moves the same way between neighbours); the noise
        scale then halves.  The module docstring gives the argument.

    Notes
    -----
    Privacy cost: in exact real arithmetic, one call to :meth:`select` on a row
    of utilities is ``epsilon``-DP for that row's data (``epsilon`` in (0, inf)).
    Rows computed on disjoint data compose in parallel; rows on the same data
    compose sequentially.  Sampled in floating point, as here, no DP claim is
    made (module docstring); the exact backend is
    :class:`edprf_core._exact_selection.ExactPermuteAndFlip`.
    """

    sensitivity: float
    monotone: bool = False

    def __post_init__(self) -> None:
        _check_sensitivity(self.sensitivity)

    def noise_scale(self, epsilon: ArrayLike) -> NDArray[np.float64]:
        """Scale of the exponential noise for budget ``epsilon`` in (0, inf)."""
        factor = 1.0 if self.monotone else 2.0
        return factor * self.sensitivity / np.asarray(epsilon, dtype=np.float64)

    def select(
        self,
        utilities: ArrayLike,
        epsilon: ArrayLike,
        rng: np.random.Generator,
        valid: ArrayLike | None = None,
    ) -> NDArray[np.intp]:
        """Select one candidate per row.

        Parameters
        ----------
        utilities : array of shape (..., m)
            Utility of each candidate; the last axis holds the candidates.
        epsilon : float or array broadcastable to ``utilities.shape[:-1]``
            Budget of each selection, each in (0, inf).
        rng : numpy.random.Generator
            Source of randomness (research runs; releases use the exact backend).
        valid : bool array broadcastable to ``utilities.shape``, optional
            Candidates that may be chosen.  The mask must not depend on the
            private data.  Rows with no valid candidate return -1.

        Returns
        -------
        ndarray of int, shape ``utilities.shape[:-1]``
            Index of the selected candidate in each row.
        """
        u, ok = _masked(utilities, valid)
        eps = _check_epsilons(epsilon, u.shape[:-1])
        scale = self.noise_scale(eps)[..., None]
        noise = rng.standard_exponential(size=u.shape) * scale
        return _argmax_or_minus_one(u + noise, ok)


@dataclass(frozen=True)
class ExponentialMechanism:
    """The exponential mechanism (McSherry & Talwar, 2007), Gumbel-max sampled.

    Selects ``r`` with probability proportional to ``exp(eps * u_r / (2 Delta))``
    (``exp(eps * u_r / Delta)`` when ``monotone``).  Privacy cost: in exact
    real arithmetic ``epsilon`` in (0, inf) per selection; sampled in floating
    point, as here, no DP claim (module docstring).  Used by the "tradition"
    baseline.
    """

    sensitivity: float
    monotone: bool = False

    def __post_init__(self) -> None:
        _check_sensitivity(self.sensitivity)

    def select(
        self,
        utilities: ArrayLike,
        epsilon: ArrayLike,
        rng: np.random.Generator,
        valid: ArrayLike | None = None,
    ) -> NDArray[np.intp]:
        """Select one candidate per row; same arguments as :meth:`PermuteAndFlip.select`."""
        u, ok = _masked(utilities, valid)
        eps = _check_epsilons(epsilon, u.shape[:-1])
        factor = 1.0 if self.monotone else 2.0
        logits = u * (eps / (factor * self.sensitivity))[..., None]
        return _argmax_or_minus_one(logits + rng.gumbel(size=u.shape), ok)

    def probabilities(self, utilities: ArrayLike, epsilon: float) -> NDArray[np.float64]:
        """Exact output distribution over a 1-D vector of utilities."""
        u = np.asarray(utilities, dtype=np.float64)
        factor = 1.0 if self.monotone else 2.0
        logits = check_epsilon(epsilon) * (u - u.max()) / (factor * self.sensitivity)
        w = np.exp(logits)
        return w / w.sum()


@dataclass(frozen=True)
class LaplaceMechanism:
    """Laplace noise of scale ``Delta / epsilon`` on each coordinate, in floating point (research only).

    ``sensitivity`` is the L1 sensitivity of the whole released vector.

    Privacy cost: in exact real arithmetic, ``epsilon`` in (0, inf) per call on
    one dataset.  Sampled in floating point, as here, it is NOT differentially
    private: which doubles ``value + noise`` can produce depends on ``value``,
    so some outputs are possible under one count and impossible under its
    neighbour (Mironov, CCS 2012; how often on small counts:
    ``benchmarks/results/design_figures.md``), an unbounded loss.  It serves only the paper's "tradition" baseline
    (``variant="tradition"``, ``leaf="label"``), whose guarantee text says NOT
    differentially private; releases use :func:`edprf_core.mechanisms.discrete_laplace_counts`.
    """

    sensitivity: float

    def __post_init__(self) -> None:
        _check_sensitivity(self.sensitivity)

    def randomise(self, values: ArrayLike, epsilon: ArrayLike, rng: np.random.Generator) -> NDArray[np.float64]:
        """Return ``values`` plus Laplace noise; ``epsilon`` in (0, inf) per row (last axis = vector)."""
        v = np.asarray(values, dtype=np.float64)
        eps = _check_epsilons(epsilon, v.shape[:-1] if v.ndim else ())
        scale = self.sensitivity / eps
        if v.ndim:
            scale = scale[..., None]
        return v + rng.laplace(0.0, 1.0, size=v.shape) * scale


def _flip_probabilities(
    u: NDArray[np.float64], epsilon: float, sensitivity: float, monotone: bool
) -> NDArray[np.float64]:
    factor = 1.0 if monotone else 2.0
    return np.exp(check_epsilon(epsilon) * (u - u.max()) / (factor * sensitivity))


def permute_and_flip_literal(
    utilities: ArrayLike,
    epsilon: float,
    sensitivity: float,
    rng: np.random.Generator,
    monotone: bool = False,
) -> int:
    """Textbook permute-and-flip on one vector of utilities (tests only).

    Visits the candidates in a uniformly random order and returns candidate
    ``r`` with probability ``exp(eps (u_r - u_max) / (2 Delta))``; repeats
    until one is returned (the maximiser always is).
    """
    u = np.asarray(utilities, dtype=np.float64)
    p = _flip_probabilities(u, epsilon, sensitivity, monotone)
    while True:
        for r in rng.permutation(u.size):
            if rng.random() < p[r]:
                return int(r)


def permute_and_flip_probabilities(
    utilities: ArrayLike, epsilon: float, sensitivity: float, monotone: bool = False
) -> NDArray[np.float64]:
    """Exact output distribution of permute-and-flip (see the module docstring)."""
    u = np.asarray(utilities, dtype=np.float64)
    p = _flip_probabilities(u, epsilon, sensitivity, monotone)
    out = np.empty_like(p)
    for r in range(p.size):
        poly = np.polynomial.Polynomial([1.0])
        for j in range(p.size):
            if j != r:
                poly = poly * np.polynomial.Polynomial([1.0, -p[j]])
        integral = poly.integ()
        out[r] = p[r] * (integral(1.0) - integral(0.0))
    return out / out.sum()
