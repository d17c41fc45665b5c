"""Something another process holds right now: ``edprf`` exits 75 (``EX_TEMPFAIL``), retry later."""

from __future__ import annotations

from edprf_core import EDPRFError

from ._exit_text import BUSY_STATUS

__all__ = ["BUSY_STATUS", "DirectoryBusy"]


class DirectoryBusy(EDPRFError, ValueError):
    """A directory another ``edprf`` command holds (``edprf consortium --dir`` of a consortium that runs): said as an
    error, and ``edprf`` exits :data:`BUSY_STATUS`, not 1, so that a script can retry (review: a busy ``--dir``
    exited 1 while ``edprf budget``'s busy ledger exits 75).

    ``edprf``'s entry point reads :attr:`edprf_exit_status` rather than importing this class.
    """

    edprf_exit_status = BUSY_STATUS
