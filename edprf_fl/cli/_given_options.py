"""The options a command line gave, told from those at their defaults, with argparse's public API only.

``edprf sweep --resume`` takes every option not given from the sweep's record and compares those given with it,
one given at its default value too (``--n-bins 20`` at the resume of an ``--n-bins 8`` sweep is refused, not
replaced by the record's 8); a parse's namespace cannot tell the two apart.  A second parse of the same arguments,
by a parser of the same options without defaults, holds the options given and nothing else (review rev-s65 F6:
the actions' classes were swapped through argparse's private ``_actions``).

Standard library only (the parser is built without the heavy libraries: tests/federation/test_cli_startup.py).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["AddOptions", "CommandParser"]

AddOptions = Callable[[argparse.ArgumentParser], None]
"""A function that adds a command's options to a parser (``add_argument`` only: no ``set_defaults``)."""


class CommandParser(argparse.ArgumentParser):
    """The parser of ``edprf`` and of each subcommand (``add_subparsers(parser_class=CommandParser)``): an
    ``ArgumentParser`` that, once told :meth:`note_given_options`, records which options each command line gave,
    and whose ``--help`` says a closed standard output as every command does (:meth:`print_help`).
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._noted: tuple[str, AddOptions] | None = None

    def print_help(self, file: Any = None) -> None:
        """``ArgumentParser.print_help``, its write errors raised rather than dropped: argparse drops them, so
        ``edprf --help >&-`` printed nothing and exited 0, where every command says a closed standard output as an
        error (exit 1) and ends quietly when its reader has gone (141, ``edprf_fl.cli._output_streams``)."""
        (sys.stdout if file is None else file).write(self.format_help())

    def note_given_options(self, dest: str, add_options: AddOptions) -> None:
        """After each parse, set the namespace's ``dest`` to the destinations of the options given (a frozenset,
        absent when none was), an option given at its default value included.

        Parameters
        ----------
        dest : str
            The namespace attribute.
        add_options : callable
            The function that added this parser's options (:data:`AddOptions`): called again, at each parse, on a
            parser whose options have no default (about half a millisecond for ``edprf sweep``'s).
        """
        self._noted = (dest, add_options)

    def parse_known_args(
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        """``ArgumentParser.parse_known_args``; the options given noted (:meth:`note_given_options`)."""
        args = sys.argv[1:] if args is None else list(args)
        parsed, extra = super().parse_known_args(args, namespace)
        if self._noted is not None:
            dest, add_options = self._noted
            bare = _WithoutDefaults(prog=self.prog, add_help=False, allow_abbrev=self.allow_abbrev)
            add_options(bare)
            given = vars(bare.parse_known_args(args)[0])  # what this parser did not add (-v) is left unknown
            if given:
                setattr(parsed, dest, frozenset(given))
        return parsed, extra


class _WithoutDefaults(argparse.ArgumentParser):
    """A parser whose options have no default (``argparse.SUPPRESS``; a default given to ``add_argument`` dropped):
    a parse's namespace holds the options given, and only them."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(argument_default=argparse.SUPPRESS, **kwargs)

    def add_argument(self, *args: Any, **kwargs: Any) -> argparse.Action:
        """``ArgumentParser.add_argument`` without ``default``."""
        kwargs.pop("default", None)
        return super().add_argument(*args, **kwargs)
