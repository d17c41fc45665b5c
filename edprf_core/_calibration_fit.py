"""Calibration slope and intercept of a model's probabilities (logistic recalibration on logit(p)), with Wald
intervals, for the clinical report (:mod:`edprf_core._clinical_metrics`).

Privacy cost: none, and not DP: exact statistics of the caller's own rows.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._metric_intervals import _UNDEFINED, Z95, Estimate

__all__ = ["CALIBRATION_METHOD", "LOGIT_CLIP", "calibration_slope_intercept"]


LOGIT_CLIP = 1e-6
"""Probabilities are clipped to [LOGIT_CLIP, 1 - LOGIT_CLIP] before their logit (a 0 or 1 has none)."""


def _sigmoid(z: NDArray[np.float64]) -> NDArray[np.float64]:
    return 0.5 * (1.0 + np.tanh(0.5 * z))  # = 1 / (1 + exp(-z)), without overflow


def _logistic_fit(
    y: NDArray[np.float64], x: NDArray[np.float64], slope_free: bool
) -> tuple[NDArray[np.float64], NDArray[np.float64]] | None:
    """Maximum-likelihood logistic regression of ``y`` on ``a + b * x`` (``slope_free``) or ``a + x`` (offset, slope
    fixed at 1), by Newton's method with step halving; (coefficients, covariance = inverse information), or None
    when it does not converge (e.g. the classes are separated by ``x``)."""
    design = np.c_[np.ones_like(x), x] if slope_free else np.ones((x.size, 1))
    offset = np.zeros_like(x) if slope_free else x
    beta = np.array([0.0, 1.0]) if slope_free else np.zeros(1)

    def loglik(b: NDArray[np.float64]) -> float:
        eta = design @ b + offset
        return float(np.sum(y * eta - np.logaddexp(0.0, eta)))

    current = loglik(beta)
    for _ in range(100):
        mu = _sigmoid(design @ beta + offset)
        info = design.T @ (design * (mu * (1.0 - mu))[:, None])
        try:
            step = np.linalg.solve(info, design.T @ (y - mu))
        except np.linalg.LinAlgError:
            return None
        for _ in range(30):  # halve until the likelihood does not fall
            trial = loglik(beta + step)
            if trial >= current - 1e-12:
                break
            step = step / 2.0
        beta, current = beta + step, trial
        if np.max(np.abs(step)) < 1e-10:
            mu = _sigmoid(design @ beta + offset)
            info = design.T @ (design * (mu * (1.0 - mu))[:, None])
            try:
                return beta, np.linalg.inv(info)
            except np.linalg.LinAlgError:
                return None
    return None


CALIBRATION_METHOD = "logistic recalibration on logit(p), Wald"
"""How the calibration slope and intercept are computed (the ``method`` of their :class:`Estimate`)."""


def calibration_slope_intercept(positive: ArrayLike, probability: ArrayLike) -> tuple[Estimate, Estimate]:
    """Calibration slope and intercept of ``probability`` for the rows where ``positive`` is true, each with a
    95 % Wald interval.

    Slope: ``b`` of the logistic regression ``logit P(y) = a + b * logit(p)`` (1 when calibrated; above 1, the
    probabilities are too moderate, underconfident: the model's spread should be wider; below 1, too extreme).
    Intercept: calibration-in-the-large, ``a`` of ``logit P(y) = a + logit(p)`` with the slope fixed at 1 (0 when
    the mean risk is right; above 0, the risks are too low on average).  ``p`` is clipped to
    ``[LOGIT_CLIP, 1 - LOGIT_CLIP]``.  NaN when undefined (a class absent, fewer than 3 rows, or no convergence).

    Privacy cost: none, and not DP: exact statistics of the caller's own rows (as every figure of :func:`clinical_report`).
    """
    y = np.asarray(positive, dtype=bool).astype(np.float64)
    p = np.clip(np.asarray(probability, dtype=np.float64), LOGIT_CLIP, 1.0 - LOGIT_CLIP)
    undefined = Estimate(_UNDEFINED, _UNDEFINED, _UNDEFINED, CALIBRATION_METHOD)
    if y.size < 3 or y.min() == y.max():
        return undefined, undefined
    x = np.log(p) - np.log1p(-p)
    out = []
    for slope_free, which in ((True, 1), (False, 0)):
        fit = _logistic_fit(y, x, slope_free)
        if fit is None:
            out.append(Estimate(_UNDEFINED, _UNDEFINED, _UNDEFINED, CALIBRATION_METHOD + " (did not converge)"))
            continue
        beta, cov = fit
        value, se = float(beta[which]), math.sqrt(max(float(cov[which, which]), 0.0))
        out.append(Estimate(value, value - Z95 * se, value + Z95 * se, CALIBRATION_METHOD))
    return out[0], out[1]
