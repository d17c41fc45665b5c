"""A party refuses to serve on a schema that still says DRAFTED FROM DATA once ``drafted = true`` is deleted.

``drafted`` enters the fingerprint as written, so such a schema has its declared twin's fingerprint: a coordinator
holding the declared one would call the party's releases DP while their bounds may be the data's own (rev-s57b N3).
The party cannot tell which is true, so it serves nothing until someone replaces the draft's bounds (and says
where they came from) or restores the flag: a ``party_setup`` refusal, its reason in the party's log only, nothing
reserved, no row read.  ``edprf party check`` reports the same as a problem.  A schema marked ``drafted = true``
still trains (a trial on a draft: NOT DP, its own fingerprint), and so does the declared one.
"""

from __future__ import annotations

import logging

import pytest

from tests.federation._neighbours import SCHEMA_TOML, file_bytes, make_party

from ._party_requests import (
    TrainSettings,
    flower_task_identity,  # noqa: F401 (a fixture)
    ledger,
    result_of,
    send_train,
)

pytestmark = [pytest.mark.privacy, pytest.mark.usefixtures("flower_task_identity")]

MARKED = SCHEMA_TOML.replace('source = "generated"', 'source = "DRAFTED FROM DATA: replace"', 1)


def test_a_schema_with_the_draft_s_text_but_no_flag_is_refused_before_anything_is_spent(tmp_path, caplog):
    from client._preflight import preflight_configs
    from edprf_core import load_schema

    assert MARKED != SCHEMA_TOML
    setup = make_party(tmp_path / "marked", file_bytes(), allow_seeded_randomness=False)
    declared = load_schema(setup.schema_path)
    setup.schema_path.write_text(MARKED, encoding="utf-8")
    marked = load_schema(setup.schema_path)
    assert marked.is_draft and not marked.drafted and marked.fingerprint == declared.fingerprint
    with caplog.at_level(logging.ERROR):
        result = result_of(send_train(setup, TrainSettings()))
    assert result["status"] == "refused" and result["reason"] == "party_setup", result
    # the reason stays in the party's log: the reply's text is the constant one
    assert result["message"] == "the party is not set up correctly; details are in its log" and "DRAFT" not in str(
        result
    )
    assert any("drafted = true is gone" in r.getMessage() for r in caplog.records)
    assert not setup.ledger_path.exists() or ledger(setup).entries() == []
    node_config = {
        "data-path": str(setup.data_path),
        "schema-path": str(setup.schema_path),
        "policy-path": str(setup.policy_path),
        "ledger-path": str(setup.ledger_path),
    }
    report = preflight_configs(node_config, {}, check_rows=False)
    assert any("drafted = true is gone" in p.text for p in report.problems), report.problems
    # the same party with its flag restored trains (NOT DP, on the drafted schema's own fingerprint) ...
    flagged = make_party(tmp_path / "flagged", file_bytes(), allow_seeded_randomness=False)
    flagged.schema_path.write_text("drafted = true\n" + MARKED, encoding="utf-8")
    from dataclasses import replace

    from client import PartyPolicy, load_policy

    policy: PartyPolicy = load_policy(flagged.policy_path)
    flagged.policy_path.write_text(
        replace(policy, schema_fingerprint=load_schema(flagged.schema_path).fingerprint).to_toml(), encoding="utf-8"
    )
    assert result_of(send_train(flagged, TrainSettings()))["status"] == "released"
    # ... and so does the declared one
    assert result_of(send_train(make_party(tmp_path / "declared", file_bytes()), TrainSettings()))["status"] == (
        "released"
    )
