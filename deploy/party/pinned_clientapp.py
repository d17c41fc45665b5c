#!/usr/bin/env python3
"""A party's `flwr-clientapp` that runs only the app bundles the party approved.

Each message a SuperNode receives carries the app bundle (FAB) of its run, and the SuperNode runs
that code next to the party's data; the party's policy and ledger are enforced by it.  Flower 1.41
open source cannot verify bundle signatures, so this launcher checks the bundle's SHA-256 against
a list the party keeps, before anything in the bundle is installed or imported.  A bundle not on
the list gets an error reply naming its hash; the party's data, ledger and keys are not touched.

Install it as ``flwr-clientapp`` in a directory placed first on the SuperNode's PATH (the
SuperNode starts the program of that name), and name the list in EDPRF_TRUSTED_APP_HASHES:

    install -m 0755 pinned_clientapp.py /opt/edprf/pinned/flwr-clientapp
    EDPRF_TRUSTED_APP_HASHES=/party/trusted-apps.txt PATH=/opt/edprf/pinned:$PATH flower-supernode ...

The list holds one hex SHA-256 per line ('#' starts a comment).  The party computes it from the
source release it reviewed: ``flwr build --app <source>`` writes ``<...>.<hash prefix>.fab``, and
``sha256sum`` of that file is the line to add (bundles are reproducible: same files, same hash).
The coordinator's ``flwr ls`` shows the ``fab-hash`` of every run.  Tied to flwr 1.41's
``flwr.supernode.runtime.run_clientapp``; tests/deployment/test_hostile_parties.py checks it.
"""

from __future__ import annotations

import hashlib
import os
import re
import sys
from pathlib import Path

ENV = "EDPRF_TRUSTED_APP_HASHES"
_HEX = re.compile(r"[0-9a-f]{64}")


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


def install(path: str | Path) -> None:
    """Refuse, in this process, to install any app bundle whose hash is not in ``path``."""
    from flwr.supernode.runtime import run_clientapp

    allowed = trusted_hashes(path)
    original = run_clientapp.install_from_fab

    def install_trusted_only(fab_file, *args, **kwargs):
        content = fab_file if isinstance(fab_file, (bytes, bytearray)) else Path(fab_file).read_bytes()
        digest = hashlib.sha256(content).hexdigest()
        if digest not in allowed:
            raise PermissionError(f"app bundle sha256:{digest} is not in the party's trusted list {path}")
        return original(fab_file, *args, **kwargs)

    run_clientapp.install_from_fab = install_trusted_only


def main() -> int:
    path = os.environ.get(ENV, "")
    if not path:
        print(f"flwr-clientapp (pinned): set {ENV} to the party's list of trusted app bundle hashes",
              file=sys.stderr)
        return 2
    install(path)
    from flwr.supernode.cli import flwr_clientapp

    return flwr_clientapp()


if __name__ == "__main__":
    sys.exit(main())
