"""The Flower app bundle holds exactly what the two apps import, and the licence.

Parties that pin the bundle (deploy/README.md, "Pin the code") approve its hash: a file the apps never import
(the command line, the simulation, the docs) must not be in it, or every edit of that file would ask every
party for a new approval.  The closure is computed from the source with :mod:`ast`: imports inside functions
count (they run when the function does), and so does each package ``__init__`` an import passes through.
No Flower process is started.
"""

from __future__ import annotations

import subprocess
import sys
import tomllib
import warnings
import zipfile
from io import BytesIO
from pathlib import Path

from tests.import_graph import REPO, TOP_LEVEL, import_closure

APPS = ("server.server_app", "client.client_app")
EXTRA_FILES = ("/LICENSE",)
"""Shipped besides the modules (patterns anchored at the repository root)."""
FLOWER_FILES = {"pyproject.toml", ".info/CONTENT"}
"""What ``flwr build`` adds to every bundle."""


def _built_bundle() -> bytes:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # typer's and pathspec's, raised inside flwr
        from flwr.cli.build import build_fab_from_disk

        return build_fab_from_disk(REPO)


def test_fab_include_lists_exactly_the_import_closure():
    closure = import_closure(APPS)
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    include = pyproject["tool"]["flwr"]["app"]["fab-include"]
    expected = [*closure, *EXTRA_FILES]
    listing = "".join(f'    "{name}",\n' for name in expected)
    assert include == expected, f"set [tool.flwr.app] fab-include in pyproject.toml to:\nfab-include = [\n{listing}]"


def test_built_bundle_holds_the_closure_and_the_licence():
    bundle = _built_bundle()
    names = set(zipfile.ZipFile(BytesIO(bundle)).namelist())
    assert names - FLOWER_FILES == set(import_closure(APPS)) | {name.lstrip("/") for name in EXTRA_FILES}
    assert not any(name.startswith("edprf_fl/") for name in names), "the command line or the simulation shipped"


def test_closure_follows_imports_inside_functions_and_package_inits():
    closure = import_closure(APPS)
    # reached only through a function-level import (edprf_core.__getattr__, protocol.load_classifier)
    assert "edprf_core/_released_classifier.py" in closure
    assert {"edprf_core/__init__.py", "protocol/__init__.py", "client/__init__.py", "server/__init__.py"} <= set(
        closure
    )
    assert "edprf_core/_onnx_export.py" not in closure and "protocol/regenerate.py" not in closure


def test_closure_covers_what_importing_the_apps_loads():
    """A cross-check of the static closure: the modules Python actually loads to import both apps."""
    code = (
        "import sys, warnings\n"
        "warnings.simplefilter('ignore')\n"
        f"for name in {APPS!r}: __import__(name)\n"
        f"print('\\n'.join(sorted(m.__file__ for n, m in sys.modules.items() if n.split('.')[0] in {TOP_LEVEL!r})))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300, check=False
    )
    assert result.returncode == 0, result.stderr[-2000:]
    loaded = {Path(line).resolve().relative_to(REPO).as_posix() for line in result.stdout.split()}
    assert loaded and loaded <= set(import_closure(APPS)), sorted(loaded - set(import_closure(APPS)))
