"""``edprf --help``, every subcommand's ``--help`` and argument errors answer without the heavy libraries.

Building the parser reads only light constants (the settings' defaults and choice lists come from a
standard-library module); pandas, numpy, Flower and the rest load in the handler that runs a command.
Checked in a fresh interpreter, where ``sys.modules`` shows everything the parser pulled in; no timing
is asserted (``benchmarks/bench_cli_startup.py`` measures it).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

HEAVY = ("pandas", "numpy", "pyarrow", "sklearn", "scipy", "flwr", "ray")
"""Libraries that take tenths of a second to import: none may load before a command's handler runs."""

PROBE = """
import argparse, contextlib, io, sys

from edprf_fl.cli import main
from edprf_fl.cli._main import build_parser


def commands(parser, path=()):
    yield path
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from commands(sub, (*path, name))


def exit_code(argv):
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        try:
            main(argv)
        except SystemExit as done:
            return done.code
    raise AssertionError(f"{argv} did not exit")


paths = list(commands(build_parser()))
for path in paths:
    assert exit_code([*path, "--help"]) == 0, path
for argv in ERRORS:
    assert exit_code(argv) == 2, argv
print(len(paths))
print(" ".join(sorted({m.split(".")[0] for m in sys.modules} & set(HEAVY))))
"""

ERRORS = (
    ["--bogus"],
    ["simulate", "--bogus"],
    ["simulate", "--partition", "nowhere"],
    ["simulate", "--epsilon", "much"],
    ["sweep", "--epsilons", "a,b"],
    ["inspect", "--show-trees", "0", "model.edprf"],
    ["schema", "draft"],
    ["certs", "party", "--bogus"],
)
"""Argument errors: argparse refuses them (exit status 2) before any handler runs."""


def _probe() -> list[str]:
    code = f"HEAVY = {HEAVY!r}\nERRORS = {ERRORS!r}\n{PROBE}"
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.splitlines()


def test_help_and_argument_errors_import_no_heavy_library():
    n_commands, loaded = _probe()
    assert int(n_commands) >= 15  # edprf itself and its subcommands, nested ones included
    assert loaded == "", f"imported while building the parser: {loaded}"
