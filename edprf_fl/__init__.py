"""edprf-fl's application layer: the ``edprf`` command line and the simulation of a federation.

The algorithm (:mod:`edprf_core`), the wire format (:mod:`protocol`), the party (:mod:`client`) and the
coordinator (:mod:`server`) are the four top-level packages; everything else lives under this one name:

- :mod:`edprf_fl.cli`: the ``edprf`` command, a thin layer over the packages;
- :mod:`edprf_fl.simulation`: a whole federation on one machine, typed settings in and a report out
  (workspaces, partitions, engines, baselines, sweeps).

Both stop on Ctrl-C (and the command on SIGTERM and SIGHUP) through :func:`remembered_interrupts`,
:func:`record_interrupt` and :func:`raise_if_interrupted`, and both keep Flower's usage telemetry off
(:func:`keep_flower_telemetry_off`); Flower's log lines are coloured on a terminal only
(:func:`colour_flower_logs_on_terminals_only`, :func:`without_colour`).  What they write records the code and the
command that made it (:class:`Provenance`: the version from the source, its git revision, the command line).
A party's app-pinning launcher ships here too: :func:`pinned_launcher_text` gives it for ``edprf party install-pin``.
A command that writes a directory holds it while it runs (:func:`hold_directory`): a second one of the same kind
there (another ``consortium --dir``; a ``sweep`` or ``sweep-report``; a ``simulate`` or ``demo``) is refused.
"""

from ._directory_lock import hold_directory
from ._flower_colour import colour_flower_logs_on_terminals_only, is_terminal, without_colour
from ._flower_telemetry import FLOWER_QUIET_ENVIRONMENT, keep_flower_telemetry_off, quiet_flwr
from ._interrupts import (
    interrupt_behind,
    raise_if_interrupted,
    record_interrupt,
    recorded_interrupt,
    remembered_interrupts,
)
from ._pin_launcher import pinned_launcher_text
from ._provenance import Provenance, git_describe, git_problem, source_version

__all__ = [
    "FLOWER_QUIET_ENVIRONMENT",
    "Provenance",
    "colour_flower_logs_on_terminals_only",
    "git_describe",
    "git_problem",
    "hold_directory",
    "interrupt_behind",
    "is_terminal",
    "keep_flower_telemetry_off",
    "pinned_launcher_text",
    "quiet_flwr",
    "raise_if_interrupted",
    "record_interrupt",
    "recorded_interrupt",
    "remembered_interrupts",
    "source_version",
    "without_colour",
]
