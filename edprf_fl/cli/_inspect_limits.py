"""The error of ``edprf inspect`` for a file beyond its size limits.

Its own module so that ``_inspect`` (registered at every start of ``edprf``) need not import
the core: this one is imported only when a file is inspected.
"""

from __future__ import annotations

from edprf_core import EDPRFError

__all__ = ["BeyondLimits"]


class BeyondLimits(EDPRFError):
    """A file whose declared sizes are beyond inspect's limits: refused before decoding."""
