"""A coordinator whose disk cannot hold the run: it says so before any party spends, and in one line when a write
fails after the parties released.

Real write failures, no mocks: the run whose model cannot be written runs in a child under a file-size limit
(``RLIMIT_FSIZE``: the kernel fails the write with ``EFBIG``, as a full disk fails it with ``ENOSPC``); the run
refused before the training round writes to a small tmpfs, mounted when the tests run as root (skipped otherwise).
"""

from __future__ import annotations

import errno
import json
import resource
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from client._flower_handlers import _full_disk
from edprf_core import load_embedded
from server._output_space import output_space_problem, write_failed_text, write_failure_text

from ._small_disk import small_disk_at

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_FSIZE, SIGXFSZ and tmpfs as on Linux")

_MODEL_LIMIT = 100_000
"""Bytes a file of the child may reach: more than a party's rows, ledger and the report, less than the model of
three parties' 40 trees (about 110 kB).  The ledger's audit tables (0.2.11) took a party's ledger of 20 trees from
under 60 kB to 53 kB settled and more in its write-ahead log; 40 trees: 70 kB."""


def _file_size_limit() -> None:  # in the child, before exec
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # the write fails instead of the process being killed
    resource.setrlimit(resource.RLIMIT_FSIZE, (_MODEL_LIMIT, _MODEL_LIMIT))


def _wall_files(directory: Path, rows: int = 600) -> list[str]:
    X, y, schema = load_embedded("wall_robot_navigation")
    picked = np.random.default_rng(0).permutation(len(X))[:rows]
    data = directory / "wall.csv"
    X.iloc[picked].assign(**{schema.label.column: y.iloc[picked].to_numpy()}).to_csv(data, index=False)
    schema.save(directory / "schema.toml")
    return ["--data", str(data), "--schema", str(directory / "schema.toml"), "--parties", "3", "--no-baselines"]


def _simulate(argv: list[str], **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "edprf_fl.cli", "simulate", *argv],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        **kwargs,
    )


def _spent(ledger: Path) -> list[tuple[str, str]]:
    with sqlite3.connect(ledger) as db:
        return db.execute("SELECT kind, state FROM spends").fetchall()


def test_a_model_that_cannot_be_written_fails_the_run_in_one_line_saying_the_parties_spent(tmp_path):
    out = tmp_path / "run"
    argv = [*_wall_files(tmp_path), "--n-trees", "40", "--max-depth", "6", "--output", str(out)]
    done = _simulate(argv, preexec_fn=_file_size_limit)
    assert done.returncode == 1, done.stderr
    model = out / "global-model.edprf"
    assert done.stderr.splitlines()[-1] == (  # on stderr: a reader of stdout gone cannot hide it (stop 67)
        f"federation failed: the coordinator could not write its files after the releases arrived ({model}: File "
        "too large): the parties that released have spent their epsilon for this run; make room in output-dir "
        "before the next run (a run with a request-tag can be resubmitted without new epsilon: deploy/README.md "
        f"section 4); see {out / 'report.json'}"
    )
    assert "[3/4] federation failed after " in done.stderr and "[4/4]" not in done.stderr
    assert f"failed after the releases arrived: {model}: File too large" in done.stderr
    assert "Traceback" not in done.stderr  # the one line, not a traceback
    assert not model.exists() and not list(out.glob(".global-model.edprf.*.tmp"))  # nothing half written
    ledgers = sorted((out / "workspace").glob("party-*/ledger.sqlite"))
    assert len(ledgers) == 3 and all(("release", "released") in _spent(ledger) for ledger in ledgers)  # as said


def test_the_free_space_needed_is_the_largest_model_and_report_of_the_run(tmp_path):
    assert output_space_problem(tmp_path, 3, 1000, 1000) is None
    problem = output_space_problem(tmp_path, 10**6, 10**12, 1000)  # 10^18 bytes: no disk has them
    assert problem is not None
    assert problem.startswith(f"the output directory {tmp_path} has ")
    assert "of 1000000 parties can take up to " in problem and "(releases of at most 1,000,000.0 MB each)" in problem
    assert problem.endswith("then rerun. No party was asked to spend anything")


def test_a_tagged_run_that_could_not_write_says_how_to_resubmit_without_new_epsilon():
    said = write_failed_text("/o/global-model.edprf: No space left on device", "2026-01-run-1")
    assert said.endswith(
        "make room, then resubmit with the same parameters, request-tag '2026-01-run-1' and a new output-dir: each "
        "party resends the release it made, with no new epsilon"
    )


def test_only_write_failures_are_said_as_such():
    assert write_failure_text(OSError(errno.ENOSPC, "No space left on device", "/x/m")) == (
        "/x/m: No space left on device"
    )
    assert write_failure_text(OSError(errno.EDQUOT, "Disk quota exceeded")) == "Disk quota exceeded"
    assert write_failure_text(OSError(errno.ENOENT, "No such file or directory", "/x")) is None
    assert write_failure_text(ValueError("x")) is None


def test_a_full_ledger_is_said_as_a_full_disk_in_the_partys_log(tmp_path):
    """SQLite's own full-database error (a page cap stands in for the disk's end: the same SQLITE_FULL)."""
    with sqlite3.connect(tmp_path / "full.sqlite") as db:
        db.execute("CREATE TABLE t (x BLOB)")
        db.execute("PRAGMA max_page_count = 3")
        with pytest.raises(sqlite3.OperationalError) as full:
            db.execute("INSERT INTO t VALUES (?)", (b"x" * 100_000,))
    assert _full_disk(full.value) == "the disk holding the ledger is full (SQLite: database or disk is full)"
    assert _full_disk(OSError(errno.ENOSPC, "No space left on device", "/p/f")) == (
        "the disk is full (/p/f: No space left on device)"
    )
    assert _full_disk(sqlite3.OperationalError("database is locked")) is None
    assert _full_disk(RuntimeError("x")) is None


@pytest.fixture
def small_disk(tmp_path):
    """A 448 KiB tmpfs (root only): room for the parties' workspace (about 210 kB), not for the worst-case model and
    report of three (about 540 kB: a release of one binary tree of depth 12 takes at most 122,846 bytes)."""
    with small_disk_at(tmp_path / "small", "448k") as mount:
        yield mount


def test_a_run_whose_model_may_not_fit_is_refused_before_any_party_spends(tmp_path, small_disk):
    out = small_disk / "run"
    done = _simulate([*_wall_files(tmp_path), "--output", str(out)])
    assert done.returncode == 1, done.stderr
    last = done.stderr.splitlines()[-1]
    assert last.startswith(
        "federation failed: no model: the output directory cannot hold the run's files; no request was sent; the "
        f"output directory {out} has "
    )
    assert "free; the model and report of 3 parties can take up to " in last
    assert last.endswith(f"No party was asked to spend anything; see {out / 'report.json'}")
    assert (out / "workspace").is_dir()
    ledgers = sorted((out / "workspace").glob("party-*/ledger.sqlite"))
    assert all(_spent(ledger) == [] for ledger in ledgers)  # asked nothing, spent nothing (or not even opened)
    # no round ran (the parties' own room check refuses on this disk too: their empty ledgers alone cannot tell a
    # check made before the requests from one made after them; mutation campaign 4, M26)
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert report["parties"] == [] and not {"readiness_round_s", "train_round_s"} & set(report["timings"])


def test_a_report_that_cannot_be_written_fails_the_run_with_what_the_parties_spent(tmp_path):
    """Review rev-ops F3: the report's write failed on the success path and raised a bare OSError; the ServerApp
    then logged neither the run's summary nor its failure.  Now the run fails with a line that says so, and the
    caller keeps the report (its summary is the run's only record)."""
    from server import RunReport, RunStatus
    from server._coordinator import _save_report

    report = RunReport(run_id="7", parameters={}, schema_fingerprint="sha256:x", model_path="/o/global-model.edprf")
    report.status = RunStatus.COMPLETED
    _save_report(report, tmp_path / "gone")  # no such directory: a real failed write, raised by save_atomic
    assert report.status == RunStatus.FAILED
    assert report.failure.startswith(
        f"the model is saved at /o/global-model.edprf, but the run's report could not be written ({tmp_path / 'gone'}"
    )
    assert "the parties spent their epsilon for this run (training, and any evaluation round)" in report.failure
    failed = RunReport(run_id="8", parameters={}, schema_fingerprint="sha256:x", failure="too few releases")
    _save_report(failed, tmp_path / "gone")
    assert failed.failure.startswith("too few releases; the run's report could not be written either (")


def test_rows_the_spend_record_could_not_take_are_in_the_report_and_its_summary(tmp_path):
    """Review rev-ops F4: six tracebacks, and a run that said "completed" with the record missing 3.3 epsilon."""
    import shutil

    from server import RunReport
    from server._coordinator import _record
    from server._spend_store import SpendStore
    from server._summary import summary_lines

    home = tmp_path / "record"
    home.mkdir()
    store = SpendStore(home / "spend-record.sqlite", {"a": "key-a"})
    shutil.rmtree(home)  # the record's directory is gone under the run: every write fails, as on a full disk
    report = RunReport(run_id="9", parameters={}, schema_fingerprint="sha256:x")
    _record(store, "a", "9/train", 1.0, "9", report)
    _record(store, "a", "9/1/evaluate", 0.1, "9", report)
    assert [(r["party_id"], r["request"], r["epsilon"]) for r in report.spend_record_unwritten] == [
        ("a", "9/train", 1.0),
        ("a", "9/1/evaluate", 0.1),
    ]
    line = next(line for line in summary_lines(report) if "spend record" in line)
    assert line.startswith("  spend record: 2 rows (epsilon 1.1 in all) not written (OperationalError: ")
    assert line.endswith(
        "the parties' ledgers charged them, the record's totals miss them; make room on the record's disk"
    )
