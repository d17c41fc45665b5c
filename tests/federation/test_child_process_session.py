"""`run_in_child` returns only when nothing its job started is still running.

Ray's daemons (the autoscaler's monitor, for one) are still winding down when ``ray.shutdown`` returns, so
`edprf simulate --engine ray` could end while one of them ran on for a fraction of a second (seen once in CI
by ``test_edprf_simulate_listens_on_loopback_only``).  The child leads its own session; when it ends, what is
left of the session gets ``GRACE_SECONDS`` to exit and is then stopped.
"""

from __future__ import annotations

import logging
import os
import subprocess
from pathlib import Path

from edprf_fl.cli._child_process import run_in_child, running, session_members


def _leave_behind(pid_file: str, command: list[str]) -> None:
    """The job: start ``command`` in the child's session and return without waiting for it."""
    Path(pid_file).write_text(str(subprocess.Popen(command).pid))


def test_a_process_the_job_leaves_running_is_stopped_before_the_call_returns(tmp_path, caplog):
    pid_file = tmp_path / "pid"
    with caplog.at_level(logging.WARNING, logger="edprf"):
        code = run_in_child(_leave_behind, str(pid_file), ["sleep", "600"], isolate_network=False)
    assert code == 0
    left = int(pid_file.read_text())
    assert not running({left}), f"process {left} outlived run_in_child"
    assert "stopping 1 process the job left running" in caplog.text
    assert f"{left} sleep 600" in caplog.text  # names the process by its command line


def test_a_process_that_is_winding_down_is_let_finish(tmp_path, caplog):
    pid_file, done = tmp_path / "pid", tmp_path / "done"
    with caplog.at_level(logging.WARNING, logger="edprf"):
        code = run_in_child(
            _leave_behind, str(pid_file), ["sh", "-c", f"sleep 0.3; touch '{done}'"], isolate_network=False
        )
    assert code == 0
    assert done.exists(), "the winding-down process was stopped (or not waited for) instead of let finish"
    assert "left running" not in caplog.text


def test_session_members_lists_a_session_and_leaves_out_others(tmp_path):
    proc = subprocess.Popen(["sleep", "600"], start_new_session=True)
    try:
        assert session_members(proc.pid) == {proc.pid}
        assert proc.pid not in session_members(os.getsid(0))
    finally:
        proc.kill()
        proc.wait()
    assert session_members(proc.pid) == set()
