"""The held-out split's salt is drawn from the operating system's secrets, once per ledger.

The split is a keyed hash of each row's own cells (``client._held_out_split``): a per-record map, so no epsilon
statement depends on the key.  The key keeps the split unpredictable to the coordinator and to anyone who knows
the party's public parameters: which of a record's rows were trained on and which are held out for the noised
evaluation.  A salt made from public values (the party's id, its policy or schema; mutation campaign 4, M36)
would make the split computable from outside.  So a party's first request draws the salt through
``secrets.token_hex``, and two parties alike in every public respect get different salts.
"""

from __future__ import annotations

import secrets

import pytest

from client import HOLDOUT_SALT_KEY, read_meta_readonly

from ..federation._neighbours import file_bytes, make_party
from ._party_requests import TrainSettings, flower_task_identity, result_of, send_train  # noqa: F401

pytestmark = [pytest.mark.privacy, pytest.mark.usefixtures("flower_task_identity")]


def _salt(setup) -> str:
    return read_meta_readonly(setup.ledger_path, (HOLDOUT_SALT_KEY,))[HOLDOUT_SALT_KEY]


def test_the_salt_comes_from_the_operating_systems_secrets(tmp_path, monkeypatch):
    drawn = []

    def token_hex(n: int) -> str:
        drawn.append(n)
        return "5a" * n

    monkeypatch.setattr(secrets, "token_hex", token_hex)
    setup = make_party(tmp_path / "p", file_bytes(n_rows=200), allow_seeded_randomness=False)
    assert result_of(send_train(setup, TrainSettings()))["status"] == "released"
    assert drawn and _salt(setup) == "5a" * 16  # (the ledger draws other secrets through it too)


def test_parties_alike_in_every_public_respect_get_different_salts(tmp_path):
    setups = [make_party(tmp_path / name, file_bytes(n_rows=200), allow_seeded_randomness=False) for name in ("a", "b")]
    for setup in setups:
        assert result_of(send_train(setup, TrainSettings()))["status"] == "released"
    salts = [_salt(setup) for setup in setups]
    assert all(len(s) == 32 and int(s, 16) >= 0 for s in salts)
    assert salts[0] != salts[1]  # the same party id, policy, schema and file
