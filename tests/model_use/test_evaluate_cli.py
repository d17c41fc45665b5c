"""edprf evaluate: the same metrics as edprf_core.metrics.clinical_report on the scorable rows, hostile rows counted."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from edprf_core import example_schema, load_embedded
from edprf_core.encoding import encode_labels
from edprf_core.metrics import clinical_report
from edprf_fl.cli import main
from edprf_fl.cli._evaluate_cmd import SUBSET_EXIT
from protocol import load_classifier


def test_evaluate_reports_the_clinical_metrics_of_the_scorable_rows(tmp_path, bank_model, capsys):
    schema = example_schema("bank_marketing")
    data = tmp_path / "labelled.csv"
    lines = bank_model["data"].read_text().splitlines()
    hostile = [
        "abc" + lines[1][lines[1].index(",") :],  # age not a number: refused
        lines[1].rsplit(",", 1)[0] + ",maybe",  # undeclared label
        lines[1].rsplit(",", 1)[0],
    ]  # one field short: malformed
    data.write_text("\n".join([lines[0], *hostile, *lines[1:]]) + "\n")
    out_json = tmp_path / "metrics.json"
    assert (
        main(
            [
                "evaluate",
                str(bank_model["model"]),
                str(data),
                "--positive-class",
                "yes",
                "--threshold",
                "0.03",
                "--json",
                str(out_json),
                "--allow-missing-labels",  # one undeclared label ('maybe'): exit 2 without it
            ]
        )
        == 0
    )
    captured = capsys.readouterr()
    result = json.loads(out_json.read_text())
    frame = pd.read_csv(bank_model["data"])
    clf = load_classifier(bank_model["model"])
    expected = clinical_report(
        encode_labels(frame[schema.label.column], schema),
        clf.predict_proba(frame[list(schema.feature_names)]),
        schema.classes,
        positive=1,
        threshold=0.03,
    )
    assert result["n"] == expected.n == len(frame)
    # a partition of the rows: the row with the undeclared label is counted once, under 'label', never as 'ok'
    assert result["rows"] == {"ok": len(frame), "clipped": 0, "refused": 1, "malformed": 1, "label": 1}
    assert result["confusion"] == expected.confusion.tolist()
    for key in ("accuracy", "balanced_accuracy", "roc_auc", "brier"):
        e = getattr(expected, key)
        assert result[key]["value"] == pytest.approx(e.value) and result[key]["ci95"] == pytest.approx([e.low, e.high])
    positive = result["per_class"][1]
    assert positive["sensitivity"]["value"] == pytest.approx(expected.per_class[1].sensitivity.value)
    assert len(positive["thresholds"]) > 0 and len(positive["calibration"]) == 10
    assert result["provenance"]["parties"] == ["hospital-a", "hospital-b", "hospital-c"]
    assert "NOT differentially private" in captured.out and "spends no epsilon" in captured.out
    for text in (
        "sensitivity (yes)",
        "specificity (yes)",
        "PPV (yes; at this extract's prevalence",
        "NPV (yes; at this extract's prevalence",
        "ROC AUC (yes)",
        "Brier score (yes)",
        "threshold table",
        "calibration",
        "95% CI",
    ):
        assert text in captured.out


def test_a_constant_model_is_flagged_loudly(tmp_path, bank_model, capsys):
    assert main(["evaluate", str(bank_model["model"]), str(bank_model["data"]), "--positive-class", "yes"]) == 0
    captured = capsys.readouterr()
    # the seeded fixture forests give every row p(yes) < 0.5: the model says "no" for everyone
    assert "WARNING: the model predicts class 'no'" in captured.out
    assert "WARNING: the model predicts class 'no'" in captured.err


def test_multiclass_evaluation_gives_every_class_against_the_others(tmp_path, wall_model, capsys):
    X, y, schema = load_embedded("wall_robot_navigation")
    data = tmp_path / "wall.csv"
    X.tail(500).assign(**{schema.label.column: y.tail(500).to_numpy()}).to_csv(data, index=False)
    out_json = tmp_path / "wall.json"
    assert main(["evaluate", str(wall_model["model"]), str(data), "--json", str(out_json)]) == 0
    result = json.loads(out_json.read_text())
    assert [c["class"] for c in result["per_class"]] == list(schema.classes)
    assert np.asarray(result["confusion"]).sum() == 500
    assert result["positive_class"] is None and result["balanced_accuracy"]["ci95"][0] is not None
    assert "ROC AUC (macro, one-vs-rest)" in capsys.readouterr().out


def test_evaluate_needs_the_label_column(tmp_path, bank_model, capsys):
    frame = pd.read_csv(bank_model["data"]).drop(columns=["y"])
    data = tmp_path / "unlabelled.csv"
    frame.to_csv(data, index=False)
    assert main(["evaluate", str(bank_model["model"]), str(data)]) == 1
    assert "label column 'y' is missing" in capsys.readouterr().err


def test_a_threshold_on_a_multiclass_model_says_it_re_decides_one_class(tmp_path, wall_model, bank_model, capsys):
    """On a four-class model, --positive-class C --threshold T re-decided column C only (the others stayed argmax),
    which neither the help nor the output said (walkthrough)."""
    X, y, schema = load_embedded("wall_robot_navigation")
    data = tmp_path / "wall.csv"
    X.tail(300).assign(**{schema.label.column: y.tail(300).to_numpy()}).to_csv(data, index=False)
    argv = ["evaluate", str(wall_model["model"]), str(data), "--positive-class", "Move-Forward", "--threshold", "0.3"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert (
        "note: 4 classes: the threshold re-decides 'Move-Forward' only: a row is decided 'Move-Forward' when its "
        "probability of 'Move-Forward' is at least 0.3, otherwise the most probable of the other classes (they get no "
        "threshold)"
    ) in out
    assert main(["evaluate", str(bank_model["model"]), str(bank_model["data"]), "--positive-class", "yes"]) == 0
    assert "re-decides" not in capsys.readouterr().out  # two classes: the threshold decides both
    with pytest.raises(SystemExit):
        main(["evaluate", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "with more than two classes, --positive-class C --threshold T re-decides class C only" in help_text


def test_a_two_class_model_is_evaluated_for_its_last_declared_class_by_default(tmp_path, bank_model, capsys):
    """Analyst review S3 #13: without --positive-class, the report calibrated class 'no' (the first).  Now it is of
    the last declared class ('yes'), the output says so, and it equals --positive-class yes (JSON, same figures)."""
    data = str(bank_model["data"])
    default_json, explicit_json = tmp_path / "default.json", tmp_path / "explicit.json"
    assert main(["evaluate", str(bank_model["model"]), data, "--json", str(default_json)]) == 0
    out = capsys.readouterr().out
    assert "positive class: 'yes', the last declared class of this two-class model" in out
    assert "calibration of the probability of 'yes'" in out and "calibration of the probability of 'no'" not in out
    assert "Brier score (yes)" in out and "sensitivity (yes)" in out
    argv = ["evaluate", str(bank_model["model"]), data, "--positive-class", "yes", "--json", str(explicit_json)]
    assert main(argv) == 0
    assert "positive class: 'yes', the last" not in capsys.readouterr().out
    default, explicit = json.loads(default_json.read_text()), json.loads(explicit_json.read_text())
    assert default["positive_class"] == "yes" and default["positive_class_default"] is True
    assert explicit["positive_class_default"] is False
    for key in ("brier", "roc_auc", "confusion", "per_class", "calibration_slope", "calibration_intercept"):
        assert default[key] == explicit[key], key
    assert "calibration slope (yes; 1 = calibrated, " in out and default["calibration_slope"]["ci95"][0] is not None


def _relabelled(tmp_path, bank_model, rows: int, recode: dict, name: str = "relabelled.csv"):
    """The first ``rows`` rows of the fixture's data, with the label of rows ``recode`` keys set to their values."""
    frame = pd.read_csv(bank_model["data"], dtype=str, keep_default_na=False).head(rows)
    for i, value in recode.items():
        frame.loc[i, "y"] = value
    path = tmp_path / name
    frame.to_csv(path, index=False)
    return path


def test_evaluate_on_a_subset_of_the_rows_says_so_above_the_report_and_exits_2(tmp_path, bank_model, capsys):
    """Analyst review S2 #4: with 49 of 99 labels coded 'Yes'/'No', the metrics came from the other 50 rows, exit 0,
    and the JSON said rows.ok 99 next to n 50.  Now: a banner above the summary, exit 2 (0 with
    --allow-missing-labels), and JSON rows that partition the rows (ok + clipped = n)."""
    model = str(bank_model["model"])
    data = _relabelled(tmp_path, bank_model, 99, {i: ("Yes" if i % 2 else "No") for i in range(49)})
    out_json = tmp_path / "subset.json"
    assert main(["evaluate", model, str(data), "--json", str(out_json)]) == SUBSET_EXIT
    captured = capsys.readouterr()
    banner = "WARNING: metrics on 50 of 99 rows: 49 were left out, 49 of them for their label"
    assert banner in captured.out and banner in captured.err and "may be biased" in captured.out
    assert captured.out.index(banner) < captured.out.index("summary (95% intervals)")
    assert "--allow-subset to accept" in captured.err
    result = json.loads(out_json.read_text())
    assert result["n"] == 50 and sum(result["rows"].values()) == 99
    assert result["rows"]["ok"] + result["rows"]["clipped"] == result["n"] and result["rows"]["label"] == 49
    assert result["label_left_out"] == {"missing": 0, "undeclared": 49} and result["subset_warning"].startswith(banner)
    assert main(["evaluate", model, str(data), "--allow-missing-labels"]) == 0
    assert banner in capsys.readouterr().out


def test_missing_labels_above_5_percent_exit_2_and_at_most_5_percent_do_not(tmp_path, bank_model, capsys):
    """Missing (blank) labels: 5 of 100 rows (5 %, not above the share) pass silently; 6 of 100 get the banner and
    exit 2.  One undeclared label is enough on its own (a different coding of a class)."""
    model = str(bank_model["model"])
    five = _relabelled(tmp_path, bank_model, 100, dict.fromkeys(range(5), ""), "five.csv")
    assert main(["evaluate", model, str(five)]) == 0
    assert "WARNING: metrics on" not in capsys.readouterr().out
    six = _relabelled(tmp_path, bank_model, 100, dict.fromkeys(range(6), ""), "six.csv")
    assert main(["evaluate", model, str(six)]) == SUBSET_EXIT
    assert "WARNING: metrics on 94 of 100 rows: 6 were left out, 6 of them for their label (6 missing" in (
        capsys.readouterr().out
    )
    one = _relabelled(tmp_path, bank_model, 100, {0: "YES"}, "one.csv")
    assert main(["evaluate", model, str(one)]) == SUBSET_EXIT
    assert "(0 missing, 1 not a declared class" in capsys.readouterr().out


def test_label_names_a_renamed_label_column_and_the_error_says_how(tmp_path, bank_model, capsys):
    """A renamed label column: the error names --label and the schema's aliases; --label COL evaluates it, with the
    same figures as the file under the schema's name."""
    model = str(bank_model["model"])
    frame = pd.read_csv(bank_model["data"], dtype=str, keep_default_na=False).head(300)
    renamed = tmp_path / "renamed.csv"
    frame.rename(columns={"y": "outcome"}).to_csv(renamed, index=False)
    original = tmp_path / "original.csv"
    frame.to_csv(original, index=False)
    assert main(["evaluate", model, str(renamed)]) == 1
    err = capsys.readouterr().err
    assert "label column 'y' is missing from the header" in err and "pass --label COL" in err
    assert "aliases" in err and "['no', 'yes']" in err
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    assert main(["evaluate", model, str(renamed), "--label", "outcome", "--json", str(a)]) == 0
    assert main(["evaluate", model, str(original), "--json", str(b)]) == 0
    ra, rb = json.loads(a.read_text()), json.loads(b.read_text())
    assert ra["n"] == rb["n"] == 300 and ra["confusion"] == rb["confusion"] and ra["brier"] == rb["brier"]


def test_every_label_undeclared_says_so_not_the_separator(tmp_path, bank_model, capsys):
    """Docs walkthrough: with every label written 'Yes'/'No' against the classes 'no'/'yes', evaluate said "check
    --sep, --no-header and the label column", pointing at the file's layout.  It now says that every label was
    undeclared, names the classes and the schema's aliases (exit 1: nothing to report)."""
    model = str(bank_model["model"])
    data = _relabelled(tmp_path, bank_model, 50, {i: ("Yes" if i % 2 else "No") for i in range(50)})
    assert main(["evaluate", model, str(data)]) == 1
    err = capsys.readouterr().err
    assert "every label was missing or undeclared: 50 undeclared, 0 missing" in err
    assert "--label-map TEXT=CLASS" in err and "--sep" not in err


def test_label_map_reads_another_coding_of_the_classes(tmp_path, bank_model, capsys):
    """Analyst review F8: labels coded 'Yes'/'No' against the classes 'no'/'yes' could only be fixed in the schema,
    which is inside the coordinator's model.  --label-map reads them as the classes: the same figures as the file
    coded as the schema says; a CLASS the schema lacks, or a spelling that is another declared class, is refused."""
    model = str(bank_model["model"])
    frame = pd.read_csv(bank_model["data"], dtype=str, keep_default_na=False).head(200)
    original, recoded = tmp_path / "original.csv", tmp_path / "recoded.csv"
    frame.to_csv(original, index=False)
    frame.assign(y=frame["y"].map({"yes": "Yes", "no": "No"})).to_csv(recoded, index=False)
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    assert main(["evaluate", model, str(recoded), "--label-map", "Yes=yes, No=no", "--json", str(a)]) == 0
    assert main(["evaluate", model, str(original), "--json", str(b)]) == 0
    ra, rb = json.loads(a.read_text()), json.loads(b.read_text())
    assert ra["n"] == rb["n"] == 200 and ra["confusion"] == rb["confusion"] and ra["brier"] == rb["brier"]
    capsys.readouterr()
    assert main(["evaluate", model, str(recoded), "--label-map", "Yes=1"]) == 1
    assert "--label-map: expected each CLASS one of the schema's classes ['no', 'yes'], got '1'" in (
        capsys.readouterr().err
    )
    assert main(["evaluate", model, str(recoded), "--label-map", "no=yes"]) == 1
    assert "--label-map: 'no' is the declared class 'no'; an alias may not make it 'yes'" in capsys.readouterr().err
    for wrong in ("Yes", "Yes=yes,Yes=no", "=yes"):
        with pytest.raises(SystemExit) as exited:
            main(["evaluate", model, str(recoded), "--label-map", wrong])
        assert exited.value.code == 2
        assert "--label-map" in capsys.readouterr().err


def test_rows_refused_for_a_feature_count_toward_the_subset_banner_with_their_reasons(tmp_path, bank_model, capsys):
    """Analyst review F1: 750 of 3000 rows with HbA1c emptied were left out with no banner and exit 0 (only labels
    counted).  Now every row left out counts: 10 of 100 rows refused for 'age' get the banner, the reason with its
    count (summary, banner, JSON) and exit 5; --allow-subset (and its old name) accept it; 5 of 100 pass."""
    model = str(bank_model["model"])
    frame = pd.read_csv(bank_model["data"], dtype=str, keep_default_na=False).head(100)
    frame.loc[:9, "age"] = ""
    data = tmp_path / "refused.csv"
    frame.to_csv(data, index=False)
    out_json = tmp_path / "refused.json"
    assert main(["evaluate", model, str(data), "--json", str(out_json)]) == SUBSET_EXIT
    captured = capsys.readouterr()
    banner = "WARNING: metrics on 90 of 100 rows: 10 were left out, 10 refused for a feature's value (most common: "
    assert banner in captured.out and banner in captured.err
    reason = "column 'age': missing, and the schema refuses missing values here"
    assert f"left out, most common reasons: {reason} (10 rows)" in captured.out
    assert "--allow-subset to accept" in captured.err
    result = json.loads(out_json.read_text())
    assert result["left_out_reasons"] == {reason: 10} and result["subset_warning"].startswith(banner)
    assert result["rows"]["refused"] == 10 and result["n"] == 90
    assert main(["evaluate", model, str(data), "--allow-subset"]) == 0
    assert main(["evaluate", model, str(data), "--allow-missing-labels"]) == 0  # the flag's former name
    frame.loc[5:9, "age"] = "40"
    frame.to_csv(data, index=False)
    capsys.readouterr()
    assert main(["evaluate", model, str(data)]) == 0
    assert "WARNING: metrics on" not in capsys.readouterr().out


def _bank_rows_by_risk(bank_model, rows: int = 1500):
    """The fixture's first ``rows`` rows (as text) and their order by the model's probability of 'yes', highest first."""
    frame = pd.read_csv(bank_model["data"], dtype=str, keep_default_na=False).head(rows)
    schema = example_schema("bank_marketing")
    p_yes = load_classifier(bank_model["model"]).predict_proba(
        pd.read_csv(bank_model["data"]).head(rows)[list(schema.feature_names)]
    )[:, 1]
    return frame, np.argsort(-p_yes, kind="stable")


def test_labels_missing_in_high_risk_rows_are_compared_and_get_the_banner(tmp_path, bank_model, capsys):
    """Analyst review F2: 100 event rows without a label (3.3 % of the rows, under the 5 % share) passed silently
    though the command had scored them (mean risk 0.51 against 0.07).  Now their mean predicted probability is
    printed next to the evaluated rows', and a clear difference (3 standard errors) gets the banner and exit 5;
    as many labels missing at random do not."""
    model = str(bank_model["model"])
    frame, by_risk = _bank_rows_by_risk(bank_model)
    high = frame.copy()
    high.loc[by_risk[:30], "y"] = ""  # the 30 highest-risk rows: 2 % of the rows
    data = tmp_path / "high.csv"
    high.to_csv(data, index=False)
    out_json = tmp_path / "high.json"
    assert main(["evaluate", model, str(data), "--json", str(out_json)]) == SUBSET_EXIT
    out = capsys.readouterr().out
    assert "rows left out for their label (30): mean predicted probability of 'yes' " in out
    assert "more than the sampling of 30 rows explains: they are not like the evaluated rows" in out
    result = json.loads(out_json.read_text())["left_out_by_class"]["yes"]
    assert result["z"] >= 3 and result["mean_probability_without_label"] > result["mean_probability_evaluated"]
    at_random = frame.copy()
    at_random.loc[np.random.default_rng(0).choice(len(frame), 30, replace=False), "y"] = ""
    at_random.to_csv(data, index=False)
    assert main(["evaluate", model, str(data)]) == 0
    out = capsys.readouterr().out
    assert "rows left out for their label (30): mean predicted probability" in out and "WARNING: metrics on" not in out


def test_rows_left_out_are_counted_against_each_class(tmp_path, bank_model, capsys):
    """Analyst review F2: a rare class loses its rows long before 5 % of all rows are left out.  Refusing 'age' in
    a quarter of the 'yes' rows (under 5 % of all rows) gets the banner, which says how much of 'yes' is gone."""
    model = str(bank_model["model"])
    frame, _ = _bank_rows_by_risk(bank_model)
    yes = np.flatnonzero(frame["y"].to_numpy() == "yes")
    frame.loc[yes[: len(yes) // 4], "age"] = "unknown"
    assert len(yes) // 4 < 0.05 * len(frame)
    data = tmp_path / "yes.csv"
    frame.to_csv(data, index=False)
    assert main(["evaluate", model, str(data)]) == SUBSET_EXIT
    k = len(yes) // 4
    assert f"the refused rows hold {k} of the {len(yes)} rows labelled 'yes' ({k / len(yes):.0%})" in (
        capsys.readouterr().out
    )


def test_evaluate_counts_low_support_rows_and_splits_the_headline_figures(tmp_path, bank_model, capsys):
    """Analyst review F4: predict flagged 91 rows of low support, evaluate said nothing and mixed them into every
    figure.  Now evaluate prints how many of its rows have low support (the same rows as predict's support column)
    and the accuracy and ROC AUC on the supported and the low rows apart, also in --json."""
    model, data = str(bank_model["model"]), str(bank_model["data"])
    predicted = tmp_path / "p.csv"
    assert main(["predict", model, data, "-o", str(predicted)]) == 0
    rows = pd.read_csv(predicted, keep_default_na=False)
    low = rows["support"].str.startswith("low").to_numpy()
    assert 0 < low.sum() < len(rows)
    out_json = tmp_path / "support.json"
    capsys.readouterr()
    assert main(["evaluate", model, data, "--json", str(out_json)]) == 0
    out = capsys.readouterr().out
    assert f"{low.sum()} of {len(rows)} evaluated rows have low support" in out
    assert "| support ok |" in out and "| low support |" in out
    support = json.loads(out_json.read_text())["support"]
    assert support["low"] == low.sum() and support["ok"] == (~low).sum()
    y = (pd.read_csv(data)["y"] == "yes").to_numpy()
    p = rows[["p_no", "p_yes"]].to_numpy()
    for name, mask in (("ok_rows", ~low), ("low_rows", low)):
        expected = clinical_report(y[mask].astype(int), p[mask], ("no", "yes"), positive=1, indices=True)
        assert support[name]["n"] == mask.sum()
        assert support[name]["accuracy"]["value"] == pytest.approx(expected.accuracy.value)
        assert support[name]["roc_auc"]["value"] == pytest.approx(expected.roc_auc.value, abs=1e-4)
