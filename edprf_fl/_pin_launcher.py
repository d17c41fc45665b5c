"""The app-pinning launcher a party installs as its ``flwr-clientapp`` (``edprf party install-pin``).

The launcher is ``_pinned_clientapp.py`` in this package: a program that nothing imports (it runs in the ClientApp
process before the app bundle's modules are imported).  It ships in every installation, the wheel's included
(review rev-pkg P2: a wheel or source-release install had no launcher, and the easy path was an unpinned party).
"""

from __future__ import annotations

from importlib import resources

__all__ = ["pinned_launcher_text"]

LAUNCHER_FILE = "_pinned_clientapp.py"
"""The launcher's file in the ``edprf_fl`` package."""


def pinned_launcher_text(interpreter: str) -> str:
    """The app-pinning launcher's source, with ``#!interpreter`` as its first line.

    Parameters
    ----------
    interpreter : str
        The absolute path of the Python that is to run it: the one of the virtualenv that holds Flower
        (``sys.executable`` of ``edprf``), so that it imports the same ``flwr`` as the SuperNode.

    Returns
    -------
    str
        The program to write as ``flwr-clientapp``: the launcher's text below its own first line
        (``#!/usr/bin/env python3``, which would take the first ``python3`` on the PATH) after the new one.

    Raises
    ------
    ValueError
        ``interpreter`` is not an absolute path, or holds white space or a line break (a ``#!`` line cannot
        name such a path).
    """
    if not interpreter.startswith("/") or any(c.isspace() for c in interpreter):
        raise ValueError(
            f"the launcher's first line would name {interpreter!r}, which a '#!' line cannot hold (an absolute path "
            "without spaces): run edprf from a virtualenv at such a path"
        )
    source = resources.files(__package__).joinpath(LAUNCHER_FILE).read_text(encoding="utf-8")
    return f"#!{interpreter}\n{source.split(chr(10), 1)[1]}"
