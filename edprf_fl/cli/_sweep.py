"""``edprf sweep``: simulated federations over a grid, with several seeds.

The runs and the table come from :mod:`edprf_fl.simulation`; this module reads the options and writes the files.
"""

from __future__ import annotations

import argparse
import csv
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._arg_types import integer
from ._model_rules import positive_integer
from ._simulation_args import DEFAULTS, add_federation_arguments, depth_or_auto, flag_of

if TYPE_CHECKING:
    from edprf_fl import Provenance
    from edprf_fl.simulation import SimulationSettings, SweepRecord

__all__ = ["register", "write_report"]


def _list_of(kind: Callable[[str], Any], what: str) -> Callable[[str], list]:
    def parse(text: str) -> list:
        items = [v.strip() for v in text.split(",") if v.strip()]
        try:
            values = [kind(v) for v in items]
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a comma-separated list of {what}, got {text!r}") from None
        if not values:
            raise argparse.ArgumentTypeError(f"expected at least one value, got {text!r}")
        if any(not isinstance(v, str) and v <= 0 for v in values):
            raise argparse.ArgumentTypeError(f"expected positive values, got {text!r}")
        return values

    parse.__name__ = f"list of {what}"
    return parse


_floats = _list_of(float, "numbers")
_ints = _list_of(int, "integers")
_words = _list_of(str, "names")
_depths = _list_of(depth_or_auto, "depths")

_LIST_FLAGS = {
    "epsilon": "--epsilons",
    "parties": "--parties-list",
    "partition": "--partitions",
    "alpha": "--alphas",
    "max_depth": "--max-depths",
    "n_trees": "--n-trees-list",
}
"""Settings the sweep takes as lists, and the flags of those lists (the setting's own flag: a list of one)."""

_NO_EVALUATION = "a sweep's runs have no evaluation round (and no party hold-out)"
_SET_BY_EACH_RUN = {
    "seed": "a sweep runs each configuration with the seeds SEED_START .. SEED_START+SEEDS-1 (--seed-start, "
    "default 0, and --seeds)",
    "seeded_noise": "every run of a sweep draws its noise from its seed (research runs, NOT differentially "
    "private); for a differentially private run use edprf simulate",
    "evaluation_epsilon": _NO_EVALUATION,
    "evaluation_max_interval_width": _NO_EVALUATION,
    "party_holdout": _NO_EVALUATION,
}
"""Settings every run of a sweep sets itself (its seed, seeded noise, no evaluation round, no party hold-out),
and why: ``edprf sweep`` refuses their options."""

DEFAULT_EPSILONS = (0.25, 0.5, 1.0, 2.0)
"""The epsilons of a sweep given neither ``--epsilons`` nor ``--epsilon``."""

_SEEDS = 3
"""Seeds per configuration without ``--seeds``."""

_SWEEP_FILES = ("sweep.csv", "sweep.json", "sweep.md", "accuracy_vs_*.png", "roc_auc_vs_*.png", "run-*")
"""What a sweep writes in its ``--output`` (an old sweep's ``run-*`` hold spent ledgers)."""

_DESCRIPTION = (
    "Research runs, NOT differentially private: every run draws its parties' noise from the seeds SEED_START .. "
    "SEED_START+SEEDS-1 (anyone who knows a seed can remove that noise), with no evaluation round and no party hold-out, so "
    "epsilon is the budget each party was configured to spend and the results are an accuracy study. For a "
    "differentially private run use `edprf simulate` (without --seeded-noise)."
)


def register(sub: argparse._SubParsersAction) -> None:
    from ._exit_text import exit_epilog

    p = sub.add_parser(
        "sweep",
        epilog=exit_epilog("0 the sweep's table and plots written; 1 an error"),
        help="simulated federations over a grid of epsilon, parties, skew (partition, Dirichlet alpha), depth and "
        "trees (seeded research runs)",
        description=_DESCRIPTION,
    )
    _add_options(p)
    p.note_given_options(GIVEN, _add_options)  # a CommandParser (_given_options.py)
    p.set_defaults(handler=run)


GIVEN = "given_options"
"""The namespace attribute that holds the destinations of the options given on the command line (a frozenset;
absent when none was), one given at its default value too: ``--resume`` takes every other option from the sweep's
record (``--n-bins 20`` at a resume of an ``--n-bins 8`` sweep is refused, not replaced by the record's 8)."""


def _add_options(p: argparse.ArgumentParser) -> None:
    """Add ``edprf sweep``'s options to ``p`` (twice a parse: :meth:`CommandParser.note_given_options`)."""
    add_federation_arguments(p, fixed=_SET_BY_EACH_RUN, one_value_of=_LIST_FLAGS)
    p.add_argument(
        "--epsilons",
        type=_floats,
        default=None,
        help="comma-separated epsilons of the parties' releases (default: --epsilon, else "
        f"{','.join(f'{e:g}' for e in DEFAULT_EPSILONS)})",
    )
    p.add_argument(
        "--parties-list", type=_ints, default=None, help=f"comma-separated party counts {_default_text('parties')}"
    )
    p.add_argument(
        "--partitions",
        type=_words,
        default=None,
        help=f"comma-separated: iid,dirichlet,column {_default_text('partition')}",
    )
    p.add_argument(
        "--alphas",
        type=_floats,
        default=None,
        help="comma-separated Dirichlet concentrations, the skew axis: each dirichlet configuration runs with "
        "each (an iid or column configuration once, alpha not applying) (default: --alpha, else "
        f"{DEFAULTS.alpha:g})",
    )
    p.add_argument(
        "--max-depths",
        type=_depths,
        default=None,
        help=f"comma-separated split levels per tree, or 'auto' {_default_text('max_depth')}",
    )
    p.add_argument(
        "--n-trees-list",
        type=_ints,
        default=None,
        help="trees per party, comma-separated: a party's federated setting, not the central estimator's 'auto' "
        + _default_text("n_trees"),
    )
    p.add_argument(
        "--seeds", type=positive_integer, default=_SEEDS, help="seeds per configuration (default: %(default)s)"
    )
    p.add_argument(
        "--seed-start",
        type=integer(0),
        default=0,
        help="first seed: each configuration runs with the seeds SEED_START .. SEED_START+SEEDS-1, so a later "
        "sweep can add seeds to an earlier one's (default: %(default)s)",
    )
    p.add_argument(
        "--output", default=None, help="directory for sweep.csv, sweep.md and plots (default: a new temporary one)"
    )
    p.add_argument(
        "--overwrite",
        action="store_true",
        help="replace a previous sweep in --output (its runs, their spent ledgers, its table and plots)",
    )
    p.add_argument(
        "--resume",
        nargs="?",
        const=True,
        default=False,
        metavar="DIR",
        help="finish the sweep in DIR (or --output) that an interruption stopped: run only the (configuration, "
        "seed) pairs its sweep.csv lacks, with the options recorded in its sweep.json (an option given as well must "
        "be the recorded one: a difference is refused), remove the unfinished run's directory, and write the whole "
        "table and plots",
    )
    p.add_argument(
        "--allow-mixed-code",
        action="store_true",
        help="with --resume: finish a sweep whose rows another version or git revision of edprf made (refused "
        "without it; sweep.md then says so at its top)",
    )


def _default_text(setting: str) -> str:
    """``(default: --parties, else 5)``: the default of a list of the setting's values."""
    return f"(default: {flag_of(setting)}, else {getattr(DEFAULTS, setting)})"


def run(args: argparse.Namespace) -> int:
    from edprf_fl.simulation import SettingsError

    from ._simulation_args import refuse_unused_partition_options, settings_from_args

    if args.resume and args.overwrite:
        raise ValueError(
            "--resume and --overwrite: give one (--resume keeps the finished runs, --overwrite removes them)"
        )
    if args.allow_mixed_code and not args.resume:
        raise ValueError("--allow-mixed-code applies to --resume only (a new sweep's rows are all of this code)")
    if args.resume:
        _resume_from_the_record(args)
    base = settings_from_args(args)
    values = _axis_values(args)
    refuse_unused_partition_options(args, values["partition"] or [base.partition])
    try:
        return _sweep(base, values, args)
    except SettingsError as exc:  # a grid value out of range, or found in the data: named by its flag
        raise ValueError(exc.describe(lambda name: _LIST_FLAGS.get(name) or flag_of(name))) from None


def _resume_from_the_record(args: argparse.Namespace) -> None:
    """``--resume``: its directory in ``args.output``, and every option not given set from the sweep's record
    (``DIR/sweep.json``), said on stderr (review rev-research2 N15: every option had to be typed again).  The options
    given are left as they are: :func:`_resumed_rows` compares them with the record.

    Raises
    ------
    UsageError
        No such directory (exit 2).
    ValueError
        No directory given, two different ones, or no sweep record there.
    """
    from ._usage_error import UsageError

    if isinstance(args.resume, str):
        if args.output and Path(args.output).resolve() != Path(args.resume).resolve():
            raise ValueError(f"--resume {args.resume} and --output {args.output}: give the sweep's directory once")
        args.output = args.resume
    if not args.output:
        raise ValueError("--resume needs the directory of the sweep to finish: --resume DIR (or --output DIR)")
    out = Path(args.output)
    if not out.is_dir():
        raise UsageError(f"--resume: no such directory: {out} (the --output of the sweep to finish)")
    record = _recorded(out)
    given = getattr(args, GIVEN, frozenset())
    if taken := _take_recorded_options(args, record):  # those at their defaults unsaid
        from ._simulate import say

        say(f"resuming with the recorded options ({out / 'sweep.json'}): {' '.join(taken)}")
    for name in ("data", "schema"):
        if name not in given and (path := getattr(args, name, None)) is not None and not path.exists():
            raise ValueError(
                f"--resume: the recorded {flag_of(name)} {path} is missing (moved, or the sweep ran on another "
                f"machine): give {flag_of(name)} PATH of that file where it is now (it is checked by its content)"
            )


_RECORDED_FLAGS = {"header": ("no_header", "--no-header"), "baselines": ("no_baselines", "--no-baselines")}
"""Settings recorded as values and given as negated flags: their destination and flag."""


def _take_recorded_options(args: argparse.Namespace, record: SweepRecord) -> list[str]:
    """Set each option of ``args`` not given (:data:`GIVEN`) to ``record``'s value; the options taken that differ
    from their defaults, as a command line gives them."""
    import shlex

    from edprf_fl.simulation import SWEEP_AXES

    given = getattr(args, GIVEN, frozenset())
    taken: list[str] = []

    def take(dest: str, value: Any, shown: list[str] | None) -> None:
        setattr(args, dest, value)
        if shown:
            taken.extend(shown)

    for axis in SWEEP_AXES:  # the grid first: which partitions decides whether --alphas and --column apply
        dest = _LIST_FLAGS[axis].removeprefix("--").replace("-", "_")
        if axis in given or dest in given or axis not in record.axes:
            continue
        if axis == "alpha" and "dirichlet" not in _partitions(args):
            continue  # the record's alpha is the default's, and --alphas would be refused without dirichlet
        values = list(record.axes[axis])
        default = list(DEFAULT_EPSILONS) if axis == "epsilon" else [getattr(DEFAULTS, axis)]
        take(dest, values, None if values == default else [_LIST_FLAGS[axis], _shown(values)])
    for name in ("seeds", "seed_start"):
        if name not in given:
            value = getattr(record, name)
            take(name, value, None if value == {"seeds": _SEEDS, "seed_start": 0}[name] else [_flag(name), str(value)])
    settings = dict(record.settings)
    from_a_file = settings.get("data") is not None
    for name, value in settings.items():
        if name in _SET_BY_EACH_RUN or name in SWEEP_AXES:
            continue
        dest, flag = _RECORDED_FLAGS.get(name, (name, flag_of(name)))
        if dest in given or not (hasattr(args, dest) or name in ("sep", "dataset")):
            continue  # given (compared with the record), or not an option of edprf sweep
        if name in ("data", "schema", "sep", "header") and ("dataset" in given and from_a_file):
            continue  # --dataset given for a sweep of a file: refused as a difference, not as '--data and --dataset'
        if name == "sep" and not from_a_file or name == "dataset" and (from_a_file or "data" in given):
            continue  # the embedded dataset's own format, or a --data given
        if name == "column" and "column" not in _partitions(args):
            continue
        if name in _RECORDED_FLAGS:
            take(dest, not value, [flag] if not value else None)
        elif name in ("data", "schema"):
            take(dest, None if value is None else Path(value), [flag, shlex.quote(str(value))] if value else None)
        elif name == "shuffled_label_parties":
            take(dest, list(value), [f"{flag} {p}" for p in value])
        else:
            text = "tab" if name == "sep" and value == "\t" else _shown(value)
            take(dest, value, None if value == getattr(DEFAULTS, name, object()) else [flag, shlex.quote(text)])
    return taken


def _partitions(args: argparse.Namespace) -> list[str]:
    """The partitions ``args`` ask for: ``--partitions``, else ``--partition``, else the default."""
    return args.partitions or [getattr(args, "partition", DEFAULTS.partition)]


def _axis_values(args: argparse.Namespace) -> dict[str, list | None]:
    """Each swept setting's values (None: the value of the setting's own flag, or its default).

    Raises
    ------
    ValueError
        A setting's flag and its list's flag both given (the own flag is absent from ``args`` unless given).
    """
    values = {}
    for setting, list_flag in _LIST_FLAGS.items():
        listed = getattr(args, list_flag.removeprefix("--").replace("-", "_"))
        if listed is not None and hasattr(args, setting):
            raise ValueError(f"{flag_of(setting)} and {list_flag}: give one")
        values[setting] = listed
    if values["epsilon"] is None and not hasattr(args, "epsilon"):
        values["epsilon"] = list(DEFAULT_EPSILONS)
    return values


def _sweep(base: SimulationSettings, values: Mapping[str, list | None], args: argparse.Namespace) -> int:
    from contextlib import ExitStack

    from edprf_fl import Provenance
    from edprf_fl.simulation import SweepRecord, data_file, data_identity, mixed_code_error, sweep_grid, write_record

    from ._simulate import output_dir, say

    # every configuration and seed checked before the first run
    configs = sweep_grid(base, values, args.seeds, args.seed_start)
    made_by = Provenance.current()
    data = data_identity(base)  # the data by content, hashed once (review rev-research2 N1, N2)
    record_here = SweepRecord.of(base, values, args.seeds, args.seed_start, made_by, data)
    with ExitStack() as held:
        if args.resume:
            out = Path(args.output)  # a directory (_resume_from_the_record)
            lock_output(held, out, made_by)
            record = _recorded(out)  # again, under the lock: what another process wrote meanwhile counts
            done = _resumed_rows(out, record, record_here, data_file(base))
            here = {"edprf_version": made_by.edprf_version, "git_describe": made_by.git_describe or ""}
            if not args.allow_mixed_code and (why := mixed_code_error([*done, here], _CODE_WHERE.format(out=out))):
                raise ValueError(f"--resume: {why}")
            _remove_the_interrupted_run(out, done, base, configs, args)  # after every check: a refusal removes nothing
            _record_where_the_data_is(out, record, record_here)
            say(f"resuming the sweep in {out}: {len(done)} of its runs finished, in {out / 'sweep.csv'}")
        else:
            # locked once it exists, before --overwrite removes anything (review rev-auto A2)
            lock = lambda d: lock_output(held, d, made_by)
            out = output_dir(args.output, args.overwrite, _SWEEP_FILES, temp_prefix="edprf-sweep-", lock=lock)
            write_record(out, record_here)  # what the rows are of: what --resume and edprf sweep-report check
            done = []
        return _run_the_sweep(base, configs, args, out, done, data[0])


_CODE_WHERE = "the rows in {out}/sweep.csv and this resume (the last)"


def lock_output(held: Any, out: Path, made_by: Provenance) -> bool:
    """Take ``out``'s lock (:func:`sweep_lock`) until ``held`` (an ExitStack) closes; True."""
    from edprf_fl.simulation import sweep_lock

    held.enter_context(sweep_lock(out, made_by.command))
    return True


def _run_the_sweep(
    base: SimulationSettings,
    configs: list[dict[str, Any]],
    args: argparse.Namespace,
    out: Path,
    done: list[dict[str, Any]],
    data_sha256: str,
) -> int:
    from edprf_fl.simulation import run_sweep

    from ._child_process import run_in_child
    from ._simulate import say

    csv_path = out / "sweep.csv"
    header = _csv_header(csv_path) if done else None
    finished: list[dict[str, Any]] = []

    def record(row: Mapping[str, Any]) -> None:
        nonlocal header
        _append_row(csv_path, row, columns=header)
        header = list(row)
        finished.append(dict(row))

    def stopped(interrupt: KeyboardInterrupt) -> None:
        say(_interrupted_text(len(done) + len(finished), csv_path))
        _report_the_finished_runs(
            _in_grid_order([*done, *finished], base, configs), configs, out, len(configs) * args.seeds, interrupt
        )

    with _said_on_interrupt(stopped):
        # seeded: the header says NOT differentially private, once (the parties log it at DEBUG)
        run_sweep(
            base,
            configs,
            args.seeds,
            out,
            seed_start=args.seed_start,
            progress=say,
            record=record,
            isolate_ray=run_in_child,
            skip={(_key(r), r["seed"]) for r in done},
            data_sha256=data_sha256,
        )
    every_run_finished = (  # review rev-research2 N11: every run finished, the table or plots not
        f"interrupted while writing the table and plots: every run finished, their rows are in {csv_path}; "
        f"edprf sweep --resume {out} runs nothing and writes them again"
    )
    with _said_on_interrupt(lambda _: say(every_run_finished)):
        status = write_report(_in_grid_order([*done, *finished], base, configs), configs, out)
    return status


@contextmanager
def _said_on_interrupt(
    tell: Callable[[KeyboardInterrupt], object], *, since: KeyboardInterrupt | None = None, stop: bool = True
) -> Iterator[None]:
    """Call ``tell`` with the interrupt that stops the block (what it leaves), then raise that interrupt (``stop``)
    or end the block.

    After a Ctrl-C, C code may raise another error in place of its ``KeyboardInterrupt`` (numpy: "... is not a
    valid PEP 3118 buffer format string"): an ordinary exception is an interrupt's when one was recorded
    (:func:`edprf_fl.interrupt_behind`), as in ``edprf simulate``, and is raised as that interrupt, caused by it.
    Otherwise it is raised unchanged, ``tell`` not called.

    Parameters
    ----------
    tell : callable
        Says what the stop leaves; given the interrupt.
    since : KeyboardInterrupt, optional
        The interrupt already being handled (the block says what it left): an ordinary exception is an interrupt's
        only when another one (a second Ctrl-C) was recorded.
    stop : bool, default True
        Raise the interrupt after ``tell`` (False: the block ends, the interrupt said).
    """
    from edprf_fl import interrupt_behind

    try:
        yield
    except (KeyboardInterrupt, Exception) as exc:
        interrupt = interrupt_behind(exc, since)
        if interrupt is None:
            raise
        tell(interrupt)
        if not stop:
            return
        if interrupt is exc:
            raise
        raise interrupt from exc


def _key(row: Mapping[str, Any]) -> tuple[Any, ...]:
    from edprf_fl.simulation import config_key

    return config_key(row)


def _in_grid_order(
    rows: list[dict[str, Any]], base: SimulationSettings, configs: list[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """A resumed sweep's rows (those it found, then those it ran) in the order an uninterrupted sweep writes them."""
    from edprf_fl.simulation import run_key

    place = {run_key(base, c): i for i, c in enumerate(configs)}
    return sorted(rows, key=lambda r: (place.get(_key(r), len(place)), r["seed"]))


def _recorded(out: Path) -> SweepRecord:
    """The sweep record in ``out`` that ``--resume`` finishes: read before the options are taken from it, and again
    under the directory's lock before any row is kept.

    Raises
    ------
    ValueError
        ``out`` holds no sweep record.
    """
    from edprf_fl.simulation import read_record

    record = read_record(out)
    if record is None:
        raise ValueError(
            f"--resume: {out} holds no sweep record (sweep.json): no sweep was started there by this edprf version; "
            "run the sweep without --resume (a new --output), and edprf sweep-report puts the two in one table"
        )
    return record


def _resumed_rows(out: Path, record: SweepRecord, asked: SweepRecord, data_path: Path) -> list[dict[str, Any]]:
    """The finished rows of the sweep in ``out`` that ``--resume`` keeps, after checking that its ``record`` (read
    under the directory's lock) asked what this command asks; the unfinished runs' directories removed (said).

    Raises
    ------
    ValueError
        No sweep record in ``out``, or a setting, an axis or the seeds that differ (named by their flags); data or
        a schema other than the record's (by content), or a record or rows that identify none.
    """
    from edprf_fl.simulation import drop_torn_last_row, read_sweep_rows

    from ._simulate import say

    differing = record.setting_differences(asked) + record.grid_differences(asked)
    if differing:
        raise ValueError(
            f"--resume: the sweep in {out} was run with other options; "
            + "; ".join(
                f"{_flag(name)}: {_shown(theirs)} there, {_shown(ours)} here" for name, theirs, ours in differing
            )
            + f" (its command: {record.provenance.command}); drop them (--resume takes the recorded ones), or give a "
            "new --output"
        )
    where = out / "sweep.json"
    if not (record.data_sha256 and record.schema_fingerprint):
        raise ValueError(
            f"--resume: {where} records no hash of its data (a sweep started by an older edprf): the data cannot be "
            "checked to be the same; run the remaining seeds into a new --output (--seed-start) and join the two with "
            "edprf sweep-report"
        )
    got = {"data_sha256": (asked.data_sha256, data_path), "schema_fingerprint": (asked.schema_fingerprint, None)}
    for name, ours, theirs in record.data_differences(asked):
        what = "the data" if name == "data_sha256" else "the schema"
        source = got[name][1] or asked.settings.get("schema") or f"the embedded {asked.settings.get('dataset')} schema"
        raise ValueError(
            f"--resume: {what} ({name}): expected {ours} (as in {where}), got {theirs} in {source}: {what} changed "
            "since the sweep started, and rows of different data make no single table"
        )
    csv_path = out / "sweep.csv"
    if csv_path.is_file() and (torn := drop_torn_last_row(csv_path)) is not None:
        say(
            f"dropped {csv_path} line {torn[0]}: an incomplete row ({torn[1]}: cut off while it was written, never "
            "part of the table); its run runs again"
        )
    rows = read_sweep_rows(csv_path)[1] if csv_path.is_file() and csv_path.stat().st_size else []
    for row in rows:
        for name in ("data_sha256", "schema_fingerprint"):
            value = row.get(name, "")
            if name == "schema_fingerprint" and not value:
                continue  # a run's report.json that recorded none
            if value != getattr(record, name):
                raise ValueError(
                    f"--resume: {csv_path} ({row.get('run_dir', '?')}): expected {name} {getattr(record, name)} (as in "
                    f"{where}), got {value or 'none'}: rows of different data make no single table"
                )
    return rows


def _record_where_the_data_is(out: Path, record: SweepRecord, asked: SweepRecord) -> None:
    """Name in ``out/sweep.json`` the data and schema files this resume read, where ``record`` names them at other
    paths (the same content: :func:`_resumed_rows` checked it), atomically; said.  A later ``--resume`` without
    ``--data`` then finds them (closing note of h-resume: the record kept naming the old path)."""
    from dataclasses import replace

    from edprf_fl.simulation import write_record

    from ._simulate import say

    moved = {
        name: path
        for name in ("data", "schema")
        if (path := asked.settings.get(name)) is not None and record.settings.get(name) not in (None, path)
    }
    if not moved:
        return
    write_record(out, replace(record, settings={**record.settings, **moved}))
    said = "; ".join(f"{flag_of(name)} {path} (was {record.settings[name]})" for name, path in moved.items())
    say(f"{out / 'sweep.json'} now names {said}: the same content, where a later --resume finds it")


def _remove_the_interrupted_run(
    out: Path, rows: list[dict[str, Any]], base: SimulationSettings, configs: list[Mapping[str, Any]], args: Any
) -> None:
    """Remove the one run directory an interruption left: the first run of the grid without a row (runs go in grid
    order), when it has no row; refuse, removing nothing, when other run directories have no row (review
    rev-research2 N10: with sweep.csv lost, every finished run was removed as 'the run an interruption stopped').

    Raises
    ------
    ValueError
        ``sweep.csv`` missing or without rows while run directories exist, or a run directory without a row that
        is not the next run of the grid.
    """
    import itertools
    import shutil

    from edprf_fl.simulation import run_key, unfinished_run_dirs

    from ._simulate import say

    stale = unfinished_run_dirs(out, rows)
    if not stale:
        return
    names = ", ".join(d.name for d in stale)
    if not rows:
        raise ValueError(
            f"--resume: {out / 'sweep.csv'} is missing or holds no row, but {out} holds {names}: their rows would be "
            "lost; put sweep.csv back (or, if no run finished, remove the run directories yourself), then resume"
        )
    done = {(_key(r), r["seed"]) for r in rows}
    grid = itertools.product(configs, range(args.seed_start, args.seed_start + args.seeds))
    missing = [i for i, (c, seed) in enumerate(grid) if (run_key(base, c), seed) not in done]
    # the runs go in grid order: the interrupted one is the first without a row, and no later run has one
    in_order = bool(missing) and missing == list(range(missing[0], len(configs) * args.seeds))
    expected = f"run-{missing[0]:04d}" if in_order else None
    unexpected = [d for d in stale if d.name != expected]
    if unexpected:
        besides = f", besides the run an interruption stops ({expected}, the next of the grid)" if expected else ""
        raise ValueError(
            f"--resume: {out} holds {', '.join(d.name for d in unexpected)} without a row in sweep.csv{besides}: not "
            "an interrupted run's; rebuild their rows in sweep.csv or move them away, then resume"
        )
    shutil.rmtree(stale[0])
    say(f"removed {stale[0]}: the run an interruption stopped (no row in sweep.csv); it runs again")


def _flag(name: str) -> str:
    """The option of a setting, an axis (its list's option) or ``seeds``/``seed_start``."""
    return _LIST_FLAGS.get(name) or flag_of(name)


def _shown(value: Any) -> str:
    """A setting's value as an option takes it: a list comma-separated."""
    if isinstance(value, list):
        return ",".join(f"{v:g}" if isinstance(v, float) else str(v) for v in value)
    return str(value)


def write_report(
    rows: list[dict[str, Any]],
    configs: list[Mapping[str, Any]],
    out: Path,
    *,
    made_by: Provenance | None = None,
    sources: Sequence[Path] = (),
    notes: Sequence[str] = (),
    head: str = "",
) -> int:
    """Write ``sweep.md`` (``made_by`` and ``sources``: :func:`sweep_markdown`'s) and the plots of ``rows``, print the
    table and where the files are."""
    from importlib.util import find_spec

    from edprf_fl.simulation import NO_PLOT_TEXT, plot_sweep, sweep_markdown, sweep_table

    (out / "sweep.md").write_text(
        sweep_markdown(rows, configs, made_by=made_by, sources=sources, notes=notes, head=head)
    )
    print(sweep_table(rows, configs))
    plots = plot_sweep(rows, configs, out)
    where = (
        f"plots in {out}"
        if plots
        else f"plots: {NO_PLOT_TEXT}"
        if find_spec("matplotlib") is None
        else "no plot (one value per axis)"
    )
    rows_file = [str(out / "sweep.csv")] if (out / "sweep.csv").is_file() else []  # edprf sweep-report writes none
    print(f"\nresults: {', '.join([*rows_file, str(out / 'sweep.md'), where])}")
    return 0


def _report_the_finished_runs(
    finished: list[dict[str, Any]],
    configs: list[Mapping[str, Any]],
    out: Path,
    total: int,
    interrupt: KeyboardInterrupt | None = None,
) -> None:
    """An interrupted sweep's sweep.md and plots, of the runs that finished (review rev-research R3: only the CSV was
    left), headed as partial; the unfinished run's directory named.  A second Ctrl-C skips them (``interrupt``: the
    first, which stopped the runs)."""
    from edprf_fl.simulation import plot_sweep, sweep_markdown, unfinished_run_dirs

    from ._simulate import say

    for unfinished in unfinished_run_dirs(out, finished):
        say(
            f"{unfinished} holds the unfinished run (no row in sweep.csv): not part of the results; "
            f"edprf sweep --resume {out} removes it and finishes the sweep (its options are in its sweep.json)"
        )
    if not finished:
        return
    written = False

    def second_interrupt(_: KeyboardInterrupt) -> None:  # review rev-research2 N11: say what was written
        what = (
            f"the finished runs' table is in {out / 'sweep.md'} (marked INTERRUPTED); their plots were not written"
            if written
            else "the finished runs' table and plots were not written"
        )
        say(f"second interrupt: {what} (their rows are in sweep.csv)")

    with _said_on_interrupt(second_interrupt, since=interrupt, stop=False):
        head = f"INTERRUPTED: {len(finished)} of {total} runs finished; this table and the plots hold those only."
        (out / "sweep.md").write_text(sweep_markdown(finished, configs, head=head))  # the runs' lines
        written = True
        plots = plot_sweep(finished, configs, out)
        said = "with their plots" if plots else "no plot (one value per axis, or no matplotlib)"
        say(f"the finished runs' table is in {out / 'sweep.md'} (marked INTERRUPTED), {said}")


def _interrupted_text(finished: int, csv_path: Path) -> str:
    """Where an interrupted sweep's finished runs are."""
    from edprf_core.count_text import count_text

    if not finished:
        return "sweep interrupted before its first run finished"
    return f"sweep interrupted after {count_text(finished, 'finished run')}; its rows are in {csv_path}"


def _csv_header(path: Path) -> list[str]:
    """The columns of an existing ``sweep.csv`` (its header line)."""
    with path.open(newline="") as fh:
        return next(csv.reader(fh), [])


def _append_row(path: Path, row: Mapping[str, Any], *, columns: list[str] | None = None) -> None:
    """Add one run's row to ``sweep.csv``, at once on disk: a new file with the header line first when ``columns``
    is None, else after the rows of a file with those ``columns``.

    Raises
    ------
    ValueError
        ``row``'s columns are not ``columns`` (the finished rows were written by another edprf version).
    """
    if columns is not None and list(row) != columns:
        missing = [c for c in columns if c not in row]
        extra = [c for c in row if c not in columns]
        raise ValueError(
            f"--resume: {path} has other columns than this edprf writes (missing here: {', '.join(missing) or '-'}; "
            f"new here: {', '.join(extra) or '-'}): its rows came from another version; run the remaining seeds "
            "into a new --output and compare the tables"
        )
    import io
    import os

    text = io.StringIO()
    writer = csv.DictWriter(text, fieldnames=list(row))
    if columns is None:
        writer.writeheader()
    writer.writerow(row)
    with path.open("w" if columns is None else "a", newline="") as fh:
        fh.write(text.getvalue())  # the row whole, in one write, on disk before the next run (rev-research2 N6)
        fh.flush()
        os.fsync(fh.fileno())
