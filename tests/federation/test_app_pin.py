"""The app pin ships with the package and a party without it is told so in its own log (review rev-pkg P2).

- ``edprf party install-pin DIR`` writes the launcher as ``DIR/flwr-clientapp``, mode 0755, with this Python on its
  ``#!`` line; it refuses to replace a different file without ``--force`` and leaves the same bytes alone.
- The launcher is a program of the ``edprf_fl`` package that nothing imports; before the app runs it sets
  ``EDPRF_APP_PINNED`` in the ClientApp process.
- A deployed party's ClientApp logs a WARNING, once per process, when that marker is absent; a simulated party's
  never does.  Nothing reaches a reply (tests/privacy/test_reply_texts_are_public.py).
"""

from __future__ import annotations

import importlib.util
import logging
import os
import stat
import sys
from pathlib import Path

import pytest

from edprf_fl.cli._main import main

REPO = Path(__file__).resolve().parents[2]
LAUNCHER = REPO / "edprf_fl" / "_pinned_clientapp.py"


def _launcher_module():
    spec = importlib.util.spec_from_file_location("pinned_clientapp_under_test", LAUNCHER)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_install_pin_writes_the_launcher_with_this_python_mode_0755(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("EDPRF_TRUSTED_APP_HASHES", raising=False)
    old = os.umask(0o000)  # whatever the umask, the launcher is 0755
    try:
        assert main(["party", "install-pin", str(tmp_path / "pinned"), "--trusted-apps", "trusted-apps.txt"]) == 0
        assert main(["party", "install-pin", str(tmp_path / "new" / "parent" / "pinned")]) == 0
    finally:
        os.umask(old)
    target = tmp_path / "pinned" / "flwr-clientapp"
    assert stat.S_IMODE(target.stat().st_mode) == 0o755
    for made in ("new", "new/parent", "new/parent/pinned"):  # parents made for it too: none writable by others
        assert stat.S_IMODE((tmp_path / made).stat().st_mode) == 0o755, made
    first, rest = target.read_text(encoding="utf-8").split("\n", 1)
    assert first == f"#!{sys.executable}"  # the virtualenv's python, which imports the same flwr
    assert rest == LAUNCHER.read_text(encoding="utf-8").split("\n", 1)[1]  # the shipped launcher, byte for byte
    out = capsys.readouterr().out
    assert f"wrote {target} (mode 0755)" in out
    assert f"  PATH={tmp_path / 'pinned'}:$PATH\n" in out
    assert f"  EDPRF_TRUSTED_APP_HASHES={Path('trusted-apps.txt').absolute()}\n" in out
    assert "flower-superexec" in out and "section 6" in out


def test_install_pin_refuses_a_different_file_without_force_and_keeps_the_same(tmp_path, capsys):
    pinned = tmp_path / "pinned"
    assert main(["party", "install-pin", str(pinned)]) == 0
    target = pinned / "flwr-clientapp"
    installed = target.read_bytes()
    target.chmod(0o700)
    capsys.readouterr()
    assert main(["party", "install-pin", str(pinned)]) == 0  # the same bytes: left alone, mode set again
    assert "already this launcher" in capsys.readouterr().out
    assert target.read_bytes() == installed and stat.S_IMODE(target.stat().st_mode) == 0o755

    other_python = installed.replace(f"#!{sys.executable}".encode(), b"#!/usr/bin/python3", 1)
    target.write_bytes(other_python)
    assert main(["party", "install-pin", str(pinned)]) == 1
    err = capsys.readouterr().err
    assert "is this launcher run by another interpreter ('#!/usr/bin/python3'); pass --force" in err
    assert target.read_bytes() == other_python
    target.write_bytes(b"#!/bin/sh\nexec flwr-clientapp-of-someone-else\n")
    assert main(["party", "install-pin", str(pinned)]) == 1
    assert "differs from this version's launcher; pass --force to replace it" in capsys.readouterr().err
    assert main(["party", "install-pin", str(pinned), "--force"]) == 0
    assert target.read_bytes() == installed and stat.S_IMODE(target.stat().st_mode) == 0o755

    target.unlink()
    target.symlink_to(tmp_path / "elsewhere")
    assert main(["party", "install-pin", str(pinned)]) == 1
    assert "is a symbolic link; pass --force" in capsys.readouterr().err


def test_install_pin_refuses_a_directory_other_accounts_can_write(tmp_path, capsys):
    """Anyone who can write DIR could replace the launcher first on the PATH, and run any bundle."""
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    assert main(["party", "install-pin", str(shared)]) == 1
    assert "is writable by other accounts (mode 0777)" in capsys.readouterr().err
    assert not (shared / "flwr-clientapp").exists()


def test_the_launcher_ships_in_the_package_and_nothing_imports_it():
    from edprf_fl import pinned_launcher_text
    from tests.import_graph import imports, sources

    assert pinned_launcher_text("/opt/venv/bin/python").startswith('#!/opt/venv/bin/python\n"""A party\'s')
    with pytest.raises(ValueError, match="a '#!' line cannot hold"):
        pinned_launcher_text("/opt/my venv/bin/python")
    importers = [
        f"{path.relative_to(REPO)}:{line}"
        for path in [*sources(), *sorted((REPO / "tests").rglob("*.py"))]
        for line, target, names in imports(path)
        if target == "edprf_fl._pinned_clientapp" or (target == "edprf_fl" and "_pinned_clientapp" in names)
    ]
    assert importers == []
    assert not (REPO / "deploy" / "party" / "pinned_clientapp.py").exists()  # one copy, in the package


def test_the_launcher_marks_the_clientapp_process_as_pinned(tmp_path, monkeypatch):
    """Its ``main`` sets the marker, naming the list, before Flower's ClientApp (and so the app) runs."""
    from flwr.supernode import cli as supernode_cli

    from client._app_pin import APP_PIN_MARKER

    launcher = _launcher_module()
    assert launcher.PINNED_MARKER == APP_PIN_MARKER
    listed = tmp_path / "trusted-apps.txt"
    listed.write_text("ab" * 32 + "\n")
    seen: list[str | None] = []
    monkeypatch.setattr(launcher, "install", lambda path: None)
    monkeypatch.setattr(supernode_cli, "flwr_clientapp", lambda: seen.append(os.environ.get(APP_PIN_MARKER)) or 0)
    monkeypatch.setenv("EDPRF_TRUSTED_APP_HASHES", str(listed))
    monkeypatch.delenv(APP_PIN_MARKER, raising=False)
    assert launcher.main() == 0
    assert seen == [str(listed)]


def _lifespan_warnings(node_config, caplog) -> list[str]:
    from flwr.app import Context, RecordDict

    from client.client_app import lifespan

    context = Context(run_id=1, node_id=1, node_config=node_config, state=RecordDict(), run_config={})
    caplog.clear()
    with caplog.at_level(logging.DEBUG, logger="edprf.party"):
        hook = lifespan(context)
        next(hook)
        next(hook, None)
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING and "app bundle" in r.getMessage()]


def test_an_unpinned_party_says_so_in_its_log_once_per_process(tmp_path, caplog, monkeypatch):
    from client import _app_pin

    monkeypatch.setattr(_app_pin, "_said", False)
    monkeypatch.delenv(_app_pin.APP_PIN_MARKER, raising=False)
    deployed = {"data-path": str(tmp_path / "data.csv"), "schema-path": str(tmp_path / "schema.toml")}
    [warning] = _lifespan_warnings(deployed, caplog)
    assert warning == _app_pin.UNPINNED_WARNING
    assert "runs every app bundle the coordinator submits" in warning and "edprf party install-pin" in warning
    assert "deploy/README.md section 6" in warning
    assert _lifespan_warnings(deployed, caplog) == []  # once per process

    monkeypatch.setattr(_app_pin, "_said", False)
    monkeypatch.setenv(_app_pin.APP_PIN_MARKER, str(tmp_path / "trusted-apps.txt"))  # as the launcher sets it
    assert _lifespan_warnings(deployed, caplog) == []
    monkeypatch.delenv(_app_pin.APP_PIN_MARKER)
    assert _lifespan_warnings({"partition-id": 0}, caplog) == []  # a simulated party runs the local code
