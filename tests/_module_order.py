"""The order test modules run in: the longest first, so two xdist workers finish together.

``./test.sh`` runs pytest with ``--dist loadfile --no-loadscope-reorder``: each worker takes a whole module, the next
one in collection order whenever it is nearly done.  With the modules ordered by their measured seconds, longest first,
that is longest-processing-time list scheduling.  In alphabetical order a worker sat idle at the end of the run while
the other finished a long module: 413 of 4870 worker-seconds idle (collection included) in one run, against 281 of
4244 with this order (stop 70's runs, on differently loaded hosts: the saving is about a minute, not more).

The seconds are a test run's own figures (``module_seconds.txt``, written by ``python -m tests._module_order LOG``
from the output of ``./test.sh -q --durations=0``).  A module missing from the file (a new one) is estimated from its
markers.  The order only changes how long the run takes, never what a test sees (each test keeps its own processes,
ports and files, whichever worker runs it).
"""

from __future__ import annotations

import re
import sys
from collections import Counter
from pathlib import Path

import pytest

SECONDS_FILE = Path(__file__).with_name("module_seconds.txt")

MARKER_SECONDS = {"deployment": 40.0, "ray": 35.0, "slow": 1.0}
"""Seconds of one test of a module the file does not list, by its heaviest marker (else 0.4): means of a run."""

_DURATION = re.compile(r"^([0-9.]+)s (?:call|setup|teardown)\s+(\S+?)::")


def module_seconds(path: Path = SECONDS_FILE) -> dict[str, float]:
    """``{module path relative to the repository: seconds}`` of ``path`` (empty when it is missing)."""
    if not path.is_file():
        return {}
    seconds = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            value, module = line.split(maxsplit=1)
            seconds[module.strip()] = float(value)
    return seconds


def _estimate(item: pytest.Item) -> float:
    return next((s for name, s in MARKER_SECONDS.items() if item.get_closest_marker(name)), 0.4)


def order_longest_first(items: list[pytest.Item], seconds: dict[str, float]) -> None:
    """Reorder ``items`` in place: modules by their seconds, longest first; each module's tests stay together, in
    their own order (module-scoped fixtures are set up once)."""
    modules: dict[str, list[pytest.Item]] = {}
    for item in items:
        modules.setdefault(item.nodeid.split("::")[0], []).append(item)
    weight = {m: seconds.get(m, sum(_estimate(i) for i in its)) for m, its in modules.items()}
    order = sorted(modules, key=lambda m: -weight[m])  # stable: ties keep collection order
    items[:] = [item for m in order for item in modules[m]]


def durations_to_seconds(log: str) -> Counter[str]:
    """Seconds per module in the output of ``pytest --durations=0`` (setup, call and teardown)."""
    seconds: Counter[str] = Counter()
    for line in log.splitlines():
        match = _DURATION.match(line)
        if match:
            seconds[match.group(2)] += float(match.group(1))
    return seconds


def main(argv: list[str]) -> int:
    """``python -m tests._module_order LOG``: rewrite ``module_seconds.txt`` from a ``--durations=0`` log."""
    if len(argv) != 1:
        print("usage: python -m tests._module_order LOG  (the output of ./test.sh -q --durations=0)", file=sys.stderr)
        return 2
    seconds = durations_to_seconds(Path(argv[0]).read_text(encoding="utf-8", errors="replace"))
    if not seconds:
        print(f"{argv[0]}: no durations (run pytest with --durations=0)", file=sys.stderr)
        return 1
    lines = [f"{s:8.1f} {m}" for m, s in seconds.most_common() if s >= 1.0]
    header = "# seconds per test module of one run, longest first (tests/_module_order.py; regenerate from a log)\n"
    SECONDS_FILE.write_text(header + "\n".join(lines) + "\n", encoding="utf-8")
    print(f"{SECONDS_FILE}: {len(lines)} modules", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
