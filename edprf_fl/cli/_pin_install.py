"""``edprf party install-pin DIR``: install the app-pinning launcher as ``DIR/flwr-clientapp``.

The launcher (:func:`edprf_fl.pinned_launcher_text`) ships in the package, so every installation can pin (review
rev-pkg P2: neither the wheel nor the source release held it, and the runbook's ``install`` and ``sed`` recipe
needed a git checkout).  The file is written with this command's own interpreter on its ``#!`` line: the
virtualenv's ``python``, which imports the same Flower as the SuperNode (``#!/usr/bin/env python3`` would take the
first ``python3`` on the service's PATH, the system's, without Flower).  It replaces a different file only with
``--force``; the same bytes are left as they are; a DIR other accounts could replace, itself or through a parent
they can write without the sticky bit, is refused (review rev-pkg2 R7).  Then it prints what the party's service
environment needs, as systemd ``Environment=`` lines with the values written out (review rev-pkg2 R5).
This module stays light (the parser imports it): the standard library only at its top.
"""

from __future__ import annotations

import argparse
import os
import shlex
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
    from ._exit_text import exit_epilog

    p = inner.add_parser(
        "install-pin",
        epilog=exit_epilog(
            "0 installed (or already there); 1 refused (DIR or the list writable by other accounts, another launcher without --force) or an error"
        ),
        help="install the app pin: a flwr-clientapp that runs approved app bundles only",
        description="Write the app-pinning launcher as DIR/flwr-clientapp (mode 0755), run by this command's "
        "Python (the virtualenv that holds Flower), and print the systemd Environment= lines, PATH and "
        "EDPRF_TRUSTED_APP_HASHES with their values written out, for the process that starts the party's ClientApps "
        "(deploy/README.md section 6). An existing different DIR/flwr-clientapp is replaced only with --force; a DIR "
        "other accounts can write, or in a parent they can write without the sticky bit, is refused.",
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

    The printed ``Environment=`` lines hold the values written out (systemd expands no ``$PATH`` there, review
    rev-pkg2 R5): ``PATH`` is DIR, then this Python's ``bin`` directory, then this process's ``PATH`` without
    repeats; without a list (no ``--trusted-apps``, no ``EDPRF_TRUSTED_APP_HASHES``) its line is said to need the
    list's path filled in.  Privacy cost: none (a local file is written; nothing is released).

    Raises
    ------
    ValueError
        Flower is not installed next to this Python (the launcher imports it; the ``deploy`` extra is named, review
        rev-pkg2 R9); DIR is a file, or is writable by other accounts, or one of its existing parents is writable by
        other accounts without the sticky bit (anyone could then replace the launcher, or swap DIR for a directory
        of their own, and run any bundle; review rev-pkg2 R7); DIR/flwr-clientapp is a directory, or a different
        file and ``--force`` was not given; this Python cannot be named on a ``#!`` line.
    """
    from edprf_fl import pinned_launcher_text
    from protocol import others_can_write, save_atomic

    _refuse_without_flower()
    directory: Path = args.directory.absolute()
    target = directory / LAUNCHER_NAME
    text = pinned_launcher_text(sys.executable).encode("utf-8")
    if directory.exists() and not directory.is_dir():
        raise ValueError(f"{directory}: not a directory")
    if target.is_dir() and not target.is_symlink():
        raise ValueError(f"{target}: is a directory; expected the launcher's file name")
    same = target.is_file() and not target.is_symlink() and target.read_bytes() == text
    existed = os.path.lexists(target)
    if os.path.lexists(target) and not same and not args.force:
        raise ValueError(f"{target} exists and {_differs(target, text)}; pass --force to replace it")
    _refuse_a_parent_others_can_write(directory)
    for created in reversed([d for d in (directory, *directory.parents) if not os.path.lexists(d)]):
        created.mkdir(mode=0o755, exist_ok=True)  # each new one, parents too: not writable by others, any umask
        os.chmod(created, 0o755)
    mode = stat.S_IMODE(directory.stat().st_mode)
    if others_can_write(mode):
        raise ValueError(
            f"{directory} is writable by other accounts (mode {mode:04o}): any of them could replace the launcher "
            f"and run any bundle; chmod go-w {directory}, or choose a directory only the party's account writes"
        )
    if same:
        os.chmod(target, LAUNCHER_MODE)
        print(f"{target}: already this launcher (run by {sys.executable}); mode 0755")
    else:
        save_atomic(target, text, mode=LAUNCHER_MODE)
        print(f"wrote {target} (mode 0755): the app pin, run by {sys.executable} (flwr {_flwr_version()})")
    print(_next_step(directory, trusted_apps_path(args.trusted_apps), reinstalled=existed))
    return 0


def this_launcher_body() -> str:
    """The launcher this version installs, from its second line on (the first names the interpreter)."""
    from edprf_fl import pinned_launcher_text

    return pinned_launcher_text("/python").split("\n", 1)[1]  # any interpreter: its line is the one cut off


def _refuse_without_flower() -> None:
    """Refuse before any work when Flower is not importable by this Python (not ``require_federation()``: main's
    message for it names the simulation's extra, and a party needs the ``deploy`` one; review rev-pkg2 R9).

    Raises
    ------
    ValueError
        Naming ``pip install 'edprf-fl[deploy]'`` and why: the launcher imports Flower, with this Python.
    """
    import importlib.util

    from ._run_cmd import FLOWER_INSTALL

    try:
        found = importlib.util.find_spec("flwr") is not None
    except ModuleNotFoundError:  # an import hook that refuses it
        found = False
    if not found:
        raise ValueError(
            f"Flower is not installed next to {sys.executable}: the launcher this command writes imports Flower and "
            f"runs with this Python, so the party's venv needs the deploy extra: {FLOWER_INSTALL}"
        )


def _service_path(directory: Path) -> str:
    """The ``PATH`` value for the service that starts the ClientApps, written out: ``directory``, this Python's
    ``bin`` directory (where ``flower-superexec`` and ``flower-supernode`` are), then this process's ``PATH`` (else
    ``os.defpath``), each entry once, relative and empty entries left out (a service's working directory is no
    place to look programs up)."""
    entries = [str(directory), str(Path(sys.executable).parent)]
    entries += os.environ.get("PATH", os.defpath).split(os.pathsep)
    return os.pathsep.join(dict.fromkeys(e for e in entries if os.path.isabs(e)))


def _environment_line(name: str, value: str) -> str:
    """``Environment=NAME=value`` as systemd reads it: ``%`` doubled (its specifiers), the assignment quoted when the
    value holds a space, a quote or a backslash."""
    assignment = f"{name}={value.replace('%', '%%')}"
    if any(c.isspace() or c in "\"'\\" for c in value):
        assignment = '"' + assignment.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return f"Environment={assignment}"


def _next_step(directory: Path, trusted: Path | None, reinstalled: bool = False) -> str:
    """What to put in the service's environment: its ``Environment=`` lines, values written out.  Over a launcher
    already there (an upgrade, deploy/README.md section 11, step 2), first that a service already started with them
    needs no restart (review rev-upgrade U8)."""
    already = (
        f"next: a flower-superexec (or flower-supernode) already started with {directory} first on its PATH runs this "
        "launcher from its next ClientApp, no restart needed; otherwise, start the process that starts"
    )
    lines = [
        (
            (already if reinstalled else "next: start the process that starts")
            + " this party's ClientApps (its flower-superexec; flower-supernode when it starts its own) with these "
            "in its environment, as its systemd unit's lines (values written out: "
            "systemd expands no $PATH in Environment=; PATH is the pinned directory, this venv's bin, then this "
            "shell's PATH: drop what the service does not need, keep the first two first):"
        ),
        f"  {_environment_line('PATH', _service_path(directory))}",
    ]
    if trusted is not None:
        listed = str(trusted.absolute())
        lines.append(f"  {_environment_line('EDPRF_TRUSTED_APP_HASHES', listed)}")
    else:
        listed = "LIST"
        lines.append(
            "  and an Environment=EDPRF_TRUSTED_APP_HASHES= line with the list's absolute path filled in (not given "
            "here: no --trusted-apps, EDPRF_TRUSTED_APP_HASHES is not set; run this again with --trusted-apps LIST "
            "to have it written out)"
        )
    lines.append(
        "the list holds one approved bundle's SHA-256 per line, and only the party's account may write it and its "
        f"directory (deploy/README.md section 6); check it with `edprf party check --node-config ... --trusted-apps "
        f"{shlex.quote(listed) if trusted is not None else listed}`; the party's log warns at each ClientApp that runs without the pin"
    )
    return "\n".join(lines)


def _refuse_a_parent_others_can_write(directory: Path) -> None:
    """Refuse DIR when one of its existing parents (as given, and with links resolved) is writable by other accounts
    without the sticky bit: any of them could rename DIR away and put a directory of their own, with their own
    ``flwr-clientapp``, in its place (review rev-pkg2 R7).  Stat bits, not ``os.access`` (root writes anything).

    Raises
    ------
    ValueError
        Naming the parent and its mode.
    """
    from protocol import others_can_write

    parents = dict.fromkeys([*directory.parents, *directory.resolve().parents])
    for parent in parents:
        try:
            mode = parent.stat().st_mode
        except OSError:  # not there yet: made below, mode 0755
            continue
        if others_can_write(mode, sticky_protects=True):
            raise ValueError(
                f"{parent} is writable by other accounts (mode {stat.S_IMODE(mode):04o}, no sticky bit): any of them "
                f"could rename {directory} away and put a directory with its own {LAUNCHER_NAME} in its place; "
                f"choose a DIR whose parents only their owners can write (e.g. $PARTY/pinned, $PARTY mode 0700), or "
                f"chmod go-w {parent}"
            )


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
