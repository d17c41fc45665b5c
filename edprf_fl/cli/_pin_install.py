"""``edprf party install-pin DIR``: install the app-pinning launcher as ``DIR/flwr-clientapp``.

The launcher (:func:`edprf_fl.pinned_launcher_text`) ships in the package, so every installation can pin (review
rev-pkg P2: neither the wheel nor the source release held it, and the runbook's ``install`` and ``sed`` recipe
needed a git checkout).  The file is written with this command's own interpreter on its ``#!`` line: the
virtualenv's ``python``, which imports the same Flower as the SuperNode (``#!/usr/bin/env python3`` would take the
first ``python3`` on the service's PATH, the system's, without Flower).  It replaces a different file only with
``--force``; the same bytes are left as they are.  Then it prints what the party's service environment needs.
This module stays light (the parser imports it): the standard library only at its top.
"""

from __future__ import annotations

import argparse
import os
import stat
import sys
from pathlib import Path

__all__ = ["LAUNCHER_NAME", "add_install_pin", "run_install_pin", "trusted_apps_path"]

LAUNCHER_NAME = "flwr-clientapp"
"""The program a SuperNode (or its SuperExec) starts for each ClientApp, looked up on its PATH."""

LAUNCHER_MODE = 0o755


def trusted_apps_path(given: Path | None) -> Path | None:
    """The list of approved bundles: ``--trusted-apps`` when given, else ``EDPRF_TRUSTED_APP_HASHES`` (the variable
    the launcher reads), else None."""
    if given is not None:
        return given
    named = os.environ.get("EDPRF_TRUSTED_APP_HASHES")
    return Path(named) if named else None


def add_install_pin(inner: argparse._SubParsersAction) -> None:
    """Register ``install-pin`` under ``edprf party``."""
    p = inner.add_parser(
        "install-pin",
        help="install the app pin: a flwr-clientapp that runs approved app bundles only",
        description="Write the app-pinning launcher as DIR/flwr-clientapp (mode 0755), run by this command's "
        "Python (the virtualenv that holds Flower), and print the PATH and EDPRF_TRUSTED_APP_HASHES lines for the "
        "process that starts the party's ClientApps (deploy/README.md section 6). An existing different "
        "DIR/flwr-clientapp is replaced only with --force.",
    )
    p.add_argument("directory", type=Path, metavar="DIR", help="the directory to put first on that PATH")
    p.add_argument(
        "--trusted-apps",
        type=Path,
        metavar="PATH",
        default=None,
        help="the list of approved bundle hashes, to name in the printed lines (default: $EDPRF_TRUSTED_APP_HASHES "
        "when set)",
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="replace DIR/flwr-clientapp when it differs from this launcher (another version's, another "
        "interpreter's, or another program) (default: refuse)",
    )
    p.set_defaults(handler=run_install_pin)


def run_install_pin(args: argparse.Namespace) -> int:
    """Write the launcher, refuse what it must not replace, and print the next step.

    Raises
    ------
    ValueError
        DIR is a file, or is writable by other accounts (anyone could then replace the launcher and run any
        bundle); DIR/flwr-clientapp is a directory, or a different file and ``--force`` was not given; this
        Python cannot be named on a ``#!`` line.
    ModuleNotFoundError
        Flower is not installed next to this Python (the launcher imports it).
    """
    from edprf_fl import pinned_launcher_text

    from ._main import require_federation

    require_federation()
    directory: Path = args.directory.absolute()
    target = directory / LAUNCHER_NAME
    text = pinned_launcher_text(sys.executable).encode("utf-8")
    if directory.exists() and not directory.is_dir():
        raise ValueError(f"{directory}: not a directory")
    if target.is_dir() and not target.is_symlink():
        raise ValueError(f"{target}: is a directory; expected the launcher's file name")
    same = target.is_file() and not target.is_symlink() and target.read_bytes() == text
    if os.path.lexists(target) and not same and not args.force:
        raise ValueError(f"{target} exists and {_differs(target, text)}; pass --force to replace it")
    for created in reversed([d for d in (directory, *directory.parents) if not os.path.lexists(d)]):
        created.mkdir(mode=0o755, exist_ok=True)  # each new one, parents too: not writable by others, any umask
        os.chmod(created, 0o755)
    mode = stat.S_IMODE(directory.stat().st_mode)
    if mode & 0o022:
        raise ValueError(
            f"{directory} is writable by other accounts (mode {mode:04o}): any of them could replace the launcher "
            f"and run any bundle; chmod go-w {directory}, or choose a directory only the party's account writes"
        )
    if same:
        os.chmod(target, LAUNCHER_MODE)
        print(f"{target}: already this launcher (run by {sys.executable}); mode 0755")
    else:
        from protocol import save_atomic

        save_atomic(target, text, mode=LAUNCHER_MODE)
        print(f"wrote {target} (mode 0755): the app pin, run by {sys.executable} (flwr {_flwr_version()})")
    trusted = trusted_apps_path(args.trusted_apps)
    listed = str(trusted.absolute()) if trusted is not None else "/path/to/trusted-apps.txt"
    print(
        "next: start the process that starts this party's ClientApps (its flower-superexec; flower-supernode when "
        "it starts its own) with these two in its environment (a service file's Environment= lines):\n"
        f"  PATH={directory}:$PATH\n"
        f"  EDPRF_TRUSTED_APP_HASHES={listed}\n"
        "the list holds one approved bundle's SHA-256 per line (deploy/README.md section 6); check it with "
        f"`edprf party check --node-config ... --trusted-apps {listed}`; the party's log warns at each ClientApp "
        "that runs without the pin"
    )
    return 0


def _differs(target: Path, text: bytes) -> str:
    """How an existing ``target`` differs from the launcher this command writes."""
    if target.is_symlink():
        return "is a symbolic link"
    try:
        first = target.read_bytes().split(b"\n", 1)
    except OSError as exc:
        return f"cannot be read ({exc.strerror or type(exc).__name__})"
    if len(first) == 2 and first[1] == text.split(b"\n", 1)[1]:
        return f"is this launcher run by another interpreter ({first[0].decode('utf-8', 'replace')!r})"
    return "differs from this version's launcher"


def _flwr_version() -> str:
    from importlib import metadata

    try:
        return metadata.version("flwr")
    except metadata.PackageNotFoundError:
        return "unknown"
