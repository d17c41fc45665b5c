"""Every `edprf ...` command in the docs pages' and the README's bash blocks is one the `edprf` parser accepts.

A renamed or removed subcommand or option fails here (deploy/README.md, included as the runbook page, has its
own test: tests/deployment/test_readme_commands.py).
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from edprf_fl.cli._main import build_parser

REPO = Path(__file__).resolve().parents[2]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def _edprf_commands(text: str) -> list[list[str]]:
    commands = []
    for block in re.findall(r"```bash\n(.*?)```", text, re.DOTALL):
        for line in block.replace("\\\n", " ").splitlines():
            tokens = shlex.split(line.split("#", 1)[0])
            names = [i for i, t in enumerate(tokens) if t == "edprf" or t.endswith("/edprf")]
            if names and len(tokens) > names[0] + 1:
                commands.append(tokens[names[0] + 1 :])
    return commands


def test_the_pages_show_commands():
    assert sum(len(_edprf_commands(p.read_text(encoding="utf-8"))) for p in PAGES) >= 8


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_edprf_command_parses(page: Path):
    parser = build_parser()
    for args in _edprf_commands(page.read_text(encoding="utf-8")):
        try:
            parser.parse_args(args)
        except SystemExit as exc:
            pytest.fail(f"{page.relative_to(REPO)}: `edprf {' '.join(args)}` is not a valid command (exit {exc.code})")
