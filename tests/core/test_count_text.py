"""Counts in words: the one helper the packages' messages use for "1 tree" and "3 trees"."""

from __future__ import annotations

from edprf_core.count_text import count_text


def test_one_is_singular_and_every_other_count_plural():
    assert count_text(1, "tree") == "1 tree"
    assert count_text(3, "tree") == "3 trees"
    assert count_text(0, "row") == "0 rows"


def test_an_irregular_plural_is_given():
    assert count_text(1, "entry", "entries") == "1 entry"
    assert count_text(2, "entry", "entries") == "2 entries"
    assert count_text(1, "party's", "parties'") == "1 party's"
