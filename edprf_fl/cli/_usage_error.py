"""A command line that names something that is not there: ``edprf`` exits 2 for it, as argparse does."""

from __future__ import annotations

from edprf_core import EDPRFError

__all__ = ["UsageError"]


class UsageError(EDPRFError, ValueError):
    """A command line that names something that is not there (``edprf sweep --resume DIR`` of a missing directory):
    said as an error, and ``edprf`` exits 2 as argparse does for a wrong argument, not 1 as for a failure.

    ``edprf``'s entry point reads :attr:`edprf_exit_status` rather than importing this class: the parser does not
    import ``edprf_core`` (``tests/federation/test_cli_startup.py``).
    """

    edprf_exit_status = 2
