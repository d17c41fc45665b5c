"""The package layout: five top-level import names, and no package reaching into another's private modules.

Each package's public surface is its ``__init__`` (``__all__``) and its public submodules; the underscore
modules are its implementation, free to change.  These tests read the source with :mod:`ast` (imports inside
functions count), so they hold for code paths no other test runs.
"""

from __future__ import annotations

import importlib
import pkgutil
import tomllib
from importlib import metadata
from pathlib import Path

from tests.import_graph import REPO, TOP_LEVEL, imports, module_name, sources


def _owner(dotted: str) -> str:
    """The package a module belongs to: its top-level name, or ``edprf_fl.<sub>`` for a subpackage of the
    namespace package (a module directly under ``edprf_fl`` belongs to ``edprf_fl``)."""
    parts = dotted.split(".")
    if parts[0] == "edprf_fl" and len(parts) > 1 and (REPO / "edprf_fl" / parts[1]).is_dir():
        return ".".join(parts[:2])
    return parts[0]


def _private(part: str) -> bool:
    return part.startswith("_") and not (part.startswith("__") and part.endswith("__"))


def _violations(path: Path, source: str | None = None) -> list[str]:
    own = _owner(module_name(path))
    out = []
    for line, target, names in imports(path, source):
        if target.split(".")[0] not in TOP_LEVEL or _owner(target) == own:
            continue
        parts = target.split(".")
        if any(_private(p) for p in parts) or any(_private(n) for n in names):
            out.append(f"{path.relative_to(REPO)}:{line}: imports {target} {names or ''} (private to {_owner(target)})")
    return out


def test_no_package_imports_another_packages_private_modules():
    violations = [v for path in sources() for v in _violations(path)]
    assert violations == [], "\n".join(violations)


def test_checker_sees_lazy_relative_and_private_name_imports():
    """The checker itself: an import inside a function, a relative import and a private name all count."""
    code = "def f():\n    from edprf_core._forest import DPForest\nfrom protocol import _keys\nfrom ._ledger import x\n"
    probe = REPO / "client" / "probe.py"
    assert [(line, target) for line, target, _ in imports(probe, code)] == [
        (2, "edprf_core._forest"),
        (3, "protocol"),
        (4, "client._ledger"),
    ]
    assert [v.split(": ")[0] for v in _violations(probe, code)] == ["client/probe.py:2", "client/probe.py:3"]
    assert _owner("edprf_fl.cli._main") == "edprf_fl.cli" != _owner("edprf_fl.simulation._engine")
    assert _owner("edprf_fl._interrupts") == "edprf_fl" == _owner("edprf_fl")
    assert _violations(REPO / "edprf_fl" / "cli" / "probe.py", "from edprf_fl._interrupts import x\n")
    assert _private("_keys") and not _private("__init__")


def test_top_level_import_names_are_the_five():
    """The packages setuptools installs, and the names the installed distribution records, are the five."""
    from setuptools import find_namespace_packages

    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    include = pyproject["tool"]["setuptools"]["packages"]["find"]["include"]
    assert sorted(include) == sorted(f"{name}*" for name in TOP_LEVEL)
    found = find_namespace_packages(str(REPO), include=include)
    assert {name.split(".")[0] for name in found} == set(TOP_LEVEL)
    top_level = metadata.distribution("edprf-fl").read_text("top_level.txt")
    if top_level is not None:  # setuptools records it in regular and editable installs alike
        assert set(top_level.split()) == set(TOP_LEVEL)


def test_first_party_imports_use_the_five_names():
    """No module imports a first-party name outside the five (``cli``, ``simulation``: the old top-level names)."""
    first_party = {p.parent.name for p in REPO.glob("*/__init__.py")} | {"cli", "simulation"}
    wrong = [
        f"{path.relative_to(REPO)}:{line}: imports {target}"
        for path in sources()
        for line, target, _ in imports(path)
        if target.split(".")[0] in first_party - set(TOP_LEVEL)
    ]
    assert wrong == [], "\n".join(wrong)


PUBLIC_EDPRF_CORE_LIMIT = 28
"""About 20 names at the top of ``edprf_core``: what a user of the estimators needs (the forest and, since the
DP marginals became public, ``DPMarginalsClassifier``; the warnings a user filters, ``SeededNoiseWarning`` since
stop 44; ``check_pipeline``, the check a user of a scikit-learn ``Pipeline`` runs before fitting, since review
rev-sk K1); the rest in submodules."""


def _public_modules() -> list[str]:
    core = [f"edprf_core.{info.name}" for info in pkgutil.iter_modules([str(REPO / "edprf_core")])]
    return ["edprf_core", "protocol", "protocol.messages", "client", "server"] + [
        name for name in core if not _private(name.rpartition(".")[2])
    ]


def test_public_modules_export_what_they_list():
    for name in _public_modules():
        module = importlib.import_module(name)
        listed = module.__all__
        assert len(set(listed)) == len(listed), f"{name}.__all__ lists a name twice"
        missing = [n for n in listed if not hasattr(module, n)]
        assert missing == [] and not any(_private(n) for n in listed), (name, missing)


def test_edprf_core_is_tiered():
    """A short top level; every other public name in exactly one named submodule."""
    import edprf_core

    assert len(edprf_core.__all__) <= PUBLIC_EDPRF_CORE_LIMIT
    homes: dict[str, list[str]] = {}
    for name in _public_modules():
        # the research door may re-export a production piece the paper compares with (a schedule, a value list)
        if name.startswith("edprf_core.") and name != "edprf_core.research":
            for exported in importlib.import_module(name).__all__:
                homes.setdefault(exported, []).append(name)
    twice = {n: m for n, m in homes.items() if len(m) > 1}
    assert twice == {}, f"names exported by two submodules: {twice}"
    assert {"edprf_core.schema", "edprf_core.forest", "edprf_core.accounting"} <= set(_public_modules())


def test_every_first_party_import_resolves():
    """Imports inside functions run only when the function does: check now that each imported name exists."""
    missing = []
    for path in sources():
        for line, target, names in imports(path):
            if target.split(".")[0] not in TOP_LEVEL:
                continue
            module = importlib.import_module(target)
            missing += [f"{path.relative_to(REPO)}:{line}: {target}.{n}" for n in names if not _importable(module, n)]
    assert missing == [], "\n".join(missing)


def _importable(module: object, name: str) -> bool:
    if hasattr(module, name):
        return True
    try:  # a submodule not yet imported
        importlib.import_module(f"{module.__name__}.{name}")
    except ModuleNotFoundError:
        return False
    return True
