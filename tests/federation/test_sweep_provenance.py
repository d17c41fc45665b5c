"""Review rev-research R13: what made a result is recorded: the version from the source (not the install's metadata),
the source tree's git revision when it is a checkout, and the command line; in simulation.json, sweep.csv and at the
top of sweep.md."""

from __future__ import annotations

import csv
import shutil
import subprocess
import tomllib
from dataclasses import replace
from pathlib import Path

import pytest

from edprf_fl import Provenance, _provenance
from edprf_fl.cli._main import main
from edprf_fl.simulation import SimulationSettings, _sweep

from .test_sweep import TINY, _report

REPO = Path(__file__).resolve().parents[2]
VERSION = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]


def _git_describe() -> str | None:
    if not (REPO / ".git").exists() or shutil.which("git") is None:
        return None
    done = subprocess.run(
        ["git", "-C", str(REPO), "describe", "--always", "--dirty"], capture_output=True, text=True, check=False
    )
    return done.stdout.strip() or None if done.returncode == 0 else None


@pytest.fixture
def fresh_caches():
    """The version and the revision looked up again (each is cached for the process)."""
    _provenance.source_version.cache_clear()
    _provenance._git.cache_clear()
    yield
    _provenance.source_version.cache_clear()
    _provenance._git.cache_clear()


def test_the_version_is_the_source_s_and_the_revision_git_s(fresh_caches):
    got = Provenance.current(["edprf", "sweep", "--data", "my data.csv", "--epsilons", "0.5,1"])
    assert (got.edprf_version, got.version_from) == (VERSION, "pyproject.toml")
    assert got.git_describe == _git_describe()
    assert got.command == "edprf sweep --data 'my data.csv' --epsilons 0.5,1"  # as a shell takes it back
    assert Provenance.from_dict(got.to_dict()) == got
    assert list(got.to_dict()) == ["edprf_version", "version_from", "git_describe", "command", "cwd"]
    assert got.cwd == str(Path.cwd())  # review rev-research2 N14: what the command's relative paths are relative to


def test_outside_a_checkout_or_without_git_the_revision_is_none_never_an_error(tmp_path, monkeypatch, fresh_caches):
    monkeypatch.setattr(_provenance, "_SOURCE_ROOT", tmp_path)  # an installed package: no .git, no pyproject.toml
    assert _provenance.git_describe() is None
    version, where = _provenance.source_version()
    assert where in ("installed metadata", "unknown") and version
    _provenance._git.cache_clear()
    (tmp_path / ".git").mkdir()  # a checkout, and no git to ask
    monkeypatch.setenv("PATH", str(tmp_path / "nothing"))
    assert _provenance.git_describe() is None
    assert _provenance.git_problem() == "git not found"  # review rev-research2 N14: told apart from no checkout
    _provenance._git.cache_clear()
    monkeypatch.undo()
    monkeypatch.setattr(_provenance, "_SOURCE_ROOT", tmp_path)
    (tmp_path / ".git").rmdir()
    (tmp_path / ".git").write_text("gitdir: /nowhere\n")  # a broken worktree: git fails
    assert _provenance.git_describe() is None
    assert _provenance.git_problem().startswith("git failed: ")
    with pytest.raises(ValueError, match="version_from: expected one of"):
        Provenance("1", "setup.py", None, "edprf")


def test_version_prints_the_source_s_version_and_revision(capsys, fresh_caches):
    with pytest.raises(SystemExit):
        main(["--version"])
    revision = _git_describe()
    assert capsys.readouterr().out == f"edprf {VERSION}" + (f" (git {revision})" if revision else "") + "\n"


def test_simulation_json_opens_with_the_provenance():
    report = replace(
        _report(SimulationSettings(parties=2)), provenance=Provenance("0.2.10", "pyproject.toml", None, "x")
    )
    got = report.to_dict()
    assert list(got)[:2] == ["provenance", "dataset"]
    assert got["provenance"] == {
        "edprf_version": "0.2.10",
        "version_from": "pyproject.toml",
        "git_describe": None,
        "command": "x",
        "cwd": None,
    }


def test_sweep_csv_rows_and_the_top_of_sweep_md_say_what_made_them(tmp_path, monkeypatch, fresh_caches):
    made = Provenance.current()

    def run(settings, out_dir, **_):
        out_dir.mkdir(parents=True)
        report = _report(settings)
        return replace(report, federated={**report.federated, "schema_fingerprint": "sha256:ab"}, provenance=made)

    monkeypatch.setattr(_sweep, "run_simulation", run)
    out = tmp_path / "sweep"
    assert main(["sweep", *TINY, "--seeds", "2", "--output", str(out)]) == 0
    with (out / "sweep.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    assert list(rows[0])[-6:] == [
        "schema_fingerprint",
        "data_sha256",
        "settings_fingerprint",
        "edprf_version",
        "git_describe",
        "command",
    ]
    assert {(r["schema_fingerprint"], r["edprf_version"], r["git_describe"], r["command"]) for r in rows} == {
        ("sha256:ab", VERSION, made.git_describe or "", made.command)
    }
    top = (out / "sweep.md").read_text().splitlines()
    assert top[0] == "Provenance (sweep.csv: edprf_version, git_describe, command):"
    assert top[1] == f"- 2 runs (seeds 0-1) by {made.code_text}: `{made.command}`"
    assert top[2] == "" and top[3].startswith("Seeded research runs, NOT differentially private releases")


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_an_untracked_module_makes_the_tree_dirty(tmp_path, monkeypatch, capsys, fresh_caches):
    """Review rev-research2 N14: git describe --dirty ignores untracked files, and a new module is new code."""

    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(tmp_path), *args], check=True, capture_output=True)

    (tmp_path / "edprf_fl").mkdir()
    (tmp_path / "edprf_fl" / "a.py").write_text("")
    (tmp_path / "notes.txt").write_text("")  # outside the packages: not code
    git("init", "-q")
    git("add", "edprf_fl")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "a")
    monkeypatch.setattr(_provenance, "_SOURCE_ROOT", tmp_path)
    clean = _provenance.git_describe()
    assert clean and not clean.endswith("-dirty") and _provenance.git_problem() is None
    _provenance._git.cache_clear()
    (tmp_path / "edprf_fl" / "zz_untracked.py").write_text("")
    assert _provenance.git_describe() == f"{clean}-dirty"
    _provenance._git.cache_clear()
    monkeypatch.setenv("PATH", str(tmp_path / "nothing"))
    with pytest.raises(SystemExit):
        main(["--version"])
    assert capsys.readouterr().out.endswith("(git revision unknown: git not found)\n")


def test_git_is_asked_without_the_index_lock(monkeypatch, fresh_caches):
    """``git describe --dirty`` and ``git status`` refresh the index under ``.git/index.lock`` unless told not to: a
    simulation under a file-size limit left the lock behind in the developer's checkout, and any run contends with
    the user's own git commands.  Every git call passes ``--no-optional-locks``."""
    if not (REPO / ".git").exists() or shutil.which("git") is None:
        pytest.skip("needs a git checkout and git")
    calls = []
    real = subprocess.run
    monkeypatch.setattr(_provenance.subprocess, "run", lambda args, **kw: calls.append(args) or real(args, **kw))
    _provenance.git_describe()
    assert calls and all(args[:2] == ["git", "--no-optional-locks"] for args in calls)
