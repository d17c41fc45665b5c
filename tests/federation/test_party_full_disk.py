"""A party whose ledger's disk is full is told so, not that its ledger is damaged (failure-injection review rev-ops
F1, F8).

On a full disk a new process cannot size SQLite's shared-memory file: SQLite says ``disk I/O error``, which read
alone made ``edprf budget`` and ``edprf party check`` advise restoring the ledger from its backup.  A real full disk:
a small tmpfs, mounted when the tests run as root (skipped otherwise), filled by a file.  The reply to the
coordinator keeps its constant text either way (``tests/privacy``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from client import BudgetLedger, backup_ledger, parse_node_config, preflight_configs
from client._budget_state import read_budget
from client._party import Party

from ._neighbours import make_party
from ._small_disk import small_disk_at

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="tmpfs as on Linux")


@pytest.fixture
def small_disk(tmp_path):
    """A 512 kB tmpfs (root only): less free space than a request may need."""
    with small_disk_at(tmp_path / "small", "512k") as mount:
        yield mount


def _fill(directory: Path) -> None:
    with open(directory / "filler", "wb", buffering=0) as filler:
        try:
            while True:
                filler.write(b"\0" * 4096)
        except OSError:
            pass


def test_a_ledger_on_a_full_disk_is_said_as_a_full_disk_never_as_one_to_restore(tmp_path, small_disk):
    setup = make_party(tmp_path / "party", b"x\n")  # the rows are not read here
    ledger_path = small_disk / "ledger.sqlite"
    setup = type(setup)(setup.data_path, setup.schema_path, setup.policy_path, ledger_path)
    ledger = BudgetLedger(ledger_path, 100.0, "harness")
    ledger.reserve("run0/train", "release", 0.5)
    ledger.complete("run0/train", b"released")
    del ledger
    _fill(small_disk)

    with pytest.raises(ValueError) as opening:  # a new process's Party, as Flower starts one per message
        Party(setup)
    said = str(opening.value)
    assert said.startswith(f"ledger {ledger_path} cannot be opened for writing: ")
    assert f"the disk holding {small_disk} has " in said and "bytes free" in said
    assert "free space on that disk, then run `edprf budget` again" in said  # review rev-ops2 N9 (b)
    assert "restore it from a backup only if it still fails then" in said

    state = read_budget(ledger_path, 100.0, party_id="harness")
    assert state.disk_full and "bytes free" in state.ledger_error
    with pytest.raises(
        ValueError, match="bytes free .*restore it from a backup only if it still fails then"
    ):  # rev-ops2 N7
        backup_ledger(ledger_path, tmp_path / "backup.sqlite")

    node_config = (
        f"data-path='{setup.data_path}' schema-path='{setup.schema_path}' policy-path='{setup.policy_path}' "
        f"ledger-path='{ledger_path}'"
    )
    report = preflight_configs(parse_node_config(node_config), {}, check_rows=False)
    ledger_lines = [f.line() for f in report.problems if str(ledger_path) in f.line()]
    assert ledger_lines and all("restore" not in line or "only if it still fails" in line for line in ledger_lines)

    (small_disk / "filler").unlink()  # room again: the same ledger reads, intact
    state = read_budget(ledger_path, 100.0, party_id="harness")
    assert not state.disk_full and state.in_ledger == 0.5


def test_the_party_check_flags_a_nearly_full_ledger_disk_while_the_ledger_still_reads(tmp_path, small_disk):
    setup = make_party(tmp_path / "party", b"x\n")
    ledger_path = small_disk / "ledger.sqlite"
    ledger = BudgetLedger(ledger_path, 100.0, "harness")
    ledger.reserve("run0/train", "release", 0.5)
    del ledger
    _fill(small_disk)
    assert read_budget(ledger_path, 100.0, party_id="harness").in_ledger == 0.5  # it reads: only the disk is full
    node_config = (
        f"data-path='{setup.data_path}' schema-path='{setup.schema_path}' policy-path='{setup.policy_path}' "
        f"ledger-path='{ledger_path}'"
    )
    report = preflight_configs(parse_node_config(node_config), {}, check_rows=False)
    assert any(
        f"the disk holding {small_disk} has " in f.line() and "free space on that disk" in f.line()
        for f in report.problems
    ), report.lines()


def test_a_party_on_a_full_ledger_disk_refuses_before_it_reserves(tmp_path, small_disk, caplog):
    """Review rev-ops F2: the reservation committed, then the anchor's write failed: epsilon spent, nothing released
    (1.0 of a 2.0 cap in two requests).  Now the request is refused before the reservation, with a constant text."""
    import logging

    from client import Refusal
    from client._party import _LEDGER_DISK_TEXT
    from edprf_core import load_schema
    from protocol import RefusalReason
    from protocol.messages import TrainRequest

    from ._neighbours import file_bytes

    made = make_party(tmp_path / "party", file_bytes())
    setup = type(made)(made.data_path, made.schema_path, made.policy_path, small_disk / "ledger.sqlite")
    schema = load_schema(setup.schema_path)
    request = TrainRequest(
        request_id="run1/train",
        run_id="run1",
        schema_fingerprint=schema.fingerprint,
        epsilon=1.0,
        max_depth=3,
        n_trees=1,
        split_mode="binary",
        n_bins=8,
        relation="add-remove",
        seed=-1,
    )
    party = Party(setup)  # a 512 kB disk: less than a request may need, whatever is on it
    for ask in (party.ready, party.train):  # the readiness answer says it, before the other parties spend (rev-ops2 N2)
        with caplog.at_level(logging.ERROR, logger="edprf"), pytest.raises(Refusal) as refused:
            ask(request)
        assert (refused.value.reason, str(refused.value)) == (RefusalReason.PARTY_SETUP, _LEDGER_DISK_TEXT)
    assert f"nothing reserved: the disk holding {small_disk} has " in caplog.text
    assert "less than this request may write" in caplog.text
    assert "SQLite" not in caplog.text  # nothing failed yet: not the read-failure text (review rev-ops2 N9 (a))
    assert BudgetLedger(setup.ledger_path, 100.0).entries() == []


def test_the_room_a_request_needs_grows_with_its_largest_release(tmp_path):
    """Review rev-ops2 N1: a fixed 1 MiB floor let a 2.7 MB release reserve, then fail to be stored (epsilon spent,
    nothing released).  The need is the floor plus three times the request's largest release (public parameters)."""
    from client._disk_space import LOW_DISK_BYTES, ledger_room_problem

    ledger = tmp_path / "ledger.sqlite"
    assert ledger_room_problem(ledger, 1_000_000) is None  # this machine's disk has room for a 1 MB release
    problem = ledger_room_problem(ledger, 10**15)  # no disk has 3 PB free
    assert problem is not None and f"({LOW_DISK_BYTES + 3 * 10**15:,} bytes: its largest release" in problem
    assert not list(tmp_path.iterdir())  # the directory probe is made and removed


def test_a_ledger_on_a_read_only_mount_is_told_to_be_remounted_not_chmodded(tmp_path):
    """Review rev-ops F7: the check said "fix its owner or mode", which cannot fix a read-only mount."""
    if os.geteuid() != 0:
        pytest.skip("a bind mount needs root")
    made = make_party(tmp_path / "party", b"x\n")
    source, mount = tmp_path / "ledger-dir", tmp_path / "ro"
    source.mkdir()
    mount.mkdir()
    BudgetLedger(source / "ledger.sqlite", 100.0, "harness").reserve("run0/train", "release", 0.5)
    bound = subprocess.run(["mount", "--bind", str(source), str(mount)], check=False, capture_output=True)
    if bound.returncode != 0:
        pytest.skip(f"cannot bind-mount here: {bound.stderr.decode(errors='replace').strip()}")
    try:
        subprocess.run(["mount", "-o", "remount,bind,ro", str(mount)], check=True, capture_output=True)
        node_config = (
            f"data-path='{made.data_path}' schema-path='{made.schema_path}' policy-path='{made.policy_path}' "
            f"ledger-path='{mount / 'ledger.sqlite'}'"
        )
        report = preflight_configs(parse_node_config(node_config), {}, check_rows=False)
        lines = [f.line() for f in report.problems]
        said = f"the file system holding {mount / 'ledger.sqlite'} is mounted read-only: remount it read-write"
        assert any(said in x for x in lines), lines
        assert not any("fix its owner or mode" in x for x in lines), lines
        setup = type(made)(made.data_path, made.schema_path, made.policy_path, mount / "ledger.sqlite")
        with pytest.raises(ValueError, match="is mounted read-only: remount it read-write"):
            Party(setup)
    finally:
        subprocess.run(["umount", str(mount)], check=False)


def test_a_ledger_file_mounted_read_only_alone_is_told_to_be_remounted(tmp_path):
    """Review rev-ops2 N6: the ledger file bind-mounted read-only in a writable directory."""
    from client._disk_space import read_only_text

    if os.geteuid() != 0:
        pytest.skip("a bind mount needs root")
    ledger = tmp_path / "ledger.sqlite"
    BudgetLedger(ledger, 100.0, "harness").reserve("run0/train", "release", 0.5)
    bound = subprocess.run(["mount", "--bind", str(ledger), str(ledger)], check=False, capture_output=True)
    if bound.returncode != 0:
        pytest.skip(f"cannot bind-mount here: {bound.stderr.decode(errors='replace').strip()}")
    try:
        subprocess.run(["mount", "-o", "remount,bind,ro", str(ledger)], check=True, capture_output=True)
        assert read_only_text(ledger) == (
            f"the file system holding {ledger} is mounted read-only: remount it read-write"
        )
    finally:
        subprocess.run(["umount", str(ledger)], check=False)
    assert read_only_text(ledger) is None


def test_the_directory_check_leaves_at_most_one_file_where_files_cannot_be_removed(tmp_path):
    """Review rev-ops2 N4: in an append-only directory (``chattr +a``: files can be made, not removed) each check
    left a randomly named probe behind, one per refused request.  One fixed name: the second check reuses the first's
    file, says it was made but not removed, and the directory holds that one file."""
    from client._disk_space import ledger_room_problem

    directory = tmp_path / "ledger-dir"
    directory.mkdir()
    chattr = shutil.which("chattr")
    if os.geteuid() != 0 or chattr is None or subprocess.run([chattr, "+a", str(directory)], check=False).returncode:
        pytest.skip("chattr +a needs root and a file system that supports it")
    try:
        problems = [ledger_room_problem(directory / "ledger.sqlite") for _ in range(3)]
        left = sorted(p.name for p in directory.iterdir())
    finally:
        subprocess.run([chattr, "-a", str(directory)], check=True)
    assert left == [".edprf-write-check.tmp"]
    for problem in problems:
        assert problem is not None and "cannot be removed (Operation not permitted" in problem, problem
        assert "is left there, and reused by the next check" in problem


def test_the_directory_check_reuses_a_probe_left_by_a_killed_process(tmp_path):
    """A party process killed between making and removing the probe leaves it: the next check opens the same file
    (not exclusively), removes it, and passes."""
    from client._disk_space import ledger_room_problem

    (tmp_path / ".edprf-write-check.tmp").write_bytes(b"")
    assert ledger_room_problem(tmp_path / "ledger.sqlite") is None
    assert not list(tmp_path.iterdir())


def test_the_directory_check_passes_when_another_request_removed_the_probe_first(tmp_path, monkeypatch):
    """Training and evaluation requests run in separate processes and may check at once: the other one removing the
    shared probe first is not a directory that cannot remove files."""
    from client import _disk_space

    real_unlink = os.unlink

    def removed_by_the_other_process(path, *args, **kwargs):
        real_unlink(path, *args, **kwargs)
        raise FileNotFoundError(2, "No such file or directory")

    monkeypatch.setattr(_disk_space.os, "unlink", removed_by_the_other_process)
    assert _disk_space.ledger_room_problem(tmp_path / "ledger.sqlite") is None


@pytest.mark.parametrize("thing", ["fifo", "directory"])
def test_something_the_party_cannot_use_at_the_probes_name_is_gone_around(tmp_path, thing):
    """Review rev-s64 F3: the fixed probe name, taken by something the party cannot open as its file (a FIFO would
    hang a blocking open; a directory), falls back to a name of the check's own instead of refusing every request."""
    from client._disk_space import ledger_room_problem

    taken = tmp_path / ".edprf-write-check.tmp"
    os.mkfifo(taken) if thing == "fifo" else taken.mkdir()
    assert ledger_room_problem(tmp_path / "ledger.sqlite") is None
    assert sorted(p.name for p in tmp_path.iterdir()) == [".edprf-write-check.tmp"]  # the check's own file removed


def test_a_probe_left_by_another_account_does_not_refuse_the_party(tmp_path):
    """Review rev-s64 F3: a probe left by root (``sudo edprf party check`` killed between its steps), 0600, made the
    party's user fail to open the fixed name, and the check blamed the directory, which the party can write."""
    if os.geteuid() != 0:
        pytest.skip("needs root to leave a file of another account")
    import tempfile

    directory = Path(tempfile.mkdtemp(prefix="edprf-probe-"))
    try:
        directory.chmod(0o777)
        (directory / ".edprf-write-check.tmp").write_bytes(b"")  # root's, 0600 under the umask below
        (directory / ".edprf-write-check.tmp").chmod(0o600)
        from client._disk_space import ledger_room_problem

        read, write = os.pipe()
        child = os.fork()
        if child == 0:  # the check as another account (nobody), with the code already imported
            try:
                os.setgid(65534)
                os.setuid(65534)
                os.write(write, repr(ledger_room_problem(directory / "ledger.sqlite")).encode())
            finally:
                os._exit(0)
        os.close(write)
        with os.fdopen(read, "rb") as answer:
            said = answer.read().decode()
        os.waitpid(child, 0)
        assert said == "None"
        assert sorted(p.name for p in directory.iterdir()) == [".edprf-write-check.tmp"]
    finally:
        shutil.rmtree(directory)
