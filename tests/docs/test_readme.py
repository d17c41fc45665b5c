"""The README stays a front page: under 8 kB, the two commands as CI runs them, links that resolve."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import edprf_core

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
TEXT = README.read_text(encoding="utf-8")


def test_the_readme_is_under_8_kb():
    assert len(README.read_bytes()) < 8 * 1024, len(README.read_bytes())


def test_the_two_commands_and_the_privacy_gate_are_there_as_written():
    assert "./demo.sh     # the main job" in TEXT
    assert "./test.sh     # the test suite" in TEXT
    assert "`./test.sh -m privacy`" in TEXT
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert re.search(r"^\./test\.sh( -q)?$", ci, re.MULTILINE), "CI must run the README's test command"
    for script in ("demo.sh", "test.sh"):
        assert (REPO / script).stat().st_mode & 0o111, f"{script} is not executable"


def test_every_relative_link_resolves():
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", TEXT)
    assert len(links) >= 10, links
    missing = [link for link in links if "://" not in link and not (REPO / link).exists()]
    assert missing == [], missing


def test_the_example_is_ten_lines_of_public_names():
    [code] = re.findall(r"## Ten lines\n\n```python\n(.*?)```", TEXT, re.DOTALL)
    assert len(code.strip().splitlines()) <= 10
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.ImportFrom):
            assert node.module == "edprf_core", node.module
            assert all(alias.name in edprf_core.__all__ for alias in node.names), [a.name for a in node.names]
