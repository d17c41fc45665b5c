"""A party refuses to evaluate a model holding its own release trained under another held-out rule.

The upgrade review: an earlier version drew each party's held-out rows from a hash of each cell's text; this one
hashes each cell's reading (and reads a numeric missing token as missing).  Same file, same salt, another split:
about 80 % of the new held-out rows had been training rows.  A release made before the upgrade and resent after it
(the documented crash-recovery path, a reused request-tag) was then evaluated mostly on its own training rows,
while the guarantee said the two sets are disjoint (a record faces at most max(release, evaluation)).

Each release now records the rule it trained under in the party's ledger (``HOLDOUT_SPLIT``).  An evaluation of a
model holding a release this ledger made under another rule, or before rules were recorded, is refused before any
row is read and before anything is reserved, with a constant text.  Through the party's real Flower handlers, on
the production path (no seed).
"""

from __future__ import annotations

from pathlib import Path

import pytest

import client._party as party_module
from client._held_out_split import HOLDOUT_SPLIT, HOLDOUT_SPLIT_KEY
from protocol import REFUSAL_REASONS, RefusalReason

from ..federation._neighbours import file_bytes, make_party
from ._party_requests import (
    TrainSettings,
    flower_task_identity,  # noqa: F401 (a fixture)
    global_model,
    ledger,
    release_of,
    result_of,
    send_evaluate,
    send_train,
)

pytestmark = [pytest.mark.privacy, pytest.mark.usefixtures("flower_task_identity")]

SETTINGS = TrainSettings(leaf="counts", split_mode="binary", n_trees=1, max_depth=3)


def _party_with_a_release(tmp_path: Path):
    setup = make_party(tmp_path, file_bytes(n_rows=600), allow_seeded_randomness=False)
    release = release_of(setup, send_train(setup, SETTINGS))
    return setup, release


def test_a_release_records_its_rule_and_its_model_is_evaluated(tmp_path: Path):
    setup, release = _party_with_a_release(tmp_path)
    assert ledger(setup).meta_value(f"{HOLDOUT_SPLIT_KEY}/{release.request_id}") == HOLDOUT_SPLIT
    result = result_of(send_evaluate(setup, global_model(release), 0.5))
    assert result["status"] == "evaluated", result


@pytest.mark.parametrize("recorded", [None, "text-v1"])
def test_a_release_of_another_rule_is_not_evaluated_and_nothing_is_read_or_spent(tmp_path: Path, monkeypatch, recorded):
    """``None``: a release made before the rule was recorded (an earlier version); ``"text-v1"``: another rule."""
    setup, release = _party_with_a_release(tmp_path)
    key = f"{HOLDOUT_SPLIT_KEY}/{release.request_id}"
    with ledger(setup)._connect() as db:  # the ledger as the earlier version left it, or with another rule
        db.execute("DELETE FROM ledger_meta WHERE key = ?", (key,))
        if recorded is not None:
            db.execute("INSERT INTO ledger_meta (key, value) VALUES (?, ?)", (key, recorded))
    spent = ledger(setup).spent()

    def no_read(self):
        raise AssertionError("the refusal must come before any row is read")

    monkeypatch.setattr(party_module.Party, "_data", no_read)
    result = result_of(send_evaluate(setup, global_model(release), 0.5))
    assert result["status"] == "refused" and result["reason"] == RefusalReason.HELD_OUT_CHANGED
    assert result["message"] == (
        "the model holds a release of this party trained before its held-out rows were drawn by the current rule "
        "(an upgrade): evaluating it there would not be on held-out rows; a new release is needed first"
    )
    assert REFUSAL_REASONS[RefusalReason.HELD_OUT_CHANGED]
    assert ledger(setup).spent() == spent and ledger(setup).find("run1/evaluate") is None  # nothing reserved


def test_a_release_of_its_id_that_this_ledger_never_made_is_left_to_the_other_checks(tmp_path: Path):
    """No row of this party trained a release its ledger never made (a model from elsewhere, or a test's): the
    rule check does not apply, and the evaluation is served."""
    _, release = _party_with_a_release(tmp_path / "maker")
    other = make_party(tmp_path / "other", file_bytes(n_rows=600), allow_seeded_randomness=False)
    result = result_of(send_evaluate(other, global_model(release), 0.5))
    assert result["status"] == "evaluated", result
