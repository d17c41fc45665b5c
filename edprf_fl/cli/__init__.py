"""The ``edprf`` command line: one module per subcommand, each with ``register(subparsers)``."""

from ._main import main

__all__ = ["main"]
