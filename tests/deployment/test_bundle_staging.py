"""`edprf run` and `edprf consortium` give `flwr run` a copy of the app bundle's files, not the checkout.

Flower 1.41 lists every file under the directory it is given (a checkout's ``.venv``: 30,000 files, 4 s of CPU per
run) before keeping the ones ``fab-include`` names. The copy must build the very bytes the checkout builds (parties
pin that hash), hold nothing else, be gone once the run is submitted, and step aside whenever ``fab-include`` cannot
stand for the bundle. No Flower process is started.
"""

from __future__ import annotations

import hashlib
import subprocess
import warnings
from pathlib import Path

import pytest

from edprf_fl.cli import _run_cmd
from edprf_fl.cli._bundle_staging import bundle_file_names, staged_app
from tests.import_graph import REPO


def _bundle_hash(app: Path) -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # typer's and pathspec's, raised inside flwr
        from flwr.cli.build import build_fab_from_disk

        return hashlib.sha256(build_fab_from_disk(app)).hexdigest()


def _files(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}


def test_the_copy_builds_the_checkouts_bytes_and_holds_only_the_bundle_files():
    names = bundle_file_names(REPO)
    assert names is not None and "client/client_app.py" in names and "LICENSE" in names
    with staged_app(str(REPO)) as staged:
        assert Path(staged) != REPO
        assert _files(Path(staged)) == {"pyproject.toml", ".gitignore", *names}
        assert _bundle_hash(Path(staged)) == _bundle_hash(REPO)
    assert not Path(staged).exists(), "the copy outlived the submission"


def _app(root: Path, app_table: str) -> Path:
    root.mkdir()
    (root / "pyproject.toml").write_text(
        f'[project]\nname = "x"\nversion = "1.0.0"\n\n[tool.flwr.app]\npublisher = "p"\n{app_table}\n',
        encoding="utf-8",
    )
    (root / "a.py").write_text("A = 1\n", encoding="utf-8")
    (root / "pkg").mkdir()
    (root / "pkg" / "b.py").write_text("B = 2\n", encoding="utf-8")
    (root / "big").mkdir()
    (root / "big" / "unrelated.bin").write_bytes(b"\0" * 10)
    return root


def test_plain_file_names_are_copied_with_their_directories(tmp_path):
    app = _app(tmp_path / "app", 'fab-include = ["a.py", "/pkg/b.py"]')
    with staged_app(str(app)) as staged:
        assert _files(Path(staged)) == {"pyproject.toml", "a.py", "pkg/b.py"}
        assert (Path(staged) / "pkg" / "b.py").read_text(encoding="utf-8") == "B = 2\n"


@pytest.mark.parametrize(
    "app_table",
    [
        "",  # no fab-include: Flower's default rules pick the files
        "fab-include = []",
        'fab-include = ["*.py"]',
        'fab-include = ["pkg/"]',
        'fab-include = ["pkg/[b].py"]',
        'fab-include = ["a.py", "missing.py"]',
        'fab-include = ["../outside.py"]',
        'fab-include = ["a.py"]\nfab-exclude = ["pkg/b.py"]',
        'fab-include = "a.py"',
    ],
)
def test_the_app_itself_is_given_when_fab_include_cannot_stand_for_the_bundle(tmp_path, app_table):
    app = _app(tmp_path / "app", app_table)
    (tmp_path / "outside.py").write_text("", encoding="utf-8")
    with staged_app(str(app)) as staged:
        assert staged == str(app)


def test_a_symbolic_link_or_a_missing_directory_is_given_as_it_is(tmp_path):
    app = _app(tmp_path / "app", 'fab-include = ["a.py", "link.py"]')
    (app / "link.py").symlink_to(app / "a.py")
    with staged_app(str(app)) as staged:
        assert staged == str(app)
    with staged_app(str(tmp_path / "nowhere")) as staged:
        assert staged == str(tmp_path / "nowhere")
    (app / "pyproject.toml").write_text("not toml [", encoding="utf-8")
    with staged_app(str(app)) as staged:
        assert staged == str(app)


def test_submit_runs_flwr_on_the_copy_and_removes_it(tmp_path, monkeypatch):
    seen = {}

    def flwr_run(argv, **_kwargs):
        staged = Path(argv[2])
        seen["dir"], seen["files"] = staged, _files(staged)
        return subprocess.CompletedProcess(argv, 0, stdout='{"success": true, "run-id": 42}', stderr="")

    monkeypatch.setattr(_run_cmd, "flwr_command", lambda: "flwr")
    monkeypatch.setattr(_run_cmd.subprocess, "run", flwr_run)
    run = _run_cmd.submit(str(REPO), "consortium", None)
    assert run.run_id == 42 and seen["dir"] != REPO
    assert seen["files"] == {"pyproject.toml", ".gitignore", *bundle_file_names(REPO)}
    assert not seen["dir"].exists()


def test_flowers_refusal_names_the_app_not_the_removed_copy(monkeypatch):
    def flwr_refuses(argv, **_kwargs):
        return subprocess.CompletedProcess(argv, 1, stdout="", stderr=f"Invalid app configuration in {argv[2]}")

    monkeypatch.setattr(_run_cmd, "flwr_command", lambda: "flwr")
    monkeypatch.setattr(_run_cmd.subprocess, "run", flwr_refuses)
    with pytest.raises(ValueError, match="did not start a run") as refused:
        _run_cmd.submit(str(REPO), "consortium", None)
    assert str(refused.value).endswith(f"Invalid app configuration in {REPO}")
