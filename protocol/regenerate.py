"""Regenerate ``protocol/release_pb2.py`` from ``protocol/release.proto``.

Usage::

    python -m protocol.regenerate          # rewrite the committed module
    python -m protocol.regenerate --check  # exit 1 if the committed module is stale

Needs ``grpcio-tools<1.82`` (the ``dev`` extra); newer releases pull
protobuf 7, which Flower 1.41 does not accept.  The generated module is
committed because Flower app bundles ship ``*.py`` files but not ``.proto``.
"""

from __future__ import annotations

import argparse
import difflib
import re
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

__all__ = ["GENERATED_FILE", "PROTO_FILE", "comparable_text", "generate_into", "is_stale", "main"]

PACKAGE_DIR = Path(__file__).resolve().parent
REPO_ROOT = PACKAGE_DIR.parent
PROTO_FILE = PACKAGE_DIR / "release.proto"
GENERATED_FILE = PACKAGE_DIR / "release_pb2.py"

# protoc stamps the protobuf version it targets into two lines; they change
# with the installed grpcio-tools, not with the schema of the messages.
_VERSION_LINES = re.compile(r"^(# Protobuf Python Version: .*|\s*\d+,\s*$)", re.MULTILINE)


def generate_into(directory: Path) -> Path:
    """Run protoc on ``release.proto`` with output under ``directory``.

    Parameters
    ----------
    directory : Path
        Output root; the module lands in ``directory / "protocol"``.

    Returns
    -------
    Path
        The generated ``release_pb2.py``.

    Raises
    ------
    RuntimeError
        If protoc reports an error.
    """
    from grpc_tools import protoc  # dev dependency: imported only here

    directory.mkdir(parents=True, exist_ok=True)
    # The include root is the repository, so the descriptor is registered as
    # "protocol/release.proto" (not a bare "release.proto" that could clash).
    args = ["grpc_tools.protoc", f"-I{REPO_ROOT}", f"--python_out={directory}", str(PROTO_FILE.relative_to(REPO_ROOT))]
    status = protoc.main(args)
    if status != 0:
        raise RuntimeError(f"protoc failed with exit status {status} on {PROTO_FILE}")
    return directory / "protocol" / GENERATED_FILE.name


def comparable_text(source: str) -> str:
    """Generated source with the protobuf version stamps masked."""
    return _VERSION_LINES.sub("<version>", source)


def is_stale(generated: Path, committed: Path = GENERATED_FILE) -> bool:
    """Whether ``committed`` differs from a fresh ``generated`` module beyond version stamps."""
    if not committed.is_file():
        return True
    return comparable_text(generated.read_text(encoding="utf-8")) != comparable_text(
        committed.read_text(encoding="utf-8")
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m protocol.regenerate", description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only report whether the committed module is stale")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        fresh = generate_into(Path(tmp))
        stale = is_stale(fresh)
        if args.check:
            if stale:
                old = GENERATED_FILE.read_text(encoding="utf-8").splitlines() if GENERATED_FILE.is_file() else []
                diff = difflib.unified_diff(
                    old, fresh.read_text(encoding="utf-8").splitlines(), "committed", "regenerated", lineterm=""
                )
                print("\n".join(diff))
                print(f"{GENERATED_FILE} is stale: run python -m protocol.regenerate", file=sys.stderr)
                return 1
            print(f"{GENERATED_FILE.name} is up to date")
            return 0
        GENERATED_FILE.write_text(fresh.read_text(encoding="utf-8"), encoding="utf-8")
    print(f"wrote {GENERATED_FILE}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
