"""Where a result came from: the code's version from its source, the source tree's git revision, the command line.

A simulation's ``simulation.json`` and a sweep's ``sweep.md`` and ``sweep.csv`` record it (review rev-research R13: the
version came from the install's metadata, which an editable install keeps after a ``git checkout`` of other code).
Standard library only, read in milliseconds: ``edprf --version`` uses it too.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

__all__ = ["Provenance", "git_describe", "git_problem", "source_version"]

_DISTRIBUTION = "edprf-fl"
"""The project's name in its ``pyproject.toml`` and in the install's metadata."""

_SOURCE_ROOT = Path(__file__).resolve().parents[1]
"""The directory that holds the ``edprf_fl`` package: a source checkout's root (or site-packages, once installed)."""

VERSION_SOURCES = ("pyproject.toml", "installed metadata", "unknown")
"""Where :func:`source_version` read the version: the source's ``pyproject.toml`` (a checkout, an editable install),
else the installed package's metadata (a wheel: it ships no ``pyproject.toml``), else nowhere."""

_GIT_TIMEOUT_S = 10.0
"""How long ``git describe`` may take before the revision is left unrecorded."""


@cache
def source_version() -> tuple[str, str]:
    """The version of the code that runs, and where it was read (one of :data:`VERSION_SOURCES`).

    The source's ``pyproject.toml`` (the project's only statement of its version) when the package runs from a
    checkout, so that an editable install whose checkout moved to other code reports that code's version; otherwise
    the installed metadata (what ``pip install`` recorded, true for a wheel).  The same rule as
    :func:`edprf_core.code_version.code_version` (report.json's), written again here because importing any
    ``edprf_core`` module imports numpy, pandas and pyarrow, which ``edprf --version`` and the CLI's parser must not.
    """
    import tomllib

    pyproject = _SOURCE_ROOT / "pyproject.toml"
    try:
        project = tomllib.loads(pyproject.read_text(encoding="utf-8")).get("project", {})
    except (OSError, ValueError):
        project = {}
    if project.get("name") == _DISTRIBUTION and isinstance(project.get("version"), str):
        return project["version"], VERSION_SOURCES[0]
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(_DISTRIBUTION), VERSION_SOURCES[1]
    except PackageNotFoundError:
        return "unknown", VERSION_SOURCES[2]


_CODE_DIRS = ("edprf_fl", "edprf_core", "server", "client", "protocol")
"""The source tree's packages: an untracked file among them (a new module) changes the code as an edit does."""


def git_describe() -> str | None:
    """``git describe --always --dirty`` of the source tree, or None: not a git checkout (an installed package), no
    ``git`` on the PATH, or git failing (an unreadable repository, one another account owns; :func:`git_problem`
    says which).  Never raises.

    ``-dirty`` also when a package of the tree holds an untracked file (review rev-research2 N14: git's own rule
    ignores them, and a new module is new code).  The checkout is the directory that holds the package and a
    ``.git`` of its own: site-packages inside some other repository (a virtualenv in a checkout) is not taken for
    the source.
    """
    return _git()[0]


def git_problem() -> str | None:
    """Why a git checkout's revision is unknown (``git not found``, ``git failed: ...``); None when it is known or the
    source is no checkout (review rev-research2 N14: the two printed alike)."""
    return _git()[1]


@cache
def _git() -> tuple[str | None, str | None]:
    if not (_SOURCE_ROOT / ".git").exists():
        return None, None

    def git(*args: str) -> subprocess.CompletedProcess:
        # --no-optional-locks: describe --dirty and status refresh the index under .git/index.lock otherwise, which
        # contends with the user's own git commands and was left behind by a run under a file-size limit
        return subprocess.run(
            ["git", "--no-optional-locks", "-C", str(_SOURCE_ROOT), *args],
            capture_output=True,
            text=True,
            timeout=_GIT_TIMEOUT_S,
            check=False,
        )

    try:
        done = git("describe", "--always", "--dirty")
        described = done.stdout.strip()
        if done.returncode != 0 or not described:
            first = (done.stderr.strip().splitlines() or ["no output"])[0]
            return None, f"git failed: {first}"
        if not described.endswith("-dirty"):
            status = git("status", "--porcelain", "--untracked-files=normal", "--", *_CODE_DIRS)
            if status.returncode == 0 and any(line.startswith("??") for line in status.stdout.splitlines()):
                described += "-dirty"
    except FileNotFoundError:
        return None, "git not found"
    except (OSError, subprocess.SubprocessError) as exc:
        return None, f"git failed: {exc}"
    return described, None


def command_line(argv: Sequence[str] | None = None) -> str:
    """``argv`` quoted for a POSIX shell; by default the command as typed: ``sys.argv`` (``edprf sweep ...``), or for
    ``python -m edprf_fl.cli ...``, whose ``sys.argv[0]`` is the path of the package's ``__main__.py``, the
    interpreter's own arguments (``sys.orig_argv``)."""
    if argv is None:
        argv = sys.orig_argv if sys.argv and Path(sys.argv[0]).name == "__main__.py" else sys.argv
    return shlex.join(argv)


@dataclass(frozen=True)
class Provenance:
    """The code and the command behind a result.

    Parameters
    ----------
    edprf_version : str
        The code's version (:func:`source_version`).
    version_from : str
        Where it was read, one of :data:`VERSION_SOURCES`.
    git_describe : str or None
        ``git describe --always --dirty`` of the source tree (``-dirty``: with uncommitted changes); None outside a
        git checkout or without git.
    command : str
        The command line, shell-quoted (``sys.argv``: a Python caller's own command).
    cwd : str or None
        The working directory the command ran in, which its relative paths are relative to (review rev-research2
        N14); None when unknown (a record written before it was kept, a removed directory).
    """

    edprf_version: str
    version_from: str
    git_describe: str | None
    command: str
    cwd: str | None = None

    def __post_init__(self) -> None:
        for name in ("edprf_version", "command"):
            if not isinstance(getattr(self, name), str):
                raise TypeError(f"{name}: expected a string, got {getattr(self, name)!r}")
        if self.version_from not in VERSION_SOURCES:
            raise ValueError(f"version_from: expected one of {', '.join(VERSION_SOURCES)}, got {self.version_from!r}")
        if self.git_describe is not None and not (isinstance(self.git_describe, str) and self.git_describe):
            raise ValueError(f"git_describe: expected a revision or None, got {self.git_describe!r}")

    @classmethod
    def current(cls, argv: Sequence[str] | None = None) -> Provenance:
        """This process's: the source's version and revision, and ``argv`` (default: ``sys.argv``)."""
        version, version_from = source_version()
        try:
            cwd: str | None = str(Path.cwd())
        except OSError:  # the working directory was removed
            cwd = None
        return cls(version, version_from, git_describe(), command_line(argv), cwd)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Provenance:
        """The inverse of :meth:`to_dict`."""
        return cls(
            data["edprf_version"], data["version_from"], data.get("git_describe"), data["command"], data.get("cwd")
        )

    def to_dict(self) -> dict[str, Any]:
        """``simulation.json``'s ``provenance``: the five fields, ``git_describe`` and ``cwd`` null when unknown."""
        return {
            "edprf_version": self.edprf_version,
            "version_from": self.version_from,
            "git_describe": self.git_describe,
            "command": self.command,
            "cwd": self.cwd,
        }

    @property
    def code_text(self) -> str:
        """``edprf-fl 0.2.10 (git c1cb76d-dirty)``, or ``edprf-fl 0.2.10`` outside a git checkout."""
        return f"{_DISTRIBUTION} {self.edprf_version}" + (f" (git {self.git_describe})" if self.git_describe else "")
