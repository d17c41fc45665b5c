"""The first-party import graph, read from the source with :mod:`ast` (imports inside functions included).

Used by tests/test_layout.py (who may import what) and tests/deployment/test_bundle_contents.py (what the
Flower bundle must hold).
"""

from __future__ import annotations

import ast
from pathlib import Path

__all__ = ["REPO", "TOP_LEVEL", "file_of", "import_closure", "imports", "module_name", "sources"]

REPO = Path(__file__).resolve().parents[1]
TOP_LEVEL = ("edprf_core", "protocol", "client", "server", "edprf_fl")
"""The import names the distribution installs, and nothing else (generic names such as ``cli`` or
``simulation`` would collide with other distributions in site-packages)."""


def sources() -> list[Path]:
    """Every Python file of the five packages."""
    return sorted(p for name in TOP_LEVEL for p in (REPO / name).rglob("*.py"))


def module_name(path: Path) -> str:
    """The dotted name of the module at ``path`` (a package's ``__init__.py`` is the package)."""
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def file_of(module: str) -> Path | None:
    """The file of a first-party module, or None when ``module`` names no file (an attribute, say)."""
    path = REPO.joinpath(*module.split("."))
    if (path / "__init__.py").is_file():
        return path / "__init__.py"
    return path.with_suffix(".py") if path.with_suffix(".py").is_file() else None


def imports(path: Path, source: str | None = None) -> list[tuple[int, str, list[str]]]:
    """Every import in ``path`` (or in ``source``, read as if at ``path``) as (line, absolute module, names).

    Relative imports are resolved; ``import a.b`` gives ``(line, "a.b", [])``.
    """
    module = module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    text = path.read_text(encoding="utf-8") if source is None else source
    found = []
    for node in ast.walk(ast.parse(text, str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name, []) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            found.append((node.lineno, base, [alias.name for alias in node.names]))
    return sorted(found)


def import_closure(roots: tuple[str, ...]) -> list[str]:
    """Repository-relative paths of the first-party modules ``roots`` import, directly or not.

    Each package an import passes through counts (its ``__init__`` runs), and so does each name of a
    from-import that is a module.
    """
    seen: dict[str, Path] = {}
    todo = list(roots)
    while todo:
        module = todo.pop()
        path = file_of(module)
        if module in seen or path is None:
            continue
        seen[module] = path
        parts = module.split(".")
        todo += [".".join(parts[:i]) for i in range(1, len(parts))]
        for _, target, names in imports(path):
            if target.split(".")[0] in TOP_LEVEL:
                todo += [target, *(f"{target}.{name}" for name in names)]
    return sorted(p.relative_to(REPO).as_posix() for p in seen.values())
