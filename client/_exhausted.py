"""The one rule for an exhausted budget: the party can serve no request that spends ε.

``edprf budget`` (exit 4, ``exhausted``) and ``edprf party check`` (the ``budget_exhausted`` problem) both decide
it here, so that they cannot disagree on a ledger (review rev-auto A6: the rule was written twice).  Privacy: a
comparison of two public figures of the party's own ledger and policy; nothing is released.
"""

from __future__ import annotations

from fractions import Fraction

__all__ = ["budget_exhausted"]


def budget_exhausted(remaining: Fraction, min_epsilon: Fraction | None) -> bool:
    """Whether a party with ``remaining`` ε left refuses every new request that spends ε (``budget_exhausted``).

    Parameters
    ----------
    remaining : Fraction
        What is left of the lifetime cap, exact (never below 0).
    min_epsilon : Fraction or None
        The policy's ``min-epsilon``, exact: the smallest ε a request may ask for; ``None`` when the policy is not
        known (then only nothing left counts as exhausted).

    Returns
    -------
    bool
        True when nothing is left, or less than ``min_epsilon``: no request the party admits can be served.
    """
    return remaining <= 0 or (min_epsilon is not None and remaining < min_epsilon)
