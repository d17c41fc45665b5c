"""A ledger restored from a backup, replaced or lost does not hand the party its budget again.

Day-2 walkthrough: after ``cp ledger.sqlite* backup/``, one more training, and ``cp backup/ledger.sqlite* .``,
``edprf party check`` said "spent 1, remaining 1 of the lifetime cap 2" and the party released again: epsilon 3
against a cap of 2.  Moving the ledger away gave a fresh one with the whole cap.  The anchor beside the ledger
(``client._ledger_anchor``) records what was spent; a ledger that holds less is made to count the difference.
"""

from __future__ import annotations

import shutil
from dataclasses import replace
from fractions import Fraction
from pathlib import Path

import pytest

from client import BudgetExhausted, BudgetLedger, Party, Refusal
from client._held_out_record import HOLDOUT_SALT_KEY, HOLDOUT_SPLIT_KEY, held_out_fraction, held_out_split
from client._ledger_anchor import anchor_path, read_anchor
from edprf_fl.cli._main import main
from protocol import (
    ReleasePolicy,
    decode_release,
    generate_signing_key,
    key_id,
    load_private_key,
    save_private_key,
    spend_record_text,
)
from server import CoordinatorConfig
from server._spend_store import SpendStore

from .test_party import _request, party_files  # noqa: F401 (a fixture)


def _copy_ledger(source: Path, target: Path) -> None:
    """``cp source/ledger.sqlite* target/`` after removing the target's ledger files (what an operator does)."""
    target.mkdir(exist_ok=True)
    for old in target.glob("ledger.sqlite*"):
        old.unlink()
    for f in source.glob("ledger.sqlite*"):
        shutil.copy2(f, target / f.name)


def _carried(ledger: BudgetLedger) -> list[Fraction]:
    return [e.epsilon_exact for e in ledger.entries() if e.request_id.startswith("carried-")]


def _party_check(setup, capsys) -> str:
    """What ``edprf party check`` prints for the party ``setup``."""
    capsys.readouterr()
    node_config = (
        f"data-path='{setup.data_path}' schema-path='{setup.schema_path}' policy-path='{setup.policy_path}' "
        f"ledger-path='{setup.ledger_path}'"
    )
    main(["party", "check", "--node-config", node_config])
    said = capsys.readouterr()
    return said.out + said.err


def test_a_restored_backup_counts_what_was_spent_after_it(tmp_path):
    d = tmp_path / "party"
    BudgetLedger(d / "ledger.sqlite", cap=2.0).reserve("run-1", "release", 1.0)
    _copy_ledger(d, tmp_path / "backup")  # the backup: 1 spent
    BudgetLedger(d / "ledger.sqlite", cap=2.0).reserve("run-2", "release", 1.0)
    _copy_ledger(tmp_path / "backup", d)  # restored: the file holds 1 spent, the anchor records 2
    assert not (tmp_path / "backup" / anchor_path(d / "ledger.sqlite").name).exists()  # not among ledger.sqlite*
    ledger = BudgetLedger(d / "ledger.sqlite", cap=2.0)
    assert ledger.spent() == 2 and _carried(ledger) == [Fraction(1)]
    with pytest.raises(BudgetExhausted):
        ledger.reserve("run-3", "release", 0.5)
    again = BudgetLedger(d / "ledger.sqlite", cap=2.0)  # carried once, not at every opening
    assert again.spent() == 2 and len(_carried(again)) == 1


def test_a_lost_ledger_starts_with_what_its_anchor_records(tmp_path):
    path = tmp_path / "ledger.sqlite"
    BudgetLedger(path, cap=5.0).reserve("run-1", "release", 0.7)
    for f in tmp_path.glob("ledger.sqlite*"):
        f.unlink()  # moved away, or a volume not mounted
    assert BudgetLedger(path, cap=5.0).spent() == Fraction(7, 10)


def test_another_ledger_in_its_place_adds_all_its_anchor_records(tmp_path):
    BudgetLedger(tmp_path / "a" / "ledger.sqlite", cap=5.0).reserve("a-1", "release", 2.0)
    BudgetLedger(tmp_path / "b" / "ledger.sqlite", cap=5.0).reserve("b-1", "release", 0.5)
    _copy_ledger(tmp_path / "b", tmp_path / "a")  # b's ledger put in a's place: a's 2 were never in it
    assert BudgetLedger(tmp_path / "a" / "ledger.sqlite", cap=5.0).spent() == Fraction(5, 2)


def test_in_normal_use_nothing_is_carried_and_the_anchor_follows_the_ledger(tmp_path):
    path = tmp_path / "ledger.sqlite"
    for i in range(5):
        ledger = BudgetLedger(path, cap=10.0)
        ledger.reserve(f"r{i}", "release", 0.3)
        ledger.complete(f"r{i}")
        anchor = read_anchor(anchor_path(path))
        assert anchor is not None and anchor.spent == ledger.spent() and anchor.ledger_id == ledger.ledger_id
    assert not _carried(BudgetLedger(path, cap=10.0))
    assert anchor_path(path).stat().st_mode & 0o077 == 0


def test_two_processes_reserving_at_once_leave_the_anchor_at_the_larger_total(tmp_path, monkeypatch):
    """Review item 6 of stop 41: a reservation's anchor was written after its commit from the total it had
    computed, so a second process reserving in between could see its larger anchor overwritten (the anchor
    behind the ledger: a restore would then forget that spend).  Here the first process's anchor write lets a
    second ledger object reserve in another thread first (for at most a second): the anchor ends at the
    ledger's total either way."""
    import threading

    import client._ledger as ledger_module

    path = tmp_path / "ledger.sqlite"
    first, second = BudgetLedger(path, cap=10.0), BudgetLedger(path, cap=10.0)
    real_write = ledger_module.write_anchor
    other = threading.Thread(target=lambda: second.reserve("b", "release", 0.5))
    calls = []

    def write_after_the_other(anchor_file, anchor):
        if not calls:  # the first process, between its commit and its anchor: the other one reserves
            calls.append(anchor)
            other.start()
            other.join(timeout=1.0)  # blocked by the write lock with the fix; finished without it
        real_write(anchor_file, anchor)

    monkeypatch.setattr(ledger_module, "write_anchor", write_after_the_other)
    first.reserve("a", "release", 1.0)
    other.join()
    assert first.spent() == Fraction(3, 2)
    assert read_anchor(anchor_path(path)).spent == Fraction(3, 2)


def test_an_unreadable_anchor_is_refused_not_guessed(tmp_path):
    path = tmp_path / "ledger.sqlite"
    BudgetLedger(path, cap=1.0)
    anchor_path(path).write_text("{}")
    with pytest.raises(ValueError, match=r"move this file aside \(never delete the ledger\)"):
        BudgetLedger(path, cap=1.0)


def test_a_party_whose_ledger_was_restored_refuses_what_it_already_spent(party_files, capsys):  # noqa: F811
    setup, schema = party_files  # lifetime cap 1.5, releases of 1.0
    Party(setup)  # the ledger exists, nothing spent
    backup = setup.ledger_path.parent / "backup"
    _copy_ledger(setup.ledger_path.parent, backup)
    Party(setup).train(_request(schema))
    _copy_ledger(backup, setup.ledger_path.parent)
    said = _party_check(setup, capsys)
    assert "its anchor ledger-anchor.json records more (restored from a backup, or replaced?)" in said
    with pytest.raises(Refusal) as refused:
        Party(setup).train(_request(schema, request_id="run2/1/train"))
    assert refused.value.reason == "budget_exhausted"


def test_a_changed_cap_leaves_a_trail_that_party_check_shows(party_files, capsys):  # noqa: F811
    """Day-2 walkthrough: raising a party's cap from 2 to 3 left no trace anywhere."""
    setup, _ = party_files  # lifetime cap 1.5
    Party(setup)
    policy = setup.policy_path.read_text()
    setup.policy_path.write_text(policy.replace("lifetime-epsilon-cap = 1.5", "lifetime-epsilon-cap = 3.0"))
    # review rev-dpo D9: the check said nothing of the edited cap until the party next opened its ledger
    said = _party_check(setup, capsys)
    assert "the cap shown (3) is not the one the ledger last recorded (1.5): the party records the change" in said
    Party(setup)
    Party(setup)  # the same cap again: no new line
    said = _party_check(setup, capsys)
    assert "is not the one the ledger last recorded" not in said
    notes = [line for line in said.splitlines() if "the lifetime cap was changed (UTC)" in line]
    assert len(notes) == 1 and notes[0].count("->") == 1
    assert notes[0].endswith(
        ": 1.5 -> 3 (each time is the party's first opening of its ledger under the new cap, not the policy's edit)"
    )


def test_a_reservation_stamped_in_the_future_is_of_unknown_age_for_party_check(party_files, capsys, monkeypatch):  # noqa: F811
    """Review rev-dpo D10: a reservation made while the clock ran ahead was called "reserved less than 1 h ago"
    for as long as the clock lagged behind its stamp."""
    import time as time_module

    setup, _ = party_files
    Party(setup)
    ahead = time_module.time() + 3 * 86_400
    monkeypatch.setattr(time_module, "time", lambda: ahead)
    BudgetLedger(setup.ledger_path, cap=1.5).reserve("ahead/1/train", "release", 0.5)
    monkeypatch.undo()
    said = _party_check(setup, capsys)
    assert "1 request reserved at a future or unreadable time and not completed: age unknown" in said
    assert "reserved less than" not in said


def test_a_new_ledger_is_readable_by_its_owner_only(tmp_path, party_files, capsys):  # noqa: F811
    """Day-2 walkthrough: ledger.sqlite was created 0644; it holds the hold-out split's secret salt."""
    ledger = BudgetLedger(tmp_path / "own" / "ledger.sqlite", cap=1.0)
    ledger.reserve("r", "release", 0.5)
    for f in (tmp_path / "own").glob("ledger*"):
        assert f.stat().st_mode & 0o077 == 0, f
    setup, _ = party_files
    Party(setup)
    setup.ledger_path.chmod(0o644)  # a ledger made by an older version, or copied with another umask
    said = _party_check(setup, capsys)
    assert "the ledger is readable by others (mode 644)" in said
    assert "anchor is readable by others" not in said  # no salt in it yet: nothing secret
    BudgetLedger(setup.ledger_path, cap=10.0).secret(HOLDOUT_SALT_KEY, lambda: "c" * 32)  # the anchor gets the salt
    anchor_path(setup.ledger_path).chmod(0o644)
    said = _party_check(setup, capsys)
    assert "the ledger's anchor is readable by others (mode 644): it holds the hold-out split's secret salt" in said
    for f in setup.ledger_path.parent.glob(f"{setup.ledger_path.name}*"):
        f.unlink()
    said = _party_check(setup, capsys)
    assert "the new ledger will count that as spent and take back its held-out salt (the same held-out rows)" in said


def _snapshot(directory: Path, target: Path) -> None:
    """The party's state files (the ledger with its ``-wal``/``-shm`` and the anchor beside it) as a host image
    holds them: ``target`` gets exactly ``directory``'s."""
    target.mkdir(exist_ok=True)
    for old in target.glob("ledger*"):
        old.unlink()
    for f in directory.glob("ledger*"):
        shutil.copy2(f, target / f.name)


@pytest.mark.privacy  # in the gate: mutation campaign 3 (stop 56)
def test_a_host_restored_with_its_anchor_counts_what_the_coordinator_recorded(party_files, tmp_path, capsys):  # noqa: F811
    """The anchor cannot see a snapshot of the whole host; the coordinator's spend record can.  (Through a real
    SuperLink and SuperNodes: tests/deployment/test_host_rollback.py.)"""
    setup, schema = _signing(party_files, tmp_path)  # hospital-a, lifetime cap 1.5
    host = setup.ledger_path.parent
    Party(setup)
    _snapshot(host, tmp_path / "image")
    registered = {"hospital-a": key_id(load_private_key(setup.signing_key_path))}
    store = SpendStore(tmp_path / "coordinator" / "spend-record.sqlite", registered)
    request = _request(schema, spend_record=spend_record_text(store.totals(), registered))
    release = decode_release(Party(setup).train(request), schema, ReleasePolicy(max_epsilon=1.0))
    assert store.add(release.party_id, f"{release.run_id}/train", Fraction(1), "run1")
    assert not store.add(release.party_id, f"{release.run_id}/train", Fraction(1), "run1-resumed")  # once
    _snapshot(tmp_path / "image", host)  # ledger and anchor back to before the release
    assert BudgetLedger(setup.ledger_path, cap=1.5).spent() == 0

    record = spend_record_text(store.totals(), registered)
    with pytest.raises(Refusal) as refused:
        Party(setup).train(_request(schema, request_id="run2/1/train", spend_record=record))
    assert refused.value.reason == "budget_exhausted"
    ledger = BudgetLedger(setup.ledger_path, cap=1.5)
    assert _carried(ledger) == [Fraction(1)] and ledger.spent() == 1
    assert read_anchor(anchor_path(setup.ledger_path)).spent == 1  # the anchor follows
    # the same record again (another request, or another process), or one that holds less: nothing more
    assert ledger.carry_recorded(Fraction(1), "test") == 0 and ledger.carry_recorded(Fraction(1, 2), "test") == 0
    assert _carried(BudgetLedger(setup.ledger_path, cap=1.5)) == [Fraction(1)]
    entry = next(e for e in ledger.entries() if e.request_id.startswith("carried-"))
    assert entry.run_id == "run1" and "request run2/1/train" in entry.detail
    # the same party under a rotated key: its rows under the former key still count (and are named for the log)
    rotated = SpendStore(store.path, {"hospital-a": "sha256:" + "0" * 64})
    assert rotated.totals() == {"hospital-a": 1} and rotated.former_key_totals() == {"hospital-a": 1}
    assert SpendStore(store.path, {"hospital-b": "sha256:" + "0" * 64}).totals() == {}  # no one else's
    said = _party_check(setup, capsys)
    assert "1 of the spent epsilon was carried from the coordinator's spend record (1 time)" in said
    assert "spent 1, remaining 0.5 of the lifetime cap 1.5" in said
    # a record above the cap is carried whole (review rev-dpo D1): the ledger is over its cap, and raising the cap
    # afterwards leaves the carried spend counted (carried up to the cap only, it printed less than the records faced)
    assert ledger.carry_recorded(Fraction(3), "test") == Fraction(2) and ledger.spent() == 3
    assert BudgetLedger(setup.ledger_path, cap=5).remaining() == 2
    said = _party_check(setup, capsys)  # the policy's cap is still 1.5
    assert "spent 3 of the lifetime cap 1.5: OVER THE CAP by 1.5: this party refuses every request" in said


def test_a_host_rebuilt_with_a_new_signing_key_still_counts_its_spend(party_files, tmp_path):  # noqa: F811
    """Ledger and anchor lost, the host rebuilt, a new signing key registered (runbook section 7): the spend the
    coordinator recorded under the former key still reaches the party, which refuses past its cap (day-2 review,
    finding 1: the record had counted only rows under the current key, so the party trained a third time)."""
    setup, schema = _signing(party_files, tmp_path)  # hospital-a, lifetime cap 1.5
    store = SpendStore(tmp_path / "coordinator" / "spend-record.sqlite", {"hospital-a": _key(setup)})
    release = decode_release(Party(setup).train(_request(schema)), schema, ReleasePolicy(max_epsilon=1.0))
    assert store.add(release.party_id, f"{release.run_id}/train", Fraction(1), "run1")
    for lost in setup.ledger_path.parent.glob("ledger*"):
        lost.unlink()
    new_key = tmp_path / "new-signing-key.pem"
    save_private_key(generate_signing_key(), new_key)
    rebuilt = replace(setup, signing_key_path=new_key)
    registered = {"hospital-a": _key(rebuilt)}
    record = spend_record_text(SpendStore(store.path, registered).totals(), registered)
    with pytest.raises(Refusal) as refused:
        Party(rebuilt).train(_request(schema, request_id="run2/1/train", spend_record=record))
    assert refused.value.reason == "budget_exhausted"
    assert BudgetLedger(setup.ledger_path, cap=1.5).spent() == 1


def _key(setup) -> str:
    return key_id(load_private_key(setup.signing_key_path))


def _signing(party_files, tmp_path):  # noqa: F811
    """The party of ``party_files`` with a release-signing key (it finds its entry in a record with it)."""
    setup, schema = party_files
    key_path = tmp_path / "signing-key.pem"
    save_private_key(generate_signing_key(), key_path)
    return replace(setup, signing_key_path=key_path), schema


def test_the_record_of_other_parties_changes_nothing(party_files, tmp_path):  # noqa: F811
    setup, schema = _signing(party_files, tmp_path)
    others = {"hospital-b": key_id(generate_signing_key()), "hospital-c": key_id(generate_signing_key())}
    record = spend_record_text({"hospital-b": Fraction(5), "hospital-c": Fraction(1, 10)}, others)
    Party(setup).train(_request(schema, spend_record=record))
    assert _carried(BudgetLedger(setup.ledger_path, cap=1.5)) == []


def test_the_coordinators_record_needs_keys_and_sits_beside_the_runs(tmp_path):
    base = {"schema-path": "s.toml", "output-dir": str(tmp_path / "outputs" / "run-1")}
    assert CoordinatorConfig.from_run_config(base).spend_record_file is None  # no keys: party ids unverified
    keyed = CoordinatorConfig.from_run_config({**base, "keys-dir": "keys"})
    assert keyed.spend_record_file == tmp_path / "outputs" / "spend-record.sqlite"
    assert (
        CoordinatorConfig.from_run_config({**base, "keys-dir": "k", "spend-record": "none"}).spend_record_file is None
    )
    chosen = CoordinatorConfig.from_run_config({**base, "keys-dir": "k", "spend-record": str(tmp_path / "r.sqlite")})
    assert chosen.spend_record_file == tmp_path / "r.sqlite"
    with pytest.raises(ValueError, match="spend-record: a record file needs keys-dir"):
        CoordinatorConfig.from_run_config({**base, "spend-record": str(tmp_path / "r.sqlite")})
    with pytest.raises(ValueError, match="spend-record"):
        CoordinatorConfig.from_run_config({**base, "spend-record": ""})


def test_a_ledger_with_entries_and_no_anchor_is_said_by_party_check_and_budget(party_files, capsys):  # noqa: F811
    """Deleting the anchor along with restoring an old ledger went unsaid ('ok: ... no problem found'), where a
    damaged anchor is refused (walkthrough): the party still serves (it writes a new anchor from the ledger it
    finds), but both tools now say the anchor is missing and what that can hide."""
    setup, schema = party_files
    Party(setup).train(_request(schema))
    said = _party_check(setup, capsys)
    assert "no anchor" not in said
    anchor_path(setup.ledger_path).unlink()
    said = _party_check(setup, capsys)
    assert "note:" in said and "no anchor (ledger-anchor.json) is beside it" in said and "restore the anchor" in said
    assert main(["budget", str(setup.ledger_path)]) == 0
    out = capsys.readouterr().out
    assert "note: the ledger holds 1 entry and no anchor (ledger-anchor.json) is beside it" in out
    assert main(["budget", str(setup.ledger_path), "--json"]) == 0
    assert '"anchor_missing": true' in capsys.readouterr().out


def _split_records(ledger: BudgetLedger) -> list[str]:
    return sorted(ledger.meta_values(f"{HOLDOUT_SPLIT_KEY}/").values())


def _ledger_with_a_split(path: Path, *fractions: float) -> BudgetLedger:
    """A ledger with a held-out salt and one release's split record per fraction (as a party's train writes them)."""
    ledger = BudgetLedger(path, cap=10.0)
    ledger.secret(HOLDOUT_SALT_KEY, lambda: "0123456789abcdef" * 2)
    assert read_anchor(anchor_path(path)).salt == "0123456789abcdef" * 2  # at once, not at the next reservation
    for k, fraction in enumerate(fractions):
        ledger.reserve(f"r{k}", "release", 0.5)
        ledger.secret(f"{HOLDOUT_SPLIT_KEY}/r{k}", lambda f=fraction: held_out_split(f))
        assert read_anchor(anchor_path(path)).smallest_split == held_out_split(min(fractions[: k + 1]))
    return ledger


def test_the_anchor_keeps_the_held_out_salt_and_the_smallest_fraction(tmp_path):
    """Written as soon as the salt or a release's split record is (before the release exists), owner-only."""
    path = tmp_path / "ledger.sqlite"
    _ledger_with_a_split(path, 0.3, 0.2, 0.5)
    anchor = read_anchor(anchor_path(path))
    assert anchor.salt == "0123456789abcdef" * 2 and anchor.smallest_split == "readings-v2 fraction=0.2"
    assert anchor_path(path).stat().st_mode & 0o077 == 0


def test_a_lost_ledger_takes_back_its_held_out_split(tmp_path, caplog):
    """Lost: a new ledger would draw a new salt (so a new split, on which a release of the lost ledger may have
    trained on held-out rows) and forget that a release trained above 0.2.  It takes both from the anchor."""
    path = tmp_path / "ledger.sqlite"
    _ledger_with_a_split(path, 0.2, 0.5)
    for f in tmp_path.glob("ledger.sqlite*"):
        f.unlink()
    with caplog.at_level("WARNING", logger="edprf.party"):
        ledger = BudgetLedger(path, cap=10.0)
    assert ledger.spent() == 1 and ledger.secret(HOLDOUT_SALT_KEY, lambda: "f" * 32) == "0123456789abcdef" * 2
    assert held_out_fraction(0.6, _split_records(ledger)) == 0.2
    assert "took its held-out salt and its smallest holdout-fraction (0.2) from ledger-anchor.json" in caplog.text
    assert len(_split_records(BudgetLedger(path, cap=10.0))) == 1  # taken once, not at every opening


@pytest.mark.privacy  # in the gate: mutation campaign 3 (stop 56)
def test_a_backup_older_than_a_release_takes_back_its_fraction(tmp_path):
    path = tmp_path / "party" / "ledger.sqlite"
    _ledger_with_a_split(path, 0.4)
    _copy_ledger(path.parent, tmp_path / "backup")
    ledger = BudgetLedger(path, cap=10.0)
    ledger.reserve("later", "release", 0.5)
    ledger.secret(f"{HOLDOUT_SPLIT_KEY}/later", lambda: held_out_split(0.1))  # a release at 0.1, after the backup
    _copy_ledger(tmp_path / "backup", path.parent)
    restored = BudgetLedger(path, cap=10.0)
    assert restored.spent() == 1 and "readings-v2 fraction=0.1" in _split_records(restored)


def test_another_ledger_in_its_place_keeps_its_own_split(tmp_path):
    """Another ledger (with a salt of its own) put in this one's place: its releases trained under its own salt."""
    _ledger_with_a_split(tmp_path / "a" / "ledger.sqlite", 0.1)
    other = BudgetLedger(tmp_path / "b" / "ledger.sqlite", cap=10.0)
    other.secret(HOLDOUT_SALT_KEY, lambda: "e" * 32)
    _copy_ledger(tmp_path / "b", tmp_path / "a")
    ledger = BudgetLedger(tmp_path / "a" / "ledger.sqlite", cap=10.0)
    assert ledger.secret(HOLDOUT_SALT_KEY, lambda: "f" * 32) == "e" * 32 and not _split_records(ledger)
    assert read_anchor(anchor_path(tmp_path / "a" / "ledger.sqlite")).salt == "e" * 32


def test_an_anchor_written_before_it_kept_the_split_is_read_and_completed(tmp_path):
    """0.2.1's anchor (id and spend only) is read as before; the next secret brings it up to date."""
    path = tmp_path / "ledger.sqlite"
    ledger = BudgetLedger(path, cap=10.0)
    ledger.reserve("r0", "release", 0.5)
    anchor_path(path).write_text(f'{{"ledger": "{ledger.ledger_id}", "spent": "1/2"}}')
    assert read_anchor(anchor_path(path)).salt is None
    salt = BudgetLedger(path, cap=10.0).secret(HOLDOUT_SALT_KEY, lambda: "a" * 32)
    assert read_anchor(anchor_path(path)).salt == salt == "a" * 32


@pytest.mark.parametrize(
    "extra",
    [
        '"holdout-salt": "xyz"',
        '"holdout-salt": 5',
        '"holdout-split": "readings-v2 fraction=1.5"',
        '"holdout-split": "readings-v2 fraction=nan"',
        '"holdout-split": 0.2',
    ],
)
def test_an_anchor_with_a_malformed_split_is_refused(tmp_path, extra):
    path = anchor_path(tmp_path / "ledger.sqlite")
    path.write_text(f'{{"ledger": "{"a" * 32}", "spent": "1", {extra}}}')
    with pytest.raises(ValueError, match="holdout-salt"):
        read_anchor(path)


def test_an_anchored_split_of_another_rule_is_not_taken_as_today_s(tmp_path):
    """Stop-55 review S3-5: the anchor keeps the rule with the fraction; a record of another rule (a later version's,
    read by this one) says nothing of today's split, so only the salt is taken back."""
    path = tmp_path / "ledger.sqlite"
    anchor_path(path).write_text(
        f'{{"ledger": "{"a" * 32}", "spent": "1", "holdout-salt": "{"b" * 32}", "holdout-split": "text-v9 fraction=0.1"}}'
    )
    ledger = BudgetLedger(path, cap=10.0)
    assert ledger.secret(HOLDOUT_SALT_KEY, lambda: "f" * 32) == "b" * 32 and not _split_records(ledger)
