"""The ledger and its anchor under a full disk, a kill, a concurrent opening, a read-only file, a damaged or
dangling anchor, a clock before 1970 and a stopped anchor write (crash review of c6a3361, findings 1, 4-7, 8b, 8c).

Each test drives the real :class:`client.BudgetLedger` (or the party, or ``edprf budget``) and asserts what the
party counts: a lost ledger's anchor is carried once, whatever stops the anchor's rewrite.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import textwrap
from fractions import Fraction
from pathlib import Path

import pytest

import client._ledger as ledger_module
from client import BudgetLedger, LedgerStatus, Party, read_budget, read_ledger_readonly
from client._ledger_anchor import anchor_path, read_anchor
from edprf_fl.cli._main import main

from ._neighbours import file_bytes, make_party
from .test_ledger_anchor import _party_check
from .test_party import _request, party_files  # noqa: F401 (a fixture)

WORKTREE = Path(__file__).resolve().parents[2]


def _carried(ledger: BudgetLedger) -> list[Fraction]:
    return [e.epsilon_exact for e in ledger.entries() if e.request_id.startswith("carried-")]


def _lost_ledger(tmp_path: Path) -> Path:
    """A ledger that spent 2 (cap 5), then lost (its files removed); its anchor stays and records 2."""
    path = tmp_path / "ledger.sqlite"
    BudgetLedger(path, cap=5.0, party_id="h").reserve("run-1", "release", 2.0)
    for f in tmp_path.glob("ledger.sqlite*"):
        f.unlink()
    assert read_anchor(anchor_path(path)).spent == 2
    return path


def _budget_json(path: Path, capsys) -> dict:
    capsys.readouterr()
    main(["budget", str(path), "--cap", "5", "--json"])
    return json.loads(capsys.readouterr().out)


# ---------------------------------------------------------------- finding 1: the carry, once per source ledger


@pytest.mark.privacy  # the carry forgets no spend (stop-56 review E3)
def test_a_full_disk_at_the_carrying_opening_does_not_carry_the_anchor_twice(tmp_path, monkeypatch, capsys):
    """The first opening carries 2 and commits, then cannot rewrite the anchor (ENOSPC): the anchor still names
    the lost ledger.  Reopened, the ledger carries nothing more; ``edprf budget`` says 2 in between and after."""
    path = _lost_ledger(tmp_path)
    real = ledger_module.write_anchor

    def disk_full(*_args, **_kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(ledger_module, "write_anchor", disk_full)
    with pytest.raises(OSError, match="No space left"):
        BudgetLedger(path, cap=5.0, party_id="h")
    monkeypatch.setattr(ledger_module, "write_anchor", real)
    assert read_budget(path).spent == 2  # the anchor still names the lost ledger: 2 carried, nothing beyond
    said = _budget_json(path, capsys)
    assert (said["spent_exact"], said["carried_from_anchor_exact"]) == ("2", "0")
    ledger = BudgetLedger(path, cap=5.0, party_id="h")
    assert ledger.spent() == 2
    assert _carried(ledger) == [2]
    assert read_anchor(anchor_path(path)) == ledger_module.LedgerAnchor(ledger.ledger_id, Fraction(2))
    assert _budget_json(path, capsys)["spent_exact"] == "2"
    ledger.reserve("run-2", "release", 3.0)  # the whole rest of the cap: 2 + 3 = 5


@pytest.mark.privacy  # the carry forgets no spend (stop-56 review E3)
def test_a_kill_between_the_carry_and_the_anchor_write_does_not_carry_twice(tmp_path):
    """A process killed (``os._exit``, no clean-up) after the carry's commit, at its anchor write."""
    path = _lost_ledger(tmp_path)
    child = textwrap.dedent(
        f"""
        import os
        import client._ledger as ledger_module
        ledger_module.write_anchor = lambda *a, **k: os._exit(9)
        ledger_module.BudgetLedger({str(path)!r}, cap=5.0, party_id="h")
        """
    )
    env = {**os.environ, "PYTHONPATH": str(WORKTREE)}
    done = subprocess.run([sys.executable, "-c", child], env=env, capture_output=True, timeout=120, check=False)
    assert done.returncode == 9, done.stderr.decode()[-2000:]
    assert read_anchor(anchor_path(path)).spent == 2  # not rewritten: still the lost ledger's
    assert read_budget(path).spent == 2
    ledger = BudgetLedger(path, cap=5.0, party_id="h")
    assert ledger.spent() == 2
    assert _carried(ledger) == [2]


@pytest.mark.privacy  # the carry forgets no spend (stop-56 review E3)
def test_two_openings_of_a_lost_ledger_at_once_carry_its_anchor_once(tmp_path, monkeypatch):
    """Two processes opening the lost ledger at once, in the interleaving that carried twice: the second (a child
    process) opens completely between the first's carry commit and its anchor write, so it finds the lost
    ledger's anchor still in place.  The ledger counts 2, and so does its anchor."""
    path = _lost_ledger(tmp_path)
    real_anchor = BudgetLedger._anchor
    other: list[subprocess.CompletedProcess] = []
    child = f"from client import BudgetLedger; BudgetLedger({str(path)!r}, 5.0, 'h')"
    env = {**os.environ, "PYTHONPATH": str(WORKTREE)}

    def anchor_after_the_other(self, db):
        if not other:  # the first opening, between its commit and its anchor write: the other one opens
            done = subprocess.run([sys.executable, "-c", child], env=env, capture_output=True, timeout=120, check=False)
            other.append(done)
        real_anchor(self, db)

    monkeypatch.setattr(BudgetLedger, "_anchor", anchor_after_the_other)
    BudgetLedger(path, 5.0, "h")
    monkeypatch.undo()
    assert other[0].returncode == 0, other[0].stderr.decode()[-2000:]
    ledger = BudgetLedger(path, cap=5.0, party_id="h")
    assert ledger.spent() == 2
    assert _carried(ledger) == [2]
    assert read_anchor(anchor_path(path)).spent == 2


@pytest.mark.privacy  # the carry forgets no spend (stop-56 review E3)
def test_a_lost_ledgers_anchor_that_grew_carries_only_the_growth(tmp_path, monkeypatch):
    """What was carried from an id is kept with the exact amount: an anchor of that id that records more later
    (its ledger served once more before this one took its place) adds only the difference."""
    path = _lost_ledger(tmp_path)
    monkeypatch.setattr(ledger_module, "write_anchor", lambda *_a, **_k: None)  # the anchor keeps the lost id
    ledger = BudgetLedger(path, cap=5.0, party_id="h")
    monkeypatch.undo()
    old = read_anchor(anchor_path(path))
    ledger_module.write_anchor(anchor_path(path), ledger_module.LedgerAnchor(old.ledger_id, Fraction(5, 2)))
    ledger = BudgetLedger(path, cap=5.0, party_id="h")
    assert _carried(ledger) == [2, Fraction(1, 2)]
    assert ledger.spent() == Fraction(5, 2)


# ---------------------------------------------------------------- finding 4: an anchor that is a dangling link


def test_an_anchor_that_is_a_link_to_nothing_is_refused_not_replaced(party_files, tmp_path, capsys):  # noqa: F811
    """An anchor kept on a volume that is not mounted: read as "no anchor" it would be replaced by a regular file,
    and an older ledger backup restored then would get its budget back."""
    setup, schema = party_files
    Party(setup).train(_request(schema))  # spent 1 of 1.5
    anchor = anchor_path(setup.ledger_path)
    volume = tmp_path / "anchor-volume"
    volume.mkdir()
    shutil.move(anchor, volume / anchor.name)
    anchor.symlink_to(volume / anchor.name)
    shutil.move(volume, tmp_path / "unmounted")  # the link's target is gone
    with pytest.raises(ValueError, match="symbolic link to") as refused:
        Party(setup)  # the handler answers party_setup for this ValueError
    assert str(anchor) in str(refused.value)
    assert str(volume / anchor.name) in str(refused.value)
    assert anchor.is_symlink()  # not replaced by a regular file
    state = read_budget(setup.ledger_path, 1.5)
    assert state.status is LedgerStatus.ANCHOR_UNREADABLE
    assert state.spent is None
    assert f"{anchor} is a symbolic link to {volume / anchor.name}, which does not exist" in state.anchor_error
    assert "is a symbolic link to" in _party_check(setup, capsys)
    assert main(["budget", str(setup.ledger_path)]) == 1
    assert "is a symbolic link to" in capsys.readouterr().err


# ---------------------------------------------------------------- finding 5: a read-only ledger file

_READ_ONLY_CHILD = """
import json, sys
from pathlib import Path
from flwr.supercore.task_identity import TaskIdentity
from client import BudgetLedger, PartySetup, read_ledger_readonly
from tests.privacy._party_requests import TrainSettings, result_of, send_query, send_train

TaskIdentity.run_id, TaskIdentity.node_id, TaskIdentity.task_id = 1, 2, 3
d = Path(sys.argv[1])
setup = PartySetup(d / "data.csv", d / "schema.toml", d / "policy.toml", d / "ledger.sqlite")
try:
    BudgetLedger(setup.ledger_path, 2.0, "harness")
    opened = "opened"
except ValueError as exc:
    opened = str(exc)
settings = TrainSettings(epsilon=0.5, n_trees=1, max_depth=3, n_bins=4)
query = result_of(send_query(setup, settings, "t-2"))
train = result_of(send_train(setup, settings, "t-2"))
entries = [e.request_id for e in read_ledger_readonly(setup.ledger_path)]
print(json.dumps({"opened": opened, "query": query.get("reason"), "train": train.get("reason"), "entries": entries}))
"""


def _as_a_user_bound_by_file_modes(args: list[str]) -> list[str]:
    """``args`` run so that file modes hold: as root, without the capabilities that override them (``capsh``)."""
    if os.geteuid() != 0:
        return args
    capsh = shutil.which("capsh")
    if capsh is None:
        pytest.skip("root without capsh: file modes cannot be enforced")
    command = " ".join(f"'{a}'" for a in args)
    return [capsh, "--drop=cap_dac_override,cap_dac_read_search,cap_fowner", "--", "-c", command]


@pytest.mark.parametrize("before_the_index", [False, True])
def test_a_read_only_ledger_file_is_refused_at_opening_as_party_setup(tmp_path, before_the_index):
    """A ledger file the party cannot write (its directory writable): refused when the ledger is opened, naming
    the file, so the readiness answer and the train request are ``party_setup`` and nothing is reserved.  Real file
    modes (a child process, as root without CAP_DAC_OVERRIDE), not a simulated failure.  A ledger written before
    its covering index (every ledger deployed before stop 56) fails at the index's creation, earlier than the
    opening's probe, and is named the same way (stop-56 review E2)."""
    setup = make_party(tmp_path, file_bytes(), allow_seeded_randomness=False, lifetime_epsilon_cap=2.0)
    BudgetLedger(setup.ledger_path, 2.0, "harness").reserve("t-1", "release", 0.5)
    if before_the_index:
        db = sqlite3.connect(setup.ledger_path)
        db.execute("DROP INDEX spends_entries")
        db.commit()
        db.close()  # checkpointed: the -wal removed below holds nothing
    for sidecar in tmp_path.glob("ledger.sqlite-*"):  # the party stopped: no -wal, -shm
        sidecar.unlink()
    setup.ledger_path.chmod(0o400)
    env = {**os.environ, "PYTHONPATH": str(WORKTREE)}
    args = _as_a_user_bound_by_file_modes([sys.executable, "-c", _READ_ONLY_CHILD, str(tmp_path)])
    done = subprocess.run(args, env=env, capture_output=True, timeout=300, check=False, cwd=WORKTREE)
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    said = json.loads(done.stdout.decode().strip().splitlines()[-1])
    assert f"ledger {setup.ledger_path}: the file cannot be written" in said["opened"]
    assert said["query"] == said["train"] == "party_setup"
    assert said["entries"] == ["t-1"]
    assert [e.request_id for e in read_ledger_readonly(setup.ledger_path)] == ["t-1"]


# ---------------------------------------------------------------- finding 6: a damaged anchor beside the ledger


def test_a_damaged_anchor_says_to_move_it_aside_when_the_ledger_is_current(tmp_path, capsys):
    """A 0-byte anchor beside an intact ledger: anchors are never backed up, so "restore it" cannot be followed.
    The party, ``edprf budget`` and ``party check`` (one text) say to move it aside when the ledger is the
    current one, and what that gives up; the party does not rebuild it by itself; done, the next opening writes
    an anchor from the ledger and carries nothing."""
    path = tmp_path / "ledger.sqlite"
    BudgetLedger(path, cap=5.0).reserve("run-1", "release", 1.5)
    anchor = anchor_path(path)
    anchor.write_bytes(b"")
    with pytest.raises(ValueError) as refused:
        BudgetLedger(path, cap=5.0)
    said = str(refused.value)
    assert "move this file aside (never delete the ledger)" in said
    assert "the party writes a new anchor from the ledger at its next request" in said
    assert "nothing protects against an older copy of the ledger restored in its place" in said
    assert "If the ledger is lost, restored or replaced, keep the anchor" in said
    assert "restore it" not in said
    assert anchor.read_bytes() == b""  # refused, not rebuilt
    capsys.readouterr()
    assert main(["budget", str(path)]) == 1
    assert "move this file aside" in capsys.readouterr().err
    assert read_budget(path).status is LedgerStatus.ANCHOR_UNREADABLE
    anchor.rename(tmp_path / "ledger-anchor.json.damaged")  # the advice, followed
    ledger = BudgetLedger(path, cap=5.0)
    assert not _carried(ledger)
    assert read_anchor(anchor) == ledger_module.LedgerAnchor(ledger.ledger_id, Fraction(3, 2))


# ---------------------------------------------------------------- finding 7: a clock before 1970


def test_a_spend_stamped_before_1970_leaves_the_ledger_readable(tmp_path, monkeypatch, capsys):
    """A wall clock set before 1970 at a reservation: the party counts the entry, and the read-only readers
    (``read_budget``, ``edprf budget``) read the ledger and show the stamp as it is; a stamp that is not a number
    (a hand-edited file) is shown as unreadable, never a reason to refuse the whole ledger."""
    path = tmp_path / "ledger.sqlite"
    ledger = BudgetLedger(path, cap=5.0)
    monkeypatch.setattr(ledger_module.time, "time", lambda: -86_400.0)  # 1969-12-31
    ledger.reserve("early", "release", 1.0)
    monkeypatch.undo()
    ledger.reserve("later", "release", 0.5)
    assert next(e.created_at for e in read_ledger_readonly(path)) == -86_400.0
    state = read_budget(path, 5.0)
    assert (state.status, state.spent) == (LedgerStatus.READ, Fraction(3, 2))
    capsys.readouterr()
    assert main(["budget", str(path)]) == 0
    assert "1969-12-31 00:00:00" in capsys.readouterr().out
    with sqlite3.connect(path) as db:
        db.execute("UPDATE spends SET created_at = 'yesterday', updated_at = 1e300 WHERE request_id = 'later'")
    db.close()
    assert read_budget(path, 5.0).spent == Fraction(3, 2)
    assert main(["budget", str(path)]) == 0
    later = next(line for line in capsys.readouterr().out.splitlines() if " later " in line)
    assert later.startswith("unreadable")
    assert main(["budget", str(path), "--json"]) == 0
    entries = json.loads(capsys.readouterr().out)["entries"]
    assert [(e["created_at"], e["updated_at"]) for e in entries][1] == (None, 1e300)


# ---------------------------------------------------------------- finding 8b: an anchor write killed midway


def test_the_opening_removes_the_temporary_files_a_killed_anchor_write_left(tmp_path):
    """kill -9 inside ``save_atomic`` leaves ``.ledger-anchor.json.<8 characters>.tmp``: the next opening removes
    those (regular files of this user, the anchor's own pattern), and nothing else."""
    path = tmp_path / "ledger.sqlite"
    BudgetLedger(path, cap=5.0).reserve("run-1", "release", 1.0)
    left = [tmp_path / ".ledger-anchor.json.ab_cd123.tmp", tmp_path / ".ledger-anchor.json.zz9y8x7w.tmp"]
    kept = [
        tmp_path / ".ledger-anchor.json.abcd1234.tmpx",  # another suffix
        tmp_path / ".ledger-anchor.json.abc.tmp",  # not mkstemp's 8 characters
        tmp_path / ".other-anchor.json.abcd1234.tmp",  # another file's temporary file
        tmp_path / "ledger-anchor.json.abcd1234.tmp",  # no leading dot
    ]
    for f in left + kept:
        f.write_text("{}")
    (tmp_path / ".ledger-anchor.json.dir12345.tmp").mkdir()  # not a regular file
    link = tmp_path / ".ledger-anchor.json.link1234.tmp"
    link.symlink_to(kept[0])
    ledger = BudgetLedger(path, cap=5.0)
    assert not any(f.exists() for f in left)
    assert all(f.exists() for f in kept)
    assert (tmp_path / ".ledger-anchor.json.dir12345.tmp").is_dir()
    assert link.is_symlink()
    assert ledger.spent() == 1
    assert read_anchor(anchor_path(path)).spent == 1


# ---------------------------------------------------------------- finding 8c: the log line after the release


def test_a_ledger_unreadable_after_the_release_is_stored_still_replies_with_it(party_files, monkeypatch):  # noqa: F811
    """``remaining()`` for the log line after ``complete()`` failing (the ledger locked for 30 s) costs the line its
    figure, not the reply: the stored release is returned (an exception here would be an internal_error reply)."""
    setup, schema = party_files
    party = Party(setup)

    def locked(self):
        raise sqlite3.OperationalError("database is locked")

    monkeypatch.setattr(BudgetLedger, "remaining", locked)
    payload = party.train(_request(schema))
    monkeypatch.undo()
    entry, stored = party.ledger.find("run1/1/train")
    assert entry.state == "released"
    assert stored == payload


# ---------------------------------------------------------------- stop-56 review: E1 and E4


def test_a_malformed_carried_from_record_or_anchor_figure_is_not_a_crash(tmp_path, monkeypatch, capsys):
    """E1: ``1/0`` matched the exact-figure pattern and raised ZeroDivisionError in ``edprf budget``, ``party
    check`` and the opening.  A zero denominator is no figure: an anchor with it is unreadable, and a
    ``carried-from`` record with it counts as nothing carried (the carry is made again: the side that counts)."""
    path = _lost_ledger(tmp_path)
    real = ledger_module.write_anchor

    def disk_full(*_args, **_kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(ledger_module, "write_anchor", disk_full)  # the anchor keeps naming the lost ledger
    with pytest.raises(OSError, match="No space left"):
        BudgetLedger(path, cap=5.0, party_id="h")  # carries the lost ledger's 2, records carried-from
    monkeypatch.setattr(ledger_module, "write_anchor", real)
    db = sqlite3.connect(path)
    db.execute("UPDATE ledger_meta SET value = '1/0' WHERE key LIKE 'carried-from/%'")
    db.commit()
    db.close()
    state = read_budget(path, 5.0)
    assert state.status is LedgerStatus.BEHIND_ANCHOR and state.spent == 4  # 2 carried, 2 again: never less
    assert main(["budget", str(path), "--cap", "5"]) == 0
    assert "ZeroDivisionError" not in capsys.readouterr().err
    assert BudgetLedger(path, cap=5.0, party_id="h").spent() == 4
    anchor = anchor_path(path)
    anchor.write_text(json.dumps({**json.loads(anchor.read_text()), "spent": "1/0"}))
    with pytest.raises(ValueError, match="anchor"):
        read_anchor(anchor)


def _restored_under_a_running_party(tmp_path: Path) -> tuple[Path, BudgetLedger]:
    """A ledger that spent 1, was backed up, spent 2 more (anchor 3), then was restored from that backup while the
    party's process (the returned ledger, opened before) still ran: the file holds 1, the spend is 3."""
    path = tmp_path / "ledger.sqlite"
    running = BudgetLedger(path, cap=10.0, party_id="h")
    running.reserve("r-1", "release", 1.0)
    main(["budget", str(path), "--backup-to", str(tmp_path / "backup.sqlite")])
    running.reserve("r-2", "release", 2.0)
    for f in tmp_path.glob("ledger.sqlite*"):
        f.unlink()
    shutil.copy(tmp_path / "backup.sqlite", path)
    return path, running


@pytest.mark.privacy  # the carry forgets no spend (stop-56 review E3)
def test_a_backup_restored_under_a_running_party_loses_no_spend(tmp_path):
    """E4: a ledger restored from a backup of itself while its party ran (deploy/README.md says to stop the
    SuperNode first) made the next reservation write the anchor from the backup's smaller total, and the spend
    after the backup was forgotten for good.  A reservation now counts what the anchor records first."""
    path, running = _restored_under_a_running_party(tmp_path)
    running.reserve("r-3", "release", 0.5)
    assert running.spent() == Fraction(7, 2)  # 1 + 2 + 0.5: nothing forgotten
    assert read_anchor(anchor_path(path)).spent == Fraction(7, 2)
    assert BudgetLedger(path, cap=10.0, party_id="h").spent() == Fraction(7, 2)


@pytest.mark.privacy  # the carry forgets no spend (stop-56 re-review S3-5)
def test_an_anchor_write_never_lowers_its_own_ledgers_total(tmp_path):
    """A backup restored under a running party, then the coordinator's spend record carried into it (its own
    anchor write, with no reservation before it): the anchor was rewritten from the restored ledger's smaller
    total, and the spend after the backup was forgotten at the next opening (2 counted against a true 3)."""
    path, running = _restored_under_a_running_party(tmp_path)
    running.carry_recorded(Fraction(2), "the coordinator's spend record")  # it knew of 2 of the 3
    assert read_anchor(anchor_path(path)).spent == 3
    assert BudgetLedger(path, cap=10.0, party_id="h").spent() == 3
