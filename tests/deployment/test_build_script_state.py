"""``deploy/build-local-image.sh`` keeps its state (dockerd's socket and data, the base image's rootfs) in a
directory of its own user's, whatever the umask and whoever got to the path first.

Security review finding 3: the script ran as root in a fixed ``/tmp/edprf-docker`` made with ``mkdir -p``, so a
local account that created that directory first owned what root then put in it (and could swap the rootfs before
``docker import``).  These tests run the script's directory guard without Docker: the script runs with a ``PATH``
of stand-ins that holds no ``dockerd``, so ``engine`` stops right after the guard; another account is played by an
``id`` that answers a different uid.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from ._harness import REPO

SCRIPT = REPO / "deploy" / "build-local-image.sh"
TOOLS = ("dirname", "mkdir", "stat", "chmod", "cat")
"""What the script runs before its first Docker command (``cd``, ``pwd``, ``kill`` are the shell's own)."""

pytestmark = pytest.mark.skipif(
    not all(shutil.which(t) for t in ("sh", *TOOLS)), reason="needs a POSIX shell and coreutils"
)


def _bin(tmp_path: Path, uid: int) -> Path:
    """A directory of the tools the script needs, without dockerd, debootstrap or docker; ``id -u`` says ``uid``."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in TOOLS:
        (bin_dir / tool).symlink_to(shutil.which(tool))
    fake_id = bin_dir / "id"
    fake_id.write_text(f"#!{shutil.which('sh')}\necho {uid}\n")
    fake_id.chmod(0o755)
    return bin_dir


def _script(tmp_path: Path, step: str, state: Path, uid: int | None = None) -> subprocess.CompletedProcess:
    bin_dir = tmp_path / "bin"
    if not bin_dir.exists():
        _bin(tmp_path, os.getuid() if uid is None else uid)
    return subprocess.run(
        [shutil.which("sh"), "-c", f"umask 022 && exec {shutil.which('sh')} {SCRIPT} {step}"],
        env={"PATH": str(bin_dir), "EDPRF_DOCKER_STATE": str(state), "HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def test_a_missing_state_directory_is_created_owner_only_whatever_the_umask(tmp_path):
    state = tmp_path / "new" / "edprf-docker"
    done = _script(tmp_path, "engine", state)
    assert done.returncode == 2 and "dockerd not installed" in done.stderr  # stopped after the guard
    assert (_mode(state.parent), _mode(state)) == (0o700, 0o700)


def test_a_directory_another_account_created_first_is_refused(tmp_path):
    state = tmp_path / "edprf-docker"  # ours, but `id -u` says we are someone else: its owner is another account
    state.mkdir(mode=0o700)
    for step in ("engine", "base", "image", "stop"):
        done = _script(tmp_path, step, state, uid=os.getuid() + 1)
        assert done.returncode == 2, step
        assert f"EDPRF_DOCKER_STATE={state}: owned by uid {os.getuid()}" in done.stderr, step
        assert "engine not running" not in done.stdout  # `stop` read no pid file from it
    assert list(state.iterdir()) == []


@pytest.mark.parametrize("mode", [0o777, 0o1777, 0o770, 0o702], ids=oct)
def test_a_state_directory_others_may_write_is_refused(tmp_path, mode):
    state = tmp_path / "edprf-docker"
    state.mkdir()
    state.chmod(mode)
    done = _script(tmp_path, "engine", state)
    assert done.returncode == 2 and "writable by nobody else" in done.stderr
    assert _mode(state) == mode and list(state.iterdir()) == []


def test_a_symbolic_link_is_refused(tmp_path):
    target = tmp_path / "elsewhere"
    target.mkdir(mode=0o700)
    state = tmp_path / "edprf-docker"
    state.symlink_to(target)
    done = _script(tmp_path, "engine", state)
    assert done.returncode == 2 and "symbolic link" in done.stderr


def test_an_own_directory_others_may_only_read_is_narrowed_to_owner_only(tmp_path):
    """What an earlier version of the script left (root's, 0755): nobody else could write in it."""
    state = tmp_path / "edprf-docker"
    state.mkdir()
    state.chmod(0o755)
    done = _script(tmp_path, "engine", state)
    assert done.returncode == 2 and "dockerd not installed" in done.stderr
    assert _mode(state) == 0o700


def test_stop_creates_nothing(tmp_path):
    state = tmp_path / "edprf-docker"
    done = _script(tmp_path, "stop", state)
    assert done.returncode == 0 and "engine not running" in done.stdout
    assert not state.exists()
