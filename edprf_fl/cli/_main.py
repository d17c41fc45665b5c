"""Entry point of the ``edprf`` command.

Subcommands live in their own modules and register themselves through
``register(subparsers)``; each handler returns a process exit code.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Sequence

from ._exit_text import error_text
from ._given_options import CommandParser

__all__ = ["build_parser", "main", "require_federation"]

# module name -> imported when the parser is built: each imports only light modules at its top (the
# standard library, light constants) so that `edprf --help` and argument errors stay fast, and a subcommand's
# heavy imports (pandas, numpy, flwr, ray) are paid only when its handler runs
# (tests/federation/test_cli_startup.py)
SUBCOMMANDS: tuple[str, ...] = (
    "_demo",
    "_inspect",
    "_predict_cmd",
    "_evaluate_cmd",
    "_explain",
    "_export",
    "_budget_cmd",
    "_schema_cmd",
    "_simulate",
    "_sweep",
    "_sweep_report_cmd",
    "_certs",
    "_party_cmd",
    "_run_cmd",
    "_consortium",
)

FEDERATION_MODULES = frozenset({"flwr", "ray"})
"""Imported only by the subcommands that run a federation; the slim install (no extras) lacks them."""


def require_federation() -> None:
    """Fail before any work when Flower is missing (main turns this into a one-line message naming the extra)."""
    import importlib.util

    if importlib.util.find_spec("flwr") is None:
        raise ModuleNotFoundError("No module named 'flwr'", name="flwr")


def build_parser() -> argparse.ArgumentParser:
    parser = CommandParser(
        prog="edprf",
        description="Federated, differentially private random forests (eDPRF with permute-and-flip).",
        allow_abbrev=False,
    )
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more log output (-vv for debug)")
    parser.add_argument("--version", action=_SourceVersion)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=CommandParser)
    for name in SUBCOMMANDS:
        try:
            module = importlib.import_module(f"edprf_fl.cli.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"edprf_fl.cli.{name}":
                continue
            raise
        module.register(sub)
    for command in sub.choices.values():  # -v is accepted after the subcommand too
        _accept_verbose(command)
    return parser


def _accept_verbose(parser: argparse.ArgumentParser) -> None:
    """Accept ``-v`` and refuse abbreviated options (``--party`` for ``--parties``) in every parser below."""
    parser.allow_abbrev = False  # read at parse time: a prefix of a long option is an error, never a guess
    if "-v" not in parser._option_string_actions:
        parser.add_argument(
            "-v", "--verbose", action="count", default=argparse.SUPPRESS, help="more log output (-vv for debug)"
        )
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for inner in action.choices.values():
                _accept_verbose(inner)


class _SourceVersion(argparse.Action):
    """``--version``: the version of the code that runs, from its source (:func:`edprf_fl.source_version`), and the
    source tree's git revision when it is a checkout (review rev-research R13: the install's metadata outlived a
    ``git checkout`` under an editable install)."""

    def __init__(self, option_strings: list[str], dest: str) -> None:
        super().__init__(
            option_strings,
            argparse.SUPPRESS,
            nargs=0,
            default=argparse.SUPPRESS,
            help="show program's version number (and git revision) and exit",
        )

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: object,
        option_string: str | None = None,
    ) -> None:
        print(f"{parser.prog} {_version()}")  # on stdout, as argparse's version action
        parser.exit()


def _version() -> str:
    """``0.2.10``, ``0.2.10 (git c1cb76d-dirty)``, or ``unknown`` (neither a source nor an installed package)."""
    from edprf_fl import git_describe, git_problem, source_version

    version, _ = source_version()
    revision = git_describe()
    if revision is None and (problem := git_problem()):  # a checkout whose revision git did not give
        return f"{version} (git revision unknown: {problem})"
    return version + (f" (git {revision})" if revision else "")


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``edprf`` with ``argv`` (default: the command line); returns the exit status (docs/exit-status.md).

    Before anything else, standard output and error are made safe for scripts (:mod:`._output_streams`): no
    encoding error, a closed standard output said as an error, a reader that went away ending the command quietly
    with :data:`~._output_streams.EXIT_BROKEN_PIPE`.
    """
    from ._output_streams import (
        closed_stdout_error,
        fail_on_closed_stdout,
        never_fail_on_encoding,
        private_matplotlib_dir,
        quiet_after_broken_pipe,
        stdout_pipe_closed,
    )

    fail_on_closed_stdout()
    never_fail_on_encoding()
    private_matplotlib_dir()
    try:
        return _main(argv)
    except BrokenPipeError as exc:  # said by argparse's --help or --version, or when stdout is flushed
        if not stdout_pipe_closed(exc):
            raise
        return quiet_after_broken_pipe()
    except OSError as exc:  # --version to a closed stdout (a command's own writes are said by _main)
        if not closed_stdout_error(exc):
            raise
        print(f"edprf: error: {error_text(exc)}", file=sys.stderr)
        return 1


def _main(argv: Sequence[str] | None) -> int:
    from ._output_streams import quiet_after_broken_pipe, stdout_pipe_closed

    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:  # said by the subcommand that was given them, with its usage (argparse says it at the top level)
        innermost = _innermost(parser, args)
        innermost.error(_unrecognized(extra, innermost))
    logging.basicConfig(
        level=logging.WARNING - 10 * min(args.verbose, 2),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    if not getattr(args, "handler", None):  # no command: what to type, on stderr (a usage error, exit 2)
        _innermost(parser, args).print_help(sys.stderr)
        return 2
    from edprf_fl import keep_flower_telemetry_off, remembered_interrupts

    keep_flower_telemetry_off()  # before any subcommand imports Flower

    from ._stop_signals import Terminated, exit_status, stop_signals
    from ._warning_lines import warnings_as_lines

    try:
        # a Ctrl-C that a finalizer dropped still stops the command; SIGTERM and SIGHUP stop it as Ctrl-C does
        with remembered_interrupts(), stop_signals(), warnings_as_lines(_innermost(parser, args).prog):
            status = int(args.handler(args) or 0)
            sys.stdout.flush()  # a closed pipe is said here, not as "Exception ignored" when Python exits
            return status
    except KeyboardInterrupt as interrupt:
        print(f"stopped by {interrupt}" if isinstance(interrupt, Terminated) else "interrupted", file=sys.stderr)
        return exit_status(interrupt)
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] not in FEDERATION_MODULES:
            raise
        print(
            f"{_innermost(parser, args).prog}: error: this command runs a federation and needs Flower ({exc.name} is not "
            "installed): pip install 'edprf-fl[federation]'",
            file=sys.stderr,
        )
        return 1
    except MemoryError as exc:  # pyarrow's ArrowMemoryError is one too: a machine too small, said as one line
        logging.getLogger("edprf").debug("out of memory", exc_info=True)
        print(
            f"{_innermost(parser, args).prog}: error: out of memory ({type(exc).__name__}"
            f"{': ' + str(exc).splitlines()[0] if str(exc) else ''}): run it on a machine with more memory, or on "
            "a smaller file (docs/your-own-data.md, How much memory and time)",
            file=sys.stderr,
        )
        return 1
    except (ValueError, OSError) as exc:
        if stdout_pipe_closed(exc):  # `edprf ... | head -1`: the reader has what it wanted; stop quietly
            return quiet_after_broken_pipe()
        logging.getLogger("edprf").debug("failure", exc_info=True)
        print(f"{_innermost(parser, args).prog}: error: {error_text(exc)}", file=sys.stderr)
        return getattr(exc, "edprf_exit_status", 1)  # a UsageError (_usage_error.py): 2
    finally:  # what is still buffered after a stop or an error, flushed now: a reader gone keeps the status chosen
        try:
            sys.stdout.flush()
        except (ValueError, OSError) as exc:
            if stdout_pipe_closed(exc):
                quiet_after_broken_pipe()


def _innermost(parser: argparse.ArgumentParser, args: argparse.Namespace) -> argparse.ArgumentParser:
    """The (sub)command parser that read the command line last: ``edprf schema draft`` -> the draft parser."""
    while True:
        action = next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)
        chosen = getattr(args, action.dest, None) if action is not None else None
        if chosen not in (action.choices if action is not None else {}):
            return parser
        parser = action.choices[chosen]


def _unrecognized(extra: Sequence[str], parser: argparse.ArgumentParser) -> str:
    """argparse's message for arguments no option takes, with the closest option for a mistyped one."""
    import difflib

    text = f"unrecognized arguments: {' '.join(extra)}"
    options = [o for o in parser._option_string_actions if o.startswith("--")]
    for arg in extra:
        if arg.startswith("--"):
            close = difflib.get_close_matches(arg.split("=", 1)[0], options, n=1)
            if close:
                return f"{text} (did you mean {close[0]}?)"
    return text
