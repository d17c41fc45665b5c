#!/usr/bin/env python
"""Start-up time of the ``edprf`` command: ``edprf --help`` and ``edprf simulate --help`` against ``python -c pass``.

Each round runs the three commands in turn, each as a fresh process of this interpreter (``python -m
edprf_fl.cli`` is what the ``edprf`` script runs), so the per-round ratio to a bare interpreter holds while
the shared machine's speed drifts.  Reported: the median, minimum and maximum wall time and the median CPU
time (user + system) of each command, and the median of the per-round ratios.  The children write their
compiled bytecode to a temporary cache (as an installed package has it) and one warm-up round fills it.

    python benchmarks/bench_cli_startup.py                 # 21 rounds, about 10 s
    python benchmarks/bench_cli_startup.py --checkout DIR  # the code of another checkout (printed, not written)

Writes ``results/cli_startup.md``.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _bench_common import RESULTS_DIR, cpu_info

REPO = Path(__file__).resolve().parent.parent
BASELINE = "python -c pass"
COMMANDS = {
    BASELINE: ["-c", "pass"],
    "edprf --help": ["-m", "edprf_fl.cli", "--help"],
    "edprf simulate --help": ["-m", "edprf_fl.cli", "simulate", "--help"],
}
"""What is timed: the label shown and the interpreter's arguments."""
Seconds = dict[str, list[float]]
"""One figure of every round, by command label."""


def _child_env(checkout: Path, cache: Path) -> dict[str, str]:
    """The environment of the timed processes: ``checkout`` first on the path, bytecode cached in ``cache``."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = os.pathsep.join([str(checkout), *filter(None, [os.environ.get("PYTHONPATH")])])
    env["PYTHONPYCACHEPREFIX"] = str(cache)
    return env


def _timed(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """(wall, CPU) seconds of one run of ``python argv``; a failed run stops the benchmark."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run(
        [sys.executable, *argv], cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False
    )
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"python {' '.join(argv)} failed:\n{done.stderr.decode(errors='replace')[-2000:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def measure(checkout: Path, rounds: int) -> tuple[Seconds, Seconds, Seconds]:
    """Wall times, CPU times and per-round ratios to the bare interpreter, by command label."""
    walls: Seconds = {label: [] for label in COMMANDS}
    cpus: Seconds = {label: [] for label in COMMANDS}
    ratios: Seconds = {label: [] for label in COMMANDS if label != BASELINE}
    with tempfile.TemporaryDirectory(prefix="edprf-pycache-") as cache, tempfile.TemporaryDirectory() as cwd:
        env = _child_env(checkout, Path(cache))
        for k in range(-1, rounds):  # round -1: warm-up (bytecode cache, file caches), not counted
            pair = {label: _timed(argv, env, Path(cwd)) for label, argv in COMMANDS.items()}
            if k < 0:
                continue
            for label, (wall, cpu) in pair.items():
                walls[label].append(wall)
                cpus[label].append(cpu)
            for label, round_ratios in ratios.items():
                round_ratios.append(pair[label][0] / pair[BASELINE][0])
    return walls, cpus, ratios


def report(walls: Seconds, cpus: Seconds, ratios: Seconds, command: str) -> str:
    """The Markdown page: one row per command."""
    med = statistics.median
    lines = [
        "# Start-up of the `edprf` command",
        "",
        (
            f"Command: `{command}`. Each round runs the commands below in turn, each a fresh process of the "
            f"project's Python (`python -m edprf_fl.cli` is what the `edprf` script runs), bytecode cached; "
            f"medians over {len(walls[BASELINE])} rounds after one warm-up round. {cpu_info()}; load average "
            f"(1 / 5 / 15 min) at the end: {' / '.join(f'{x:.1f}' for x in os.getloadavg())}."
        ),
        "",
        "| command | wall, median (s) | wall, min – max (s) | CPU user + sys, median (s) | wall / `python -c pass`, median of rounds |",
        "|---|---|---|---|---|",
    ]
    for label in COMMANDS:
        ratio = f"{med(ratios[label]):.2f}" if label in ratios else "1"
        lines.append(
            f"| `{label}` | {med(walls[label]):.3f} | {min(walls[label]):.3f} – {max(walls[label]):.3f} | "
            f"{med(cpus[label]):.3f} | {ratio} |"
        )
    lines += [
        "",
        (
            "A command's time above the bare interpreter's is the imports of `edprf_fl.cli` and of every "
            "subcommand's module and the building of the parser; tests/federation/test_cli_startup.py checks that "
            "none of pandas, numpy, pyarrow, scikit-learn or Flower is among those imports."
        ),
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=21, help="counted rounds (default: %(default)s)")
    parser.add_argument(
        "--checkout",
        type=Path,
        default=None,
        help="time the code of this checkout instead (e.g. a worktree of an older commit); nothing is written",
    )
    args = parser.parse_args()
    checkout = (args.checkout or REPO).resolve()
    walls, cpus, ratios = measure(checkout, args.rounds)
    command = f"python benchmarks/bench_cli_startup.py --rounds {args.rounds}"
    text = report(walls, cpus, ratios, command + (f" --checkout {checkout}" if args.checkout else ""))
    if args.checkout is None:
        (RESULTS_DIR / "cli_startup.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
