"""Output files readable by their owner only (mode 0600), whatever the umask.

``edprf predict -o`` writes a prediction for every row of DATA (a patient's, typically) and ``edprf evaluate
--json`` exact statistics of DATA: both are written as the other secrets the project writes are (private keys,
the SuperExec secret, a party's ledger), readable and writable by their owner only.  So does ``edprf budget
--release`` (the bytes a party released, its own record), the coordinator its model and report and ``edprf
simulate`` its workspace (copies of the input rows), through :mod:`protocol._owner_only`; a model exported or
copied by a command that takes its mode from the umask (``edprf export``) is the operator's to share.

This module stays light (the parser imports the commands that use it): :func:`open_owner_only` loads
:func:`protocol.open_owner_only` when a command first writes.
"""

from __future__ import annotations

from pathlib import Path
from typing import IO, Literal, overload

__all__ = ["OWNER_ONLY", "open_owner_only"]

OWNER_ONLY = 0o600
"""The mode of the files :func:`open_owner_only` writes (:data:`protocol.OWNER_ONLY_FILE`)."""


@overload
def open_owner_only(path: str | Path, binary: Literal[False] = False) -> IO[str]: ...
@overload
def open_owner_only(path: str | Path, binary: Literal[True]) -> IO[bytes]: ...


def open_owner_only(path: str | Path, binary: bool = False) -> IO[str] | IO[bytes]:
    """``path`` opened for writing, empty, with mode 0600: :func:`protocol.open_owner_only`.

    Raises
    ------
    OSError
        With ``path`` as its file name: the file cannot be created, opened or given mode 0600, or is a symbolic
        link.
    """
    from protocol import open_owner_only as open_in_protocol  # numpy and the rest: loaded only when writing

    return open_in_protocol(path, True) if binary else open_in_protocol(path)
