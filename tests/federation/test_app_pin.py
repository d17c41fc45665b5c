"""The app pin ships with the package and a party without it is told so in its own log (review rev-pkg P2).

- ``edprf party install-pin DIR`` writes the launcher as ``DIR/flwr-clientapp``, mode 0755, with this Python on its
  ``#!`` line; it refuses to replace a different file without ``--force`` and leaves the same bytes alone.
- The launcher is a program of the ``edprf_fl`` package that nothing imports; before the app runs it sets
  ``EDPRF_APP_PINNED`` in the ClientApp process.
- A deployed party's ClientApp logs a WARNING, once per process, when that marker is absent; a simulated party's
  never does.  Nothing reaches a reply (tests/privacy/test_reply_texts_are_public.py).
"""

from __future__ import annotations

import hashlib
import logging
import os
import stat
import sys
from pathlib import Path

import pytest

from edprf_fl.cli._main import main
from tests.deployment.test_pinned_bundle_hash import _build_fab, launcher  # noqa: F401 (a fixture)

REPO = Path(__file__).resolve().parents[2]
LAUNCHER = REPO / "edprf_fl" / "_pinned_clientapp.py"


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
    assert f"  Environment=PATH={tmp_path / 'pinned'}:{Path(sys.executable).parent}:" in out
    assert f"  Environment=EDPRF_TRUSTED_APP_HASHES={Path('trusted-apps.txt').absolute()}\n" in out
    assert "flower-superexec" in out and "section 6" in out
    assert "next: start the process that starts this party's ClientApps" in out and "no restart needed" not in out


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
    capsys.readouterr()
    assert main(["party", "install-pin", str(pinned), "--force"]) == 0
    assert target.read_bytes() == installed and stat.S_IMODE(target.stat().st_mode) == 0o755
    # an upgrade's reinstall: a service already started with the directory on its PATH needs no restart (rev-upgrade U8)
    assert f"already started with {pinned} first on its PATH runs this launcher" in capsys.readouterr().out

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


def test_the_launcher_marks_the_clientapp_process_as_pinned(tmp_path, monkeypatch, launcher):  # noqa: F811
    """Its ``main`` sets the marker, naming the list, before Flower's ClientApp (and so the app) runs."""
    from flwr.supernode import cli as supernode_cli

    from client._app_pin import APP_PIN_MARKER

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


def test_install_pin_prints_the_service_s_environment_lines_written_out(tmp_path, capsys, monkeypatch):
    """Review rev-pkg2 R5: the printed "Environment= lines" held PATH=DIR:$PATH, which systemd does not expand, and,
    without a list, EDPRF_TRUSTED_APP_HASHES=/path/to/trusted-apps.txt, a placeholder that looked like a value."""
    venv_bin = Path(sys.executable).parent
    monkeypatch.setenv("PATH", f"/usr/bin:relative/bin::{venv_bin}:/usr/bin:/bin")  # repeats, relative, empty
    monkeypatch.delenv("EDPRF_TRUSTED_APP_HASHES", raising=False)
    pinned = tmp_path / "pinned"
    assert main(["party", "install-pin", str(pinned)]) == 0
    out = capsys.readouterr().out
    assert f"\n  Environment=PATH={pinned}:{venv_bin}:/usr/bin:/bin\n" in out, out
    assert "$PATH" not in out.split("\n  Environment=PATH=", 1)[1]  # the value: nothing left for systemd to expand
    assert "systemd expands no $PATH in Environment=" in out
    assert "/path/to" not in out and "EDPRF_TRUSTED_APP_HASHES=/" not in out
    assert "an Environment=EDPRF_TRUSTED_APP_HASHES= line with the list's absolute path filled in" in out
    assert "no --trusted-apps, EDPRF_TRUSTED_APP_HASHES is not set" in out

    listed = tmp_path / "party lists" / "trusted-apps.txt"  # a space: systemd reads the assignment quoted
    monkeypatch.setenv("EDPRF_TRUSTED_APP_HASHES", str(listed))
    assert main(["party", "install-pin", str(pinned)]) == 0
    out = capsys.readouterr().out
    assert f'\n  Environment="EDPRF_TRUSTED_APP_HASHES={listed}"\n' in out, out
    assert f"--trusted-apps '{listed}'`" in out and "filled in" not in out


def test_install_pin_refuses_a_directory_in_a_parent_other_accounts_can_write(tmp_path, capsys):
    """Review rev-pkg2 R7: in a 0777 parent, another account renamed DIR away and put its own flwr-clientapp in a
    new DIR.  A parent with the sticky bit (/tmp) lets no other account rename what it holds."""
    for mode in (0o777, 0o775):
        parent = tmp_path / f"open-{mode:o}"
        parent.mkdir()
        parent.chmod(mode)
        assert main(["party", "install-pin", str(parent / "a" / "pinned")]) == 1
        err = capsys.readouterr().err
        assert f"{parent} is writable by other accounts (mode {mode:04o}, no sticky bit)" in err, err
        assert f"could rename {parent / 'a' / 'pinned'} away" in err and f"chmod go-w {parent}" in err
        assert list(parent.iterdir()) == []  # refused before anything is made
    sticky = tmp_path / "sticky"
    sticky.mkdir()
    sticky.chmod(0o1777)
    assert main(["party", "install-pin", str(sticky / "pinned")]) == 0
    # a link to a private directory in an open parent: the parents of the resolved path are checked too
    (tmp_path / "open-777" / "private").mkdir(mode=0o700)
    (tmp_path / "link").symlink_to(tmp_path / "open-777" / "private")
    assert main(["party", "install-pin", str(tmp_path / "link" / "pinned")]) == 1
    assert f"{tmp_path / 'open-777'} is writable by other accounts" in capsys.readouterr().err


def test_install_pin_without_flower_names_the_deploy_extra():
    """Review rev-pkg2 R9: it named the simulation's extra ([federation]); a party installs [deploy]."""
    import subprocess

    blocker = (
        "import importlib.abc, sys\n"
        "class NoFederation(importlib.abc.MetaPathFinder):\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in ('flwr', 'ray'):\n"
        "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
        "        return None\n"
        "sys.meta_path.insert(0, NoFederation())\n"
        "from edprf_fl.cli import main\n"
        "raise SystemExit(main(['party', 'install-pin', '/nonexistent/pinned']))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", blocker], cwd=REPO, capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1] == (
        f"edprf party install-pin: error: Flower is not installed next to {sys.executable}: the launcher this "
        "command writes imports Flower and runs with this Python, so the party's venv needs the deploy extra: "
        "pip install 'edprf-fl[deploy]'"
    )


def test_the_launcher_uses_no_flower_home(tmp_path, monkeypatch, launcher):  # noqa: F811
    """Review rev-pkg2 R3: a pinned party's check called an unusable Flower home a problem.  The launcher installs
    each approved bundle into a fresh private directory and answers get_project_dir with it: with FLWR_HOME a file
    (nothing can be made under it) the bundle installs and is found, and the file is untouched."""
    import hashlib
    import tempfile

    from flwr.supernode.runtime import run_clientapp

    unusable = tmp_path / "flwr-home-file"
    unusable.write_text("not a directory\n")
    monkeypatch.setenv("FLWR_HOME", str(unusable))  # over the fixture's, which restores Flower's functions after
    fab = _build_fab(tmp_path / "app", "app = 'reviewed code'\n")
    digest = hashlib.sha256(fab).hexdigest()
    listed = tmp_path / "trusted-apps.txt"
    listed.write_text(digest + "\n")
    launcher.install(listed)
    installed = Path(run_clientapp.install_from_fab(fab, skip_prompt=True))
    assert installed.parent.parent.name.startswith("edprf-pinned-app-")
    assert installed.parent.parent.parent == Path(tempfile.gettempdir())
    assert stat.S_IMODE(installed.parent.parent.stat().st_mode) == 0o700  # mkdtemp: the party's account only
    assert run_clientapp.get_project_dir("edprf/pinnedtest", "1.0.0", digest) == installed
    assert unusable.read_text() == "not a directory\n"


@pytest.mark.parametrize(
    "modes",
    [
        (0o644, 0o700, None),
        (0o664, 0o700, "is writable by other accounts: chmod go-w"),
        (0o646, 0o700, "is writable by other accounts: chmod go-w"),
        (0o644, 0o777, "(mode 0777) is writable by other accounts without the sticky bit: chmod go-w"),
        (0o644, 0o1777, None),  # others cannot rename or delete the owner's list in a sticky directory
    ],
)
def test_the_launcher_approves_nothing_from_a_list_others_can_write(tmp_path, caplog, launcher, modes):  # noqa: F811
    """Whoever can write the list, or replace it in its directory, approves any bundle: from such a list the launcher
    approves nothing, and refuses the listed bundle with an unlisted one's text (the coordinator learns nothing of
    the party's files); the reason, with the path, is in the party's own log."""
    from flwr.supernode.runtime import run_clientapp

    list_mode, dir_mode, refused = modes
    where = tmp_path / "lists"
    where.mkdir()
    fab = _build_fab(tmp_path / "good", "app = 'reviewed code'\n")
    listed = where / "trusted-apps.txt"
    listed.write_text(hashlib.sha256(fab).hexdigest() + "\n")
    listed.chmod(list_mode)
    where.chmod(dir_mode)
    try:
        with caplog.at_level(logging.ERROR, logger="edprf.party"):
            launcher.install(listed)
    finally:
        where.chmod(0o700)
    if refused is None:
        assert run_clientapp.install_from_fab(fab, skip_prompt=True).is_dir() and caplog.text == ""
        return
    assert "flwr-clientapp (pinned): the list of trusted app bundles is not trusted: " in caplog.text
    assert refused in caplog.text and "every app bundle is refused" in caplog.text
    with pytest.raises(PermissionError, match="is not in the party's trusted list") as refusal:
        run_clientapp.install_from_fab(fab, skip_prompt=True)
    assert str(tmp_path) not in str(refusal.value)


@pytest.mark.parametrize("route", ["grandparent", "link", "linked-directory"])
def test_the_launcher_checks_every_directory_above_the_list_and_behind_a_link(
    tmp_path,
    caplog,
    launcher,  # noqa: F811
    route,
):
    """Review read67: the check followed a symlinked list without looking at the directory it points into, and looked
    only at the list's own directory.  Whoever can write any directory above the list (or above what a link points
    to) can rename it away and put their own list in its place; such a list approves nothing."""
    from flwr.supernode.runtime import run_clientapp

    fab = _build_fab(tmp_path / "good", "app = 'reviewed code'\n")
    shared = tmp_path / "shared"  # writable by every account, no sticky bit
    (shared / "party").mkdir(parents=True)
    real = shared / "party" / "trusted-apps.txt"
    real.write_text(hashlib.sha256(fab).hexdigest() + "\n")
    real.chmod(0o644)
    safe = tmp_path / "safe"
    safe.mkdir(mode=0o700)
    if route == "grandparent":
        listed = real
    elif route == "link":
        listed = safe / "trusted-apps.txt"
        listed.symlink_to(real)
    else:
        (safe / "party").symlink_to(shared / "party")
        listed = safe / "party" / "trusted-apps.txt"
    shared.chmod(0o777)
    try:
        with caplog.at_level(logging.ERROR, logger="edprf.party"):
            launcher.install(listed)
    finally:
        shared.chmod(0o700)
    assert f"the directory {shared} above it (mode 0777) is writable by other accounts" in caplog.text
    with pytest.raises(PermissionError, match="is not in the party's trusted list"):
        run_clientapp.install_from_fab(fab, skip_prompt=True)


@pytest.mark.parametrize("content", ["not a hash\n", None, "unset"])
def test_an_unreadable_malformed_or_unset_list_approves_nothing(tmp_path, caplog, launcher, content):  # noqa: F811
    """The ClientApp still starts (an exit would leave the coordinator a silent node, which its readiness round counts
    as serving) and refuses every bundle as an unlisted one."""
    from flwr.supernode.runtime import run_clientapp

    listed = tmp_path / "trusted-apps.txt"
    if content not in (None, "unset"):
        listed.write_text(content)
        listed.chmod(0o644)
    with caplog.at_level(logging.ERROR, logger="edprf.party"):
        launcher.install("" if content == "unset" else listed)
    assert "the list of trusted app bundles cannot be read: " in caplog.text
    assert ("EDPRF_TRUSTED_APP_HASHES is not set" if content == "unset" else "trusted-apps.txt") in caplog.text
    with pytest.raises(PermissionError, match="is not in the party's trusted list"):
        run_clientapp.install_from_fab(_build_fab(tmp_path / "good", "app = 1\n"), skip_prompt=True)
