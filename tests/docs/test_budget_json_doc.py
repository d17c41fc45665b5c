"""Every key `edprf budget --json` prints is documented in docs/reference/budget-json.md, and every key documented
there is printed (review rev-auto A4: the ~45 keys were undocumented and the object carried no format version); the
same for `edprf inspect --json`, `edprf party check --json` and `edprf schema check --json` (review rev-auto A6)."""

from __future__ import annotations

import json
import re
from fractions import Fraction
from pathlib import Path

from client import BudgetLedger, ReleaseParts
from edprf_fl.cli._budget_cmd import JSON_FORMAT
from edprf_fl.cli._main import main

REFERENCE = Path(__file__).resolve().parents[2] / "docs" / "reference"
PAGE = REFERENCE / "budget-json.md"
MAPS = {"spent_by_relation_exact", "deliveries_per_release", "manifest"}
"""Objects whose keys are data (relations, request ids, the coordinator's manifest), documented as a whole."""


def _documented(page: Path = PAGE) -> set[str]:
    return set(re.findall(r"^\| `([a-z_\[\].]+)` \|", page.read_text(encoding="utf-8"), flags=re.MULTILINE))


def _keys(value: object, prefix: str = "") -> set[str]:
    """The key paths of a JSON value: ``entries[].parts.depth`` for a key of an object in a list of objects."""
    found = set()
    if isinstance(value, dict):
        for key, inner in value.items():
            found.add(prefix + key)
            if key not in MAPS:
                found |= _keys(inner, f"{prefix}{key}.")
    elif isinstance(value, list):
        for item in value:
            found |= _keys(item, prefix[:-1] + "[].")
    return found


def _printed(argv: list[str], capsys) -> dict:
    main(["budget", *argv, "--json"])
    data = json.loads(capsys.readouterr().out)
    assert data["format"] == JSON_FORMAT == "edprf-budget/1"
    return data


def test_every_key_printed_is_documented_and_every_documented_key_printed(tmp_path, capsys):
    path = tmp_path / "ledger.sqlite"
    ledger = BudgetLedger(path, cap=2.0)
    ledger.reserve("tag/train", "release", 1.0, run_id="run-1", detail="2 trees, depth 4, binary, add-remove")
    ledger.complete("tag/train", b"release-bytes", recipient="")
    ledger.record_parts(ReleaseParts("tag/train", Fraction(1, 20), Fraction(19, 20), None, None, 4))
    ledger.record_delivery("tag/train", "run-1", "sent", node_id="7151833965435759367", registered="ab" * 8)
    ledger.record_refusal("other/train", "run-2", "train", 5.0, "budget_exhausted")
    ledger.reserve("run-3/evaluate", "evaluation", 0.1, run_id="run-3")
    printed = _keys(_printed([str(path)], capsys))
    failure = _printed([str(tmp_path / "nope.sqlite")], capsys)
    assert set(failure) == {"format", "ledger_status", "error"}
    documented = _documented()
    assert len(documented) > 60  # the table was read
    assert printed - documented == set(), "printed, not documented in docs/reference/budget-json.md"
    assert documented - printed == set(), "documented, not printed"


def test_every_key_of_inspect_json_is_documented_and_every_documented_key_printed(tmp_path, capsys):
    from edprf_fl.cli._inspect_json import INSPECT_FORMAT
    from tests.model_use.model_files import write_model_files

    files = write_model_files(tmp_path)
    main(["inspect", str(files["model"]), "--json"])
    model = json.loads(capsys.readouterr().out)
    main(["inspect", str(tmp_path / "nothing.edprf"), "--json"])
    failure = json.loads(capsys.readouterr().out)
    assert model["format"] == failure["format"] == INSPECT_FORMAT
    assert set(failure) == {"format", "error", "exit_status"}
    # a release's own parameters have the keys of each release's (the page documents them once)
    printed = {key.replace("releases[].parameters.", "parameters.") for key in _keys(model)} | {"parameters"}
    documented = _documented(REFERENCE / "inspect-json.md")
    assert len(documented) > 40  # the table was read
    assert printed - documented == set(), "printed, not documented in docs/reference/inspect-json.md"
    assert documented - printed == set(), "documented, not printed"


def test_every_key_of_party_check_json_is_documented_and_every_documented_key_printed(tmp_path, capsys):
    from edprf_fl.cli._party_cmd import PARTY_CHECK_FORMAT

    main(["party", "check", "--node-config", f"data-path='{tmp_path / 'd.csv'}'", "--json"])
    shown = json.loads(capsys.readouterr().out)
    assert shown["format"] == PARTY_CHECK_FORMAT and shown["checks"]
    documented = _documented(REFERENCE / "party-check-json.md")
    assert len(documented) > 8
    assert _keys(shown) == documented


RUN_SUMMARY_PAGE = PAGE.parent / "run-summary-json.md"


def test_every_key_of_the_run_summary_is_documented_and_every_documented_key_printed(tmp_path, capsys):
    """The same for `edprf run --json` and `edprf consortium --json` (review rev-auto A6)."""
    from edprf_fl.cli._run_summary import RUN_SUMMARY_FORMAT, print_summary, run_summary

    report = tmp_path / "report.json"
    party = {"party_id": "hospital-a", "node_id": "7151833965435759367", "status": "refused", "reason": "policy_bins"}
    report.write_text(json.dumps({"run_id": "41", "parties": [party], "absent_parties": ["hospital-b"]}))
    print_summary(
        run_summary(
            status="completed", run_id=41, request_tag="t", output_dir=tmp_path, report_path=report, exit_status=6
        )
    )
    data = json.loads(capsys.readouterr().out)
    assert data["format"] == RUN_SUMMARY_FORMAT == "edprf-run-summary/1"
    printed = _keys(data)
    documented = _documented(RUN_SUMMARY_PAGE)
    assert len(documented) > 10  # the table was read
    assert printed - documented == set(), "printed, not documented in docs/reference/run-summary-json.md"
    assert documented - printed == set(), "documented, not printed"


def test_every_key_of_schema_check_json_is_documented_and_every_documented_key_printed(tmp_path, capsys):
    """The same for `edprf schema check --json` (review rev-auto A6)."""
    from tests.federation.test_schema_check_json import _files

    schema_path, data_path = _files(tmp_path)
    main(["schema", "check", str(schema_path), str(data_path), "--json"])
    shown = json.loads(capsys.readouterr().out)
    assert shown["rows_dropped"] and shown["missing"] and shown["clipped"]  # every list has an entry to read keys from
    main(["schema", "check", str(schema_path), str(tmp_path / "nope.csv"), "--json"])
    failure = json.loads(capsys.readouterr().out)
    assert set(failure) == {"format", "error", "exit_status"}
    printed = _keys(shown) | {"findings[].level", "findings[].text"}  # no finding on this file: the two documented
    documented = _documented(REFERENCE / "schema-check-json.md")
    assert len(documented) > 20  # the table was read
    assert printed - documented == set(), "printed, not documented in docs/reference/schema-check-json.md"
    assert documented - printed == set(), "documented, not printed"
