"""``edprf simulate --output`` and ``edprf sweep --output`` hold their directory (review rev-auto A2).

Two ``simulate`` runs on one --output both exited 0: the second spent from the first's workspace ledgers, or read
its half-written test file.  The directory is now locked (:func:`edprf_fl.hold_directory`, the lock ``edprf
consortium`` takes on --dir) once it exists and before anything in it is looked at or removed: the second run is
refused at once, naming the first's pid.
"""

from __future__ import annotations

import os
from contextlib import ExitStack

import pytest

import edprf_fl.cli._simulate as simulate_cmd
from edprf_fl import hold_directory
from edprf_fl.cli import main
from edprf_fl.simulation import _sweep, sweep_lock

SIMULATE = ("simulate", "--parties", "2", "--no-baselines", "--engine", "in-process", "--max-depth", "2")
TINY = ("--epsilons", "1", "--seeds", "1", "--parties", "2", "--max-depth", "2", "--engine", "in-process")


def test_a_simulate_on_a_directory_another_simulate_holds_is_refused_naming_it(tmp_path, capsys, monkeypatch):
    out = tmp_path / "sim"
    out.mkdir()
    monkeypatch.setattr(simulate_cmd, "_simulate", lambda *a: pytest.fail("the second simulation ran"))
    with hold_directory(out, simulate_cmd.SIMULATE_LOCK, str, f"edprf simulate --output {out}", remove=True):
        assert main([*SIMULATE, "--output", str(out)]) == 1
        assert main([*SIMULATE, "--output", str(out), "--overwrite"]) == 1
    err = capsys.readouterr().err
    held = f"--output {out} is in use by another edprf command (pid {os.getpid()}: edprf simulate --output {out})"
    assert err.count(held) == 2 and "choose another --output" in err
    assert list(out.iterdir()) == []  # nothing read, written or removed; the lock file went with its holder


def test_a_simulate_holds_its_directory_while_it_runs_and_leaves_no_lock_file(tmp_path, monkeypatch):
    out, seen = tmp_path / "sim", []

    def second_run(settings, out_dir, args):
        refused = pytest.raises(ValueError, match=rf"in use by another edprf command \(pid {os.getpid()}: ")
        with (
            refused,
            hold_directory(out_dir, simulate_cmd.SIMULATE_LOCK, lambda who: f"in use by another edprf command ({who})"),
        ):
            pass
        seen.append(sorted(p.name for p in out_dir.iterdir()))
        (out_dir / "report.json").write_text("{}")
        return 0

    monkeypatch.setattr(simulate_cmd, "_simulate", second_run)
    assert main([*SIMULATE, "--output", str(out)]) == 0
    assert seen == [[simulate_cmd.SIMULATE_LOCK]] and [p.name for p in out.iterdir()] == ["report.json"]


def test_a_simulate_refused_in_a_directory_it_created_removes_it(tmp_path, capsys, monkeypatch):
    """The lock is taken in the directory output_dir creates: a run refused later (a settings error in the data)
    still leaves no empty directory, nor a lock file."""
    out = tmp_path / "new" / "sim"

    def fails(*args):
        raise ValueError("no row conforms")

    monkeypatch.setattr(simulate_cmd, "_simulate", fails)
    assert main([*SIMULATE, "--output", str(out)]) == 1
    assert "no row conforms" in capsys.readouterr().err and not out.exists()


def test_a_sweep_overwrite_racing_another_sweep_removes_nothing_of_it(tmp_path, capsys, monkeypatch):
    """The other sweep creates and fills --output between this one's first look (no directory yet) and its
    output_dir: --overwrite removed the other's runs before this one took the lock (and was then refused)."""
    import protocol

    out = tmp_path / "sweep"
    other = ExitStack()
    real = protocol.make_owner_only_dirs

    def the_other_sweep_starts(path):
        made = real(path)
        if path == out and not other._exit_callbacks:
            (out / "run-0000" / "workspace").mkdir(parents=True)  # its spent ledgers
            (out / "sweep.csv").write_text("its rows\n")
            other.enter_context(sweep_lock(out, "edprf sweep (the other)"))
        return made

    monkeypatch.setattr(protocol, "make_owner_only_dirs", the_other_sweep_starts)
    monkeypatch.setattr(_sweep, "run_simulation", lambda *a, **k: pytest.fail("a run started"))
    with other:
        assert main(["sweep", *TINY, "--output", str(out), "--overwrite"]) == 1
        assert (
            f"{out} is in use by another edprf (pid {os.getpid()}: edprf sweep (the other))" in capsys.readouterr().err
        )
        assert (out / "run-0000" / "workspace").is_dir() and (out / "sweep.csv").read_text() == "its rows\n"


def test_the_consortium_lock_is_the_shared_one(tmp_path):
    """`edprf consortium --dir` refuses a second invocation as before, through the same lock."""
    from edprf_fl.cli._consortium import _LOCK, _exclusive

    refused = pytest.raises(ValueError, match=rf"is in use by another edprf consortium \(pid {os.getpid()}\); wait")
    with _exclusive(tmp_path), refused, _exclusive(tmp_path):
        pass
    assert (tmp_path / _LOCK).read_text() == f"{os.getpid()}\n"


def test_a_directory_removed_before_the_lock_is_made_again_when_asked(tmp_path):
    """Final read of stop 67, S3: a simulate that ended removed its empty directory between a second one's making
    it and taking the lock there; the second failed with "No such file".  Given ``make``, the lock makes it again."""
    from protocol import make_owner_only_dirs

    gone = tmp_path / "gone"
    with pytest.raises(FileNotFoundError), hold_directory(gone, simulate_cmd.SIMULATE_LOCK, str):
        pass
    made = []

    def make(directory):
        made.append(directory)
        make_owner_only_dirs(directory)

    with hold_directory(gone, simulate_cmd.SIMULATE_LOCK, str, remove=True, make=make) as lock:
        assert lock.exists() and made == [gone]
        assert gone.stat().st_mode & 0o777 == 0o700
    assert list(gone.iterdir()) == []


def test_a_simulate_makes_its_directory_again_if_it_goes_before_the_lock(tmp_path, monkeypatch):
    """The race itself, made certain: the directory goes right after ``output_dir`` made it."""
    import protocol

    out = tmp_path / "sim"
    real = protocol.make_owner_only_dirs
    calls = []

    def make_then_lose(directory, *args, **kwargs):
        real(directory, *args, **kwargs)
        calls.append(directory)
        if len(calls) == 1:
            os.rmdir(directory)  # the other command's cleanup, between the making and the lock

    monkeypatch.setattr(protocol, "make_owner_only_dirs", make_then_lose)
    monkeypatch.setattr(simulate_cmd, "_simulate", lambda settings, out_dir, args: (out_dir / "x").write_text("") or 0)
    assert main([*SIMULATE, "--output", str(out)]) == 0
    assert len(calls) == 2 and [p.name for p in out.iterdir()] == ["x"]
