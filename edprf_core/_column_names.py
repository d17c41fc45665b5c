"""A suggestion for a misspelled column name: ``Age`` in the file where the schema declares ``age``.

Standard library only: the ``edprf`` command uses it before any heavy import.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

__all__ = ["closest_name", "misspelling_hint"]


def closest_name(name: str, candidates: Iterable[str]) -> str | None:
    """The candidate ``name`` most likely misspells: one equal to it but for case first, else the closest
    by :func:`difflib.get_close_matches` (compared without case); None when none is close."""
    others = [c for c in candidates if c != name]
    folded = name.casefold()
    for c in others:
        if c.casefold() == folded:
            return c
    by_fold: dict[str, str] = {}
    for c in others:
        by_fold.setdefault(c.casefold(), c)
    close = difflib.get_close_matches(folded, list(by_fold), n=1)
    return by_fold[close[0]] if close else None


def misspelling_hint(names: Iterable[str], candidates: Iterable[str], owner: str) -> str:
    """``"; the header's 'Age': did you mean 'age'?"`` for each of ``names`` (columns found but not expected,
    of ``owner``: "the header", "X") close to one of ``candidates`` (expected but not found); ``""`` when none is.

    Each candidate is suggested once, for the closest name first in ``names``' order.
    """
    left = list(dict.fromkeys(candidates))
    parts = []
    for name in names:
        match = closest_name(name, left)
        if match is not None:
            parts.append(f"{owner}'s {name!r}: did you mean {match!r}?")
            left.remove(match)
    return "".join(f"; {p}" for p in parts)
