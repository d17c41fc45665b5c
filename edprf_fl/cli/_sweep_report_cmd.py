"""``edprf sweep-report``: one sweep table and its plots from the ``sweep.csv`` of one or more sweeps.

A command of its own rather than an option of ``edprf sweep``: it runs nothing, so none of the sweep's thirty-odd
run options applies to it, and an option that would be silently ignored (``--epsilons`` beside a report) cannot be
given.  The rows are read, checked and tabled by :func:`edprf_fl.simulation.combine_sweeps` and
:func:`edprf_fl.simulation.sweep_markdown`.
"""

from __future__ import annotations

import argparse
from pathlib import Path

__all__ = ["register"]

_REPORT_FILES = ("sweep.csv", "sweep.json", "sweep.md", "accuracy_vs_*.png", "roc_auc_vs_*.png", "run-*")
"""What ``--output`` must not hold (a sweep's or a report's files) unless ``--overwrite`` replaces them."""


def register(sub: argparse._SubParsersAction) -> None:
    from ._exit_text import exit_epilog

    p = sub.add_parser(
        "sweep-report",
        epilog=exit_epilog("0 the table and plots written again; 1 an error (no readable sweep.csv)"),
        help="one table and plots from the sweep.csv of one or more edprf sweep directories (seeds added with "
        "--seed-start, say)",
        description="Read the sweep.csv of each SWEEP_DIR, check that their rows can make one table (the same "
        "data, schema and settings; columns of one edprf version; each configuration and seed once), and write "
        "sweep.csv (the rows, checked), sweep.md and the plots of all their rows to --output. Runs nothing: a sweep "
        "that adds seeds to an earlier one (edprf sweep --seed-start) becomes one table with it here.",
    )
    p.add_argument("sweeps", nargs="+", metavar="SWEEP_DIR", help="the --output directory of an edprf sweep")
    p.add_argument(
        "--output",
        required=True,
        help="directory for sweep.csv, sweep.md and the plots (created if missing); a later report can read it as a "
        "SWEEP_DIR",
    )
    p.add_argument(
        "--overwrite", action="store_true", help="replace a previous table and plots (or a sweep's files) in --output"
    )
    p.add_argument(
        "--allow-mixed-code",
        action="store_true",
        help="table rows made by different versions or git revisions of edprf (refused without it; sweep.md then "
        "says so at its top)",
    )
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from contextlib import ExitStack

    from edprf_fl import Provenance
    from edprf_fl.simulation import (
        SettingsError,
        combine_sweeps,
        interrupted_lines,
        mixed_code_error,
        read_sweep,
        sweep_configs,
        sweep_notes,
    )

    from ._simulate import output_dir, say
    from ._simulation_args import flag_of
    from ._sweep import _LIST_FLAGS, lock_output, write_report

    sources = [Path(d) for d in args.sweeps]
    out = Path(args.output)
    for source in sources:  # --overwrite would remove the very rows it reads
        if source.resolve() == out.resolve():
            raise ValueError(f"--output {out} is one of the sweeps read: give a new directory")
    sweeps = [read_sweep(d) for d in sources]
    try:
        rows = combine_sweeps(sweeps)
    except SettingsError as exc:  # two sweeps' settings differ: named by the option that sets it
        raise ValueError(exc.describe(lambda name: _LIST_FLAGS.get(name) or flag_of(name))) from None
    if not args.allow_mixed_code and (why := mixed_code_error(rows, f"the rows of {', '.join(map(str, sources))}")):
        raise ValueError(why)
    for sweep in sweeps:
        if sweep.record is None and len(sweeps) > 1:  # combine_sweeps refused it without settings_fingerprint
            say(
                f"note: {sweep.directory} has no sweep.json: its settings were compared by its rows' settings_fingerprint"
            )
    made_by = Provenance.current()
    with ExitStack() as held:  # one sweep, resume or report writes in a directory at a time (rev-research2 N3)
        out = output_dir(
            str(out),
            args.overwrite,
            _REPORT_FILES,
            temp_prefix="edprf-sweep-report-",
            holds="a sweep's or a sweep report's files",
            lock=lambda directory: lock_output(held, directory, made_by),  # before --overwrite removes anything
        )
        say(f"{len(rows)} run{'s' if len(rows) != 1 else ''} from {len(sweeps)} sweep{'s' if len(sweeps) != 1 else ''}")
        _write_rows(out / "sweep.csv", sweeps, rows)
        notes, head = sweep_notes(sweeps), interrupted_lines(sweeps)
        for note in [*head, *notes]:
            say(note)
        return write_report(
            rows, sweep_configs(rows), out, made_by=made_by, sources=sources, notes=notes, head="\n".join(head)
        )


def _write_rows(path: Path, sweeps: list, rows: list[dict]) -> None:
    """The checked rows in one ``sweep.csv`` (review rev-research2 N13: for a paired test or a figure of one's own, and
    as the input of a later report), each ``run_dir`` the run's directory in full, the columns the sweeps'."""
    import csv

    source = {id(row): sweep.directory for sweep in sweeps for row in sweep.rows}
    with path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(sweeps[0].columns))
        writer.writeheader()
        for row in rows:
            writer.writerow({**row, "run_dir": str((source[id(row)] / str(row["run_dir"])).resolve())})
