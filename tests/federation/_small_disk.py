"""A real small disk for the full-disk tests: a tmpfs of a given size, mounted when the tests run as root."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


@contextmanager
def small_disk_at(mount: Path, size: str) -> Iterator[Path]:
    """A tmpfs of ``size`` (``"512k"``) mounted at ``mount`` (made here) for the block; the test is skipped where
    that cannot be done (not root, no tmpfs)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mount.mkdir()
    made = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mount)], check=False, capture_output=True
    )
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {made.stderr.decode(errors='replace').strip()}")
    try:
        yield mount
    finally:  # a file still open there (a child the test stopped) keeps it busy: then detached lazily
        if subprocess.run(["umount", str(mount)], check=False, capture_output=True).returncode != 0:
            subprocess.run(["umount", "--lazy", str(mount)], check=False, capture_output=True)
