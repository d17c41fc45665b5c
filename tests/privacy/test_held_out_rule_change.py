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
from client._held_out_record import HOLDOUT_SPLIT_KEY, held_out_fraction, held_out_split
from protocol import INSPECTION_POLICY, REFUSAL_REASONS, RefusalReason, decode_release

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
    assert ledger(setup).meta_value(f"{HOLDOUT_SPLIT_KEY}/{release.request_id}") == held_out_split(0.3)
    assert held_out_split(0.3) == "readings-v2 fraction=0.3"  # the harness's holdout-fraction
    result = result_of(send_evaluate(setup, global_model(release), 0.5))
    assert result["status"] == "evaluated", result


@pytest.mark.parametrize("recorded", [None, "text-v1", "readings-v2"])
def test_a_release_of_another_rule_is_not_evaluated_and_nothing_is_read_or_spent(tmp_path: Path, monkeypatch, recorded):
    """``None``: a release made before the rule was recorded (an earlier version); ``"text-v1"``: another rule;
    ``"readings-v2"``: the rule without its fraction (0.2.0), which cannot tell whether the fraction changed since."""
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
        "the model holds a release of this party trained under another held-out split (an upgrade): its training "
        "rows may now be held out; a new release is needed first"
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


def _signing_party(directory: Path, key_kind: str = "ed25519"):
    """A party that signs its releases (a key of ``key_kind`` beside its files)."""
    from dataclasses import replace

    from protocol import generate_signing_key, save_private_key

    setup = make_party(directory, file_bytes(n_rows=600), allow_seeded_randomness=False)
    key_path = save_private_key(generate_signing_key(key_kind), directory / "signing.key")
    return replace(setup, signing_key_path=key_path)


@pytest.mark.parametrize("key_kind", ["ed25519", "p384"])
def test_its_own_signed_release_under_a_lost_ledger_is_not_evaluated(tmp_path: Path, monkeypatch, key_kind):
    """A party that lost its ledger (a host rebuilt, the file deleted) starts a new one with a new held-out salt,
    so a new split.  A release it signed before is not in the new ledger, and "a release this ledger never made"
    was left alone: the model was evaluated, mostly on the rows that release had trained on (the split is re-drawn
    at random: about 80 % of the held-out rows).  The party recognizes its own signature and refuses, before any
    row is read and before anything is reserved."""
    setup = _signing_party(tmp_path, key_kind)
    release = release_of(setup, send_train(setup, SETTINGS))
    assert release.key_id, "the release must be signed for this test"
    model = global_model(release)
    setup.ledger_path.unlink()  # the ledger is lost: the next request makes a new one, with a new salt
    spent = ledger(setup).spent()  # what the anchor carried into the new ledger (the lost release's epsilon)
    assert spent == 1

    def no_read(self):
        raise AssertionError("the refusal must come before any row is read")

    monkeypatch.setattr(party_module.Party, "_data", no_read)
    result = result_of(send_evaluate(setup, model, 0.5))
    assert result["status"] == "refused" and result["reason"] == RefusalReason.HELD_OUT_CHANGED, result
    assert result["message"] == (
        "the model holds a release signed by this party that its ledger did not make (a lost or replaced ledger): "
        "evaluating it here may not be on held-out rows; a new release is needed first"
    )
    assert ledger(setup).spent() == spent and ledger(setup).find("run1/evaluate") is None  # nothing reserved


def test_a_release_of_its_id_signed_by_another_key_is_evaluated(tmp_path: Path):
    """Same party id, another key (a release from elsewhere, or a forgery): no row of this party trained it, so
    the lost-ledger check does not apply and the model is evaluated as before."""
    maker = _signing_party(tmp_path / "maker")
    release = release_of(maker, send_train(maker, SETTINGS))
    other = _signing_party(tmp_path / "other")
    result = result_of(send_evaluate(other, global_model(release), 0.5))
    assert result["status"] == "evaluated", result


def test_after_a_change_of_holdout_fraction_no_release_of_the_ledger_trains_on_a_held_out_row(
    tmp_path: Path, monkeypatch
):
    """Red-team review F4 and whole-change review F1: a party that raised holdout-fraction from 0.2 to 0.6 evaluated
    a model holding its earlier release on rows that had trained it (787 of 1,192), and a check reading the model's
    labels is bypassed by a coordinator that relabels the release.  Now the party holds out only the rows below the
    smallest fraction its ledger recorded with a release, and trains on the rows at or above today's: whatever the
    model says, no release of this ledger trained on a row it evaluates on.  Checked on the rows the party reads:
    after raising the fraction, the held-out rows are those below the first release's 0.3 and the training rows
    those at or above 0.6; after lowering it to 0.1, the held-out rows are below 0.1."""
    from client import PartyPolicy
    from client._held_out_record import HOLDOUT_SALT_KEY
    from client._held_out_split import keyed_uniform
    from client._policy import load_policy
    from edprf_core import load_schema
    from protocol import encode_release

    setup, release = _party_with_a_release(tmp_path)  # trained at the harness's 0.3
    policy, schema = load_policy(setup.policy_path), load_schema(setup.schema_path)
    salt = ledger(setup).meta_value(HOLDOUT_SALT_KEY)
    seen = []
    real_data = party_module.Party._data

    def data(self):
        local = real_data(self)
        seen.append(
            (
                keyed_uniform(local.X_holdout.assign(**{schema.label.column: local.y_holdout}), schema, salt),
                keyed_uniform(local.X_train.assign(**{schema.label.column: local.y_train}), schema, salt),
            )
        )
        return local

    monkeypatch.setattr(party_module.Party, "_data", data)
    # a coordinator relabels the release (another request id, unsigned): the model says nothing of its origin
    relabelled = global_model(
        decode_release(encode_release(release.forest, "harness", request_id="forged/1"), schema, INSPECTION_POLICY)
    )
    for k, (fraction, held_below, train_from) in enumerate([(0.6, 0.3, 0.6), (0.1, 0.1, 0.1)]):
        setup.policy_path.write_text(PartyPolicy(**{**policy.__dict__, "holdout_fraction": fraction}).to_toml())
        for j, model in enumerate((global_model(release), relabelled)):
            result = result_of(send_evaluate(setup, model, 0.5, f"run1/evaluate-{k}-{j}"))
            assert result["status"] == "evaluated", result
            held, trained = seen[-1]
            assert held.size and held.max() < held_below and trained.min() >= train_from
    assert held_out_fraction(0.6, ["readings-v2 fraction=0.5", "readings-v2 fraction=0.3", "text-v1"]) == 0.3


def test_after_a_lost_ledger_no_release_of_the_lost_one_trains_on_a_held_out_row(tmp_path: Path, monkeypatch):
    """Whole-change review carry-over (stop 54): a party that lost its ledger started a new one with a new salt,
    so a new split.  Its own signed release is refused (the test above), but a coordinator that relabels it (another
    request id, no signature) had it evaluated, mostly on rows it had trained on.  The anchor keeps the salt and the
    smallest fraction, and the new ledger takes them back: after the loss, and a fraction raised to 0.6, the party
    holds out the rows below the lost ledger's 0.3 under the lost ledger's salt, so none that trained the release."""
    from client import PartyPolicy, read_meta_readonly
    from client._held_out_record import HOLDOUT_SALT_KEY
    from client._policy import load_policy
    from edprf_core import load_schema
    from protocol import encode_release

    setup, release = _party_with_a_release(tmp_path)  # trained at the harness's 0.3
    policy, schema = load_policy(setup.policy_path), load_schema(setup.schema_path)
    # read only (opening the ledger for writing would bring its anchor up to date): lost right after the release
    salt = read_meta_readonly(setup.ledger_path, (HOLDOUT_SALT_KEY,))[HOLDOUT_SALT_KEY]
    for f in setup.ledger_path.parent.glob(f"{setup.ledger_path.name}*"):
        f.unlink()  # the ledger is lost; its anchor stays
    setup.policy_path.write_text(PartyPolicy(**{**policy.__dict__, "holdout_fraction": 0.6}).to_toml())
    seen = _held_out_uniforms(monkeypatch, schema, salt)
    relabelled = global_model(
        decode_release(encode_release(release.forest, "harness", request_id="forged/1"), schema, INSPECTION_POLICY)
    )
    result = result_of(send_evaluate(setup, relabelled, 0.5, "run2/evaluate"))
    assert result["status"] == "evaluated", result
    assert ledger(setup).meta_value(HOLDOUT_SALT_KEY) == salt
    assert seen[-1].size and seen[-1].max() < 0.3  # the lost ledger's split, below its release's fraction


def _held_out_uniforms(monkeypatch, schema, salt: str) -> list:
    """Spy on the party's rows: each request's held-out rows' keyed uniforms under ``salt``, appended to the list."""
    from client._held_out_split import keyed_uniform

    seen = []
    real_data = party_module.Party._data

    def data(self):
        local = real_data(self)
        seen.append(keyed_uniform(local.X_holdout.assign(**{schema.label.column: local.y_holdout}), schema, salt))
        return local

    monkeypatch.setattr(party_module.Party, "_data", data)
    return seen


def test_every_recorded_fraction_counts_not_only_the_first(tmp_path: Path, monkeypatch):
    """Mutation review N10: a party that trained at 0.3, then at 0.1, then raised its fraction to 0.6 must hold out
    below 0.1 (the second release trained on the rows from 0.1 on); reading only the first record held out below
    0.3, on rows the second release had trained on.  Through the party's handlers, on the rows it reads."""
    from client import PartyPolicy
    from client._held_out_record import HOLDOUT_SALT_KEY
    from client._policy import load_policy
    from edprf_core import load_schema

    setup, first = _party_with_a_release(tmp_path)  # trained at the harness's 0.3
    policy, schema = load_policy(setup.policy_path), load_schema(setup.schema_path)
    setup.policy_path.write_text(PartyPolicy(**{**policy.__dict__, "holdout_fraction": 0.1}).to_toml())
    second = release_of(setup, send_train(setup, SETTINGS, "run2/train"))
    setup.policy_path.write_text(PartyPolicy(**{**policy.__dict__, "holdout_fraction": 0.6}).to_toml())
    seen = _held_out_uniforms(monkeypatch, schema, ledger(setup).meta_value(HOLDOUT_SALT_KEY))
    for k, release in enumerate((first, second)):
        result = result_of(send_evaluate(setup, global_model(release), 0.5, f"run3/evaluate-{k}"))
        assert result["status"] == "evaluated", result
        assert seen[-1].size and seen[-1].max() < 0.1
