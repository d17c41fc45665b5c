"""How many parties, in words for the simulation's output ("1 party", "5 parties")."""

from __future__ import annotations

__all__ = ["party_count"]


def party_count(n: int, noun: str = "party", plural: str = "parties") -> str:
    """``n`` with ``noun`` or ``plural`` as English wants it: ``party_count(1) == "1 party"``."""
    return f"{n} {noun if n == 1 else plural}"
