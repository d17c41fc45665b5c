"""The generated reference pages (docs/reference/{policy,run-config,reason-codes,cli}.md, api/*.md) match the code.

`python docs/gen_reference.py --check` regenerates every page from the code (the party's policy dataclass, the
coordinator's run config and pyproject's [tool.flwr.app.config], the reason and outcome code tables, the `edprf`
parser, the `__all__` of every package and public submodule for the API pages) and exits 1 with a diff when a committed page differs: a renamed key, a new option or a changed
default fails here until the pages are regenerated.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "docs" / "gen_reference.py"


def _check(out: Path | None = None) -> subprocess.CompletedProcess[str]:
    args = [sys.executable, str(SCRIPT), "--check"] + (["--out", str(out)] if out else [])
    return subprocess.run(args, capture_output=True, text=True, cwd=REPO, timeout=300, check=False)


def test_the_committed_reference_pages_match_the_code():
    proc = _check()
    assert proc.returncode == 0, f"{proc.stdout[-6000:]}\n{proc.stderr[-3000:]}"


def test_a_stale_page_is_caught_and_named(tmp_path):
    tmp_path = tmp_path / "reference"
    shutil.copytree(REPO / "docs" / "reference", tmp_path)
    text = (tmp_path / "policy.md").read_text(encoding="utf-8")
    (tmp_path / "policy.md").write_text(text.replace("`lifetime-epsilon-cap`", "`lifetime-cap`"), encoding="utf-8")
    (tmp_path / "cli.md").unlink()
    proc = _check(tmp_path)
    assert proc.returncode == 1, proc.stdout
    assert "stale: policy.md, cli.md" in proc.stdout
    assert "+| `lifetime-epsilon-cap`" in proc.stdout


def test_every_policy_and_run_config_key_is_documented_with_its_default():
    from dataclasses import MISSING, fields

    from client import PartyPolicy
    from server import CoordinatorConfig

    for page, cls in (("policy.md", PartyPolicy), ("run-config.md", CoordinatorConfig)):
        text = (REPO / "docs" / "reference" / page).read_text(encoding="utf-8")
        for f in fields(cls):
            row = next(
                (line for line in text.splitlines() if line.startswith(f"| `{f.name.replace('_', '-')}` |")), None
            )
            assert row is not None, f"{page}: no row for {f.name}"
            default = "required" if f.default is MISSING else str(f.default).lower()
            assert default.strip('"') in row.lower(), (page, f.name, row)
