"""``edprf simulate`` on a disk that fills while it writes the parties' workspace: the part written (copies of
the input rows) is removed and the error says so, in one line.  A real write failure: the child process runs
under a file-size limit (``RLIMIT_FSIZE``; the kernel then fails the write with ``EFBIG``, as a full disk fails
it with ``ENOSPC``)."""

from __future__ import annotations

import resource
import signal
import subprocess
import sys

import numpy as np
import pytest

from edprf_core import load_embedded

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_FSIZE and SIGXFSZ as on Linux")

_LIMIT = 4096
"""Bytes a file of the child may reach: more than its schema file, less than a party's rows."""


def _file_size_limit() -> None:  # in the child, before exec
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # the write fails instead of the process being killed
    resource.setrlimit(resource.RLIMIT_FSIZE, (_LIMIT, _LIMIT))


def test_a_workspace_that_cannot_be_written_whole_is_removed_and_said(tmp_path):
    X, y, schema = load_embedded("wall_robot_navigation")
    rows = np.random.default_rng(0).permutation(len(X))[:400]
    data = tmp_path / "wall.csv"
    X.iloc[rows].assign(**{schema.label.column: y.iloc[rows].to_numpy()}).to_csv(data, index=False)
    schema.save(tmp_path / "schema.toml")
    out = tmp_path / "run"
    argv = ["simulate", "--data", str(data), "--schema", str(tmp_path / "schema.toml"), "--no-baselines"]
    done = subprocess.run(
        [sys.executable, "-m", "edprf_fl.cli", *argv, "--output", str(out)],
        preexec_fn=_file_size_limit,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    last = done.stderr.splitlines()[-1]
    assert last == (
        f"edprf simulate: error: writing the parties' workspace {out / 'workspace'} failed (File too large); the "
        "part written (copies of the rows) was removed"
    )
    assert not out.exists()  # created by the run and left empty: gone too
