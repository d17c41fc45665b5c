"""The version of the code that runs comes from the pyproject.toml beside its packages (review rev-research R13 and
re-review N7: a run's report carried the installed package's version while the code was another's)."""

from __future__ import annotations

import importlib.metadata

import pytest

from edprf_core import code_version as module


@pytest.fixture
def fresh(monkeypatch):
    module.code_version.cache_clear()
    yield monkeypatch
    module.code_version.cache_clear()


def test_the_pyproject_beside_the_packages_wins_over_the_installed_metadata(tmp_path, fresh):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "edprf-fl"\nversion = "9.8.7"\n')
    fresh.setattr(module, "_SOURCE_ROOT", tmp_path)  # a FAB's directory, or a checkout moved to other code
    assert module.code_version() == ("9.8.7", "pyproject.toml")


@pytest.mark.parametrize("text", [None, "not toml [", '[project]\nname = "another-project"\nversion = "1.0"\n'])
def test_without_the_projects_own_pyproject_the_installed_metadata_is_read(tmp_path, fresh, text):
    if text is not None:  # site-packages of a wheel has none; another project's, or a broken one, is not ours
        (tmp_path / "pyproject.toml").write_text(text)
    fresh.setattr(module, "_SOURCE_ROOT", tmp_path)
    assert module.code_version() == (importlib.metadata.version("edprf-fl"), "installed metadata")


def test_neither_says_unknown(tmp_path, fresh):
    def not_installed(name):
        raise importlib.metadata.PackageNotFoundError(name)

    fresh.setattr(module, "_SOURCE_ROOT", tmp_path)
    fresh.setattr(importlib.metadata, "version", not_installed)
    assert module.code_version() == ("unknown", "unknown")
