"""A party's ledger belongs to that party: its ``ledger_meta`` records the party id, and every open checks it.

Ops review finding 5: hospital-a's ledger and anchor copied into hospital-b's directory gave hospital-b a spent
total of 1 instead of 2, and ``edprf party check`` said "no problem found".
"""

from __future__ import annotations

import logging
import shutil
import sqlite3

import pytest

from client import (
    PARTY_ID_KEY,
    BudgetLedger,
    LedgerOfAnotherParty,
    LedgerStatus,
    Party,
    PartyPolicy,
    backup_ledger,
    read_budget,
    read_ledger_readonly,
    read_meta_readonly,
)
from client._ledger_anchor import anchor_path
from edprf_fl.cli._main import main

from .test_ledger_anchor import _party_check
from .test_party import _request, party_files  # noqa: F401 (a fixture)


def _other_party_ledger(setup, tmp_path) -> None:
    """hospital-z's ledger (1 spent) and its anchor, copied over the party's own (what finding 5 did)."""
    other = tmp_path / "hospital-z" / "ledger.sqlite"
    BudgetLedger(other, cap=5.0, party_id="hospital-z").reserve("z-1", "release", 1.0)
    for path in (other, anchor_path(other)):
        shutil.copy2(path, setup.ledger_path.parent / path.name)


def test_a_new_ledger_records_its_party(party_files):  # noqa: F811
    setup, _ = party_files
    Party(setup)
    assert read_meta_readonly(setup.ledger_path, (PARTY_ID_KEY,)) == {PARTY_ID_KEY: "hospital-a"}


def test_a_ledger_of_another_party_is_refused_by_the_party_check_and_budget(party_files, tmp_path, capsys):  # noqa: F811
    setup, schema = party_files  # hospital-a
    Party(setup).train(_request(schema))  # hospital-a spent 1
    _other_party_ledger(setup, tmp_path)
    before = setup.ledger_path.read_bytes()

    with pytest.raises(LedgerOfAnotherParty) as refused:
        Party(setup)
    said = str(refused.value)
    assert "expected a ledger of party 'hospital-a'" in said and "got one of party 'hospital-z'" in said
    assert setup.ledger_path.read_bytes() == before  # nothing written, no id recorded over the other's

    check = _party_check(setup, capsys)
    assert "got one of party 'hospital-z'" in check and "no problem found" not in check

    capsys.readouterr()
    assert main(["budget", str(setup.ledger_path), "--policy", str(setup.policy_path)]) == 1
    err = capsys.readouterr().err
    assert "expected a ledger of party 'hospital-a'" in err and "'hospital-z'" in err
    state = read_budget(setup.ledger_path, 1.5, party_id="hospital-a")
    assert state.status is LedgerStatus.UNREADABLE and state.ledger_of_another == "party" and state.spent is None
    # without a party to check against (no --policy), the file is shown for what it is
    assert main(["budget", str(setup.ledger_path), "--cap", "5"]) == 0
    assert "spent 1 of the lifetime cap 5" in capsys.readouterr().out


def _without_party_id(path) -> None:
    """The ledger as a version before party ids were recorded wrote it."""
    db = sqlite3.connect(path)
    db.execute("DELETE FROM ledger_meta WHERE key = ?", (PARTY_ID_KEY,))
    db.commit()
    db.close()


def test_a_ledger_written_before_party_ids_is_read_and_gets_the_id_at_its_next_open(party_files, caplog):  # noqa: F811
    setup, schema = party_files
    Party(setup).train(_request(schema))
    _without_party_id(setup.ledger_path)

    # read-only readers read it as before, with or without a party to check against
    assert [e.request_id for e in read_ledger_readonly(setup.ledger_path)] == ["run1/1/train"]
    state = read_budget(setup.ledger_path, 1.5, party_id="hospital-a")
    assert state.status is LedgerStatus.READ and state.spent == 1
    assert read_meta_readonly(setup.ledger_path, (PARTY_ID_KEY,)) == {}  # reading wrote nothing

    with caplog.at_level(logging.INFO, logger="edprf.party"):
        party = Party(setup)
    assert party.ledger.spent() == 1
    assert read_meta_readonly(setup.ledger_path, (PARTY_ID_KEY,)) == {PARTY_ID_KEY: "hospital-a"}
    assert any("now recorded as party 'hospital-a'" in r.getMessage() for r in caplog.records)
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="edprf.party"):
        Party(setup)  # recorded once
    assert not any("now recorded" in r.getMessage() for r in caplog.records)


def test_a_ledger_opened_without_a_party_records_none_and_checks_none(tmp_path):
    path = tmp_path / "ledger.sqlite"
    BudgetLedger(path, cap=1.0)
    assert read_meta_readonly(path, (PARTY_ID_KEY,)) == {}
    BudgetLedger(path, cap=1.0, party_id="p")
    BudgetLedger(path, cap=1.0)  # no party given: not checked
    with pytest.raises(LedgerOfAnotherParty, match="expected a ledger of party 'q'"):
        BudgetLedger(path, cap=1.0, party_id="q")


def test_the_policy_party_is_the_one_checked(party_files, capsys):  # noqa: F811
    """A party renamed in its policy is refused its old ledger: the ledger is the renamed party's record only if
    the operator says so (by putting the old id back)."""
    setup, _ = party_files
    Party(setup)
    policy = PartyPolicy(party_id="hospital-b", lifetime_epsilon_cap=1.5)
    setup.policy_path.write_text(policy.to_toml())
    with pytest.raises(LedgerOfAnotherParty, match="got one of party 'hospital-a'"):
        Party(setup)


def test_a_second_ledger_of_the_party_beside_its_ledger_is_a_problem(party_files, capsys):  # noqa: F811
    """Review rev-dpo D2: the same node config with only ``ledger-path`` changed got a second full cap over the same
    records, and ``party check`` said "2 epsilon available, no problem found" beside the exhausted ledger.  Another
    ledger of the same party in the ledger's (or the policy's) directory is a problem, whichever file is used; a
    backup of the party's own ledger kept beside it (the same ledger id) and another party's ledger are not."""
    setup, schema = party_files  # hospital-a, ledger.sqlite
    Party(setup).train(_request(schema))  # spent 1
    backup_ledger(setup.ledger_path, setup.ledger_path.with_name("ledger-backup.sqlite"))
    BudgetLedger(setup.ledger_path.with_name("hospital-z.sqlite"), cap=5.0, party_id="hospital-z").reserve(
        "z-1", "release", 1.0
    )
    (setup.ledger_path.parent / "not-a-ledger.sqlite").write_bytes(b"SQLite format 3\x00" + bytes(100))
    assert "another ledger" not in _party_check(setup, capsys)  # a backup, another party's, a damaged file

    second = type(setup)(
        setup.data_path, setup.schema_path, setup.policy_path, setup.ledger_path.with_name("fedB.sqlite")
    )
    said = _party_check(second, capsys)
    assert f"another ledger of party 'hospital-a' is at {setup.ledger_path} (spent 1)" in said
    assert "no problem found" not in said
    Party(second).train(_request(schema, request_id="fedB/1/train"))  # the party serves: the check is the operator's
    said = _party_check(setup, capsys)  # and the first ledger's check now names the second
    assert f"another ledger of party 'hospital-a' is at {second.ledger_path} (spent 1)" in said
