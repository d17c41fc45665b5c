#!/usr/bin/env python3
"""A party's `flwr-clientapp` that runs only the app bundles the party approved.

Each message a SuperNode receives carries the app bundle (FAB) of its run, and the SuperNode runs
that code next to the party's data; the party's policy and ledger are enforced by it.  Flower 1.41
open source cannot verify bundle signatures, so this launcher checks the bundle's SHA-256 against
a list the party keeps, before anything in the bundle is installed or imported.  A bundle not on
the list gets an error reply naming its hash; the party's data, ledger and keys are not touched.

Install it with ``edprf party install-pin DIR``: it writes this file as ``DIR/flwr-clientapp`` (mode 0755), its
first line naming the interpreter of the virtualenv that runs ``edprf``, so that it imports the same Flower.  Then
place DIR first on the PATH of the process that starts the ClientApps (the party's ``flower-superexec``, or
``flower-supernode`` when it starts its own: it starts the program of that name), and name the list in
EDPRF_TRUSTED_APP_HASHES:

    edprf party install-pin "$PARTY/pinned"
    EDPRF_TRUSTED_APP_HASHES="$PARTY/trusted-apps.txt" PATH="$PARTY/pinned:$PATH" flower-superexec ...

The list holds one hex SHA-256 per line ('#' starts a comment).  The party computes it from the
source release it reviewed: ``flwr build --app <source>`` writes ``<...>.<hash prefix>.fab``, and
``sha256sum`` of that file is the line to add (bundles are reproducible: same files, same hash).
The coordinator's ``flwr ls`` shows the ``fab-hash`` of every run.  Tied to flwr 1.41's
``flwr.supernode.runtime.run_clientapp``; tests/deployment/test_hostile_parties.py checks it.

This file is a program, not a module of the package: nothing imports it (it must run before the app bundle's
modules are imported, and import nothing of edprf-fl's own).  It ships inside the ``edprf_fl`` package so that
every installation has it (review rev-pkg P2); ``deploy/Dockerfile`` copies it into the image.  Before the app
runs, it sets EDPRF_APP_PINNED to the list's path in the ClientApp process: the party's ClientApp logs a warning
when that marker is absent (a SuperNode running every bundle the coordinator submits).  The marker stays in the
party's process and its log: nothing of it is sent to the coordinator.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import stat
import sys
from pathlib import Path

ENV = "EDPRF_TRUSTED_APP_HASHES"
PINNED_MARKER = "EDPRF_APP_PINNED"
"""Set by :func:`main` in the ClientApp process to the list's path: the party's ClientApp reads it
(``client/_app_pin.py``, which names the same variable) and warns when it is absent."""
_HEX = re.compile(r"[0-9a-f]{64}")


def writable_by_others(path: str | Path) -> str | None:
    """What makes the list at ``path`` unsafe to trust, or None: the file (links followed) has a group or other write
    bit, or a directory on the way to it, as named or with links resolved, has one without the sticky bit (read from
    the stat bits: the launcher may run as root).  Anyone who can write the list, or rename it or any directory
    above it away and put their own in its place, approves any bundle, which would then run next to the party's
    data; so the launcher approves nothing from such a list (``edprf party check`` calls the same modes a problem)."""
    listed = Path(path).absolute()
    resolved = Path(os.path.realpath(listed))
    held = resolved.stat()
    if not stat.S_ISREG(held.st_mode):
        return f"{listed} is not a regular file"
    if held.st_mode & 0o022:
        return (
            f"{resolved} (mode {stat.S_IMODE(held.st_mode):04o}) is writable by other accounts: chmod go-w {resolved}"
        )
    for directory in dict.fromkeys([*listed.parents, *resolved.parents]):
        mode = directory.stat().st_mode
        if mode & 0o022 and not mode & stat.S_ISVTX:
            return (
                f"the directory {directory} above it (mode {stat.S_IMODE(mode):04o}) is writable by other accounts "
                f"without the sticky bit: chmod go-w {directory}"
            )
    return None


def trusted_hashes(path: str | Path) -> frozenset[str]:
    """The SHA-256 hashes listed in ``path`` (ValueError for anything else on a line)."""
    found = set()
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        entry = line.split("#", 1)[0].strip().lower()
        if not entry:
            continue
        if not _HEX.fullmatch(entry):
            raise ValueError(f"{path}:{number}: expected a hex SHA-256 (64 characters), got {entry!r}")
        found.add(entry)
    return frozenset(found)


def tree_digest(directory: str | Path) -> str:
    """SHA-256 over the sorted (relative path, SHA-256 of content) of every entry under ``directory``.

    Symlinks and special files are part of the digest as such (never followed), so a
    directory holding them does not match a bundle (a FAB holds regular files only).
    """
    root = Path(directory)
    entries = []
    for entry in sorted(root.rglob("*")):
        rel = entry.relative_to(root).as_posix()
        if entry.is_symlink():
            entries.append(f"{rel}\0symlink\0{os.readlink(entry)}")
        elif entry.is_file():
            entries.append(f"{rel}\0file\0{hashlib.sha256(entry.read_bytes()).hexdigest()}")
        elif not entry.is_dir():
            entries.append(f"{rel}\0special")
    return hashlib.sha256("\n".join(entries).encode("utf-8", "surrogateescape")).hexdigest()


def bundle_tree_digest(fab: bytes) -> str:
    """The :func:`tree_digest` a correct installation of the bundle ``fab`` has (``.info/`` excluded)."""
    import io
    import zipfile

    entries = []
    with zipfile.ZipFile(io.BytesIO(fab)) as archive:
        for info in archive.infolist():
            name = info.filename.rstrip("/")
            if info.is_dir() or name == ".info" or name.startswith(".info/"):
                continue
            entries.append((name, hashlib.sha256(archive.read(info)).hexdigest()))
    # parent directories appear in a directory walk but carry no entry; files are sorted by path as in rglob
    return hashlib.sha256(
        "\n".join(f"{n}\0file\0{h}" for n, h in sorted(entries, key=lambda e: Path(e[0]))).encode(
            "utf-8", "surrogateescape"
        )
    ).hexdigest()


def install(path: str | Path) -> None:
    """In this process, run only app bundles whose content hash is in ``path``; never trust names.

    Flower 1.41's ``run_clientapp`` installs the bundle's bytes but then runs the directory named by
    the SuperLink-supplied ``fab_id``, ``fab_version`` and ``hash_str`` (``get_project_dir``), and
    ``install_from_fab`` skips installation when a directory of that name already exists.  So this
    launcher (1) hashes the bundle bytes and refuses any hash not on the party's list, (2) installs
    them into a fresh private directory (an existing directory is never reused, whatever its name),
    (3) checks the installed files against the bundle's files, and (4) answers every
    ``get_project_dir`` of the ClientApp process with that directory only, after checking that the
    requested hash is the verified one and recomputing the directory's content digest.

    A list that accounts other than its owner can write or replace (:func:`writable_by_others`), that cannot be
    read, or that holds a line other than a hash approves nothing: every bundle is then refused with the text an
    unlisted one gets (so the coordinator learns nothing of the party's files), and the reason goes to this
    process's log and stderr (the party's SuperExec or SuperNode log).
    """
    import atexit
    import shutil
    import tempfile

    from flwr.clientapp import utils as clientapp_utils
    from flwr.common import config as flwr_config
    from flwr.supernode.runtime import run_clientapp

    allowed: frozenset[str] = frozenset()
    try:
        if not str(path):
            raise ValueError(f"{ENV} is not set: set it to the party's list of trusted app bundle hashes")
        unsafe = writable_by_others(path)
        if unsafe is None:
            allowed = trusted_hashes(path)
        else:
            unusable = f"the list of trusted app bundles is not trusted: {unsafe}"
    except (OSError, ValueError) as exc:
        unsafe, unusable = str(exc), f"the list of trusted app bundles cannot be read: {exc}"
    if unsafe is not None:  # every bundle is refused, as one not on the list: the coordinator is told no more
        # no handler yet in this process: logging's last resort writes it to stderr, the SuperExec's log
        logging.getLogger("edprf.party").error("flwr-clientapp (pinned): %s; every app bundle is refused", unusable)
    original_install = run_clientapp.install_from_fab
    original_project_dir = flwr_config.get_project_dir
    verified: dict[str, tuple[Path, str]] = {}  # bundle sha256 -> (installed directory, its content digest)

    def install_trusted_only(fab_file, install_dir=None, skip_prompt=False):  # install_dir, skip_prompt: replaced
        content = bytes(fab_file) if isinstance(fab_file, (bytes, bytearray)) else Path(fab_file).read_bytes()
        digest = hashlib.sha256(content).hexdigest()
        if digest not in allowed:
            # the message travels to the coordinator (Flower's client_error): no path of the party's host in it
            logging.getLogger("edprf.party").error("app bundle sha256:%s is not in %s", digest, path)
            raise PermissionError(f"app bundle sha256:{digest} is not in the party's trusted list")
        fresh = Path(tempfile.mkdtemp(prefix="edprf-pinned-app-"))
        atexit.register(shutil.rmtree, fresh, True)  # one ClientApp process per message: no growth
        installed = Path(original_install(content, fresh, skip_prompt=True))
        expected = bundle_tree_digest(content)
        if tree_digest(installed) != expected:
            raise PermissionError(f"installed files of app bundle sha256:{digest} differ from the bundle's files")
        verified[digest] = (installed, expected)
        return installed

    def verified_project_dir(fab_id: str, fab_version: str, fab_hash: str) -> Path:
        entry = verified.get(str(fab_hash).lower())
        if entry is None:
            raise PermissionError(
                f"app bundle hash {fab_hash!r} named by the SuperLink was not installed from "
                "verified content in this process"
            )
        installed, expected = entry
        if original_project_dir(fab_id, fab_version, fab_hash).name != installed.name:
            raise PermissionError(
                f"app {fab_id!r} version {fab_version!r} named by the SuperLink is not the "
                f"verified bundle sha256:{fab_hash}"
            )
        if tree_digest(installed) != expected:
            raise PermissionError(f"files of the verified app bundle sha256:{fab_hash} changed after installation")
        return installed

    run_clientapp.install_from_fab = install_trusted_only
    run_clientapp.get_project_dir = verified_project_dir
    clientapp_utils.get_project_dir = verified_project_dir
    flwr_config.get_project_dir = verified_project_dir


def main() -> int:
    path = os.environ.get(ENV, "")
    install(path)  # without a path, or from a list it cannot trust, it approves nothing (the reason in the log)
    os.environ[PINNED_MARKER] = path  # the ClientApp's own process: it tells the party's app it runs pinned
    from flwr.supernode.cli import flwr_clientapp

    return flwr_clientapp()


if __name__ == "__main__":
    sys.exit(main())
