"""The pinned-bundle launcher runs only verified bundle content, never a directory trusted by its name (finding 10).

Unit tests: no Flower server is started.  They drive the launcher's replacements of
``run_clientapp.install_from_fab`` and ``get_project_dir`` exactly as Flower 1.41's
``run_clientapp`` calls them (install the pulled FAB bytes, then look the app up by the
SuperLink-supplied ``fab_id``, ``fab_version`` and ``hash_str``).
"""

from __future__ import annotations

import hashlib
import importlib.util
import shutil
from pathlib import Path

import pytest

LAUNCHER = Path(__file__).resolve().parents[2] / "edprf_fl" / "_pinned_clientapp.py"

PYPROJECT = """\
[build-system]
requires = ["hatchling"]
build-backend = "hatchling.build"

[project]
name = "pinnedtest"
version = "1.0.0"
dependencies = []

[tool.flwr.app]
publisher = "edprf"

[tool.flwr.app.components]
serverapp = "pinnedtest.server_app:app"
clientapp = "pinnedtest.client_app:app"

[tool.flwr.app.config]
x = 1
"""


def _build_fab(root: Path, client_code: str) -> bytes:
    from flwr.cli.build import build_fab_from_disk

    (root / "pinnedtest").mkdir(parents=True)
    (root / "pyproject.toml").write_text(PYPROJECT)
    (root / "pinnedtest" / "__init__.py").write_text("")
    (root / "pinnedtest" / "server_app.py").write_text("app = None\n")
    (root / "pinnedtest" / "client_app.py").write_text(client_code)
    return build_fab_from_disk(root)


@pytest.fixture
def launcher(monkeypatch, tmp_path):
    """A fresh copy of the launcher module, with FLWR_HOME in tmp_path and Flower's functions restored after."""
    from flwr.clientapp import utils as clientapp_utils
    from flwr.common import config as flwr_config
    from flwr.supernode.runtime import run_clientapp

    monkeypatch.setenv("FLWR_HOME", str(tmp_path / "flwr-home"))
    for module, name in (
        (run_clientapp, "install_from_fab"),
        (run_clientapp, "get_project_dir"),
        (clientapp_utils, "get_project_dir"),
        (flwr_config, "get_project_dir"),
    ):
        monkeypatch.setattr(module, name, getattr(module, name))
    spec = importlib.util.spec_from_file_location("pinned_clientapp_under_test", LAUNCHER)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def bundles(tmp_path):
    good = _build_fab(tmp_path / "good", "app = 'reviewed code'\n")
    evil = _build_fab(tmp_path / "evil", "app = 'EXFILTRATE'\n")
    return good, evil


def _pin(tmp_path: Path, *fabs: bytes) -> Path:
    path = tmp_path / "trusted-apps.txt"
    path.write_text("".join(hashlib.sha256(f).hexdigest() + "\n" for f in fabs))
    path.chmod(0o644)  # whatever the umask: the launcher refuses a list other accounts can write
    return path


def test_trusted_bundle_runs_from_a_verified_directory(launcher, bundles, tmp_path):
    from flwr.common import config as flwr_config
    from flwr.supernode.runtime import run_clientapp

    good, _ = bundles
    launcher.install(_pin(tmp_path, good))
    digest = hashlib.sha256(good).hexdigest()
    installed = run_clientapp.install_from_fab(good, skip_prompt=True)
    app_dir = run_clientapp.get_project_dir("edprf/pinnedtest", "1.0.0", digest)
    assert app_dir == installed
    assert (app_dir / "pinnedtest" / "client_app.py").read_text() == "app = 'reviewed code'\n"
    assert flwr_config.get_project_dir("edprf/pinnedtest", "1.0.0", digest) == installed


def test_untrusted_bundle_refused(launcher, bundles, tmp_path):
    from flwr.supernode.runtime import run_clientapp

    good, evil = bundles
    launcher.install(_pin(tmp_path, good))
    with pytest.raises(PermissionError, match="not in the party's trusted list") as refused:
        run_clientapp.install_from_fab(evil, skip_prompt=True)
    assert str(tmp_path) not in str(refused.value)  # the coordinator gets the message: no path of the party's host


def test_tampered_directory_named_with_the_pinned_hash_is_never_run(launcher, bundles, tmp_path):
    """A directory carrying the pinned hash in its name but other content: Flower would reuse it as installed."""
    from flwr.common.config import get_project_dir as flower_project_dir
    from flwr.supernode.runtime import run_clientapp

    good, _ = bundles
    digest = hashlib.sha256(good).hexdigest()
    planted = flower_project_dir("edprf/pinnedtest", "1.0.0", digest)  # the name Flower trusts
    planted.mkdir(parents=True)
    (planted / "pinnedtest").mkdir()
    (planted / "pyproject.toml").write_text(PYPROJECT)
    (planted / "pinnedtest" / "client_app.py").write_text("app = 'EXFILTRATE'\n")

    launcher.install(_pin(tmp_path, good))
    installed = run_clientapp.install_from_fab(good, skip_prompt=True)
    app_dir = run_clientapp.get_project_dir("edprf/pinnedtest", "1.0.0", digest)
    assert app_dir == installed and app_dir.resolve() != planted.resolve()
    assert (app_dir / "pinnedtest" / "client_app.py").read_text() == "app = 'reviewed code'\n"


def test_superlink_names_not_matching_the_verified_bundle_are_refused(launcher, bundles, tmp_path):
    from flwr.supernode.runtime import run_clientapp

    good, evil = bundles
    launcher.install(_pin(tmp_path, good, evil))
    run_clientapp.install_from_fab(good, skip_prompt=True)
    # the SuperLink sends the trusted bytes but names another bundle's hash, or another app/version
    with pytest.raises(PermissionError, match="not installed from verified content"):
        run_clientapp.get_project_dir("edprf/pinnedtest", "1.0.0", hashlib.sha256(evil).hexdigest())
    with pytest.raises(PermissionError, match="is not the verified bundle"):
        run_clientapp.get_project_dir("edprf/other", "9.9.9", hashlib.sha256(good).hexdigest())


def test_verified_directory_changed_after_installation_is_refused(launcher, bundles, tmp_path):
    from flwr.supernode.runtime import run_clientapp

    good, _ = bundles
    launcher.install(_pin(tmp_path, good))
    installed = run_clientapp.install_from_fab(good, skip_prompt=True)
    (installed / "pinnedtest" / "client_app.py").write_text("app = 'EXFILTRATE'\n")
    with pytest.raises(PermissionError, match="changed after installation"):
        run_clientapp.get_project_dir("edprf/pinnedtest", "1.0.0", hashlib.sha256(good).hexdigest())
    shutil.rmtree(installed)


def test_a_labelled_hash_line_is_read_as_its_hash(launcher, tmp_path):
    """Review rev-day2 U9: section 6 appends each hash with a label comment; the launcher reads the hash alone."""
    old, new = "ab" * 32, "CD" * 32
    listed = tmp_path / "trusted-apps.txt"
    listed.write_text(
        f"# approved bundles of edprf-fl\n{old}  # edprf-fl 0.2.10 (git c1cb76d), approved 2026-11-30\n"
        f"{new}  # edprf-fl 0.2.11 (git 6819da8), approved 2026-12-01\n\n",
        encoding="utf-8",
    )
    assert launcher.trusted_hashes(listed) == {old, new.lower()}
