"""The share of DATA's rows ``edprf evaluate`` may leave out before it calls its metrics a subset's.

A module of its own, importing nothing: the command's parser reads it to print its help, and building the parser
must not import numpy or pandas (``tests/federation/test_cli_startup.py``)."""

from __future__ import annotations

__all__ = ["SUBSET_SHARE"]

SUBSET_SHARE = 0.05
"""Above this share of DATA's rows left out (for any reason), or with any undeclared label, ``evaluate`` prints a
banner above the report and exits with its subset status unless ``--allow-subset``."""
