"""``edprf simulate``: a whole federation on one machine, compared with central training.

The orchestration lives in :mod:`edprf_fl.simulation`; this module reads the options into its settings,
chooses the output directory and prints the report.
"""

from __future__ import annotations

import argparse
import contextlib
import shlex
import shutil
import sys
import tempfile
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING

from ._simulation_args import add_federation_arguments, flag_of, settings_from_args

if TYPE_CHECKING:
    from fractions import Fraction

    from edprf_fl.simulation import SimulationSettings

__all__ = ["register", "run"]

_RUN_FILES = ("workspace", "global-model.edprf", "report.json", "simulation.json", "accuracy.png", "run-config.toml")

LOCAL_SUPERLINK_STOP = "pkill -u \"$(id -u)\" -f 'flower-superlink --insecure --simulation'"
"""Stops the local SuperLink ``flwr run`` starts (Flower 1.41 runs it as ``flower-superlink --insecure --simulation
...``, detached) for this account only; SIGTERM, which it exits on within seconds."""

LOCAL_SUPERLINK_WARNING = (
    "`flwr run` starts Flower's local SuperLink (flower-superlink --insecure --simulation, on 127.0.0.1, ports 39091 "
    "and 39093 by default) and leaves it running after the run. It has no TLS and no authentication: any account on this "
    "machine can list its runs and submit new ones, which run as you, with your access to the data; its database "
    "(the runs' messages) and log in $FLWR_HOME/local-superlink (~/.flwr by default) are readable by every account "
    "under the usual umask 022. For data that is not public use `edprf simulate` (no SuperLink, no socket); else run "
    "`flwr run` under `umask 077`, in a network namespace of its own (docs/federation.md: its ports then exist in "
    f"that namespace only), and stop the SuperLink when done:\n  {LOCAL_SUPERLINK_STOP}"
)
"""What ``--prepare-only`` says of the SuperLink its ``flwr run`` command leaves running (security review)."""


def register(sub: argparse._SubParsersAction) -> None:
    from ._exit_text import exit_epilog

    p = sub.add_parser(
        "simulate",
        epilog=exit_epilog(
            "0 the federation completed and its files were written; 1 it failed (its report.json says why), a file could not be written, or an error before it started"
        ),
        help="simulate a federation of Flower apps on one machine and compare "
        "with central training, each party alone and a non-private forest",
        description=(
            "Simulate a federation on one machine: split a dataset among parties, run the parties' Flower "
            "ClientApps and the coordinator's ServerApp, and compare the global model with central DP, each "
            "party alone, a non-private forest and the majority class."
        ),
    )
    add_federation_arguments(p)
    p.add_argument(
        "--output",
        default=None,
        help="directory for the model, the report and the plot (default: a new temporary directory)",
    )
    p.add_argument(
        "--overwrite",
        action="store_true",
        help="replace a previous run in --output (its workspace, ledgers, model and report)",
    )
    p.add_argument(
        "--json",
        dest="json_path",
        default=None,
        help="also write a copy of simulation.json (the whole simulation: settings, the coordinator's report, "
        "baselines, timings; always written to --output) to this path",
    )
    p.add_argument(
        "--no-baselines",
        action="store_true",
        help="skip the baselines (central DP, each party alone, non-private forest, majority class)",
    )
    p.add_argument("--flower-logs", action="store_true", help="show Flower's own logs")
    p.add_argument(
        "--prepare-only",
        action="store_true",
        help="only write the parties' workspace and print the `flwr run` command that uses it",
    )
    p.set_defaults(handler=run)


def say(msg: str) -> None:
    """Progress on stderr (the report goes to stdout)."""
    print(msg, file=sys.stderr, flush=True)


def output_dir(
    output: str | None,
    overwrite: bool,
    run_files: tuple[str, ...] = _RUN_FILES,
    temp_prefix: str = "edprf-simulate-",
    holds: str = "a run",
    lock: Callable[[Path], object] | None = None,
) -> Path:
    """A directory for this run's files: never a mix of an old run's and this one's.

    A directory created here (and each missing parent) has mode 0700, whatever the umask, as a temporary one
    has; an existing one keeps its mode.

    Parameters
    ----------
    output : str or None
        ``--output``; None: a new temporary directory named ``temp_prefix...``.
    overwrite : bool
        ``--overwrite``: remove an old run's files instead of refusing the directory.
    run_files : tuple of str
        What a run writes there, as glob patterns (``edprf sweep``: ``run-*``, ``sweep.csv``, ...).
    temp_prefix : str
        Name prefix of the temporary directory used when ``output`` is None.
    holds : str
        What ``run_files`` are, for the refusal (``a run``: its parties' ledgers have spent their budget).
    lock : callable, optional
        Takes the directory's lock (:func:`edprf_fl.hold_directory`), called once it exists and before it is
        looked at: a second command on it is refused before it reads or removes anything (review rev-auto A2).

    Raises
    ------
    ValueError
        ``output`` holds one of ``run_files`` and ``overwrite`` is off, or ``lock`` refuses it.
    """
    from protocol import make_owner_only_dirs

    if not output:
        out_dir = Path(tempfile.mkdtemp(prefix=temp_prefix))
        if lock is not None:
            lock(out_dir)
        return out_dir
    out_dir = Path(output)
    if out_dir.exists() and not out_dir.is_dir():
        raise ValueError(f"--output {out_dir}: not a directory")
    make_owner_only_dirs(out_dir)  # the run writes copies of its input rows there: 0700 if created here
    if lock is not None:
        lock(out_dir)
    old = [pattern for pattern in run_files if any(out_dir.glob(pattern))]
    if old and not overwrite:
        spent = "; its parties' ledgers have spent their budget" if holds == "a run" else ""
        raise ValueError(
            f"--output {out_dir} already holds {holds} ({', '.join(old)}{spent}): choose a new --output, or pass "
            f"--overwrite to replace {'that run' if holds == 'a run' else 'them'}"
        )
    for target in [path for pattern in old for path in out_dir.glob(pattern)]:
        shutil.rmtree(target) if target.is_dir() else target.unlink()
    return out_dir


SIMULATE_LOCK = ".edprf-output.lock"
"""The lock file in ``--output`` while a simulation runs (removed at its end): its pid and command.  ``edprf demo
--output`` takes the same one (:data:`edprf_fl.cli._demo.DEMO_LOCK`): both write ``global-model.edprf``, so a demo
and a simulation on one directory are refused alike (final read of stop 67)."""


def hold_output(held: ExitStack, out_dir: Path) -> None:
    """Hold ``out_dir`` until ``held`` closes: a second ``edprf simulate`` on it is refused, naming this one."""
    from edprf_fl import hold_directory
    from protocol import make_owner_only_dirs

    def refusal(who: str) -> str:
        return (
            f"--output {out_dir} is in use by another edprf command ({who}): a simulation there would share its "
            "files (a simulation's workspace and its parties' ledgers); wait for it to end (or stop it), or choose "
            "another --output"
        )

    command = f"edprf simulate --output {shlex.quote(str(out_dir))}"
    held.enter_context(hold_directory(out_dir, SIMULATE_LOCK, refusal, command, remove=True, make=make_owner_only_dirs))


def run(args: argparse.Namespace) -> int:
    from ._main import require_federation
    from ._simulation_args import refuse_unused_partition_options

    settings = settings_from_args(args)  # refuses impossible settings before any data is read
    refuse_unused_partition_options(args, [settings.partition])
    if args.json_path:
        _check_json_path(Path(args.json_path))
    require_federation()
    created = not args.output or not Path(args.output).exists()
    with ExitStack() as held:
        try:
            out_dir = output_dir(args.output, args.overwrite, lock=lambda d: hold_output(held, d))
        except BaseException:
            held.close()  # the lock file first: a directory created here and left empty goes
            if args.output:
                _drop_if_empty(Path(args.output), created)
            raise
        try:
            return _run_in(settings, out_dir, args)
        finally:  # a run that wrote something (its parties' ledgers) keeps its directory, a failed empty one goes
            held.close()
            _drop_if_empty(out_dir, created)


def _run_in(settings: SimulationSettings, out_dir: Path, args: argparse.Namespace) -> int:
    """The simulation (or ``--prepare-only``) in ``out_dir``, held by this process; a stop says what it left."""
    from edprf_fl import interrupt_behind
    from edprf_fl.simulation import SettingsError

    try:
        return _prepare_only(settings, out_dir) if args.prepare_only else _simulate(settings, out_dir, args)
    except SettingsError as exc:  # found in the data (no row conforms): named by its flags too
        raise ValueError(exc.describe(flag_of)) from None
    except (KeyboardInterrupt, Exception) as exc:  # after a Ctrl-C, C code may raise another error in its place
        # (numpy: "not a valid PEP 3118 buffer format string"): the stop is said as one (CI rehearsal 4 at 71544bb:
        # exit 1, not 130)
        interrupt = interrupt_behind(exc)
        if interrupt is None:
            raise
        said = _finished_before_the_stop(out_dir) or _spent_so_far(out_dir)
        if said:
            say(said)
        if interrupt is exc:
            raise
        raise interrupt from exc


def _finished_before_the_stop(out_dir: Path) -> str:
    """One line when the federation had written its model and a completed report before the stop (a Ctrl-C while
    Ray shuts down, or during the baselines), ``""`` otherwise: that model is whole, its ε spent as planned, and a
    rerun would spend it again."""
    import json

    model, report = out_dir / "global-model.edprf", out_dir / "report.json"
    try:
        completed = model.is_file() and json.loads(report.read_text(encoding="utf-8")).get("status") == "completed"
    except (OSError, ValueError, AttributeError):  # absent, partly written or not an object: not finished
        return ""
    if not completed:
        return ""
    return (
        f"the federation had finished before the stop: its model {model} and {report} are complete (the summary, "
        "the baselines and the plot were not made); keep them rather than rerun, which would spend epsilon again"
    )


def _spent_so_far(out_dir: Path) -> str:
    """What the simulated parties' ledgers under ``out_dir`` spent before a stop, in one line ("" if none did)."""
    from client import format_epsilon
    from edprf_core.count_text import count_text

    parties = [d for d in (out_dir / "workspace").glob("party-*") if d.is_dir()]
    totals = []
    for path in (d / "ledger.sqlite" for d in parties):  # a party creates its ledger when first asked
        totals.append(_total_of(path))
    charged = [t for t in totals if t > 0]
    if not charged:
        return ""
    return (
        f"stopped after {len(charged)} of {count_text(len(parties), 'party', 'parties')} charged their ledgers (up to epsilon "
        f"{format_epsilon(max(charged))} each; `edprf budget {out_dir}/workspace/party-NNNN/ledger.sqlite` shows one); "
        f"they keep it: rerun with --output {out_dir} --overwrite, or choose a new --output"
    )


def _total_of(path: Path) -> Fraction | int:
    """What one simulated party's ledger spent: 0 for a ledger created and not yet written (no spends table:
    the stop came between its creation and its tables), after recovering one a kill left mid-write."""
    from client import read_ledger_readonly, total_spent

    for attempt in range(2):
        try:
            return total_spent(read_ledger_readonly(path))
        except (ValueError, OSError):
            if attempt or not _recovered(path):
                return 0
    return 0


def _recovered(path: Path) -> bool:
    """Recover a simulated party's ledger that a kill left mid-transaction (its write-ahead log needs recovery,
    which a read-only connection cannot run: "attempt to write a readonly database", CI rehearsal of stop 44).
    Only the ledgers of this run's own workspace; an empty file has nothing to recover."""
    import sqlite3
    from contextlib import closing

    try:
        if path.stat().st_size == 0:
            return False
        with closing(sqlite3.connect(path, timeout=5.0)) as db:  # opening read-write runs the recovery
            db.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
    except (OSError, sqlite3.Error):
        return False
    return True


def _check_json_path(path: Path) -> None:
    """Refuse a ``--json`` path that cannot be written, before the federation runs and spends its budgets."""
    if path.is_dir():
        raise ValueError(f"--json {path}: is a directory; give a file name")
    if not path.parent.is_dir():
        raise ValueError(f"--json {path}: directory {path.parent} does not exist")


def _drop_if_empty(out_dir: Path, created: bool) -> None:
    """Remove the directory this run created when the run failed before writing anything into it (a failure
    after a party wrote its ledger keeps the directory: the ledger records what was spent)."""
    if created and out_dir.is_dir() and not any(out_dir.iterdir()):
        with contextlib.suppress(OSError):  # another command took it meanwhile (its lock file is there)
            out_dir.rmdir()


def _prepare_only(settings: SimulationSettings, out_dir: Path) -> int:
    import tomli_w

    from edprf_fl import quiet_flwr
    from edprf_fl.simulation import prepare_workspace
    from protocol import open_owner_only

    out_dir = out_dir.resolve()  # the command runs from the project directory: paths that hold from anywhere
    cfg = prepare_workspace(settings, out_dir, say).config
    run_config = out_dir / "run-config.toml"
    with open_owner_only(run_config) as f:
        f.write(tomli_w.dumps(cfg.run_config()))
    print(
        f"workspace: {cfg.sim_dir}\nrun config: {run_config} (every setting of the coordinator's run)\n"
        "run it from the project directory with:\n"
        f"  FLWR_DISABLE_RUNTIME_DEPENDENCY_INSTALLATION=1 RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0 "
        f"{quiet_flwr('run . --stream')} "
        f'--federation-config "num-supernodes={settings.parties}" --run-config {shlex.quote(str(run_config))}\n'
        "(the first variable keeps Flower from installing the app's dependencies from the package index for the "
        "run: this environment has them; the second keeps Ray to this machine's 127.0.0.1 instead of looking up a "
        "route to a public address; the third and the fourth keep Flower from sending usage events to "
        "telemetry.flower.ai and from asking api.flower.ai for a newer release)\n" + LOCAL_SUPERLINK_WARNING
    )
    return 0


def _simulate(settings: SimulationSettings, out_dir: Path, args: argparse.Namespace) -> int:
    from edprf_fl.simulation import (
        CONTRIBUTIONS_FILE,
        NO_PLOT_TEXT,
        contributions_markdown,
        plot_report,
        report_lines,
        run_simulation,
    )
    from protocol import open_owner_only

    from ._child_process import run_in_child

    # --seeded-noise: the guarantee says NOT differentially private, once (the parties log it at DEBUG)
    report = run_simulation(settings, out_dir, progress=say, flower_logs=args.flower_logs, isolate_ray=run_in_child)
    if not report.completed:
        said = [text for text in (report.guarantee, report.federated.get("failure")) if text]
        print(f"federation failed: {'; '.join(said) or 'no model'}; see {out_dir / 'report.json'}", file=sys.stderr)
        return 1
    model = report.federated["model_path"]
    contributions = out_dir / CONTRIBUTIONS_FILE if report.contributions else None
    writing = out_dir / "accuracy.png"
    try:
        plot = plot_report(report, writing)
        writing = out_dir / "simulation.json"
        report.write_json(writing)
        if contributions is not None:
            writing = contributions
            alpha = report.federated.get("parameters", {}).get("flag_alpha")
            with open_owner_only(contributions) as f:
                f.write(contributions_markdown(report.contributions, alpha))
        if args.json_path:
            writing = Path(args.json_path)
            report.write_json(writing)
    except OSError as exc:  # a full disk: the federation's own files were written before
        # the error first: a reader of stdout that goes away while the results print must not hide it (final read)
        print(
            f"edprf simulate: error: writing {writing} failed ({exc.strerror or type(exc).__name__}); the federation "
            f"completed: its model is {model} and its report {out_dir / 'report.json'}",
            file=sys.stderr,
        )
        _print_results(report_lines(report))  # the results all the same: the failed write does not take them
        return 1
    _print_results(report_lines(report))  # after the files: a print that fails (a closed pipe) cannot lose them
    print(
        f"\nmodel: {model}\nreport: {out_dir / 'simulation.json'}"
        + (f"\ncontributions: {contributions}" if contributions else "")
        + f"\nplot: {plot or NO_PLOT_TEXT}"
    )
    return 0


def _print_results(lines: list[str]) -> None:
    """The simulation's result table and lines, on stdout (review rev-auto A9: printed after its files are written)."""
    for line in lines:
        print(line)
