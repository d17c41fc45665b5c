"""`edprf schema check --json` (review rev-auto A6): a script preparing a party's data reads how many rows the schema
keeps and why the others are dropped from one object, not from the text report."""

from __future__ import annotations

import json

from edprf_fl.cli._main import main
from edprf_fl.cli._schema_check_json import SCHEMA_CHECK_FORMAT
from tests.synthetic import make_data, make_schema


def _files(tmp_path):
    schema = make_schema()
    schema_path = tmp_path / "schema.toml"
    schema_path.write_text(schema.to_toml(), encoding="utf-8")
    X, y = make_data(schema, 200, seed=3)
    frame = X.assign(**{schema.label.column: y})
    frame.loc[0:29, "x0"] = 25.0  # 30 values above the bound 10: clipped
    frame["c1"] = frame["c1"].astype(object)
    frame.loc[30:39, "c1"] = "undeclared"  # 10 rows dropped
    frame.loc[40:44, "x1"] = None  # 5 missing
    data_path = tmp_path / "data.csv"
    frame.to_csv(data_path, index=False)
    return schema_path, data_path


def test_the_object_carries_the_reports_counts(tmp_path, capsys):
    schema_path, data_path = _files(tmp_path)
    assert main(["schema", "check", str(schema_path), str(data_path)]) == 0
    text = capsys.readouterr().out
    assert main(["schema", "check", str(schema_path), str(data_path), "--json"]) == 0
    captured = capsys.readouterr()
    shown = json.loads(captured.out)  # the whole of stdout is the object; progress stays on stderr
    assert shown["format"] == SCHEMA_CHECK_FORMAT == "edprf-schema-check/1"
    assert shown["exit_status"] == 0 and shown["error"] is None and "checking " in captured.err
    assert shown["rows_read"] == 200 and shown["rows_kept"] == 185
    assert "rows read: 200; rows kept: 185" in text
    assert [(d["column"], d["count"]) for d in shown["rows_dropped"]] == [("x1", 5), ("c1", 10)]
    assert [(c["column"], c["count"]) for c in shown["clipped"]] == [("x0", 30)]
    assert [(m["column"], m["count"]) for m in shown["missing"]] == [("x1", 5)]
    assert shown["schema_fingerprint"] in text and shown["schema_drafted"] is False


def test_no_row_kept_and_an_unreadable_file_are_objects_too(tmp_path, capsys):
    schema_path, data_path = _files(tmp_path)
    lines = data_path.read_text().splitlines()
    data_path.write_text(
        "\n".join([lines[0]] + [ln.replace(",k0", ",other").replace(",k1", ",other") for ln in lines[1:]])
    )
    assert main(["schema", "check", str(schema_path), str(data_path), "--json"]) == 1
    captured = capsys.readouterr()
    shown = json.loads(captured.out)
    assert shown["rows_kept"] == 0 and shown["exit_status"] == 1 and shown["rows_read"] == 200
    assert "no row of" in captured.err
    assert main(["schema", "check", str(schema_path), str(tmp_path / "nope.csv"), "--json"]) == 1
    captured = capsys.readouterr()
    failure = json.loads(captured.out)
    assert set(failure) == {"format", "error", "exit_status"} and failure["exit_status"] == 1
    assert "nope.csv" in failure["error"] and "edprf schema check: error: " in captured.err
