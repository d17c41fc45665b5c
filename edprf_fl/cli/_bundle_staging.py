"""The directory ``flwr run`` builds the app bundle from: the app's own bundle files alone, not the whole checkout.

Flower 1.41's ``flwr run APP`` lists every file under ``APP`` before it applies ``.gitignore`` and the app's
``fab-include``, resolving each path: in a checkout whose ``.venv`` sits inside it (the README's commands make
one there) that is about 30,000 files and 4 s of CPU per run, to keep the 140 files ``fab-include`` names.
:func:`staged_app` copies ``pyproject.toml``, ``.gitignore`` and the files ``fab-include`` names into a temporary
directory and gives that to ``flwr run``: Flower builds the same bytes from it (the same files through the same
rules; tests/deployment/test_bundle_staging.py compares the hashes), so a party's pin of the bundle's hash is
unaffected.  When ``fab-include`` is absent, names a pattern rather than a file, or names a file that does not
exist, and when ``fab-exclude`` is set, the app directory itself is given: Flower then says what it says.

Privacy: none involved (the bundle holds code, no data).
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

__all__ = ["bundle_file_names", "staged_app"]

_PATTERN_CHARACTERS = frozenset("*?[]!\\")
_ALWAYS = ("pyproject.toml", ".gitignore")
"""Copied when present: the app's configuration, and the ignore rules Flower applies with ``fab-include``."""


def bundle_file_names(app: Path) -> list[str] | None:
    """The relative paths of the files the app bundle of ``app`` can hold: ``fab-include``'s files, each a plain
    relative path to an existing file; None when that list cannot stand for the bundle (no ``fab-include``, a
    pattern in it, a missing file, a ``fab-exclude``, an unreadable ``pyproject.toml``)."""
    import tomllib

    try:
        app_table = tomllib.loads((app / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["flwr"]["app"]
        included = app_table["fab-include"]
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, KeyError, TypeError):
        return None
    if "fab-exclude" in app_table or not isinstance(included, list) or not included:
        return None
    names = []
    for entry in included:
        if not isinstance(entry, str) or _PATTERN_CHARACTERS & set(entry) or entry.endswith("/"):
            return None
        name = PurePosixPath(entry.lstrip("/"))  # a leading "/" anchors the entry at the app's root
        if name.is_absolute() or ".." in name.parts or not name.parts:
            return None
        path = app / name
        if path.is_symlink() or not path.is_file():
            return None
        names.append(name.as_posix())
    return names


@contextlib.contextmanager
def staged_app(app: str) -> Iterator[str]:
    """The directory to give ``flwr run`` for ``app``: a temporary copy of its bundle files when
    :func:`bundle_file_names` lists them (removed on exit), else ``app`` unchanged."""
    root = Path(app)
    names = bundle_file_names(root) if root.is_dir() else None
    if names is None:
        yield app
        return
    with tempfile.TemporaryDirectory(prefix="edprf-app-") as staging:
        for name in [*(n for n in _ALWAYS if (root / n).is_file()), *names]:
            target = Path(staging, name)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(root / name, target)
        yield staging
