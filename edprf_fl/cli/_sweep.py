"""``edprf sweep``: simulated federations over a grid, with several seeds.

The runs and the table come from :mod:`edprf_fl.simulation`; this module reads the options and writes the files.
"""

from __future__ import annotations

import argparse
import csv
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from ._simulation_args import add_federation_arguments, flag_of

if TYPE_CHECKING:
    from edprf_fl.simulation import SimulationSettings

__all__ = ["register"]


def _list_of(kind: type, what: str):
    def parse(text: str) -> list:
        items = [v.strip() for v in text.split(",") if v.strip()]
        try:
            values = [kind(v) for v in items]
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a comma-separated list of {what}, got {text!r}") from None
        if not values:
            raise argparse.ArgumentTypeError(f"expected at least one value, got {text!r}")
        if kind is not str and any(v <= 0 for v in values):
            raise argparse.ArgumentTypeError(f"expected positive values, got {text!r}")
        return values

    parse.__name__ = f"list of {what}"
    return parse


_floats = _list_of(float, "numbers")
_ints = _list_of(int, "integers")
_words = _list_of(str, "names")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("sweep", help="simulated federations over a grid of epsilon, parties, skew, depth and trees")
    add_federation_arguments(p)
    p.add_argument(
        "--epsilons",
        type=_floats,
        default=[0.25, 0.5, 1.0, 2.0],
        help="comma-separated epsilons of the parties' releases (default: 0.25,0.5,1,2)",
    )
    p.add_argument(
        "--parties-list", type=_ints, default=None, help="comma-separated list of party counts (default: --parties)"
    )
    p.add_argument("--partitions", type=_words, default=["iid"], help="comma-separated: iid,dirichlet")
    p.add_argument("--max-depths", type=_ints, default=None, help="comma-separated (default: --max-depth)")
    p.add_argument("--n-trees-list", type=_ints, default=None, help="trees per party, comma-separated")
    p.add_argument("--seeds", type=int, default=3, help="seeds per configuration (default: %(default)s)")
    p.add_argument("--output", default=None, help="directory for sweep.csv, sweep.md and plots")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from edprf_fl.simulation import SettingsError

    from ._simulation_args import settings_from_args

    base = settings_from_args(args)
    try:
        return _sweep(base, args)
    except SettingsError as exc:  # a grid value out of range, or found in the data: named by its flag
        raise ValueError(exc.describe(lambda name: _LIST_FLAGS.get(name) or flag_of(name))) from None


_LIST_FLAGS = {
    "epsilon": "--epsilons",
    "parties": "--parties-list",
    "partition": "--partitions",
    "max_depth": "--max-depths",
    "n_trees": "--n-trees-list",
}
"""Settings the sweep takes as lists, and the flags of those lists."""


def _sweep(base: SimulationSettings, args: argparse.Namespace) -> int:
    from edprf_fl.simulation import plot_sweep, run_sweep, sweep_grid, sweep_table

    from ._child_process import run_in_child
    from ._simulate import say

    values = {
        "epsilon": args.epsilons,
        "parties": args.parties_list,
        "partition": args.partitions,
        "max_depth": args.max_depths,
        "n_trees": args.n_trees_list,
    }
    configs = sweep_grid(base, values)  # every configuration checked before the first run
    out = Path(args.output) if args.output else Path(tempfile.mkdtemp(prefix="edprf-sweep-"))
    out.mkdir(parents=True, exist_ok=True)
    rows = run_sweep(base, configs, args.seeds, out, progress=say, isolate_ray=run_in_child)
    with (out / "sweep.csv").open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    table = sweep_table(rows, configs)
    (out / "sweep.md").write_text(table + "\n")
    print(table)
    plot_sweep(rows, configs, out)
    print(f"\nresults: {out / 'sweep.csv'}, {out / 'sweep.md'}, plots in {out}")
    return 0
