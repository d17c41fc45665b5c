"""Whether the party's ClientApp runs under its app pin, said in the party's own log (review rev-pkg P2).

A SuperNode started without the app pin (``edprf party install-pin``, deploy/README.md section 6) runs every app
bundle the coordinator submits, next to the party's data; nothing said so.  The ClientApp cannot see the
SuperNode's command line or environment, but the pin's launcher runs in the ClientApp's own process before the app
is imported, and sets :data:`APP_PIN_MARKER` there (to its list of approved bundles).  When the marker is absent,
the lifespan hook logs one WARNING per ClientApp process.

Privacy: the warning goes to the party's log only; no reply, no query answer and no refusal changes, so the
coordinator is not told which parties are pinned.  Simulated parties (located by the run config's ``sim-dir``, not
by a ``data-path``) run the local code, not a submitted bundle: nothing is said for them.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import Any

__all__ = ["APP_PIN_MARKER", "UNPINNED_WARNING", "warn_if_unpinned"]

APP_PIN_MARKER = "EDPRF_APP_PINNED"
"""Set by the app-pinning launcher (``edprf_fl/_pinned_clientapp.py``, ``PINNED_MARKER``) in the ClientApp process."""

UNPINNED_WARNING = (
    "this party runs every app bundle the coordinator submits, next to its data (no app pin: "
    f"{APP_PIN_MARKER} is not set in the ClientApp's process): install the pin before serving real data, "
    "`edprf party install-pin DIR` (deploy/README.md section 6); a launcher installed before 0.2.13 does not set "
    "it, and may pin all the same: reinstall it, `edprf party install-pin DIR --force` (section 11, step 2)"
)

_said = False
"""Whether this process has said it (one ClientApp process per message in a deployment: once per message)."""


def warn_if_unpinned(node_config: Mapping[str, Any], logger: logging.Logger | None = None) -> bool:
    """Log :data:`UNPINNED_WARNING` at WARNING, once per process, when a deployed party's ClientApp runs without
    the app pin's marker.

    Parameters
    ----------
    node_config : mapping
        The SuperNode's node config: a deployed party's names its ``data-path`` (a simulated party's does not, and
        is never warned about).
    logger : logging.Logger, optional
        Where to say it (default: ``edprf.party``).

    Returns
    -------
    bool
        Whether it was said now.
    """
    global _said
    if _said or "data-path" not in node_config or os.environ.get(APP_PIN_MARKER):
        return False
    _said = True
    (logger or logging.getLogger("edprf.party")).warning("%s", UNPINNED_WARNING)
    return True
