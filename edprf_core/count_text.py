"""Counts in words for messages: "1 tree", "3 trees", "1 entry", "2 entries"."""

from __future__ import annotations

__all__ = ["count_text"]


def count_text(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` followed by ``noun`` in the number English wants.

    Parameters
    ----------
    n : int
        The count.
    noun : str
        The singular noun, used when ``n`` is 1.
    plural : str, optional
        The plural noun, used otherwise (0 included); ``noun`` + "s" when not given.

    Returns
    -------
    str
        ``"1 tree"``, ``"3 trees"``; ``count_text(1, "entry", "entries") == "1 entry"``.
    """
    return f"{n} {noun if n == 1 else (plural if plural is not None else noun + 's')}"
