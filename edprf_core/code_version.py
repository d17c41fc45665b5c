"""The version of the edprf-fl code that runs, read from its source.

Where the code runs from a source tree (a checkout, an editable install) or from a Flower app bundle (a FAB: Flower
installs it as a directory holding the project's ``pyproject.toml`` beside its packages), that ``pyproject.toml``
is the project's one statement of its version, and the installed distribution's metadata may be another version's:
an editable install after a ``git checkout`` of other code, or a SuperExec whose environment has one edprf-fl
installed while it runs a run's bundle of another (review rev-research R13 and its re-review N7: a run's report said
the installed 0.2.10 while the bundle's code was 0.2.11).  Only a wheel installed into site-packages, which ships no
``pyproject.toml``, is read from the metadata.  Standard library only; nothing here is data.
"""

from __future__ import annotations

import tomllib
from functools import cache
from pathlib import Path

__all__ = ["VERSION_SOURCES", "code_version"]

_DISTRIBUTION = "edprf-fl"
"""The project's name in its ``pyproject.toml`` and in the install's metadata."""

_SOURCE_ROOT = Path(__file__).resolve().parents[1]
"""The directory that holds the ``edprf_core`` package: a checkout's root, an installed bundle's directory, or
site-packages."""

VERSION_SOURCES = ("pyproject.toml", "installed metadata", "unknown")
"""Where :func:`code_version` read the version: the ``pyproject.toml`` beside the packages (a checkout, an editable
install, a Flower app bundle), else the installed package's metadata (a wheel), else nowhere."""


@cache
def code_version() -> tuple[str, str]:
    """The version of the code that runs and where it was read (one of :data:`VERSION_SOURCES`).

    Returns
    -------
    tuple of str
        ``("0.2.11", "pyproject.toml")``, ``("0.2.11", "installed metadata")`` or ``("unknown", "unknown")``.

    Privacy cost: none (the code's own files).
    """
    try:
        project = tomllib.loads((_SOURCE_ROOT / "pyproject.toml").read_text(encoding="utf-8")).get("project", {})
    except (OSError, ValueError):
        project = {}
    if isinstance(project, dict) and project.get("name") == _DISTRIBUTION and isinstance(project.get("version"), str):
        return project["version"], VERSION_SOURCES[0]
    from importlib.metadata import PackageNotFoundError, version  # slow to import: only without a pyproject.toml

    try:
        return version(_DISTRIBUTION), VERSION_SOURCES[1]
    except PackageNotFoundError:
        return "unknown", VERSION_SOURCES[2]
