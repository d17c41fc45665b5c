"""The lifetime cap a ledger last recorded, and a cap given now that differs from it.

A party records its policy's cap in its ledger each time it opens it, with a trail line per change (time, old and
new cap).  A policy edited since then is not in the ledger until the party next opens it: ``edprf budget`` and
``edprf party check`` both say so (review rev-dpo D9: the check said nothing about a raised cap until then).
Privacy cost: none (the ledger's own record, shown to the party's operator).
"""

from __future__ import annotations

import re
from fractions import Fraction
from typing import Literal

from ._ledger import format_epsilon

__all__ = ["pending_cap_change_text", "recorded_cap"]


def recorded_cap(recorded: str | None) -> Fraction | Literal["inf"] | None:
    """The cap the ledger last recorded (its ``ledger_meta`` text): ``"inf"`` (no cap), an exact positive fraction,
    or None (none recorded, or not one of the ledger's own forms: the text is untrusted, at most 40 characters of
    ``\\d+(/[1-9]\\d*)?`` are read)."""
    if recorded == "inf":
        return "inf"
    if recorded is None or len(recorded) > 40 or not re.fullmatch(r"\d+(/[1-9]\d*)?", recorded):
        return None
    value = Fraction(recorded)
    return value if value > 0 else None


def pending_cap_change_text(last_cap: Fraction | Literal["inf"] | None, cap_exact: Fraction | None) -> str | None:
    """A line when the cap given now (``cap_exact``, the policy's) differs from ``last_cap``, the one the ledger last
    recorded (:func:`recorded_cap`: a policy edited since the party last opened its ledger), else None."""
    if cap_exact is None or last_cap is None or last_cap == cap_exact:
        return None
    last = "no cap" if last_cap == "inf" else format_epsilon(last_cap)
    return (
        f"the cap shown ({format_epsilon(cap_exact)}) is not the one the ledger last recorded "
        f"({last}): the party records the change, with the time it does, when it next opens its ledger"
    )
