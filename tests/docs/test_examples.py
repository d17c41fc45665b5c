"""The scripts in examples/ run as a user runs them, and stay short and on the public API.

Each script runs in a fresh interpreter from an empty working directory, with TMPDIR and HOME pointed at
directories of the test: it must exit 0, print what it shows, and leave nothing behind (every file it makes
goes into a temporary directory it removes).
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((REPO / "examples").glob("*.py"))
TOP_LEVEL = {"edprf_core", "protocol", "client", "server", "edprf_fl"}


def test_there_are_examples():
    assert len(EXAMPLES) >= 4, EXAMPLES


@pytest.mark.parametrize("script", EXAMPLES, ids=lambda p: p.name)
def test_an_example_is_short_and_uses_public_names_only(script: Path):
    text = script.read_text(encoding="utf-8")
    assert len(text.splitlines()) < 60, f"{script.name}: {len(text.splitlines())} lines"
    tree = ast.parse(text)
    assert ast.get_docstring(tree), f"{script.name}: no docstring saying what it shows and how to run it"
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            modules, names = [node.module or ""], [alias.name for alias in node.names]
        elif isinstance(node, ast.Import):
            modules, names = [alias.name for alias in node.names], []
        else:
            continue
        for module in modules:
            if module.split(".")[0] in TOP_LEVEL:
                private = [part for part in module.split(".") + names if part.startswith("_")]
                assert not private, f"{script.name}: imports a private name {module} {names}"


@pytest.mark.slow
@pytest.mark.parametrize("script", EXAMPLES, ids=lambda p: p.name)
def test_an_example_runs_and_leaves_nothing_behind(script: Path, tmp_path: Path):
    work, temp, home = tmp_path / "work", tmp_path / "tmp", tmp_path / "home"
    for d in (work, temp, home):
        d.mkdir()
    env = {**os.environ, "TMPDIR": str(temp), "HOME": str(home), "PYTHONPATH": str(REPO), "MPLBACKEND": "Agg"}
    proc = subprocess.run(
        [sys.executable, str(script)], cwd=work, env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert proc.returncode == 0, (
        f"{script.name} exited {proc.returncode}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    )
    assert proc.stdout.strip(), f"{script.name} printed nothing"
    # the working directory stays empty, and the example's temporary directories are gone (a library may keep
    # a file of its own in TMPDIR: onnxruntime writes one when imported)
    left = sorted(str(p.relative_to(tmp_path)) for p in [*work.rglob("*"), *(p for p in temp.iterdir() if p.is_dir())])
    assert left == [], f"{script.name} left files behind: {left[:20]}"
