"""Flower's usage telemetry, off wherever this package runs Flower in its own process.

Flower sends usage events (an event name, a random source id kept in ``~/.flwr/source``, the platform) to
``telemetry.flower.ai`` unless ``FLWR_TELEMETRY_ENABLED=0``, a variable it reads once, when its telemetry module is
imported.  No data of a party is in them, but a hospital's network should not see a connection it did not ask
for: the ``edprf`` command and the simulation turn it off unless the user set the variable.  The Flower processes
``edprf consortium`` starts get it in their environment; a hand deployment sets it itself (``deploy/README.md``).
"""

from __future__ import annotations

import os
import sys

__all__ = ["keep_flower_telemetry_off"]

TELEMETRY_VARIABLE = "FLWR_TELEMETRY_ENABLED"


def keep_flower_telemetry_off() -> None:
    """Set ``FLWR_TELEMETRY_ENABLED=0`` unless the user set it, and tell a Flower already imported (it read the
    variable on import).  Idempotent; call it before Flower is imported or used in this process."""
    os.environ.setdefault(TELEMETRY_VARIABLE, "0")
    telemetry = sys.modules.get("flwr.supercore.telemetry")
    if telemetry is not None and os.environ[TELEMETRY_VARIABLE] == "0":
        telemetry.FLWR_TELEMETRY_ENABLED = "0"
