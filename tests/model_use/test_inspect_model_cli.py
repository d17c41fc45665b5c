"""edprf inspect MODEL for the analyst who uses it (analyst review F5): the DP verdict in its first line, a feature
table and --show-schema, no coordinator's local path in the manifest line, and the central evaluation of a
report.json beside the model, said to come from that file."""

from __future__ import annotations

import json
import warnings

import pytest

from edprf_core import EDPRFClassifier, Schema, load_embedded
from edprf_fl.cli import main
from protocol import ReleasePolicy, build_global_model, decode_release, encode_release

RUN = "run-f5"


@pytest.fixture(scope="module")
def dp_model(tmp_path_factory):
    """A differentially private two-party global model of bank marketing (exact sampler, no seed) whose manifest
    holds the coordinator's local paths, with a report.json of its run beside it."""
    X, y, schema = load_embedded("bank_marketing")
    releases = []
    for i, party in enumerate(("hospital-a", "hospital-b")):
        rows = slice(i * 2000, (i + 1) * 2000)
        clf = EDPRFClassifier(schema, epsilon=1.0, n_trees=2, max_depth=3, n_bins=8, residual_pass=False)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            clf.fit(X.iloc[rows], y.iloc[rows])
        releases.append(decode_release(encode_release(clf.forest_, party, run_id=RUN), schema, ReleasePolicy()))
    manifest = {
        "run_id": RUN,
        "parameters": {"output_dir": "/home/coordinator/runs/f5", "sim_dir": "/srv/secret/workspace", "epsilon": 1.0},
    }
    out = tmp_path_factory.mktemp("f5")
    (out / "global-model.edprf").write_bytes(build_global_model(schema, releases, manifest))
    central = {"n": 900, "accuracy": 0.9, "accuracy_ci95": [0.88, 0.92], "roc_auc": 0.81, "roc_auc_ci95": [0.77, 0.85]}
    report = {"run_id": RUN, "schema_fingerprint": schema.fingerprint, "central_evaluation": central}
    (out / "report.json").write_text(json.dumps(report))
    return out / "global-model.edprf", schema


def test_the_first_line_is_the_dp_verdict(capsys, dp_model, bank_model):
    assert main(["inspect", str(dp_model[0])]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first == (
        "privacy: differentially private: epsilon = 1 per record (one data row) under the add-remove neighbouring "
        "relation, as long as each person's records sit at one party; a person with k rows is protected at k times "
        "epsilon."
    )
    assert main(["inspect", str(bank_model["model"])]) == 0  # seeded: the guarantee's own reasons
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith("privacy: NOT differentially private: 3 of 3 parts") and "fixed research seed" in first


def test_features_table_and_show_schema(capsys, dp_model):
    path, schema = dp_model
    assert main(["inspect", str(path), "--show-schema"]) == 0
    out = capsys.readouterr().out
    age = next(line for line in out.splitlines() if line.startswith("  age "))
    assert "continuous" in age and "[18, 100]" in age and "missing: refuse" in age
    assert "label: column 'y', classes no, yes" in out
    toml = out.split("schema (TOML, as the model file carries it):\n", 1)[1]
    assert Schema.from_toml(toml).fingerprint == schema.fingerprint


def test_the_manifest_line_shows_no_local_path(capsys, dp_model):
    assert main(["inspect", str(dp_model[0])]) == 0
    out = capsys.readouterr().out
    assert "/home/coordinator" not in out and "/srv/secret" not in out
    assert '"output_dir": "(a local path, not shown)"' in out and '"epsilon": 1.0' in out


def test_the_report_beside_the_model_gives_the_central_evaluation(tmp_path, capsys, dp_model):
    path = dp_model[0]
    assert main(["inspect", str(path)]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("evaluation"))
    assert f"from {path.parent / 'report.json'}, a report of this model's run 'run-f5', not from the model file" in line
    assert "accuracy 0.900 (95% CI 0.880-0.920), ROC AUC 0.810 (95% CI 0.770-0.850)" in line
    other = tmp_path / "global-model.edprf"
    other.write_bytes(path.read_bytes())
    (tmp_path / "report.json").write_text(json.dumps({"run_id": "another", "central_evaluation": {"n": 5}}))
    assert main(["inspect", str(other)]) == 0
    out = capsys.readouterr().out
    assert "is of another run ('another', the model's is 'run-f5'): not shown" in out and "0.900" not in out


def test_a_report_that_cannot_be_tied_to_the_model_or_read_is_not_shown(tmp_path, capsys, dp_model):
    """Review rev-s60 F1, F5: a report.json nested too deep to parse is said unreadable (inspect once called the model
    itself invalid); a model that names no run shows no report as its evaluation, whatever the report holds."""
    from edprf_fl.cli._inspect_model import report_lines

    model = tmp_path / "global-model.edprf"
    model.write_bytes(dp_model[0].read_bytes())
    (tmp_path / "report.json").write_text("[" * 100_000 + "]" * 100_000)
    assert main(["inspect", str(model)]) == 0
    assert "could not be read (RecursionError): no evaluation shown" in capsys.readouterr().out
    (tmp_path / "report.json").write_text(json.dumps({"central_evaluation": {"n": 10, "accuracy": 0.99}}))
    for run_id in (None, ""):
        [line] = report_lines(model, run_id)
        assert line.startswith("evaluation: the model names no run") and "0.990" not in line


def test_a_report_of_the_same_run_id_but_another_schema_is_not_shown(tmp_path, capsys, dp_model):
    """A report.json naming the model's run id but another schema (or none) is not taken for its evaluation."""
    model = tmp_path / "global-model.edprf"
    model.write_bytes(dp_model[0].read_bytes())
    for fingerprint in ("sha256:" + "0" * 64, None):
        report = {"run_id": RUN, "central_evaluation": {"n": 10, "accuracy": 0.99}}
        if fingerprint:
            report["schema_fingerprint"] = fingerprint
        (tmp_path / "report.json").write_text(json.dumps(report))
        assert main(["inspect", str(model)]) == 0
        out = capsys.readouterr().out
        assert "names another schema than the model's (or none): not shown" in out and "0.990" not in out


def test_the_feature_table_lists_a_dozen_categories_and_counts_the_rest():
    from edprf_core import CategoricalFeature, LabelSpec, Schema
    from edprf_fl.cli._inspect_model import SHOWN_CATEGORIES, feature_lines

    codes = tuple(f"c{i:02d}" for i in range(40))
    schema = Schema(
        name="wide",
        features=(CategoricalFeature("site", codes, source="hospital site code"),),
        label=LabelSpec("y", (0, 1)),
    )
    [line] = [x for x in feature_lines(schema) if x.startswith("  site")]
    assert f"c{SHOWN_CATEGORIES - 1:02d}, ... ({40 - SHOWN_CATEGORIES} more: --show-schema)" in line
    assert f"c{SHOWN_CATEGORIES:02d}" not in line


def test_odd_figures_in_a_report_are_not_shown_nor_crash(tmp_path, capsys, dp_model):
    """Review rev-s60b F2-F3: a figure too large for a float (valid JSON) made inspect call the model invalid; a
    row count or figure of another type, out of [0, 1] or with a reversed interval was printed as it was."""
    model = tmp_path / "global-model.edprf"
    model.write_bytes(dp_model[0].read_bytes())
    fingerprint = dp_model[1].fingerprint

    def shown(central: dict) -> str:
        report = {"run_id": RUN, "schema_fingerprint": fingerprint, "central_evaluation": central}
        (tmp_path / "report.json").write_text(json.dumps(report))
        assert main(["inspect", str(model)]) == 0
        return next(x for x in capsys.readouterr().out.splitlines() if x.startswith("evaluation"))

    huge = int("1" + "0" * 400)
    assert "accuracy 0.800" in shown({"n": 10, "accuracy": 0.8, "roc_auc": huge, "majority_class_accuracy": huge})
    assert "ROC AUC" not in shown({"n": 10, "accuracy": 0.8, "roc_auc": huge}) and "majority" not in shown(
        {"n": 10, "accuracy": 0.8, "majority_class_accuracy": True}
    )
    for n in (True, -5, 0.5, [1], "10\x1b[2J"):
        assert "can be read" in shown({"n": n, "accuracy": 0.8})
    assert "can be read" in shown({"n": 10, "accuracy": 7.5})
    assert shown({"n": 10, "accuracy": 0.8, "accuracy_ci95": [0.9, 0.7]}).endswith("accuracy 0.800")  # reversed


def test_the_runs_evaluation_charge_is_said_beside_the_models_epsilon(tmp_path, capsys, dp_model):
    """Review rev-dpo D12: the model file's epsilon (its release) beside a run report that also charged the parties
    for a noised evaluation went unexplained.  A report of the same run that names evaluation charges adds a line;
    figures the untrusted report cannot back (negative, not finite, not numbers, booleans) are not read."""
    from edprf_fl.cli._inspect_model import report_lines

    model = tmp_path / "global-model.edprf"
    model.write_bytes(dp_model[0].read_bytes())
    report = {
        "run_id": RUN,
        "central_evaluation": {"n": 10, "accuracy": 0.99},
        "schema_fingerprint": dp_model[1].fingerprint,
    }
    parties = [{"evaluation_epsilon": 0.1}, {"evaluation_epsilon": 0.1}, {"evaluation_epsilon": 0}]
    for junk in (-1, float("inf"), "0.5", True, None):
        parties.append({"evaluation_epsilon": junk})
    (tmp_path / "report.json").write_text(json.dumps({**report, "parties": parties + ["x"]}))
    assert main(["inspect", str(model)]) == 0
    out = capsys.readouterr().out
    assert (
        "evaluation charge: this run also charged 2 parties epsilon 0.1 each for its noised evaluation, not counted "
        "in the model's epsilon above; a party's total over all its runs is in its ledger (`edprf budget` on its host)"
    ) in out
    (tmp_path / "report.json").write_text(json.dumps({**report, "parties": [{"evaluation_epsilon": 0}]}))
    assert [x for x in report_lines(model, RUN, dp_model[1].fingerprint) if "charge" in x] == []
