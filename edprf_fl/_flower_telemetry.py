"""Flower's usage telemetry and update check, off wherever this package runs Flower in its own process.

Flower sends usage events (an event name, a random source id kept in ``~/.flwr/source``, the platform) to
``telemetry.flower.ai`` unless ``FLWR_TELEMETRY_ENABLED=0``, a variable it reads once, when its telemetry module is
imported.  Flower 1.41 also checks for a newer release (``flwr/supercore/update_check.py``): ``flower-superlink``,
``flower-supernode``, ``flower-superexec`` and every interactive ``flwr`` command post the flwr version, the Python
version, the operating system, its kernel release and the process name to ``api.flower.ai`` unless
``FLWR_DISABLE_UPDATE_CHECK=1``, a variable it reads each time it checks (review rev-pkg P1).  No data of a party
is in either, but a hospital's network should not see a connection it did not ask for: the ``edprf`` command and
the simulation turn both off unless the user set the variable, and the Flower processes they start inherit them.
The Flower processes ``edprf consortium`` starts get both in their environment; a hand deployment sets them itself
(``deploy/README.md``, section 1).
"""

from __future__ import annotations

import os
import sys

__all__ = ["FLOWER_QUIET_ENVIRONMENT", "keep_flower_telemetry_off", "quiet_flwr"]

TELEMETRY_VARIABLE = "FLWR_TELEMETRY_ENABLED"
UPDATE_CHECK_VARIABLE = "FLWR_DISABLE_UPDATE_CHECK"
FLOWER_QUIET_ENVIRONMENT: dict[str, str] = {TELEMETRY_VARIABLE: "0", UPDATE_CHECK_VARIABLE: "1"}
"""The two variables and the values that keep Flower from phoning out (telemetry off, update check off)."""


def keep_flower_telemetry_off() -> None:
    """Set ``FLWR_TELEMETRY_ENABLED=0`` and ``FLWR_DISABLE_UPDATE_CHECK=1`` unless the user set them, and tell a
    Flower already imported (its telemetry module read its variable on import; the update check reads its own at
    each check, so it needs no telling).  Idempotent; call it before Flower is imported or used in this process,
    and before it starts a Flower process (which inherits the environment)."""
    for variable, value in FLOWER_QUIET_ENVIRONMENT.items():
        os.environ.setdefault(variable, value)
    telemetry = sys.modules.get("flwr.supercore.telemetry")
    if telemetry is not None and os.environ[TELEMETRY_VARIABLE] == "0":
        telemetry.FLWR_TELEMETRY_ENABLED = "0"


def quiet_flwr(arguments: str) -> str:
    """A ``flwr`` command line for a user to copy, its environment keeping Flower from phoning out:
    ``quiet_flwr("stop 7 consortium")`` is ``FLWR_TELEMETRY_ENABLED=0 FLWR_DISABLE_UPDATE_CHECK=1 flwr stop 7
    consortium`` (review rev-pkg2 R6: run from a shell without the runbook's exports, the printed hint asked
    api.flower.ai for a newer release)."""
    quiet = " ".join(f"{name}={value}" for name, value in FLOWER_QUIET_ENVIRONMENT.items())
    return f"{quiet} flwr {arguments}"
