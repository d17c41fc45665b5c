#!/usr/bin/env python
"""Speed of a simulated federation (issue 12): the in-process engine against Flower's Ray engine.

Each repeat runs the whole command a user types, ``edprf simulate`` on the embedded data (5 parties,
the defaults, baselines included), once per engine in turn (in-process, ray, in-process, ...), as a
fresh process, and reads where the time went from the run's ``simulation.json``.  Reported: the median
end-to-end wall time per engine, the median of the per-pair ratios in-process / ray (pairs run back to
back, so the ratio holds while the machine's speed drifts), and the median of each phase.

    python benchmarks/bench_simulation_speed.py --repeats 5            # about 2 min
    python benchmarks/bench_simulation_speed.py --repeats 3 --sweep    # also an 8-point sweep per engine

Writes ``results/simulation_speed.md``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _bench_common import RESULTS_DIR

EDPRF = Path(sys.executable).parent / "edprf"
ENGINES = ("in-process", "ray")
PHASES = (
    ("prepare_s", "preparing the parties' files"),
    ("federation_s", "federation (engine + rounds)"),
    ("coordinator_train_round_s", "  of which: train round"),
    ("coordinator_evaluation_round_s", "  of which: evaluation round"),
    ("baselines_s", "baselines"),
)
SWEEP = ("--epsilons", "0.5,1", "--parties-list", "2,5", "--seeds", "2")


def _run(cmd: list[str]) -> float:
    t0 = time.perf_counter()
    done = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=False)
    elapsed = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{done.stderr[-2000:]}")
    return elapsed


def _simulate(engine: str, work: Path, k: int) -> tuple[float, dict]:
    out = work / f"{engine}-{k}"
    wall = _run([str(EDPRF), "simulate", "--engine", engine, "--output", str(out)])
    return wall, json.loads((out / "simulation.json").read_text())["timings"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--sweep", action="store_true", help="also time an 8-point sweep once per engine and repeat")
    args = parser.parse_args()
    walls = {e: [] for e in ENGINES}
    phases = {e: {} for e in ENGINES}
    ratios = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        _simulate("in-process", work, -1)  # warm-up: file caches, compiled bytecode
        for k in range(args.repeats):
            pair = {}
            for engine in ENGINES:
                wall, timings = _simulate(engine, work, k)
                pair[engine] = wall
                walls[engine].append(wall)
                for key, value in timings.items():
                    phases[engine].setdefault(key, []).append(value)
            ratios.append(pair["in-process"] / pair["ray"])
            print(
                f"repeat {k + 1}/{args.repeats}: in-process {pair['in-process']:.1f} s, ray {pair['ray']:.1f} s",
                file=sys.stderr,
            )
        sweeps = {e: [] for e in ENGINES}
        if args.sweep:
            for k in range(args.repeats):
                for engine in ENGINES:
                    sweeps[engine].append(
                        _run(
                            [
                                str(EDPRF),
                                "sweep",
                                *SWEEP,
                                "--engine",
                                engine,
                                "--output",
                                str(work / f"sweep-{engine}-{k}"),
                            ]
                        )
                    )
    med = statistics.median
    lines = [
        "# Simulation speed (issue 12)",
        "",
        (
            f"Command: `python benchmarks/bench_simulation_speed.py --repeats {args.repeats}"
            f"{' --sweep' if args.sweep else ''}`. `edprf simulate` on the embedded wall robot data, 5 parties, "
            "defaults (baselines included), each run a fresh process; engines alternate; medians over "
            f"{args.repeats} repeats."
        ),
        "",
        "| | in-process | ray |",
        "|---|---|---|",
        f"| end to end (wall, s) | {med(walls['in-process']):.1f} | {med(walls['ray']):.1f} |",
    ]
    for key, label in PHASES:
        cells = [f"{med(phases[e][key]):.2f}" if phases[e].get(key) else "–" for e in ENGINES]
        lines.append(f"| {label} (s) | " + " | ".join(cells) + " |")
    if args.sweep:
        lines.append(
            f"| sweep of 8 points, `edprf sweep {' '.join(SWEEP)}` (wall, s) | "
            f"{med(sweeps['in-process']):.1f} | {med(sweeps['ray']):.1f} |"
        )
    lines += [
        "",
        (
            f"Ratio in-process / ray, end to end, median of pairs: {med(ratios):.2f} "
            f"(min {min(ratios):.2f}, max {max(ratios):.2f})."
        ),
        "The rest of the end-to-end time is Python start-up, imports, the plot and the summary.",
        (
            "Preparing the parties' files includes the first import of scikit-learn's model_selection, and with it "
            "scipy.stats (about 0.5 s), since the coordinator no longer imports scipy.stats itself: that import moved "
            "into this row, it was not added."
        ),
    ]
    text = "\n".join(lines) + "\n"
    (RESULTS_DIR / "simulation_speed.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
