"""`edprf consortium` finds the app to submit after a plain (non-editable) install, as the runbook installs it."""

from __future__ import annotations

from pathlib import Path

import pytest

from edprf_fl.cli import _consortium

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def plain_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The package seen from site-packages (no pyproject.toml above it), run from an unrelated directory."""
    site = tmp_path / "site-packages"
    site.mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.setattr(_consortium, "_source_tree", lambda: site)
    monkeypatch.delenv("EDPRF_SRC", raising=False)
    monkeypatch.chdir(elsewhere)
    return site


def test_a_plain_install_takes_edprf_src(plain_install: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EDPRF_SRC", str(ROOT))
    assert _consortium._app_dir(None) == ROOT


def test_a_plain_install_takes_the_working_directory(plain_install: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    assert _consortium._app_dir(None) == ROOT


def test_without_a_source_tree_the_error_says_where_it_looked_and_what_to_do(plain_install: Path) -> None:
    with pytest.raises(ValueError) as caught:
        _consortium._app_dir(None)
    text = str(caught.value)
    assert str(plain_install) in text and "elsewhere" in text
    assert "--app" in text and "EDPRF_SRC" in text


def test_an_editable_install_needs_nothing() -> None:
    assert _consortium._app_dir(None) == ROOT


def test_a_given_directory_is_the_only_one_tried(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=str(tmp_path)):
        _consortium._app_dir(tmp_path)
